package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// lineWatch is a stderr that tells, once, when a line starting with want
// has been written.
type lineWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func newLineWatch(want string) *lineWatch { return &lineWatch{want: want, seen: make(chan struct{})} }

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for _, l := range strings.Split(w.buf.String(), "\n") {
		if strings.HasPrefix(l, w.want) {
			w.once.Do(func() { close(w.seen) })
		}
	}
	return len(p), nil
}

func (w *lineWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// runContainer is the one sandbox of run id.
func runContainer(t *testing.T, cli *client.Client, runID string) string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", label.Run+"="+runID), filters.Arg("label", label.Kind+"=sandbox"))})
	if err != nil || len(list) != 1 {
		t.Fatalf("want the run's one sandbox, got %d (%v)", len(list), err)
	}
	return list[0].ID
}

// TestLostSandboxIsNoResult removes, kills, restarts or pauses a scan's
// container from outside while a call hangs: the scan is incomplete (exit
// 2, complete false, a sandbox-lost problem on the call), what it saw is
// kept (the tools, the call), and nothing is left behind.
func TestLostSandboxIsNoResult(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	dir := t.TempDir()
	probeFile := writeFile(t, dir, "p.json", `{"hang":{}}`)
	zero := 0
	for _, tc := range []struct {
		name string
		do   func(ctx context.Context, id string) error
		want string
	}{
		{"removed", func(ctx context.Context, id string) error {
			return cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		}, "from outside"},
		{"killed", func(ctx context.Context, id string) error { return cli.ContainerKill(ctx, id, "KILL") }, "killed from outside"},
		{"paused", func(ctx context.Context, id string) error { return cli.ContainerPause(ctx, id) }, "paused from outside"},
		// A SIGKILL from the host straight to the container's PID 1 (the
		// agent): the engine says nothing, the agent says no last word.
		{"init killed from the host", func(ctx context.Context, id string) error { return sandboxtest.KillInit(ctx, cli, id) }, "init was killed from outside"},
		{"restarted", func(ctx context.Context, id string) error {
			err := cli.ContainerRestart(ctx, id, container.StopOptions{Timeout: &zero})
			if err != nil && strings.Contains(err.Error(), "marked for removal") {
				// The runner saw the kill of the restart and removed the
				// container before the engine could start it again.
				return nil
			}
			return err
		}, "from outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runID := label.NewRunID()
			sandboxtest.NoLeftovers(t, cli, runID)
			t.Cleanup(func() { removalDone(t, cli, runID) })
			out := filepath.Join(dir, tc.name+".json")
			stderr := newLineWatch("call 1: hang")
			args := []string{"scan", "-v", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t), "--linger", sandboxtest.Linger.String(),
				"--no-replay", "--run-id", runID, "--call-timeout", "10m", "--mount", fx.Source + ":" + fx.Target, "--probes", probeFile, "--", fx.Target, "hang"}
			done := scanUntil(t, args, stderr)
			if err := tc.do(context.Background(), runContainer(t, cli, runID)); err != nil {
				t.Fatal(err)
			}
			r := lostReport(t, done, stderr, out)
			if r.Complete || len(r.Tools) == 0 || len(r.Calls) != 1 {
				t.Errorf("complete %v, %d tools, %d calls: want an incomplete report that keeps what was seen", r.Complete, len(r.Tools), len(r.Calls))
			}
			var lost []report.Problem
			for _, p := range r.Problems {
				if p.Kind == report.ProblemSandboxLost {
					lost = append(lost, p)
				}
				if p.Kind == "crash" || p.Kind == "teardown" {
					t.Errorf("a lost sandbox is no %s: %+v", p.Kind, p)
				}
			}
			if len(lost) == 0 || !strings.Contains(lost[0].Message, tc.want) || lost[0].Call != 1 {
				t.Errorf("want a sandbox-lost problem on call 1 saying %q; problems %+v", tc.want, r.Problems)
			}
			if line := stderr.String()[strings.LastIndex(strings.TrimSuffix(stderr.String(), "\n"), "\n")+1:]; !strings.Contains(line, "the sandbox was lost") {
				t.Errorf("the last line does not say the sandbox was lost: %q", line)
			}
		})
	}
}

// lostReport waits for the scan whose sandbox was lost to end, wants
// exit 2, and reads its report from out.
func lostReport(t *testing.T, done <-chan int, stderr *lineWatch, out string) report.Report {
	t.Helper()
	if code := <-done; code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	return readReport(t, out)
}

// scanUntil runs the scan of args in the background until its log has
// stderr's line; the channel gives its exit code.
func scanUntil(t *testing.T, args []string, stderr *lineWatch) <-chan int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		var stdout bytes.Buffer
		done <- exitCode(run(context.Background(), args, &stdout, stderr), stderr)
	}()
	select {
	case <-stderr.seen:
	case code := <-done:
		t.Fatalf("the scan ended (exit %d) before %q: %s", code, stderr.want, stderr)
	}
	return done
}

