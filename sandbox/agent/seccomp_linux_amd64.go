package agent

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Syscall numbers on amd64.
const (
	sysSocket          = 41
	sysExit            = 60
	sysClone           = 56
	sysClone3          = 435
	sysExecve          = 59
	sysExecveat        = 322
	sysConnect         = 42
	sysSendto          = 44
	sysSendmsg         = 46
	sysSendmmsg        = 307
	sysBind            = 49
	sysListen          = 50
	sysIoUringSetup    = 425
	sysIoUringEnter    = 426
	sysIoUringRegister = 427
	sysPrlimit64       = 302
	sysSetpriority     = 141
	sysSchedSetparam   = 142
	sysSchedSetsched   = 144
	sysSchedSetaffin   = 203
	sysSchedSetattr    = 314
	sysIoprioSet       = 251
	sysAlarm           = 37
	sysSetitimer       = 38
	x32Bit             = 0x40000000
	auditArchX8664     = 0xc000003e
)

// traced are the syscalls that stop for the tracer (socket only for the
// families below); all others run at full speed.
var traced = []uint32{sysExecve, sysExecveat, sysConnect, sysSendto, sysSendmsg, sysSendmmsg, sysBind, sysListen, sysAlarm, sysSetitimer}

// allowedFamily says whether socket() may make a socket of this family
// and protocol: the loopback's and the network's (inet, inet6), local IPC
// (unix) and the routing netlink that runtimes read interfaces and
// addresses from. Any other (vsock, which can reach the host; packet;
// bluetooth; alg; ...) fails with EAFNOSUPPORT and is recorded. The kernel
// reads both arguments as int: their upper 32 bits do not count.
func allowedFamily(family, protocol uint32) bool {
	switch family {
	case unix.AF_UNIX, unix.AF_INET, unix.AF_INET6:
		return true
	case unix.AF_NETLINK:
		return protocol == unix.NETLINK_ROUTE
	}
	return false
}

// seccomp_data offsets: nr, arch, then the arguments (little-endian: an
// argument's low 32 bits come first).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
	offArg2 = 32
)

// aimed are the syscalls that act on another process given by pid (its
// resource limits, its scheduling, its CPUs) with no more than a uid check:
// the server runs as the agent's user, so it could lower PID 1's limits
// (RLIMIT_CPU kills it; RLIMIT_NOFILE blinds it) or starve it. On the
// caller itself (pid 0) they run at full speed; aimed elsewhere they stop
// for the tracer, which refuses those aimed at the agent (see guard).
var aimed = []uint32{sysPrlimit64, sysSchedSetparam, sysSchedSetsched, sysSchedSetaffin, sysSchedSetattr}

// setpriority and ioprio_set name their target by (which, who): the
// caller itself is "process, 0".
const (
	prioProcess      = 0
	ioprioWhoProcess = 1
)

