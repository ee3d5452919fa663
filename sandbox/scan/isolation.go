package scan

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// scanPerCall runs each planned call in a fresh session from the same
// starting state (image, workspace, canaries, honeytokens). A first
// session lists the tools and plans; then each call (with its repeats,
// which need the state the call left) gets its own session. What a
// session does after its call, until teardown, is a "between" phase of
// that call. Process ids are per container.
func (sc *scanner) scanPerCall() (res Result, err error) {
	disc, derr := sc.open(timings.SessionMain)
	rep := disc.Report()
	res = Result{Report: rep, Transcript: disc.Transcript()}
	rep.Sandbox.Isolation = sandbox.IsolationCall.String()
	var plan []probes.Call
	var surfErr error // a read that ended the first session: the calls still run, each in its own
	func() {
		defer sc.close(disc, &derr)
		if derr != nil {
			sc.startCut(rep)
			derr = sc.startError(derr)
			return
		}
		rep.Tools, derr = sc.list(disc)
		if derr == nil {
			sc.watchFirst(disc, rep)
			plan = sc.plan(rep)
			// The other surfaces are read here, in the first session: each
			// read in the state the server starts in.
			surfErr = sc.surfaces(disc)
		}
	}()
	if derr != nil {
		return res, derr
	}
	complete := true
	var errs []error
	for _, group := range groupRepeats(plan) {
		if sc.ctx.Err() != nil {
			for _, c := range group {
				rep.NotCalled = append(rep.NotCalled, report.NotCalled{Tool: c.Tool, Reason: "not reached: " + sc.why().Message})
			}
			complete = false
			continue
		}
		serr := sc.callSession(rep, group)
		if serr != nil {
			complete = false
			if errors.Is(serr, sandbox.ErrSandboxLost) {
				// Its sandbox-lost problem is in the call's report, merged.
				errs = append(errs, serr)
			} else if !errors.Is(serr, ErrIncomplete) {
				rep.Problems = append(rep.Problems, report.Problem{Kind: "infra", Call: len(rep.Calls), Message: report.OneLine(serr.Error())})
				errs = append(errs, serr)
			}
		}
	}
	rep.Complete = complete && sc.ctx.Err() == nil && surfErr == nil
	if sc.ctx.Err() != nil {
		rep.Problems = append(rep.Problems, sc.why())
		return res, fmt.Errorf("%w: %s", ErrIncomplete, sc.why().Message)
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("%w: %d call session(s) failed: %w", ErrIncomplete, len(errs), errors.Join(errs...))
	}
	if surfErr != nil {
		return res, surfErr
	}
	if !rep.Complete {
		return res, fmt.Errorf("%w: a call session did not run every step", ErrIncomplete)
	}
	return res, nil
}

// callSession runs one group of calls in a fresh session and moves its
// calls, phases after them, problems and skips into rep.
func (sc *scanner) callSession(rep *report.Report, group []probes.Call) (err error) {
	first := len(rep.Calls)
	s, err := sc.open(fmt.Sprintf("call %d", first+1))
	defer func() {
		sc.close(s, &err)
		mergeCall(rep, s.Report(), first)
	}()
	if err != nil {
		for _, c := range group {
			s.Report().NotCalled = append(s.Report().NotCalled, report.NotCalled{Tool: c.Tool, Reason: "not reached: the call's session did not start"})
		}
		return sc.startError(err)
	}
	// Listed as in the first session, so that the client knows the same
	// tools (output schemas) whichever mode runs.
	tools, err := sc.list(s)
	if err != nil {
		return err
	}
	sc.replaySetups(s, first)
	sc.watchSession(s, tools, first+1)
	if err := sc.callAll(s, group, first); err != nil {
		return err
	}
	sc.endListing(s)
	return nil
}

