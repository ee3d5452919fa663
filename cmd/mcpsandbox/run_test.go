package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/proxy"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

func TestRunUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--help"}, 0, "--print-config"},
		{[]string{"run"}, 2, "run needs the server command"},
		{[]string{"run", "--hints", "maybe", "--", "srv"}, 2, `hints "maybe"`},
		{[]string{"run", "--same-path", "--", "srv"}, 2, "--same-path needs --workspace"},
		{[]string{"run", "--env", "MCPSANDBOX_TEST_UNSET_VAR", "--", "srv"}, 2, "not set on the host"},
		{[]string{"run", "--print-config", "emacs", "--", "srv"}, 2, `--print-config "emacs"`},
		{[]string{"run", "--verdicts", "/no/such/report.json", "--", "srv"}, 2, "--verdicts"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errb)
		code := exitCode(err, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("mcpsandbox %q: exit %d (want %d), output %q lacks %q", tc.args, code, tc.code, out.String()+errb.String(), tc.want)
		}
	}
}

// TestRunPrintConfig: each client's snippet runs this binary with the
// same flags and command, less --print-config.
func TestRunPrintConfig(t *testing.T) {
	args := []string{"--print-config", "vscode", "--hints", "strip", "--", "npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31"}
	for client, path := range map[string]string{"vscode": "servers", "claude": "mcpServers", "generic": ""} {
		args[1] = client
		var out, errb bytes.Buffer
		if err := run(context.Background(), append([]string{"run"}, args...), &out, &errb); err != nil {
			t.Fatalf("%s: %v: %s", client, err, errb.String())
		}
		var v map[string]any
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v: %s", client, err, out.String())
		}
		entry := v
		if path != "" {
			entry = v[path].(map[string]any)["sandboxed-server-everything"].(map[string]any)
		}
		got, _ := json.Marshal(entry["args"])
		if want := `["run","--hints","strip","--","npx","-y","@modelcontextprotocol/server-everything@2026.8.31"]`; string(got) != want {
			t.Errorf("%s: args %s, want %s", client, got, want)
		}
		if exe, _ := os.Executable(); entry["command"] != exe {
			t.Errorf("%s: command %v", client, entry["command"])
		}
	}
	wd, _ := os.Getwd()
	got := withoutPrintConfig([]string{"--workspace", "proj", "--print-config=claude", "--mount=bin:/opt/bin", "--package", "pkg:/app", "--hints", "pass", "--", "node", "--workspace", "x"})
	want := []string{"--workspace", wd + "/proj", "--mount=" + wd + "/bin:/opt/bin", "--package", wd + "/pkg:/app", "--hints", "pass", "--", "node", "--workspace", "x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("args %q, want %q", got, want)
	}
}

// runProxy starts `mcpsandbox run` with args as a process of its own and
// connects a Go SDK client to it over its stdio. Without --name, the run
// is --rm: a test keeps no run it does not name.
func runProxy(t *testing.T, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	return runProxyAt(t, "2025-11-25", opts, args...)
}

// runProxyAt is runProxy with a client that asks for protocol.
func runProxyAt(t *testing.T, protocol string, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	if !slices.Contains(args, "--name") {
		args = append([]string{"--rm"}, args...)
	}
	cmd := exec.Command(sandboxtest.Runner(t), append([]string{"run"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "run-test", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connecting to mcpsandbox run: %v\nstderr:\n%s", err, stderr.String())
	}
	return cs, cmd, &stderr
}

// readLog reads run's --log records.
func readLog(t *testing.T, path string) []proxy.RunRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []proxy.RunRecord
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r proxy.RunRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// ownedBy lists the containers the runner process pid owns (label.Owner).
func ownedBy(t *testing.T, cli *client.Client, pid int) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter))})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	prefix := fmt.Sprintf("%s:%d:", host, pid)
	var ids []string
	for _, c := range list {
		if strings.HasPrefix(c.Labels[label.Owner], prefix) {
			ids = append(ids, c.ID[:12]+" "+c.State)
		}
	}
	return ids
}

