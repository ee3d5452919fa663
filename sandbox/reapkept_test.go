package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// deadOwner is an Owner label value of a process that has exited.
func deadOwner(t *testing.T) string {
	t.Helper()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:1", host, dead.Process.Pid)
}

// runningContainer starts a container of run runID with the given owner
// ("": none) and keep label, whose process runs until killed, as a
// server that ignores the end of its stdin does.
func runningContainer(t *testing.T, cli *client.Client, img, runID, owner string, keep bool) string {
	t.Helper()
	ctx := context.Background()
	labels := label.Set(runID, nil)
	if owner != "" {
		labels[label.Owner] = owner
	}
	if keep {
		labels[label.Keep] = "true"
	}
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Entrypoint: []string{}, Cmd: []string{"sleep", "600"}, Labels: labels},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}) })
	if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	return c.ID
}

// TestReapStopsKeptOrphans: a kept container still running after its
// runner died is stopped and left in place; a kept one whose runner lives,
// and a kept one with no owner label, are untouched; an unkept orphan is
// removed as before.
func TestReapStopsKeptOrphans(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img := sandboxtest.NodeImage(t, cli)
	ctx := context.Background()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	dead := deadOwner(t)
	keptOrphan := runningContainer(t, cli, img, runID, dead, true)
	keptLive := runningContainer(t, cli, img, runID, label.SelfOwner(), true)
	keptUnowned := runningContainer(t, cli, img, runID, "", true)
	orphan := runningContainer(t, cli, img, runID, dead, false)

	r, err := sandbox.ReapAll(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(r.Removed, keptOrphan) {
		t.Errorf("reaped %+v: the kept orphan %.12s was removed", r, keptOrphan)
	}
	// The orphan is checked by its absence below: a reaper of another
	// process on the shared engine may have removed it first.
	for _, id := range []string{keptLive, keptUnowned} {
		if slices.Contains(r.Stopped, id) || slices.Contains(r.Removed, id) {
			t.Errorf("reaped %+v: %.12s should be untouched", r, id)
		}
	}
	state := func(id string) *container.State {
		in, err := cli.ContainerInspect(ctx, id)
		if err != nil {
			t.Fatalf("inspect %.12s: %v", id, err)
		}
		return in.State
	}
	if s := state(keptOrphan); s.Running {
		t.Errorf("the kept orphan still runs: %+v", s)
	}
	if s := state(keptLive); !s.Running {
		t.Errorf("the kept container of a live runner was stopped: %+v", s)
	}
	if s := state(keptUnowned); !s.Running {
		t.Errorf("the kept container with no owner was stopped: %+v", s)
	}
	if _, err := cli.ContainerInspect(ctx, orphan); err == nil {
		t.Errorf("the orphan %.12s is still there", orphan)
	}

	// A second reap finds the kept orphan stopped: nothing to do, and
	// still not removed.
	r, err = sandbox.ReapAll(ctx, cli)
	if err != nil || slices.Contains(r.Stopped, keptOrphan) || slices.Contains(r.Removed, keptOrphan) {
		t.Errorf("second reap: %+v %v", r, err)
	}
	if s := state(keptOrphan); s.Running {
		t.Errorf("the kept orphan runs again: %+v", s)
	}
}

// TestKeptSessionHasOwner: a session kept at Close carries the keep label
// and its runner's owner label, which the reaper needs to tell a dead
// runner's kept container.
func TestKeptSessionHasOwner(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img := sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	ctx := context.Background()
	runID := label.NewRunID()
	s, err := sandbox.Open(ctx, cli, sandbox.SessionOptions{Image: img, Argv: []string{sandboxtest.FixtureMount, "honest"},
		Mounts: []sandbox.Mount{fx}, RunID: runID, Keep: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	id := s.Kept()
	if id == "" {
		t.Fatal("nothing kept")
	}
	t.Cleanup(func() { cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}) })
	in, err := cli.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if l := in.Config.Labels; l[label.Keep] != "true" || l[label.Owner] != label.SelfOwner() {
		t.Errorf("kept container labels %v: want %s=true and %s=%s", l, label.Keep, label.Owner, label.SelfOwner())
	}
}
