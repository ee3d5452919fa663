package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestImagesListShowsTheCache: a workspace layer shows in `images ls`
// with its own size, its last use and whether a container uses it, with
// the cache's total; `images prune` within a bound removes nothing; a
// scan takes --cache-size.
func TestImagesListShowsTheCache(t *testing.T) {
	cli := sandboxtest.Docker(t)
	base := sandboxtest.NodeImage(t, cli)
	ctx := context.Background()
	runID := label.NewRunID()
	t.Cleanup(func() { sandbox.Evict(context.Background(), cli, sandbox.EvictOptions{Run: runID}) })
	dir := t.TempDir()
	writeFile(t, dir, "data.txt", strings.Repeat("cache ", 1000)+runID)
	ref, _, err := sandbox.WorkspaceImage(ctx, cli, base, dir, "/workspace", runID)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := exitCode(run(ctx, []string{"images", "ls"}, &stdout, &stderr), &stderr); code != 0 {
		t.Fatalf("images ls: exit %d: %s", code, stderr.String())
	}
	var line string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(l, ref+" ") {
			line = l
		}
	}
	f := strings.Fields(line)
	// TAGS KIND ID SIZE OWN LAST-USED IN-USE CREATED
	if len(f) != 8 || f[1] != "workspace" || !strings.HasSuffix(f[4], "KiB") || f[5] == "never" || f[6] != "no" {
		t.Errorf("images ls line of %s = %q; want a workspace of some KiB, used, not in use\n%s", ref, line, stdout.String())
	}
	if !strings.Contains(stdout.String(), "\ncache: ") {
		t.Errorf("images ls has no cache total:\n%s", stdout.String())
	}

	stdout.Reset()
	if code := exitCode(run(ctx, []string{"images", "prune", "--cache-size", "1000TiB"}, &stdout, &stderr), &stderr); code != 0 {
		t.Fatalf("images prune: exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stdout.String(), "evicted") || !strings.Contains(stdout.String(), "bound 1000TiB") {
		t.Errorf("images prune within the bound said %q", stdout.String())
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		t.Errorf("prune within the bound removed %s: %v", ref, err)
	}

	fx := sandboxtest.Fixture(t)
	stdout.Reset()
	args := []string{"scan", "--format", "json", "--agent", sandboxtest.Agent(t), "--linger", sandboxtest.Linger.String(), "--no-replay",
		"--workspace", dir, "--copy-workspace", "--cache-size", "1000TiB", "--mount", fx.Source + ":" + fx.Target, "--", fx.Target, "honest"}
	if code := exitCode(run(ctx, args, &stdout, &stderr), &stderr); code != 0 {
		t.Fatalf("scan --cache-size: exit %d: %s", code, stderr.String())
	}
	if code := exitCode(run(ctx, []string{"scan", "--cache-size", "lots", "--", "srv"}, &stdout, &stderr), &stderr); code != 2 {
		t.Errorf("scan --cache-size lots: exit %d, want 2", code)
	}
}
