package sandbox

import (
	"encoding/json"
	"io"
	"strconv"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// StdoutFilter is the filter OpenRaw puts between the server's stdout and
// the reader behind it (run's relay), over any reader: the frame gate,
// which reads each line as the judge does and passes it on as read, and
// the noise filter. Exported so that what the relay is given of a line is
// tested over a pipe, without a container, through the same code.
type StdoutFilter struct {
	gate  *frameGate
	noise *noiseFilter
}

// NewStdoutFilter is a filter under bounds b (zero fields: the defaults)
// that tells onAmbiguity, if set, each place where readers part.
func NewStdoutFilter(b Bounds, onAmbiguity func(report.Ambiguity)) *StdoutFilter {
	g := newFrameGate(b.WithDefaults())
	g.passAsRead, g.onAmbiguity = true, onAmbiguity
	return &StdoutFilter{gate: g, noise: &noiseFilter{maxKeep: 2}}
}

// Run filters in to out until in ends; out is then closed.
func (f *StdoutFilter) Run(in io.Reader, out *io.PipeWriter) { f.noise.filter(in, out, f.gate) }

// ExpectAnswer and Answered: see Session.ExpectAnswer.
func (f *StdoutFilter) ExpectAnswer(id json.RawMessage, method string) {
	expectAnswer(f.gate, id, method)
}

// Answered: see Session.ExpectAnswer.
func (f *StdoutFilter) Answered(id json.RawMessage, method string) { f.gate.take(runKey(id, method)) }

// ExpectAnswer and Answered tell the stdout filter which ids a proxied
// client waits for (run's relay calls them), so that a response refused
// over a bound is answered with an error in its place (as for a scan)
// rather than dropped.
func (s *Session) ExpectAnswer(id json.RawMessage, method string) { expectAnswer(s.gate, id, method) }

// Answered: see ExpectAnswer.
func (s *Session) Answered(id json.RawMessage, method string) { s.gate.take(runKey(id, method)) }

func expectAnswer(g *frameGate, id json.RawMessage, method string) {
	if v, ok := idValue(id); ok {
		g.sent(runKey(id, method), v)
	}
}

// runMethod prefixes a proxied client's requests' keys in the frame gate: one
// key per id, with the request's method after the id (publicMethod).
const runMethod = "run:"

func runKey(id json.RawMessage, method string) string {
	return runMethod + rawIDKey(id) + "\x00" + method
}

// idValue is a raw id as the gate keys it (int64 or string).
func idValue(id json.RawMessage) (any, bool) {
	if k := wire.IDKey(id); k != "" {
		if k[0] == '"' {
			var str string
			if wire.Unmarshal(id, &str) == nil {
				return str, true
			}
			return nil, false
		}
		if i, err := strconv.ParseInt(k, 10, 64); err == nil {
			return i, true
		}
	}
	return nil, false
}
