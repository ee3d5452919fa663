//go:build linux && amd64

package agent

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent/agenttest"
)

// probeArg runs the test binary as a hostile server (see probe).
const probeArg = "__agent_test_probe"

// testSecret is the token the probes hide; the tests look for it.
const testSecret = "HONEYTOKENabc123xyz"

// probe is the traced program of the tests below.
func probe(args []string) int {
	self, _ := os.Executable()
	switch args[0] {
	case "noop":
		return 0
	case "affinity":
		// The CPUs it may run on, and its child's, at the end of a burst
		// of execs; then its own again once it has not stopped for a while.
		for range 300 {
			exec.Command("true").Run() // cheap: a Go child under -race starts too slowly to make a burst
		}
		fmt.Println("self", cpusAllowed())
		out, _ := exec.Command(self, probeArg, "affinity-child").Output()
		fmt.Print(string(out))
		time.Sleep(200 * time.Millisecond)
		fmt.Println("later", cpusAllowed())
	case "affinity-child":
		fmt.Println("child", cpusAllowed())
	case "tamper":
		// Aims at the agent (its parent: PID 1 in a sandbox) and at one of
		// its other threads every call that changes another process's
		// limits, scheduling or CPUs with only a uid check; then the same at
		// a child of its own, and at itself, which must work.
		agentPid := os.Getppid()
		var thread int
		if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", agentPid)); err == nil {
			for _, e := range ents {
				if id, _ := strconv.Atoi(e.Name()); id != agentPid && id > 0 {
					thread = id
				}
			}
		}
		child := exec.Command(self, probeArg, "sleep")
		child.Start()
		one := unix.CPUSet{}
		one.Set(0)
		try := func(what string, f func(pid int) error) {
			for _, target := range []struct {
				name string
				pid  int
			}{{"agent", agentPid}, {"thread", thread}, {"child", child.Process.Pid}, {"self", 0}} {
				fmt.Println(what, target.name, errName(f(target.pid)))
			}
		}
		try("prlimit-nofile", func(pid int) error {
			lim := unix.Rlimit{Cur: 16, Max: 16}
			return unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil)
		})
		try("prlimit-read", func(pid int) error {
			var old unix.Rlimit
			return unix.Prlimit(pid, unix.RLIMIT_CPU, nil, &old)
		})
		try("setpriority", func(pid int) error { return unix.Setpriority(unix.PRIO_PROCESS, pid, 19) })
		try("sched_setaffinity", func(pid int) error { return unix.SchedSetaffinity(pid, &one) })
		try("sched_setscheduler", func(pid int) error {
			_, _, e := unix.Syscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(pid), 5 /* SCHED_IDLE */, uintptr(unsafe.Pointer(new([4]byte))))
			return errnoErr(e)
		})
		fmt.Println("setpriority-user", errName(unix.Setpriority(unix.PRIO_USER, 0, 19)))
		fmt.Println("setpriority-pgrp", errName(unix.Setpriority(unix.PRIO_PGRP, 0, 19)))
		child.Process.Kill()
		child.Wait()
	case "sleep":
		time.Sleep(time.Minute)
	case "loop-dns":
		// A query to the agent's own resolver, sent without waiting for
		// its answer; then the process ends at once.
		if err := agenttest.DNSSecondQuestion([4]byte{127, 0, 0, 1}, testSecret); err != nil {
			fmt.Println(err)
			return 1
		}
	case "exec-into":
		// Becomes the program named, in the same process.
		fmt.Println(syscall.Exec(args[1], args[1:], os.Environ()))
		return 1
	case "fresh-programs":
		// Runs two new copies of itself (files no one has hashed) in one
		// process, the first exec'ing the second, which ends at once; and a
		// program that does not exist.
		dir, err := os.MkdirTemp("", "agent-fresh-")
		if err != nil {
			return 1
		}
		defer os.RemoveAll(dir)
		b, _ := os.ReadFile(self)
		a, z := filepath.Join(dir, "first"), filepath.Join(dir, "second")
		for _, p := range []string{a, z} {
			if err := os.WriteFile(p, b, 0o755); err != nil {
				return 1
			}
		}
		fmt.Println("first", a)
		fmt.Println("second", z)
		if err := exec.Command(a, probeArg, "exec-into", z, probeArg, "noop").Run(); err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("missing", exec.Command(filepath.Join(dir, "missing")).Run() != nil)
	case "wait-children":
		// Each child's end, as its parent learns it from wait, said on
		// stderr at once.
		for range 20 {
			cmd := exec.Command(self, probeArg, "noop")
			if err := cmd.Run(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Fprintf(os.Stderr, "waited %d\n", cmd.Process.Pid)
		}
		return 0
	case "exec-from-thread":
		// A Go program execs from whatever thread runs the goroutine: here
		// one that is not the leader, whose exit stop the kernel makes as
		// it destroys the leader; the process lives on under noop.
		done := make(chan error)
		var try func()
		try = func() {
			runtime.LockOSThread() // never unlocked: the next try takes another thread
			if unix.Gettid() == unix.Getpid() {
				go try()
				return
			}
			done <- syscall.Exec(self, []string{self, probeArg, "noop"}, os.Environ())
		}
		go try()
		fmt.Println(<-done)
		return 1
	case "peek":
		return peekProbe()
	case "wait-stdin":
		io.Copy(io.Discard, os.Stdin)
		exec.Command(self, probeArg, "noop").Run()
		return 7
	case "sockets":
		fmt.Println(strings.Join(agenttest.MakeSockets(), "\n"))
	case "lost":
		steps := map[string]error{
			"sendmmsg": agenttest.SendMmsg(testSecret, 20, 16),
			"dns":      agenttest.DNSSecondQuestion([4]byte{192, 0, 2, 53}, testSecret),
			"sendmsg":  agenttest.SendmsgIovecs(testSecret),
			"datagram": agenttest.SecondDatagram(testSecret),
			"big":      agenttest.BigSend(40 << 10),
			"argv":     agenttest.ExecArgv(self, []string{probeArg, "noop"}, 70<<10, testSecret),
			"hugeargv": agenttest.ExecArgv(self, []string{probeArg, "noop"}, MaxArgv+(10<<10), testSecret),
		}
		for name, err := range steps {
			if err != nil {
				fmt.Println(name, err)
				return 1
			}
		}
	case "identity":
		dir, err := os.MkdirTemp("", "agent-identity-")
		if err != nil {
			return 1
		}
		defer os.RemoveAll(dir)
		copyPath, err := agenttest.ExecDisguised(self, dir, "/usr/bin/ls", probeArg, "noop")
		fmt.Println("copy", copyPath, err)
		fmt.Println("memfd", agenttest.ExecMemfd(self, "payload", probeArg, "noop"))
	case "nondumpable":
		out, err := agenttest.NonDumpable(self, probeArg, "noop")
		if err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println(strings.Join(out, "\n"))
	case "flushflood":
		// Asks its agent (its parent here, PID 1 in a sandbox) for ticks
		// as fast as it can, then runs a program the agent must report.
		for range 20000 {
			unix.Kill(os.Getppid(), FlushSignal)
		}
		exec.Command("/bin/true", "after-the-flood").Run()
	case "state":
		// What the server sees of its start: cwd, ignored signals, env.
		wd, _ := os.Getwd()
		status, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "SigIgn:") {
				fmt.Println("sigign", strings.TrimSpace(l[7:]))
			}
		}
		fmt.Println("cwd", wd)
		fmt.Println("env", os.Getenv(childEnv) != "")
		b, _ := io.ReadAll(os.Stdin)
		fmt.Printf("stdin %q\n", b)
	}
	return 0
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	if e, ok := err.(syscall.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// cpusAllowed is the Cpus_allowed_list line of /proc/self/status.
func cpusAllowed() string {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// agentRun is how a test runs the agent.
type agentRun struct {
	args   []string // after agentArg
	stdin  io.Reader
	netns  bool // a network namespace of its own: only a loopback, down
	nobody bool // as uid 65534, without capabilities
	// during runs once the agent has started, with its pid.
	during func(pid int)
}

type agentResult struct {
	events []Event
	stdout string
	code   int
}

func runAgent(t *testing.T, r agentRun) agentResult {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	attr := &syscall.SysProcAttr{}
	if r.netns || r.nobody {
		if os.Getuid() != 0 {
			t.Skip("needs root: a network namespace, or dropping to another user")
		}
	}
	if r.netns {
		attr.Cloneflags = syscall.CLONE_NEWNET
	}
	if r.nobody {
		// The test binary, where uid 65534 can run it.
		dir, err := os.MkdirTemp("", "agent-nobody-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		os.Chmod(dir, 0o755)
		b, err := os.ReadFile(self)
		if err != nil {
			t.Fatal(err)
		}
		self = filepath.Join(dir, "agent.test")
		if err := os.WriteFile(self, b, 0o755); err != nil {
			t.Fatal(err)
		}
		attr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	args := make([]string, len(r.args))
	for i, a := range r.args {
		args[i] = strings.ReplaceAll(a, "SELF", self)
	}
	cmd := exec.Command(self, append([]string{agentArg}, args...)...)
	cmd.SysProcAttr = attr
	cmd.Dir = os.TempDir()
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stdin = &stdout, r.stdin
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := make(chan Event, 1<<16)
	decoded := make(chan struct{})
	var raw bytes.Buffer
	go func() {
		defer close(decoded)
		Decode(bufio.NewReader(stderr), func(e Event) { events <- e }, func(b []byte) { raw.Write(b) })
	}()
	var res agentResult
	if r.during != nil {
		for e := range events {
			res.events = append(res.events, e)
			if e.Kind == KindStart {
				break
			}
		}
		r.during(cmd.Process.Pid)
	}
	done := make(chan error, 1)
	go func() { <-decoded; done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the agent did not end; raw stderr:\n%s", raw.String())
	}
	close(events)
	for e := range events {
		res.events = append(res.events, e)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Logf("the agent was killed by %v; raw stderr: %s", ws.Signal(), raw.String())
		}
	} else if err != nil {
		t.Fatal(err)
	}
	res.stdout = stdout.String()
	for _, e := range res.events {
		if e.Kind == KindError {
			t.Errorf("agent error: %s", e.Data)
		}
	}
	if raw.Len() > 0 {
		t.Logf("raw stderr: %s", raw.String())
	}
	return res
}

func (r agentResult) of(kind string) []Event {
	var out []Event
	for _, e := range r.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestSignalsCannotStopTheAgent sends the agent every signal but SIGKILL
// and SIGSTOP (which a server cannot send its PID 1), by kill, tgkill to
// each of its threads and rt_sigqueueinfo: it is not even PID 1 here,
// where the kernel protects nothing. It goes on tracing, and the server's
// exit and its later exec are recorded.
func TestSignalsCannotStopTheAgent(t *testing.T) {
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "wait-stdin"}, stdin: stdin,
		during: func(pid int) {
			stdin.Close()
			lines = agenttest.Signals(pid, func(sig int) bool { return sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) })
			w.Close()
		}})
	if len(lines) != 62 {
		t.Fatalf("sent %d signals: %q", len(lines), lines)
	}
	for _, l := range lines {
		// tgkill may find a thread ended since the list was read; kill
		// finds the process or not.
		if strings.Contains(l, ": kill ESRCH") {
			t.Errorf("the agent was gone: %s", l)
		}
	}
	if res.code != 7 {
		t.Fatalf("agent exit %d, want the server's 7; events %+v", res.code, res.events)
	}
	var noop, exit bool
	for _, e := range res.events {
		noop = noop || (e.Kind == KindExec && len(e.Argv) == 3 && e.Argv[2] == "noop")
		exit = exit || (e.Kind == KindExit && e.PPID == 1 && e.ExitCode != nil && *e.ExitCode == 7)
	}
	if !noop || !exit {
		t.Errorf("after the signals: exec of noop %v, the server's exit %v; events %+v", noop, exit, res.events)
	}
}

