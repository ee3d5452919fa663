package report_test

import (
	"slices"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestCandidatesLateCalls: with call isolation, a late tool's calls were
// made in the session of the call before them.
func TestCandidatesLateCalls(t *testing.T) {
	r := report.New()
	r.Sandbox.Isolation = "call"
	r.Calls = []report.Call{{Seq: 1, Tool: "a"}, {Seq: 2, Tool: "b"}, {Seq: 3, Tool: "late", Late: true}, {Seq: 4, Tool: "late", Source: "repeat", Late: true}, {Seq: 5, Tool: "c"}}
	for i, want := range [][]int{{1}, {2}, {2, 3}, {2, 3, 4}, {5}} {
		if got := report.Candidates(r, i); !slices.Equal(got, want) {
			t.Errorf("Candidates(%d) = %v, want %v", i, got, want)
		}
	}
}
