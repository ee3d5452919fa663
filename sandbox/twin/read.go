package twin

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// The twin reads every message of the client's once, as the judge
// (sandbox/wire), before its SDK does: a stdio line (the relay's
// connection) or an HTTP POST's body. Where mainstream JSON readers part
// on it (a duplicate "name", a "NAME" beside it, NaN, a lone
// surrogate...), each place is kept in the ledger (LedgerOut.Ambiguities)
// with the message's method and, for tools/call, the tool as the twin
// read them; the SDK is then given the judge's reading (wire's canonical
// form), so that what the ledger says the client called is what the twin
// acted on. A message with no reading every strict reader takes (wire
// refuses it: NaN, trailing data, a byte-order mark; or no JSON value on
// the line, as a message across lines that only a streaming reader
// takes), or past the SDK's own bound, is not read: it is an entry of the
// ledger with its error and counted (LedgerOut.Unread); on stdio it ends
// the connection, as the SDK ends one on a message it cannot decode, and
// over HTTP it is answered 400 (413 past the bound).

// MaxAmbiguities bounds the ambiguities the ledger keeps; the rest are
// counted (LedgerOut.AmbiguitiesOmitted): the client cannot grow the
// ledger without bound.
const MaxAmbiguities = 64

// The bounds on one message are the SDK's own: a stdio line
// (mcp.DefaultMaxLineLength, 16 MiB) and an HTTP body
// (mcp.DefaultMaxRequestBodyBytes, 4 MiB).
const (
	maxLine = mcp.DefaultMaxLineLength
	maxBody = mcp.DefaultMaxRequestBodyBytes
)

// Ambiguity is one place where two readers part on a message the twin
// received: report.Ambiguity (kind, method, tool, path, key, detail,
// refused: the twin did not read the message), with the phase and the
// connection it came in.
type Ambiguity struct {
	Phase Phase `json:"phase"`
	Conn  Conn  `json:"conn"`
	report.Ambiguity
}

// errUnread is why a message was not read.
var errUnread = errors.New("the twin does not read the message")

// readMessage reads one message of the client's (a line, a body) as the
// judge, records where readers part on it and returns the reading the
// SDK is given. An error (wrapping errUnread) means the message is not
// read; it is then in the ledger, with its reason.
func (l *ledger) readMessage(conn Conn, msg []byte) ([]byte, error) {
	r, err := wire.Read(msg)
	var heads []head
	if err == nil {
		heads = headsOf(r.Canonical)
	}
	if r.All > 0 {
		l.mu.Lock()
		for _, a := range r.Found {
			if len(l.ambiguities) >= MaxAmbiguities {
				l.ambOmitted[l.phase]++
				continue
			}
			h := headAt(heads, a.Path)
			l.ambiguities = append(l.ambiguities, Ambiguity{Phase: l.phase, Conn: conn, Ambiguity: report.Ambiguity{
				Kind: a.Kind.String(), Method: h.method, Tool: h.tool, Path: a.Path, Key: a.Key, Detail: a.Detail, Refused: err != nil}})
		}
		if n := r.All - len(r.Found); n > 0 {
			l.ambOmitted[l.phase] += n
		}
		l.mu.Unlock()
	}
	if err != nil {
		why := fmt.Sprintf("a message (%d bytes) with no reading every strict JSON reader takes, not read: %v", len(msg), err)
		l.unread(conn, why)
		return nil, fmt.Errorf("%w: %s", errUnread, why)
	}
	return r.Canonical, nil
}

// unread records a message the twin did not read.
func (l *ledger) unread(conn Conn, why string) {
	l.mu.Lock()
	l.unreadN[l.phase]++
	l.mu.Unlock()
	l.add(Entry{Conn: conn, Error: clip(why, 512)}, nil)
}

// head is a message's method and, on tools/call, its tool, as the twin
// reads them (case-sensitively, as the SDK decodes).
type head struct{ method, tool string }

// headsOf reads the heads of a canonical message, or of each message of
// a batch.
func headsOf(canon []byte) []head {
	msgs := []json.RawMessage{canon}
	if len(canon) > 0 && canon[0] == '[' {
		msgs = nil
		if wire.Unmarshal(canon, &msgs) != nil {
			return nil
		}
	}
	out := make([]head, len(msgs))
	for i, m := range msgs {
		var top struct {
			Method json.RawMessage `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if wire.Unmarshal(m, &top) != nil {
			continue
		}
		out[i].method = clip(str(top.Method), 128)
		if out[i].method == "tools/call" {
			var p struct {
				Name json.RawMessage `json:"name"`
			}
			if wire.Unmarshal(top.Params, &p) == nil {
				out[i].tool = clip(str(p.Name), 128)
			}
		}
	}
	return out
}

// str is raw as a JSON string, "" when it is none.
func str(raw json.RawMessage) string {
	var s string
	if wire.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// headAt is the head of the message path is in: a batch's element
// ("[2].params.NAME"), or the one message.
func headAt(heads []head, path string) head {
	if len(heads) == 0 {
		return head{}
	}
	if len(heads) == 1 && !strings.HasPrefix(path, "[") {
		return heads[0]
	}
	if rest, ok := strings.CutPrefix(path, "["); ok {
		if n, _, ok := strings.Cut(rest, "]"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(heads) {
				return heads[i]
			}
		}
	}
	return head{}
}

// lineReader is the stdio reader the SDK is given: each line the client
// sends read by the ledger first, the SDK given its canonical form, one
// line each; at a line that is not read it ends, with the reason.
type lineReader struct {
	r    *bufio.Reader
	c    io.Closer
	l    *ledger
	conn Conn
	max  int
	out  []byte // what the SDK has yet to read
	err  error
}

func newLineReader(l *ledger, rc io.ReadCloser, max int) *lineReader {
	return &lineReader{r: bufio.NewReader(rc), c: rc, l: l, conn: ConnStdio, max: max}
}

func (lr *lineReader) Read(p []byte) (int, error) {
	for len(lr.out) == 0 {
		if lr.err != nil {
			return 0, lr.err
		}
		line, err := lr.line()
		if err != nil {
			lr.err = err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue // no message (the SDK's decoder skips blank lines too)
		}
		canon, rerr := lr.l.readMessage(lr.conn, bytes.TrimRight(line, "\r\n"))
		if rerr != nil {
			lr.err = rerr
			continue
		}
		lr.out = append(canon, '\n')
	}
	n := copy(p, lr.out)
	lr.out = lr.out[n:]
	return n, nil
}

// line reads the next line (the last may end without a newline), at most
// max bytes; past them it records the line unread and fails.
func (lr *lineReader) line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if len(line)+len(chunk) > lr.max {
			why := fmt.Sprintf("a line over %d bytes, not read", lr.max)
			lr.l.unread(lr.conn, why)
			return nil, fmt.Errorf("%w: %s", errUnread, why)
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) > 0:
			return line, err // the last line, then err
		default:
			return nil, err
		}
	}
}

func (lr *lineReader) Close() error { return lr.c.Close() }

// readingHandler reads each POST's body as the ledger does a line before
// next (the SDK's handler) does, and gives next the canonical form.
func readingHandler(l *ledger, max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.Body == nil {
			next.ServeHTTP(w, req)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, max))
		req.Body.Close()
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				l.unread(ConnHTTP, fmt.Sprintf("a request body over %d bytes, not read", max))
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		canon, err := l.readMessage(ConnHTTP, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(canon))
		req.ContentLength = int64(len(canon))
		next.ServeHTTP(w, req)
	})
}