// filter is the program installFilter installs: it stops the traced
// syscalls and socket() of inet, inet6 and refused families for the
// tracer, lets unix and routing-netlink sockets through, and refuses
// io_uring (which could connect and send without a syscall we see), the
// x32 ABI and other architectures.
func filter() []unix.SockFilter {
	var a asm
	a.ld(offArch)
	a.jeq(auditArchX8664, "", "enosys")
	a.ld(offNr)
	a.jge(x32Bit, "enosys", "")
	for _, nr := range []uint32{sysIoUringSetup, sysIoUringEnter, sysIoUringRegister} {
		a.jeq(nr, "enosys", "")
	}
	a.jeq(sysSocket, "", "other")
	a.ld(offArg0)
	a.jeq(unix.AF_INET, "trace", "")
	a.jeq(unix.AF_INET6, "trace", "")
	a.jeq(unix.AF_UNIX, "allow", "")
	a.jeq(unix.AF_NETLINK, "", "trace")
	a.ld(offArg2)
	a.jeq(unix.NETLINK_ROUTE, "allow", "trace")
	a.label("other")
	for _, nr := range traced {
		a.jeq(nr, "trace", "")
	}
	// A child made with CLONE_UNTRACED is not followed (the tracer cannot
	// force its attach): such a clone stops for the tracer, which refuses
	// it. clone3's flags are in memory the filter cannot read: it fails
	// with ENOSYS, as under the engine's own profile, and the C library
	// and Go fall back to clone.
	a.jeq(sysClone, "clone", "")
	a.jeq(sysClone3, "enosys", "")
	for _, nr := range aimed {
		a.jeq(nr, "pid", "")
	}
	a.jeq(sysSetpriority, "setpriority", "")
	a.jeq(sysIoprioSet, "ioprio", "")
	a.label("allow")
	a.ret(unix.SECCOMP_RET_ALLOW)
	a.label("trace")
	a.ret(unix.SECCOMP_RET_TRACE)
	a.label("enosys")
	a.ret(unix.SECCOMP_RET_ERRNO | (uint32(unix.ENOSYS) & unix.SECCOMP_RET_DATA))
	// The aimed syscalls (jumps go forward only: each block has its own
	// returns). pid_t and the who of setpriority are ints: the low 32 bits.
	a.label("pid")
	a.ld(offArg0)
	a.jeq(0, "", "trace-aimed")
	a.ret(unix.SECCOMP_RET_ALLOW)
	// (which, who): the caller itself is (process, 0).
	for _, b := range []struct {
		label   string
		process uint32
	}{{"setpriority", prioProcess}, {"ioprio", ioprioWhoProcess}} {
		a.label(b.label)
		a.ld(offArg0)
		a.jeq(b.process, "", "trace-aimed")
		a.ld(offArg1)
		a.jeq(0, "", "trace-aimed")
		a.ret(unix.SECCOMP_RET_ALLOW)
	}
	a.label("clone")
	a.ld(offArg0)
	a.jset(unix.CLONE_UNTRACED, "trace-aimed", "")
	a.ret(unix.SECCOMP_RET_ALLOW)
	a.label("trace-aimed")
	a.ret(unix.SECCOMP_RET_TRACE)
	return a.assemble()
}

// installFilter installs the filter on every thread.
func installFilter() error {
	prog := filter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return errno
	}
	return nil
}

// asm builds a classic BPF program with named jump targets ("" is the
// next instruction).
type asm struct {
	ins    []unix.SockFilter
	labels map[string]int
	jumps  []jump
}

type jump struct {
	at     int
	jt, jf string
}

func (a *asm) ld(off uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off})
}

func (a *asm) ret(k uint32) {
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k})
}

func (a *asm) jeq(k uint32, jt, jf string)  { a.jmp(unix.BPF_JEQ, k, jt, jf) }
func (a *asm) jset(k uint32, jt, jf string) { a.jmp(unix.BPF_JSET, k, jt, jf) }
func (a *asm) jge(k uint32, jt, jf string)  { a.jmp(unix.BPF_JGE, k, jt, jf) }

func (a *asm) jmp(op uint16, k uint32, jt, jf string) {
	a.jumps = append(a.jumps, jump{len(a.ins), jt, jf})
	a.ins = append(a.ins, unix.SockFilter{Code: unix.BPF_JMP | op | unix.BPF_K, K: k})
}

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.ins)
}

// assemble resolves the jumps; targets are always ahead and near (BPF
// jumps are forward, 8 bits).
func (a *asm) assemble() []unix.SockFilter {
	off := func(at int, name string) uint8 {
		if name == "" {
			return 0
		}
		to, ok := a.labels[name]
		if !ok || to <= at || to-at-1 > 255 {
			panic("seccomp filter: bad jump to " + name)
		}
		return uint8(to - at - 1)
	}
	for _, j := range a.jumps {
		a.ins[j.at].Jt, a.ins[j.at].Jf = off(j.at, j.jt), off(j.at, j.jf)
	}
	return a.ins
}

// regs are a stopped task's registers: the syscall number, arguments and
// return value, and the raw set to write back.
type regs struct {
	nr   int
	args [6]uint64
	ret  int64
	raw  unix.PtraceRegs
}

func getRegs(tid int) (regs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return regs{}, err
	}
	return regs{nr: int(int64(r.Orig_rax)), args: [6]uint64{r.Rdi, r.Rsi, r.Rdx, r.R10, r.R8, r.R9}, ret: int64(r.Rax), raw: r}, nil
}

// refuse makes the syscall a task is stopped at (a seccomp stop) fail
// with errno without running.
func refuse(tid int, r regs, errno unix.Errno) error {
	raw := r.raw
	raw.Orig_rax = ^uint64(0) // -1: no syscall
	raw.Rax = uint64(-int64(errno))
	return unix.PtraceSetRegs(tid, &raw)
}
