package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

func writeConfig(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFromConfig: a server entry of Claude Desktop's or VS Code's
// configuration is its command line; a scan gives a variable named as a
// secret the bait's honeytoken, run keeps it as written; a value the
// client fills in, several servers unnamed, a remote entry, comments: one
// line each, refused.
func TestFromConfig(t *testing.T) {
	claude := writeConfig(t, "claude_desktop_config.json", `{"mcpServers":{
		"fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","/workspace"],"env":{"GITHUB_TOKEN":"ghp_real","MODE":"ro"}},
		"remote":{"url":"https://example.com/mcp"},
		"asks":{"command":"node","args":["${workspaceFolder}/x.js"]}}}`)
	vscode := writeConfig(t, "mcp.json", `{"servers":{"only":{"type":"stdio","command":"npx","args":["-y","pkg"],"env":{"API_KEY":"${input:key}"}}},"inputs":[]}`)
	seed := uint64(42)
	sp := &seed
	argv, env, err := fromConfig(claude+"#fs", nil, true, &sp)
	tok := bulk.Honeytoken("GITHUB_TOKEN", probes.NewBait(42).Tokens)
	if err != nil || strings.Join(argv, " ") != "npx -y @modelcontextprotocol/server-filesystem /workspace" ||
		strings.Join(env, " ") != "GITHUB_TOKEN="+tok+" MODE=ro" || tok == "ghp_real" {
		t.Errorf("scan: %q %q %v", argv, env, err)
	}
	if _, env, err := fromConfig(claude+"#fs", nil, false, nil); err != nil || strings.Join(env, " ") != "GITHUB_TOKEN=ghp_real MODE=ro" {
		t.Errorf("run: %q %v", env, err)
	}
	// VS Code's one server, its secret a client input: a honeytoken for
	// a scan, refused for run (no value here).
	if argv, env, err := fromConfig(vscode, nil, true, &sp); err != nil || argv[0] != "npx" || !strings.HasPrefix(env[0], "API_KEY=") || strings.Contains(env[0], "${") {
		t.Errorf("vscode scan: %q %q %v", argv, env, err)
	}
	for _, c := range []struct {
		spec, says string
		scan       bool
	}{
		{vscode, "filled in by the client", false},
		{claude, "it has 3 (asks, fs, remote): name one", true},
		{claude + "#nope", "no such server", true},
		{claude + "#remote", "is remote", true},
		{claude + "#asks", "argument ${workspaceFolder}/x.js", true},
		{writeConfig(t, "c.json", "{\n// a comment\n\"servers\":{}}"), "comments are not read", true},
	} {
		var seed *uint64
		_, _, err := fromConfig(c.spec, nil, c.scan, &seed)
		if err == nil || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line saying %q", c.spec, err, c.says)
		}
	}
	if _, _, err := fromConfig(claude+"#fs", []string{"node", "x"}, true, &sp); err == nil {
		t.Error("--from-config with a command after --: taken")
	}
}

// TestFromConfigScan: scan --from-config runs the entry's npx line.
func TestFromConfigScan(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	t.Setenv("XDG_CACHE_HOME", sharedLaunchCache(t))
	cfg := writeConfig(t, "claude_desktop_config.json", `{"mcpServers":{"fs":{"command":"npx","args":["-y","`+launcherPackage+`","/workspace"],"env":{"GITHUB_TOKEN":"ghp_real"}}}}`)
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "r.json")
	code := exitCode(run(context.Background(), []string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t),
		"--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary", "--from-config", cfg + "#fs"}, &stdout, &stderr), &stderr)
	var r report.Report
	if b, err := os.ReadFile(out); code == 2 || err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("exit %d %v:\n%s", code, err, stderr.String())
	}
	if r.Server.Package == nil || len(r.Tools) < 5 || bytes.Contains([]byte(stderr.String()), []byte("ghp_real")) {
		t.Errorf("package %+v, %d tools", r.Server.Package, len(r.Tools))
	}
}
