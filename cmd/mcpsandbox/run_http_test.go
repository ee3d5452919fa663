package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestRunOverHTTP: a Go SDK client on run's stdio uses the fixture server
// over streamable HTTP and over HTTP+SSE: it lists the tools, calls one,
// and a lying tool's readOnlyHint is corrected after its first write,
// with tools/list_changed received, as over stdio
// (TestRunCorrectsALyingFixture).
func TestRunOverHTTP(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fixture := sandboxtest.Fixture(t)
	for _, tc := range []struct {
		name  string
		args  []string
		serve string
	}{
		{"http", []string{"--transport", "http", "--port", "3000"}, "--http=127.0.0.1:3000"},
		{"sse auto", []string{"--transport", "sse", "--port", "auto"}, "--sse=:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "run.jsonl")
			changed := make(chan struct{}, 4)
			args := append([]string{"--log", logPath, "--image", sandboxtest.NodeImage(t, cli), "--mount", fixture.Source + ":" + fixture.Target}, tc.args...)
			args = append(args, "--", sandboxtest.FixtureMount, "honest", "liar", tc.serve)
			cs, cmd, stderr := runProxy(t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}, args...)
			ctx := context.Background()
			readOnly := func() bool {
				t.Helper()
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatalf("tools/list: %v\nstderr:\n%s", err, stderr)
				}
				for _, tl := range res.Tools {
					if tl.Name == "lying_read" {
						return tl.Annotations.ReadOnlyHint
					}
				}
				t.Fatalf("lying_read not listed\nstderr:\n%s", stderr)
				return false
			}
			if !readOnly() {
				t.Fatal("before its first call lying_read is not readOnlyHint: true as sent")
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || len(res.Content) != 1 {
				t.Fatalf("echo: %+v, %v\nstderr:\n%s", res, err, stderr)
			}
			if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "echo: hi" {
				t.Errorf("echo answered %+v, want echo: hi", res.Content[0])
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "lying_read", Arguments: map[string]any{}}); err != nil {
				t.Fatalf("lying_read: %v\nstderr:\n%s", err, stderr)
			}
			select {
			case <-changed:
			case <-time.After(time.Minute):
				t.Fatalf("no tools/list_changed\nstderr:\n%s", stderr)
			}
			if readOnly() {
				t.Error("after its first write lying_read is still readOnlyHint: true")
			}
			// Close waits for run to exit.
			if err := cs.Close(); err != nil {
				t.Errorf("run: %v\nstderr:\n%s", err, stderr)
			}
			var hint, ended bool
			calls := map[string]int{}
			for _, r := range readLog(t, logPath) {
				switch r.Type {
				case "hint":
					hint = hint || (r.Tool == "lying_read" && r.Hint == "readOnlyHint" && r.To != nil && !*r.To && r.Rule == "readonly-writes")
				case "call":
					calls[r.Tool]++
				case "end":
					ended = r.Reason == "the client closed its stdin"
					if len(r.Problems) != 0 {
						t.Errorf("problems: %+v", r.Problems)
					}
				}
			}
			if !hint || calls["echo"] != 1 || calls["lying_read"] != 1 || !ended {
				t.Errorf("log: hint %v, calls %v, ended by the client %v\nstderr:\n%s", hint, calls, ended, stderr)
			}
			if ids := ownedBy(t, cli, cmd.Process.Pid); len(ids) != 0 {
				t.Errorf("containers left: %v", ids)
			}
		})
	}
}

// TestRunTransportUsage: run's --transport, --port and --header are read
// as scan's are.
func TestRunTransportUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--transport", "http", "--", "srv"}, "--transport http needs --port PORT or --port auto"},
		{[]string{"run", "--transport", "sse", "--port", "70000", "--", "srv"}, `--port "70000"`},
		{[]string{"run", "--port", "3000", "--", "srv"}, "--port is for --transport http or sse"},
		{[]string{"run", "--transport", "carrier-pigeon", "--", "srv"}, "transport"},
		{[]string{"run", "--transport", "http", "--port", "3000", "--header", "no colon", "--", "srv"}, "header"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errb)
		if code := exitCode(err, &errb); code != 2 || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("mcpsandbox %q: exit %d (want 2), output %q lacks %q", tc.args, code, out.String()+errb.String(), tc.want)
		}
	}
}

// TestRunOverHTTPServerExits: a server over HTTP that exits mid-call ends
// run on its own, as over stdio: the call is answered with an error (or
// the session ends), the log says the server exited, and no container is
// left.
func TestRunOverHTTPServerExits(t *testing.T) {
	cli := sandboxtest.Docker(t)
	fixture := sandboxtest.Fixture(t)
	logPath := filepath.Join(t.TempDir(), "run.jsonl")
	cs, cmd, stderr := runProxy(t, nil, "--log", logPath, "--image", sandboxtest.NodeImage(t, cli), "--mount", fixture.Source+":"+fixture.Target,
		"--transport", "http", "--port", "3000", "--", sandboxtest.FixtureMount, "crash", "--http=127.0.0.1:3000")
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("crash answered %+v, want an error", res)
	}
	// run ends its stdout once the server is gone, without the client's
	// EOF.
	cs.Wait()
	var why string
	for _, r := range readLog(t, logPath) {
		if r.Type == "end" {
			why = r.Reason
		}
	}
	if !strings.Contains(why, "the server exited") {
		t.Errorf("run ended with %q, want the server's exit\nstderr:\n%s", why, stderr)
	}
	if ids := ownedBy(t, cli, cmd.Process.Pid); len(ids) != 0 {
		t.Errorf("containers left: %v", ids)
	}
}
