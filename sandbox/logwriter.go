package sandbox

import (
	"io"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// logWriter passes progress lines on with the run's bait replaced by its
// roles (as in raw JSON: lines quote serverInfo and arguments) and invalid
// UTF-8 escaped (\xNN), as in the report. Each Write is
// one whole line (logf), so that no value is split between two writes.
type logWriter struct {
	w  io.Writer
	ps []report.Placeholder
}

func (l *logWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(l.w, report.EscapeInvalid(report.RedactJSON(string(p), l.ps))); err != nil {
		return 0, err
	}
	return len(p), nil
}