// TestRefusedSocketFamilies: socket() of a family other than unix, inet,
// inet6 and routing netlink fails with EAFNOSUPPORT, whatever the upper
// bits of the argument, and is recorded; the allowed ones are made.
func TestRefusedSocketFamilies(t *testing.T) {
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "sockets"}})
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	refused := map[string]int{}
	for _, e := range res.of(KindSocket) {
		if e.Result != "EAFNOSUPPORT" {
			t.Errorf("socket event %+v, want EAFNOSUPPORT", e)
		}
		refused[e.Family]++
	}
	for _, s := range agenttest.Sockets {
		if s.Refused {
			if got[s.Name] != "EAFNOSUPPORT" {
				t.Errorf("%s: socket() = %s, want EAFNOSUPPORT", s.Name, got[s.Name])
			}
			continue
		}
		if got[s.Name] != "ok" {
			t.Errorf("%s: socket() = %s, want ok", s.Name, got[s.Name])
		}
		if refused[s.Name] > 0 {
			t.Errorf("%s recorded as refused", s.Name)
		}
	}
	if refused["vsock"] != 2 || refused["packet"] != 1 || refused["alg"] != 1 || refused["bluetooth"] != 1 || refused["netlink:15"] != 1 {
		t.Errorf("refused sockets recorded: %v", refused)
	}
}

