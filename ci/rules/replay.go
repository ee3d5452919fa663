package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Replays. An effect seen during a call is that call's only when replaying
// the call reproduced it (report.Replay); one it did not is pinned on no
// call: for each rule that one of the calls that could have caused it
// (its candidates) breaks, a server-level finding names them, at the
// rule's severity, so that a late write by a read-only tool fails the
// gate even when the write cannot be pinned on it.

// Suspects are the calls worth replaying in r: those whose effects (with
// the "between" phase after them) raise a finding for their own tool or
// for any earlier call of their session, as the rules stand without a
// replay. A scan with no such call replays nothing.
func Suspects(r *report.Report, opts Options) []int {
	tools := toolMap(r)
	after := afterCalls(r)
	sc, owned := newScratch(r), ownedSet(r)
	var out []int
	for i, c := range r.Calls {
		if c.Source == "boundary" {
			continue // judged by the boundary rules, on what the call did
		}
		effs := append([]report.Effects{c.Effects}, after[c.Seq]...)
		e := &evaluator{opts: opts, scratch: sc}
		e.call(r, i, c, tools[c.Tool], effs, true)
		for _, k := range report.Candidates(r, i) {
			cand := r.Calls[slices.IndexFunc(r.Calls, func(x report.Call) bool { return x.Seq == k })]
			e.call(r, i, stand(c, cand, effs), tools[cand.Tool], effs, false)
		}
		// The server's own effects (see ServerOwned) are no call's: they
		// make no call a suspect.
		if slices.ContainsFunc(e.fold(owned, e.out), func(f report.Finding) bool { return f.Tool != "" }) {
			out = append(out, c.Seq)
		}
	}
	return out
}

// stand is c as cand would have made it: cand's tool and arguments, c's
// place and the effects given.
func stand(c, cand report.Call, effs []report.Effects) report.Call {
	s := c
	s.Tool, s.Arguments, s.Negative, s.Effects = cand.Tool, cand.Arguments, "", effs[0]
	return s
}

func toolMap(r *report.Report) map[string]report.Tool {
	tools := map[string]report.Tool{}
	for _, t := range r.Tools {
		tools[t.Name] = t
	}
	return tools
}

// replayed judges a replayed call: what the replay reproduced by its
// hints, the rest as effects of no call.
func (e *evaluator) replayed(r *report.Report, i int, c report.Call, tools map[string]report.Tool, effs []report.Effects) {
	keep := map[string]bool{}
	for _, k := range c.Replay.Reproduced {
		keep[k] = true
	}
	mine, rest := splitEffects(effs, keep)
	own := c
	own.Effects = mine[0]
	e.call(r, i, own, tools[c.Tool], mine, true)
	if empty(rest) {
		return
	}
	type found struct {
		f     report.Finding
		calls []string
	}
	byRule := map[string]*found{}
	var order []string
	for _, k := range c.Replay.Candidates {
		j := slices.IndexFunc(r.Calls, func(x report.Call) bool { return x.Seq == k })
		if j < 0 {
			continue
		}
		cand := r.Calls[j]
		sub := &evaluator{opts: e.opts, isolation: e.isolation, scratch: e.scratch}
		sub.call(r, i, stand(c, cand, rest), tools[cand.Tool], rest, false)
		for _, f := range sub.out {
			fd := byRule[f.Rule]
			if fd == nil {
				fd = &found{f: report.Finding{Rule: f.Rule, Severity: f.Severity, Isolation: e.isolation}}
				byRule[f.Rule] = fd
				order = append(order, f.Rule)
			}
			fd.f.Severity = max(fd.f.Severity, f.Severity)
			fd.calls = append(fd.calls, fmt.Sprintf("call %d (%s)", cand.Seq, quote(cand.Tool)))
			for x, ev := range f.Evidence {
				item := fmt.Sprintf("during call %d (%s): %s", c.Seq, c.Tool, ev)
				if !slices.Contains(fd.f.Evidence, item) {
					fd.f.Evidence = append(fd.f.Evidence, item)
					fd.f.EvidencePaths = append(fd.f.EvidencePaths, f.EvidencePaths[x])
				}
			}
		}
	}
	for _, rule := range order {
		fd := byRule[rule]
		rl, _ := ByID(rule)
		calls := slices.Compact(fd.calls)
		fd.f.Message = fmt.Sprintf("%d effect(s) during call %d (%s) that replaying the call did not reproduce, so no call is pinned with them; the calls that could have caused them and whose claims they break: %s. %s",
			len(fd.f.Evidence), c.Seq, quote(c.Tool), strings.Join(calls, ", "), rl.Rationale)
		e.out = append(e.out, fd.f)
	}
}

// splitEffects parts effs into what keep names and the rest.
func splitEffects(effs []report.Effects, keep map[string]bool) (in, out []report.Effects) {
	for _, ef := range effs {
		a, b := report.NewEffects(), report.NewEffects()
		a.FilesOmitted, a.FilesTruncated = ef.FilesOmitted, ef.FilesTruncated
		for _, f := range ef.Files {
			if keep[f.Key()] {
				a.Files = append(a.Files, f)
			} else {
				b.Files = append(b.Files, f)
			}
		}
		for _, p := range ef.Processes {
			if keep[p.Key()] {
				a.Processes = append(a.Processes, p)
			} else {
				b.Processes = append(b.Processes, p)
			}
		}
		for _, n := range ef.Network {
			if keep[n.Key()] {
				a.Network = append(a.Network, n)
			} else {
				b.Network = append(b.Network, n)
			}
		}
		in, out = append(in, a), append(out, b)
	}
	return in, out
}

func empty(effs []report.Effects) bool {
	for _, ef := range effs {
		if len(ef.Files)+len(ef.Processes)+len(ef.Network) > 0 {
			return false
		}
	}
	return true
}
