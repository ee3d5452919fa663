package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/sandbox/proxy"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// cliIn runs mcpsandbox in this process: stdout, stderr, exit code.
func cliIn(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
	return stdout.String(), stderr.String(), code
}

// listRuns is `mcpsandbox runs --json`.
func listRuns(t *testing.T) []runs.Meta {
	t.Helper()
	out, stderr, code := cliIn(t, "runs", "--json")
	var listed struct{ Runs []runs.Meta }
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil {
		t.Fatalf("runs: exit %d %s %s", code, out, stderr)
	}
	return listed.Runs
}

// callText calls a tool and returns its text.
func callText(t *testing.T, cs *mcp.ClientSession, stderr *bytes.Buffer, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v\nstderr:\n%s", tool, err, res, stderr)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestRunNamedChangesApply: `run --name` keeps the run, stopped, once the
// client is gone; `changes` lists the edit a tool made in the workspace
// (the host directory untouched), `apply` writes it to the host, `clean`
// removes the run and its container.
func TestRunNamedChangesApply(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fx := sandboxtest.Fixture(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ws := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	// Registered first: a run that fails to connect still kept its
	// container.
	t.Cleanup(func() { cliIn(t, "clean", "edit") })
	cs, _, stderr := runProxy(t, nil, "--name", "edit", "--log", logPath, "--workspace", ws, "--image", sandboxtest.NodeImage(t, cli),
		"--mount", fx.Source+":"+fx.Target, "--", sandboxtest.FixtureMount, "honest")
	callText(t, cs, stderr, "add_note", map[string]any{"text": "from the run"})
	if _, err := os.Stat(filepath.Join(ws, "notes")); err == nil {
		t.Fatal("the server's edit reached the host directory before apply")
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "kept run edit") {
		t.Errorf("stderr does not name the kept run:\n%s", stderr)
	}
	kept := false
	for _, r := range readLog(t, logPath) {
		kept = kept || r.Type == "kept" && r.Message == "edit" && r.Container != ""
	}
	if !kept {
		t.Errorf("no kept record in the log")
	}
	list := listRuns(t)
	if len(list) != 1 || list[0].Name != "edit" || list[0].State != runs.Stopped || list[0].Container == "" || list[0].Upper == "" {
		t.Fatalf("runs: %+v", list)
	}
	in, err := cli.ContainerInspect(context.Background(), list[0].Container)
	if err != nil || in.State == nil || in.State.Running {
		t.Fatalf("the kept container: %v %+v (want it there, stopped)", err, in.State)
	}
	out, errs, code := cliIn(t, "changes", "edit")
	if code != 0 || !strings.Contains(out, "created  notes/note-1.txt") || !strings.Contains(out, "+from the run") {
		t.Fatalf("changes: exit %d\n%s%s", code, out, errs)
	}
	if out, errs, code = cliIn(t, "apply", "edit"); code != 0 {
		t.Fatalf("apply: exit %d %s %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes", "note-1.txt")); err != nil || string(b) != "from the run\n" {
		t.Errorf("applied file: %q %v", b, err)
	}
	// The name is taken until clean.
	if _, errs, code = cliIn(t, "run", "--name", "edit", "--", "srv"); code != 2 || !strings.Contains(errs, "exists") {
		t.Errorf("run --name of a kept run: exit %d %s", code, errs)
	}
	if out, errs, code = cliIn(t, "clean", "edit"); code != 0 {
		t.Fatalf("clean edit: exit %d %s %s", code, out, errs)
	}
	if _, err := cli.ContainerInspect(context.Background(), list[0].Container); err == nil {
		t.Error("the run's container is still there after clean")
	}
}

// TestRunState: with --state, what the server keeps in its home directory
// in one run is there in the next; a run without it starts empty.
func TestRunState(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fx := sandboxtest.Fixture(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	img := sandboxtest.NodeImage(t, cli)
	start := func(args ...string) (*mcp.ClientSession, *bytes.Buffer) {
		cs, _, stderr := runProxy(t, nil, append(append(args, "--image", img, "--mount", fx.Source+":"+fx.Target, "--"), sandboxtest.FixtureMount, "runws")...)
		return cs, stderr
	}
	// By name only: a plain clean (--states is one) removes every
	// container mcpsandbox made on the engine, other tests' running ones
	// too. The states are in the test's own XDG_STATE_HOME.
	t.Cleanup(func() { cliIn(t, "clean", "first"); cliIn(t, "clean", "second") })
	cs, stderr := start("--name", "first", "--state", "memo")
	callText(t, cs, stderr, "remember", map[string]any{"text": "the first run's line"})
	cs.Close()
	cs, stderr = start("--name", "second", "--state", "memo")
	if got := callText(t, cs, stderr, "recall", nil); !strings.Contains(got, "the first run's line") {
		t.Errorf("second run's memory %q\nstderr:\n%s", got, stderr)
	}
	callText(t, cs, stderr, "remember", map[string]any{"text": "the second run's line"})
	cs.Close()
	cs, stderr = start("--rm")
	if got := callText(t, cs, stderr, "recall", nil); strings.Contains(got, "line") {
		t.Errorf("a run without --state recalls %q", got)
	}
	cs.Close()
	cs, stderr = start("--rm", "--state", "memo")
	if got := callText(t, cs, stderr, "recall", nil); !strings.Contains(got, "the first run's line\nthe second run's line") {
		t.Errorf("third run's memory %q\nstderr:\n%s", got, stderr)
	}
	cs.Close()
	if list := listRuns(t); len(list) != 2 || list[0].StateName != "memo" {
		t.Errorf("runs: %+v", list)
	}
}

// TestRunRmLeavesNothing: with --rm no run is recorded and the container
// is removed at the end.
func TestRunRmLeavesNothing(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fx := sandboxtest.Fixture(t)
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	ws := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	cs, cmd, stderr := runProxy(t, nil, "--rm", "--log", logPath, "--workspace", ws, "--image", sandboxtest.NodeImage(t, cli),
		"--mount", fx.Source+":"+fx.Target, "--", sandboxtest.FixtureMount, "honest")
	callText(t, cs, stderr, "add_note", map[string]any{"text": "lost"})
	cs.Close()
	if list := listRuns(t); len(list) != 0 {
		t.Errorf("runs after --rm: %+v", list)
	}
	if entries, _ := os.ReadDir(filepath.Join(state, "mcpsandbox", "runs")); len(entries) != 0 {
		t.Errorf("run store after --rm: %v", entries)
	}
	end := false
	for _, r := range readLog(t, logPath) {
		if r.Type == "kept" {
			t.Errorf("a kept record: %+v", r)
		}
		if r.Type == "end" {
			end = true
			if r.Container != "" {
				t.Errorf("the end record names a kept container %s", r.Container)
			}
		}
	}
	if !end {
		t.Error("no end record")
	}
	if ids := ownedBy(t, cli, cmd.Process.Pid); len(ids) > 0 {
		t.Errorf("containers left: %v", ids)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes")); err == nil {
		t.Error("the edit reached the host directory")
	}
}

// TestRunName: the default name is the time and the command, with a
// suffix when taken; --name is checked, a taken one refused, and --rm
// names nothing.
func TestRunName(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	st, err := runStore()
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"npx", "-y", "@scope/server-files"}
	opts := &proxy.RunOptions{}
	if err := runName(opts, false, argv); err != nil || !strings.HasSuffix(opts.Name, "-server-files") {
		t.Fatalf("default name %q %v", opts.Name, err)
	}
	first := opts.Name
	if err := st.Create(runs.Meta{Name: first, State: runs.Stopped}, nil); err != nil {
		t.Fatal(err)
	}
	// The same second, or another: either way a name not taken.
	opts = &proxy.RunOptions{}
	if err := runName(opts, false, argv); err != nil || opts.Name == first {
		t.Errorf("second default name %q %v (first %q)", opts.Name, err, first)
	}
	opts = &proxy.RunOptions{Name: first}
	if err := runName(opts, false, argv); !isUsage(err) || !strings.Contains(err.Error(), "exists") {
		t.Errorf("--name taken: %v", err)
	}
	opts = &proxy.RunOptions{Name: "../up"}
	if err := runName(opts, false, argv); !isUsage(err) {
		t.Errorf("--name ../up: %v", err)
	}
	opts = &proxy.RunOptions{Name: "x"}
	if err := runName(opts, true, argv); !isUsage(err) {
		t.Errorf("--name with --rm: %v", err)
	}
	opts = &proxy.RunOptions{}
	if err := runName(opts, true, argv); err != nil || opts.Name != "" {
		t.Errorf("--rm: name %q %v", opts.Name, err)
	}
}

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// TestRunNamedSignalled: a named run whose runner is signalled mid-call
// is still kept and recorded, its container stopped, never left running.
func TestRunNamedSignalled(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fx := sandboxtest.Fixture(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cs, cmd, stderr := runProxy(t, nil, "--name", "sig", "--image", sandboxtest.NodeImage(t, cli),
		"--mount", fx.Source+":"+fx.Target, "--", sandboxtest.FixtureMount, "hang")
	t.Cleanup(func() { cliIn(t, "clean", "sig") })
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}})
	// Once the ping after the call is answered, the call is running.
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if list := listRuns(t); len(list) != 1 || list[0].State != runs.Running || list[0].Container == "" {
		t.Fatalf("runs mid-call: %+v", list)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cs.Close()
	list := listRuns(t)
	if len(list) != 1 || list[0].State != runs.Stopped {
		t.Fatalf("runs after SIGTERM: %+v\nstderr:\n%s", list, stderr)
	}
	if in, err := cli.ContainerInspect(context.Background(), list[0].Container); err != nil || in.State == nil || in.State.Running {
		t.Errorf("the kept container: %v %+v (want it there, stopped)", err, in.State)
	}
}

// TestRunAllowHost: with --allow-host and --network none, the server in
// a run reaches the allowed port of the host's loopback and not another.
func TestRunAllowHost(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fx := sandboxtest.Fixture(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	listen := func() (int, *atomic.Int64) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		var conns atomic.Int64
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				conns.Add(1)
				go func() {
					defer c.Close()
					if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
						io.WriteString(c, "pong\n")
					}
				}()
			}
		}()
		return l.Addr().(*net.TCPAddr).Port, &conns
	}
	allowed, _ := listen()
	other, otherConns := listen()
	cs, _, stderr := runProxy(t, nil, "--network", "none", "--allow-host", fmt.Sprintf("127.0.0.1:%d", allowed), "--image", sandboxtest.NodeImage(t, cli),
		"--mount", fx.Source+":"+fx.Target, "--", sandboxtest.FixtureMount, "runws")
	defer cs.Close()
	if got := callText(t, cs, stderr, "dial", map[string]any{"host": "127.0.0.1", "port": allowed}); !strings.Contains(got, "answer: pong") {
		t.Errorf("the allowed port: %q\nstderr:\n%s", got, stderr)
	}
	if got := callText(t, cs, stderr, "dial", map[string]any{"host": "127.0.0.1", "port": other}); strings.Contains(got, "pong") || otherConns.Load() != 0 {
		t.Errorf("another port reached: %q", got)
	}
}