// removalDone waits while a container of run id is being removed (a
// restart from outside that raced the runner's removal leaves the engine
// finishing it).
func removalDone(t *testing.T, cli *client.Client, runID string) {
	for range 100 {
		list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", label.Run+"="+runID), filters.Arg("status", "removing"))})
		if err != nil || len(list) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServerExitIsNotALoss: a server that dies on its own is a crash, as
// before, never a lost sandbox: whether it exits with an error code, with
// 0, or kills itself with SIGKILL (the agent, its PID 1, then says its
// last word, where a SIGKILL of the agent from the host leaves none).
func TestServerExitIsNotALoss(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		probe string
		argv  []string
		code  int
	}{
		{"exit 3 mid-call", `{"crash":{}}`, []string{fx.Target, "crash"}, 3},
		// The shell execs the fixture (same pid) after starting a child
		// that kills it: the server's own process tree, mid-call or, on a
		// slow machine, before it (a start that failed: still no loss).
		{"kill -9 of itself", `{"hang":{}}`, []string{"/bin/sh", "-c", "(sleep 2; kill -9 $$) & exec " + fx.Target + " hang"}, 128 + 9},
		{"exit 0 mid-call", `{"hang":{}}`, []string{"/bin/sh", "-c", fx.Target + " hang & sleep 2; exit 0"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			var stdout, stderr bytes.Buffer
			args := append([]string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t), "--linger", sandboxtest.Linger.String(), "--no-replay",
				"--call-timeout", "2m", "--mount", fx.Source + ":" + fx.Target, "--probes", writeFile(t, dir, "p.json", tc.probe), "--"}, tc.argv...)
			if code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr); code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, stderr.String())
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var r report.Report
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			for _, p := range r.Problems {
				if p.Kind == report.ProblemSandboxLost {
					t.Errorf("the server's own exit is not a lost sandbox: %+v", p)
				}
			}
			if r.Server.ExitCode == nil || *r.Server.ExitCode != tc.code {
				t.Errorf("server exit code %v, want %d; problems %+v", r.Server.ExitCode, tc.code, r.Problems)
			}
			if tc.name == "exit 3 mid-call" && !slices.ContainsFunc(r.Problems, func(p report.Problem) bool { return p.Kind == "crash" }) {
				t.Errorf("want a crash problem, got %+v", r.Problems)
			}
		})
	}
}

// TestInterruptedDuringImageBuild ends a scan with SIGINT's cause while
// the workspace's image layer is being made: one line on stderr, exit 2,
// nothing of the run left.
func TestInterruptedDuringImageBuild(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	ws := t.TempDir()
	writeFile(t, ws, "a.txt", "a\n")
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	log := newLineWatch("preparing an image layer")
	go func() { <-log.seen; cancel(interrupted{syscall.SIGINT}) }()
	args := []string{"scan", "-v", "--format", "json", "--agent", sandboxtest.Agent(t), "--no-replay", "--run-id", runID, "--copy-workspace", "--workspace", ws,
		"--mount", fx.Source + ":" + fx.Target, "--", fx.Target, "honest"}
	var stdout bytes.Buffer
	err := run(ctx, args, &stdout, log)
	var stderr bytes.Buffer
	if code := finish(ctx, err, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2 (err %v)", code, err)
	}
	if stderr.String() != "mcpsandbox: interrupted (SIGINT): nothing left running\n" {
		t.Errorf("stderr %q, want the one line", stderr.String())
	}
}

// TestClosedPipesLeaveNothing runs the runner as a process with its
// stdout and stderr pipes closed by their readers (scan -v | head -c0):
// it is not killed by SIGPIPE, it ends on its own with exit 2 (the report
// could not be written), and leaves no container.
func TestClosedPipesLeaveNothing(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	bin := binary(t)
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR.Close()
	errR.Close()
	cmd := exec.Command(bin, "scan", "-v", "--format", "json", "--no-replay", "--linger", sandboxtest.Linger.String(), "--run-id", runID,
		"--mount", fx.Source+":"+fx.Target, "--", fx.Target, "honest")
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || !ee.Exited() || ee.ExitCode() != 2 {
		t.Fatalf("the runner: %v (want exit 2, not a signal)", err)
	}
}

// ownedSandbox is the one sandbox the runner process pid owns.
func ownedSandbox(t *testing.T, cli *client.Client, pid int) string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter), filters.Arg("label", label.Kind+"=sandbox"))})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	prefix := fmt.Sprintf("%s:%d:", host, pid)
	var ids []string
	for _, c := range list {
		if strings.HasPrefix(c.Labels[label.Owner], prefix) {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("want the run's one sandbox, got %d", len(ids))
	}
	return ids[0]
}