// TestRunRealServer: a Go SDK client uses server-everything (npm) through
// `mcpsandbox run`: it lists the tools, calls one, and answers the
// server's sampling request made during a call; each call is logged with
// its effects, and nothing but MCP reaches the client.
func TestRunRealServer(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	npm := sandboxtest.NPM(t)
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	sampled := make(chan string, 1)
	cs, cmd, stderr := runProxy(t, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
				sampled <- tc.Text
			}
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled answer"}}, nil
		}},
		"--log", logPath, "--mount", npm.Source+":"+npm.Target, "--",
		"node", sandboxtest.NPMMount+"/@modelcontextprotocol/server-everything/dist/index.js", "stdio")
	ctx := context.Background()
	var names []string
	// The sampling tool is registered once the server has seen the
	// client's capabilities: the list is read until it is there.
	for try := 0; try < 50; try++ {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v\n%s", err, stderr)
		}
		names = names[:0]
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if strings.Contains(strings.Join(names, " "), "trigger-sampling-request") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(strings.Join(names, " "), "echo") {
		t.Fatalf("tools: %v", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through the sandbox"}})
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "through the sandbox") {
		t.Fatalf("echo: %v %+v\n%s", err, res, stderr)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "trigger-sampling-request", Arguments: map[string]any{"prompt": "hello", "maxTokens": 5}})
	if err != nil {
		t.Fatalf("trigger-sampling-request: %v\n%s", err, stderr)
	}
	if got, _ := json.Marshal(res.Content); !strings.Contains(string(got), "sampled answer") {
		t.Errorf("the sampling answer did not reach the tool: %s", got)
	}
	select {
	case p := <-sampled:
		if !strings.Contains(p, "hello") {
			t.Errorf("sampling prompt %q", p)
		}
	default:
		t.Error("the client was never asked to sample")
	}
	pid := cmd.Process.Pid
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if ids := ownedBy(t, cli, pid); len(ids) > 0 {
		t.Errorf("containers left after the client closed: %v", ids)
	}
	calls := map[string]bool{}
	var end bool
	for _, r := range readLog(t, logPath) {
		switch r.Type {
		case "call":
			calls[r.Tool] = r.Effects != nil
		case "end":
			end = true
		case "finding":
			// An honest server, every stretch judged (its startup, the
			// phases between calls, its teardown): nothing to say above a
			// note (the runtime's own files), and no hint touched.
			if r.Severity != "note" {
				t.Errorf("a finding on an honest real server: %+v", r)
			}
		case "hint":
			if r.To != nil {
				t.Errorf("a hint corrected on an honest real server: %+v", r)
			}
		}
	}
	if !calls["echo"] || !calls["trigger-sampling-request"] || !end {
		t.Errorf("log: calls %v, end %v\nstderr:\n%s", calls, end, stderr)
	}
	if !strings.Contains(stderr.String(), `call 1 "echo"`) {
		t.Errorf("no human line for the call on stderr:\n%s", stderr)
	}
}

// TestRunCorrectsALyingFixture: the fixture's lying_read says
// readOnlyHint: true and writes; after its first call the client is sent
// tools/list_changed and lists it as readOnlyHint: false.
func TestRunCorrectsALyingFixture(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fixture := sandboxtest.Fixture(t)
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	changed := make(chan struct{}, 4)
	cs, _, stderr := runProxy(t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }},
		"--log", logPath, "--image", sandboxtest.NodeImage(t, cli), "--mount", fixture.Source+":"+fixture.Target, "--", sandboxtest.FixtureMount, "liar")
	ctx := context.Background()
	readOnly := func() bool {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if tl.Name == "lying_read" {
				return tl.Annotations.ReadOnlyHint
			}
		}
		t.Fatal("lying_read not listed")
		return false
	}
	if !readOnly() {
		t.Fatal("before its first call lying_read is not readOnlyHint: true as sent")
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lying_read", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("lying_read: %v\n%s", err, stderr)
	}
	select {
	case <-changed:
	case <-time.After(time.Minute):
		t.Fatalf("no tools/list_changed\nstderr:\n%s", stderr)
	}
	if readOnly() {
		t.Error("after its first write lying_read is still readOnlyHint: true")
	}
	cs.Close()
	var hint bool
	for _, r := range readLog(t, logPath) {
		if r.Type == "hint" && r.Tool == "lying_read" && r.Hint == "readOnlyHint" && r.To != nil && !*r.To && r.Rule == "readonly-writes" {
			hint = true
		}
	}
	if !hint {
		t.Errorf("no hint record in the log\nstderr:\n%s", stderr)
	}
}

// TestRunEndsCleanly: the client gone mid-call (its end of the pipes
// closed, as when it is killed), or the proxy signalled, leaves no
// container of the proxy's.
func TestRunEndsCleanly(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fixture := sandboxtest.Fixture(t)
	for _, how := range []string{"client killed", "SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(sandboxtest.Runner(t), "run", "--rm", "--image", sandboxtest.NodeImage(t, cli),
				"--mount", fixture.Source+":"+fixture.Target, "--", sandboxtest.FixtureMount, "hang")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			outPipe, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			out := bufio.NewReader(outPipe)
			send := func(s string) {
				if _, err := io.WriteString(in, s+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			recv := func(id string) {
				for {
					line, err := out.ReadString('\n')
					if err != nil {
						t.Fatalf("waiting for id %s: %v\nstderr:\n%s", id, err, stderr.String())
					}
					if strings.Contains(line, `"id":`+id+`,`) {
						return
					}
				}
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			recv("1")
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang","arguments":{}}}`)
			// The server reads its stdin in order: once the ping after the
			// call is answered, the call is running.
			send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
			recv("3")
			if ids := ownedBy(t, cli, cmd.Process.Pid); len(ids) != 1 {
				t.Fatalf("containers of the proxy mid-call: %v", ids)
			}
			switch how {
			case "client killed":
				in.Close()
				outPipe.Close()
			case "SIGTERM":
				cmd.Process.Signal(syscall.SIGTERM)
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit: %v\nstderr:\n%s", err, stderr.String())
			}
			if ids := ownedBy(t, cli, cmd.Process.Pid); len(ids) > 0 {
				t.Errorf("containers left: %v\nstderr:\n%s", ids, stderr.String())
			}
			if !strings.Contains(stderr.String(), "call 1 \"hang\": no answer") {
				t.Errorf("the unanswered call is not logged:\n%s", stderr.String())
			}
		})
	}
}

