//go:build linux

package quiet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sandboxArg runs the test binary as PID 1 of a PID namespace of its own
// with its own /proc, as uid 65534 without capabilities: the agent's
// place in a sandbox. It starts one case's programs and reads Pending
// until the case's verdict shows (or settleLimit passes), then prints
// what it read as JSON.
const sandboxArg = "__quiet_sandbox"

// settleLimit bounds how long a case waits for its programs to reach
// the state it reads; it is no timed assertion: a case that gets there
// sooner ends sooner.
const settleLimit = 30 * time.Second

func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == sandboxArg {
		os.Exit(sandboxMain(os.Args[2]))
	}
	os.Exit(m.Run())
}

// pyTimerfd arms a timerfd for 30 s through libc (python 3.11 has no
// os.timerfd_create).
const pyTimerfd = `import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
def timerfd(sec):
    fd = libc.timerfd_create(1, 0)
    spec = struct.pack("qqqq", 0, 0, sec, 0)
    assert libc.timerfd_settime(fd, 0, spec, None) == 0
    return fd
`

// sandboxCase is a set of programs and what Pending must read of them.
type sandboxCase struct {
	name string
	// argv run in the sandbox, with stdin a pipe kept open; "ZOMBIE" runs
	// true and never waits for it.
	argv [][]string
	// ready: each program says "ready" on stdout once set up, before the
	// state the case reads (READY in a program stands for the statement
	// that says it); the readings start after.
	ready bool
	// want tells a reading the case accepts, with why not.
	want func(Wakeups) error
}

// only accepts a reading of at least one wakeup, all for which ok holds.
func only(what string, ok func(Wakeup) bool) func(Wakeups) error {
	return func(ws Wakeups) error {
		if len(ws) == 0 {
			return fmt.Errorf("quiet, want %s", what)
		}
		for _, w := range ws {
			if !ok(w) {
				return fmt.Errorf("%+v, want only %s", w, what)
			}
		}
		return nil
	}
}

func quietWant(ws Wakeups) error {
	if !ws.Quiet() {
		return fmt.Errorf("not quiet, want quiet")
	}
	return nil
}

func sandboxCases() []sandboxCase {
	return []sandboxCase{
		{name: "node-idle", argv: [][]string{{"node", "-e", "READY; process.stdin.on('data', () => {})"}}, ready: true, want: quietWant},
		{name: "node-settimeout", argv: [][]string{{"node", "-e", "setTimeout(() => {}, 60000); READY; process.stdin.on('data', () => {})"}}, ready: true,
			want: only("node's loop in a timed epoll wait within 60 s", func(w Wakeup) bool {
				return w.Reason == TimedWait && strings.HasPrefix(w.Syscall, "epoll") && w.Bounded && w.Within > 0 && w.Within <= time.Minute && w.TID == w.PID
			})},
		{name: "python-idle", argv: [][]string{{"python3", "-c", "import sys\nREADY\nsys.stdin.read()"}}, ready: true, want: quietWant},
		{name: "sleep", argv: [][]string{{"sleep", "30"}}, want: only("a nanosleep without a bound", func(w Wakeup) bool {
			return w.Reason == TimedWait && strings.Contains(w.Syscall, "nanosleep") && !w.Bounded && w.Comm == "sleep"
		})},
		{name: "timerfd", argv: [][]string{{"python3", "-c", pyTimerfd + "timerfd(30)\nREADY\nimport sys; sys.stdin.read()"}}, ready: true,
			want: only("an armed timerfd due within 30 s", func(w Wakeup) bool {
				return w.Reason == Timerfd && w.Bounded && w.Within > 0 && w.Within <= 30*time.Second
			})},
		{name: "disarmed-timerfd", argv: [][]string{{"python3", "-c", pyTimerfd + "timerfd(0)\nREADY\nimport sys; sys.stdin.read()"}}, ready: true, want: quietWant},
		{name: "futex-timeout", argv: [][]string{{"python3", "-c", "import threading, sys\nthreading.Thread(target=lambda: threading.Event().wait(30)).start()\nREADY\nsys.stdin.read()"}}, ready: true,
			want: only("a thread in a timed futex wait", func(w Wakeup) bool {
				return w.Reason == TimedWait && w.Syscall == "futex" && w.TID != w.PID
			})},
		{name: "busy", argv: [][]string{{"python3", "-c", "READY\nwhile True: pass"}}, ready: true, want: only("a task running", func(w Wakeup) bool {
			return w.Reason == Running || w.Reason == Changed
		})},
		{name: "undumpable", argv: [][]string{{"python3", "-c", "import ctypes, sys\nassert ctypes.CDLL(None).prctl(4, 0, 0, 0, 0) == 0\nREADY\nsys.stdin.read()"}}, ready: true,
			want: func(ws Wakeups) error {
				if err := only("unreadable", func(w Wakeup) bool { return w.Reason == Unreadable })(ws); err != nil {
					return err
				}
				for _, w := range ws {
					if w.Detail == "syscall: EACCES" || w.Detail == "syscall: EPERM" {
						return nil
					}
				}
				return fmt.Errorf("%+v: no syscall file unreadable", ws)
			}},
		{name: "zombie", argv: [][]string{{"ZOMBIE"}}, want: only("a zombie", func(w Wakeup) bool { return w.Reason == Zombie })},
		{name: "stopped", argv: [][]string{{"python3", "-c", "import os, signal; READY; os.kill(os.getpid(), signal.SIGSTOP)"}}, ready: true,
			want: only("a stopped task", func(w Wakeup) bool { return w.Reason == Stopped })},
		{name: "posix-timer", argv: [][]string{{"python3", "-c", "import ctypes, struct, sys\nlibc = ctypes.CDLL(None)\ntid = ctypes.c_void_p()\nassert libc.timer_create(1, None, ctypes.byref(tid)) == 0\nassert libc.timer_settime(tid, 0, struct.pack('qqqq', 0, 0, 30, 0), None) == 0\nREADY\nsys.stdin.read()"}}, ready: true,
			want: only("a POSIX timer", func(w Wakeup) bool { return w.Reason == PosixTimer && w.Detail == "1 timers" })},
	}
}

