package scan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestReplayFailureBlamesNoCandidate: a replay that could not tell (a
// leg's error on the runner's side, the run's bound reached before it
// began) leaves the call without a Replay, its effects with it as seen,
// never handed to its candidates' claims, and a replay problem says so;
// one that ran records what it reproduced.
func TestReplayFailureBlamesNoCandidate(t *testing.T) {
	for name, j := range map[string]*replayJob{
		"a leg's error":       {werr: errors.New("reading the upper dir: no such file or directory")},
		"not run":             {notRun: true},
		"the control's error": {cerr: errors.New("the engine refused the container")},
	} {
		t.Run(name, func(t *testing.T) {
			rep := &report.Report{Calls: []report.Call{{Seq: 1, Tool: "closed"}, {Seq: 2, Tool: "fetch",
				Replay: &report.Replay{Status: "skipped", Reproduced: []string{}, Candidates: []int{1, 2}}}}}
			j.call, j.seq = 1, 2
			sc := &scanner{parent: context.Background()}
			if err := sc.settle(rep, j); err != nil {
				t.Fatal(err)
			}
			if rep.Calls[1].Replay != nil {
				t.Errorf("the call keeps a replay: %+v", rep.Calls[1].Replay)
			}
			if len(rep.Problems) != 1 || rep.Problems[0].Kind != "replay" || !strings.Contains(rep.Problems[0].Message, "stay with it") {
				t.Errorf("problems %+v", rep.Problems)
			}
		})
	}
	rep := &report.Report{Calls: []report.Call{{Seq: 1, Tool: "t", Replay: &report.Replay{Status: "skipped", Reproduced: []string{}, Candidates: []int{1}}}}}
	if err := (&scanner{parent: context.Background()}).settle(rep, &replayJob{call: 0, seq: 1}); err != nil || rep.Calls[0].Replay == nil || rep.Calls[0].Replay.Status != "replayed" {
		t.Errorf("a replay that ran: %+v %v", rep.Calls[0].Replay, err)
	}
}
