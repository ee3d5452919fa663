package clientrun_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/clientverdict"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/clientadapter"
	"github.com/mcpsandbox/mcpsandbox/sandbox/clientrun"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// whenClientRuns waits, bounded, until run id's one sandbox runs the
// fixture client, then does do to it.
func whenClientRuns(cli *client.Client, runID string, do func(ctx context.Context, id string) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		list, err := cli.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
			filters.Arg("label", label.Run+"="+runID), filters.Arg("label", label.Kind+"=sandbox"))})
		if err == nil && len(list) == 1 {
			if top, err := cli.ContainerTop(ctx, list[0].ID, nil); err == nil && strings.Contains(fmt.Sprint(top.Processes), fixtureMount) {
				return do(ctx, list[0].ID)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no sandbox of run %s ran the client", runID)
}

// TestLostLegIsErrored removes a leg's sandbox from outside, or kills its
// init from the host, while the client runs in it: the run is ERRORED
// (exit 2) and its error wraps ErrSandboxLost, never a verdict; the leg
// is kept, with a sandbox-lost problem saying how; nothing is left.
func TestLostLegIsErrored(t *testing.T) {
	cli := sandboxtest.Docker(t)
	for _, tc := range sandboxtest.Losses(cli) {
		t.Run(tc.Name, func(t *testing.T) {
			a, _ := clientadapter.Builtin("fixture")
			// The client hangs far longer than the test waits: only the
			// loss ends its leg.
			o := clientrun.Options{Adapter: a, Command: []string{fixtureMount, "--policy", "hang"}, SessionOptions: sandbox.SessionOptions{Image: base(t, cli),
				Mounts: []sandbox.Mount{fixtureClient(t)}, Agent: sandboxtest.Agent(t), RunID: label.NewRunID()}, Timeout: 10 * time.Minute, NoControl: true, Judge: clientverdict.Judge{}}
			sandboxtest.NoLeftovers(t, cli, o.RunID)
			done := make(chan error, 1)
			go func() { done <- whenClientRuns(cli, o.RunID, tc.Do) }()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			rep, err := clientrun.Run(ctx, cli, o)
			if derr := <-done; derr != nil {
				t.Fatal(derr)
			}
			if !errors.Is(err, sandbox.ErrSandboxLost) || rep.Verdict != clientreport.Errored || rep.ExitCode() != 2 || !strings.Contains(rep.Reason, "the sandbox was lost") {
				t.Fatalf("err %v, verdict %s (exit %d, %q): want ERRORED for a lost sandbox", err, rep.Verdict, rep.ExitCode(), rep.Reason)
			}
			if len(rep.Legs) != 1 || rep.Legs[0].Name != "alpha" {
				t.Fatalf("legs %+v: want the alpha leg kept", rep.Legs)
			}
			lost := false
			for _, p := range rep.Legs[0].Problems {
				lost = lost || (p.Kind == report.ProblemSandboxLost && strings.Contains(p.Message, tc.Want))
			}
			if !lost {
				t.Errorf("the leg has no sandbox-lost problem saying %q: %+v", tc.Want, rep.Legs[0].Problems)
			}
		})
	}
}
