package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// httpTransport waits for the server's port to accept connections (read
// from what it prints, for --port auto) and returns the SDK's client
// transport for it, on an HTTP client that dials into the container and
// passes every response through the gate. The server's stdout is no
// protocol channel here: it is kept with its stderr.
func (s *Session) httpTransport(ctx, startCtx context.Context, ctr *Container) (mcp.Transport, error) {
	o := s.opts
	go io.Copy(ctr.stderr, ctr.Stdout())
	port, err := s.waitReady(ctx, startCtx, ctr)
	if err != nil {
		return nil, err
	}
	endpoint := o.Transport.endpoint(port)
	s.rep.Server.Endpoint = endpoint
	s.logf("the server accepts connections on port %d; speaking %s to %s", port, o.Transport.Kind, endpoint)
	hc := s.httpClient(port)
	// The SDK's own cap on an event leaves room for the error a refusal
	// puts in a message's place, as on stdio.
	maxEvent := o.Bounds.MaxMessage + 64<<10
	if o.Transport.Kind == TransportSSE {
		return sessionLived{&mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxEventSize: maxEvent}}, nil
	}
	return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxEventSize: maxEvent}, nil
}

// httpClient is the client that reaches the server: every connection is
// dialed from the container's network namespace to the server's port on
// its loopback, and to nothing else (a redirect or an SSE endpoint that
// names another host or port is refused); no proxy, no compression, no
// redirect followed; the headers of --header on every request.
func (s *Session) httpClient(port int) *http.Client {
	local := map[string]bool{}
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		local[net.JoinHostPort(h, strconv.Itoa(port))] = true
	}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if !local[addr] {
				return nil, fmt.Errorf("the client only connects to the server's port %d on the container's loopback, not to %q", port, addr)
			}
			return s.netns.dial(ctx, port)
		},
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxResponseHeader,
		IdleConnTimeout:        30 * time.Second,
	}
	s.idle = tr.CloseIdleConnections
	return &http.Client{
		Transport:     &gateRoundTripper{base: tr, h: &httpGate{gate: s.gate, raw: s.transcript.recordRaw, failed: s.connFailed}, headers: s.opts.Transport.Headers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// maxResponseHeader bounds the headers of one response.
const maxResponseHeader = 64 << 10

// gateRoundTripper sets the request's headers and passes the response's
// body through the gate.
type gateRoundTripper struct {
	base    http.RoundTripper
	h       *httpGate
	headers http.Header
}

func (g *gateRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(g.headers) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range g.headers {
			if k == "Host" {
				req.Host = vs[len(vs)-1]
				continue
			}
			req.Header[k] = slices.Clone(vs)
		}
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			g.h.failed(err)
		}
		return nil, err
	}
	g.h.body(resp)
	return resp, nil
}

// waitReady waits, within the start timeout, until the server's port
// accepts a connection, reading the port from what the server prints when
// it is 0 (--port auto). The container's end or the timeout is an error
// that says what was waited for, with the server's last words.
func (s *Session) waitReady(ctx, startCtx context.Context, ctr *Container) (int, error) {
	o := s.opts
	port := o.Transport.Port
	var lastErr error
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if port == 0 {
			head := ctr.StderrHead()
			tail, _, _ := ctr.Stderr()
			if p, ok := portIn(head); ok {
				port = p
			} else if p, ok := portIn(tail); ok {
				port = p
			}
			if port != 0 {
				s.logf("the server printed port %d", port)
				if o.Network == NetworkSinkhole && slices.Contains(agent.SinkPorts(), port) {
					return 0, &InfraError{Cause: fmt.Sprintf("the server says it listens on port %d, which is the sinkhole's in the container", port),
						Fix: "have the server listen on another port (its --port option or PORT variable, say), or use --network none"}
				}
			}
		}
		if port != 0 {
			dctx, cancel := context.WithTimeout(startCtx, readyDial)
			c, err := s.netns.dial(dctx, port)
			cancel()
			if err == nil {
				c.Close()
				return port, nil
			}
			lastErr = err
		}
		select {
		case <-tick.C:
			continue
		case <-ctr.drained:
			// It exited: what it printed says why.
			if nf := s.notFound(ctx, ctr, nil); nf != nil {
				return 0, nf
			}
			if exit := s.exitBeforeInitialize(ctx, ctr, errors.New("the server exited before it accepted a connection")); exit != nil {
				s.Problem("crash", 0, "%s", exit)
				return 0, fmt.Errorf("%w: %w", ErrServerStart, exit)
			}
		case <-startCtx.Done():
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		msg := s.notReady(port, lastErr, ctr)
		s.Problem("timeout", 0, "%s", msg)
		return 0, fmt.Errorf("%w: %s", ErrServerStart, msg)
	}
}

