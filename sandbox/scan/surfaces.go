package scan

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// surfaces reads every surface besides the tools that the server
// declares, in s, once its tools were called (sandbox.Session.Surfaces),
// with arguments pointing into the run's bait. A read that ended the
// session (the server gone, the run over) makes the scan incomplete: the
// error wraps ErrIncomplete.
func (sc *scanner) surfaces(s *sandbox.Session) error {
	canary := probes.DefaultCanary()
	if !sc.opts.NoSeed {
		canary = sc.bait.Canary
	}
	end := s.Timings().Begin(timings.StepSurfaces, 0)
	ended, interrupted := s.Surfaces(sc.ctx, canary)
	end()
	if ended == "" {
		return nil
	}
	if interrupted {
		ended = sc.why().Message
	}
	if sc.ctx.Err() != nil {
		s.Report().Problems = append(s.Report().Problems, sc.why())
	}
	return fmt.Errorf("%w: %s", ErrIncomplete, ended)
}
