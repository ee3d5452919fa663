package bulk

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

var update = flag.Bool("update", false, "rewrite summary.schema.json")

func fls() *bool { b := false; return &b }

func summaryFixture() []Result {
	return []Result{
		{Key: "a1", Spec: "npm:a@1.0.0", Kind: KindNPM, Name: "a", Version: "1.0.0", Status: StatusOK, Report: "reports/a1.json", Complete: true,
			Tools: 2, Annotated: 2, Exercised: 2, ByRule: map[string]int{},
			ToolRows: []ToolRow{{Tool: "read", Hints: report.Hints{ReadOnly: tru()}, Coverage: "exercised"}, {Tool: "del", Hints: report.Hints{Destructive: tru()}, Coverage: "exercised"}}},
		{Key: "a2", Spec: "npm:a@2.0.0", Kind: KindNPM, Name: "a", Version: "2.0.0", Status: StatusFindings, Report: "reports/a2.json", Complete: true,
			Tools: 2, Annotated: 1, Exercised: 2, Findings: 1, ByRule: map[string]int{"readonly-writes": 1},
			ToolRows: []ToolRow{{Tool: "read", Hints: report.Hints{ReadOnly: tru()}, Coverage: "exercised", Contradicted: []string{"readOnlyHint"}, Findings: map[string]int{"readonly-writes": 1}},
				{Tool: "=cmd|' /C calc'!A0", Hints: report.Hints{ReadOnly: fls()}, Coverage: "errored"}}},
		{Key: "n", Spec: "npm:needs", Kind: KindNPM, Name: "needs", Status: StatusNeedsConfig, Why: "required: DB_PATH"},
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize(summaryFixture(), []InputError{{Where: "l:3", Msg: "bad"}})
	tt := s.Totals
	if tt.Packages != 3 || tt.ByStatus["ok"] != 1 || tt.ByStatus["findings"] != 1 || tt.ByStatus["needs-config"] != 1 || tt.ByStatus["timeout"] != 0 ||
		tt.Tools != 4 || tt.Annotated != 3 || tt.Exercised != 4 || tt.Findings != 1 || tt.ByRule["readonly-writes"] != 1 {
		t.Errorf("totals %+v", tt)
	}
	if h := tt.Hints["readOnlyHint"]; h != (HintTotal{True: 2, False: 1, Contradicted: 1}) {
		t.Errorf("readOnlyHint %+v", h)
	}
	if len(s.Tools) != 4 || s.Tools[2].Package != "a" || s.Tools[2].Version != "2.0.0" {
		t.Errorf("tools %+v", s.Tools)
	}
	for _, p := range s.Packages {
		if p.ToolRows != nil {
			t.Errorf("%s keeps its tool rows in the package row", p.Spec)
		}
	}
	if len(s.Changes) != 1 {
		t.Fatalf("changes %+v", s.Changes)
	}
	c := s.Changes[0]
	if c.From != "1.0.0" || c.To != "2.0.0" || c.NewFindings["readonly-writes"] != 1 || len(c.ToolsAdded) != 1 || len(c.ToolsRemoved) != 1 || c.ToolsRemoved[0] != "del" {
		t.Errorf("change %+v", c)
	}

	var buf bytes.Buffer
	if err := WriteCSV(&buf, s); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(rows) != 4 || rows[2][4] != "findings" || rows[2][12] != "readonly-writes=1" {
		t.Errorf("csv %q %v", rows, err)
	}
	buf.Reset()
	if err := WriteToolsCSV(&buf, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "'=cmd") || strings.Contains(buf.String(), ",=cmd") {
		t.Errorf("a tool name that is a formula reaches the CSV as one:\n%s", buf.String())
	}
	buf.Reset()
	if err := WriteMarkdown(&buf, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 packages: ok 1, findings 1, needs-config 1,", "| readOnlyHint | 2 | 1 | 1 |", "a 1.0.0 -> 2.0.0: new findings readonly-writes=1", "- l:3: bad", "needs-config: required: DB_PATH"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestSummarySchema keeps the published schema equal to the Go type and
// checks a summary against it.
func TestSummarySchema(t *testing.T) {
	b, err := SummarySchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("summary.schema.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := os.ReadFile("summary.schema.json")
	if err != nil || !bytes.Equal(pub, b) {
		t.Fatalf("summary.schema.json is stale: go test ./ci/bulk -run SummarySchema -update (%v)", err)
	}
	var doc any
	if err := json.Unmarshal(pub, &doc); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SummarySchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(SummarySchemaID)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(Summarize(summaryFixture(), nil))
	var inst any
	json.Unmarshal(out, &inst)
	if err := sch.Validate(inst); err != nil {
		t.Errorf("a summary does not validate: %v", err)
	}
}
