package sandbox

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// One reading of the server's words. Every message the transports pass
// (stdout lines, HTTP bodies and events) is read once by wire.Read as
// the server sent it: where two mainstream readers part, each place is
// recorded (report.Server.Ambiguities, rule ambiguous-message) and the
// client is given the judge's own reading re-encoded, so that what the
// SDK acts on is what was judged. A response whose id is in another form
// than the request's (1.0 or "1" for 1) is matched as the TypeScript SDK
// matches it and given the request's id.

// judge returns what the client reads of a message that passed the
// bounds: raw as received, clean as report.CleanJSON made it; nil for
// nothing (a response in no id form of a request's, answering none).
func (g *frameGate) judge(s *frameScan, raw, clean []byte) []byte {
	r, err := wire.Read(raw)
	if !r.Ambiguous() {
		return g.matchID(s, clean)
	}
	if err != nil {
		// Valid JSON to Go's syntax check (1e400) but no strict reader's
		// message: as a line only some readers take.
		out, _ := g.refuseAmbiguous(s, r)
		return out
	}
	out := clean
	if c, cerr := wire.Read(clean); cerr == nil {
		out = c.Canonical
	}
	g.ambiguous(s, r, out, false)
	if g.passAsRead {
		out = clean
	}
	return g.matchID(s, out)
}

// judgeRefused records the ambiguities of a line no strict reader takes
// whole but some reader does (NaN, trailing data, a byte-order mark): the
// client is not given it, and a client of another reader would act on
// it. ambiguous says so; out, when the line answers a request of the
// client's, is the error that answers it in its place (the call ends now,
// not at its timeout).
func (g *frameGate) judgeRefused(s *frameScan, raw []byte) (out []byte, ambiguous bool) {
	r, err := wire.Read(raw)
	if err == nil || !r.Ambiguous() {
		return nil, false
	}
	return g.refuseAmbiguous(s, r)
}

// refuseAmbiguous records a reading that has no strict form and returns the
// error that answers the client's request in its place (nil for none).
func (g *frameGate) refuseAmbiguous(s *frameScan, r wire.Reading) (out []byte, ambiguous bool) {
	g.ambiguous(s, r, nil, true)
	id := s.idKey()
	if id == "" || s.hasMethod || !(s.hasResult || s.hasError) {
		return nil, true
	}
	g.mu.Lock()
	waiting := g.waiting[id]
	g.mu.Unlock()
	if !waiting {
		return nil, true
	}
	msg := fmt.Sprintf("mcpsandbox: the server's answer reads differently to different JSON readers (%s) and was not given to the client", r.Found[0].Kind)
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, ambiguousErrorCode, strconv.Quote(msg)), true
}

// ambiguousErrorCode is the JSON-RPC error the client puts in place of an
// answer no strict reader takes whole.
const ambiguousErrorCode = -32098

// matchID gives a response in another id form than the request's the
// request's id, when it answers one request as the TypeScript SDK
// matches (Number(id)); the form is an ambiguity.
func (g *frameGate) matchID(s *frameScan, msg []byte) []byte {
	if s.hasMethod || !(s.hasResult || s.hasError) || s.overflow || len(s.id) == 0 || bytes.Equal(s.id, []byte("null")) {
		return msg
	}
	n, ok := wire.JSNumber(s.id)
	g.mu.Lock()
	if k := wire.IDKey(s.id); k != "" && g.waiting[k] {
		// The exact form of a request's id.
		g.mu.Unlock()
		return msg
	}
	match, method := "", ""
	if ok {
		for m, k := range g.lastSent {
			if v, err := strconv.ParseFloat(k, 64); err == nil && !strings.HasPrefix(k, `"`) && v == n && g.waiting[k] {
				if match != "" {
					match = "-" // two requests: no match
					break
				}
				match, method = k, m
			}
		}
	}
	g.mu.Unlock()
	if match == "" || match == "-" {
		if k := wire.IDKey(s.id); k == "" || !safeIntegerKey(k) {
			// Not given to the client: the go-sdk would take 1.5 for 1.
			g.record(report.Ambiguity{Kind: wire.IDForm.String(), Path: "id", Refused: true,
				Detail: fmt.Sprintf("the id %.40s is in no form a request's id has and answers none of the client's requests as the TypeScript SDK matches (Number(id)); the go-sdk truncates a number to an integer", s.id)})
			return nil
		}
		return msg
	}
	a := report.Ambiguity{Kind: wire.IDForm.String(), Path: "id",
		Detail: fmt.Sprintf("the id %.40s is no request's exact form", s.id)}
	// The go-sdk matches a number (1.0), never a string ("1").
	a.Method = publicMethod(method)
	a.Detail += fmt.Sprintf(": the TypeScript SDK matches it to request %s (Number(id)), the go-sdk only if it is a number, Python not at all; the client was given %s", match, match)
	g.record(a)
	if g.passAsRead {
		return msg // the relay matches it itself, and gives the client's own id
	}
	out, err := wire.ReplaceMember(msg, "id", []byte(match))
	if err != nil {
		return msg
	}
	s.id = append(s.id[:0], match...)
	return bytes.TrimSuffix(out, []byte("\n"))
}

