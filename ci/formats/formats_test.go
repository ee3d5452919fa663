package formats

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joshdk/go-junit"

	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
)

func TestSARIFValidatesAgainstTheOfficialSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, reporttest.Sample(), "test"); err != nil {
		t.Fatal(err)
	}
	if err := reporttest.ValidateWith("testdata/sarif-schema-2.1.0.json", buf.Bytes()); err != nil {
		t.Fatalf("SARIF does not validate: %v\n%s", err, buf.String())
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	json.Unmarshal(buf.Bytes(), &log)
	res := log.Runs[0].Results
	if len(res) != 2 || res[0].RuleID != "readonly-writes" || res[0].Level != "error" ||
		res[0].Locations[0].PhysicalLocation.ArtifactLocation.URI != "tests/probe.spec.ts" {
		t.Errorf("results = %+v", res)
	}
	// A broken document does not validate: the check can fail.
	if err := reporttest.ValidateWith("testdata/sarif-schema-2.1.0.json", []byte(`{"version":"2.1.0","runs":[{"results":[]}]}`)); err == nil {
		t.Error("a run without a tool validates")
	}
}

func TestJUnitParsesWithAJUnitReader(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, reporttest.Sample()); err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(buf.Bytes())
	if err != nil {
		t.Fatalf("go-junit: %v\n%s", err, buf.String())
	}
	if len(suites) != 1 {
		t.Fatalf("%d suites", len(suites))
	}
	st := map[string]junit.Status{}
	for _, tc := range suites[0].Tests {
		st[tc.Name] = tc.Status
	}
	if st["lying_read"] != junit.StatusFailed || st["echo"] != junit.StatusPassed || st["needs_args"] != junit.StatusSkipped {
		t.Errorf("statuses = %v", st)
	}
	if suites[0].Totals.Failed != 1 || suites[0].Totals.Tests != 3 {
		t.Errorf("totals = %+v", suites[0].Totals)
	}
}

func TestMarkdownSummary(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, reporttest.Sample()); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{"## mcpsandbox: fixture 1.0.0 — 2 finding(s)", "| `lying_read` | true | · | · | false | 1 | 1 | 0 | 1 | 2 ❌ |",
		"- **error** `readonly-writes` on `lying_read` (call 1)", "### Not called"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, "xml", reporttest.Sample(), ""); err == nil {
		t.Error("unknown format accepted")
	}
}
