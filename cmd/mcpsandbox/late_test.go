package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// lateScan scans the late-hostile fixture with probes and flags, and
// wants exit 1.
func lateScan(t *testing.T, tools []string, probes string, flags ...string) report.Report {
	t.Helper()
	dir := t.TempDir()
	code, b, stderr := scanFixture(t, append([]string{"--no-replay=false", "--probes", writeFile(t, dir, "p.json", probes)}, flags...), tools...)
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	return decode(t, b)
}

func findingsOf(r report.Report, rule string) []report.Finding {
	var out []report.Finding
	for _, f := range r.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

// TestLateWritesArePinnedByReplay: a read-only tool whose timer (1 s,
// 3 s), thread or detached child writes after the call returned is seen
// within the linger window, and replaying the call pins the write on it:
// a readonly-writes error on that tool, the gate fails.
func TestLateWritesArePinnedByReplay(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ tool, probes, linger string }{
		"timer 1s":       {"timer_write", `[{"tool":"timer_write","arguments":{"ms":1000,"name":"t1.txt"}}]`, "1500ms"},
		"timer 3s":       {"timer_write", `[{"tool":"timer_write","arguments":{"ms":3000,"name":"t3.txt"}}]`, "3500ms"},
		"thread":         {"thread_write", `[{"tool":"thread_write","arguments":{"ms":500,"name":"th.txt"}}]`, "1s"},
		"detached child": {"detach_write", `[{"tool":"detach_write","arguments":{"ms":2500,"name":"ch.txt"}}]`, "3500ms"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := lateScan(t, []string{tc.tool}, tc.probes, "--linger", tc.linger, "--settle", "200ms")
			fs := findingsOf(r, "readonly-writes")
			if len(fs) != 1 || fs[0].Tool == "" || fs[0].Call != 1 || !strings.HasPrefix(fs[0].Evidence[0], "created /workspace/") {
				t.Fatalf("readonly-writes %+v; all %+v; problems %+v", fs, r.Findings, r.Problems)
			}
			if c := r.Calls[0]; c.Replay == nil || c.Replay.Status != "replayed" || len(c.Replay.Reproduced) == 0 {
				t.Errorf("replay %+v", c.Replay)
			}
		})
	}
}

// TestATimerFromALandingInBIsNotBs: a read-only tool A arms a timer that
// writes while tool B runs (as B begins, or 1 s after A where B is not
// called: the replay's control). The write is not B's (replaying B after A
// with and without B shows it either way): B gets no finding; a
// server-level readonly-writes finding names A (and B, when B claims to
// be read-only too) as the candidates, and fails the gate. B's own note
// (when B is additive) is B's and no finding.
func TestATimerFromALandingInBIsNotBs(t *testing.T) {
	t.Parallel()
	for _, b := range []string{"slow_note", "slow_read"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			r := lateScan(t, []string{"timer_write", b}, `[{"tool":"timer_write","arguments":{"ms":1000,"name":"a.txt","next":true}},{"tool":"`+b+`","arguments":{"ms":2000,"name":"b"}}]`,
				"--settle", "200ms")
			for _, f := range r.Findings {
				if f.Tool != "" {
					t.Errorf("a finding pinned on a tool: %+v", f)
				}
			}
			fs := findingsOf(r, "readonly-writes")
			if len(fs) != 1 || fs[0].Severity != report.SeverityError || fs[0].Evidence[0] != "created /workspace/a.txt" || !strings.Contains(fs[0].Message, "seen during call 2 ") ||
				!strings.Contains(fs[0].Message, `call 1 ("timer_write")`) {
				t.Fatalf("readonly-writes %+v; all %+v", fs, r.Findings)
			}
			if strings.Contains(fs[0].Message, `break: call 1 ("timer_write"), call 2 ("slow_read")`) != (b == "slow_read") {
				t.Errorf("candidates in %q", fs[0].Message)
			}
			rp := r.Calls[1].Replay
			if rp == nil || rp.Status != "replayed" || len(rp.Candidates) != 2 {
				t.Fatalf("replay %+v", rp)
			}
			if want := b == "slow_note"; want != (len(rp.Reproduced) == 1 && strings.Contains(rp.Reproduced[0], "note-b.txt")) {
				t.Errorf("reproduced %q", rp.Reproduced)
			}
		})
	}
}