// TestNothingLostInSends: a secret only in the 17th datagram of a
// sendmmsg, in a DNS query's second question, in a sendmsg's second
// iovec, in the second of two datagrams, and the last argument of a 70
// KiB argv, all reach the runner; a datagram and an argv over the bounds
// are marked truncated. In a network namespace of its own: nothing leaves.
func TestNothingLostInSends(t *testing.T) {
	res := runAgent(t, agentRun{netns: true, args: []string{"--network", "open", "--", "SELF", probeArg, "lost"}})
	if res.code != 0 {
		t.Fatalf("probe exit %d: %s", res.code, res.stdout)
	}
	found := map[string]bool{}
	var truncPayload, truncArgv bool
	for _, e := range res.events {
		switch e.Kind {
		case KindConnect:
			switch {
			case bytes.Contains(e.Payload, []byte("datagram "+testSecret)):
				found["sendmmsg"] = true
				if !bytes.Contains(e.Payload, []byte("datagram 19 of 20")) {
					t.Errorf("sendmmsg payload lacks the last datagram: %q", e.Payload)
				}
			case bytes.Contains(e.Payload, []byte("harmless first buffer second "+testSecret)):
				found["sendmsg"] = true
			case bytes.Contains(e.Payload, []byte("second "+testSecret)):
				found["datagram"] = true
			}
			if e.Truncated == "payload" && len(e.Payload) == MaxPayload {
				truncPayload = true
			}
		case KindDNS:
			if strings.HasPrefix(e.Host, strings.ToLower(testSecret)+".") {
				found["dns"] = true
			}
		case KindExec:
			if n := len(e.Argv); n > 3 && e.Argv[n-1] == testSecret && e.Truncated == "" {
				found["argv"] = true
			}
			if e.Truncated == "argv" {
				truncArgv = true
				if size := len(strings.Join(e.Argv, "")); size > MaxArgv {
					t.Errorf("truncated argv holds %d bytes, over %d", size, MaxArgv)
				}
			}
		}
	}
	for _, want := range []string{"sendmmsg", "dns", "sendmsg", "datagram", "argv"} {
		if !found[want] {
			t.Errorf("the secret in %s was not recorded", want)
		}
	}
	if !truncPayload || !truncArgv {
		t.Errorf("over the bounds: payload marked %v, argv marked %v", truncPayload, truncArgv)
	}
}