// ambiguous records the ambiguities of one message; canonical (nil when
// refused) names the tools of a tool list.
func (g *frameGate) ambiguous(s *frameScan, r wire.Reading, canonical []byte, refused bool) {
	method := ""
	if s.hasMethod && !s.overflow {
		var m string
		if wire.Unmarshal(s.method, &m) == nil {
			method = m
		}
	} else if k := s.idKey(); k != "" {
		g.mu.Lock()
		for m, id := range g.lastSent {
			if id == k {
				method = publicMethod(m)
			}
		}
		g.mu.Unlock()
	}
	var tools []string
	if canonical != nil && bytes.Contains(canonical, []byte(`"tools"`)) {
		var m struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		if wire.Unmarshal(canonical, &m) == nil {
			for _, t := range m.Result.Tools {
				tools = append(tools, t.Name)
			}
		}
	}
	for _, a := range r.Found {
		ra := report.Ambiguity{Kind: a.Kind.String(), Method: method, Path: a.Path, Key: a.Key, Detail: a.Detail, Refused: refused}
		if i, ok := toolIndex(a.Path); ok && i < len(tools) {
			ra.Tool = tools[i]
		}
		g.record(ra)
	}
	g.mu.Lock()
	g.ambOmitted += r.All - len(r.Found)
	g.mu.Unlock()
}

// safeIntegerKey says whether an exact id key is a string or an integer
// the TypeScript SDK takes (at most 2^53-1): a larger one answers no
// request any client sent.
func safeIntegerKey(k string) bool {
	i, err := strconv.ParseInt(k, 10, 64)
	return err != nil || (i <= 1<<53-1 && i >= -(1<<53-1))
}

// publicMethod is a gate key's method (run keys each request by its id,
// the method after it: runKey).
func publicMethod(key string) string {
	if rest, ok := strings.CutPrefix(key, runMethod); ok {
		_, m, _ := strings.Cut(rest, "\x00")
		return m
	}
	return key
}

// toolIndex reads i from a path under result.tools[i].
func toolIndex(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "result.tools[")
	if !ok {
		return 0, false
	}
	n, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return i, err == nil
}

// record keeps one ambiguity (the first report.MaxAmbiguities; the rest
// counted) and tells the session's hook.
func (g *frameGate) record(a report.Ambiguity) {
	a.Key = report.EscapeInvalid(a.Key)
	a.Path = report.EscapeInvalid(a.Path)
	// A session lists its tools again and again: each place is said
	// once, whatever its detail (an id's value) says.
	key := a
	key.Detail = ""
	g.mu.Lock()
	if g.ambSeen[key] {
		g.mu.Unlock()
		return
	}
	if len(g.amb) < report.MaxAmbiguities {
		g.amb = append(g.amb, a)
		g.ambSeen[key] = true
	} else {
		g.ambOmitted++
	}
	hook := g.onAmbiguity
	g.mu.Unlock()
	if hook != nil {
		hook(a)
	}
}

// ambiguities are those recorded, and how many more were not kept.
func (g *frameGate) ambiguities() ([]report.Ambiguity, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]report.Ambiguity(nil), g.amb...), g.ambOmitted
}
