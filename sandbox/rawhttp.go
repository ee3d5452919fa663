package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// `mcpsandbox run --transport http|sse`: the relay speaks JSON-RPC lines
// (sandbox/proxy), so a server over HTTP is handed out as RawStdio too.
// Each line the relay writes is one message, sent with the SDK's client
// connection (a POST; the session id and the SSE endpoint are the SDK's
// business); each message the connection reads (a POST's answer or event
// stream, the SSE stream) is one line to read. The streamable
// connection's standalone GET stream, which the SDK opens only for its
// own client sessions, is opened here once initialize is answered, so
// that what the server says outside a request (notifications, requests
// of its own) reaches the client as over stdio.

// rawHTTP connects to the server's endpoint, within startCtx (over SSE
// the endpoint event is waited for), and hands the connection out as the
// session's RawStdio, for as long as ctx.
func (s *Session) rawHTTP(ctx, startCtx context.Context, t mcp.Transport) error {
	var hc *http.Client
	var ver *versionHeader
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		// The SDK's connection sends the negotiated version only once its
		// own client session tells it; the relay's does not, so it is set
		// here, on every request, once known.
		ver = &versionHeader{}
		base := http.Client{}
		if st.HTTPClient != nil {
			base = *st.HTTPClient
		}
		rt := base.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		base.Transport = versionRoundTripper{base: rt, v: ver}
		hc = &base
		copied := *st
		copied.HTTPClient = hc
		t = &copied
	}
	conn, err := t.Connect(startCtx)
	if err != nil {
		if ctx.Err() == nil && startCtx.Err() != nil {
			s.Problem("timeout", 0, "no connection to %s within --start-timeout %s", s.rep.Server.Endpoint, s.opts.StartTimeout)
		} else {
			s.Problem("protocol", 0, "connecting to %s: %s", s.rep.Server.Endpoint, report.OneLine(s.clip(err.Error())))
		}
		return fmt.Errorf("%w: connecting over %s: %w%s", ErrServerStart, s.opts.Transport.Kind, err, s.authHint(err))
	}
	h := newHTTPStdio(ctx, conn)
	if hc != nil {
		h.stream = func(ctx context.Context, version string) { s.standaloneStream(ctx, hc, conn, version, h.receive) }
		h.version = ver
	}
	s.stdio = &RawStdio{Reader: h.reader(), Writer: h}
	if s.ctr != nil {
		// Nothing on the connection says the server is gone until a
		// request fails: its container's end does, as its stdout's end
		// does over stdio.
		h.exited = s.ctr.drained
		go func() {
			select {
			case <-h.exited:
				h.end(errServerExited)
			case <-h.ctx.Done():
			}
		}()
	}
	go h.readLoop()
	return nil
}

// errServerExited ends what the relay reads when the server over HTTP
// exits.
var errServerExited = errors.New("the server exited")

// httpStdio is a client connection seen as JSON-RPC lines.
type httpStdio struct {
	ctx    context.Context
	cancel context.CancelFunc
	conn   mcp.Connection
	pr     *io.PipeReader
	pw     *io.PipeWriter
	outMu  sync.Mutex
	// stream opens the standalone stream for the version negotiated (nil:
	// none, over SSE the connection's own stream is it).
	stream  func(ctx context.Context, version string)
	version *versionHeader
	// exited is closed when the server's container has ended (nil: not
	// known).
	exited <-chan struct{}

	mu       sync.Mutex
	buf      []byte
	inflight map[any]string // the client's requests not yet answered: their method
	closed   bool           // the relay closed its side (the client's EOF)
	ended    bool
	sending  int           // requests being sent
	idle     chan struct{} // closed when sending drops to 0
}

func newHTTPStdio(ctx context.Context, conn mcp.Connection) *httpStdio {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	return &httpStdio{ctx: ctx, cancel: cancel, conn: conn, pr: pr, pw: pw, inflight: map[any]string{}}
}

// reader is what the relay reads; closing it closes the connection
// (teardown).
func (h *httpStdio) reader() io.ReadCloser { return httpReader{h} }

type httpReader struct{ h *httpStdio }

