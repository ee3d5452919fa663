//go:build linux && amd64

// Command usernotif is the benchmark's measure of the road not taken: it
// runs a command under a SECCOMP_RET_USER_NOTIF filter on execve and
// execveat, with a supervisor thread that reads each exec's argv through
// /proc/PID/mem and lets it continue. One notification per exec and no
// stop for anything else, but no fork events, no exit statuses of
// grandchildren and no way to refuse a call after reading it safely (the
// memory may change after the read). It records nothing: only its cost
// is of interest (see docs/effects.md, "Processes and network").
package main
