package scan

import (
	"errors"
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// diskStop records that the server was stopped at the disk bound during
// call seq, and that the rest of the plan was not reached.
func (sc *scanner) diskStop(s *sandbox.Session, seq int, rest []probes.Call) error {
	s.Problem("disk", seq, "call %d: %s", seq, sandbox.DiskMessage(s.DiskBound()))
	for _, c := range rest {
		s.Report().NotCalled = append(s.Report().NotCalled, report.NotCalled{Tool: c.Tool, Reason: "not reached: the server was stopped at the disk bound"})
	}
	return fmt.Errorf("%w: %w", ErrIncomplete, errDiskStopped)
}

// diskVerdict: a scan stopped at the disk bound ran as far as the server
// let it; its verdict is the bound's finding (exit 1, not 2), and the
// report says it is partial (complete: false). Whatever stopped the scan
// once the server was killed (a call cut off, a listing that failed) is a
// consequence of the stop.
func diskVerdict(rep *report.Report, err error) error {
	if rep.Sandbox.DiskExceeded && errors.Is(err, ErrIncomplete) {
		rep.Complete = false
		return nil
	}
	return err
}

// errDiskStopped ends a session's calls: the runner stopped the server at
// the disk bound.
var errDiskStopped = errors.New("the server was stopped at the disk bound")
