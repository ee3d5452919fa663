//go:build linux && amd64

package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const childEnv = "PTRACEFLOOR_CHILD"

func main() {
	runtime.LockOSThread()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ptracefloor COMMAND...")
		os.Exit(2)
	}
	if os.Getenv(childEnv) != "" {
		os.Unsetenv(childEnv)
		path, err := exec.LookPath(os.Args[1])
		if err == nil {
			err = installFilter()
		}
		if err == nil {
			err = syscall.Exec(path, os.Args[1:], os.Environ())
		}
		fmt.Fprintln(os.Stderr, "ptracefloor:", err)
		os.Exit(127)
	}
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "ptracefloor:", err)
		os.Exit(127)
	}
	server := cmd.Process.Pid
	var ws unix.WaitStatus
	unix.Wait4(server, &ws, unix.WALL, nil)
	unix.PtraceSetOptions(server, unix.PTRACE_O_TRACESECCOMP|unix.PTRACE_O_TRACEFORK|unix.PTRACE_O_TRACEVFORK|
		unix.PTRACE_O_TRACECLONE|unix.PTRACE_O_TRACEEXEC|unix.PTRACE_O_EXITKILL|unix.PTRACE_O_TRACESYSGOOD)
	unix.PtraceCont(server, 0)
	for {
		tid, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			os.Exit(0)
		}
		switch {
		case ws.Exited():
			if tid == server {
				os.Exit(ws.ExitStatus())
			}
		case ws.Signaled():
			if tid == server {
				os.Exit(128 + int(ws.Signal()))
			}
		case ws.Stopped():
			sig := ws.StopSignal()
			if sig == unix.SIGTRAP || sig == unix.SIGTRAP|0x80 || sig == unix.SIGSTOP {
				sig = 0 // an event, a syscall stop, a new task's first stop
			}
			unix.PtraceCont(tid, int(sig))
		}
	}
}

// installFilter stops execve and execveat for the tracer.
func installFilter() error {
	const (
		ldNr = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	prog := []unix.SockFilter{
		{Code: ldNr, K: 0},
		{Code: jeq, K: unix.SYS_EXECVE, Jt: 1},
		{Code: jeq, K: unix.SYS_EXECVEAT, Jf: 1},
		{Code: ret, K: unix.SECCOMP_RET_TRACE},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return errno
	}
	return nil
}
