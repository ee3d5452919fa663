package images

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureHost makes a host tree with what the base image reads.
func fixtureHost(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range map[string]string{
		"bin/busybox":                       "not really busybox",
		"etc/ssl/certs/ca-certificates.crt": "CERTS",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestBaseRootfs(t *testing.T) {
	fs, err := assemble("base", hostFS{root: fixtureHost(t)})
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]func(*entry) bool{
		"/bin/sh":        func(e *entry) bool { return e.typ == typeSymlink && e.target == "busybox" },
		"/usr/bin/env":   func(e *entry) bool { return e.typ == typeSymlink && e.target == "/bin/busybox" },
		"/tmp":           func(e *entry) bool { return e.typ == typeDir && e.mode.Perm() == 0o777 && e.mode&os.ModeSticky != 0 },
		"/workspace":     func(e *entry) bool { return e.typ == typeDir && e.uid == 10001 },
		"/home/sandbox":  func(e *entry) bool { return e.uid == 10001 },
		"/etc/passwd":    func(e *entry) bool { return strings.Contains(string(e.data), "sandbox:x:10001:10001:") },
		"/etc/group":     func(e *entry) bool { return strings.Contains(string(e.data), "sandbox:x:10001:") },
		"/bin/busybox":   func(e *entry) bool { return e.typ == typeFile && e.source != "" },
		"/etc/ssl/certs": func(e *entry) bool { return e.typ == typeDir },
	}
	for p, ok := range checks {
		e := fs.entries[p]
		if e == nil || !ok(e) {
			t.Errorf("%s = %+v", p, e)
		}
	}
}

func TestTarIsDeterministicAndHashFollowsInputs(t *testing.T) {
	host := fixtureHost(t)
	sum := func() string {
		fs, err := assemble("base", hostFS{root: host})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		s, err := fs.writeTar(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := sum(), sum()
	if a != b {
		t.Fatalf("two tars of the same inputs differ: %s %s", a, b)
	}
	if err := os.WriteFile(filepath.Join(host, "etc/ssl/certs/ca-certificates.crt"), []byte("NEW CERTS"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := sum(); c == a {
		t.Errorf("hash did not change with an input")
	}
}

func TestUnknownImageAndMissingHostFile(t *testing.T) {
	if _, err := assemble("nope", hostFS{root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "known: base, node, python") {
		t.Errorf("unknown image: %v", err)
	}
	if _, err := assemble("base", hostFS{root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "base/manifest:") {
		t.Errorf("missing host file: %v", err)
	}
}

func TestNodeImageResolvesELFDeps(t *testing.T) {
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("no node on this host")
	}
	fs, err := assemble("node", hostFS{})
	if err != nil {
		t.Fatal(err)
	}
	var libc, interp bool
	for p, e := range fs.entries {
		libc = libc || strings.HasSuffix(p, "/libc.so.6") && e.typ == typeFile
		interp = interp || strings.HasPrefix(p, "/lib64/ld-linux") || strings.HasPrefix(p, "/lib/ld-linux")
	}
	if !libc || !interp || fs.entries["/usr/lib/node_modules/npm/bin/npm-cli.js"] == nil {
		t.Errorf("node rootfs lacks libc (%v), the loader (%v) or npm", libc, interp)
	}
}

// TestOptionalDirectives: a directive with "?" adds what the host has and
// skips, silently, what it lacks; without "?", a missing file is an
// error.
func TestOptionalDirectives(t *testing.T) {
	host := hostFS{root: fixtureHost(t)}
	r := &rootfs{entries: map[string]*entry{}}
	for _, f := range [][]string{{"file?", "/opt/missing", "/opt/missing"}, {"bin?", "/usr/bin/missing"}, {"tree?", "/usr/lib/missing"}, {"elfdeps?", "/usr/lib/missing/*"}} {
		if err := r.directive(f, host, map[string]bool{}); err != nil {
			t.Errorf("%v: %v", f, err)
		}
	}
	if len(r.entries) != 0 {
		t.Errorf("missing files added: %v", r.entries)
	}
	if err := r.directive([]string{"file?", "/etc/ca.crt", "/etc/ssl/certs/ca-certificates.crt"}, host, map[string]bool{}); err != nil || r.entries["/etc/ca.crt"] == nil {
		t.Errorf("file? of a host file: %v, %v", err, r.entries)
	}
	if err := r.directive([]string{"bin", "/usr/bin/missing"}, host, map[string]bool{}); err == nil {
		t.Error("bin without ? accepted a missing file")
	}
}

// TestNodeImageHasGitWhereTheHostHasIt: git and its libraries and helpers
// are in the node image's root filesystem when the host has git.
func TestNodeImageHasGitWhereTheHostHasIt(t *testing.T) {
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("no git on this host")
	}
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("no node on this host")
	}
	fs, err := assemble("node", hostFS{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/usr/bin/git", "/usr/lib/git-core/git-remote-https", "/usr/lib/git-core/git-sh-setup"} {
		if fs.entries[p] == nil {
			t.Errorf("node rootfs lacks %s", p)
		}
	}
	pcre := false
	for p := range fs.entries {
		pcre = pcre || strings.Contains(p, "libpcre2-8.so")
	}
	if !pcre {
		t.Error("node rootfs lacks git's libpcre2")
	}
}

// TestBuildImageHasTheToolchain: the build image has what node-gyp needs
// offline: the compilers and their programs, binutils, make, python3, the
// C library's headers and start files, and the node headers of the
// host's node.
func TestBuildImageHasTheToolchain(t *testing.T) {
	for _, p := range []string{"/usr/bin/gcc", "/usr/bin/g++", "/usr/bin/make", "/usr/bin/python3", "/usr/include/node/node_api.h"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("this host has no %s to build the build image from (ci/host-deps.sh installs it)", p)
		}
	}
	fs, err := assemble("build", hostFS{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/usr/bin/gcc", "/usr/bin/g++", "/usr/bin/cc", "/usr/bin/as", "/usr/bin/ld", "/usr/bin/make", "/usr/bin/python3",
		"/usr/bin/node", "/usr/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js",
		"/usr/include/stdio.h", "/usr/include/node/node_api.h", "/usr/include/node/common.gypi", "/usr/include/node/node_version.h"} {
		if fs.entries[p] == nil {
			t.Errorf("the build image lacks %s", p)
		}
	}
	var cc1, crt1, libcSo bool
	for p := range fs.entries {
		cc1 = cc1 || strings.HasSuffix(p, "/cc1plus")
		crt1 = crt1 || strings.HasSuffix(p, "-linux-gnu/crt1.o")
		libcSo = libcSo || strings.HasSuffix(p, "-linux-gnu/libc.so")
	}
	if !cc1 || !crt1 || !libcSo {
		t.Errorf("the build image lacks cc1plus (%v), crt1.o (%v) or the libc.so linker script (%v)", cc1, crt1, libcSo)
	}
}