// hostileCases are a server's attempts to look quiet while it is not.
func hostileCases() []sandboxCase {
	return []sandboxCase{
		// A blocking recv on a socket with SO_RCVTIMEO: no timeout in its
		// arguments, yet it ends in 1 s.
		{name: "recv-so-rcvtimeo", argv: [][]string{{"python3", "-c", "import socket, struct, sys\na, b = socket.socketpair()\na.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack('qq', 1, 0))\nREADY\nwhile True:\n  try: a.recv(1)\n  except OSError: pass"}}, ready: true,
			want: only("a socket wait the kernel can end", func(w Wakeup) bool {
				return w.Reason == KernelWake && w.Syscall == "recvfrom"
			})},
		// The same through read(2), which is quiet on a pipe.
		{name: "read-socket", argv: [][]string{{"python3", "-c", "import os, socket, struct\na, b = socket.socketpair()\na.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack('qq', 1, 0))\nREADY\nwhile True:\n  try: os.read(a.fileno(), 1)\n  except OSError: pass"}}, ready: true,
			want: only("a read on a socket", func(w Wakeup) bool {
				return w.Reason == KernelWake && w.Syscall == "read" && strings.HasPrefix(w.Detail, "fd 3: socket:[")
			})},
		// A thread with an fd table of its own (unshare CLONE_FILES) arms
		// a timerfd there; the process's table (the leader's) has none.
		{name: "timerfd-own-table", argv: [][]string{{"python3", "-c", pyTimerfd + "import threading, os, sys\ndef own():\n  assert libc.unshare(0x400) == 0\n  timerfd(30)\n  os.read(0, 1)\nthreading.Thread(target=own).start()\nREADY\nsys.stdin.read()"}}, ready: true,
			want: only("the thread's timerfd", func(w Wakeup) bool { return w.Reason == Timerfd && w.TID != w.PID })},
		// A comm of terminal controls and a ")" to mislead the stat parse.
		{name: "hostile-comm", argv: [][]string{{"python3", "-c", "import ctypes, time\nctypes.CDLL(None).prctl(15, b'\\x1b[2J) R 1\\n', 0, 0, 0)\nREADY\ntime.sleep(30)"}}, ready: true,
			want: only("the sleep, its comm escaped", func(w Wakeup) bool {
				return w.Reason == TimedWait && w.Syscall == "clock_nanosleep" && w.Comm == `\x1b[2J) R 1\x0a`
			})},
		// Undumpable, blocked in a timed sleep: unreadable, never quiet.
		{name: "undumpable-sleep", argv: [][]string{{"python3", "-c", "import ctypes, time\nctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\nREADY\ntime.sleep(30)"}}, ready: true,
			want: only("unreadable", func(w Wakeup) bool { return w.Reason == Unreadable })},
		// A child forked and gone while its parent idles: not read as a
		// live task, and its end not missed.
		{name: "exited-child", argv: [][]string{{"python3", "-c", "import os, sys\nif os.fork() == 0: os._exit(0)\nos.wait()\nREADY\nsys.stdin.read()"}}, ready: true, want: quietWant},
	}
}

