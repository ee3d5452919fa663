//go:build cgo && linux

// The runner is also the agent, which runs in images that need not have
// a C library, so the binary must be static whatever CGO_ENABLED was.
// With cgo on, net and os/user link against libc; -static makes the
// external linker link glibc (or musl) in.
//
// A static glibc must never do an NSS lookup: it dlopens the host's
// libnss_*.so at run time, which warns at link time ("Using 'getaddrinfo'
// in statically linked applications requires at run time the shared
// libraries...") and, tried here (glibc 2.36, nsswitch "passwd: files
// systemd"), crashes with SIGSEGV in getpwuid_r on a uid that is not in
// /etc/passwd. archive/tar looks up the owner of every file it adds (the
// workspace tar), so a workspace file owned by such a uid would kill the
// runner. So the NSS entry points Go's cgo code calls are wrapped away
// (--wrap points its references at the stubs below, and the libc objects
// that hold the real ones are never linked): user and group lookups find
// nothing (every caller overwrites the names), and names resolve with
// Go's own resolver (netdns=go, below), as in a CGO_ENABLED=0 build.
// GODEBUG=netdns=cgo would reach the getaddrinfo stub, which fails.

//go:debug netdns=go

package main

/*
#cgo LDFLAGS: -static -Wl,--wrap=getaddrinfo -Wl,--wrap=getpwnam_r -Wl,--wrap=getpwuid_r -Wl,--wrap=getgrnam_r -Wl,--wrap=getgrgid_r -Wl,--wrap=getgrouplist
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <stddef.h>

int __wrap_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
	*res = NULL;
	return EAI_FAIL;
}
int __wrap_getpwnam_r(const char *name, struct passwd *pwd, char *buf, size_t n, struct passwd **result) {
	*result = NULL;
	return 0;
}
int __wrap_getpwuid_r(uid_t uid, struct passwd *pwd, char *buf, size_t n, struct passwd **result) {
	*result = NULL;
	return 0;
}
int __wrap_getgrnam_r(const char *name, struct group *grp, char *buf, size_t n, struct group **result) {
	*result = NULL;
	return 0;
}
int __wrap_getgrgid_r(gid_t gid, struct group *grp, char *buf, size_t n, struct group **result) {
	*result = NULL;
	return 0;
}
int __wrap_getgrouplist(const char *user, gid_t group, gid_t *groups, int *ngroups) {
	*ngroups = 0;
	return 0;
}
*/
import "C"
