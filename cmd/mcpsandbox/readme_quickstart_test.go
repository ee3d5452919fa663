package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// readmeQuickStart is the README's Quick start block, a command a line
// (comments dropped).
func readmeQuickStart(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "## Quick start")
	if !ok {
		t.Fatal("README.md has no Quick start")
	}
	_, block, ok := strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatal("the Quick start has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var lines [][]string
	for _, l := range strings.Split(block, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if f := strings.Fields(l); len(f) > 0 {
			lines = append(lines, f)
		}
	}
	return lines
}

// TestReadmeQuickStart runs the README's Quick start as written, from
// this clone: the install, the image build, and a scan of a real npm
// server by its npx -y line; the scan must run (exit 0 or 1, a report
// of its tools), so that the Quick start cannot rot again.
func TestReadmeQuickStart(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	bin := t.TempDir()
	t.Setenv("GOBIN", bin)
	t.Setenv("XDG_CACHE_HOME", sharedLaunchCache(t))
	lines := readmeQuickStart(t)
	if len(lines) < 3 || lines[0][0] != "go" || lines[len(lines)-1][1] != "scan" {
		t.Fatalf("the Quick start is not install, build, scan: %q", lines)
	}
	for _, l := range lines {
		name := l[0]
		if name == "mcpsandbox" {
			name = filepath.Join(bin, "mcpsandbox")
			if l[1] == "scan" {
				l = append(l[:2:2], append([]string{"--format", "json", "--linger", sandboxtest.Linger.String(), "--no-replay"}, l[2:]...)...)
			}
		}
		cmd := exec.CommandContext(context.Background(), name, l[1:]...)
		cmd.Dir = docRoot(t) // the clone's root
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if err != nil && !(l[1] == "scan" && code == 1) {
			t.Fatalf("%q: %v\n%s%s", l, err, out.String(), errb.String())
		}
		if l[1] == "scan" && !strings.Contains(out.String(), `"tools"`) {
			t.Errorf("%q: no report:\n%s", l, errb.String())
		}
	}
}
