package rules

import (
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestHashBudgetExceeded: files a snapshot left unhashed make one
// server-level finding at error; the policy can turn it off, counted.
func TestHashBudgetExceeded(t *testing.T) {
	r := report.New()
	r.Sandbox = report.Sandbox{User: "10001:10001", Isolation: "call"}
	if f := Evaluate(r, Options{}); len(f) != 0 {
		t.Fatalf("nothing unhashed: %+v", f)
	}
	r.Sandbox.FilesUnhashed = 3
	f := Evaluate(r, Options{})
	if len(f) != 1 || f[0].Rule != HashBudgetExceeded || f[0].Tool != "" || f[0].Call != 0 || f[0].Severity != report.SeverityError ||
		len(f[0].Evidence) != 1 || f[0].Evidence[0] != "3 files unhashed" || len(f[0].EvidencePaths) != 1 || f[0].Isolation != "call" {
		t.Fatalf("3 unhashed: %+v", f)
	}
	kept, ignored := Policy{Rules: map[string]Override{HashBudgetExceeded: {Off: true}}}.Apply(f)
	if len(kept) != 0 || len(ignored) != 1 {
		t.Errorf("off: kept %+v ignored %+v", kept, ignored)
	}
}
