package sandbox_test

import (
	"context"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestReapRemovesOnlyOrphans makes a container owned by a process that has
// exited, one owned by this test, one with no owner (kept with --keep) and
// one owned by the exited process but labelled to keep: only the first is
// reaped (by this reap, or another process's that came first).
func TestReapRemovesOnlyOrphans(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img := sandboxtest.NodeImage(t, cli)
	ctx := context.Background()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	mk := func(owner string, keep bool) string {
		labels := label.Set(runID, nil)
		if owner != "" {
			labels[label.Owner] = owner
		}
		if keep {
			labels[label.Keep] = "true"
		}
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: []string{"true"}, Labels: labels},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}) })
		return c.ID
	}
	owner, orphanAll := standIn(t)
	orphan := mk(owner, false)
	live := mk(label.SelfOwner(), false)
	kept := mk("", true)
	keptOrphan := mk(owner, true)
	orphanAll()
	removed, err := sandbox.Reap(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(removed, live) || slices.Contains(removed, kept) || slices.Contains(removed, keptOrphan) {
		t.Errorf("reaped %v; want the orphan %.12s only (not live %.12s, kept %.12s, kept orphan %.12s)", removed, orphan, live, kept, keptOrphan)
	}
	waitGone(t, cli, orphan)
	for _, id := range []string{live, kept, keptOrphan} {
		if _, err := cli.ContainerInspect(ctx, id); err != nil {
			t.Errorf("container %.12s is gone: %v", id, err)
		}
	}
}
