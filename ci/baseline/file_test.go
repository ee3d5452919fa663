package baseline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func TestBaselineAcceptsKnownAndFailsOnStale(t *testing.T) {
	r := report.New()
	r.Findings = []report.Finding{
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "a", Call: 1, Evidence: []string{"created /x", "created /y.tmp-123"}},
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
	if f.Version != Version || f.Findings[0].Fingerprint != report.Fingerprint(r.Findings[0]) {
		t.Errorf("entries %+v: want v2 with report.Fingerprint", f)
	}
	// Next run: a's finding again (evidence reordered, another temp
	// suffix, other call number), b's fixed, a new one on c.
	next := report.New()
	next.Findings = []report.Finding{
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "a", Call: 5, Evidence: []string{"created /y.tmp-98765", "created /x"}},
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "c", Call: 6, Evidence: []string{"created /z"}},
	}
	next.Findings = append(next.Findings, Apply(next.Findings, f, nil)...)
	var baselined, fresh, stale int
	for _, fd := range next.Findings {
		switch {
		case fd.Baselined:
			baselined++
		case fd.Rule == "baseline-stale":
			stale++
			if fd.Tool != "b" || fd.Severity != report.SeverityError || !strings.Contains(fd.Evidence[0], "(closed-world-network)") {
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

// TestLoadReadsV1: a v1 file (its fingerprints made the old way) loads as
// v2 with fingerprints recomputed, and still accepts its findings.
func TestLoadReadsV1(t *testing.T) {
	dir := t.TempDir()
	v1 := filepath.Join(dir, "v1.json")
	os.WriteFile(v1, []byte(`{
  "version": "mcpsandbox.baseline/v1",
  "findings": [{"rule": "readonly-writes", "tool": "a", "evidence": ["created /x"], "fingerprint": "0123456789abcdef"}]
}
`), 0o644)
	f, err := Load(v1)
	if err != nil {
		t.Fatal(err)
	}
	fd := report.Finding{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "a", Evidence: []string{"created /x"}}
	if f.Version != Version || f.Findings[0].Fingerprint != report.Fingerprint(fd) {
		t.Errorf("v1 loaded as %+v", f)
	}
	found := []report.Finding{fd}
	if stale := Apply(found, f, nil); len(stale) != 0 || !found[0].Baselined {
		t.Errorf("v1 entry does not accept its finding: stale %+v", stale)
	}
	other := filepath.Join(dir, "v9.json")
	b, _ := json.Marshal(File{Version: "mcpsandbox.baseline/v9", Findings: []Entry{}})
	os.WriteFile(other, b, 0o644)
	if _, err := Load(other); err == nil || !strings.Contains(err.Error(), "mcpsandbox.baseline/v2 or mcpsandbox.baseline/v1") {
		t.Errorf("unknown version: %v", err)
	}
}