// TestNonDumpableIsRefusedNotHidden: a server that makes itself
// non-dumpable closes its memory to an agent without CAP_SYS_PTRACE (as
// in the sandbox). Its connect and sendto then fail with EACCES and are
// recorded, and the program its child runs is still reported, argv from
// /proc.
func TestNonDumpableIsRefusedNotHidden(t *testing.T) {
	res := runAgent(t, agentRun{netns: true, nobody: true, args: []string{"--network", "open", "--", "SELF", probeArg, "nondumpable"}})
	if !strings.Contains(res.stdout, "connect EACCES") || !strings.Contains(res.stdout, "sendto EACCES") || !strings.Contains(res.stdout, "exec ok") {
		t.Errorf("probe said %q, want connect and sendto refused (EACCES), exec ok", res.stdout)
	}
	refused := 0
	for _, e := range res.of(KindConnect) {
		if e.Unreadable && e.Result == "EACCES" {
			refused++
		}
	}
	if refused != 2 {
		t.Errorf("%d refusals recorded, want 2: %+v", refused, res.of(KindConnect))
	}
	var child bool
	for _, e := range res.of(KindExec) {
		child = child || (e.Unreadable && e.Result == "ok" && len(e.Argv) == 3 && e.Argv[2] == "noop")
	}
	if !child {
		t.Errorf("the non-dumpable child's exec is not reported with its argv: %+v", res.of(KindExec))
	}
}