// TestRunLostSandboxExits2: `mcpsandbox run` whose container is removed
// from outside, or whose init is killed from the host, while a client's
// call is outstanding: the call fails, the runner exits 2 saying the
// sandbox was lost, its log has the sandbox-lost problem, and nothing of
// the run is left.
func TestRunLostSandboxExits2(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	for _, tc := range []struct {
		name string
		do   func(ctx context.Context, id string) error
		want string
	}{
		{"removed", func(ctx context.Context, id string) error {
			return cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		}, "from outside"}, // the engine kills it first: "killed from outside (signal 9)"
		{"init killed from the host", func(ctx context.Context, id string) error { return sandboxtest.KillInit(ctx, cli, id) }, "init was killed from outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "run.jsonl")
			cs, cmd, stderr := runProxy(t, nil, "--log", logPath, "--mount", fx.Source+":"+fx.Target, "--", fx.Target, "hang")
			pid := cmd.Process.Pid
			t.Cleanup(func() {
				if ids := ownedBy(t, cli, pid); len(ids) > 0 {
					t.Errorf("left behind: %v", ids)
				}
			})
			id := ownedSandbox(t, cli, pid)
			called := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}})
				called <- err
			}()
			// The call is outstanding (hang never answers): whether the
			// server has read it yet or not, it is lost with the sandbox.
			if err := tc.do(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			if err := <-called; err == nil {
				t.Error("the call to hang succeeded")
			}
			cs.Close() // the transport closes the runner's stdin and waits for it
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 {
				t.Fatalf("the runner: %v, want exit 2; stderr:\n%s", cmd.ProcessState, stderr)
			}
			if !strings.Contains(stderr.String(), "mcpsandbox: the sandbox was lost") || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr does not say the sandbox was lost (%q):\n%s", tc.want, stderr)
			}
			lost := false
			for _, r := range readLog(t, logPath) {
				lost = lost || (r.Type == "problem" && r.Reason == report.ProblemSandboxLost && strings.Contains(r.Message, tc.want))
			}
			if !lost {
				t.Errorf("the log has no sandbox-lost problem saying %q", tc.want)
			}
		})
	}
}

// TestLostInTheLingerWithReplaysBegun kills a scan's container while it
// lingers, with the replays of its earlier calls begun beside it (see
// replayEarly): the scan is incomplete (exit 2, a sandbox-lost problem),
// and it ends only when those replays have, their containers removed:
// nothing of the run is left behind.
func TestLostInTheLingerWithReplaysBegun(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	ws := t.TempDir()
	if err := os.CopyFS(ws, os.DirFS("../../probes/examples/demo/workspace")); err != nil {
		t.Fatal(err)
	}
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	t.Cleanup(func() { removalDone(t, cli, runID) })
	out := filepath.Join(t.TempDir(), "r.json")
	stderr := newLineWatch("call 1: ")
	args := []string{"scan", "-v", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t), "--linger", "20s",
		"--run-id", runID, "--mount", fx.Source + ":" + fx.Target, "--probes", "../../probes/examples/demo/probes.json", "--workspace", ws,
		"--no-boundary", "--", fx.Target, "honest", "liar"}
	done := scanUntil(t, args, stderr)
	main := runContainer(t, cli, runID) // the replays begin after the last call
	for !strings.Contains(stderr.String(), "replays begun as the linger begins") {
		select {
		case code := <-done:
			t.Fatalf("the scan ended (exit %d) with no replay begun in its linger: %s", code, stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := cli.ContainerKill(context.Background(), main, "KILL"); err != nil {
		t.Fatal(err)
	}
	r := lostReport(t, done, stderr, out)
	// Every replay begun ended before the scan did: each leg's last line
	// comes before the scan's own, which says the sandbox was lost.
	log := stderr.String()
	_, begun, _ := strings.Cut(log, "replays begun as the linger begins: calls [")
	begun, _, _ = strings.Cut(begun, "]")
	last := strings.LastIndex(strings.TrimSuffix(log, "\n"), "\n") + 1
	if !strings.Contains(log[last:], "the sandbox was lost") {
		t.Errorf("the last line does not say the sandbox was lost: %q", log[last:])
	}
	if n, want := strings.Count(log[:last], ": watched "), 2*len(strings.Fields(begun)); n != want {
		t.Errorf("%d legs said how they ended before the scan did, want %d (replays of calls %s):\n%s", n, want, begun, log)
	}
	if r.Complete || !slices.ContainsFunc(r.Problems, func(p report.Problem) bool { return p.Kind == report.ProblemSandboxLost }) {
		t.Errorf("complete %v, problems %+v: want an incomplete report with the loss", r.Complete, r.Problems)
	}
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label.Run+"="+runID))})
	if err != nil || len(list) != 0 {
		t.Errorf("after the scan: %d container(s) of its run (%v)", len(list), err)
	}
}
