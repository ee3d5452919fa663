package verdict_test

import (
	"bytes"
	"reflect"
	"slices"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/baseline"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
)

// round is scan(tmp) with a fifth tool, "peek", read-only; it writes a
// file when peekWrites (the lie one round tells), and fetch also asks for
// leak.example when leaks (evidence that differs from round to round).
func round(tmp string, peekWrites, leaks bool) *report.Report {
	r := scan(tmp)
	r.Tools = append(r.Tools, tool("peek", report.Hints{ReadOnly: yes()}))
	peek := report.NewEffects()
	if peekWrites {
		peek.Files = []report.FileChange{{Path: "/workspace/peeked", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}}
	}
	r.Calls = append(r.Calls, report.Call{Seq: 5, Tool: "peek", Arguments: []byte(`{}`), Source: "empty", Effects: peek})
	if leaks {
		r.Calls[1].Effects.Network = append(r.Calls[1].Effects.Network, report.NetEvent{Kind: "dns", Host: "leak.example", Result: "nxdomain"})
	}
	return r
}

// roundsOf renders findings as "rule tool call rounds".
func roundsOf(r *report.Report) []string {
	out := []string{}
	for _, f := range r.Findings {
		out = append(out, f.Rule+" "+f.Tool+" "+itoa(f.Call)+" "+ints(f.Rounds))
	}
	return out
}

func itoa(i int) string { return string(rune('0' + i)) }

func ints(xs []int) string {
	s := "["
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += itoa(x)
	}
	return s + "]"
}

func fingerprintsOf(r *report.Report, tool string) []string {
	var out []string
	for _, f := range r.Findings {
		if f.Tool == tool {
			out = append(out, f.Fingerprint)
		}
	}
	return out
}

// TestFinishRoundsMerges merges three rounds: what every round saw lists
// them all, peek's lie of round 2 only is shown as round 2 saw it, fetch's
// two kinds of evidence are two findings, and all three of those are
// unstable. Problems keep their round; a partial round makes the report
// partial.
func TestFinishRoundsMerges(t *testing.T) {
	r1, r2, r3 := round("1", false, false), round("22", true, true), round("333", false, false)
	r1.Problems = []report.Problem{{Kind: "timeout", Call: 3, Message: "call 3 timed out"}}
	r3.Problems = []report.Problem{{Kind: "run-timeout", Message: "the run timed out"}}
	r3.Complete = false
	before := mustJSON(t, r2)
	rep := verdict.FinishRounds([]*report.Report{r1, r2, r3}, verdict.Config{})
	if rep != r1 {
		t.Fatal("the merged report is not the first round's")
	}
	if after := mustJSON(t, r2); !bytes.Equal(before, after) {
		t.Error("the merge changed round 2's report")
	}
	want := []string{
		"readonly-writes save 1 [1,2,3]",
		"writes-outside-workspace save 1 [1,2,3]",
		"closed-world-network fetch 2 [1,3]",
		"closed-world-network fetch 2 [2]",
		"writes-outside-workspace legacy 3 [1,2,3]",
		"readonly-writes peek 5 [2]",
	}
	if got := roundsOf(rep); !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
	for _, f := range rep.Findings {
		if f.Tool == "peek" && !slices.Equal(f.Evidence, []string{"created /workspace/peeked"}) {
			t.Errorf("peek's evidence is not round 2's: %q", f.Evidence)
		}
	}
	unstable := append(fingerprintsOf(rep, "fetch"), fingerprintsOf(rep, "peek")...)
	slices.Sort(unstable)
	if rep.Rounds == nil || rep.Rounds.Run != 3 || !slices.Equal(rep.Rounds.Unstable, unstable) {
		t.Errorf("rounds %+v, want run 3, unstable %q", rep.Rounds, unstable)
	}
	if rep.Summary.Unstable != 3 || rep.Summary.Findings != 6 {
		t.Errorf("summary %+v, want 6 findings, 3 unstable", rep.Summary)
	}
	wantProblems := []report.Problem{
		{Kind: "timeout", Call: 3, Message: "call 3 timed out", Round: 1},
		{Kind: "run-timeout", Message: "the run timed out", Round: 3},
	}
	if !reflect.DeepEqual(rep.Problems, wantProblems) {
		t.Errorf("problems %+v, want %+v", rep.Problems, wantProblems)
	}
	if rep.Complete {
		t.Error("complete, though round 3 was not")
	}
}

