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
	x32Bit             = 0x40000000
	auditArchX8664     = 0xc000003e
)

// traced are the syscalls that stop for the tracer; all others run at full
// speed.
var traced = []uint32{sysSocket, sysExecve, sysExecveat, sysConnect, sysSendto, sysSendmsg, sysSendmmsg, sysBind, sysListen}

// installFilter installs, on every thread, a filter that stops the traced
// syscalls for the tracer and refuses io_uring (which could connect and
// send without a syscall we see), the x32 ABI and other architectures.
func installFilter() error {
	const (
		ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jgeK = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		retK = unix.BPF_RET | unix.BPF_K
	)
	enosys := uint32(unix.SECCOMP_RET_ERRNO | (uint32(unix.ENOSYS) & unix.SECCOMP_RET_DATA))
	prog := []unix.SockFilter{
		{Code: ldW, K: 4}, // seccomp_data.arch
		{Code: jeqK, Jt: 1, Jf: 0, K: auditArchX8664},
		{Code: retK, K: enosys},
		{Code: ldW, K: 0}, // seccomp_data.nr
		{Code: jgeK, Jt: 0, Jf: 1, K: x32Bit},
		{Code: retK, K: enosys},
	}
	for _, nr := range []uint32{sysIoUringSetup, sysIoUringEnter, sysIoUringRegister} {
		prog = append(prog, unix.SockFilter{Code: jeqK, Jt: 0, Jf: 1, K: nr}, unix.SockFilter{Code: retK, K: enosys})
	}
	for _, nr := range traced {
		prog = append(prog, unix.SockFilter{Code: jeqK, Jt: 0, Jf: 1, K: nr}, unix.SockFilter{Code: retK, K: unix.SECCOMP_RET_TRACE})
	}
	prog = append(prog, unix.SockFilter{Code: retK, K: unix.SECCOMP_RET_ALLOW})
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

// regs are a stopped task's syscall number, arguments and return value.
type regs struct {
	nr   int
	args [6]uint64
	ret  int64
}

func getRegs(tid int) (regs, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return regs{}, err
	}
	return regs{nr: int(int64(r.Orig_rax)), args: [6]uint64{r.Rdi, r.Rsi, r.Rdx, r.R10, r.R8, r.R9}, ret: int64(r.Rax)}, nil
}
