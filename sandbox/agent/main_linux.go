//go:build linux && amd64

package agent

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// childEnv marks the agent binary, run again as its own traced child, as
// the child that installs the seccomp filter and execs the server. It is
// in the environment, not argv (which the server can read in
// /proc/PID/cmdline), and is removed before the server's exec.
const childEnv = ChildEnv

// Defaults of the agent's settings, for a config that leaves them out.
const (
	defaultMaxEvents = 200_000
	defaultTick      = 10 * time.Millisecond
)

// init keeps the agent's main goroutine, which traces the server, on the
// process's first thread: TracerPid in the server's status names the
// tracing thread, and it must read 1, as PID 1 (locked later, the
// goroutine could be on any thread, and TracerPid showed its id).
func init() {
	if len(os.Args) > 0 && filepath.Base(os.Args[0]) == Name {
		runtime.LockOSThread()
	}
}

// Main runs the agent with its command line and returns the exit code.
// Two command lines are understood: the runner's current one,
// "--network MODE [--max-events N] [--tick D] [--flush] [--quiet] -- SERVER...", and the
// one-binary agent's, "[--] SERVER..." (as Docker's --init runs
// /sbin/docker-init), whose settings come as a Config frame on stdin.
func Main(args []string) int {
	// The marker is the agent's own, for its own child: as PID 1 (the
	// sandbox's init) it is never the child, whatever the container's
	// environment says (a server's configuration can set any variable).
	if os.Getenv(childEnv) != "" && os.Getpid() != 1 {
		return child(args)
	}
	os.Unsetenv(childEnv)
	setName(Name)
	ignoreSignals()
	// Nobody but root may attach to or read the agent: the server runs as
	// the same uid.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	cfg, argv, err := settings(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Name, err)
		code := 2
		encode(os.Stderr, &Event{T: Now(), Kind: KindEnd, ExitCode: &code, Data: err.Error()})
		return 2
	}
	out := &writer{w: os.Stderr, max: cfg.MaxEvents}
	if cfg.Home != "" {
		// Replaced where the engine put it, so the environment reads as if
		// the image had given the user this home.
		os.Setenv("HOME", cfg.Home)
	}
	if cfg.Dir != "" {
		if err := os.Chdir(cfg.Dir); err != nil {
			out.errorf("entering the server's directory: %v", err)
		}
	}
	out.emit(&Event{Kind: KindStart, PID: os.Getpid(), Data: cfg.Network})

	sinks := startSinks(cfg.Network, out)
	var flush chan os.Signal // nil without cfg.Flush: never ready
	if cfg.Flush {
		// One pending request is enough: every request it stands for
		// came before the tick that answers it.
		flush = make(chan os.Signal, 1)
		signal.Notify(flush, FlushSignal)
	}
	stopTick, ticked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticked)
		flushTicks(out, cfg.Tick, FlushGap, flush, stopTick)
	}()
	timers := newItimers()
	stopQuiet, quieted := make(chan struct{}), make(chan struct{})
	if cfg.Quiet {
		req := make(chan os.Signal, 1) // one pending request stands for all
		signal.Notify(req, QuietSignal)
		go func() {
			defer close(quieted)
			answerQuiet(out, req, timers, stopQuiet)
		}()
	} else {
		close(quieted)
	}
	pin := 0 // stops a second from which to pin; 0: never
	if cfg.Pin {
		pin = cmp.Or(cfg.PinRate, pinRate)
	}
	code := trace(argv, cfg.Network, pin, sinks.queries, timers, out)
	close(stopQuiet)
	<-quieted
	close(stopTick)
	<-ticked
	sinks.close()
	out.last(code)
	return code
}

// flushTicks sends a tick every period, and one at each flush request,
// at once or, within gap of the last tick, gap after it, until stop. A
// tick answering a request is stamped after the request arrived, so it
// proves what the requester needs (every event before its request has
// been sent), whoever sent it: a request the server forges only costs a
// tick, and gap bounds those to one per gap (a flood of them is a few
// tens of KB a second of frames, as the server's own stderr could be).
// The period starts again at each tick: a flushed stream needs no
// heartbeat as soon.
func flushTicks(out *writer, period, gap time.Duration, flush <-chan os.Signal, stop <-chan struct{}) {
	t := time.NewTicker(period)
	defer t.Stop()
	soon := time.NewTimer(gap)
	soon.Stop()
	var due <-chan time.Time // soon's channel while a request waits for gap
	last := time.Now()
	tick := func() {
		out.tick()
		last = time.Now()
		t.Reset(period)
	}
	for {
		select {
		case <-t.C:
			tick()
		case <-flush:
			if due != nil {
				continue // the tick already due comes after this request too
			}
			if wait := gap - time.Since(last); wait > 0 {
				soon.Reset(wait)
				due = soon.C
				continue
			}
			tick()
		case <-due:
			due = nil
			tick()
		case <-stop:
			return
		}
	}
}

