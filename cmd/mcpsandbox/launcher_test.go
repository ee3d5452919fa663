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

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// launcherPackage is the real server the launcher tests fetch, pinned.
const launcherPackage = "@modelcontextprotocol/server-filesystem@2026.8.31"

// sharedLaunchCache is an XDG_CACHE_HOME kept between test runs, for the
// tests that fetch a launcher line's package but do not test the first
// fetch (TestLauncherLine does, in a cache of its own).
func sharedLaunchCache(t *testing.T) string {
	t.Helper()
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "mcpsandbox-test", "launch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLauncherLine: the line an MCP client's configuration has, npx -y
// PKG ARG, is scanned as given: the package fetched on the host with
// scripts off (said on stderr), pinned in the report with its
// integrity, served from the installed tree; the second scan comes from
// the cache; run takes the same line, driven by a client.
func TestLauncherLine(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	cmd := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
		return stdout.String(), stderr.String(), code
	}
	line := []string{"npx", "-y", launcherPackage, "/workspace"}
	for i, want := range []string{"fetched with scripts off into", "from the cache"} {
		out := filepath.Join(dir, "r.json")
		_, stderr, code := cmd(append([]string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t),
			"--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary", "--"}, line...)...)
		if code == 2 || !strings.Contains(stderr, want) {
			t.Fatalf("scan %d: exit %d, want %q in:\n%s", i+1, code, want, stderr)
		}
		var r report.Report
		b, err := os.ReadFile(out)
		if err != nil || json.Unmarshal(b, &r) != nil {
			t.Fatalf("report: %v", err)
		}
		p := r.Server.Package
		if p == nil || p.Name != "@modelcontextprotocol/server-filesystem" || p.Version != "2026.8.31" || !strings.HasPrefix(p.Integrity, "sha512-") ||
			strings.Join(p.Line, " ") != strings.Join(line, " ") || len(r.Tools) < 5 {
			t.Fatalf("scan %d: server.package %+v, %d tools; command %q", i+1, p, len(r.Tools), r.Server.Command)
		}
	}
	cs, _, stderr := runProxy(t, nil, append([]string{"--"}, line...)...)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_allowed_directories", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("run: list_allowed_directories: %v %+v\n%s", err, res, stderr)
	}
	if err := cs.Close(); err != nil {
		t.Log(err)
	}
	if !strings.Contains(stderr.String(), "from the cache") {
		t.Errorf("run did not take the package from the cache:\n%s", stderr)
	}
	// A launcher line no fetch can take is refused at once, with the hint.
	if _, stderr, code := cmd("scan", "--", "npx", "-c", "node x.js"); code != 2 || !strings.Contains(stderr, "a shell command") || !strings.Contains(stderr, "--package") {
		t.Errorf("npx -c: exit %d %s", code, stderr)
	}
}

// TestHostScriptScan: `scan -- node HOST/PATH/index.js` runs a server
// whose code is on the host: its project (the npm prefix above
// node_modules) is mounted at /project as --package mounts, and said.
func TestHostScriptScan(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	npm := sandboxtest.NPM(t)
	script := filepath.Join(npm.Source, "@modelcontextprotocol/server-filesystem/dist/index.js")
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "r.json")
	code := exitCode(run(context.Background(), []string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t),
		"--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary", "--", "node", script, "/workspace"}, &stdout, &stderr), &stderr)
	root := filepath.Dir(npm.Source)
	if code == 2 || !strings.Contains(stderr.String(), "its project "+root+" is mounted at /project") {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	var r report.Report
	if b, err := os.ReadFile(out); err != nil || json.Unmarshal(b, &r) != nil || len(r.Tools) < 5 {
		t.Fatalf("report: %v, %d tools", err, len(r.Tools))
	}
}

// TestLauncherLineSamePath: run --same-path (the package slot is the
// workspace's) binds the fetched tree read-only, and the sandbox's user
// reads it.
func TestLauncherLineSamePath(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	t.Setenv("XDG_CACHE_HOME", sharedLaunchCache(t))
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ws := t.TempDir()
	cs, _, stderr := runProxy(t, nil, "--workspace", ws, "--same-path", "--", "npx", "-y", launcherPackage, ws)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_allowed_directories", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_allowed_directories: %v %+v\n%s", err, res, stderr)
	}
	cs.Close()
}
