package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"sync"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// frameScan reads one line of the server's stdout a chunk at a time,
// keeping nothing of it but what a refusal needs: its size, its nesting,
// its top-level id and method (short), whether it is a response, and the
// size and SHA-256 of its top-level result. So a message of any size costs
// the scan a few hundred bytes.
type frameScan struct {
	n         int64
	depth     int
	maxDepth  int
	top       byte // the first byte that is not space
	inObject  bool // the outermost value is an object (after a byte-order mark too)
	done      bool // the first value has ended: what follows is no part of it
	inStr     bool
	esc       bool
	expectKey bool
	inKey     bool
	key       []byte // the raw key being read, quotes included (bounded)
	keyName   string // the last key read, decoded
	inValue   bool
	cur       string // the top-level key whose value is being read
	id        []byte
	method    []byte
	overflow  bool // id or method longer than kept
	hasResult bool
	hasError  bool
	hasMethod bool
	result    hash.Hash
	resultN   int64
	buf       [4096]byte // result bytes not yet hashed
	bufN      int
}

// maxFrameKey and maxFrameField bound a key and an id or method kept by
// the scan; longer ones are no key or id we act on.
const (
	maxFrameKey   = 64
	maxFrameField = 256
)

func (s *frameScan) reset() {
	*s = frameScan{key: s.key[:0], id: s.id[:0], method: s.method[:0]}
}

func (s *frameScan) write(p []byte) {
	for _, c := range p {
		s.byte1(c)
	}
}

func (s *frameScan) byte1(c byte) {
	s.n++
	if s.inStr {
		s.capture(c)
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		case c == '"':
			s.inStr = false
			if s.inKey {
				s.inKey = false
				s.keyName = ""
				if len(s.key) <= maxFrameKey {
					var k string
					if json.Unmarshal(s.key, &k) == nil {
						s.keyName = k
					}
				}
			}
		}
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
		// Whitespace between top-level members is no part of a value; in a
		// nested value it is.
		if s.depth >= 2 {
			s.capture(c)
		}
	case '"':
		s.inStr = true
		if s.depth == 1 && s.expectKey && !s.done {
			s.inKey, s.expectKey = true, false
			s.key = s.key[:0]
		}
		s.capture(c)
	case '{', '[':
		if s.depth == 0 && s.top == 0 {
			s.top = c
		}
		s.depth++
		s.maxDepth = max(s.maxDepth, s.depth)
		if s.depth == 1 {
			if !s.done {
				s.expectKey = c == '{'
				s.inObject = c == '{'
			}
			return
		}
		s.capture(c)
	case '}', ']':
		if s.depth == 1 {
			s.endValue()
		} else if s.depth > 1 {
			s.capture(c)
		}
		s.depth = max(s.depth-1, 0)
		s.done = s.done || s.depth == 0
	case ',':
		if s.depth == 1 && !s.done {
			s.endValue()
			s.expectKey = s.inObject
			return
		}
		s.capture(c)
	case ':':
		if s.depth == 1 && !s.inValue && !s.done {
			s.inValue, s.cur = true, s.keyName
			switch s.cur {
			case "id":
				// A key given twice is read for its last value, as every
				// reader reads it (and the judge re-encodes it).
				s.id = s.id[:0]
			case "result":
				s.hasResult = true
				s.result = sha256.New()
			case "error":
				s.hasError = true
			case "method":
				s.hasMethod = true
				s.method = s.method[:0]
			}
			return
		}
		s.capture(c)
	default:
		if s.depth == 0 && s.top == 0 {
			s.top = c
		}
		s.capture(c)
	}
}

// capture keeps byte c of a key, or of the id's, method's or result's
// value.
func (s *frameScan) capture(c byte) {
	switch {
	case s.inKey:
		if len(s.key) <= maxFrameKey {
			s.key = append(s.key, c)
		}
	case !s.inValue || s.depth == 0:
	case s.cur == "result":
		s.buf[s.bufN] = c
		if s.bufN++; s.bufN == len(s.buf) {
			s.flush()
		}
	case s.cur == "id":
		s.keep(&s.id, c)
	case s.cur == "method":
		s.keep(&s.method, c)
	}
}

