package contract

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func tools(ts ...report.Tool) *report.Report {
	r := report.New()
	r.Tools = ts
	return r
}

func TestCompareFindsEveryDrift(t *testing.T) {
	v1 := tools(
		report.Tool{Name: "echo", Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		report.Tool{Name: "list", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true,"title":"List"}`)},
		report.Tool{Name: "gone", InputSchema: json.RawMessage(`{}`), Annotations: json.RawMessage(`null`)},
	)
	path := filepath.Join(t.TempDir(), "contract.json")
	if err := Write(path, FromReport(v1)); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := Compare(c, v1); len(got) != 0 {
		t.Fatalf("no drift expected, got %+v", got)
	}
	v2 := tools(
		report.Tool{Name: "echo", Description: "d", InputSchema: json.RawMessage(`{"properties":{"message":{"type":"string"}},"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		report.Tool{Name: "list", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":false,"title":"List"}`)},
		report.Tool{Name: "new", InputSchema: json.RawMessage(`{}`), Annotations: json.RawMessage(`null`)},
	)
	got := map[string][]string{}
	sev := map[string]report.Severity{}
	for _, f := range Compare(c, v2) {
		got[f.Rule+" "+f.Tool] = f.Evidence
		sev[f.Rule] = f.Severity
	}
	want := map[string][]string{
		"contract-schema-changed echo":     {`property "message" added: {"type":"string"}`, `property "text" removed`},
		"contract-annotation-changed list": {"readOnlyHint: true -> false"},
		"contract-tool-added new":          {"annotations: null"},
		"contract-tool-removed gone":       {},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("drift:\n got %q\nwant %q", got, want)
	}
	if sev["contract-annotation-changed"] != report.SeverityError {
		t.Errorf("a flipped readOnlyHint is %s, want error", sev["contract-annotation-changed"])
	}
	// A title change alone is a note.
	v3 := tools(v1.Tools[0], report.Tool{Name: "list", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true,"title":"Listing"}`)}, v1.Tools[2])
	for _, f := range Compare(c, v3) {
		if f.Rule != "contract-annotation-changed" || f.Severity != report.SeverityNote {
			t.Errorf("title change: %+v", f)
		}
	}
}
