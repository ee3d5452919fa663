package sandbox_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// standIn starts a process to own a test's containers, as a runner
// would: while it lives, no reaper on the engine (every scan of every
// process on it reaps) touches what it owns. orphan kills it: from then
// on its containers are provably orphaned, and any process's reaper may
// take them first.
func standIn(t *testing.T) (owner string, orphan func()) {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	orphan = sync.OnceFunc(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	t.Cleanup(orphan)
	return label.OwnerOf(cmd.Process.Pid), orphan
}

// waitGone waits until container id is removed (by this process's
// reaper, or by another's whose removal was still under way): the
// engine's wait, not a clock; the deadline only keeps a failure from
// hanging the suite.
func waitGone(t *testing.T, cli *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	okc, errc := cli.ContainerWait(ctx, id, container.WaitConditionRemoved)
	select {
	case <-okc:
	case err := <-errc:
		if !cerrdefs.IsNotFound(err) {
			t.Errorf("container %.12s is still there: %v", id, err)
		}
	}
}

// waitStopped waits until container id no longer runs.
func waitStopped(t *testing.T, cli *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	okc, errc := cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case <-okc:
	case err := <-errc:
		t.Errorf("container %.12s: %v", id, err)
	}
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
	// Started while their owner lives: a container made with a dead
	// owner could be reaped by another process before it started.
	owner, orphanAll := standIn(t)
	keptOrphan := runningContainer(t, cli, img, runID, owner, true)
	keptLive := runningContainer(t, cli, img, runID, label.SelfOwner(), true)
	keptUnowned := runningContainer(t, cli, img, runID, "", true)
	orphan := runningContainer(t, cli, img, runID, owner, false)
	orphanAll()

	r, err := sandbox.ReapAll(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(r.Removed, keptOrphan) {
		t.Errorf("reaped %+v: the kept orphan %.12s was removed", r, keptOrphan)
	}
	// The orphans are checked by what became of them, not by what this
	// reap did: a reaper of another process on the shared engine may
	// have been first.
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
	waitStopped(t, cli, keptOrphan)
	if s := state(keptOrphan); s.Running {
		t.Errorf("the kept orphan still runs: %+v", s)
	}
	if s := state(keptLive); !s.Running {
		t.Errorf("the kept container of a live runner was stopped: %+v", s)
	}
	if s := state(keptUnowned); !s.Running {
		t.Errorf("the kept container with no owner was stopped: %+v", s)
	}
	waitGone(t, cli, orphan)

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

// TestKeepKeepsTheScansContainerOnly: a --keep scan whose call is replayed
// keeps its own container, the one it prints, and no replay's (those
// were left stopped, printed and recorded nowhere); with --isolation
// call, where no one container is the scan's, --keep is refused.
func TestKeepKeepsTheScansContainerOnly(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	ctx := context.Background()
	opts := fixtureOpts(t, "honest")
	opts.Keep = true
	opts.Suspects = func(*report.Report) []int { return []int{1} }
	res, err := runScan(t, cli, opts)
	if res.ContainerID != "" {
		t.Cleanup(func() { cli.ContainerRemove(ctx, res.ContainerID, container.RemoveOptions{Force: true}) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Report.Calls[0]; c.Replay == nil || c.Replay.Status != "replayed" {
		t.Fatalf("call 1 not replayed: %+v", c.Replay)
	}
	// The scan helper's leftover check (registered before the removal
	// above, so run after it) fails on any other container of the run.
	if res.ContainerID == "" {
		t.Error("the scan's container was not kept")
	}

	opts = fixtureOpts(t, "honest")
	opts.Keep, opts.Isolation = true, sandbox.IsolationCall
	var ie *sandbox.InfraError
	if _, err := runScan(t, cli, opts); !errors.As(err, &ie) {
		t.Errorf("--keep with --isolation call: %v, want refused", err)
	}
}
