package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestApplyHoldsBackWhatRunsCode: a run leaves a git hook made
// executable, a chmod 755 of the README, a 2 GiB sparse file and a
// world-writable directory. changes names each (the mode first, the
// sparse size); apply refuses the lot over its bound, then, with room,
// writes the sparse file sparse and holds back the hook and the chmod,
// refuses the directory, exit 2 with a line each; --allow-exec with the
// hook named writes it executable.
func TestApplyHoldsBackWhatRunsCode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("apply as root, as a CI job would")
	}
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	ws, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# readme\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
		return stdout.String(), stderr.String(), code
	}
	probes := `[{"tool":"plant","arguments":{"path":"/workspace/.git/hooks/pre-commit","text":"#!/bin/sh\necho planted\n","mode":"755"}},
		{"tool":"plant","arguments":{"path":"/workspace/README.md","mode":"755"}},
		{"tool":"plant","arguments":{"path":"/workspace/big.img","text":"x","sparse":2147483648}},
		{"tool":"plant","arguments":{"path":"/workspace/pub","dir":true,"mode":"1777"}}]`
	_, stderr, code := cmd("scan", "--name", "hold", "--workspace", ws, "--format", "json", "--out", filepath.Join(dir, "r.json"),
		"--agent", sandboxtest.Agent(t), "--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary", "--disk", "4GiB",
		"--probes", writeFile(t, dir, "p.json", probes), "--mount", fx.Source+":"+fx.Target, "--", fx.Target, "planter")
	if code == 2 || !strings.Contains(stderr, "kept run hold") {
		t.Fatalf("scan --name: exit %d: %s", code, stderr)
	}
	t.Cleanup(func() { cmd("clean", "hold") })
	out, stderr, code := cmd("changes", "hold")
	for _, want := range []string{
		"created  .git/hooks/pre-commit (mode 0755, executable,",
		"[held back: exec: mode no file -> 0755 makes it executable",
		"modified README.md (mode 0644 -> 0755, executable,",
		"created  big.img (mode 0644, 2GiB, sparse:",
		"created  pub/ (mode 1777)  [refused: mode: mode 1777 makes it world-writable]",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("changes: exit %d, no %q in\n%s%s", code, want, out, stderr)
		}
	}
	before := manifestOf(t, ws)
	if _, stderr, code = cmd("apply", "--max-apply", "1GiB", "hold"); code != 2 || !strings.Contains(stderr, "apply-bound") || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("apply over its bound: exit %d %s", code, stderr)
	}
	if after := manifestOf(t, ws); after != before {
		t.Fatalf("apply over its bound wrote:\n%s\nwas\n%s", after, before)
	}
	_, stderr, code = cmd("apply", "--max-apply", "3GiB", "hold")
	for _, want := range []string{"held back .git/hooks/pre-commit: exec", "held back README.md: exec", "refused pub: mode"} {
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("apply: exit %d, no %q in %s", code, want, stderr)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(ws, "big.img"), &st); err != nil || st.Size != 2<<30 || st.Blocks*512 > 1<<20 {
		t.Errorf("big.img: size %d, %d bytes allocated (%v); want 2 GiB, sparse", st.Size, st.Blocks*512, err)
	}
	for p, mode := range map[string]os.FileMode{"README.md": 0o644} {
		if fi, err := os.Stat(filepath.Join(ws, p)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want %v", p, fi.Mode(), err, mode)
		}
	}
	for _, p := range []string{".git", "pub"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !os.IsNotExist(err) {
			t.Errorf("%s reached the host: %v", p, err)
		}
	}
	if out, stderr, code = cmd("apply", "--allow-exec", "hold", ".git/hooks/pre-commit"); code != 0 {
		t.Fatalf("apply --allow-exec: exit %d %s %s", code, out, stderr)
	}
	if fi, err := os.Stat(filepath.Join(ws, ".git/hooks/pre-commit")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the hook: %v %v, want 0755", fi, err)
	}
}

// manifestOf lists a directory's paths, modes and sizes.
func manifestOf(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			rel, _ := filepath.Rel(dir, p)
			b.WriteString(rel + " " + fi.Mode().String() + " " + fi.ModTime().String() + "\n")
		}
		return nil
	})
	return b.String()
}
