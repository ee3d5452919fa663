//go:build linux && amd64

package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Attacks on the agent by a hostile server: the program identity hashed
// while the program runs (identify, settle, the exe cache) and the
// pinner. The server is sandbox/agent/internal/attackprobe, built here.

// buildAttackProbe builds attackprobe into the test's temporary
// directory (the build cache makes it quick after the first).
func buildAttackProbe(t *testing.T) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Skipf("go env GOMOD: %v", err)
	}
	path := filepath.Join(t.TempDir(), "attackprobe")
	cmd := exec.Command("go", "build", "-o", path, "./sandbox/agent/internal/attackprobe")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build attackprobe: %v\n%s", err, out)
	}
	return path
}

// lines parses "key value" lines.
func lines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			m[k] = v
		}
	}
	return m
}

// TestMemfdRewrittenThroughAMappingIsNotTheCachedProgram: a memfd can be
// exec'd while a shared writable mapping of it lives, and a write
// through that mapping changes neither its size nor its times. Run once
// as /bin/true (hashed, its stat cached), rewritten to /bin/false through
// the mapping and run again, it must be reported with the sum of what
// ran the second time, or as exe-changed: never with the first sum.
func TestMemfdRewrittenThroughAMappingIsNotTheCachedProgram(t *testing.T) {
	probe := buildAttackProbe(t)
	truePath, err1 := exec.LookPath("true")
	falsePath, err2 := exec.LookPath("false")
	if err1 != nil || err2 != nil {
		t.Skip("no true or false")
	}
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", probe, "memfd-swap", truePath, falsePath}})
	out := lines(res.stdout)
	if out["code1"] != "0" || out["code2"] != "1" || out["samestat"] != "true" || out["sum1"] == out["sum2"] {
		t.Fatalf("the probe did not run both programs from one unchanged stat: %q", res.stdout)
	}
	var exes []Event
	for _, e := range res.of(KindExe) {
		if strings.HasPrefix(e.Exe, "/memfd:swap") {
			exes = append(exes, e)
		}
	}
	if len(exes) != 2 {
		t.Fatalf("memfd program events %+v, want 2", exes)
	}
	if exes[0].SHA256 != out["sum1"] {
		t.Errorf("first run: sha256 %s, want %s", exes[0].SHA256, out["sum1"])
	}
	if second := exes[1]; second.SHA256 != out["sum2"] && second.Truncated != ExeChanged {
		t.Errorf("second run (/bin/false, exit 1): sha256 %s truncated %q; want %s (what ran) or exe-changed; the first run's sum is %s",
			second.SHA256, second.Truncated, out["sum2"], out["sum1"])
	}
}

// freshCopy copies file src to dir/name, padded with pad zero bytes (an
// ELF runs the same with bytes after it): a file no one has hashed.
func freshCopy(t *testing.T, src, dir, name string, pad int) (string, string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, make([]byte, pad)...)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return p, hex.EncodeToString(s[:])
}

// seqOf lists the exec, program and exit events of pid, in the order sent.
func seqOf(res agentResult, pid int) []string {
	var seq []string
	for _, e := range res.events {
		if e.PID != pid {
			continue
		}
		switch e.Kind {
		case KindExec:
			seq = append(seq, "exec "+strings.Join(e.Argv, " ")+" "+e.Result)
		case KindExe:
			seq = append(seq, "exe "+e.Exe+" "+e.SHA256+" "+e.Truncated)
		case KindExit:
			code := -1
			if e.ExitCode != nil {
				code = *e.ExitCode
			}
			seq = append(seq, fmt.Sprintf("exit %d %s", code, e.Signal))
		}
	}
	return seq
}

func pidOfExec(res agentResult, argv0 string) int {
	for _, e := range res.of(KindExec) {
		if len(e.Argv) > 0 && e.Argv[0] == argv0 {
			return e.PID
		}
	}
	return 0
}

