package sandbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// scanPerCall runs each planned call in a fresh container from the same
// starting state (image, workspace, canaries, honeytokens). A first
// session lists the tools and plans; then each call (with its repeats,
// which need the state the call left) gets its own session. What a
// session does after its call, until teardown, is a "between" phase of
// that call. Process ids are per container.
func scanPerCall(ctx context.Context, cli Engine, opts ScanOptions) (Result, error) {
	tokens := probes.NewHoneytokens()
	disc := opts
	disc.Isolation, disc.listOnly, disc.tokens = "session", true, &tokens
	res, err := Scan(ctx, cli, disc)
	rep := res.Report
	rep.Sandbox.Isolation = "call"
	if err != nil {
		return res, err
	}
	complete := true
	var errs []error
	for _, group := range groupRepeats(res.plan) {
		if ctx.Err() != nil {
			for _, c := range group {
				rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: c.Tool, Reason: "not reached: the run ended"})
			}
			complete = false
			continue
		}
		sub := opts
		sub.Isolation, sub.plan, sub.tokens = "session", group, &tokens
		sr, serr := Scan(ctx, cli, sub)
		mergeCall(rep, sr.Report)
		if serr != nil {
			complete = false
			if !errors.Is(serr, ErrIncomplete) {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "infra", Call: len(rep.Calls), Message: oneLine(serr.Error())})
				errs = append(errs, serr)
			}
		}
	}
	rep.Complete = complete && ctx.Err() == nil
	// Each session's report is normalized already (process ids are per
	// container); only the call durations are gathered again.
	if rep.Timing == nil {
		rep.Timing = &report.Timing{}
	}
	rep.Timing.Calls = rep.Timing.Calls[:0]
	for _, c := range rep.Calls {
		rep.Timing.Calls = append(rep.Timing.Calls, report.CallTiming{Seq: c.Seq, DurationMs: c.DurationMs})
	}
	report.SortFindings(rep.Findings)
	rep.Finish()
	if ctx.Err() != nil {
		return res, fmt.Errorf("%w: the run ended", ErrIncomplete)
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("%w: %d call session(s) failed: %v", ErrIncomplete, len(errs), errors.Join(errs...))
	}
	return res, nil
}

// groupRepeats keeps each call together with the repeats that follow it.
func groupRepeats(plan []probes.Call) [][]probes.Call {
	var out [][]probes.Call
	for _, c := range plan {
		if c.Source == "repeat" && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], c)
			continue
		}
		out = append(out, []probes.Call{c})
	}
	return out
}

// mergeCall moves one session's calls into the report, numbered on, with
// what happened after them (between phases and teardown) as "between"
// phases of the call, and the session's problems and skips.
func mergeCall(rep, sub *report.Report) {
	first := len(rep.Calls)
	for _, c := range sub.Calls {
		c.Seq += first
		rep.Calls = append(rep.Calls, c)
	}
	last := len(rep.Calls)
	for _, p := range sub.Phases {
		switch p.Name {
		case "between":
			p.After += first
		case "teardown":
			p.Name, p.After = "between", last
		default:
			continue // the session's start-up repeats the first session's
		}
		if len(p.Effects.Files)+len(p.Effects.Processes)+len(p.Effects.Network) > 0 {
			rep.Phases = append(rep.Phases, p)
		}
	}
	for _, p := range sub.Problems {
		if p.Call > 0 {
			p.Call += first
		}
		rep.Problems = append(rep.Problems, p)
	}
	rep.NotCalled = append(rep.NotCalled, sub.NotCalled...)
}
