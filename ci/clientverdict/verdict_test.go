package clientverdict

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
)

var (
	ran   = clientreport.Leg{Contacted: true, Listed: true, ModelContacted: true, Offered: true, Asked: true, Called: true, Marker: true}
	gated = clientreport.Leg{Contacted: true, Listed: true, ModelContacted: true, Offered: true, Asked: true}
	// withheld: the client kept the tool from the model (a gate too).
	withheld = clientreport.Leg{Contacted: true, Listed: true, ModelContacted: true}
	ok       = clientreport.Check{OK: true}
)

func inputs(alpha, beta clientreport.Leg) clientreport.Inputs {
	return clientreport.Inputs{SelfTest: ok, HeldFixed: ok, Alpha: alpha, Beta: beta}
}

func TestDecideEveryPath(t *testing.T) {
	ctl := func(in clientreport.Inputs, c *clientreport.Leg, why string) clientreport.Inputs {
		in.Control, in.ControlWhy = c, why
		return in
	}
	broken := inputs(ran, gated)
	broken.SelfTest = clientreport.Check{Reason: "the ledger missed a call"}
	drift := inputs(ran, ran)
	drift.HeldFixed = clientreport.Check{Reason: "the listing changed between calls"}
	missing := inputs(clientreport.Leg{}, clientreport.Leg{})
	missing.Missing, missing.MissingReason = clientreport.NoMCPSupport, "it speaks no MCP"
	noMarker := ran
	noMarker.Marker = false
	noLedger := gated
	noLedger.Marker = true
	for _, tc := range []struct {
		name    string
		in      clientreport.Inputs
		verdict clientreport.Verdict
		pre     clientreport.Precondition
		control clientreport.Control
		backed  bool
		code    int
	}{
		{"alpha ran, beta asked and gated", inputs(ran, gated), clientreport.Confirmed, "", clientreport.ControlNotRun, false, 1},
		{"alpha ran, beta withheld from the model", inputs(ran, withheld), clientreport.Confirmed, "", clientreport.ControlNotRun, false, 1},
		{"both gated, control passed", ctl(inputs(gated, gated), &ran, ""), clientreport.Refuted, "", clientreport.ControlPassed, true, 0},
		{"only beta ran, control passed", ctl(inputs(gated, ran), &ran, ""), clientreport.Refuted, "", clientreport.ControlPassed, true, 0},
		{"both gated, control failed", ctl(inputs(gated, gated), &gated, ""), clientreport.Refuted, "", clientreport.ControlFailed, false, 3},
		{"both gated, no control", ctl(inputs(gated, gated), nil, "no trust setting"), clientreport.Refuted, "", clientreport.ControlUnavailable, false, 3},
		{"both ran", inputs(ran, ran), clientreport.Skipped, clientreport.NoGate, clientreport.ControlNotRun, false, 3},
		{"never contacted", inputs(clientreport.Leg{}, gated), clientreport.Skipped, clientreport.NeverContacted, clientreport.ControlNotRun, false, 3},
		{"never listed", inputs(clientreport.Leg{Contacted: true}, clientreport.Leg{Contacted: true}), clientreport.Skipped, clientreport.NeverListed, clientreport.ControlNotRun, false, 3},
		{"never asked the model", inputs(clientreport.Leg{Contacted: true, Listed: true}, gated), clientreport.Skipped, clientreport.CalledNeither, clientreport.ControlNotRun, false, 3},
		{"adapter precondition", missing, clientreport.Skipped, clientreport.NoMCPSupport, clientreport.ControlNotRun, false, 3},
		{"self-test failed", broken, clientreport.Errored, "", clientreport.ControlNotRun, false, 2},
		{"listing drifted", drift, clientreport.Errored, "", clientreport.ControlNotRun, false, 2},
		{"ledger without marker", inputs(noMarker, gated), clientreport.Errored, "", clientreport.ControlNotRun, false, 2},
		{"marker without ledger", inputs(gated, noLedger), clientreport.Errored, "", clientreport.ControlNotRun, false, 2},
		{"control's witness broken", ctl(inputs(gated, gated), &noMarker, ""), clientreport.Errored, "", clientreport.ControlNotRun, false, 2},
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
	in := inputs(clientreport.Leg{Contacted: true}, clientreport.Leg{Contacted: true})
	in.HeldFixed = clientreport.Check{Reason: "no client listed the tools"}
	if d := Decide(in); d.Precondition != clientreport.NeverListed {
		t.Errorf("never listed with no listing: %+v", d)
	}
}

func TestReportFormats(t *testing.T) {
	r := &clientreport.Report{Schema: clientreport.Schema, Decision: Decide(inputs(ran, gated)), Client: clientreport.ClientInfo{Command: []string{"client", "\x1b[31m"}, Adapter: "fixture"},
		Legs: []clientreport.LegRun{{Name: "alpha", Tool: "alpha", Observed: ran, Exit: clientreport.ClientExit{Stderr: "a\nb\x07\n"}}}}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text.String(), "mcpsandbox client: CONFIRMED\n") || strings.ContainsAny(text.String(), "\x1b\x07") {
		t.Errorf("text:\n%q", text.String())
	}
	for _, tc := range []struct {
		d    clientreport.Decision
		want string
	}{{Decide(inputs(ran, gated)), "<failure"}, {Decide(inputs(ran, ran)), "<skipped"},
		{clientreport.Decision{Verdict: clientreport.Errored, Reason: "x"}, "<error"}, {Decide(clientreport.Inputs{SelfTest: ok, HeldFixed: ok, Alpha: gated, Beta: gated, Control: &ran}), "tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"0\""}} {
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
	amb := func(l clientreport.Leg) clientreport.Leg { l.Ambiguous = true; return l }
	noMarker := ran
	noMarker.Marker = false
	for name, in := range map[string]clientreport.Inputs{
		"would confirm":             inputs(amb(ran), gated),
		"would refute":              inputs(gated, amb(gated)),
		"beta ambiguous, alpha ok":  inputs(ran, amb(withheld)),
		"control ambiguous":         {SelfTest: ok, HeldFixed: ok, Alpha: gated, Beta: gated, Control: func() *clientreport.Leg { l := amb(ran); return &l }()},
		"and the witness disagrees": inputs(amb(noMarker), gated),
		"would skip, never listed":  inputs(amb(clientreport.Leg{Contacted: true}), gated),
	} {
		d := Decide(in)
		if d.Verdict != clientreport.Errored || d.ExitCode() != 2 || !strings.Contains(d.Reason, AmbiguousMessage) || d.Backed {
			t.Errorf("%s: %+v", name, d)
		}
	}
	// The self-test still comes first: a blind witness says so.
	in := inputs(amb(ran), gated)
	in.SelfTest = clientreport.Check{Reason: "blind"}
	if d := Decide(in); !strings.Contains(d.Reason, "self-test") {
		t.Errorf("self-test first: %+v", d)
	}
}

func TestAmbiguityFindings(t *testing.T) {
	legs := []clientreport.LegRun{
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
	r := &clientreport.Report{Schema: clientreport.Schema, Decision: Decide(inputs(clientreport.Leg{Contacted: true, Ambiguous: true}, gated)), Legs: legs, Findings: fs}
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
	(&clientreport.Report{Schema: clientreport.Schema, Legs: []clientreport.LegRun{{Name: "alpha"}}}).WriteJSON(&clean)
	for _, w := range []string{"findings", "ambiguities", "unread", "ambiguous"} {
		if strings.Contains(clean.String(), w) {
			t.Errorf("a clean report holds %s:\n%s", w, clean.String())
		}
	}
}
