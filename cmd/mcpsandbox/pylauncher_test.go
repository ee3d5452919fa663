package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/bulk/pyindextest"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestPythonLauncherLine: a uvx line is scanned as given, its package
// and dependency fetched as wheels from an index on the loopback (the
// fixture, built by Debian's python3-build, standard library only), run
// in the python image; the lie of its save_note tool is caught; run
// serves the same line to a client, from the cache. Lines the fetch
// cannot take are refused at once.
func TestPythonLauncherLine(t *testing.T) {
	sandboxtest.Docker(t)
	ix := &pyindextest.Index{}
	for name, b := range pyindextest.BuildFixture(t) {
		ix.Files = append(ix.Files, pyindextest.File{Name: name, Data: b})
	}
	index := ix.Serve(t)
	agent := sandboxtest.Agent(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cmd := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
		return stdout.String(), stderr.String(), code
	}
	line := []string{"uvx", "mcp-fixture-py@0.3.1"}
	out := filepath.Join(t.TempDir(), "r.json")
	_, stderr, code := cmd(append([]string{"scan", "--format", "json", "--out", out, "--index-url", index, "--agent", agent,
		"--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary", "--"}, line...)...)
	if code != 1 {
		t.Fatalf("scan: exit %d, want 1 (a finding):\n%s", code, stderr)
	}
	var r report.Report
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("report: %v", err)
	}
	p := r.Server.Package
	if p == nil || p.Registry != "pypi" || p.Name != "mcp-fixture-py" || p.Version != "0.3.1" || !strings.HasPrefix(p.Integrity, "sha256-") ||
		strings.Join(p.Line, " ") != strings.Join(line, " ") || !strings.HasPrefix(r.Server.Image, "mcpsandbox/python:") {
		t.Fatalf("server %+v, package %+v", r.Server, p)
	}
	var lies []string
	for _, f := range r.Findings {
		lies = append(lies, f.Rule+" "+f.Tool)
	}
	if !strings.Contains(strings.Join(lies, "\n"), "readonly-writes save_note") || len(r.Tools) != 3 {
		t.Errorf("findings %q, %d tools", lies, len(r.Tools))
	}
	for _, f := range r.Findings {
		if f.Tool == "echo" || f.Tool == "list_notes" {
			t.Errorf("a finding on an honest tool: %+v", f)
		}
	}

	cs, _, runErr := runProxy(t, nil, "--index-url", index, "--", "uvx", "mcp-fixture-py")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*mcp.TextContent).Text != "hello" {
		t.Fatalf("run: echo: %v %+v\n%s", err, res, runErr)
	}
	if err := cs.Close(); err != nil {
		t.Log(err)
	}
	if !strings.Contains(runErr.String(), "from the cache") {
		t.Errorf("run did not take the package from the cache:\n%s", runErr)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--index-url", index, "--", "uvx", "not-on-the-index"}, "is not on the index"},
		{[]string{"--", "uvx", "--index-url", index, "mcp-fixture-py"}, "give the index to mcpsandbox as --index-url"},
		{[]string{"--index-url", "file:///etc/", "--", "uvx", "mcp-fixture-py"}, "not an http(s) URL"},
		{[]string{"--index-url", index, "--", "uvx", "--from", "mcp-fixture-py", "no-such-command"}, "no console script named no-such-command"},
	} {
		if _, stderr, code := cmd(append([]string{"scan", "--agent", agent}, c.args...)...); code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("scan %q: exit %d, want 2 and %q:\n%s", c.args, code, c.want, stderr)
		}
	}
}

// TestBulkPython: bulk takes Python packages from a list and from a
// client's configuration (a uvx line), fetched from --index-url as scan
// fetches them: the fixture's lie is a finding, a project the index
// lacks a failed fetch.
func TestBulkPython(t *testing.T) {
	sandboxtest.Docker(t)
	ix := &pyindextest.Index{}
	for name, b := range pyindextest.BuildFixture(t) {
		ix.Files = append(ix.Files, pyindextest.File{Name: name, Data: b})
	}
	index := ix.Serve(t)
	dir := t.TempDir()
	list := writeFile(t, dir, "list.txt", "pypi:mcp-fixture-py@0.3.1\npypi:not-on-the-index\n")
	cfg := writeFile(t, dir, "mcp.json", `{"mcpServers": {"py": {"command": "uvx", "args": ["--from", "mcp-fixture-py", "mcp-fixture-py-other"]}}}`)
	results := filepath.Join(dir, "results")
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"bulk", "--agent", sandboxtest.Agent(t), "--results", results, "--cache", filepath.Join(dir, "cache"),
		"--index-url", index, "--no-replay", "--linger", sandboxtest.Linger.String(), list, cfg}, &out, &errb)
	if code := exitCode(err, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(filepath.Join(results, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s bulk.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Totals.Packages != 3 || s.Totals.ByStatus["findings"] != 2 || s.Totals.ByStatus["failed-fetch"] != 1 {
		t.Errorf("summary totals %+v\n%s", s.Totals, errb.String())
	}
}