// TestProgramIdentity: a copy of a program run under a misleading argv[0]
// is identified by its path and sha256; one run from a memfd is anonymous.
func TestProgramIdentity(t *testing.T) {
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "identity"}})
	var copyPath string
	for _, l := range strings.Split(res.stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "copy" {
			copyPath = f[1]
		}
	}
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])
	var disguised, memfd bool
	for _, e := range res.of(KindExe) {
		if e.SHA256 != want {
			continue
		}
		disguised = disguised || (e.Exe == copyPath && !e.Anonymous)
		memfd = memfd || (e.Exe == "/memfd:payload (deleted)" && e.Anonymous)
	}
	if copyPath == "" || !disguised || !memfd {
		t.Errorf("stdout %q; exe events %+v: want %s and the memfd with sha256 %s", res.stdout, res.of(KindExe), copyPath, want)
	}
	var argv0 bool
	for _, e := range res.of(KindExec) {
		argv0 = argv0 || (len(e.Argv) > 0 && e.Argv[0] == "/usr/bin/ls")
	}
	if !argv0 {
		t.Errorf("the disguised exec's argv is not as given: %+v", res.of(KindExec))
	}
}

// TestPinKeepsTheServerOnOneCPU: with --pin (what the runner asks at
// --cpus 1 or less), a server that stops often (a burst of execs) and its
// children may run on one CPU only, the same, and get the agent's CPUs
// back once they stop rarely; without --pin they keep the agent's.
func TestPinKeepsTheServerOnOneCPU(t *testing.T) {
	parse := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				m[f[0]] = f[1]
			}
		}
		return m
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() < 2 {
		t.Skip("one CPU: nothing to pin to")
	}
	all := cpusAllowed()
	got := parse(runAgent(t, agentRun{args: []string{"--network", "open", "--pin", "--", "SELF", probeArg, "affinity"}}).stdout)
	if strings.ContainsAny(got["self"], ",-") || got["self"] == "" || got["child"] != got["self"] || got["later"] != all {
		t.Errorf("pinned: in the burst the server may run on %q, its child on %q, later on %q: want one CPU, the same, then %q", got["self"], got["child"], got["later"], all)
	}
	got = parse(runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "affinity"}}).stdout)
	if got["self"] != all || got["child"] != all || got["later"] != all {
		t.Errorf("unpinned: the server may run on %q, its child on %q, later on %q: want %q", got["self"], got["child"], got["later"], all)
	}
}

