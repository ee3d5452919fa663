package corpus

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestRowsFromBulk: the table's rows come from bulk's state and reports,
// in the servers file's order; a package that did not scan says its
// status and why; one the state lacks (not run yet) is left out.
func TestRowsFromBulk(t *testing.T) {
	dir := t.TempDir()
	a := Server{Package: "a", Version: "1.0.0", Entry: "i.js"}
	b := Server{Package: "b", Version: "2.0.0", Entry: "i.js"}
	c := Server{Package: "c", Version: "3.0.0", Entry: "i.js"}
	key := func(s Server) string {
		specs, _ := bulk.ParseList("l", strings.NewReader(s.ListLine()))
		return specs[0].Key()
	}
	rep := report.Report{Complete: true, Tools: []report.Tool{{Name: "x"}}, Calls: []report.Call{{Tool: "x"}}}
	raw, _ := json.Marshal(rep)
	if err := os.MkdirAll(filepath.Join(dir, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "reports", "a.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	state := map[string]bulk.Result{
		key(a): {Status: bulk.StatusOK, Version: "1.0.0", Report: "reports/a.json"},
		key(b): {Status: bulk.StatusFailedFetch, Why: "npm view b@2.0.0: E404\nmore"},
	}
	rows := Rows([]Server{a, b, c}, state, dir)
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	if r := rows[0]; r.Server.Package != "a" || r.Tools != 1 || r.Exercised != 1 || r.Err != "" || !r.Complete {
		t.Errorf("row a %+v", r)
	}
	if r := rows[1]; r.Server.Package != "b" || r.Err != "failed-fetch: npm view b@2.0.0: E404 more" {
		t.Errorf("row b %+v", r)
	}
}

// TestSummarize: a call fails with isError or with no result; a tool is
// exercised by one call that did not.
func TestSummarize(t *testing.T) {
	r := report.Report{
		Complete: true,
		Tools:    []report.Tool{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Calls: []report.Call{{Tool: "a"}, {Tool: "a", IsError: true}, {Tool: "b", IsError: true},
			{Tool: "c", Error: "timeout"}},
		Findings: []report.Finding{{Rule: "x"}},
	}
	row := Summarize(Server{Package: "p"}, r)
	if row.Tools != 3 || row.Calls != 4 || row.CallsFailed != 3 || row.Exercised != 1 || row.Findings != 1 || !row.Complete {
		t.Errorf("row %+v", row)
	}
	var b strings.Builder
	WriteTable(&b, []Row{row, {Server: Server{Package: "q", Version: "2"}, Err: "npm failed"}})
	for _, want := range []string{"| p |  | 3 | 4 | 3 | 1 (33%) | 1 | 0 |", "| q (npm failed) | 2 |", "| **total** (2 servers) | | 3 | 4 | 3 | 1 (33%) | 1 | 0 |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