// notReady says what the runner waited for and did not get.
func (s *Session) notReady(port int, lastErr error, ctr *Container) string {
	o := s.opts
	var what string
	if port == 0 {
		what = fmt.Sprintf("the server printed no port (--port auto looks for http://HOST:PORT, HOST:PORT or \"port N\" in its stdout and stderr) within --start-timeout %s", o.StartTimeout)
	} else {
		what = fmt.Sprintf("the server did not accept connections on port %d of the container's loopback (%s %s) within --start-timeout %s", port, o.Transport.Kind, o.Transport.endpoint(port), o.StartTimeout)
		if lastErr != nil {
			what += " (" + report.OneLine(lastErr.Error()) + ")"
		}
	}
	tail, _, _ := ctr.Stderr()
	// Redacted whole, then cut: a cut value would not be found.
	last := strings.TrimSpace(report.RedactString(report.EscapeInvalid(tail), s.opts.Placeholders))
	if last == "" {
		return what + "; it printed nothing"
	}
	if len(last) > maxReadyTail {
		last = "…" + strings.ToValidUTF8(last[len(last)-maxReadyTail:], "")
	}
	return what + "; its output ends: " + report.OneLine(last)
}

// maxReadyTail bounds what of the server's output a readiness error
// quotes.
const maxReadyTail = 512

// portPattern finds the port a server says it listens on: a URL
// (http://localhost:3001/mcp), an address (127.0.0.1:3001, [::]:3001,
// :::3001, 0.0.0.0:3001) or words (listening on port 3001, port: 3001).
var portPattern = regexp.MustCompile(`(?i)https?://[^\s/]*:(\d{1,5})\b|(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]|::1?):(\d{1,5})\b|\bport\s*[:=]?\s*(\d{1,5})\b`)

// portIn is the first port named in out.
func portIn(out string) (int, bool) {
	for _, m := range portPattern.FindAllStringSubmatch(out, -1) {
		for _, g := range m[1:] {
			if p, err := strconv.Atoi(g); err == nil && p > 0 && p <= 65535 {
				return p, true
			}
		}
	}
	return 0, false
}

// isNetError says whether err is the connection's failing (over HTTP: a
// request that could not be sent, a stream cut), not the server's answer.
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// sessionLived connects with a context that ends when the connection is
// closed, not when Connect's does: the SDK's SSE client holds its GET
// stream on the context it connects with, and the session outlives the
// start timeout that bounds the connecting.
type sessionLived struct{ mcp.Transport }

func (t sessionLived) Connect(ctx context.Context) (mcp.Connection, error) {
	lived, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	c, err := t.Transport.Connect(lived)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			c.Close()
			err = context.Cause(ctx)
		}
		return nil, err
	}
	return cancelConn{Connection: c, cancel: cancel}, nil
}

type cancelConn struct {
	mcp.Connection
	cancel context.CancelFunc
}

func (c cancelConn) Close() error {
	err := c.Connection.Close()
	c.cancel()
	return err
}

// sdkRejected is the JSON-RPC error code the SDK gives a request its
// transport could not deliver (jsonrpc2.ErrRejected, internal to it).
const sdkRejected = -32005

// connFailed notes a request or a response stream that failed on the
// connection (not by our cancelling it).
func (s *Session) connFailed(err error) {
	s.lastFailure.Store(report.OneLine(err.Error()))
	s.connFailures.Add(1)
}

func (s *Session) lastConnFailure() string {
	v, _ := s.lastFailure.Load().(string)
	return v
}

// authHint says, for a server over HTTP that refused initialize as
// unauthorized, what may be missing.
func (s *Session) authHint(err error) string {
	if !s.opts.Transport.Kind.OverHTTP() {
		return ""
	}
	if msg := err.Error(); strings.Contains(msg, http.StatusText(http.StatusUnauthorized)) || strings.Contains(msg, http.StatusText(http.StatusForbidden)) {
		return " (does the server want a token? --header 'Authorization: Bearer ...' sends one)"
	}
	return ""
}
