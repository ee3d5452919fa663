package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// errSignal stands for the cause a signal gives the run's context.
var errSignal = errors.New("interrupted (SIGINT)")

// TestSignalBetweenCreateAndStart ends the run's context right after its
// container is created, before it starts: the scan ends incomplete, its
// error says why (the context's cause, no engine text), and the container
// is gone.
func TestSignalBetweenCreateAndStart(t *testing.T) {
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest")
	opts.Image, opts.Agent, opts.Linger = sandboxtest.NodeImage(t, cli), sandboxtest.Agent(t), sandboxtest.Linger
	opts.RunID = label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, opts.RunID)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	var created string
	sandbox.SetCreated(&opts.SessionOptions, func(id string) {
		created = id
		cancel(errSignal)
	})
	res, err := scan.Run(ctx, cli, opts)
	if !errors.Is(err, errSignal) {
		t.Fatalf("err %v, want the context's cause", err)
	}
	if res.Report.Complete || len(res.Report.Problems) == 0 {
		t.Errorf("complete %v, problems %+v: want an incomplete report that says why", res.Report.Complete, res.Report.Problems)
	}
	if created == "" {
		t.Fatal("no container was created")
	}
	ictx, icancel := context.WithTimeout(context.Background(), time.Minute)
	defer icancel()
	if _, err := cli.ContainerInspect(ictx, created); !cerrdefs.IsNotFound(err) {
		t.Errorf("the created container %.12s is still there (%v)", created, err)
	}
}

// TestLostReplayKeepsTheCallsEffects removes one of a suspect call's
// replay containers from outside while the replay runs: the replay tells
// nothing, so the call keeps no Replay and its effects stay with it (its
// own tool's finding, not one pinned on no call and handed to its
// candidates' claims); a replay problem on the call says the sandbox was
// lost, the report is incomplete, the error wraps ErrSandboxLost, and
// nothing is left behind.
func TestLostReplayKeepsTheCallsEffects(t *testing.T) {
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "timer_write")
	opts.Probes = steps(t, `{"timer_write":{"ms":0,"name":"late.txt"}}`)
	opts.Linger = 3 * time.Second // the replay's window, in which it is removed
	opts.Suspects = func(*report.Report) []int { return []int{1} }
	var mu sync.Mutex
	created := 0
	removed := make(chan error, 1)
	sandbox.SetCreated(&opts.SessionOptions, func(id string) {
		mu.Lock()
		created++
		n := created
		mu.Unlock()
		if n != 2 { // the scan's own sandbox first, then the replay's two
			return
		}
		go func() { removed <- removeOnceServing(cli, id) }()
	})
	res, err := runScan(t, cli, opts)
	if rerr := <-removed; rerr != nil {
		t.Fatal(rerr)
	}
	if !errors.Is(err, scan.ErrIncomplete) || !errors.Is(err, sandbox.ErrSandboxLost) {
		t.Fatalf("scan: %v, want ErrIncomplete and ErrSandboxLost", err)
	}
	r := res.Report
	if r.Complete || len(r.Calls) != 1 {
		t.Fatalf("complete %v, %d calls: want an incomplete report with the call", r.Complete, len(r.Calls))
	}
	c := r.Calls[0]
	if c.Replay != nil {
		t.Errorf("the call keeps a replay %+v: its effects would go to its candidates", c.Replay)
	}
	var replay []report.Problem
	for _, p := range r.Problems {
		switch p.Kind {
		case "replay":
			replay = append(replay, p)
		case report.ProblemSandboxLost:
			t.Errorf("the scan's own sandbox was not lost: %+v", p)
		}
	}
	if len(replay) != 1 || replay[0].Call != 1 || !strings.Contains(replay[0].Message, "the sandbox was lost") || !strings.Contains(replay[0].Message, "from outside") {
		t.Errorf("want one replay problem on call 1 saying the sandbox was lost from outside; problems %+v", r.Problems)
	}
	keys := strings.Join(originalKeysOf(r, c), "\n")
	if !strings.Contains(keys, "/workspace/late.txt") {
		t.Fatalf("the call's effects were not kept: %s", keys)
	}
	own, unpinned := false, false
	for _, f := range rules.Evaluate(r, rules.Options{}) {
		own = own || f.Tool == "timer_write"
		unpinned = unpinned || strings.Contains(f.Message, "no call is pinned")
	}
	if !own || unpinned {
		t.Errorf("findings: the call's own %v, pinned on no call %v: want its effects judged on its tool", own, unpinned)
	}
}

// removeOnceServing force-removes container id once its server runs
// (the agent has its settings, so the sandbox's session holds it), bounded.
func removeOnceServing(cli *client.Client, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		top, err := cli.ContainerTop(ctx, id, nil)
		if err == nil && strings.Contains(fmt.Sprint(top.Processes), sandboxtest.FixtureMount) {
			return cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("container %.12s never ran its server", id)
}

// originalKeysOf are the keys of what was seen during c and in the
// "between" phase after it.
func originalKeysOf(r *report.Report, c report.Call) []string {
	var out []string
	effs := []report.Effects{c.Effects}
	for _, p := range r.Phases {
		if p.Name == "between" && p.After == c.Seq {
			effs = append(effs, p.Effects)
		}
	}
	for _, e := range effs {
		for _, f := range e.Files {
			out = append(out, f.Key())
		}
	}
	return out
}
