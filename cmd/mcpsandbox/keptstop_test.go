package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestRunNamedKilledRunnerStopped: a named run whose runner is killed with
// SIGKILL, its server one that ignores the end of its stdin (sleep), is
// listed by `runs` as stopped: the reap before the listing stopped its
// container, which is still there for changes and apply; the store
// records it stopped.
func TestRunNamedKilledRunnerStopped(t *testing.T) {
	cli := sandboxtest.Docker(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	cmd := exec.Command(sandboxtest.Runner(t), "run", "--name", "killed", "--image", sandboxtest.NodeImage(t, cli), "--", "sleep", "600")
	stdin, err := cmd.StdinPipe() // held open: the runner waits on it
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
		cliIn(t, "clean", "killed")
	})
	// The run is recorded with its container once the container started.
	var id string
	for deadline := time.Now().Add(time.Minute); id == "" && time.Now().Before(deadline); {
		if list := listRuns(t); len(list) == 1 && list[0].Container != "" && list[0].State == runs.Running {
			id = list[0].Container
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if id == "" {
		t.Fatalf("the run never started\nstderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if in, err := cli.ContainerInspect(context.Background(), id); err != nil || !in.State.Running {
		t.Fatalf("after SIGKILL the server should still run (it ignores its stdin): %v %+v", err, in.State)
	}
	list := listRuns(t)
	if len(list) != 1 || list[0].State != runs.Stopped {
		t.Fatalf("runs after SIGKILL: %+v", list)
	}
	in, err := cli.ContainerInspect(context.Background(), id)
	if err != nil || in.State == nil || in.State.Running {
		t.Errorf("the kept container: %v %+v (want it there, stopped)", err, in.State)
	}
	st, err := runStore()
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.Get("killed"); err != nil || m.State != runs.Stopped {
		t.Errorf("the store has run killed %v (%v), want stopped", m.State, err)
	}
}