// gapCases are what /proc does not show: they read as quiet, though
// each fires within seconds (see the package's report for how the
// agent's tracer could record them).
func gapCases() []sandboxCase {
	return []sandboxCase{
		{name: "gap-setitimer", argv: [][]string{{"python3", "-c", "import signal, sys\nsignal.signal(signal.SIGALRM, lambda *a: None)\nsignal.setitimer(signal.ITIMER_REAL, 5)\nREADY\nsys.stdin.read()"}}, ready: true, want: quietWant},
		{name: "gap-alarm", argv: [][]string{{"python3", "-c", "import signal, sys\nsignal.signal(signal.SIGALRM, lambda *a: None)\nsignal.alarm(5)\nREADY\nsys.stdin.read()"}}, ready: true, want: quietWant},
	}
}

// benchCases are the sandboxes BenchmarkPending reads: python with
// threads blocked in futex waits without a timeout, and node idle.
func benchCases() []sandboxCase {
	threads := func(n int) []string {
		return []string{"python3", "-c", fmt.Sprintf("import threading, sys\ne = threading.Event()\nfor _ in range(%d): threading.Thread(target=e.wait).start()\nREADY\nsys.stdin.read()", n-1)}
	}
	return []sandboxCase{
		{name: "bench-50-threads", argv: [][]string{threads(50)}, ready: true, want: quietWant},
		{name: "bench-5x10-threads", argv: [][]string{threads(10), threads(10), threads(10), threads(10), threads(10)}, ready: true, want: quietWant},
		{name: "bench-node-idle", argv: [][]string{{"node", "-e", "READY; process.stdin.on('data', () => {})"}}, ready: true, want: quietWant},
	}
}

func TestPendingInASandbox(t *testing.T) { runCases(t, sandboxCases()) }

func TestPendingKnownGaps(t *testing.T) { runCases(t, gapCases()) }

// BenchmarkPending reports one Pending's cost in each bench sandbox, as
// its PID 1 measures it (ns/pending; the b.N of the outer loop is one
// sandbox run: use -benchtime 1x).
func BenchmarkPending(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("needs root")
	}
	self, _ := os.Executable()
	dir := b.TempDir()
	os.Chmod(dir, 0o755)
	data, _ := os.ReadFile(self)
	bin := filepath.Join(dir, "quiet.test")
	os.WriteFile(bin, data, 0o755)
	for _, tc := range benchCases() {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				cmd := exec.Command(bin, sandboxArg, tc.name)
				cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
				cmd.Env = append(os.Environ(), benchEnv+"=1")
				out, err := cmd.Output()
				if err != nil {
					b.Fatal(err)
				}
				var res struct {
					Settled            bool
					NsPerOp, Tasks, FD int64
					Allocs             int64
				}
				if err := json.Unmarshal(out, &res); err != nil || !res.Settled {
					b.Fatalf("%s %v", out, err)
				}
				b.ReportMetric(float64(res.NsPerOp), "ns/pending")
				b.ReportMetric(float64(res.Allocs), "allocs/pending")
				b.ReportMetric(float64(res.Tasks), "tasks")
			}
		})
	}
}

// benchEnv has a bench sandbox measure Pending once settled.
const benchEnv = "QUIET_BENCH"

func TestPendingHostile(t *testing.T) { runCases(t, hostileCases()) }

