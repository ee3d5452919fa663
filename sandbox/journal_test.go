package sandbox_test

import (
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// TestJournalSparesTheWalks: a server that floods its layer at startup
// (20,000 files) costs the snapshots a walk until the journal holds
// again; every snapshot between the first call and the teardown reads
// the journal, and the teardown's check walk finds nothing it missed.
func TestJournalSparesTheWalks(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "flood", "files=20000")
	opts.Probes = steps(t, `[{"tool":"echo"},{"tool":"echo"},{"tool":"echo"},{"tool":"echo"},{"tool":"echo"}]`)
	rec := timings.New(time.Now())
	opts.Timings = rec
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if p := problemsOf(r, report.ProblemJournal); len(p) != 0 {
		t.Errorf("the teardown's walk found changes the journal missed: %+v", p)
	}
	n := 0
	for _, c := range r.Calls {
		if c.Tool == "echo" {
			n++
			if len(c.Effects.Files) != 0 {
				t.Errorf("call %d echo: %+v", c.Seq, c.Effects.Files)
			}
		}
	}
	if n < 5 {
		t.Fatalf("%d echo calls, want 5: %+v", n, r.Problems)
	}
	first, teardown := -1.0, -1.0
	var walks []timings.Span
	for _, s := range rec.File(time.Minute).Spans {
		if s.Session != timings.SessionMain {
			continue
		}
		switch s.Step {
		case timings.StepCall:
			if first < 0 || s.StartMs < first {
				first = s.StartMs
			}
		case timings.StepTeardown:
			teardown = s.StartMs
		case timings.StepWalk:
			walks = append(walks, s)
		}
	}
	if first < 0 || teardown < 0 || len(walks) == 0 {
		t.Fatalf("spans: first call at %v, teardown at %v, walks %+v", first, teardown, walks)
	}
	for _, w := range walks {
		if w.StartMs > first && w.StartMs < teardown {
			t.Errorf("a walk at %.0f ms, between the first call (%.0f) and the teardown (%.0f): the journal did not hold", w.StartMs, first, teardown)
		}
	}
}