func (r httpReader) Read(p []byte) (int, error) { return r.h.pr.Read(p) }
func (r httpReader) Close() error {
	h := r.h
	h.cancel()
	// The SDK's close asks the server to end the session (a DELETE, for
	// up to 5s): a server that holds it does not hold the teardown, which
	// stops the container next and so ends the request.
	closed := make(chan error, 1)
	go func() { closed <- h.conn.Close() }()
	var err error
	wait := time.NewTimer(httpCloseWait)
	select {
	case err = <-closed:
	case <-wait.C:
		err = fmt.Errorf("the server did not end the session within %s", httpCloseWait)
	}
	wait.Stop()
	h.end(nil)
	h.pr.Close()
	h.settle(httpCloseWait)
	return err
}

// httpCloseWait bounds the wait for the server to end the session at
// teardown.
const httpCloseWait = time.Second

// readLoop passes each message the connection reads on as a line.
func (h *httpStdio) readLoop() {
	for {
		msg, err := h.conn.Read(h.ctx)
		if err != nil {
			// The requests that failed with the connection are answered
			// with their errors first, so that the client reads why.
			h.settle(httpCloseWait)
			if h.exited != nil && h.ctx.Err() == nil {
				// A connection that fails because the server died says
				// so less well than its exit, which follows at once.
				wait := time.NewTimer(httpCloseWait)
				select {
				case <-h.exited:
					err = errServerExited
				case <-wait.C:
				}
				wait.Stop()
			}
			h.end(err)
			return
		}
		h.receive(msg)
	}
}

// receive passes on a message from the server, noting the answers.
func (h *httpStdio) receive(msg jsonrpc.Message) {
	last := false
	if resp, ok := msg.(*jsonrpc.Response); ok {
		last = h.answered(resp)
	}
	h.deliver(msg)
	if last {
		h.end(nil)
	}
}

// deliver writes msg as one line for the relay.
func (h *httpStdio) deliver(msg jsonrpc.Message) {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return
	}
	h.outMu.Lock()
	defer h.outMu.Unlock()
	h.pw.Write(append(data, '\n'))
}

// end ends what the relay reads: EOF, the server "closed its stdout".
func (h *httpStdio) end(err error) {
	h.mu.Lock()
	if h.ended {
		h.mu.Unlock()
		return
	}
	h.ended = true
	h.mu.Unlock()
	switch {
	case err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled):
		h.pw.Close()
	case errors.Is(err, errServerExited):
		h.pw.CloseWithError(err)
	default:
		h.pw.CloseWithError(fmt.Errorf("the connection to the server: %w", err))
	}
}

// answered notes the answer to a request of the client's: the answer to
// initialize gives the version, and opens the standalone stream; once
// the client has closed its side and nothing is in flight, the relay's
// read ends (once the answer is passed on: answered says when), as a
// server over stdio ends its stdout.
func (h *httpStdio) answered(resp *jsonrpc.Response) (last bool) {
	h.mu.Lock()
	method, ok := h.inflight[resp.ID.Raw()]
	delete(h.inflight, resp.ID.Raw())
	done := h.closed && len(h.inflight) == 0
	h.mu.Unlock()
	if ok && (method == "initialize" || method == "server/discover") && resp.Error == nil && h.version != nil {
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(resp.Result, &res)
		if res.ProtocolVersion != "" {
			h.version.v.Store(res.ProtocolVersion)
			if method == "initialize" && res.ProtocolVersion < noStandaloneStream && h.stream != nil {
				go h.stream(h.ctx, res.ProtocolVersion)
			}
		}
	}
	return done
}

// noStandaloneStream is the first protocol version without the
// standalone GET stream (SEP-2575).
const noStandaloneStream = "2026-07-28"

// Write takes the relay's lines (one message each) and sends them. A
// request is sent on its own goroutine, so that calls stay concurrent
// (a POST may be held until the answer), except initialize, whose answer
// sets the session every later message belongs to. What could not be
// sent is answered in the server's place with an error, so that no
// client waits for it.
func (h *httpStdio) Write(p []byte) (int, error) {
	h.mu.Lock()
	h.buf = append(h.buf, p...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(h.buf, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, bytes.Clone(h.buf[:i]))
		h.buf = h.buf[i+1:]
	}
	h.mu.Unlock()
	for _, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		h.send(line)
	}
	return len(p), nil
}

