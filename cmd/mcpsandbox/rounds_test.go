package main

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestRoundsOfADeterministicServer scans the fixture with --rounds 2: each
// finding lists both rounds, none is unstable, and with the rounds taken
// out the report is the one --rounds 1 gives, byte for byte outside
// timing. (A server that differs between rounds is ci/gate's
// TestRoundsFlakyServer: the rounds' commands and starting states are the
// same, so only a test that reaches into the engine can make one round
// lie; a lie drawn from the clock would make this test flaky.)
func TestRoundsOfADeterministicServer(t *testing.T) {
	t.Parallel()
	flags := []string{"--bait-seed", "7"}
	code, b, stderr := scanFixture(t, append(flags, "--rounds", "2"), "honest", "liar", "flaky")
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	two, twoRaw := decode(t, b), b
	if two.Rounds == nil || two.Rounds.Run != 2 || len(two.Rounds.Unstable) != 0 || two.Summary.Unstable != 0 {
		t.Fatalf("rounds %+v, summary %+v: want 2 run, none unstable; problems %+v; report %s", two.Rounds, two.Summary, two.Problems, b)
	}
	if len(two.Findings) == 0 {
		t.Fatal("no findings from the liar")
	}
	for _, f := range two.Findings {
		if !slices.Equal(f.Rounds, []int{1, 2}) {
			t.Errorf("%s on %s seen in rounds %v, want [1 2]", f.Rule, f.Tool, f.Rounds)
		}
	}
	for i := range two.Findings {
		two.Findings[i].Rounds = nil
	}
	for i := range two.Problems {
		if two.Problems[i].Round < 1 || two.Problems[i].Round > 2 {
			t.Errorf("problem without its round: %+v", two.Problems[i])
		}
		two.Problems[i].Round = 0
	}
	two.Rounds, two.Timing = nil, nil

	code, b, stderr = scanFixture(t, flags, "honest", "liar", "flaky")
	if code != 1 {
		t.Fatalf("--rounds 1: exit %d, want 1; %s", code, stderr)
	}
	if bytes.Contains(b, []byte(`"round`)) || bytes.Contains(b, []byte(`"unstable"`)) {
		t.Error("a report of one round names rounds")
	}
	one := decode(t, b)
	one.Timing = nil
	var w1, w2 bytes.Buffer
	if err := report.WriteJSON(&w1, &one); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&w2, &two); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w1.Bytes(), w2.Bytes()) {
		// Both whole, with the servers' stderr tails: the one failure seen
		// (1 in about 400 runs, idle) was a list_workspace call with no
		// answer within --call-timeout, the next calls answered (#31).
		t.Errorf("--rounds 2 without its rounds differs from --rounds 1:\n%s\n--rounds 1 report:\n%s\n--rounds 2 report:\n%s",
			lineDiff(w1.Bytes(), w2.Bytes()), b, twoRaw)
	}
}

func TestRoundsFlag(t *testing.T) {
	for _, n := range []string{"0", "-1", "101"} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"scan", "--rounds", n, "--", "/bin/true"}, &stdout, &stderr)
		if code := exitCode(err, &stderr); code != 2 {
			t.Errorf("--rounds %s: exit %d, want 2; %s", n, code, stderr.String())
		}
	}
}
