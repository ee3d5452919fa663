package clientverdict

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

var (
	ran   = Leg{Contacted: true, Listed: true, ModelContacted: true, Offered: true, Asked: true, Called: true, Marker: true}
	gated = Leg{Contacted: true, Listed: true, ModelContacted: true, Offered: true, Asked: true}
	// withheld: the client kept the tool from the model (a gate too).
	withheld = Leg{Contacted: true, Listed: true, ModelContacted: true}
	ok       = Check{OK: true}
)

func inputs(alpha, beta Leg) Inputs {
	return Inputs{SelfTest: ok, HeldFixed: ok, Alpha: alpha, Beta: beta}
}

func TestDecideEveryPath(t *testing.T) {
	ctl := func(in Inputs, c *Leg, why string) Inputs { in.Control, in.ControlWhy = c, why; return in }
	broken := inputs(ran, gated)
	broken.SelfTest = Check{Reason: "the ledger missed a call"}
	drift := inputs(ran, ran)
	drift.HeldFixed = Check{Reason: "the listing changed between calls"}
	missing := inputs(Leg{}, Leg{})
	missing.Missing, missing.MissingReason = NoMCPSupport, "it speaks no MCP"
	noMarker := ran
	noMarker.Marker = false
	noLedger := gated
	noLedger.Marker = true
	for _, tc := range []struct {
		name    string
		in      Inputs
		verdict Verdict
		pre     Precondition
		control Control
		backed  bool
		code    int
	}{
		{"alpha ran, beta asked and gated", inputs(ran, gated), Confirmed, "", ControlNotRun, false, 1},
		{"alpha ran, beta withheld from the model", inputs(ran, withheld), Confirmed, "", ControlNotRun, false, 1},
		{"both gated, control passed", ctl(inputs(gated, gated), &ran, ""), Refuted, "", ControlPassed, true, 0},
		{"only beta ran, control passed", ctl(inputs(gated, ran), &ran, ""), Refuted, "", ControlPassed, true, 0},
		{"both gated, control failed", ctl(inputs(gated, gated), &gated, ""), Refuted, "", ControlFailed, false, 3},
		{"both gated, no control", ctl(inputs(gated, gated), nil, "no trust setting"), Refuted, "", ControlUnavailable, false, 3},
		{"both ran", inputs(ran, ran), Skipped, NoGate, ControlNotRun, false, 3},
		{"never contacted", inputs(Leg{}, gated), Skipped, NeverContacted, ControlNotRun, false, 3},
		{"never listed", inputs(Leg{Contacted: true}, Leg{Contacted: true}), Skipped, NeverListed, ControlNotRun, false, 3},
		{"never asked the model", inputs(Leg{Contacted: true, Listed: true}, gated), Skipped, CalledNeither, ControlNotRun, false, 3},
		{"adapter precondition", missing, Skipped, NoMCPSupport, ControlNotRun, false, 3},
		{"self-test failed", broken, Errored, "", ControlNotRun, false, 2},
		{"listing drifted", drift, Errored, "", ControlNotRun, false, 2},
		{"ledger without marker", inputs(noMarker, gated), Errored, "", ControlNotRun, false, 2},
		{"marker without ledger", inputs(gated, noLedger), Errored, "", ControlNotRun, false, 2},
		{"control's witness broken", ctl(inputs(gated, gated), &noMarker, ""), Errored, "", ControlNotRun, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			if d.Verdict != tc.verdict || d.Precondition != tc.pre || d.Control != tc.control || d.Backed != tc.backed || d.ExitCode() != tc.code {
				t.Errorf("Decide = %+v (exit %d), want %v %q control %v backed %t exit %d", d, d.ExitCode(), tc.verdict, tc.pre, tc.control, tc.backed, tc.code)
			}
			if d.Reason == "" {
				t.Error("no reason")
			}
		})
	}
}

// A held-fixed failure cannot hide behind a missing precondition that a
// run found, nor the other way round: never-listed comes first (there is
// no listing to hold fixed), a drift before no-gate.
func TestDecideOrder(t *testing.T) {
	in := inputs(Leg{Contacted: true}, Leg{Contacted: true})
	in.HeldFixed = Check{Reason: "no client listed the tools"}
	if d := Decide(in); d.Precondition != NeverListed {
		t.Errorf("never listed with no listing: %+v", d)
	}
}

func TestReportFormats(t *testing.T) {
	r := &Report{Schema: Schema, Decision: Decide(inputs(ran, gated)), Client: ClientInfo{Command: []string{"client", "\x1b[31m"}, Adapter: "fixture"},
		Legs: []LegRun{{Name: "alpha", Tool: "alpha", Observed: ran, Exit: ClientExit{Stderr: "a\nb\x07\n"}}}}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "mcpsandbox client: CONFIRMED\n") || strings.ContainsAny(text.String(), "\x1b\x07") {
		t.Errorf("text:\n%q", text.String())
	}
	for _, tc := range []struct {
		d    Decision
		want string
	}{{Decide(inputs(ran, gated)), "<failure"}, {Decide(inputs(ran, ran)), "<skipped"},
		{Decision{Verdict: Errored, Reason: "x"}, "<error"}, {Decide(Inputs{SelfTest: ok, HeldFixed: ok, Alpha: gated, Beta: gated, Control: &ran}), "tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"0\""}} {
		r.Decision = tc.d
		var b bytes.Buffer
		if err := r.WriteJUnit(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%v: JUnit lacks %s:\n%s", tc.d.Verdict, tc.want, b.String())
		}
		if err := xml.Unmarshal(bytes.TrimPrefix(b.Bytes(), []byte(xml.Header)), new(struct{})); err != nil {
			t.Errorf("JUnit does not parse: %v", err)
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"verdict": "REFUTED"`) {
		t.Errorf("JSON (%v):\n%s", err, js.String())
	}
}
