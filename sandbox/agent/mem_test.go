//go:build linux && amd64

package agent

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// peekMark is what the non-dumpable probe holds for TestReadFallsBackToPeek.
var peekMark = [...]byte{'P', 'E', 'E', 'K', 'M', 'E', '-', '0', '1', '2', '3'}

// peekProbe makes itself non-dumpable, says where peekMark is, and waits.
func peekProbe() int {
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	fmt.Printf("%d\n", uintptr(unsafe.Pointer(&peekMark[0])))
	os.Stdin.Read(make([]byte, 1))
	return 0
}

// TestReadFallsBackToPeek: a tracer that held CAP_SYS_PTRACE when it
// attached, and has it no more, may still PTRACE_PEEKDATA a non-dumpable
// tracee, while process_vm_readv and /proc/PID/mem refuse: readAt gets the
// bytes through the fallback.
func TestReadFallsBackToPeek(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the capability dropped after the attach")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Capabilities are per thread: this one drops CAP_SYS_PTRACE and
		// ends with the goroutine (never unlocked).
		runtime.LockOSThread()
		self, _ := os.Executable()
		// Untraced until it has said where peekMark is: a tracee stopped at
		// a signal while its tracer waits for its output would never say.
		cmd := exec.Command(self, probeArg, "peek")
		out, _ := cmd.StdoutPipe()
		in, _ := cmd.StdinPipe()
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
		pid := cmd.Process.Pid
		var addr uint64
		if _, err := fmt.Fscan(bufio.NewReader(out), &addr); err != nil {
			t.Error(err)
			return
		}
		// Attached with CAP_SYS_PTRACE, as it is non-dumpable by now.
		if err := unix.PtraceAttach(pid); err != nil {
			t.Error(err)
			return
		}
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
				t.Errorf("waiting for the probe to stop: %v, %v", err, ws)
				return
			}
			if ws.StopSignal() == unix.SIGSTOP {
				break
			}
			unix.PtraceCont(pid, int(ws.StopSignal())) // its own signals
		}

		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			t.Error(err)
			return
		}
		data[0].Effective &^= 1 << unix.CAP_SYS_PTRACE
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			t.Error(err)
			return
		}
		b := make([]byte, len(peekMark))
		local := []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}}
		remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}
		if _, err := unix.ProcessVMReadv(pid, local, remote, 0); err != unix.EPERM {
			t.Errorf("process_vm_readv = %v, want EPERM (the test proves nothing)", err)
		}
		n, err := readAt(pid, addr, b)
		if err != nil || string(b[:n]) != string(peekMark[:]) {
			t.Errorf("readAt = %q, %v; want %q", b[:n], err, peekMark[:])
		}
	}()
	<-done
}
