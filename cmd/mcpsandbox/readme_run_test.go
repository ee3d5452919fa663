package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// readmeRunSnippet is the README's `run` command line (less
// --print-config CLIENT), with its ~/proj and /tmp/mcp.
func readmeRunSnippet(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "mcpsandbox run --print-config ")
	if !ok {
		t.Fatal("README.md has no `mcpsandbox run --print-config` line")
	}
	cmd, _, _ := strings.Cut(rest, "\n```")
	cmd = strings.ReplaceAll(cmd, "\\\n", " ")
	fields := strings.Fields(cmd)
	return fields[1:] // the client's name
}

// TestReadmeRunSnippet: the README's `run` line, followed as written (a
// client's session through it, server-filesystem from npm), leaves the
// server's write in a named run that `changes` lists and `apply` writes
// to the host directory, and nothing there before.
func TestReadmeRunSnippet(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	npm := sandboxtest.NPM(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ws := t.TempDir()
	var args []string
	for _, a := range readmeRunSnippet(t) {
		a = strings.ReplaceAll(a, "~/proj", ws)
		// The test's install has its node_modules where the README's
		// has /tmp/mcp/node_modules (its parent is private).
		a = strings.ReplaceAll(a, "/tmp/mcp:/package", npm.Source+":/package/node_modules")
		args = append(args, a)
	}
	// Registered first: a run that fails to connect still kept its
	// container.
	t.Cleanup(func() { cliIn(t, "clean", "readme") })
	args = append([]string{"--name", "readme"}, args...)
	cs, _, stderr := runProxy(t, nil, args...)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": filepath.Join(ws, "out.txt"), "content": "from the run\n"}})
	if err != nil || res.IsError {
		t.Fatalf("write_file: %v %+v\nrun %q\n%s", err, res, args, stderr)
	}
	cs.Close()
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err == nil {
		t.Fatal("the server's write reached the host directory before apply")
	}
	out, errs, code := cliIn(t, "changes", "readme")
	if code != 0 || !strings.Contains(out, "created  out.txt") {
		t.Fatalf("changes: exit %d\n%s%s\nrun's stderr:\n%s", code, out, errs, stderr)
	}
	if out, errs, code = cliIn(t, "apply", "readme"); code != 0 {
		t.Fatalf("apply: exit %d %s %s", code, out, errs)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "from the run\n" {
		t.Errorf("applied file: %q %v", b, err)
	}
}
