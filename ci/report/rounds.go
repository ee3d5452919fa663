package report

import (
	"fmt"
	"strconv"
	"strings"
)

// RoundsNote says, for the text formats, which rounds saw a finding that
// not every round of r saw: " (rounds 1,3 of 3)"; "" for one seen by all,
// or a report of one round.
func RoundsNote(r *Report, f Finding) string {
	if r.Rounds == nil || len(f.Rounds) >= r.Rounds.Run {
		return ""
	}
	seen := make([]string, len(f.Rounds))
	for i, n := range f.Rounds {
		seen[i] = strconv.Itoa(n)
	}
	word := "rounds"
	if len(seen) == 1 {
		word = "round"
	}
	return fmt.Sprintf(" (%s %s of %d)", word, strings.Join(seen, ","), r.Rounds.Run)
}

// roundRef names a problem's round, in a report of several: " (round 2)".
func roundRef(p Problem) string {
	if p.Round == 0 {
		return ""
	}
	return fmt.Sprintf(" (round %d)", p.Round)
}
