package sandbox

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// ExitBeforeInitialize is a server that exited before it answered
// initialize: the commonest start failure of a real server (a module
// missing, a bad flag, a variable not set), which its stderr explains.
type ExitBeforeInitialize struct {
	// Code is the exit status (128+n for signal n); OOMKilled is set when
	// the memory limit killed it.
	Code      int
	OOMKilled bool
	// Why is the stderr line that says why: the first that looks like an
	// error, else the first that is not empty ("" when it wrote nothing);
	// redacted, one line, control characters escaped, bounded.
	Why string
	// Err is the client's failure (EOF, most often).
	Err error
}

func (e *ExitBeforeInitialize) Error() string {
	what := fmt.Sprintf("server exited with code %d before initialize", e.Code)
	if e.OOMKilled {
		what = fmt.Sprintf("server was killed by the memory limit (exit code %d) before initialize", e.Code)
	}
	if e.Why == "" {
		return what + " (its stderr is empty)"
	}
	return what + ": " + e.Why
}

func (e *ExitBeforeInitialize) Unwrap() error { return e.Err }

// startExitWait bounds the wait, after initialize failed, for the server
// to be seen exited and its stderr drained: an EOF on stdout comes as it
// exits, so this is rarely waited in full.
const startExitWait = 3 * time.Second

// exitBeforeInitialize says whether the server's container ended while
// the client waited for initialize, and why; nil when it still runs.
func (s *Session) exitBeforeInitialize(ctx context.Context, ctr *Container, err error) *ExitBeforeInitialize {
	st, exited := ctr.Exited(ctx, startExitWait)
	if !exited {
		return nil
	}
	tail, _, truncated := ctr.Stderr()
	head := ctr.StderrHead()
	if !truncated {
		head = tail // all of it
	}
	line := whyLine(head)
	if line == "" && truncated {
		line = whyLine(tail)
	}
	// Redacted whole, then cut: a cut value would not be found.
	line = report.ShortReason(report.RedactString(report.EscapeInvalid(line), s.opts.Placeholders))
	return &ExitBeforeInitialize{Code: st.ExitCode, OOMKilled: st.OOMKilled, Why: line, Err: err}
}

// errorLine matches a line that says something failed: "Error: Cannot
// find module", "ModuleNotFoundError: ...", "npm ERR!", "sh: foo: not
// found", "panic: ...", "fatal: ...". Words, so that "throw err;" is not.
var errorLine = regexp.MustCompile(`(?i)(error|exception)\b|\bERR!|\b(fatal|panic|cannot|can't|could not|couldn't|unable to|failed|denied|not found|no such|missing|invalid|unknown|required)\b`)

// whyLine picks, from the start of a server's stderr, the line that says
// why it failed: the first that looks like an error, else the first that
// is not blank; "" when there is none.
func whyLine(stderr string) string {
	first := ""
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if first == "" {
			first = l
		}
		if errorLine.MatchString(l) {
			return l
		}
	}
	return first
}
