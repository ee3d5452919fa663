package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Frame is one JSON-RPC message, as it crossed the wire.
type Frame struct {
	Seq     int             `json:"seq"`
	Dir     string          `json:"dir"` // "send" (to the server) or "recv"
	Time    time.Time       `json:"time"`
	Message json.RawMessage `json:"message"`
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
var keptResults = map[string]bool{"initialize": true, "tools/list": true}

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
	if t.bytes+len(data) > t.maxBytes {
		t.dropped++
		return
	}
	t.bytes += len(data)
	t.frames = append(t.frames, Frame{Seq: len(t.frames) + t.dropped + 1, Dir: dir, Time: time.Now(), Message: data})
}

// recordingTransport is a Transport decorator that records every message
// through the connection it makes.
type recordingTransport struct {
	mcp.Transport
	t    *Transcript
	gate *frameGate // notes the requests sent and why a read failed; may be nil
}

func (r recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: c, t: r.t, gate: r.gate}, nil
}

type recordingConn struct {
	mcp.Connection
	t    *Transcript
	gate *frameGate
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.t.record("recv", msg)
	} else if c.gate != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, mcp.ErrConnectionClosed) {
		// The stream is still there but the SDK could not read a message
		// from it: it will close the session, on the client's side.
		c.gate.closedBy(err)
	}
	return msg, err
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	// The request's method is noted before it is sent: the answer can be
	// read (and recorded) before Write returns.
	c.t.expect(msg)
	if m, ok := msg.(*jsonrpc.Request); ok && m.ID.IsValid() && c.gate != nil {
		c.gate.sent(m.Method, m.ID.Raw())
	}
	err := c.Connection.Write(ctx, msg)
	if err == nil {
		c.t.record("send", msg)
	}
	return err
}
