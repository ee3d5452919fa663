package clientverdict

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
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

// A leg whose client sent a message that reads two ways is certified
// neither way, whatever the rest shows: ERRORED, naming ambiguous-message,
// before the witness's own checks (an ambiguous call may leave the ledger
// and the disk disagreeing; the ambiguity is why).
func TestDecideAmbiguousLeg(t *testing.T) {
	amb := func(l Leg) Leg { l.Ambiguous = true; return l }
	noMarker := ran
	noMarker.Marker = false
	for name, in := range map[string]Inputs{
		"would confirm":             inputs(amb(ran), gated),
		"would refute":              inputs(gated, amb(gated)),
		"beta ambiguous, alpha ok":  inputs(ran, amb(withheld)),
		"control ambiguous":         {SelfTest: ok, HeldFixed: ok, Alpha: gated, Beta: gated, Control: func() *Leg { l := amb(ran); return &l }()},
		"and the witness disagrees": inputs(amb(noMarker), gated),
		"would skip, never listed":  inputs(amb(Leg{Contacted: true}), gated),
	} {
		d := Decide(in)
		if d.Verdict != Errored || d.ExitCode() != 2 || !strings.Contains(d.Reason, AmbiguousMessage) || d.Backed {
			t.Errorf("%s: %+v", name, d)
		}
	}
	// The self-test still comes first: a blind witness says so.
	in := inputs(amb(ran), gated)
	in.SelfTest = Check{Reason: "blind"}
	if d := Decide(in); !strings.Contains(d.Reason, "self-test") {
		t.Errorf("self-test first: %+v", d)
	}
}

func TestAmbiguityFindings(t *testing.T) {
	legs := []LegRun{
		{Name: "alpha", Tool: "alpha", Ambiguities: []report.Ambiguity{
			{Kind: "case-variant-key", Method: "tools/call", Tool: "alpha", Path: "params", Key: "NAME", Detail: "the field \"name\" to Go's encoding/json"},
			{Kind: "trailing-data", Detail: "12 bytes after the message's value", Refused: true},
		}, AmbiguitiesOmitted: 3, Unread: 1},
		{Name: "beta", Tool: "beta"},
	}
	fs := Findings(legs)
	if len(fs) != 1 {
		t.Fatalf("findings %+v", fs)
	}
	f := fs[0]
	if f.Rule != "ambiguous-message" || f.Severity != report.SeverityError || f.Tool != "alpha" || f.Fingerprint == "" || !strings.Contains(f.Message, "alpha leg") {
		t.Errorf("finding %+v", f)
	}
	want := []string{
		`case-variant-key at tools/call (tool "alpha"): params."NAME": the field "name" to Go's encoding/json`,
		`trailing-data at the message: 12 bytes after the message's value (not read by the twin)`,
		"3 more not listed",
		"1 message(s) the twin did not read",
	}
	if len(f.Evidence) != len(want) {
		t.Fatalf("evidence %q", f.Evidence)
	}
	for i, w := range want {
		if !strings.HasPrefix(f.Evidence[i], w) {
			t.Errorf("evidence %d: %q, want %q", i, f.Evidence[i], w)
		}
	}
	r := &Report{Schema: Schema, Decision: Decide(inputs(Leg{Contacted: true, Ambiguous: true}, gated)), Legs: legs, Findings: fs}
	var text, js bytes.Buffer
	r.WriteText(&text)
	r.WriteJSON(&js)
	if !strings.Contains(text.String(), "finding: ambiguous-message (error)") || !strings.Contains(text.String(), `params."NAME"`) || !strings.HasPrefix(text.String(), "mcpsandbox client: ERRORED") {
		t.Errorf("text:\n%s", text.String())
	}
	for _, w := range []string{`"findings": [`, `"ambiguities": [`, `"ambiguitiesOmitted": 3`, `"unread": 1`, `"rule": "ambiguous-message"`} {
		if !strings.Contains(js.String(), w) {
			t.Errorf("JSON lacks %s:\n%s", w, js.String())
		}
	}
	// An honest run adds nothing to the JSON.
	var clean bytes.Buffer
	(&Report{Schema: Schema, Legs: []LegRun{{Name: "alpha"}}}).WriteJSON(&clean)
	for _, w := range []string{"findings", "ambiguities", "unread", "ambiguous"} {
		if strings.Contains(clean.String(), w) {
			t.Errorf("a clean report holds %s:\n%s", w, clean.String())
		}
	}
}
