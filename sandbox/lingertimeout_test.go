package sandbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
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
	opts.Timeout = 5 * time.Second
	res, err := scan(t, cli, opts)
	if !errors.Is(err, sandbox.ErrIncomplete) {
		t.Fatalf("scan: %v, want ErrIncomplete", err)
	}
	r := res.Report
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

// TestRunTimeoutInTheReplaysIsSaid: a --timeout reached while the calls
// the rules suspect are replayed leaves the report incomplete with a
// run-timeout problem (bulk's 5-minute bound cut desktop-commander's
// replays, and the report said complete). The suspects are asked for
// only once the deadline has passed, so every replay meets it.
func TestRunTimeoutInTheReplaysIsSaid(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest")
	opts.Timeout = 6 * time.Second
	deadline := time.Now().Add(opts.Timeout)
	opts.Suspects = func(*report.Report) []int {
		time.Sleep(time.Until(deadline) + 100*time.Millisecond) // past the run's bound, whatever the load
		return []int{1}
	}
	res, err := scan(t, cli, opts)
	if !errors.Is(err, sandbox.ErrIncomplete) {
		t.Fatalf("scan: %v, want ErrIncomplete", err)
	}
	r := res.Report
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
