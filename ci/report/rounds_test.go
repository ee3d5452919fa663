package report

import "testing"

// roundsReport is a report of three rounds: one finding every round saw,
// one round 2 alone saw, a problem of round 3.
func roundsReport() *Report {
	r := New()
	r.Rounds = &Rounds{Run: 3}
	r.Findings = []Finding{
		{Rule: "readonly-writes", Severity: SeverityError, Tool: "a", Call: 1, Message: "m", Evidence: []string{"created /tmp/a"}, Rounds: []int{1, 2, 3}},
		{Rule: "readonly-writes", Severity: SeverityError, Tool: "b", Call: 2, Message: "m", Evidence: []string{"created /tmp/b"}, Rounds: []int{2}},
	}
	for i := range r.Findings {
		r.Findings[i].Fingerprint = Fingerprint(r.Findings[i])
	}
	r.Problems = []Problem{{Kind: "timeout", Call: 2, Message: "call 2 timed out", Round: 3}}
	r.Finish()
	return r
}

func TestRoundsInSummary(t *testing.T) {
	r := roundsReport()
	if r.Summary.Unstable != 1 || len(r.Rounds.Unstable) != 1 || r.Rounds.Unstable[0] != r.Findings[1].Fingerprint {
		t.Errorf("summary %+v, rounds %+v: want b's finding alone unstable", r.Summary, r.Rounds)
	}
	if got := RoundsNote(r, r.Findings[0]); got != "" {
		t.Errorf("a finding of every round noted %q", got)
	}
	if got, want := RoundsNote(r, r.Findings[1]), " (round 2 of 3)"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	r.Findings[1].Rounds = []int{1, 3}
	if got, want := RoundsNote(r, r.Findings[1]), " (rounds 1,3 of 3)"; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
}
