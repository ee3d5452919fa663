package sandbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// TestRunTimeoutInTheLingerIsSaid: a --timeout that ends the linger window
// early (the window far longer than the bound) leaves the report
// incomplete with a run-timeout problem, as one that ends a call does: a
// late effect after the cut would not have been seen, so the report must
// not claim every step ran. (Found by the bulk benchmark's warm-up, whose
// 1 s bound reported such scans complete.)
func TestRunTimeoutInTheLingerIsSaid(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest")
	opts.Linger = time.Hour
	// Long enough that the cut falls in the linger, not in the start: a
	// start the bound cuts is TestRunTimeoutInTheStartIsSaid's, and under
	// load (25) a 5 s bound cut it before the container was removed.
	opts.Timeout = 20 * time.Second
	res, err := runScan(t, cli, opts)
	if !errors.Is(err, scan.ErrIncomplete) {
		t.Fatalf("scan: %v, want ErrIncomplete", err)
	}
	cutByTheBound(t, res.Report)
}

// TestRunTimeoutInTheReplaysIsSaid: a --timeout reached while the calls
// the rules suspect are replayed leaves the report incomplete with a
// run-timeout problem (bulk's 5-minute bound cut desktop-commander's
// replays, and the report said complete). The suspects are asked for
// only once the deadline has passed, so every replay meets it.
func TestRunTimeoutInTheReplaysIsSaid(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest")
	opts.Timeout = 3 * time.Second
	opts.Suspects = func(*report.Report) []int {
		// Past the run's bound, whatever the load: the scan began before
		// its first session, so a whole bound from now is past it.
		time.Sleep(opts.Timeout + 100*time.Millisecond)
		return []int{1}
	}
	res, err := runScan(t, cli, opts)
	if !errors.Is(err, scan.ErrIncomplete) {
		t.Fatalf("scan: %v, want ErrIncomplete", err)
	}
	cutByTheBound(t, res.Report)
}

// TestRunTimeoutInTheStartIsSaid: a --timeout reached before the server's
// container has started (under load a start takes seconds) leaves an
// incomplete report with a run-timeout problem, as a bound that cuts a
// call does, not an engine failure; nothing is left on the engine. The
// bound here is a nanosecond, so that it is passed whatever the load.
func TestRunTimeoutInTheStartIsSaid(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for name, iso := range map[string]sandbox.Isolation{"session": sandbox.IsolationSession, "call": sandbox.IsolationCall} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := fixtureOpts(t, "honest")
			opts.Isolation = iso
			opts.Timeout = time.Nanosecond
			res, err := runScan(t, cli, opts)
			if !errors.Is(err, scan.ErrIncomplete) {
				t.Fatalf("scan: %v, want ErrIncomplete", err)
			}
			cutByTheBound(t, res.Report)
		})
	}
}

// cutByTheBound wants r incomplete with one run-timeout problem.
func cutByTheBound(t *testing.T, r *report.Report) {
	t.Helper()
	if r.Complete {
		t.Error("the report says complete")
	}
	n := 0
	for _, p := range r.Problems {
		if p.Kind == "run-timeout" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d run-timeout problems, want 1: %+v", n, r.Problems)
	}
}