// replaySetups makes again, in the fresh session s of the call after
// first, the setup calls that succeeded before it (a working directory
// set, a session created), so that the call finds the state it would
// have found in one session; their results give the values offered to
// the call (sc.state, with the setup calls' own seqs). Their effects are a
// "setup" phase, which mergeCall leaves out as it does the start-up: they
// repeat the setup calls' own, judged with them.
func (sc *scanner) replaySetups(s *sandbox.Session, first int) {
	sc.state = &probes.State{}
	var replayed []probes.Call
	for _, su := range sc.setups {
		if su.seq > first || sc.ctx.Err() != nil {
			break
		}
		sc.logf("call %d's session: replaying setup call %d (%s)", first+1, su.seq, su.call.Tool)
		c := s.Call(sc.ctx, sandbox.CallRequest{Seq: su.seq, Tool: su.call.Tool, Arguments: su.call.Arguments, Source: "setup"})
		if report.Succeeded(c) {
			sc.state.Harvest(su.seq, su.call.Tool, c.Result, s.Structured())
		} else {
			sc.logf("setup call %d failed when replayed: %s", su.seq, report.OneLine(c.Error+c.Result))
		}
		replayed = append(replayed, probes.Call{Tool: su.call.Tool, Arguments: su.call.Arguments, Source: su.call.Source})
		if c.ErrorKind == "transport" || c.ErrorKind == "interrupted" {
			break // the call will say so
		}
		if len(s.Background()) > 0 {
			s.Settle(sc.ctx, sc.opts.Settle)
		}
	}
	if len(replayed) > 0 {
		s.Phase(sc.ctx, "setup", first)
		sc.setupsOf[first+1] = replayed
	}
}

// groupRepeats keeps each call together with the repeats that follow it.
func groupRepeats(plan []probes.Call) [][]probes.Call {
	var out [][]probes.Call
	for _, c := range plan {
		if (c.Source == "repeat" || c.Source == "retry") && len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], c)
			continue
		}
		out = append(out, []probes.Call{c})
	}
	return out
}

// mergeCall moves one call session's calls into rep (they are numbered
// already), with what happened after them (between phases, re-listings'
// "tools/list" phases, and teardown as a "between" phase of its last
// call), and the session's problems and skips. Its start-up phases repeat
// the first session's and are dropped.
func mergeCall(rep, sub *report.Report, first int) {
	rep.Calls = append(rep.Calls, sub.Calls...)
	last := len(rep.Calls)
	for _, p := range sub.Phases {
		switch p.Name {
		case "between", "tools/list":
			if p.After <= first {
				continue // before its call: the same start-up
			}
		case "teardown":
			p.Name, p.After = "between", last
		default:
			continue
		}
		if !p.Effects.Empty() {
			rep.Phases = append(rep.Phases, p)
		}
	}
	for _, p := range sub.Problems {
		// The version's note is the server's, said once: every session
		// would repeat it.
		if p.Kind == "protocol" && p.Call == 0 && slices.Contains(rep.Problems, p) {
			continue
		}
		rep.Problems = append(rep.Problems, p)
	}
	// Every session reads the same listing: each place is said once.
	for _, a := range sub.Server.Ambiguities {
		switch {
		case slices.Contains(rep.Server.Ambiguities, a):
		case len(rep.Server.Ambiguities) >= report.MaxAmbiguities:
			rep.Server.AmbiguitiesOmitted++
		default:
			rep.Server.Ambiguities = append(rep.Server.Ambiguities, a)
		}
	}
	rep.Server.AmbiguitiesOmitted += sub.Server.AmbiguitiesOmitted
	rep.NotCalled = append(rep.NotCalled, sub.NotCalled...)
	// A bound hit in any session fails the whole report's gate.
	rep.Sandbox.EventsDropped += sub.Sandbox.EventsDropped
	rep.Sandbox.EventsTruncated += sub.Sandbox.EventsTruncated
	rep.Sandbox.FilesUnhashed += sub.Sandbox.FilesUnhashed
	rep.Sandbox.DiskExceeded = rep.Sandbox.DiskExceeded || sub.Sandbox.DiskExceeded
	// A secret written to stderr in any session was written.
	if len(sub.Server.StderrDisclosed) > 0 {
		ds := append(slices.Clone(rep.Server.StderrDisclosed), sub.Server.StderrDisclosed...)
		slices.Sort(ds)
		rep.Server.StderrDisclosed = slices.Compact(ds)
	}
	if rep.Timing == nil {
		rep.Timing = &report.Timing{}
	}
	if sub.Timing != nil {
		rep.Timing.Calls = append(rep.Timing.Calls, sub.Timing.Calls...)
		rep.Timing.DiskPeakBytes = max(rep.Timing.DiskPeakBytes, sub.Timing.DiskPeakBytes)
	}
}