// TestServerCannotRetuneTheAgent: the server runs as the agent's user, so
// the kernel would let it lower the agent's resource limits (RLIMIT_CPU
// kills it, RLIMIT_NOFILE blinds it), renice it, make it SCHED_IDLE or
// move its CPUs; each such call aimed at the agent, or at any of its
// threads, or at its process group or user, fails with EPERM and is
// recorded; aimed at the server's own child or at itself it works.
func TestServerCannotRetuneTheAgent(t *testing.T) {
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "tamper"}})
	got := map[string]string{}
	for _, l := range strings.Split(res.stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			got[f[0]+" "+f[1]] = f[2]
		} else if len(f) == 2 {
			got[f[0]] = f[1]
		}
	}
	for _, call := range []string{"prlimit-nofile", "setpriority", "sched_setaffinity", "sched_setscheduler"} {
		for _, target := range []string{"agent", "thread"} {
			if got[call+" "+target] != "EPERM" {
				t.Errorf("%s aimed at the agent's %s: %q, want EPERM (stdout %q)", call, target, got[call+" "+target], res.stdout)
			}
		}
		if got[call+" child"] != "ok" || got[call+" self"] != "ok" {
			t.Errorf("%s at the server's child %q, at itself %q: want ok", call, got[call+" child"], got[call+" self"])
		}
	}
	for _, target := range []string{"agent", "thread", "child", "self"} {
		if got["prlimit-read "+target] != "ok" {
			t.Errorf("reading the limits of %s: %q, want ok", target, got["prlimit-read "+target])
		}
	}
	if got["setpriority-user"] != "EPERM" || got["setpriority-pgrp"] != "EPERM" {
		t.Errorf("setpriority of the user %q, of the process group %q: want EPERM (both hold the agent)", got["setpriority-user"], got["setpriority-pgrp"])
	}
	var recorded []string
	for _, e := range res.of(KindTamper) {
		if e.Result != "EPERM" {
			t.Errorf("tamper event %+v", e)
		}
		recorded = append(recorded, e.Data)
	}
	want := []string{"prlimit64 RLIMIT_NOFILE of the agent", "prlimit64 RLIMIT_NOFILE of a thread of the agent",
		"setpriority of the agent", "setpriority of a thread of the agent", "sched_setaffinity of the agent", "sched_setaffinity of a thread of the agent",
		"sched_setscheduler of the agent", "sched_setscheduler of a thread of the agent", "setpriority of the agent's user", "setpriority of the agent's process group"}
	if strings.Join(recorded, "; ") != strings.Join(want, "; ") {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(recorded, "\n"), strings.Join(want, "\n"))
	}
}

// TestLoopbackDNSReportedAtTheSend: a query to the agent's own resolver
// is reported by the tracer at the send (with its process, its result and
// the query), so it lands in the stretch of the call that sent it even
// when the sender does not wait for the answer; the resolver, which gets
// it a moment later on another thread, does not report it again.
func TestLoopbackDNSReportedAtTheSend(t *testing.T) {
	res := runAgent(t, agentRun{netns: true, args: []string{"--network", "sinkhole", "--", "SELF", probeArg, "loop-dns"}})
	if res.code != 0 {
		t.Fatalf("exit %d, stdout %q", res.code, res.stdout)
	}
	var secret, exit int
	for _, e := range res.events {
		switch {
		case e.Kind == KindDNS && strings.HasPrefix(e.Host, strings.ToLower(testSecret)):
			secret++
			if e.PID == 0 || e.Address != "127.0.0.1" || e.Result != "sinkholed" || exit != 0 {
				t.Errorf("the query %+v: want it from the process, sinkholed, before its exit", e)
			}
		case e.Kind == KindExit && e.PPID == 1:
			exit++
		}
	}
	if secret != 1 {
		t.Errorf("the query's second question reported %d times, want once: %+v", secret, res.of(KindDNS))
	}
}

