package rules

import (
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestDiskBoundExceeded: a server stopped at the disk bound makes one
// server-level finding at error naming the bound; the policy can turn it
// off, counted.
func TestDiskBoundExceeded(t *testing.T) {
	r := report.New()
	r.Sandbox = report.Sandbox{User: "10001:10001", Isolation: "session", DiskLimit: 20 << 20}
	if f := Evaluate(r, Options{}); len(f) != 0 {
		t.Fatalf("within the bound: %+v", f)
	}
	r.Sandbox.DiskExceeded = true
	f := Evaluate(r, Options{})
	if len(f) != 1 || f[0].Rule != DiskBoundExceeded || f[0].Tool != "" || f[0].Call != 0 || f[0].Severity != report.SeverityError ||
		len(f[0].Evidence) != 1 || f[0].Evidence[0] != "disk bound 20971520 bytes" || len(f[0].EvidencePaths) != 1 ||
		!strings.Contains(f[0].Message, "20971520 bytes") {
		t.Fatalf("exceeded: %+v", f)
	}
	if _, ok := ByID(DiskBoundExceeded); !ok {
		t.Error("not in All()")
	}
	kept, ignored := Policy{Rules: map[string]Override{DiskBoundExceeded: {Off: true}}}.Apply(f)
	if len(kept) != 0 || len(ignored) != 1 {
		t.Errorf("off: kept %+v ignored %+v", kept, ignored)
	}
}