// TestNoReplaySaysSo: with --no-replay the write lands on the call it was
// seen in, and the report says replay is off.
func TestNoReplaySaysSo(t *testing.T) {
	t.Parallel()
	r := lateScan(t, []string{"timer_write", "slow_read"}, `[{"tool":"timer_write","arguments":{"ms":1000,"name":"a.txt","next":true}},{"tool":"slow_read","arguments":{"ms":2000}}]`,
		"--settle", "200ms", "--no-replay")
	if r.Sandbox.Replay != "off" || r.Calls[1].Replay != nil {
		t.Fatalf("replay %q, %+v", r.Sandbox.Replay, r.Calls[1].Replay)
	}
	if fs := findingsOf(r, "readonly-writes"); len(fs) != 1 || fs[0].Tool != "slow_read" {
		t.Errorf("readonly-writes %+v", fs)
	}
}

// TestLateWritesPastTheLinger: with the agent's quiet readings the linger
// is held open, past --linger and up to --linger-max, while what a call
// set off can still act: a timer, a thread, a detached child, an alarm
// (which /proc does not show: the tracer records it), a spin that write after
// --linger are seen and pinned on their call by the replay. (The windows
// are small here; by default --linger is 3 s and --linger-max 30 s.)
func TestLateWritesPastTheLinger(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ tool, args string }{
		"timer":          {"timer_write", `{"ms":1500,"name":"t.txt"}`},
		"thread":         {"thread_write", `{"ms":1500,"name":"th.txt"}`},
		"detached child": {"detach_write", `{"ms":1500,"name":"ch.txt"}`},
		"alarm":          {"alarm_write", `{"ms":1000,"name":"al.txt"}`},
		"spin":           {"spin_write", `{"ms":1500,"name":"sp.txt"}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := lateScan(t, []string{tc.tool}, `[{"tool":"`+tc.tool+`","arguments":`+tc.args+`}]`, "--linger", "200ms", "--linger-max", "5s", "--settle", "200ms")
			fs := findingsOf(r, "readonly-writes")
			if len(fs) != 1 || fs[0].Tool != tc.tool || fs[0].Call != 1 || !strings.HasPrefix(fs[0].Evidence[0], "created /workspace/") {
				t.Fatalf("readonly-writes %+v; all %+v; problems %+v", fs, r.Findings, r.Problems)
			}
			if c := r.Calls[0]; c.Replay == nil || c.Replay.Status != "replayed" || len(c.Replay.Reproduced) == 0 {
				t.Errorf("replay %+v", c.Replay)
			}
			if fs := findingsOf(r, "linger-bound"); len(fs) != 0 {
				t.Errorf("linger-bound %+v", fs)
			}
			if r.Sandbox.LingerMs != 200 || r.Sandbox.LingerMaxMs != 5000 {
				t.Errorf("lingerMs %d lingerMaxMs %d", r.Sandbox.LingerMs, r.Sandbox.LingerMaxMs)
			}
		})
	}
}

// TestAHeartbeatHoldsNoLinger: an honest tool whose timer re-arms (a
// ticker, as V8 re-arms its memory reducer) holds the linger until it
// first fires, not to --linger-max: no linger-bound, no finding, and the
// linger ends for that (the -v log's reason), not at its cap.
func TestAHeartbeatHoldsNoLinger(t *testing.T) {
	t.Parallel()
	code, b, stderr := scanFixture(t, []string{"--no-replay=false", "--probes", writeFile(t, t.TempDir(), "p.json", `[{"tool":"heartbeat","arguments":{"ms":300}}]`),
		"--linger", "200ms", "--linger-max", "20s", "--settle", "200ms", "-v"}, "heartbeat")
	if !strings.Contains(stderr, "linger after call 1: ") || strings.Contains(stderr, ", at the cap") {
		t.Errorf("the linger's end, in the log: %s", stderr)
	}
	r := decode(t, b)
	if code != 0 || len(r.Findings) != 0 {
		t.Logf("exit %d; %s", code, stderr)
		t.Fatalf("findings %+v; problems %+v", r.Findings, r.Problems)
	}
	for _, p := range r.Problems {
		if p.Kind == report.ProblemLingerBound {
			t.Errorf("problem %+v", p)
		}
	}
}

// TestLingerBoundIsSaid: what a call set off that is still pending when
// the linger reaches --linger-max is said, never a silent end of the
// window: a setitimer whose time the agent cannot trust is a linger-bound
// problem and an error finding that fails the gate. An event loop's timer
// due only past the cap (a 60 s timer) is the limit docs/gate.md states:
// not reported, and the linger does not wait for it.
func TestLingerBoundIsSaid(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		tool, args, rule, says string
		sev                    report.Severity
		exit                   int
	}{
		"timer past the cap": {"timer_write", `{"ms":60000,"name":"late.txt"}`, "", "", 0, 0},
		"setitimer":          {"alarm_write", `{"ms":60000,"name":"late.txt","itimer":true}`, "linger-bound", "itimer in setitimer", report.SeverityError, 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, b, stderr := scanFixture(t, []string{"--no-replay=false", "--probes", writeFile(t, t.TempDir(), "p.json", `[{"tool":"`+tc.tool+`","arguments":`+tc.args+`}]`),
				"--linger", "200ms", "--linger-max", "2s", "--settle", "200ms"}, tc.tool)
			r := decode(t, b)
			if code != tc.exit {
				t.Errorf("exit %d, want %d; %s", code, tc.exit, stderr)
			}
			if tc.rule == "" {
				if len(r.Findings) != 0 || len(r.Problems) != 0 {
					t.Errorf("findings %+v; problems %+v", r.Findings, r.Problems)
				}
				return
			}
			fs := findingsOf(r, tc.rule)
			if len(fs) != 1 || fs[0].Severity != tc.sev || fs[0].Tool != "" {
				t.Fatalf("%s %+v; all %+v", tc.rule, fs, r.Findings)
			}
			var ps []report.Problem
			for _, p := range r.Problems {
				if p.Kind == tc.rule {
					ps = append(ps, p)
				}
			}
			if len(ps) != 1 || ps[0].Call != 1 || !strings.Contains(ps[0].Message, tc.says) || !strings.Contains(ps[0].Message, "--linger-max 2s") {
				t.Errorf("problems %+v", r.Problems)
			}
			if len(findingsOf(r, "readonly-writes")) != 0 {
				t.Errorf("a write was seen: %+v", r.Findings)
			}
		})
	}
}

// TestALegHeldOpenHoldsItsControl: a server that tells a replay's leg
// from the scan (leg_arm's write lands in the next call in the scan, 2.5
// s after its answer in a leg) and holds the replay of the next call open
// with a spin (leg_busy_note, in a leg only): the control watches as long
// as the replay did, sees the write too, and it is pinned on no call: a
// server-level readonly-writes naming leg_arm, the gate fails, nothing on
// leg_busy_note. Found by a review of the legs' horizon, where the
// control stopped at its own.
func TestALegHeldOpenHoldsItsControl(t *testing.T) {
	t.Parallel()
	r := lateScan(t, []string{"leg_arm", "leg_busy_note", "slow_read"},
		`[{"tool":"leg_arm","arguments":{"ms":2500,"name":"a.txt"}},{"tool":"leg_busy_note","arguments":{"ms":5000,"name":"b"}},{"tool":"slow_read","arguments":{}}]`)
	for _, f := range r.Findings {
		if f.Tool == "leg_busy_note" {
			t.Errorf("a finding on leg_busy_note: %+v", f)
		}
	}
	fs := findingsOf(r, "readonly-writes")
	if len(fs) != 1 || fs[0].Evidence[0] != "created /workspace/a.txt" || !strings.Contains(fs[0].Message, `call 1 ("leg_arm")`) {
		t.Fatalf("readonly-writes %+v; all %+v", fs, r.Findings)
	}
	if rp := r.Calls[1].Replay; rp == nil || rp.Status != "replayed" || slices.Contains(rp.Reproduced, "file created /workspace/a.txt") {
		t.Errorf("replay of call 2 %+v: the write reproduced", rp)
	}
}

// TestABusyReplayAtTheCapIsSaid: a replay held by a task that still runs
// at --linger-max (leg_busy_note spins in a replay only, 10 s against a
// 2 s cap) is a bound hit like the scan's own linger's: a linger-bound
// problem on the replayed call, and the linger-bound rule fails the gate.
func TestABusyReplayAtTheCapIsSaid(t *testing.T) {
	t.Parallel()
	r := lateScan(t, []string{"leg_arm", "leg_busy_note", "slow_read"},
		`[{"tool":"leg_arm","arguments":{"ms":2500,"name":"a.txt"}},{"tool":"leg_busy_note","arguments":{"ms":10000,"name":"b"}},{"tool":"slow_read","arguments":{}}]`,
		"--linger-max", "2s")
	if !slices.ContainsFunc(r.Problems, func(p report.Problem) bool {
		return p.Kind == report.ProblemLingerBound && p.Call == 2 && strings.Contains(p.Message, "replaying call 2")
	}) {
		t.Errorf("no linger-bound problem on call 2's replay: %+v", r.Problems)
	}
	if fs := findingsOf(r, "linger-bound"); len(fs) != 1 || fs[0].Severity != report.SeverityError {
		t.Errorf("linger-bound %+v; all %+v", fs, r.Findings)
	}
}
