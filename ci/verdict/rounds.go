package verdict

import (
	"slices"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// FinishRounds gives the verdict on the reports of several rounds of one
// scan (--rounds N, in round order) and returns it as one report: the
// first round's, with every round's problems (each with its round) and
// the findings of all rounds merged by fingerprint.
//
// Each round's observations give its findings (rules and contract, as
// Finish's steps 1 and 2). A finding is shown as the first round that saw
// its fingerprint saw it (its call, message and evidence, all findings of
// that round with that fingerprint) and lists every round that saw it.
// The baseline is matched against that union, so an entry is stale only
// when no round saw its finding; a baseline-stale finding is a verdict on
// all rounds. The policy then applies once, and findings that share a
// fingerprint after it (a path ignore can trim two apart evidence lists
// to one) share the union of their rounds. The gate thus acts on a
// finding that any round saw.
//
// With one report, FinishRounds is Finish. The result is the first
// report, changed (its problems become every round's, so unlike Finish it
// is not to be called twice on the same reports); the others are left as
// they were.
func FinishRounds(reps []*report.Report, cfg Config) *report.Report {
	base := reps[0]
	if len(reps) == 1 {
		Finish(base, cfg)
		return base
	}
	var merged []report.Finding
	roundsOf := map[string][]int{} // fingerprint before the policy: rounds
	firstRound := map[string]int{}
	var problems []report.Problem
	complete := true
	for i, rep := range reps {
		round := i + 1
		complete = complete && rep.Complete
		for _, p := range rep.Problems {
			p.Round = round
			problems = append(problems, p)
		}
		saw := map[string]bool{}
		for _, f := range observe(rep, cfg) {
			fp := report.Fingerprint(f)
			if !saw[fp] {
				saw[fp] = true
				roundsOf[fp] = append(roundsOf[fp], round)
			}
			if first, ok := firstRound[fp]; ok && first != round {
				continue // an earlier round showed it
			}
			firstRound[fp] = round
			merged = append(merged, f)
		}
	}
	for i := range merged {
		merged[i].Rounds = slices.Clone(roundsOf[report.Fingerprint(merged[i])])
	}
	base.Problems = problems
	if base.Problems == nil {
		base.Problems = []report.Problem{}
	}
	base.Complete = complete
	base.Rounds = &report.Rounds{Run: len(reps), Unstable: []string{}}
	conclude(base, merged, cfg)
	return base
}

// unionRounds gives each finding the union of the rounds of every finding
// with its fingerprint; a finding with none (baseline-stale, made from the
// union of all rounds) gets all n. Of findings the policy made one
// fingerprint, those of the earliest round are kept, as before it. It
// returns the findings kept.
func unionRounds(fs []report.Finding, n int) []report.Finding {
	all := make([]int, n)
	for i := range all {
		all[i] = i + 1
	}
	byFP := map[string][]int{}
	shown := map[string]int{} // the round whose findings show a fingerprint
	for i := range fs {
		if len(fs[i].Rounds) == 0 {
			fs[i].Rounds = all
		}
		fp := fs[i].Fingerprint
		byFP[fp] = append(byFP[fp], fs[i].Rounds...)
		if r, ok := shown[fp]; !ok || fs[i].Rounds[0] < r {
			shown[fp] = fs[i].Rounds[0]
		}
	}
	kept := fs[:0]
	for _, f := range fs {
		if f.Rounds[0] != shown[f.Fingerprint] {
			continue
		}
		rs := slices.Clone(byFP[f.Fingerprint])
		slices.Sort(rs)
		f.Rounds = slices.Compact(rs)
		kept = append(kept, f)
	}
	return kept
}
