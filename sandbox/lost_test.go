package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
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
	sandbox.SetCreated(&opts, func(id string) {
		created = id
		cancel(errSignal)
	})
	res, err := sandbox.Scan(ctx, cli, opts)
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
