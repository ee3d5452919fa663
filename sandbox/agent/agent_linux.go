//go:build linux && amd64

package agent

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// childArg makes the agent binary the traced child that installs the
// seccomp filter and execs the server.
const childArg = "__mcpsandbox_child"

// Main runs the agent with its command line and returns the exit code.
func Main(args []string) int {
	if len(args) > 0 && args[0] == childArg {
		return child(args[1:])
	}
	fs := flag.NewFlagSet("mcpsandbox-agent", flag.ContinueOnError)
	mode := fs.String("network", ModeNone, "none, sinkhole or open")
	tick := fs.Duration("tick", 10*time.Millisecond, "heartbeat interval")
	maxEvents := fs.Int("max-events", 200_000, "events sent at most; the rest are counted")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "mcpsandbox-agent: no server command")
		return 2
	}
	// The server runs as our uid and could signal PID 1; the kernel drops
	// ignored signals to a namespace's init, so only SIGKILL from outside
	// (the runner's teardown) ends the agent.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
		syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	out := &writer{w: os.Stderr, max: *maxEvents}
	// Nobody but root may attach to or read the agent: the server runs as
	// the same uid.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	out.emit(&Event{Kind: KindStart, PID: os.Getpid(), Data: *mode})

	sinks := startSinks(*mode, out)
	defer sinks.close()
	stopTick := make(chan struct{})
	defer close(stopTick)
	go func() {
		t := time.NewTicker(*tick)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				out.reportDropped()
				out.emit(&Event{Kind: KindTick})
			case <-stopTick:
				return
			}
		}
	}()
	code := trace(argv, *mode, out)
	out.emit(&Event{Kind: KindTick})
	out.reportDropped()
	return code
}

// writer serialises frames and stamps each with the time it is written,
// so that the stream is in time order and a tick proves that everything
// before it has been sent.
type writer struct {
	mu       sync.Mutex
	w        io.Writer
	n, max   int
	dropped  int
	reported int
}

func (w *writer) emit(e *Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.Kind != KindTick && e.Kind != KindStderr {
		if w.n >= w.max {
			w.dropped++
			return
		}
		w.n++
	}
	e.T = Now()
	encode(w.w, e)
}

func (w *writer) errorf(format string, args ...any) {
	w.emit(&Event{Kind: KindError, Data: fmt.Sprintf(format, args...)})
}

// reportDropped sends how many events were dropped since it last said.
func (w *writer) reportDropped() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.dropped - w.reported; d > 0 {
		encode(w.w, &Event{T: Now(), Kind: KindDropped, Data: fmt.Sprint(d)})
		w.reported = w.dropped
	}
}

// trace starts the server under ptrace and follows it and every
// descendant until the server's own process ends. It returns the server's
// exit code (128+signal when killed).
func trace(argv []string, mode string, out *writer) int {
	// Every ptrace request must come from the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	self, err := os.Executable()
	if err != nil {
		out.errorf("finding the agent binary: %v", err)
		return 127
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		out.errorf("making the stderr pipe: %v", err)
		return 127
	}
	fwd := make(chan struct{})
	go func() {
		defer close(fwd)
		buf := make([]byte, 16<<10)
		for {
			n, err := pr.Read(buf)
			if n > 0 {
				out.emit(&Event{Kind: KindStderr, Data: string(buf[:n])})
			}
			if err != nil {
				return
			}
		}
	}()
	cmd := exec.Command(self, append([]string{childArg, "--"}, argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		out.errorf("starting the server: %v", err)
		return 127
	}
	pw.Close()
	// The server alone holds stdin and stdout now: when it closes them, the
	// runner sees it.
	if devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0); err == nil {
		unix.Dup2(int(devnull.Fd()), 0)
		unix.Dup2(int(devnull.Fd()), 1)
		devnull.Close()
	}
	t := newTracer(cmd.Process.Pid, mode, out)
	code := t.loop()
	// Anything still running dies with PID 1; close our end so the
	// forwarder sees EOF once the last holder is gone.
	select {
	case <-fwd:
	case <-time.After(200 * time.Millisecond):
	}
	return code
}

// child installs the seccomp filter and execs the server; it runs traced.
func child(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "mcpsandbox-agent: no server command")
		return 127
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpsandbox-agent: %v\n", err)
		return 127
	}
	if err := installFilter(); err != nil {
		fmt.Fprintf(os.Stderr, "mcpsandbox-agent: installing the seccomp filter: %v\n", err)
		return 126
	}
	err = syscall.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "mcpsandbox-agent: exec %s: %v\n", path, err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}
