package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrapCodex: `wrap codex` rewrites ~/.codex/config.toml (under a
// temporary HOME) with its comments kept, --dry-run first writing
// nothing; `unwrap codex` puts it back byte for byte.
func TestWrapCodex(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	path := filepath.Join(home, ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "# mine\n[mcp_servers.fetch]\ncommand = \"uvx\"  # Python\nargs = [\"mcp-server-fetch\"]\n\n[mcp_servers.docs]\nurl = \"https://example.com/mcp\"\n"
	if err := os.WriteFile(path, []byte(doc), 0o640); err != nil {
		t.Fatal(err)
	}
	cmd := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
		return stdout.String(), stderr.String(), code
	}
	out, _, code := cmd("wrap", "--dry-run", "--bin", "/opt/mcpsandbox", "codex")
	if code != 0 || !strings.Contains(out, `+command = "/opt/mcpsandbox"  # Python`) || !strings.Contains(out, `+args = ["run", "--", "uvx", "mcp-server-fetch"]`) {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	if b, _ := os.ReadFile(path); string(b) != doc {
		t.Fatal("--dry-run wrote the file")
	}
	_, stderr, code := cmd("wrap", "--bin", "/opt/mcpsandbox", "--run-flags", "--network none", "codex")
	if code != 0 || !strings.Contains(stderr, "docs: left: a remote server") {
		t.Fatalf("wrap: exit %d\n%s", code, stderr)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "# mine\n") || !strings.Contains(string(b), `args = ["run", "--network", "none", "--", "uvx", "mcp-server-fetch"]`) {
		t.Errorf("wrapped:\n%s", b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode: %v %v", fi.Mode(), err)
	}
	if _, _, code := cmd("unwrap", "codex"); code != 0 {
		t.Fatalf("unwrap: exit %d", code)
	}
	if b, _ := os.ReadFile(path); string(b) != doc {
		t.Errorf("unwrap did not restore it:\n%s", b)
	}
}
