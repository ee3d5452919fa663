package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestWrapThenClient: wrap rewrites a Claude Desktop and a VS Code
// configuration (under a temporary HOME, never the real one); the
// official TypeScript SDK client, started as that client starts the
// wrapped entry, reaches the sandboxed server through mcpsandbox run;
// unwrap puts each file back byte for byte.
func TestWrapThenClient(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	sdk := sandboxtest.TSSDK(t)
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true and no node on the host (ci/host-deps.sh installs it)")
		}
		t.Skip("no node on the host")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	// The client script beside the SDK, as a project has it.
	scripts := t.TempDir()
	if err := os.Symlink(sdk.Source, filepath.Join(scripts, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/tsclient/spawn.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scripts, "spawn.mjs"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	runFlags := "--rm --agent " + sandboxtest.Agent(t) + " --mount " + fx.Source + ":" + fx.Target
	for _, c := range []struct {
		client, path, doc, key string
	}{
		{"claude-desktop", ".config/Claude/claude_desktop_config.json", `{
  "mcpServers": {
    "fixture": {"command": "` + fx.Target + `", "args": ["honest"]},
    "remote": {"url": "https://example.com/mcp"}
  }
}
`, "mcpServers"},
		{"vscode", ".config/Code/User/mcp.json", `{
	"servers": {
		"fixture": {"type": "stdio", "command": "` + fx.Target + `", "args": ["honest"], "env": {"MODE": "x"}}
	},
	"inputs": []
}
`, "servers"},
	} {
		t.Run(c.client, func(t *testing.T) {
			p := filepath.Join(home, c.path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(c.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if code := exitCode(run(context.Background(), []string{"wrap", "--bin", sandboxtest.Runner(t), "--run-flags", runFlags, c.client}, &stdout, &stderr), &stderr); code != 0 {
				t.Fatalf("wrap: exit %d %s%s", code, stdout.String(), stderr.String())
			}
			if c.client == "claude-desktop" && !strings.Contains(stderr.String(), "remote: left: a remote server") {
				t.Errorf("the remote entry is not said: %s", stderr.String())
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var cfg map[string]json.RawMessage
			var servers map[string]json.RawMessage
			if err := json.Unmarshal(b, &cfg); err != nil || json.Unmarshal(cfg[c.key], &servers) != nil {
				t.Fatalf("the wrapped file: %v\n%s", err, b)
			}
			entry := servers["fixture"]
			out, err := exec.Command("node", filepath.Join(scripts, "spawn.mjs"), string(entry)).Output()
			if err != nil {
				t.Fatalf("the client: %v\n%s", err, out)
			}
			var seen struct {
				Tools  []string
				Call   *string
				Errors []string
			}
			_, line, _ := strings.Cut(string(out), "TSCLIENT ")
			if json.Unmarshal([]byte(line), &seen) != nil || seen.Call == nil || len(seen.Errors) > 0 || !strings.Contains(strings.Join(seen.Tools, " "), "echo") {
				t.Fatalf("the client through the wrapped entry saw %s\nentry %s", out, entry)
			}
			stdout.Reset()
			if code := exitCode(run(context.Background(), []string{"unwrap", c.client}, &stdout, &stderr), &stderr); code != 0 {
				t.Fatalf("unwrap: exit %d %s", code, stderr.String())
			}
			if back, _ := os.ReadFile(p); string(back) != c.doc {
				t.Errorf("unwrap did not restore the file:\n%s", back)
			}
			if _, err := os.Stat(p + backupSuffix); !os.IsNotExist(err) {
				t.Errorf("the backup is left: %v", err)
			}
		})
	}
}