// TestRunSamePath: with --same-path the server finds the workspace's
// files at the host paths the client sends.
func TestRunSamePath(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fixture := sandboxtest.Fixture(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Registered first: a run that fails to connect still kept its
	// container.
	t.Cleanup(func() { cliIn(t, "clean", "same") })
	cs, _, stderr := runProxy(t, nil, "--name", "same", "--workspace", ws, "--same-path", "--image", sandboxtest.NodeImage(t, cli),
		"--mount", fixture.Source+":"+fixture.Target, "--", sandboxtest.FixtureMount, "ws")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_any", Arguments: map[string]any{"path": filepath.Join(ws, "hello.txt")}})
	if err != nil || res.IsError {
		t.Fatalf("read_any: %v %+v\n%s", err, res, stderr)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "hello from the host" {
		t.Errorf("read %q", got)
	}
	// A write at the host path the client sent: kept in the named run,
	// listed by changes and written by apply.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": filepath.Join(ws, "out.txt"), "text": "from the run\n"}})
	if err != nil || res.IsError {
		t.Fatalf("write_file: %v %+v\n%s", err, res, stderr)
	}
	cs.Close()
	if strings.Contains(stderr.String(), "cannot be applied") {
		t.Errorf("a same-path run said its changes cannot be applied:\n%s", stderr)
	}
	out, errs, code := cliIn(t, "changes", "same")
	if code != 0 || !strings.Contains(out, "created  out.txt") {
		t.Fatalf("changes: exit %d\n%s%s\nrun's stderr:\n%s", code, out, errs, stderr)
	}
	if out, errs, code = cliIn(t, "apply", "same"); code != 0 {
		t.Fatalf("apply: exit %d %s %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "from the run\n" {
		t.Errorf("applied file: %q %v", b, err)
	}
}

// TestRunHostileServer: an answer over the message bound reaches the
// client as an error in its place (not a hang), the session goes on, and
// nothing but JSON-RPC reaches the client's stdout (see
// TestRunStdoutIsMCPOnly).
func TestRunHostileServer(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fixture := sandboxtest.Fixture(t)
	cs, _, stderr := runProxy(t, nil, "--max-message", "1", "--image", sandboxtest.NodeImage(t, cli),
		"--mount", fixture.Source+":"+fixture.Target, "--", sandboxtest.FixtureMount, "flood", fmt.Sprintf("result-bytes=%d", 2<<20))
	defer cs.Close()
	ctx := context.Background()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, stderr)
	}
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "big", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "message size") {
		t.Errorf("big: %v, want the refusal in its place", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Errorf("echo after the refusal: %v %+v\n%s", err, res, stderr)
	}
}

// TestRunStdoutIsMCPOnly: a server that prints garbage to stdout (not
// JSON, binary, a half message) gets none of it to the client: every line
// the client reads is a JSON-RPC message.
func TestRunStdoutIsMCPOnly(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fixture := sandboxtest.Fixture(t)
	cmd := exec.Command(sandboxtest.Runner(t), "run", "--rm", "--image", sandboxtest.NodeImage(t, cli),
		"--mount", fixture.Source+":"+fixture.Target, "--", sandboxtest.FixtureMount, "garbage", "--banner")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"garbage","arguments":{}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"garbage","arguments":{}}}
`)
	sc := bufio.NewScanner(outPipe)
	sc.Buffer(nil, 1<<20)
	answered := 0
	for answered < 3 && sc.Scan() {
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.JSONRPC != "2.0" {
			t.Errorf("not JSON-RPC on stdout: %q", sc.Text())
			continue
		}
		if len(m.ID) > 0 {
			answered++
		}
	}
	in.Close()
	for sc.Scan() {
		t.Errorf("after the answers: %q", sc.Text())
	}
	if err := cmd.Wait(); err != nil || answered != 3 {
		t.Errorf("%d answers, exit %v\n%s", answered, err, stderr.String())
	}
}