// TestProgramEventsInOrder: a program no one has hashed is hashed while it
// runs, but its event still comes after its exec and before anything that
// closes its entry: the same process's next exec, and its exit. Each
// carries the directory the exec ran in, and so does a failed exec.
func TestProgramEventsInOrder(t *testing.T) {
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "fresh-programs"}})
	paths := map[string]string{}
	for _, l := range strings.Split(res.stdout, "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			paths[f[0]] = f[1]
		}
	}
	if paths["missing"] != "true" {
		t.Fatalf("stdout %q", res.stdout)
	}
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])
	var pid int
	for _, e := range res.of(KindExec) {
		if len(e.Argv) > 0 && e.Argv[0] == paths["first"] {
			pid = e.PID
		}
	}
	// That process's events, in the order sent.
	var seq []string
	for _, e := range res.events {
		if e.PID != pid {
			continue
		}
		switch e.Kind {
		case KindExec:
			seq = append(seq, "exec "+e.Argv[0])
		case KindExe:
			if e.SHA256 != want || e.Cwd != os.TempDir() {
				t.Errorf("program event %+v: want sha256 %s, cwd %s", e, want, os.TempDir())
			}
			seq = append(seq, "exe "+e.Exe)
		case KindExit:
			seq = append(seq, "exit")
		}
	}
	wantSeq := []string{"exec " + paths["first"], "exe " + paths["first"], "exec " + paths["second"], "exe " + paths["second"], "exit"}
	if strings.Join(seq, "; ") != strings.Join(wantSeq, "; ") {
		t.Errorf("events of the process:\n%s\nwant\n%s", strings.Join(seq, "\n"), strings.Join(wantSeq, "\n"))
	}
	var failed bool
	for _, e := range res.of(KindExec) {
		if len(e.Argv) > 0 && strings.HasSuffix(e.Argv[0], "/missing") {
			failed = e.Result == "ENOENT" && e.Cwd == os.TempDir()
		}
	}
	if !failed {
		t.Errorf("no failed exec of missing with its cwd: %+v", res.of(KindExec))
	}
}

// TestExeChangedWhileHashed: a file written between the exec's stat and
// the end of its hash has no sum, and says why.
func TestExeChangedWhileHashed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(path, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a new mtime, whatever the clock's grain
	if err := os.WriteFile(path, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	c := newExeCache()
	if sum, trunc := c.hash(fd, st, true, 0); sum != "" || trunc != ExeChanged {
		t.Errorf("hash of a changed file: %q, %q; want no sum, exe-changed", sum, trunc)
	}
	if _, _, known := c.lookup(st, true); known {
		t.Error("the changed file's old stat is cached")
	}
}

// TestExeHashedOnce: a thousand execs of one file hash it once.
func TestExeHashedOnce(t *testing.T) {
	c := newExeCache()
	self, _ := os.Executable()
	var st unix.Stat_t
	if err := unix.Stat(self, &st); err != nil {
		t.Fatal(err)
	}
	first, _ := c.sum(self, st)
	for i := 0; i < 1000; i++ {
		if s, _ := c.sum(self, st); s != first || s == "" {
			t.Fatalf("sum %d = %q, want %q", i, s, first)
		}
	}
	if c.hashed != 1 {
		t.Errorf("hashed %d times, want once", c.hashed)
	}
	big := st
	big.Size = MaxExeHash + 1
	if s, trunc := c.sum(self, big); s != "" || trunc != "exe" {
		t.Errorf("a file over MaxExeHash: sum %q, trunc %q", s, trunc)
	}
}

// TestConfigOnStdin: without flags the agent reads its config frame from
// stdin, enters Config.Dir, and leaves the rest of stdin to the server,
// which starts with no signal ignored and without the child marker.
func TestConfigOnStdin(t *testing.T) {
	var in bytes.Buffer
	dir := t.TempDir()
	if err := WriteConfig(&in, Config{Network: ModeOpen, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	in.WriteString("the MCP stream\n")
	res := runAgent(t, agentRun{args: []string{"--", "SELF", probeArg, "state"}, stdin: &in})
	for _, want := range []string{"sigign 0000000000000000", "cwd " + dir, "env false", `stdin "the MCP stream\n"`} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("server said %q, want %q", res.stdout, want)
		}
	}
	if s := res.of(KindStart); len(s) != 1 || s[0].Data != ModeOpen {
		t.Errorf("start events %+v, want one in mode open", s)
	}
}

// TestAgentLooksLikeDockerInit: the agent's threads are named as Docker's
// init.
func TestAgentLooksLikeDockerInit(t *testing.T) {
	var comms []string
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "wait-stdin"}, stdin: stdin,
		during: func(pid int) {
			stdin.Close()
			ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
			for _, e := range ents {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/comm", pid, e.Name()))
				comms = append(comms, strings.TrimSpace(string(b)))
			}
			w.Close()
		}})
	if len(comms) == 0 {
		t.Fatal("no threads read")
	}
	for _, c := range comms {
		if c != Name {
			t.Errorf("a thread is named %q, want %q (all: %q)", c, Name, comms)
		}
	}
}

