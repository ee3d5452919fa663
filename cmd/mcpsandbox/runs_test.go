package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestNamedRunCLI: scan --name keeps the run; runs lists it stopped;
// changes shows the workspace edit with its diff; apply writes it to the
// host and refuses a path that leaves the directory; clean NAME removes
// the run and its container.
func TestNamedRunCLI(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ws := t.TempDir()
	dir := t.TempDir()
	cmd := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
		return stdout.String(), stderr.String(), code
	}
	_, stderr, code := cmd("scan", "--name", "edit", "--workspace", ws, "--format", "json", "--out", filepath.Join(dir, "r.json"),
		"--agent", sandboxtest.Agent(t), "--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary",
		"--probes", writeFile(t, dir, "p.json", `{"add_note":{"text":"from the run"}}`),
		"--mount", fx.Source+":"+fx.Target, "--", fx.Target, "honest")
	if code == 2 || !strings.Contains(stderr, "kept run edit") {
		t.Fatalf("scan --name: exit %d: %s", code, stderr)
	}
	t.Cleanup(func() { cmd("clean", "edit") })
	out, stderr, code := cmd("runs", "--json")
	var listed struct{ Runs []runs.Meta }
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Runs) != 1 || listed.Runs[0].State != runs.Stopped {
		t.Fatalf("runs: exit %d %s %s", code, out, stderr)
	}
	out, stderr, code = cmd("changes", "edit")
	if code != 0 || !strings.Contains(out, "created  notes/note-1.txt") || !strings.Contains(out, "+from the run") {
		t.Fatalf("changes: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code = cmd("apply", "edit", "../outside"); code != 2 || !strings.Contains(stderr, "escapes") {
		t.Errorf("apply ../outside: exit %d %s", code, stderr)
	}
	if out, stderr, code = cmd("apply", "edit", "notes"); code != 0 {
		t.Fatalf("apply: exit %d %s %s", code, out, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "notes", "note-1.txt")); err != nil || string(b) != "from the run\n" {
		t.Errorf("applied file: %q %v", b, err)
	}
	if out, _, _ = cmd("changes", "edit"); strings.TrimSpace(out) != "no changes" {
		t.Errorf("changes after apply: %q", out)
	}
	if out, stderr, code = cmd("clean", "edit"); code != 0 {
		t.Fatalf("clean edit: exit %d %s %s", code, out, stderr)
	}
	if _, err := cli.ContainerInspect(context.Background(), listed.Runs[0].Container); err == nil {
		t.Error("the run's container is still there")
	}
	if _, stderr, code = cmd("changes", "edit"); code != 2 || !strings.Contains(stderr, "no such run") {
		t.Errorf("changes of a cleaned run: exit %d %s", code, stderr)
	}
}
