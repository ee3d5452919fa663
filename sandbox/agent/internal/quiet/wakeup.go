package quiet

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Reason says why a task can still act.
type Reason string

// The reasons a Wakeup gives.
const (
	// Running: state R, or the syscall file said "running".
	Running Reason = "running"
	// TimedWait: blocked in a syscall with a timeout (Syscall names it).
	TimedWait Reason = "timed-wait"
	// KernelWake: blocked where the kernel can end the wait on its own,
	// with no timeout in the arguments: a socket (SO_RCVTIMEO and
	// SO_SNDTIMEO are set by setsockopt, not visible in /proc; connect
	// gives up after its SYN retries), a tty (VTIME), AIO completions.
	KernelWake Reason = "kernel-wake"
	// Transient: in a syscall that does not block (about to return), or
	// blocked outside a syscall (a page fault, a signal being delivered).
	Transient Reason = "transient"
	// UnknownSyscall: blocked in a syscall this package does not know to
	// block without a timeout.
	UnknownSyscall Reason = "unknown-syscall"
	// Timerfd: an armed timerfd (it_value not zero) in a task's fd table.
	Timerfd Reason = "timerfd"
	// PosixTimer: a timer_create timer; /proc says not whether it is
	// armed, so any counts.
	PosixTimer Reason = "posix-timer"
	// IOURing: an io_uring instance (refused by the sandbox's seccomp
	// filters; its submitted work and timeouts are not visible).
	IOURing Reason = "io_uring"
	// ITimer: an ITIMER_REAL timer (alarm, setitimer) the agent's tracer
	// saw armed; /proc does not show them.
	ITimer Reason = "itimer"
	// DiskWait: state D, an uninterruptible wait (disk I/O) that ends on
	// its own.
	DiskWait Reason = "disk-wait"
	// Stopped: state T or t. A ptrace stop ends when the tracer (the
	// agent) resumes the task, which it does without outside input; a
	// group stop (SIGSTOP) ends at a SIGCONT whose sender need not be
	// visible (a timer this package cannot see: alarm, setitimer).
	Stopped Reason = "stopped"
	// Zombie: a process ended and not reaped: its parent is still to
	// learn of its end (SIGCHLD, wait4) and the agent to report it.
	Zombie Reason = "zombie"
	// UnknownState: a state letter this package does not know.
	UnknownState Reason = "unknown-state"
	// Unreadable: a file of the task could not be read (EACCES, EPERM: a
	// process that made itself undumpable). Never taken for quiet.
	Unreadable Reason = "unreadable"
	// Changed: a task ran, appeared or ended between the two passes.
	Changed Reason = "changed"
	// Bound: more tasks, or fds in one table, than Options allows; the
	// rest was not read.
	Bound Reason = "bound"
)

// Wakeup is one thing in the sandbox that can still act.
type Wakeup struct {
	PID    int    `json:"pid"`
	TID    int    `json:"tid,omitempty"`
	Comm   string `json:"comm,omitempty"` // escaped: printable ASCII as is, every other byte and '\' as \xNN
	Reason Reason `json:"reason"`
	// Syscall is the syscall the task is blocked in, where that decided.
	Syscall string `json:"syscall,omitempty"`
	// Within, when Bounded, is an upper bound of the time until it can
	// act: an epoll_wait's or poll's timeout (the wait began at or
	// before the read), a timerfd's it_value.
	Within  time.Duration `json:"within,omitempty"`
	Bounded bool          `json:"bounded,omitempty"`
	Detail  string        `json:"detail,omitempty"` // escaped where the server controls it
	// Mark is what changes when the task runs (its schedstat, or its stat
	// line), as the second pass read it: a later reading with the same
	// Mark, in the same syscall, is in the same wait (the task has not run
	// since).
	Mark string `json:"mark,omitempty"`
}

// Wakeups is what a pass found, in the order of PID, TID, Reason.
type Wakeups []Wakeup

// Quiet reports whether nothing can act without outside input.
func (ws Wakeups) Quiet() bool { return len(ws) == 0 }

// Due is the time within which every wakeup can have happened (the
// largest bound) and true, or false when one of them has no bound.
// Quiet wakeups are due at once.
func (ws Wakeups) Due() (time.Duration, bool) {
	var due time.Duration
	for _, w := range ws {
		if !w.Bounded {
			return 0, false
		}
		due = max(due, w.Within)
	}
	return due, true
}

// Options are a pass's settings; the zero value reads /proc as the agent
// would, leaving out the caller's own process.
type Options struct {
	// Root is the proc file system to read; "" is /proc.
	Root string
	// Self are the processes (thread group ids, as Root numbers them)
	// left out: the agent's own. Nil is the caller's pid.
	Self []int
	// MaxTasks bounds the tasks read (0: DefaultMaxTasks); past it, a
	// Bound wakeup.
	MaxTasks int
	// MaxFDs bounds the entries of one task's fd table read (0:
	// DefaultMaxFDs); past it, a Bound wakeup.
	MaxFDs int
}

// Bounds of a pass. The engine's --pids bounds a sandbox's tasks
// (threads count) to 256 by default: four times that leaves room for a
// larger setting.
const (
	DefaultMaxTasks = 1024
	DefaultMaxFDs   = 4096
)

// ErrUnsupported: the reader is Linux's.
var ErrUnsupported = errors.New("quiet: linux only")

// escape keeps printable ASCII but '\' and writes every other byte as
// \xNN: a comm or an fd's link is the server's to choose.
func escape(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c >= 0x20 && c < 0x7f && c != '\\' {
			s.WriteByte(c)
			continue
		}
		s.WriteString(`\x`)
		if c < 0x10 {
			s.WriteByte('0')
		}
		s.WriteString(strconv.FormatUint(uint64(c), 16))
	}
	return s.String()
}
