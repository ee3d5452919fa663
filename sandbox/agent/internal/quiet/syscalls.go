package quiet

import (
	"strconv"
	"time"
)

// verdict is what a blocked task's syscall says.
type verdict struct {
	name    string
	quiet   bool
	reason  Reason // when not quiet
	within  time.Duration
	bounded bool
	// fd, when >= 0, is the descriptor the wait is on: quiet only if it
	// is a pipe, a FIFO or an anonymous inode no timeout reaches (see
	// fdQuiet); the verdict holds otherwise.
	fd int
}

// futex operations (linux/futex.h), after FUTEX_CMD_MASK.
const (
	futexCmdMask       = ^uint64(128 | 256) // FUTEX_PRIVATE_FLAG, FUTEX_CLOCK_REALTIME
	futexWait          = 0
	futexLockPI        = 6
	futexWaitBitset    = 9
	futexWaitRequeuePI = 11
	futexLockPI2       = 13
)

const (
	cloneVfork = 0x4000     // CLONE_VFORK
	fSetlkw    = 7          // F_SETLKW
	fOFDSetlkw = 38         // F_OFD_SETLKW
	arg32      = 0xffffffff // an int argument is the register's low 32 bits
)

// classify reads a task blocked in syscall nr (x86_64 numbers) with
// args. The table is the list of what blocks: for each, which argument
// carries its timeout, and how.
//
//   - Forever (quiet): pause 34, rt_sigsuspend 130, wait4 61, waitid 247,
//     vfork 58 and clone 56 with CLONE_VFORK (waiting for a child, read on
//     its own), semop 65, msgsnd 69, msgrcv 70, flock 73, fcntl 72 with
//     F_SETLKW or F_OFD_SETLKW (a lock's holder is read on its own).
//   - A timeout in a register, an int of milliseconds (negative:
//     forever): poll 7 (arg 2), epoll_wait 232 and epoll_pwait 281 (arg
//     3). 0 does not block.
//   - A timeout pointer (NULL: forever), whose time is in the server's
//     memory and not read: select 23 and pselect6 270 (arg 4), ppoll 271
//     (2), epoll_pwait2 441 (3), futex 202 waits (3: FUTEX_WAIT,
//     FUTEX_WAIT_BITSET, FUTEX_LOCK_PI, FUTEX_LOCK_PI2,
//     FUTEX_WAIT_REQUEUE_PI; the other operations do not block),
//     futex_waitv 449 (3), futex_wait 455 (4), rt_sigtimedwait 128 (2),
//     semtimedop 220 (3), mq_timedsend 242 and mq_timedreceive 243 (4),
//     recvmmsg 299 (4; NULL leaves a socket wait).
//   - Always timed: nanosleep 35 (arg 0), clock_nanosleep 230 (2),
//     restart_syscall 219 (a nanosleep, poll or futex wait with a timeout
//     resumed after a signal).
//   - Kernel-ended: connect 42, accept 43 and accept4 288, recvfrom 45,
//     recvmsg 47, sendto 44, sendmsg 46, sendmmsg 307 (sockets: SO_RCVTIMEO,
//     SO_SNDTIMEO), io_getevents 208 and io_pgetevents 333 (AIO
//     completions), io_uring_enter 426.
//   - On the descriptor in arg 0 (see fdQuiet): read 0, write 1, pread64
//     17, pwrite64 18, readv 19, writev 20, preadv 295, pwritev 296,
//     preadv2 327, pwritev2 328.
//   - Not blocking (about to return): sched_yield 24, exit 60,
//     exit_group 231.
//
// Anything else is an unknown syscall: not quiet.
func classify(nr int, args [6]uint64) verdict {
	forever := func(name string) verdict { return verdict{name: name, quiet: true, fd: -1} }
	timed := func(name string) verdict { return verdict{name: name, reason: TimedWait, fd: -1} }
	kernel := func(name string) verdict { return verdict{name: name, reason: KernelWake, fd: -1} }
	transient := func(name string) verdict { return verdict{name: name, reason: Transient, fd: -1} }
	onFD := func(name string) verdict {
		return verdict{name: name, reason: KernelWake, fd: int(int32(args[0] & arg32))}
	}
	// ms: an int timeout in milliseconds.
	ms := func(name string, a uint64) verdict {
		t := int32(a & arg32)
		if t < 0 {
			return forever(name)
		}
		v := timed(name)
		v.within, v.bounded = time.Duration(t)*time.Millisecond, true
		if t == 0 {
			v.reason = Transient
		}
		return v
	}
	// ptr: a pointer to a timeout, NULL for none.
	ptr := func(name string, a uint64) verdict {
		if a == 0 {
			return forever(name)
		}
		return timed(name)
	}
	switch nr {
	case 0:
		return onFD("read")
	case 1:
		return onFD("write")
	case 7:
		return ms("poll", args[2])
	case 17:
		return onFD("pread64")
	case 18:
		return onFD("pwrite64")
	case 19:
		return onFD("readv")
	case 20:
		return onFD("writev")
	case 23:
		return ptr("select", args[4])
	case 24:
		return transient("sched_yield")
	case 34:
		return forever("pause")
	case 35:
		return timed("nanosleep")
	case 42:
		return kernel("connect")
	case 43:
		return kernel("accept")
	case 44:
		return kernel("sendto")
	case 45:
		return kernel("recvfrom")
	case 46:
		return kernel("sendmsg")
	case 47:
		return kernel("recvmsg")
	case 56:
		if args[0]&cloneVfork != 0 {
			return forever("clone")
		}
		return transient("clone")
	case 58:
		return forever("vfork")
	case 60:
		return transient("exit")
	case 61:
		return forever("wait4")
	case 65:
		return forever("semop")
	case 69:
		return forever("msgsnd")
	case 70:
		return forever("msgrcv")
	case 72:
		if c := args[1] & arg32; c == fSetlkw || c == fOFDSetlkw {
			return forever("fcntl")
		}
		return transient("fcntl")
	case 73:
		return forever("flock")
	case 128:
		return ptr("rt_sigtimedwait", args[2])
	case 130:
		return forever("rt_sigsuspend")
	case 202:
		switch args[1] & futexCmdMask & arg32 {
		case futexWait, futexWaitBitset, futexLockPI, futexLockPI2, futexWaitRequeuePI:
			return ptr("futex", args[3])
		}
		return transient("futex")
	case 208:
		return kernel("io_getevents")
	case 219:
		return timed("restart_syscall")
	case 220:
		return ptr("semtimedop", args[3])
	case 230:
		return timed("clock_nanosleep")
	case 231:
		return transient("exit_group")
	case 232:
		return ms("epoll_wait", args[3])
	case 242:
		return ptr("mq_timedsend", args[4])
	case 243:
		return ptr("mq_timedreceive", args[4])
	case 247:
		return forever("waitid")
	case 270:
		return ptr("pselect6", args[4])
	case 271:
		return ptr("ppoll", args[2])
	case 281:
		return ms("epoll_pwait", args[3])
	case 288:
		return kernel("accept4")
	case 295:
		return onFD("preadv")
	case 296:
		return onFD("pwritev")
	case 299:
		if args[4] != 0 {
			return timed("recvmmsg")
		}
		return kernel("recvmmsg")
	case 307:
		return kernel("sendmmsg")
	case 327:
		return onFD("preadv2")
	case 328:
		return onFD("pwritev2")
	case 333:
		return kernel("io_pgetevents")
	case 426:
		return kernel("io_uring_enter")
	case 441:
		return ptr("epoll_pwait2", args[3])
	case 449:
		return ptr("futex_waitv", args[3])
	case 455:
		return ptr("futex_wait", args[4])
	}
	return verdict{name: "syscall " + strconv.Itoa(nr), reason: UnknownSyscall, fd: -1}
}