// TestThreadExecWhileHashed: a fresh program whose non-leader thread at
// once execs another fresh program: the first one's event comes before
// the second exec, each on the process, then its exit.
func TestThreadExecWhileHashed(t *testing.T) {
	probe := buildAttackProbe(t)
	dir := t.TempDir()
	first, sum1 := freshCopy(t, probe, dir, "first", 8<<20)
	second, sum2 := freshCopy(t, probe, dir, "second", 8<<20)
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", probe, "thread-exec-chain", first, second, "noop"}})
	if strings.TrimSpace(res.stdout) != "0" {
		t.Fatalf("stdout %q", res.stdout)
	}
	pid := pidOfExec(res, first)
	got := seqOf(res, pid)
	want := []string{
		"exec " + first + " thread-exec " + second + " noop ok",
		"exe " + first + " " + sum1 + " ",
		"exec " + second + " noop ok",
		"exe " + second + " " + sum2 + " ",
		"exit 0 ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events of process %d:\n%s\nwant\n%s", pid, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKilledWhileHashed: a big fresh program that SIGKILLs itself at
// once: its event, with the sum, still comes before its exit.
func TestKilledWhileHashed(t *testing.T) {
	probe := buildAttackProbe(t)
	big, sum := freshCopy(t, probe, t.TempDir(), "big", 128<<20)
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", probe, "kill-mid-hash", big}})
	if !strings.Contains(res.stdout, "killed") {
		t.Fatalf("stdout %q", res.stdout)
	}
	pid := pidOfExec(res, big)
	got := seqOf(res, pid)
	want := []string{"exec " + big + " self-kill ok", "exe " + big + " " + sum + " ", "exit 137 SIGKILL"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events of process %d:\n%s\nwant\n%s", pid, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPinLeavesNothingPinned: with --pin, after a burst of execs and a
// quiet stretch, every thread of the server (one started mid-burst), of
// a child started mid-burst, and of the agent itself may run on the
// agent's CPUs again.
func TestPinLeavesNothingPinned(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	if set.Count() < 2 {
		t.Skip("one CPU: nothing to pin to")
	}
	probe := buildAttackProbe(t)
	all := cpusAllowed()
	// A fifth of the default pinning rate: on a loaded machine the
	// burst's execs come slower than 1,000 stops a second and are a burst
	// still (each exec is about five stops); far lower, the few stops of
	// the child waking to look would pin it again.
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--pin", "--pin-rate", "200", "--", probe, "pin-after-burst", all}})
	seen := map[string]int{}
	for _, l := range strings.Split(res.stdout, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		seen[f[0]]++
		if f[0] == "mid" {
			if strings.ContainsAny(f[2], ",-") {
				t.Errorf("mid-burst, thread %s may run on %s: not pinned", f[1], f[2])
			}
			continue
		}
		if f[2] != all {
			t.Errorf("%s thread %s may run on %s, want %s", f[0], f[1], f[2], all)
		}
	}
	if seen["server"] < 2 || seen["child"] < 1 || seen["agent"] < 2 {
		t.Fatalf("stdout %q", res.stdout)
	}
}

// TestUntracedChildIsRefused: a child made with clone(CLONE_UNTRACED)
// would not be traced (the kernel lets a task refuse PTRACE_O_TRACEFORK's
// auto-attach): it would run, write and exit with no fork or exit event.
// Such a clone is refused (EPERM) and recorded.
func TestUntracedChildIsRefused(t *testing.T) {
	probe := buildAttackProbe(t)
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", probe, "untraced"}})
	if strings.TrimSpace(res.stdout) != "clone operation not permitted" {
		t.Fatalf("stdout %q: want the clone refused", res.stdout)
	}
	var recorded bool
	for _, e := range res.of(KindTamper) {
		recorded = recorded || (strings.Contains(e.Data, "CLONE_UNTRACED") && e.Result == "EPERM")
	}
	if !recorded {
		t.Errorf("tamper events %+v: want the refused clone", res.of(KindTamper))
	}
}

// TestUnhashableProgramIsNotSilent: as in the container (the agent and
// the server one uid, no capabilities), a program made unreadable just
// after its exec (chmod 0111: it still runs) cannot be opened by the
// agent to hash it, while its link and stat still read. Its event must
// then say so (unreadable, or a truncation), not come with an exe, no
// sum and nothing else, as a program whose sum is simply missing.
func TestUnhashableProgramIsNotSilent(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: runs the agent as another user")
	}
	built := buildAttackProbe(t)
	// Where uid 65534 can run it.
	dir, err := os.MkdirTemp("", "agent-attack-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	probe, _ := freshCopy(t, built, dir, "attackprobe", 0)
	res := runAgent(t, agentRun{nobody: true, args: []string{"--network", "open", "--", probe, "chmod-race"}})
	progs := map[string]bool{}
	for _, l := range strings.Split(res.stdout, "\n") {
		if p, ok := strings.CutPrefix(l, "prog "); ok {
			progs[p] = true
		}
	}
	if len(progs) == 0 {
		t.Fatalf("stdout %q", res.stdout)
	}
	silent, unreadable, hashed := 0, 0, 0
	for _, e := range res.of(KindExe) {
		if !progs[e.Exe] {
			continue
		}
		switch {
		case e.SHA256 != "":
			hashed++
		case e.Unreadable || e.Truncated != "":
			unreadable++
		default:
			silent++
			t.Logf("silent: %+v", e)
		}
	}
	t.Logf("%d programs: %d hashed, %d unreadable, %d with no sum and no reason", len(progs), hashed, unreadable, silent)
	if silent > 0 {
		t.Errorf("%d of %d programs made unreadable after their exec have an exe, no sum, and no word why", silent, len(progs))
	}
}

// TestManyFreshProgramsAtOnce: 24 processes at once, each running a
// fresh program that becomes another: every process's events in order,
// each program with its own sum.
func TestManyFreshProgramsAtOnce(t *testing.T) {
	probe := buildAttackProbe(t)
	dir := t.TempDir()
	sums := map[string]string{}
	var args []string
	for i := range 24 {
		a, sa := freshCopy(t, probe, dir, fmt.Sprintf("a%d", i), (i%4)<<20)
		b, sb := freshCopy(t, probe, dir, fmt.Sprintf("b%d", i), (i%3)<<20)
		sums[a], sums[b] = sa, sb
		args = append(args, a, b)
	}
	for _, pin := range []string{"--pin", "--pin=false"} {
		res := runAgent(t, agentRun{args: append([]string{"--network", "open", pin, "--", probe, "many-fresh"}, args...)})
		checkManyFresh(t, pin, res, args, sums)
	}
}

func checkManyFresh(t *testing.T, pin string, res agentResult, args []string, sums map[string]string) {
	t.Helper()
	if !strings.Contains(res.stdout, "failed 0") {
		t.Fatalf("%s: stdout %q", pin, res.stdout)
	}
	for i := 0; i < len(args); i += 2 {
		a, b := args[i], args[i+1]
		pid := pidOfExec(res, a)
		got := seqOf(res, pid)
		want := []string{
			"exec " + a + " exec-into " + b + " noop ok",
			"exe " + a + " " + sums[a] + " ",
			"exec " + b + " noop ok",
			"exe " + b + " " + sums[b] + " ",
			"exit 0 ",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: events of process %d:\n%s\nwant\n%s", pin, pid, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestChmodWhileHashedKeepsTheSum: a program that, while it runs, only
// changes its file's metadata (chmod to the same mode; link(), a
// setxattr or utimensat would do the same: each moves the ctime) was not
// written, and cannot be while it runs: its sum is still what ran. The
// agent, comparing stats, reports it as a program written between its
// exec and its hash (exe-changed) with no sum: any server can so hide
// the identity of each program it runs, at the cost of one chmod.
func TestChmodWhileHashedKeepsTheSum(t *testing.T) {
	probe := buildAttackProbe(t)
	big, sum := freshCopy(t, probe, t.TempDir(), "big", 128<<20)
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", big, "chmod-self"}})
	if strings.TrimSpace(res.stdout) != "chmod <nil>" {
		t.Fatalf("stdout %q", res.stdout)
	}
	var exes []Event
	for _, e := range res.of(KindExe) {
		if e.Exe == big {
			exes = append(exes, e)
		}
	}
	if len(exes) != 1 || exes[0].SHA256 != sum {
		t.Errorf("program events %+v; want one, with sha256 %s", exes, sum)
	}
}

// TestAgentOutOfDescriptorsIsRefused: the server, the agent's uid,
// would lower the agent's RLIMIT_NOFILE with prlimit (allowed to the same
// uid, non-dumpable or not), leaving it unable to open the programs it
// hashes: the call is refused and recorded, and every program run after
// keeps its sum.
func TestAgentOutOfDescriptorsIsRefused(t *testing.T) {
	built := buildAttackProbe(t)
	dir := t.TempDir()
	var progs []string
	sums := map[string]string{}
	for i := range 10 {
		p, sum := freshCopy(t, built, dir, fmt.Sprintf("p%d", i), 0)
		progs = append(progs, p)
		sums[p] = sum
	}
	res := runAgent(t, agentRun{args: append([]string{"--network", "open", "--", built, "prlimit-agent"}, progs...)})
	if !strings.Contains(res.stdout, "prlimit operation not permitted") {
		t.Fatalf("stdout %q: want the prlimit refused", res.stdout)
	}
	var recorded bool
	for _, e := range res.of(KindTamper) {
		recorded = recorded || (strings.HasPrefix(e.Data, "prlimit64 RLIMIT_NOFILE of the agent") && e.Result == "EPERM")
	}
	if !recorded {
		t.Errorf("tamper events %+v: want the refused prlimit", res.of(KindTamper))
	}
	hashed := 0
	for _, e := range res.of(KindExe) {
		if want, ok := sums[e.Exe]; ok {
			hashed++
			if e.SHA256 != want {
				t.Errorf("program %s: sha256 %q, want %s", e.Exe, e.SHA256, want)
			}
		}
	}
	if hashed != len(progs) {
		t.Errorf("%d program events for the %d programs run", hashed, len(progs))
	}
}

// TestDeepProgramKeepsItsSum: a program run from a directory deeper than
// PATH_MAX. /proc cannot name its file nor its directory (readlink:
// ENAMETOOLONG), yet the file is as readable as any, through the same
// /proc/PID/exe: its sum must be reported, and a directory that cannot
// be named must be said to be so, not left empty.
func TestDeepProgramKeepsItsSum(t *testing.T) {
	probe := buildAttackProbe(t)
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", probe, "deep"}})
	out := lines(res.stdout)
	if out["run"] != "0" || out["sum"] == "" {
		t.Fatalf("stdout %q", res.stdout)
	}
	pid := pidOfExec(res, "./prog")
	var exes []Event
	for _, e := range res.of(KindExe) {
		if e.PID == pid {
			exes = append(exes, e)
		}
	}
	if len(exes) != 1 {
		t.Fatalf("program events of %d: %+v", pid, exes)
	}
	e := exes[0]
	if e.SHA256 != out["sum"] {
		t.Errorf("program event %+v: want sha256 %s (the file is readable; only its name is too long)", e, out["sum"])
	}
	if e.Cwd == "" && e.Truncated == "" && !e.Unreadable {
		t.Errorf("program event %+v: no cwd, and no word why", e)
	}
}
