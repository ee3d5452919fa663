package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
)

var update = flag.Bool("update", false, "rewrite report.schema.json")

// TestPublishedSchemaIsCurrent keeps ci/report/report.schema.json equal to
// the schema derived from the Go type.
func TestPublishedSchemaIsCurrent(t *testing.T) {
	got, err := report.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("report.schema.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("report.schema.json is stale: go test ./ci/report -update")
	}
}

func TestSampleReportValidates(t *testing.T) {
	var buf bytes.Buffer
	if err := report.WriteJSON(&buf, reporttest.Sample()); err != nil {
		t.Fatal(err)
	}
	if err := reporttest.Validate(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	// And the schema catches a report that breaks it.
	var m map[string]any
	json.Unmarshal(buf.Bytes(), &m)
	m["calls"] = "not a list"
	bad, _ := json.Marshal(m)
	if err := reporttest.Validate(bad); err == nil {
		t.Error("a report with calls as a string validates")
	}
	// Severities and change kinds are names from a closed list.
	json.Unmarshal(buf.Bytes(), &m)
	m["findings"].([]any)[0].(map[string]any)["severity"] = "fatal"
	bad, _ = json.Marshal(m)
	if err := reporttest.Validate(bad); err == nil {
		t.Error("a report with severity fatal validates")
	}
}

// TestCandidatesLateCalls: with call isolation, a late tool's calls were
// made in the session of the call before them.
func TestCandidatesLateCalls(t *testing.T) {
	r := report.New()
	r.Sandbox.Isolation = "call"
	r.Calls = []report.Call{{Seq: 1, Tool: "a"}, {Seq: 2, Tool: "b"}, {Seq: 3, Tool: "late", Late: true}, {Seq: 4, Tool: "late", Source: "repeat", Late: true}, {Seq: 5, Tool: "c"}}
	for i, want := range [][]int{{1}, {2}, {2, 3}, {2, 3, 4}, {5}} {
		if got := report.Candidates(r, i); !slices.Equal(got, want) {
			t.Errorf("Candidates(%d) = %v, want %v", i, got, want)
		}
	}
}
