package verdict

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// FailOn is the gate's threshold: a finding at or above Severity fails it,
// unless Never. The zero FailOn fails on any finding.
type FailOn struct {
	Severity report.Severity
	Never    bool
}

// never is --fail-on's word for a gate that only reports.
const never = "never"

// ParseFailOn reads a severity's name or "never".
func ParseFailOn(s string) (FailOn, error) {
	if s == never {
		return FailOn{Never: true}, nil
	}
	sev, err := report.ParseSeverity(s)
	if err != nil {
		return FailOn{}, fmt.Errorf("%w, or %s", err, never)
	}
	return FailOn{Severity: sev}, nil
}

// String is the threshold as --fail-on takes it.
func (f FailOn) String() string {
	if f.Never {
		return never
	}
	return f.Severity.String()
}

// Fails reports whether the gate fails: a finding the baseline does not
// accept, at or above the threshold.
func Fails(rep *report.Report, failOn FailOn) bool {
	if failOn.Never {
		return false
	}
	for _, f := range rep.Findings {
		if !f.Baselined && f.Severity >= failOn.Severity {
			return true
		}
	}
	return false
}
