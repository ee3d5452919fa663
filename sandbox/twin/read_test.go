package twin

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	initDone = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// rawStdio is a client that writes raw lines to the twin's stdio path
// (serveStdio, as the relay's connection reaches it) and reads answers.
type rawStdio struct {
	t   *testing.T
	c   net.Conn
	in  *bufio.Reader
	end chan struct{}
}

func dialStdio(t *testing.T, l *ledger, max int) *rawStdio {
	t.Helper()
	srvEnd, cliEnd := net.Pipe()
	end := make(chan struct{})
	go func() {
		serveStdio(context.Background(), clientServer(l, ConnStdio), l, srvEnd, max)
		close(end)
	}()
	t.Cleanup(func() { cliEnd.Close() })
	return &rawStdio{t: t, c: cliEnd, in: bufio.NewReader(cliEnd), end: end}
}

func (r *rawStdio) send(line string) {
	r.t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(r.c, line+"\n"); err != nil {
		r.t.Fatalf("sending %.60s: %v", line, err)
	}
}

// call sends a request and reads its answer.
func (r *rawStdio) call(line string) string {
	r.t.Helper()
	r.send(line)
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	ans, err := r.in.ReadString('\n')
	if err != nil {
		r.t.Fatalf("answer to %.60s: %v", line, err)
	}
	return ans
}

