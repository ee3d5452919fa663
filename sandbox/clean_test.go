package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestReapRemovesOnlyOrphans makes a container owned by a process that has
// exited, one owned by this test and one with no owner (kept with --keep):
// only the first is reaped.
func TestReapRemovesOnlyOrphans(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img := sandboxtest.NodeImage(t, cli)
	ctx := context.Background()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	mk := func(owner string) string {
		labels := label.Set(runID, nil)
		if owner != "" {
			labels[label.Owner] = owner
		}
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: []string{"true"}, Labels: labels},
			&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}) })
		return c.ID
	}
	orphan := mk(fmt.Sprintf("%s:%d:1", host, dead.Process.Pid))
	live := mk(label.SelfOwner())
	kept := mk("")
	removed, err := sandbox.Reap(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, orphan) || slices.Contains(removed, live) || slices.Contains(removed, kept) {
		t.Errorf("reaped %v; want the orphan %.12s only (not live %.12s, kept %.12s)", removed, orphan, live, kept)
	}
}