func runCases(t *testing.T, cases []sandboxCase) {
	self := sandboxBinary(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, argv := range tc.argv {
				if argv[0] != "ZOMBIE" {
					if _, err := exec.LookPath(argv[0]); err != nil {
						t.Skipf("no %s", argv[0])
					}
				}
			}
			ws, err := runSandbox(t, self, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("read:\n%s", show(ws))
			if err := tc.want(ws); err != nil {
				t.Errorf("%v\nread:\n%s", err, show(ws))
			}
		})
	}
}

func show(ws Wakeups) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "  %+v\n", w)
	}
	return b.String()
}

// sandboxBinary is the test binary where uid 65534 can run it.
func sandboxBinary(t *testing.T) string {
	if os.Getuid() != 0 {
		t.Skip("needs root: a PID namespace of its own, then uid 65534")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "quiet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "quiet.test")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// runSandbox runs one case in its sandbox and returns what it read.
func runSandbox(t *testing.T, bin, name string) (Wakeups, error) {
	cmd := exec.Command(bin, sandboxArg, name)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = "/"
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the sandbox: %v; stderr:\n%s", err, stderr.String())
	}
	var res struct {
		Wakeups Wakeups
		Settled bool
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("reading %q: %v; stderr:\n%s", out, err, stderr.String())
	}
	if !res.Settled {
		t.Logf("the case did not settle within %v; its last reading is judged", settleLimit)
	}
	return res.Wakeups, nil
}

// sandboxMain is PID 1 of a case's sandbox.
func sandboxMain(name string) int {
	var tc *sandboxCase
	for _, c := range slices.Concat(sandboxCases(), hostileCases(), gapCases(), benchCases()) {
		if c.name == name {
			tc = &c
		}
	}
	if tc == nil {
		fmt.Fprintln(os.Stderr, "no case", name)
		return 2
	}
	if err := enterSandbox(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var cmds []*exec.Cmd
	var stdins []io.Closer
	for _, argv := range tc.argv {
		if argv[0] == "ZOMBIE" {
			argv = []string{"true"}
		}
		ready := map[string]string{"python3": "print('ready', flush=True)", "node": "console.log('ready')"}[argv[0]]
		args := slices.Clone(argv[1:])
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "READY", ready)
		}
		cmd := exec.Command(argv[0], args...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if tc.ready {
			line, err := bufio.NewReader(out).ReadString('\n')
			if line != "ready\n" {
				fmt.Fprintf(os.Stderr, "%s said %q, %v, not ready\n", argv[0], line, err)
				return 1
			}
		}
		cmds, stdins = append(cmds, cmd), append(stdins, in)
	}
	var ws Wakeups
	settled := false
	for deadline := time.Now().Add(settleLimit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var err error
		if ws, err = Pending(Options{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if tc.want(ws) == nil {
			settled = true
			break
		}
	}
	if os.Getenv(benchEnv) != "" {
		res := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				Pending(Options{})
			}
		})
		tasks := 0
		if ents, err := os.ReadDir("/proc"); err == nil {
			for _, e := range ents {
				if pid, err := strconv.Atoi(e.Name()); err == nil && pid != 1 {
					ts, _ := os.ReadDir("/proc/" + e.Name() + "/task")
					tasks += len(ts)
				}
			}
		}
		json.NewEncoder(os.Stdout).Encode(map[string]any{"Settled": settled, "NsPerOp": res.NsPerOp(), "Allocs": res.AllocsPerOp(), "Tasks": tasks})
	} else {
		json.NewEncoder(os.Stdout).Encode(struct {
			Wakeups Wakeups
			Settled bool
		}{ws, settled})
	}
	for i, cmd := range cmds {
		stdins[i].Close()
		cmd.Process.Kill()
		cmd.Wait()
	}
	return 0
}

// enterSandbox mounts the namespace's own /proc and becomes uid 65534
// without capabilities, as the agent runs.
func enterSandbox() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("dropping groups: %w", err)
	}
	if err := syscall.Setresgid(65534, 65534, 65534); err != nil {
		return fmt.Errorf("becoming gid 65534: %w", err)
	}
	if err := syscall.Setresuid(65534, 65534, 65534); err != nil {
		return fmt.Errorf("becoming uid 65534: %w", err)
	}
	return nil
}
