package baseline

import (
	"path/filepath"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestBaselineAcceptsKnownAndFailsOnStale(t *testing.T) {
	r := report.New()
	r.Findings = []report.Finding{
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "a", Call: 1, Evidence: []string{"created /x", "created /y"}},
		{Rule: "closed-world-network", Severity: report.SeverityError, Tool: "b", Call: 2, Evidence: []string{"dns e.com"}},
	}
	path := filepath.Join(t.TempDir(), "baseline.json")
	if err := Write(path, FromReport(r)); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	// Next run: a's finding again (evidence reordered, other call number),
	// b's fixed, a new one on c.
	next := report.New()
	next.Findings = []report.Finding{
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "a", Call: 5, Evidence: []string{"created /y", "created /x"}},
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "c", Call: 6, Evidence: []string{"created /z"}},
	}
	Apply(next, f)
	var baselined, fresh, stale int
	for _, fd := range next.Findings {
		switch {
		case fd.Baselined:
			baselined++
		case fd.Rule == "baseline-stale":
			stale++
			if fd.Tool != "b" || fd.Severity != report.SeverityError {
				t.Errorf("stale finding = %+v", fd)
			}
		default:
			fresh++
		}
	}
	if baselined != 1 || fresh != 1 || stale != 1 {
		t.Errorf("baselined %d, new %d, stale %d; want 1 each: %+v", baselined, fresh, stale, next.Findings)
	}
}