func (s *frameScan) keep(b *[]byte, c byte) {
	if len(*b) < maxFrameField {
		*b = append(*b, c)
	} else {
		s.overflow = true
	}
}

func (s *frameScan) flush() {
	if s.result != nil && s.bufN > 0 {
		s.result.Write(s.buf[:s.bufN])
		s.resultN += int64(s.bufN)
	}
	s.bufN = 0
}

func (s *frameScan) endValue() {
	if s.cur == "result" {
		s.flush()
	}
	s.inValue, s.cur = false, ""
}

// digest is the size and SHA-256 of a result as sent.
type digest struct {
	Bytes  int64
	Sha256 string
}

func (s *frameScan) digest() digest {
	if s.result == nil {
		return digest{}
	}
	s.flush()
	return digest{Bytes: s.resultN, Sha256: hex.EncodeToString(s.result.Sum(nil))}
}

// idKey is the message's id in the form frameGate keys it by ("" when it
// has none the client could have sent).
func (s *frameScan) idKey() string {
	if s.overflow || len(s.id) == 0 {
		return ""
	}
	return rawIDKey(s.id)
}

// rawIDKey keys a raw JSON id: a number as its integer, a string quoted.
func rawIDKey(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return ""
	}
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return strconv.FormatInt(i, 10)
		}
	case string:
		return strconv.Quote(v)
	}
	return ""
}

// sdkIDKey keys an id the client sent, as rawIDKey does.
func sdkIDKey(raw any) string {
	switch v := raw.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return strconv.Quote(v)
	}
	return ""
}

// BoundKind names the bound a message broke.
type BoundKind int

const (
	BoundMessageSize BoundKind = iota + 1
	BoundDepth
)

func (k BoundKind) String() string {
	switch k {
	case BoundMessageSize:
		return "message size"
	case BoundDepth:
		return "nesting depth"
	}
	return fmt.Sprintf("BoundKind(%d)", int(k))
}

// refusal is a message from the server that broke a bound.
type refusal struct {
	Kind   BoundKind
	Limit  int   // the bound
	Bytes  int64 // the message's size
	Depth  int   // its nesting (as far as it was read)
	ID     string
	Method string // of a request or notification from the server
	Result digest // of a response's result
	// Answered: a response to a request of ours, answered in its place
	// with an error (boundErrorCode).
	Answered bool
}

func (r refusal) String() string {
	what := fmt.Sprintf("a message of %d bytes", r.Bytes)
	if r.Kind == BoundDepth {
		what = fmt.Sprintf("a message nested %d deep", r.Depth)
	}
	bound := fmt.Sprintf("the %s bound (%d", r.Kind, r.Limit)
	if r.Kind == BoundMessageSize {
		bound += " bytes"
	}
	bound += ")"
	s := fmt.Sprintf("%s broke %s and was refused by the client", what, bound)
	if r.Result.Sha256 != "" {
		s += fmt.Sprintf("; its result was %d bytes, sha256 %s", r.Result.Bytes, r.Result.Sha256)
	}
	return s
}

// boundErrorCode is the JSON-RPC error the client puts in place of a
// refused response. A server could send it too: a refusal is only one the
// gate recorded.
const boundErrorCode = -32099