func (r *rawStdio) ended() bool {
	select {
	case <-r.end:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

func entryOf(t *testing.T, l *ledger, method string) []Entry {
	t.Helper()
	entries, _ := l.snapshot()
	var out []Entry
	for _, e := range entries {
		if e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

// A client's tools/call that reads as alpha to one reader and beta to
// another: the ledger holds the call as the twin read it (and acted on:
// the marker is alpha's) and each place where the readers part, with the
// method and the tool.
func TestStdioAmbiguousCall(t *testing.T) {
	l := newLedger(t.TempDir())
	l.set(PhaseClient, "n", nil)
	s := dialStdio(t, l, maxLine)
	s.call(initLine)
	s.send(initDone)
	ans := s.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha","NAME":"beta","arguments":{}}}`)
	if !strings.Contains(ans, `"Noted."`) {
		t.Errorf("answer %s", ans)
	}
	s.call(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"beta","name":"alpha","arguments":{}}}`)
	// An honest message adds nothing.
	s.call(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)

	calls := entryOf(t, l, "tools/call")
	if len(calls) != 2 || calls[0].Tool != Alpha || calls[1].Tool != Alpha || calls[0].Session != 1 {
		t.Fatalf("calls %+v", calls)
	}
	amb, omitted, unread := l.reading()
	if len(amb) != 2 || len(omitted) != 0 || len(unread) != 0 {
		t.Fatalf("ambiguities %+v omitted %v unread %v", amb, omitted, unread)
	}
	want := []Ambiguity{
		{Phase: PhaseClient, Conn: ConnStdio},
		{Phase: PhaseClient, Conn: ConnStdio},
	}
	want[0].Kind, want[0].Method, want[0].Tool, want[0].Path, want[0].Key = "case-variant-key", "tools/call", Alpha, "params", "NAME"
	want[1].Kind, want[1].Method, want[1].Tool, want[1].Path, want[1].Key = "duplicate-key", "tools/call", Alpha, "params", "name"
	for i, a := range amb {
		a.Detail = ""
		if a != want[i] {
			t.Errorf("ambiguity %d: %+v, want %+v", i, a, want[i])
		}
	}
}

// A line no strict reader takes whole (trailing data: a second message
// to a streaming decoder) is not read: the ambiguity is kept as refused,
// the ledger holds the line as unread, no call is made, and the
// connection ends, as the SDK ends one on a message it cannot decode.
func TestStdioRefusedLineEndsTheConnection(t *testing.T) {
	l := newLedger(t.TempDir())
	l.set(PhaseClient, "n", nil)
	s := dialStdio(t, l, maxLine)
	s.call(initLine)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha"}} {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"beta"}}`)
	if !s.ended() {
		t.Fatal("the connection did not end")
	}
	if calls := entryOf(t, l, "tools/call"); len(calls) != 0 {
		t.Errorf("a refused line was read: %+v", calls)
	}
	amb, _, unread := l.reading()
	if len(amb) != 1 || amb[0].Kind != "trailing-data" || !amb[0].Refused || unread[PhaseClient] != 1 {
		t.Errorf("ambiguities %+v unread %v", amb, unread)
	}
	if un := entryOf(t, l, ""); len(un) != 1 || un[0].Session != 0 || !strings.Contains(un[0].Error, "not read") {
		t.Errorf("unread entries %+v", un)
	}
}

// A line past the bound, or one that is no JSON value on its own (a
// message across lines), is not read either.
func TestStdioUnreadLines(t *testing.T) {
	for name, line := range map[string]string{
		"over the bound": `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"alpha","arguments":{"pad":"` + strings.Repeat("x", 600) + `"}}}`,
		"across lines":   "{\"jsonrpc\":\"2.0\",\"id\":2,\n\"method\":\"tools/call\",\"params\":{\"name\":\"alpha\"}}",
	} {
		t.Run(name, func(t *testing.T) {
			l := newLedger(t.TempDir())
			l.set(PhaseClient, "n", nil)
			s := dialStdio(t, l, 512)
			s.call(initLine)
			s.send(line)
			if !s.ended() {
				t.Fatal("the connection did not end")
			}
			if calls := entryOf(t, l, "tools/call"); len(calls) != 0 {
				t.Errorf("read: %+v", calls)
			}
			if _, _, unread := l.reading(); unread[PhaseClient] != 1 {
				t.Errorf("unread %v", unread)
			}
		})
	}
}

// The client cannot grow the ledger: past MaxAmbiguities they are
// counted, per phase; a line's own bound (wire.MaxKept) is counted too.
func TestAmbiguityBound(t *testing.T) {
	l := newLedger(t.TempDir())
	l.set(PhaseClient, "n", nil)
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{}`)
	for i := range 100 {
		fmt.Fprintf(&b, `,"x":%d`, i)
	}
	b.WriteString(`}}`)
	for range 3 {
		if _, err := l.readMessage(ConnHTTP, []byte(b.String())); err != nil {
			t.Fatal(err)
		}
	}
	amb, omitted, _ := l.reading()
	if len(amb) != MaxAmbiguities || len(amb)+omitted[PhaseClient] != 3*99 {
		t.Errorf("kept %d, omitted %v", len(amb), omitted)
	}
	if amb[0].Method != "ping" || amb[0].Kind != "duplicate-key" {
		t.Errorf("first %+v", amb[0])
	}
}

// Over streamable HTTP each POST's body is read the same way, and the
// SDK given the canonical form; a batch's element names its own method.
func TestHTTPAmbiguousCall(t *testing.T) {
	l := newLedger(t.TempDir())
	l.set(PhaseClient, "n", nil)
	srv := clientServer(l, ConnHTTP)
	ts := httptest.NewServer(readingHandler(l, 1024, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	defer ts.Close()
	sid := ""
	post := func(body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
			sid = s
		}
		return resp.StatusCode, string(b)
	}
	if code, body := post(initLine); code != http.StatusOK {
		t.Fatalf("initialize: %d %s", code, body)
	}
	post(initDone)
	if code, body := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"NAME":"beta","name":"alpha","arguments":{}}}`); code != http.StatusOK || !strings.Contains(body, "Noted.") {
		t.Fatalf("call: %d %s", code, body)
	}
	calls := entryOf(t, l, "tools/call")
	if len(calls) != 1 || calls[0].Tool != Alpha || calls[0].Conn != ConnHTTP {
		t.Fatalf("calls %+v", calls)
	}
	amb, _, _ := l.reading()
	if len(amb) != 1 || amb[0].Kind != "case-variant-key" || amb[0].Key != "NAME" || amb[0].Method != "tools/call" || amb[0].Tool != Alpha || amb[0].Conn != ConnHTTP {
		t.Fatalf("ambiguities %+v", amb)
	}
	// Refused and over the bound: not read, answered 400 and 413.
	if code, _ := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"beta","arguments":{"n":NaN}}}`); code != http.StatusBadRequest {
		t.Errorf("NaN: %d", code)
	}
	if code, _ := post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"beta","arguments":{"pad":"` + strings.Repeat("x", 2000) + `"}}}`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("over the bound: %d", code)
	}
	if calls := entryOf(t, l, "tools/call"); len(calls) != 1 {
		t.Errorf("a body not read was called: %+v", calls)
	}
	amb, _, unread := l.reading()
	if len(amb) != 2 || amb[1].Kind != "non-finite-number" || !amb[1].Refused || unread[PhaseClient] != 2 {
		t.Errorf("ambiguities %+v unread %v", amb, unread)
	}
	// A batch: each element's method and tool.
	hs := headsOf([]byte(`[{"method":"ping"},{"method":"tools/call","params":{"name":"beta"}}]`))
	if h := headAt(hs, "[1].params"); h.method != "tools/call" || h.tool != Beta {
		t.Errorf("batch head %+v", h)
	}
	if h := headAt(hs, "[0]"); h.method != "ping" || h.tool != "" {
		t.Errorf("batch head %+v", h)
	}
}

// The go-sdk's own client (the self-test's) is read as it sends, over
// both paths: nothing parts, nothing is unread, the calls are the ledger's.
func TestHonestClientReadsOneWay(t *testing.T) {
	l := newLedger(t.TempDir())
	srvEnd, cliEnd := net.Pipe()
	go serveStdio(context.Background(), clientServer(l, ConnStdio), l, srvEnd, maxLine)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := callAlpha(ctx, &mcp.IOTransport{Reader: cliEnd, Writer: cliEnd}); err != nil {
		t.Fatalf("stdio: %v", err)
	}
	srv := clientServer(l, ConnHTTP)
	ts := httptest.NewServer(readingHandler(l, maxBody, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	defer ts.Close()
	if err := callAlpha(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}); err != nil {
		t.Fatalf("http: %v", err)
	}
	amb, omitted, unread := l.reading()
	if len(amb) != 0 || len(omitted) != 0 || len(unread) != 0 {
		t.Errorf("ambiguities %+v omitted %v unread %v", amb, omitted, unread)
	}
	if calls := entryOf(t, l, "tools/call"); len(calls) != 2 || calls[0].Tool != Alpha || calls[1].Tool != Alpha {
		t.Errorf("calls %+v", calls)
	}
}