// TestExecFromAThreadIsNotAnExit: a server whose exec comes from a thread
// other than its leader goes on under the new program; the leader's exit
// stop, which the kernel makes as it destroys it, is not the server's
// exit. One exit is reported, the real one, after the exec.
func TestExecFromAThreadIsNotAnExit(t *testing.T) {
	for range 5 {
		res := runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "exec-from-thread"}})
		if res.code != 0 {
			t.Fatalf("agent exit %d, want noop's 0; %s; events %+v", res.code, res.stdout, res.events)
		}
		var server, exits, execAt, exitAt int
		for _, e := range res.events {
			if e.Kind == KindExec && len(e.Argv) == 3 && e.Argv[2] == "exec-from-thread" {
				server = e.PID
			}
		}
		for i, e := range res.events {
			switch {
			case e.Kind == KindExec && e.PID == server && len(e.Argv) == 3 && e.Argv[2] == "noop":
				execAt = i
			case e.Kind == KindExit && e.PID == server:
				exits++
				exitAt = i
				if e.PPID != 1 || e.ExitCode == nil || *e.ExitCode != 0 {
					t.Errorf("the server's exit %+v, want ppid 1, code 0", e)
				}
			}
		}
		if server == 0 || exits != 1 || execAt == 0 || exitAt < execAt {
			t.Fatalf("server %d: %d exits (last at %d), the exec of noop at %d; want one exit after the exec; events %+v", server, exits, exitAt, execAt, res.events)
		}
	}
}

// TestExitSentBeforeTheParentCanWait: a process's exit is sent before its
// parent can learn of it from wait (the agent sends it while the zombie
// is still its own, and reaps it after), so a parent that answers as
// soon as its child is waited for never answers before the exit is in
// the stream. Here the parent says so on stderr, which the agent
// forwards as events: each child's exit comes before the parent's line.
func TestExitSentBeforeTheParentCanWait(t *testing.T) {
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", "SELF", probeArg, "wait-children"}})
	if res.code != 0 {
		t.Fatalf("agent exit %d; events %+v", res.code, res.events)
	}
	exitAt := map[int]int{}
	var stderr strings.Builder
	waited := 0
	for i, e := range res.events {
		switch e.Kind {
		case KindExit:
			exitAt[e.PID] = i
		case KindStderr:
			stderr.WriteString(e.Data)
			for {
				s := stderr.String()
				nl := strings.IndexByte(s, '\n')
				if nl < 0 {
					break
				}
				var pid int
				if _, err := fmt.Sscanf(s[:nl], "waited %d", &pid); err == nil {
					waited++
					if at, ok := exitAt[pid]; !ok || at > i {
						t.Errorf("child %d: the parent waited for it before its exit was sent", pid)
					}
				}
				rest := s[nl+1:]
				stderr.Reset()
				stderr.WriteString(rest)
			}
		}
	}
	if waited != 20 {
		t.Fatalf("%d children waited for, want 20; events %+v", waited, res.events)
	}
}