// frameGate is what the transport knows about the messages it passed or
// refused: refusals, the result digests of responses, and the ids of the
// requests the client sent, by method; shared by the stdout filter and
// the recording connection.
type frameGate struct {
	bounds Bounds

	mu       sync.Mutex
	refused  []refusal          // the first maxRefusalsKept refusals, in order
	nRefused int                // every refusal
	nOther   int                // refusals that answer no request of ours
	byID     map[string]refusal // refusals of responses to our requests, until taken
	digests  map[string]digest  // results of responses to our requests, until taken
	lastSent map[string]string  // method -> id of the last request sent
	waiting  map[string]bool    // the ids of lastSent
	lost     error              // why the client closed the session, if it did
	// amb are the ambiguities met (see judge), the first
	// report.MaxAmbiguities; ambOmitted counts the rest. onAmbiguity, if
	// set, is told each as it is kept.
	amb         []report.Ambiguity
	ambSeen     map[report.Ambiguity]bool // amb, their details blank
	ambOmitted  int
	onAmbiguity func(report.Ambiguity)
	// passAsRead: the reader behind is run's relay, which reads each line
	// itself (wire) and acts on what it finds in it: the line is given as
	// it came (cleaned), not re-encoded nor its id set, so that the relay
	// sees what the filter saw. Lines with no strict reading are still
	// kept from it.
	passAsRead bool
}

// maxRefusalsKept bounds the refusals kept for the report; the rest are
// counted. The maps hold only the ids of the client's last request of
// each method, so a server that answers ids nobody sent grows nothing.
const maxRefusalsKept = 64

func newFrameGate(b Bounds) *frameGate {
	return &frameGate{bounds: b.WithDefaults(), byID: map[string]refusal{}, digests: map[string]digest{}, lastSent: map[string]string{}, waiting: map[string]bool{}, ambSeen: map[report.Ambiguity]bool{}}
}

// passed notes a response to a request of ours that went through, for
// its digest.
func (g *frameGate) passed(s *frameScan) {
	id := s.idKey()
	if id == "" || !s.hasResult || s.hasMethod {
		return
	}
	d := s.digest()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting[id] {
		g.digests[id] = d
	}
}

// refuse records a message over a bound and returns the error response to
// pass on in its place (nil when it answers no request).
func (g *frameGate) refuse(s *frameScan, kind BoundKind) []byte {
	r := refusal{Kind: kind, Bytes: s.n, Depth: s.maxDepth, ID: s.idKey(), Result: s.digest()}
	r.Limit = g.bounds.MaxMessage
	if kind == BoundDepth {
		r.Limit = g.bounds.MaxDepth
	}
	if s.hasMethod && !s.overflow {
		var m string
		if json.Unmarshal(s.method, &m) == nil {
			r.Method = m
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []byte
	if r.ID != "" && !s.hasMethod && (s.hasResult || s.hasError) && g.waiting[r.ID] {
		r.Answered = true
		msg, _ := json.Marshal(r.String())
		out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, s.id, boundErrorCode, msg)
		g.byID[r.ID] = r
	} else {
		g.nOther++
	}
	g.nRefused++
	if len(g.refused) < maxRefusalsKept {
		g.refused = append(g.refused, r)
	}
	return out
}

// sent notes the id of a request the client sent.
func (g *frameGate) sent(method string, id any) {
	if k := sdkIDKey(id); k != "" {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.forget(method)
		g.lastSent[method], g.waiting[k] = k, true
	}
}

// take returns what became of the answer to the last request of method:
// its result's digest, or the refusal in its place.
func (g *frameGate) take(method string) (digest, *refusal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, ok := g.lastSent[method]
	if !ok {
		return digest{}, nil
	}
	r, refused := g.byID[id]
	d := g.digests[id]
	g.forget(method)
	if refused {
		return digest{}, &r
	}
	return d, nil
}

// forget drops what is kept for the last request of method.
func (g *frameGate) forget(method string) {
	if id, ok := g.lastSent[method]; ok {
		delete(g.lastSent, method)
		delete(g.waiting, id)
		delete(g.byID, id)
		delete(g.digests, id)
	}
}

// refusals returns the refusals kept (the first maxRefusalsKept), how many
// there were in all, and how many answered no request of ours.
func (g *frameGate) refusals() (kept []refusal, all, other int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]refusal(nil), g.refused...), g.nRefused, g.nOther
}

// closedBy notes why the client could not read the server's stream (the
// SDK then closes the session): the session ended on the client's side.
func (g *frameGate) closedBy(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lost == nil {
		g.lost = err
	}
}

func (g *frameGate) lostBy() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lost
}
