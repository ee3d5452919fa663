package rules

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestReplayPinsOnlyWhatItReproduced: a replayed call keeps, as its own
// findings, only the effects the replay reproduced; the rest become one
// server-level finding per rule that a candidate's claims break, naming
// the candidates.
func TestReplayPinsOnlyWhatItReproduced(t *testing.T) {
	ro := report.Tool{Name: "ro", Hints: report.Hints{ReadOnly: b(true)}}
	add := report.Tool{Name: "add", Hints: report.Hints{ReadOnly: b(false), Destructive: b(false)}}
	late := report.FileChange{Path: "/workspace/late", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}
	note := report.FileChange{Path: "/workspace/note", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}
	r := scenario(call{tool: ro}, call{tool: add, files: []report.FileChange{late, note}})
	if got := Suspects(r, Options{}); !reflect.DeepEqual(got, []int{2}) {
		t.Fatalf("suspects %v, want [2]: call 1's claims are broken by what was seen in call 2", got)
	}
	r.Calls[1].Replay = &report.Replay{Status: "replayed", Reproduced: []string{note.Key()}, Candidates: report.Candidates(r, 1)}
	fs := Evaluate(r, Options{})
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	if f.Rule != ReadonlyWrites || f.Tool != "" || f.Call != 0 || f.Severity != report.SeverityError ||
		!reflect.DeepEqual(f.Evidence, []string{"created /workspace/late"}) || !strings.Contains(f.Message, `break: call 1 ("ro").`) ||
		!strings.Contains(f.Message, "seen during call 2 ") {
		t.Errorf("finding %+v", f)
	}
	// Reproduced, the write is the call's, judged by its own claims.
	r.Calls[1].Replay.Reproduced = []string{late.Key(), note.Key()}
	if fs := Evaluate(r, Options{}); len(fs) != 0 {
		t.Errorf("an additive call's own creations: %+v", fs)
	}
	// Skipped, nothing is pinned: every effect goes to the candidates.
	r.Calls[1].Replay = &report.Replay{Status: "skipped", Reproduced: []string{}, Candidates: []int{1, 2}}
	if fs := Evaluate(r, Options{}); len(fs) != 1 || fs[0].Tool != "" || len(fs[0].Evidence) != 2 {
		t.Errorf("skipped: %+v", fs)
	}
}

// TestCandidatesFollowTheSession: with call isolation a call's candidates
// are its session's: the call and the repeats before it.
func TestCandidatesFollowTheSession(t *testing.T) {
	r := scenario(call{tool: report.Tool{Name: "a"}}, call{tool: report.Tool{Name: "b"}}, call{tool: report.Tool{Name: "b"}})
	r.Calls[2].Source = "repeat"
	if got := report.Candidates(r, 2); !reflect.DeepEqual(got, []int{1, 2, 3}) {
		t.Errorf("session: %v", got)
	}
	r.Sandbox.Isolation = "call"
	if got := report.Candidates(r, 2); !reflect.DeepEqual(got, []int{2, 3}) {
		t.Errorf("call: %v", got)
	}
	if got := report.Candidates(r, 1); !reflect.DeepEqual(got, []int{2}) {
		t.Errorf("call: %v", got)
	}
}

// TestReplayLeavesTheServersOwnToTheServer: the server's own log, which a
// replay's control session writes as well (so it is never reproduced),
// is folded into the server's finding, not pinned on no call as an effect
// "during call N"; the call's own unreproduced write still is.
func TestReplayLeavesTheServersOwnToTheServer(t *testing.T) {
	stray := report.FileChange{Path: "/tmp/stray", Change: report.ChangeCreated, Type: "file", Scope: "outside", Area: "tmp"}
	r := scenario(bookkeeping(ro1, true), bookkeeping(ro2, false, stray), bookkeeping(free, false), bookkeeping(ro1, false))
	r.Calls[1].Replay = &report.Replay{Status: "replayed", Reproduced: []string{}, Candidates: report.Candidates(r, 1)}
	var got []string
	for _, f := range Evaluate(r, Options{}) {
		got = append(got, f.Rule+" "+f.Tool+" "+strings.Join(f.Evidence, ","))
	}
	want := []string{
		"readonly-writes  changed /home/sandbox/.fixture/log,changed /home/sandbox/.fixture/counters.json",
		"writes-outside-workspace  changed /home/sandbox/.fixture/log,changed /home/sandbox/.fixture/counters.json",
		"readonly-writes  created /tmp/stray",
		"writes-outside-workspace  created /tmp/stray",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
}

// TestUnpinnedEffectsAreOneFindingPerRule: what several replays pinned on
// no call (a telemetry lookup that the control sessions made too) is one
// server-level finding per rule, whose evidence, and so fingerprint, names
// the effects and not which calls they were seen during: that is timing.
func TestUnpinnedEffectsAreOneFindingPerRule(t *testing.T) {
	closed := report.Tool{Name: "closed", Hints: report.Hints{OpenWorld: b(false)}}
	open := report.Tool{Name: "open", Hints: report.Hints{OpenWorld: b(true)}}
	dnsA := report.NetEvent{Kind: "dns", Host: "telemetry.example.net", Result: "sinkholed"}
	dnsB := report.NetEvent{Kind: "dns", Host: "fallback.example.net", Result: "sinkholed"}
	fp := func(seen ...int) (string, string) {
		var calls []call
		for i := 1; i <= 4; i++ {
			c := call{tool: open}
			if i == 1 {
				c.tool = closed
			}
			if slices.Contains(seen, i) {
				c.net = []report.NetEvent{dnsA, dnsB}
			}
			calls = append(calls, c)
		}
		r := scenario(calls...)
		for _, k := range seen {
			r.Calls[k-1].Replay = &report.Replay{Status: "replayed", Reproduced: []string{}, Candidates: report.Candidates(r, k-1)}
		}
		fs := findingsOf(Evaluate(r, Options{}), ClosedWorldNetwork)
		if len(fs) != 1 || fs[0].Tool != "" {
			t.Fatalf("seen during %v: %+v", seen, fs)
		}
		return report.Fingerprint(fs[0]), fs[0].Message
	}
	a, msgA := fp(2, 3)
	b, msgB := fp(2, 4)
	if a != b {
		t.Errorf("fingerprints differ with the calls: %s, %s", a, b)
	}
	if !strings.Contains(msgA, "seen during calls 2-3 ") || !strings.Contains(msgB, "seen during calls 2, 4 ") || !strings.Contains(msgA, `break: call 1 ("closed").`) {
		t.Errorf("messages %q, %q", msgA, msgB)
	}
}
