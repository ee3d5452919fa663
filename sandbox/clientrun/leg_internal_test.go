package clientrun

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/clientverdict"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scriptmodel"
	"github.com/mcpsandbox/mcpsandbox/sandbox/twin"
)

func listingOf(t *testing.T, mutate func(tools []map[string]any)) json.RawMessage {
	t.Helper()
	b, _ := json.Marshal(twin.Tools())
	var tools []map[string]any
	json.Unmarshal(b, &tools)
	if mutate != nil {
		mutate(tools)
	}
	out, _ := json.Marshal(tools)
	return out
}

func fresh(name string) *legResult {
	return &legResult{run: clientreport.LegRun{Name: name}, fresh: true}
}

func TestHeldFixed(t *testing.T) {
	good := listingOf(t, nil)
	// The same listing with its keys in another order is the same.
	var reordered []map[string]any
	json.Unmarshal(good, &reordered)
	again, _ := json.MarshalIndent(reordered, "", " ")
	if c, _ := heldFixed([]listing{{"alpha", good}, {"beta", again}}, fresh("alpha"), fresh("beta")); !c.OK {
		t.Errorf("the same listing: %+v", c)
	}
	for name, tc := range map[string]struct {
		lists []listing
		legs  []*legResult
		want  string
	}{
		"drift": {[]listing{{"alpha", good}, {"beta", listingOf(t, func(ts []map[string]any) {
			ts[1]["annotations"].(map[string]any)["readOnlyHint"] = true
		})}}, nil, "changed between calls"},
		"two variables": {[]listing{{"alpha", listingOf(t, func(ts []map[string]any) { ts[1]["description"] = "Deletes everything." })}}, nil, "more than readOnlyHint"},
		"swapped hints": {[]listing{{"alpha", listingOf(t, func(ts []map[string]any) {
			ts[0]["annotations"].(map[string]any)["readOnlyHint"] = false
			ts[1]["annotations"].(map[string]any)["readOnlyHint"] = true
		})}}, nil, "not true and false"},
		"one tool":      {[]listing{{"alpha", listingOf(t, func(ts []map[string]any) { ts[1]["name"] = "gamma" })}}, nil, "both alpha and beta"},
		"no listing":    {nil, nil, "no client listed"},
		"stale home":    {[]listing{{"alpha", good}}, []*legResult{{run: clientreport.LegRun{Name: "beta"}}}, "HOME was not a fresh"},
		"not decodable": {[]listing{{"alpha", json.RawMessage(`{`)}}, nil, "does not decode"},
	} {
		legs := tc.legs
		if legs == nil {
			legs = []*legResult{fresh("alpha"), fresh("beta")}
		}
		c, _ := heldFixed(tc.lists, legs...)
		if c.OK || !strings.Contains(c.Reason, tc.want) {
			t.Errorf("%s: %+v, want a failure saying %q", name, c, tc.want)
		}
	}
}

// The ledger and the disk are read apart: a call the ledger holds whose
// marker is not on disk with this leg's nonce is Called, not Marker; a
// marker from another nonce (the self-test's) or another tool does not
// count.
func TestObserve(t *testing.T) {
	led := twin.LedgerOut{
		Entries: []twin.Entry{
			{Seq: 3, Phase: twin.PhaseSelfTest, Method: "tools/call", Tool: twin.Alpha, Marker: twin.MarkerPath(3)},
			{Seq: 7, Phase: twin.PhaseClient, Method: "tools/list", Listing: listingOf(t, nil)},
			{Seq: 8, Phase: twin.PhaseClient, Method: "tools/call", Tool: twin.Alpha, Marker: twin.MarkerPath(8)},
		},
		Turns: []scriptmodel.Turn{{Matched: "mcp__twin__alpha", Action: scriptmodel.ActionToolCall}},
	}
	eff := report.NewEffects()
	eff.Files = []report.FileChange{
		{Path: twin.MarkerPath(3), Type: "file", SHA256: twin.MarkerSHA256("self", twin.Alpha, 3)},
		{Path: twin.MarkerPath(8), Type: "file", SHA256: twin.MarkerSHA256("leg", twin.Alpha, 8)},
	}
	o, lists, markers := observe("alpha", twin.Alpha, "leg", led, eff)
	want := clientreport.Leg{Contacted: true, Listed: true, ModelContacted: true, Offered: true, Asked: true, Called: true, Marker: true}
	if o != want || len(lists) != 1 || len(markers) != 1 || markers[0] != twin.MarkerPath(8) {
		t.Errorf("observe = %+v %d %v", o, len(lists), markers)
	}
	// Another nonce: the ledger says called, the disk does not agree.
	o, _, _ = observe("alpha", twin.Alpha, "other", led, eff)
	if !o.Called || o.Marker {
		t.Errorf("wrong nonce: %+v", o)
	}
	// The beta leg: alpha's call is not beta's.
	o, _, _ = observe("beta", twin.Beta, "leg", led, eff)
	if o.Called || o.Marker {
		t.Errorf("beta leg: %+v", o)
	}
	// A marker the ledger does not hold still shows on disk.
	led.Entries = led.Entries[:2]
	o, _, _ = observe("alpha", twin.Alpha, "leg", led, eff)
	if o.Called || !o.Marker {
		t.Errorf("marker without a ledger entry: %+v", o)
	}
}

