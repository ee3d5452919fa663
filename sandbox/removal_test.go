package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestRemovalLeftToTheEngineEnds: the engine's removal of a container
// does not depend on the request's connection (dockerd 20.10's
// ContainerRm takes no context), which a teardown past --timeout counts
// on (sandbox.TeardownGrace). A removal of a container of many files,
// which the runner stops waiting for as soon as the request is written,
// goes on in the engine until the container is gone, with no other
// request of ours. And once the container's owner is dead, the next run's
// reaper neither fails on such a removal still under way nor leaves a
// container whose removal was never asked (a request that did not reach
// the engine).
func TestRemovalLeftToTheEngineEnds(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img := sandboxtest.NodeImage(t, cli)
	ctx := context.Background()
	runID := label.NewRunID()
	// Owned by a live stand-in while the test looks: no reaper on the
	// engine (every scan reaps) takes them before it is orphaned.
	owner, orphan := standIn(t)
	mk := func(files int) string {
		t.Helper()
		script := fmt.Sprintf(`const fs=require("fs");fs.mkdirSync("/tmp/f");for(let i=0;i<%d;i++)fs.writeFileSync("/tmp/f/"+i,"")`, files)
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Entrypoint: []string{}, Cmd: []string{"node", "-e", script},
			Labels: label.Set(runID, map[string]string{label.Owner: owner})}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}) })
		if err := cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		waitStopped(t, cli, c.ID)
		in, err := cli.ContainerInspect(ctx, c.ID)
		if err != nil || in.State.ExitCode != 0 {
			t.Fatalf("making %d files: %v, state %+v", files, err, in.State)
		}
		return c.ID
	}
	cut := func(id string) {
		t.Helper()
		// Past the bound already: the runner stops waiting once the
		// request is written.
		left, err := sandbox.RemoveBy(ctx, cli, id, time.Now())
		switch {
		case left:
			t.Logf("removal of %.12s left to the engine: %v", id, err)
		case !left && err == nil:
			t.Logf("the engine removed %.12s before the runner stopped waiting", id)
		default:
			t.Fatalf("removal of %.12s: %v", id, err)
		}
	}

	first := mk(30_000)
	cut(first)
	waitGone(t, cli, first)

	second, never := mk(30_000), mk(0)
	cut(second)
	// The runner that asked is gone; the next one's reaper runs, maybe
	// while the engine still removes the second.
	orphan()
	_, err := sandbox.Reap(ctx, cli)
	for _, id := range []string{second, never} {
		if err != nil && strings.Contains(err.Error(), id[:12]) {
			t.Errorf("reaping %.12s: %v", id, err)
		}
		waitGone(t, cli, id)
	}
}
