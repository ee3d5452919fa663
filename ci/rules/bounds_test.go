package rules

import (
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestToolListTruncated: a tool list cut at a bound makes one
// server-level error finding; an uncut list none.
func TestToolListTruncated(t *testing.T) {
	r := report.New()
	r.Sandbox.Isolation = "session"
	if f := toolListCut(r); len(f) != 0 {
		t.Fatalf("uncut list: %+v", f)
	}
	r.Server.ToolListTruncated = true
	f := Evaluate(r, Options{})
	if len(f) != 1 || f[0].Rule != ToolListTruncated || f[0].Tool != "" || f[0].Call != 0 || f[0].Severity != report.SeverityError {
		t.Fatalf("findings %+v", f)
	}
	if _, ok := ByID(ToolListTruncated); !ok {
		t.Error("the rule is not listed")
	}
}