func TestSelfTestMarkers(t *testing.T) {
	entries := []twin.Entry{
		{Seq: 2, Phase: twin.PhaseSelfTest, Conn: twin.ConnHTTP, Method: "tools/call", Tool: twin.Alpha, Marker: twin.MarkerPath(2)},
		{Seq: 5, Phase: twin.PhaseSelfTest, Conn: twin.ConnStdio, Method: "tools/call", Tool: twin.Alpha, Marker: twin.MarkerPath(5)},
	}
	eff := report.NewEffects()
	eff.Files = []report.FileChange{
		{Path: twin.MarkerPath(2), Type: "file", SHA256: twin.MarkerSHA256("n", twin.Alpha, 2)},
		{Path: twin.MarkerPath(5), Type: "file", SHA256: twin.MarkerSHA256("wrong", twin.Alpha, 5)},
	}
	got := selfTestMarkers(entries, eff, "n")
	if len(got) != 1 || got[0] != "http:"+twin.MarkerPath(2) {
		t.Errorf("markers %v", got)
	}
	if c := selfTestCheck(&legResult{self: clientreport.SelfTestLeg{Leg: "alpha", Markers: got}}); c.OK {
		t.Errorf("one of two calls seen passed: %+v", c)
	}
}

// The ledger's ambiguities make the leg's observation ambiguous, from the
// client's phase only; counted ones and messages not read count too; and
// the verdict over such a leg is ERRORED with an ambiguous-message
// finding naming the method, the tool and the field.
func TestObserveAmbiguities(t *testing.T) {
	amb := func(phase twin.Phase, kind, key string) twin.Ambiguity {
		return twin.Ambiguity{Phase: phase, Conn: twin.ConnStdio, Ambiguity: report.Ambiguity{Kind: kind, Method: "tools/call", Tool: twin.Alpha, Path: "params", Key: key, Detail: "d"}}
	}
	base := twin.LedgerOut{
		Entries: []twin.Entry{
			{Seq: 7, Phase: twin.PhaseClient, Method: "tools/list", Listing: listingOf(t, nil)},
			{Seq: 8, Phase: twin.PhaseClient, Method: "tools/call", Tool: twin.Alpha, Marker: twin.MarkerPath(8)},
		},
		Turns: []scriptmodel.Turn{{Matched: "alpha", Action: scriptmodel.ActionToolCall}},
	}
	eff := report.NewEffects()
	eff.Files = []report.FileChange{{Path: twin.MarkerPath(8), Type: "file", SHA256: twin.MarkerSHA256("leg", twin.Alpha, 8)}}
	for name, tc := range map[string]struct {
		mutate func(*twin.LedgerOut)
		want   bool
	}{
		"honest": {func(*twin.LedgerOut) {}, false},
		"self-test's only": {func(l *twin.LedgerOut) {
			l.Ambiguities = []twin.Ambiguity{amb(twin.PhaseSelfTest, "duplicate-key", "name")}
		}, false},
		"client's": {func(l *twin.LedgerOut) {
			l.Ambiguities = []twin.Ambiguity{amb(twin.PhaseClient, "case-variant-key", "NAME")}
		}, true},
		"counted only": {func(l *twin.LedgerOut) {
			l.AmbiguitiesOmitted = map[twin.Phase]int{twin.PhaseClient: 2}
		}, true},
		"unread only": {func(l *twin.LedgerOut) { l.Unread = map[twin.Phase]int{twin.PhaseClient: 1} }, true},
	} {
		led := base
		tc.mutate(&led)
		o, _, _ := observe("alpha", twin.Alpha, "leg", led, eff)
		if o.Ambiguous != tc.want || !o.Ran() {
			t.Errorf("%s: %+v", name, o)
		}
	}
	led := base
	led.Ambiguities = []twin.Ambiguity{amb(twin.PhaseSelfTest, "duplicate-key", "name"), amb(twin.PhaseClient, "case-variant-key", "NAME")}
	kept, omitted, unread := phaseReading(led, twin.PhaseClient)
	if len(kept) != 1 || kept[0].Key != "NAME" || omitted != 0 || unread != 0 {
		t.Errorf("client phase %+v %d %d", kept, omitted, unread)
	}
	o, _, _ := observe("alpha", twin.Alpha, "leg", led, eff)
	gated := clientreport.Leg{Contacted: true, Listed: true, ModelContacted: true, Offered: true, Asked: true}
	d := clientverdict.Decide(clientreport.Inputs{SelfTest: clientreport.Check{OK: true}, HeldFixed: clientreport.Check{OK: true}, Alpha: o, Beta: gated})
	if d.Verdict != clientreport.Errored {
		t.Errorf("an alpha call that reads two ways was certified: %+v", d)
	}
	fs := clientverdict.Findings([]clientreport.LegRun{{Name: "alpha", Tool: twin.Alpha, Ambiguities: kept}})
	if len(fs) != 1 || fs[0].Rule != "ambiguous-message" || !strings.Contains(fs[0].Evidence[0], `tools/call (tool "alpha"): params."NAME"`) {
		t.Errorf("findings %+v", fs)
	}
}