// last writes what is pending, a tick, and the agent's last frame
// (KindEnd, with the exit code), once the tracer, the ticks and the sinks
// have stopped. It is not counted against MaxEvents, so that no flood
// can drop it.
func (w *writer) last(code int) {
	w.flush(true)
	w.wmu.Lock()
	defer w.wmu.Unlock()
	encode(w.w, &Event{T: Now(), Kind: KindEnd, ExitCode: &code})
}

// settings reads the agent's settings from its flags (the runner's
// current command line) or, without flags, from the Config frame on
// stdin; it returns them and the server's command.
func settings(args []string) (Config, []string, error) {
	cfg := Config{Network: ModeNone, MaxEvents: defaultMaxEvents, Tick: defaultTick}
	if len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "--" {
		fs := flag.NewFlagSet(Name, flag.ContinueOnError)
		fs.StringVar(&cfg.Network, "network", cfg.Network, "none, sinkhole or open")
		fs.DurationVar(&cfg.Tick, "tick", cfg.Tick, "heartbeat interval")
		fs.IntVar(&cfg.MaxEvents, "max-events", cfg.MaxEvents, "events sent at most; the rest are counted")
		fs.BoolVar(&cfg.Pin, "pin", cfg.Pin, "keep the server on the tracer's CPU while it stops often")
		fs.IntVar(&cfg.PinRate, "pin-rate", cfg.PinRate, "with --pin, the stops a second from which to pin (0: the default)")
		fs.BoolVar(&cfg.Flush, "flush", cfg.Flush, "answer FlushSignal with a tick at once")
		fs.BoolVar(&cfg.Quiet, "quiet", cfg.Quiet, "answer QuietSignal with a quiet reading")
		if err := fs.Parse(args); err != nil {
			return cfg, nil, err
		}
		args = fs.Args()
	} else {
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		c, err := ReadConfig(os.Stdin)
		if err != nil {
			return cfg, nil, fmt.Errorf("reading the config on stdin: %w", err)
		}
		if c.Network != "" {
			cfg.Network = c.Network
		}
		if c.MaxEvents > 0 {
			cfg.MaxEvents = c.MaxEvents
		}
		if c.Tick > 0 {
			cfg.Tick = c.Tick
		}
		cfg.Dir, cfg.Home, cfg.Pin, cfg.PinRate, cfg.Flush, cfg.Quiet = c.Dir, c.Home, c.Pin, c.PinRate, c.Flush, c.Quiet
	}
	switch cfg.Network {
	case ModeNone, ModeSinkhole, ModeOpen:
	default:
		return cfg, nil, fmt.Errorf("unknown network mode %q", cfg.Network)
	}
	if len(args) == 0 {
		return cfg, nil, errors.New("no server command")
	}
	return cfg, args, nil
}

// setName names every thread of the agent (and so the threads it makes
// later, which take their creator's name) as Docker's init is named.
func setName(name string) {
	// Again while a pass renamed something: a thread made meanwhile by one
	// not yet renamed took the old name.
	for pass, renamed := 0, true; renamed && pass < 4; pass++ {
		renamed = false
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return
		}
		for _, e := range ents {
			comm := "/proc/self/task/" + e.Name() + "/comm"
			if b, err := os.ReadFile(comm); err == nil && strings.TrimSpace(string(b)) != name {
				os.WriteFile(comm, []byte(name), 0)
				renamed = true
			}
		}
	}
}

// trace starts the server under ptrace and follows it and every
// descendant until the server's own process ends. It returns the server's
// exit code (128+signal when killed).
func trace(argv []string, mode string, pin int, queries *loopQueries, timers *itimers, out *writer) int {
	// Every ptrace request must come from the thread that started the child.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

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
				e := &Event{Kind: KindStderr, Data: string(buf[:n])}
				if !utf8.Valid(buf[:n]) {
					// JSON would turn the bytes into U+FFFD (a character
					// cut between two reads too): sent as they are.
					e.Data, e.Payload = "", append([]byte(nil), buf[:n]...)
				}
				out.emit(e)
			}
			if err != nil {
				return
			}
		}
	}()
	// The agent again, as its own child: /proc/self/exe needs no path and
	// shows the agent's own argv[0] until the server's exec.
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: append([]string{os.Args[0], "--"}, argv...)}
	cmd.Env = append(os.Environ(), childEnv+"=1")
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
	t.loopQueries = queries
	t.itimers = timers
	if pin > 0 {
		t.pin = newPinner(int64(pin))
		defer t.pin.stop()
	}
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
	os.Unsetenv(childEnv)
	setName(Name) // not "exe", from /proc/self/exe, until the server's exec
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintf(os.Stderr, "%s: no server command\n", Name)
		return 127
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", Name, err)
		return 127
	}
	if err := installFilter(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: installing the seccomp filter: %v\n", Name, err)
		return 126
	}
	// The server starts with every signal at its default, as under
	// Docker's init: an ignored one would be inherited through exec.
	resetSignals()
	err = syscall.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "%s: exec %s: %v\n", Name, path, err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}
