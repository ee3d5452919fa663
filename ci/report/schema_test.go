package report_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
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