// TestFinishRoundsGateFailsOnAnyRound: a server that lies one round in
// three fails the gate, though its first round alone would pass.
func TestFinishRoundsGateFailsOnAnyRound(t *testing.T) {
	quiet := func(peekWrites bool) *report.Report {
		r := report.New()
		r.Complete = true
		r.Sandbox = report.Sandbox{Network: "none", Isolation: "session", Agent: true}
		r.Tools = []report.Tool{tool("peek", report.Hints{ReadOnly: yes()})}
		e := report.NewEffects()
		if peekWrites {
			e.Files = []report.FileChange{{Path: "/workspace/peeked", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}}
		}
		r.Calls = []report.Call{{Seq: 1, Tool: "peek", Arguments: []byte(`{}`), Source: "empty", Effects: e}}
		return r
	}
	failOn := verdict.FailOn{Severity: report.SeverityError}
	alone := quiet(false)
	verdict.Finish(alone, verdict.Config{})
	if verdict.Fails(alone, failOn) {
		t.Fatalf("round 1 alone fails: %q", brief(alone))
	}
	rep := verdict.FinishRounds([]*report.Report{quiet(false), quiet(true), quiet(false)}, verdict.Config{})
	if !verdict.Fails(rep, failOn) {
		t.Errorf("the gate passes a lie of round 2: %q", roundsOf(rep))
	}
	if got, want := roundsOf(rep), []string{"readonly-writes peek 1 [2]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
}

// TestFinishRoundsBaseline: the baseline is matched against the union of
// the rounds, so an entry some round saw is not stale (though the first
// round alone would call it so), and one no round saw is, in every round.
func TestFinishRoundsBaseline(t *testing.T) {
	seen := round("1", true, false)
	verdict.Finish(seen, verdict.Config{})
	base := baseline.FromReport(seen)
	base.Findings = append(base.Findings, baseline.Entry{Rule: rules.ReadonlyWrites, Tool: "fixed", Evidence: []string{"created /workspace/old"}})
	cfg := verdict.Config{Baseline: &base}

	alone := round("1", false, false)
	verdict.Finish(alone, cfg)
	if got := brief(alone); !slices.Contains(got, "baseline-stale peek error") {
		t.Fatalf("round 1 alone does not find peek's entry stale: %q", got)
	}

	rep := verdict.FinishRounds([]*report.Report{round("1", false, false), round("2", true, false), round("3", false, false)}, cfg)
	var stale []string
	for _, f := range rep.Findings {
		switch {
		case f.Rule == rules.BaselineStale:
			stale = append(stale, f.Tool+" "+ints(f.Rounds))
		case !f.Baselined:
			t.Errorf("%s on %s not baselined", f.Rule, f.Tool)
		}
	}
	if want := []string{"fixed [1,2,3]"}; !slices.Equal(stale, want) {
		t.Errorf("stale %q, want %q", stale, want)
	}
	if rep.Summary.Unstable != 1 { // peek's write, baselined
		t.Errorf("unstable %d, want 1", rep.Summary.Unstable)
	}
	if verdict.Fails(rep, verdict.FailOn{Severity: report.SeverityWarning}) != true {
		t.Error("the stale entry does not fail the gate")
	}
}

// TestFinishRoundsOneIsFinish: one round gives Finish's report byte for
// byte, with no rounds anywhere.
func TestFinishRoundsOneIsFinish(t *testing.T) {
	want := round("1", true, true)
	verdict.Finish(want, verdict.Config{})
	got := verdict.FinishRounds([]*report.Report{round("1", true, true)}, verdict.Config{})
	g, w := mustJSON(t, got), mustJSON(t, want)
	if !bytes.Equal(g, w) {
		t.Errorf("one round differs from Finish:\n%s\n%s", g, w)
	}
	if bytes.Contains(g, []byte(`"round`)) || bytes.Contains(g, []byte(`"unstable"`)) {
		t.Errorf("one round's report names rounds:\n%s", g)
	}
}

// TestFinishRoundsDeterministic: the same rounds give the same bytes, and
// a round whose run-specific names differ changes nothing but them.
func TestFinishRoundsDeterministic(t *testing.T) {
	rounds := func() []*report.Report {
		return []*report.Report{round("1", false, false), round("22", true, true), round("1", false, true)}
	}
	a, b := verdict.FinishRounds(rounds(), verdict.Config{}), verdict.FinishRounds(rounds(), verdict.Config{})
	if ja, jb := mustJSON(t, a), mustJSON(t, b); !bytes.Equal(ja, jb) {
		t.Errorf("two merges differ:\n%s\n%s", ja, jb)
	}
	// Finish is idempotent on the merged report's base: a single round
	// again, no rounds left behind.
	verdict.Finish(a, verdict.Config{})
	if a.Rounds != nil || a.Summary.Unstable != 0 {
		t.Errorf("Finish left rounds behind: %+v", a.Rounds)
	}
	for _, f := range a.Findings {
		if f.Rounds != nil {
			t.Errorf("Finish left rounds on %s", f.Rule)
		}
	}
}

// TestFinishRoundsPolicyJoins: findings whose evidence differed only by a
// path the policy ignores become one fingerprint, with the union of their
// rounds, shown once, as the first round saw it.
func TestFinishRoundsPolicyJoins(t *testing.T) {
	withNoise := func(noise string) *report.Report {
		r := round("1", false, false)
		r.Calls[2].Effects.Files = append(r.Calls[2].Effects.Files, report.FileChange{Path: "/tmp/noise/" + noise, Change: report.ChangeCreated, Type: "file", Scope: "outside", Area: "tmp"})
		return r
	}
	pol := policy(t, `ignore: {paths: ["/tmp/noise/**"]}`)
	rep := verdict.FinishRounds([]*report.Report{withNoise("a"), withNoise("b")}, verdict.Config{Policy: pol})
	var legacy []string
	for _, f := range rep.Findings {
		if f.Tool == "legacy" {
			legacy = append(legacy, f.Rule+" "+ints(f.Rounds))
		}
	}
	if want := []string{"writes-outside-workspace [1,2]"}; !slices.Equal(legacy, want) {
		t.Errorf("legacy's findings %q, want %q", legacy, want)
	}
	if rep.Summary.Unstable != 0 {
		t.Errorf("unstable %d, want 0: %q", rep.Summary.Unstable, roundsOf(rep))
	}
}
