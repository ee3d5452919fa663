package report_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestSeverityOrderAndNames(t *testing.T) {
	if !(report.SeverityNote < report.SeverityWarning && report.SeverityWarning < report.SeverityError && report.SeverityError < report.SeverityCritical) {
		t.Error("severities out of order")
	}
	for _, s := range report.Severities() {
		got, err := report.ParseSeverity(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSeverity(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := report.ParseSeverity("fatal"); err == nil || !strings.Contains(err.Error(), "critical, error, warning, note") {
		t.Errorf("ParseSeverity(fatal): %v", err)
	}
	for _, k := range report.ChangeKinds() {
		got, err := report.ParseChangeKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseChangeKind(%q) = %v, %v", k, got, err)
		}
	}
	if _, err := report.ParseChangeKind("renamed"); err == nil {
		t.Error("ParseChangeKind(renamed) accepted")
	}
}

// TestEnumsKeepTheirJSON: the typed enums marshal to the names reports
// always had, and read them back.
func TestEnumsKeepTheirJSON(t *testing.T) {
	in := struct {
		F report.Finding    `json:"f"`
		C report.FileChange `json:"c"`
	}{report.Finding{Rule: "r", Severity: report.SeverityCritical, Evidence: []string{}}, report.FileChange{Path: "/x", Change: report.ChangeDeleted}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"severity":"critical"`, `"change":"deleted"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	out := in
	out.F.Severity, out.C.Change = 0, 0
	if err := json.Unmarshal(b, &out); err != nil || out.F.Severity != report.SeverityCritical || out.C.Change != report.ChangeDeleted {
		t.Errorf("round trip: %v %+v", err, out)
	}
	if err := json.Unmarshal([]byte(`{"rule":"r","severity":"fatal"}`), &out.F); err == nil {
		t.Error("an unknown severity decodes")
	}
	// The zero values name nothing: a report that holds one is a bug.
	if _, err := json.Marshal(report.Finding{}); err == nil {
		t.Error("a finding without a severity marshals")
	}
	if _, err := json.Marshal(report.FileChange{}); err == nil {
		t.Error("a change without a kind marshals")
	}
}
