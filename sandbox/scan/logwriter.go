package scan

import (
	"io"
	"strings"
	"sync"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// logWriter passes progress lines on with the run's bait replaced by its
// roles (as in raw JSON: lines quote serverInfo and arguments) and invalid
// UTF-8 escaped (\xNN), as in the report, and control characters
// escaped (report.Printable). Each Write is
// one whole line (logf), so that no value is split between two writes;
// lines come one at a time (replays log from their goroutines beside the
// session's, as its linger goes on).
type logWriter struct {
	mu sync.Mutex
	w  io.Writer
	ps []report.Placeholder
}

func (l *logWriter) Write(p []byte) (int, error) {
	// The line's own newline is kept; any other control character (an
	// ESC sequence in a tool's name) is escaped, not sent to the terminal.
	line := strings.TrimSuffix(string(p), "\n")
	out := report.Printable(report.EscapeInvalid(report.RedactJSON(line, l.ps)))
	if len(line) < len(p) {
		out += "\n"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := io.WriteString(l.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}
