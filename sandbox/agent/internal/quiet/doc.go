// Package quiet tells whether anything in a sandbox can still act without
// outside input: the agent (PID 1 of the sandbox, the server's tracer)
// reads every thread of the container's /proc, without stopping any, and
// returns what can still wake: a thread running or runnable, one blocked
// with a timeout (or on something the kernel can end on its own), an
// armed timerfd, a POSIX timer, a zombie not reaped, a stopped task, and
// anything it could not read (a process that made itself undumpable is
// never quiet). Threads blocked without a timeout on what only another
// thread or the outside can end (read on a pipe, epoll_wait -1, futex
// without a timeout, wait4, pause) are quiet.
//
// The server is the adversary: every verdict errs towards "not quiet",
// which costs a scan time (the runner waits its full window), never a
// finding. What only the server's memory says (a nanosleep's timespec) is
// not read: another thread can rewrite it once the kernel has copied it,
// so the bound it gives is the server's word. A pass is checked by a
// second: a task that ran, appeared or ended between the two makes the
// sandbox not quiet, so that the verdicts, read one after the other, hold
// at one instant (every task read blocked at the first read was still
// blocked at the second).
package quiet