func (h *httpStdio) send(line []byte) {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		// Not a message: refused here, as a server would.
		h.refuse(jsonrpc.ID{}, jsonrpc.CodeParseError, "mcpsandbox: not a JSON-RPC message; not sent to the server over HTTP: "+err.Error())
		return
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || !req.IsCall() {
		if err := h.conn.Write(h.ctx, msg); err != nil && h.ctx.Err() == nil {
			h.deliverLog(err)
		}
		return
	}
	h.mu.Lock()
	h.inflight[req.ID.Raw()] = req.Method
	h.mu.Unlock()
	write := func() {
		if err := h.conn.Write(h.ctx, req); err != nil {
			h.mu.Lock()
			_, pending := h.inflight[req.ID.Raw()]
			h.mu.Unlock()
			if pending {
				var rpcErr *jsonrpc.Error
				resp := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: fmt.Sprintf("mcpsandbox: %s could not be sent to the server over HTTP: %v", req.Method, err)}}
				if errors.As(err, &rpcErr) {
					resp.Error = &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message}
				}
				h.receive(resp)
			}
		}
	}
	h.mu.Lock()
	if h.sending == 0 {
		h.idle = make(chan struct{})
	}
	h.sending++
	h.mu.Unlock()
	sent := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.sending--; h.sending == 0 {
			close(h.idle)
		}
	}
	if req.Method == "initialize" || req.Method == "server/discover" {
		defer sent()
		write()
		return
	}
	go func() { defer sent(); write() }()
}

// settle waits, at most d, for the requests being sent.
func (h *httpStdio) settle(d time.Duration) {
	h.mu.Lock()
	if h.sending == 0 {
		h.mu.Unlock()
		return
	}
	idle := h.idle
	h.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}

// refuse answers id (a null id when none) with an error, in the server's
// place.
func (h *httpStdio) refuse(id jsonrpc.ID, code int64, msg string) {
	h.deliver(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
}

// deliverLog tells the client, as a log message, that a notification or
// an answer of its could not be sent.
func (h *httpStdio) deliverLog(err error) {
	params, _ := json.Marshal(map[string]any{"level": "error", "logger": "mcpsandbox", "data": "a message could not be sent to the server over HTTP: " + err.Error()})
	h.deliver(&jsonrpc.Request{Method: "notifications/message", Params: params})
}

// Close is the client's EOF: nothing more is sent; what the relay reads
// ends once the requests in flight are answered (or at teardown).
func (h *httpStdio) Close() error {
	h.mu.Lock()
	h.closed = true
	done := len(h.inflight) == 0
	h.mu.Unlock()
	if done {
		h.end(nil)
	}
	return nil
}

// versionHeader is the protocol version negotiated, once known.
type versionHeader struct{ v atomic.Value }

// versionRoundTripper sets the protocol version header on the requests
// that have none.
type versionRoundTripper struct {
	base http.RoundTripper
	v    *versionHeader
}

func (t versionRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if v, _ := t.v.v.Load().(string); v != "" && req.Header.Get(mcpProtocolVersionHeader) == "" {
		req = req.Clone(req.Context())
		req.Header.Set(mcpProtocolVersionHeader, v)
	}
	return t.base.RoundTrip(req)
}

// The streamable transport's headers.
const (
	mcpProtocolVersionHeader = "Mcp-Protocol-Version"
	mcpSessionIDHeader       = "Mcp-Session-Id"
)

// standaloneStream is the streamable transport's GET stream: what the
// server says outside a request's answer. A server that serves none
// (405) or ends it is let be: the requests' own streams still carry
// everything about them. Its events go through the gate as every
// response does (httpClient), so each is bounded.
func (s *Session) standaloneStream(ctx context.Context, hc *http.Client, conn mcp.Connection, version string, deliver func(jsonrpc.Message)) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.rep.Server.Endpoint, nil)
	if err != nil {
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(mcpProtocolVersionHeader, version)
	if sid, ok := conn.(interface{ SessionID() string }); ok && sid.SessionID() != "" {
		req.Header.Set(mcpSessionIDHeader, sid.SessionID())
	}
	resp, err := hc.Do(req)
	if err != nil {
		s.logf("the standalone stream: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.logf("the standalone stream: the server answered %s", resp.Status)
		return
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, s.opts.Bounds.MaxMessage+64<<10)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if msg, err := jsonrpc.DecodeMessage(data); err == nil {
					deliver(msg)
				}
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		s.logf("the standalone stream ended: %v", err)
	}
}
