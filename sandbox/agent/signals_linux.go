//go:build linux && amd64

package agent

import (
	"os/signal"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Signals the agent leaves to the Go runtime: SIGKILL and SIGSTOP cannot
// be caught (and the kernel drops them when sent to a namespace's init
// from inside it); SIGURG and SIGPROF are the runtime's preemption and
// profiling signals, which its handler takes as harmless.
func leftToRuntime(sig int) bool {
	switch syscall.Signal(sig) {
	case unix.SIGKILL, unix.SIGSTOP, unix.SIGURG, unix.SIGPROF:
		return true
	}
	return false
}

// libcSignal is a signal the C library reserves (SIGCANCEL, SIGSETXID):
// with cgo its handler is installed and ignores what others send; in the
// static agent nothing handles it, and its default action would kill.
func libcSignal(sig int) bool { return sig == 32 || sig == 33 }

// maxSignal is the highest signal number on Linux.
const maxSignal = 64

// ignoreSignals makes the agent deaf to every signal the server (same uid)
// can send it: ignored signals are dropped by the kernel. os/signal sets
// SIG_IGN only for the signals the runtime lets programs handle; the
// synchronous ones (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSTKFLT,
// SIGSYS) it only marks, which covers kill and tgkill but not
// rt_sigqueueinfo with a queued si_code, which the runtime takes for a
// real fault and dies of. Those are set to SIG_IGN directly: a real fault
// in the agent still kills it (the kernel restores the default action),
// without a Go traceback.
func ignoreSignals() {
	for sig := 1; sig <= maxSignal; sig++ {
		switch {
		case leftToRuntime(sig):
		case sig == int(unix.SIGCHLD):
			// Not SIG_IGN, under which the kernel would reap the server
			// before wait4 sees its exit status; SIG_DFL discards it when
			// sent, as SIG_IGN would, and spares the agent a signal at
			// every stop of every traced task.
			setAction(sig, sigDfl)
		case libcSignal(sig):
			if action(sig) == sigDfl {
				setAction(sig, sigIgn)
			}
		default:
			signal.Ignore(syscall.Signal(sig))
			setAction(sig, sigIgn)
		}
	}
}

// resetSignals sets every catchable signal back to its default action,
// for the server's exec.
func resetSignals() {
	for sig := 1; sig <= maxSignal; sig++ {
		if sig != int(unix.SIGKILL) && sig != int(unix.SIGSTOP) {
			setAction(sig, sigDfl)
		}
	}
}

// The kernel's handler values for the default action and for ignoring.
const (
	sigDfl = 0
	sigIgn = 1
)

// kernelSigaction is the kernel's struct sigaction on amd64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// action returns a signal's current handler.
func action(sig int) uintptr {
	var old kernelSigaction
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	return old.handler
}

func setAction(sig int, handler uintptr) {
	sa := kernelSigaction{handler: handler}
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0)
}
