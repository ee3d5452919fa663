package rules

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func changed(call int, tool, field, old, new string) report.ToolChange {
	return report.ToolChange{Listing: report.ListingAfterCall, Call: call, Tool: tool, Change: report.ToolChanged, Field: field, Old: old, New: new}
}

// TestToolHintsLessSafeIsError: giving up the safe value of each safety
// hint (to the other value, to absent, to a non-boolean) is an error;
// moving toward safe, or another annotation, is a warning.
func TestToolHintsLessSafeIsError(t *testing.T) {
	for _, tc := range []struct {
		field, old, new string
		want            string
		sev             report.Severity
	}{
		{"annotations.readOnlyHint", "true", "false", ToolHintsChanged, report.SeverityError},
		{"annotations.readOnlyHint", "true", "", ToolHintsChanged, report.SeverityError},
		{"annotations.readOnlyHint", "true", `"true"`, ToolHintsChanged, report.SeverityError},
		{"annotations.destructiveHint", "false", "true", ToolHintsChanged, report.SeverityError},
		{"annotations.destructiveHint", "false", "", ToolHintsChanged, report.SeverityError},
		{"annotations.idempotentHint", "true", "false", ToolHintsChanged, report.SeverityError},
		{"annotations.idempotentHint", "true", "", ToolHintsChanged, report.SeverityError},
		{"annotations.openWorldHint", "false", "true", ToolHintsChanged, report.SeverityError},
		{"annotations.openWorldHint", "false", "", ToolHintsChanged, report.SeverityError},
		{"annotations.readOnlyHint", "false", "true", ToolDefinitionChanged, report.SeverityWarning},
		{"annotations.readOnlyHint", "", "true", ToolDefinitionChanged, report.SeverityWarning},
		{"annotations.destructiveHint", "true", "false", ToolDefinitionChanged, report.SeverityWarning},
		{"annotations.openWorldHint", "", "false", ToolDefinitionChanged, report.SeverityWarning},
		{"annotations.title", `"A"`, `"B"`, ToolDefinitionChanged, report.SeverityWarning},
		{"description", `"reads"`, `"reads and uploads"`, ToolDefinitionChanged, report.SeverityWarning},
		{"inputSchema", `{"type":"object"}`, `{"properties":{"x":{}},"type":"object"}`, ToolDefinitionChanged, report.SeverityWarning},
	} {
		r := report.New()
		r.ToolChanges = []report.ToolChange{changed(2, "t", tc.field, tc.old, tc.new)}
		fs := Evaluate(r, Options{})
		if len(fs) != 1 || fs[0].Rule != tc.want || fs[0].Severity != tc.sev || fs[0].Tool != "t" {
			t.Errorf("%s %s -> %s: got %+v, want one %s at %v", tc.field, tc.old, tc.new, fs, tc.want, tc.sev)
		}
	}
}

// TestToolListFindings: one finding per rule and tool, evidence in the
// order seen, where each was seen; unchecked places are a server-level
// error.
func TestToolListFindings(t *testing.T) {
	r := report.New()
	r.Calls = []report.Call{{Seq: 1, Tool: "a"}, {Seq: 2, Tool: "late"}}
	r.ToolChanges = []report.ToolChange{
		changed(1, "a", "annotations.readOnlyHint", "true", "false"),
		changed(1, "a", "description", `"x"`, `"y"`),
		{Listing: report.ListingAfterCall, Call: 1, Tool: "late", Change: report.ToolAppeared},
		{Listing: report.ListingEnd, Call: 2, Tool: "gone", Change: report.ToolDisappeared},
		{Listing: report.ListingEnd, Call: 2, Tool: "never_called", Change: report.ToolAppeared},
		{Listing: report.ListingEnd, Call: 2, Tool: "a", Change: report.ToolChanged, Field: "annotations.openWorldHint", Old: "false"},
	}
	r.ToolListing.Unchecked = []string{"after call 2: tools/list failed (x)"}
	fs := Evaluate(r, Options{})
	got := map[string][]string{}
	sev := map[string]report.Severity{}
	for _, f := range fs {
		got[f.Rule+" "+f.Tool] = f.Evidence
		sev[f.Rule+" "+f.Tool] = f.Severity
	}
	want := map[string][]string{
		"tool-hints-changed a":            {"after call 1: readOnlyHint: true -> false", "at the end (after call 2): openWorldHint: false -> (absent)"},
		"tool-definition-changed a":       {"after call 1: description changed"},
		"tool-appeared-late late":         {"after call 1: appeared"},
		"tool-appeared-late never_called": {"at the end (after call 2): appeared"},
		"tool-disappeared gone":           {"at the end (after call 2): disappeared"},
		"tool-list-unchecked ":            {"after call 2: tools/list failed (x)"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got %v\nwant %v", got, want)
	}
	for k, s := range map[string]report.Severity{"tool-hints-changed a": report.SeverityError, "tool-definition-changed a": report.SeverityWarning,
		"tool-appeared-late late": report.SeverityWarning, "tool-disappeared gone": report.SeverityNote, "tool-list-unchecked ": report.SeverityError} {
		if sev[k] != s {
			t.Errorf("%s: severity %v, want %v", k, sev[k], s)
		}
	}
	for _, f := range fs {
		if f.Rule == ToolAppearedLate && f.Tool == "never_called" && !strings.Contains(f.Message, "not called") {
			t.Errorf("a late tool never called must say so: %s", f.Message)
		}
		if f.Rule == ToolHintsChanged && f.Hint != "readOnlyHint: true" {
			t.Errorf("hint = %q, want the claim given up first", f.Hint)
		}
	}
	// Every rule is known to the policy (a typo in a policy is refused).
	for _, id := range []string{ToolHintsChanged, ToolDefinitionChanged, ToolAppearedLate, ToolDisappeared, ToolListUnchecked} {
		if _, ok := ByID(id); !ok {
			t.Errorf("rule %s not in All()", id)
		}
	}
}

// TestNoToolChangesNoFindings: a report whose tool list did not move
// gets nothing from these rules.
func TestNoToolChangesNoFindings(t *testing.T) {
	r := report.New()
	r.ToolListing.Listings = 5
	if fs := toolList(r); len(fs) != 0 {
		t.Errorf("findings on a still tool list: %+v", fs)
	}
}
