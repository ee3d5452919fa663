package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Frame is one JSON-RPC message, as it crossed the wire.
type Frame struct {
	Seq  int       `json:"seq"`
	Dir  string    `json:"dir"` // "send" (to the server), "recv" or "raw" (see Raw)
	Time time.Time `json:"time"`
	// Message is the message as read, JSON every reader accepts.
	Message json.RawMessage `json:"message,omitempty"`
	// Raw is set on a frame of its own (Dir "raw") for each line the
	// server sent that was not clean JSON (invalid UTF-8, an unpaired
	// surrogate, an escape that could hide a value: see
	// report.CleanJSON), just before the message the client read from
	// it, cleaned. It holds the line in base64: exactly as received with
	// --transcript-unredacted; by default with its string escapes decoded
	// (report.DecodeEscapes) and the run's bait replaced, so that the
	// bytes that are not UTF-8 are kept as they were.
	Raw []byte `json:"raw,omitempty"`
}

// Transcript records every JSON-RPC frame both ways with a timestamp, up to
// a byte bound beyond which frames are counted but not kept.
type Transcript struct {
	mu       sync.Mutex
	frames   []Frame
	bytes    int
	maxBytes int
	dropped  int
	// methods maps the ids of requests we sent to their method, so that raw
	// results can be found by method.
	methods map[string]string
	results map[string][]json.RawMessage
}

// NewTranscript returns a transcript that keeps up to maxBytes of frames.
func NewTranscript(maxBytes int) *Transcript {
	return &Transcript{maxBytes: maxBytes, methods: map[string]string{}, results: map[string][]json.RawMessage{}}
}

// Frames returns the frames kept and how many were dropped over the bound.
func (t *Transcript) Frames() ([]Frame, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Frame(nil), t.frames...), t.dropped
}

// Results returns the raw results of the requests of method, in order.
func (t *Transcript) Results(method string) []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]json.RawMessage(nil), t.results[method]...)
}

// take returns the raw results of the requests of method not taken yet,
// in order, and forgets them: a session lists its tools after every call,
// and what it read once need not be kept.
func (t *Transcript) take(method string) []json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.results[method]
	delete(t.results, method)
	return out
}

// keptResults are the methods whose raw results are kept for Results;
// the rest (tool results above all) are only in the frames, bounded.
var keptResults = map[string]bool{"initialize": true, "server/discover": true, "tools/list": true}

// methodOf is the method of the request of ours that id answers ("" for
// none), before the answer is recorded.
func (t *Transcript) methodOf(id jsonrpc.ID) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.methods[idKey(id)]
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// expect notes the method of a request about to be sent, so that its
// answer's raw result can be found by method.
func (t *Transcript) expect(msg jsonrpc.Message) {
	if m, ok := msg.(*jsonrpc.Request); ok && m.ID.IsValid() {
		t.mu.Lock()
		t.methods[idKey(m.ID)] = m.Method
		t.mu.Unlock()
	}
}

func (t *Transcript) record(dir string, msg jsonrpc.Message) {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"unencodable": err.Error()})
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if dir == "recv" {
			key := idKey(m.ID)
			if method, ok := t.methods[key]; ok && m.Error == nil && keptResults[method] {
				// These results are kept whole whatever the byte bound: the
				// report's server and tool list are built from them (each
				// message is bounded on the wire, the tool list in all).
				t.results[method] = append(t.results[method], append(json.RawMessage(nil), m.Result...))
			}
			delete(t.methods, key)
		}
	}
	t.add(Frame{Dir: dir, Message: data}, len(data))
}

// add keeps fr, numbered and timed, within the byte bound.
func (t *Transcript) add(fr Frame, size int) {
	if t.bytes+size > t.maxBytes {
		t.dropped++
		return
	}
	t.bytes += size
	fr.Seq, fr.Time = len(t.frames)+t.dropped+1, time.Now()
	t.frames = append(t.frames, fr)
}

// recordRaw keeps a line the server sent that was not clean JSON, as it
// was (the client reads it cleaned).
func (t *Transcript) recordRaw(line []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.add(Frame{Dir: "raw", Raw: append([]byte(nil), line...)}, len(line)*4/3)
}

// Redacted returns the frame with the placeholders' values replaced by
// their roles, in Message and in Raw.
func (f Frame) Redacted(ps []report.Placeholder) Frame {
	f.Message = json.RawMessage(report.RedactJSON(string(f.Message), ps))
	if f.Raw != nil {
		f.Raw = []byte(report.RedactJSON(string(report.DecodeEscapes(f.Raw)), ps))
	}
	return f
}

// recordingTransport is a Transport decorator that records every message
// through the connection it makes.
type recordingTransport struct {
	mcp.Transport
	t    *Transcript
	gate *frameGate // notes the requests sent and why a read failed; may be nil
	// repeat spares the SDK tools/list pages read before; may be nil.
	repeat *pageRepeat
}

func (r recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: c, t: r.t, gate: r.gate, repeat: r.repeat}, nil
}

type recordingConn struct {
	mcp.Connection
	t      *Transcript
	gate   *frameGate
	repeat *pageRepeat
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		method := ""
		if r, ok := msg.(*jsonrpc.Response); ok {
			method = c.t.methodOf(r.ID)
		}
		c.t.record("recv", msg)
		if r, ok := msg.(*jsonrpc.Response); ok && method == "tools/list" && c.repeat != nil {
			msg = c.repeat.answer(r)
		}
		msg = uncached(method, msg)
	} else if c.gate != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, mcp.ErrConnectionClosed) {
		// The stream is still there but the SDK could not read a message
		// from it: it will close the session, on the client's side.
		c.gate.closedBy(err)
	}
	return msg, err
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	// The request is noted and recorded before it is sent: the answer can
	// be read (and recorded) before Write returns, over a pipe and, over
	// HTTP+SSE, on the GET stream before the POST is answered. A frame
	// whose write failed is recorded all the same: it was (partly) sent.
	c.t.expect(msg)
	if m, ok := msg.(*jsonrpc.Request); ok && m.ID.IsValid() && c.gate != nil {
		c.gate.sent(m.Method, m.ID.Raw())
	}
	if m, ok := msg.(*jsonrpc.Request); ok && c.repeat != nil {
		c.repeat.sending(m)
	}
	c.t.record("send", msg)
	return c.Connection.Write(ctx, msg)
}

// cachedMethods are the requests whose results the MCP SDK keeps for the
// ttlMs the server gives them (from protocol version 2026-07-28 on) and
// answers itself meanwhile.
var cachedMethods = map[string]bool{"tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true, "resources/read": true}

// uncached takes ttlMs out of a result of a cachedMethods request before
// the SDK reads it (the transcript keeps it as sent): the scan lists at
// fixed points to see what changed, and a server must not answer a
// listing with the one before, nor see fewer listings than the scan made.
func uncached(method string, msg jsonrpc.Message) jsonrpc.Message {
	r, ok := msg.(*jsonrpc.Response)
	if !ok || !cachedMethods[method] || r.Error != nil || !bytes.Contains(r.Result, []byte(`"ttlMs"`)) {
		return msg
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(r.Result, &fields) != nil {
		return msg
	}
	if _, ok := fields["ttlMs"]; !ok {
		return msg
	}
	delete(fields, "ttlMs")
	res, err := json.Marshal(fields)
	if err != nil {
		return msg
	}
	out := *r
	out.Result = res
	return &out
}
