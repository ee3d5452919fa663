package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// ProblemReportBound is the kind of the problem that says what a report
// over --max-report shed.
const ProblemReportBound = "report-bound"

// DefaultMaxReport is --max-report's default: the bytes of the JSON
// report outside timing.
const DefaultMaxReport = 64 << 20

// FinishWithin is Finish, then the report bound: when rep's JSON (outside
// timing, which differs between runs) is over max bytes (0: no bound), it
// sheds in the order of report.ShedOrder, one step at a time, until it is
// within; it records the bound and the bytes shed (sandbox.maxReport,
// sandbox.reportShed) and a report-bound problem naming the steps, and
// the verdict adds the report-truncated finding. After each step but the
// last the verdict is given again: the steps before it shed nothing a
// rule reads but the arguments, which only the evidence quotes. The last,
// the effect lists, keeps the findings judged on the whole effects.
func FinishWithin(rep *report.Report, cfg Config, bound int64) error {
	return finishWithin(rep, bound, func() { Finish(rep, cfg) })
}

// FinishRoundsWithin is FinishRounds, then the report bound as
// FinishWithin applies it: the steps shed the merged report (the first
// round's), and each verdict after a step merges the rounds again, from
// the problems each round had before the first.
func FinishRoundsWithin(reps []*report.Report, cfg Config, bound int64) (*report.Report, error) {
	if len(reps) == 1 {
		return reps[0], FinishWithin(reps[0], cfg, bound)
	}
	base := reps[0]
	before := slices.Clone(base.Problems)
	err := finishWithin(base, bound, func() {
		var kept []report.Problem
		for _, p := range base.Problems {
			if p.Kind == ProblemReportBound {
				p.Round = 0
				kept = append(kept, p)
			}
		}
		base.Problems = append(slices.Clone(before), kept...)
		FinishRounds(reps, cfg)
	})
	return base, err
}

// finishWithin gives the verdict (finish, on rep), then bounds rep as
// FinishWithin says.
func finishWithin(rep *report.Report, bound int64, finish func()) error {
	finish()
	if bound <= 0 {
		return nil
	}
	size, err := report.JSONSize(rep)
	if err != nil || size <= bound {
		return err
	}
	first := size
	rep.Sandbox.MaxReport = bound
	rep.Sandbox.ReportShed = first // a stand-in of about the same digits until the end
	var shed []string
	for _, step := range report.ShedOrder() {
		if step == report.ShedEffects {
			// The last verdict, on the whole effects: the findings it
			// gives (report-truncated among them) are kept.
			setBoundProblem(rep, shedMessage(bound, append(shed, step.String()), false))
			finish()
		}
		n := rep.Shed(step)
		if n == 0 {
			continue
		}
		shed = append(shed, fmt.Sprintf("%s (%d)", step, n))
		setBoundProblem(rep, shedMessage(bound, shed, false))
		if step != report.ShedEffects {
			finish()
		}
		if size, err = report.JSONSize(rep); err != nil {
			return err
		}
		if size <= bound {
			break
		}
	}
	if size > bound {
		setBoundProblem(rep, shedMessage(bound, shed, true))
	}
	if size, err = report.JSONSize(rep); err != nil {
		return err
	}
	rep.Sandbox.ReportShed = max(first-size, 1)
	return nil
}

// setBoundProblem sets the message of the report-bound problem, adding
// it the first time.
func setBoundProblem(rep *report.Report, msg string) {
	for i := range rep.Problems {
		if rep.Problems[i].Kind == ProblemReportBound {
			rep.Problems[i].Message = msg
			return
		}
	}
	rep.Problems = append(rep.Problems, report.Problem{Kind: ProblemReportBound, Message: msg})
}

func shedMessage(bound int64, shed []string, still bool) string {
	msg := fmt.Sprintf("the report was over --max-report (%d bytes outside timing): shed, in order, %s", bound, strings.Join(shed, "; "))
	if still {
		msg += "; it is over the bound all the same (the tools, findings and problems left are more)"
	}
	return msg
}
