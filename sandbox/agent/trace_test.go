//go:build linux && amd64

package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the agent and the program it traces.
const (
	agentArg    = "__agent_test_agent"
	workloadArg = "__agent_test_workload"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(Main(os.Args[1:]))
	}
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case agentArg:
			os.Exit(Main(os.Args[2:]))
		case workloadArg:
			os.Exit(workload(os.Args[2:]))
		case probeArg:
			os.Exit(probe(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

// workload is the traced program. "tree N PAR" runs N leaves, PAR at a
// time. A leaf makes threads that end at once, forks a child that never
// execs, and runs a command (a Go program: its runtime starts threads
// right after the exec; and a Go process's first command also makes Go's
// own clone(CLONE_VFORK|CLONE_PIDFD) probe child, which never execs).
// Every process prints "tids PID TID..." (its threads, ended ones too) and
// a leaf "raw PID" for its fork without exec.
func workload(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	tids := map[int]bool{}
	note := func(tid int) {
		mu.Lock()
		tids[tid] = true
		mu.Unlock()
	}
	defer func() {
		if ents, err := os.ReadDir("/proc/self/task"); err == nil {
			for _, e := range ents {
				if n, err := strconv.Atoi(e.Name()); err == nil {
					note(n)
				}
			}
		}
		line := []string{"tids", strconv.Itoa(os.Getpid())}
		for tid := range tids {
			line = append(line, strconv.Itoa(tid))
		}
		fmt.Println(strings.Join(line, " "))
	}()
	run := func(arg ...string) error {
		cmd := exec.Command(self, append([]string{workloadArg}, arg...)...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd.Run()
	}
	switch args[0] {
	case "tree":
		n, _ := strconv.Atoi(args[1])
		par, _ := strconv.Atoi(args[2])
		sem := make(chan struct{}, par)
		var wg sync.WaitGroup
		var failed atomic.Bool
		for i := 0; i < n; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := run("leaf"); err != nil {
					fmt.Fprintln(os.Stderr, "leaf:", err)
					failed.Store(true)
				}
			}()
		}
		wg.Wait()
		if failed.Load() {
			return 1
		}
	case "leaf":
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Locked and never unlocked: the thread ends with the
				// goroutine, a new one is cloned for the next.
				runtime.LockOSThread()
				note(syscall.Gettid())
			}()
		}
		pid := rawFork()
		if pid < 0 {
			return 1
		}
		fmt.Printf("raw %d\n", pid)
		if err := run("noop"); err != nil {
			fmt.Fprintln(os.Stderr, "noop:", err)
			return 1
		}
		wg.Wait()
	case "noop":
	}
	return 0
}

// rawFork forks a child that exits at once without exec, and reaps it.
func rawFork() int {
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		return -1
	}
	if pid == 0 {
		for {
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
		}
	}
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(int(pid), &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	return int(pid)
}

// TestForksExecsAndThreadsInAnyOrder traces processes that fork, exec and
// make threads, many at once on few CPUs, so that a new task's own stops
// come before or after its creator's fork event, and may end before it.
// Whatever the order, every process is reported as fork, its execs, exit,
// each once, and no thread is ever reported as a process.
func TestForksExecsAndThreadsInAnyOrder(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	leaves := 60
	if testing.Short() {
		leaves = 20
	}
	for _, procs := range []string{"1", "2"} {
		t.Run("GOMAXPROCS="+procs, func(t *testing.T) {
			cmd := exec.Command(self, agentArg, "--network", "open", "--tick", "1s", "--",
				self, workloadArg, "tree", strconv.Itoa(leaves), "8")
			cmd.Env = append(os.Environ(), "GOMAXPROCS="+procs)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(2 * time.Minute):
				cmd.Process.Kill()
				t.Fatalf("the traced workload did not end; stderr:\n%s", stderr.String())
			}
			if err != nil {
				t.Fatalf("agent: %v; stderr:\n%s", err, stderr.String())
			}
			checkForkEvents(t, &stdout, &stderr, leaves)
		})
	}
}

func checkForkEvents(t *testing.T, stdout, stderr *bytes.Buffer, leaves int) {
	t.Helper()
	threads := map[int]int{} // tid -> its process, for tids that are not the process
	raw := map[int]bool{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "tids":
			pid, _ := strconv.Atoi(f[1])
			for _, s := range f[2:] {
				if tid, _ := strconv.Atoi(s); tid != pid {
					threads[tid] = pid
				}
			}
		case "raw":
			pid, _ := strconv.Atoi(f[1])
			raw[pid] = true
		}
	}
	if len(raw) != leaves {
		t.Fatalf("%d leaves forked without exec, want %d; stdout:\n%s", len(raw), leaves, stdout.String())
	}
	var root int
	seq := map[int][]string{}
	var errs []string
	Decode(stderr, func(e Event) {
		switch e.Kind {
		case KindFork, KindExec, KindExit:
			seq[e.PID] = append(seq[e.PID], e.Kind)
			if e.Kind == KindExec && e.PPID == 1 && root == 0 {
				root = e.PID
			}
		case KindError:
			errs = append(errs, e.Data)
		}
	}, func([]byte) {})
	if len(errs) > 0 {
		t.Errorf("agent errors: %q", errs)
	}
	// The root, each leaf, its command, its fork without exec; Go's probe
	// child of each Go process that runs a command, where Go makes one.
	if min := 1 + 3*leaves; len(seq) < min {
		t.Errorf("%d processes reported, want at least %d", len(seq), min)
	}
	for pid, s := range seq {
		got := strings.Join(s, " ")
		if p, ok := threads[pid]; ok {
			t.Errorf("thread %d of process %d reported as a process: %s", pid, p, got)
			continue
		}
		if pid == root {
			if got != "exec exit" {
				t.Errorf("the traced program: %s, want exec exit", got)
			}
			continue
		}
		execs := strings.Count(got, KindExec)
		if want := strings.TrimSpace("fork " + strings.Repeat("exec ", execs) + "exit"); got != want {
			t.Errorf("process %d: %s, want fork, its execs, exit", pid, got)
		}
		if raw[pid] && execs > 0 {
			t.Errorf("process %d forked without exec: %s", pid, got)
		}
	}
	for pid := range raw {
		if seq[pid] == nil {
			t.Errorf("child %d, forked without exec, not reported", pid)
		}
	}
}

// TestSinkAddresses: the sinkhole's answer is recognised in any spelling;
// other addresses, the other documentation ranges among them, are not.
func TestSinkAddresses(t *testing.T) {
	for a, want := range map[string]bool{SinkIP: true, "3fff:0::1": true, "3fff:0:0:0:0:0:0:1": true,
		"192.0.2.1": false, "::ffff:192.0.2.1": false, "127.0.0.1": false, "2001:db8::1": false, "": false} {
		if got := isSinkAddress(a); got != want {
			t.Errorf("isSinkAddress(%q) = %v, want %v", a, got, want)
		}
	}
}
