package quiet

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

var errFormat = errors.New("quiet: unexpected format")

// maxTimerfdSec caps a timerfd's seconds where a Duration holds them:
// a century is as far as never for a scan.
const maxTimerfdSec = 100 * 365 * 24 * 3600

// parseStat returns the comm and the state letter of a stat line,
// "PID (COMM) S ...". The comm is the server's: it may hold ")", spaces
// and newlines, so the state is after the last ")".
func parseStat(b []byte) (comm []byte, state byte, err error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) || b[end+1] != ' ' {
		return nil, 0, fmt.Errorf("reading stat %q: %w", b, errFormat)
	}
	return b[open+1 : end], b[end+2], nil
}

// syscallState is what a task's syscall file says.
type syscallState int

const (
	inSyscall    syscallState = iota
	runningState              // "running": on a CPU, or woke while read
	notInSyscall              // "-1 SP PC": blocked outside a syscall
)

// parseSyscall reads /proc/PID/task/TID/syscall: "running", "-1 SP PC",
// or "NR ARG1 ... ARG6 SP PC", the number in decimal, the rest in hex.
func parseSyscall(b []byte) (syscallState, int, [6]uint64, error) {
	var args [6]uint64
	f := strings.Fields(string(b))
	switch {
	case len(f) == 1 && f[0] == "running":
		return runningState, 0, args, nil
	case len(f) == 3 && f[0] == "-1":
		return notInSyscall, -1, args, nil
	case len(f) != 9:
		return 0, 0, args, fmt.Errorf("reading syscall %q: %w", b, errFormat)
	}
	nr, err := strconv.Atoi(f[0])
	if err != nil || nr < 0 {
		return 0, 0, args, fmt.Errorf("reading syscall %q: %w", b, errFormat)
	}
	for i := range args {
		v, err := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		if err != nil {
			return 0, 0, args, fmt.Errorf("reading syscall %q: %w", b, errFormat)
		}
		args[i] = v
	}
	return inSyscall, nr, args, nil
}

// parseTimerfd reads a timerfd's fdinfo and returns its it_value, the
// time left until it fires (0: disarmed), as "it_value: (SEC, NSEC)".
func parseTimerfd(b []byte) (time.Duration, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		v, ok := strings.CutPrefix(line, "it_value:")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), "()")
		sec, nsec, ok := strings.Cut(v, ",")
		if !ok {
			break
		}
		s, err1 := strconv.ParseInt(strings.TrimSpace(sec), 10, 64)
		ns, err2 := strconv.ParseInt(strings.TrimSpace(nsec), 10, 64)
		if err1 != nil || err2 != nil || s < 0 || ns < 0 {
			break
		}
		s = min(s, maxTimerfdSec)
		return time.Duration(s)*time.Second + time.Duration(ns), nil
	}
	return 0, fmt.Errorf("reading a timerfd's fdinfo %q: %w", b, errFormat)
}

// posixTimers counts the timers of a /proc/PID/timers file (a block of
// lines, "ID: N" first, for each).
func posixTimers(b []byte) int {
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "ID:") {
			n++
		}
	}
	return n
}

// quietLink tells a descriptor no timeout reaches from its link: a
// pipe, an eventfd, a signalfd, an inotify instance, a timerfd (one
// armed is a wakeup of its own). A FIFO's link is a path: see the stat.
func quietLink(link string) bool {
	for _, p := range []string{"pipe:", "anon_inode:[eventfd]", "anon_inode:[signalfd]", "anon_inode:inotify", "anon_inode:[timerfd]"} {
		if strings.HasPrefix(link, p) {
			return true
		}
	}
	return false
}
