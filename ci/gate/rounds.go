package gate

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// scanRounds scans opts.Rounds times (at least once), each round a whole
// scan.Run in fresh containers with the same options and the same
// bait seed, so that the rounds' reports compare. Each result's report
// has its infra problem, if the round's scan could not run; the error
// joins every round's, each named by its round when there are
// several. An interrupted context ends the rounds early: the
// results, and their reports, are those that ran.
func scanRounds(ctx context.Context, cli sandbox.Engine, opts Options) ([]scan.Result, []*report.Report, error) {
	n := max(opts.Rounds, 1)
	so := opts.Scan
	if n > 1 && !so.NoSeed && so.BaitSeed == nil {
		seed := probes.RandomSeed()
		so.BaitSeed = &seed
	}
	var results []scan.Result
	var reps []*report.Report
	var errs error
	for round := 1; round <= n; round++ {
		if round > 1 && ctx.Err() != nil {
			break
		}
		ro := so
		if ro.RunID != "" && round > 1 {
			// Each round's containers are its own (--keep keeps them all).
			ro.RunID = fmt.Sprintf("%sr%d", so.RunID, round)
		}
		if n > 1 {
			ro.Timings = so.Timings.Round(round)
		}
		res, err := scan.Run(ctx, cli, ro)
		if err != nil && !errors.Is(err, scan.ErrIncomplete) {
			// The error can quote the server (its stderr): shown as the report is.
			msg := report.EscapeInvalid(report.RedactString(report.OneLine(err.Error()), res.Placeholders))
			res.Report.Problems = append(res.Report.Problems, report.Problem{Kind: "infra", Message: msg})
		}
		if err != nil && n > 1 {
			err = fmt.Errorf("round %d: %w", round, err)
		}
		errs = errors.Join(errs, err)
		results = append(results, res)
		reps = append(reps, res.Report)
	}
	return results, reps, errs
}
