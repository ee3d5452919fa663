package sandbox

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func gatedBody(t *testing.T, b Bounds, contentType, body string) (string, *frameGate) {
	t.Helper()
	g := newFrameGate(b)
	g.sent("tools/call", int64(2))
	resp := &http.Response{Header: http.Header{"Content-Type": {contentType}}, Body: io.NopCloser(strings.NewReader(body))}
	(&httpGate{gate: g}).body(resp)
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the gated body: %v", err)
	}
	return string(out), g
}

func TestSSEBodyPassesEventsThroughTheGate(t *testing.T) {
	in := "event: endpoint\ndata: /sse?sessionid=ABC\n\n" +
		": a comment\n\n" +
		"id: 7\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\ndata:\"id\":2,\"result\":{\"x\":\"\\u0041\"}}\n\n" +
		"id: 8\ndata:\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\r\n\r\n"
	got, g := gatedBody(t, Bounds{}, "text/event-stream", in)
	want := "event: endpoint\ndata: /sse?sessionid=ABC\n\n" +
		"event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"id\":2,\"result\":{\"x\":\"A\"}}\n\n" +
		"id: 8\ndata: \n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"
	if got != want {
		t.Errorf("gated stream:\n%q\nwant\n%q", got, want)
	}
	if d, r := g.take("tools/call"); r != nil || d.Bytes == 0 {
		t.Errorf("the result's digest was not noted: %+v %v", d, r)
	}
}

// TestHTTPBodiesAreHeldToTheMessageBounds: a response over --max-message
// or --max-depth is refused as on stdio, JSON or event stream: the
// request gets an error in its place, and the gate counts it.
func TestHTTPBodiesAreHeldToTheMessageBounds(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 2000) + `"}]}}`
	deep := `{"jsonrpc":"2.0","id":2,"result":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`
	for _, tc := range []struct {
		name, contentType, body string
		kind                    BoundKind
	}{
		{"json size", "application/json", big, BoundMessageSize},
		{"json depth", "application/json; charset=utf-8", deep, BoundDepth},
		{"sse size", "text/event-stream", "event: message\ndata: " + big + "\n\n", BoundMessageSize},
		{"sse depth", "text/event-stream", "data: " + deep + "\n\n", BoundDepth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, g := gatedBody(t, Bounds{MaxMessage: 1000, MaxDepth: 20}, tc.contentType, tc.body)
			if !strings.Contains(got, `"error":{"code":-32099`) || !strings.Contains(got, `"id":2`) || strings.Contains(got, "xxxx") {
				t.Errorf("the client reads %q, want the bound's error in the message's place", got)
			}
			if _, r := g.take("tools/call"); r == nil || r.Kind != tc.kind || !r.Answered {
				t.Errorf("refusal = %+v, want a %v refusal answering the call", r, tc.kind)
			}
		})
	}
}

// TestHTTPBodyCleanedAsStdout: a message whose strings hold bytes that
// are not UTF-8 is read cleaned (\xNN), and the transcript gets the
// bytes as received; an error page is cut at the message bound.
func TestHTTPBodyCleanedAsStdout(t *testing.T) {
	g := newFrameGate(Bounds{MaxMessage: 1000})
	var raw []string
	h := &httpGate{gate: g, raw: func(b []byte) { raw = append(raw, string(b)) }}
	body := "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"s\":\"a\xffb\"}}"
	resp := &http.Response{Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}
	h.body(resp)
	got, _ := io.ReadAll(resp.Body)
	if want := `{"jsonrpc":"2.0","id":1,"result":{"s":"a\\xffb"}}`; string(got) != want || len(raw) != 1 || raw[0] != body {
		t.Errorf("read %s (want %s), raw %q", got, want, raw)
	}
	resp = &http.Response{Header: http.Header{"Content-Type": {"text/html"}}, Body: io.NopCloser(strings.NewReader(strings.Repeat("<p>", 1000)))}
	h.body(resp)
	if got, _ := io.ReadAll(resp.Body); len(got) != 1000 {
		t.Errorf("an error page of 3000 bytes read as %d, want cut at the bound (1000)", len(got))
	}
}

func TestPortIn(t *testing.T) {
	for _, tc := range []struct {
		out  string
		port int
	}{
		{"MCP Streamable HTTP Server listening on port 3001\n", 3001},
		{"INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)", 8000},
		{"fixture server listening on http://localhost:44817/mcp", 44817},
		{"listening at [::]:9000", 9000},
		{"bound to 0.0.0.0:7070", 7070},
		{"Server started, port: 5000", 5000},
		{"starting\nlistening on http://localhost:3001/mcp\nlater: port 4000", 3001},
		{"no port here, version 1.2.3 at 12:30:45", 0},
		{"port 70000", 0},
	} {
		p, ok := portIn(tc.out)
		if p != tc.port || ok != (tc.port != 0) {
			t.Errorf("portIn(%q) = %d, %v; want %d", tc.out, p, ok, tc.port)
		}
	}
}

func TestTransportCheck(t *testing.T) {
	for _, tc := range []struct {
		t       Transport
		network NetworkMode
		want    string // "" for no error
	}{
		{Transport{}, NetworkSinkhole, ""},
		{Transport{Kind: TransportStdio, Port: 3000}, NetworkNone, "for --transport http or sse"},
		{Transport{Kind: TransportHTTP, Port: 3000}, NetworkSinkhole, ""},
		{Transport{Kind: TransportHTTP}, NetworkSinkhole, ""}, // auto
		{Transport{Kind: TransportSSE, Port: 8080}, NetworkSinkhole, "port 8080 is the sinkhole's"},
		{Transport{Kind: TransportSSE, Port: 8080}, NetworkNone, ""},
		{Transport{Kind: TransportHTTP, Port: 3000, Path: "mcp"}, NetworkNone, `path "mcp"`},
		{Transport{Kind: TransportHTTP, Port: 70000}, NetworkNone, "want 1 to 65535"},
	} {
		err := tc.t.Check(tc.network)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v on %v: %v, want %q", tc.t, tc.network, err, tc.want)
		}
	}
	if p := (Transport{Kind: TransportSSE}).WithDefaults().Path; p != DefaultSSEPath {
		t.Errorf("sse path %q", p)
	}
}

func TestParseHeader(t *testing.T) {
	for _, tc := range []struct{ in, name, value string }{
		{"Authorization: Bearer abc", "Authorization", "Bearer abc"},
		{"x-api-key:k", "X-Api-Key", "k"},
		{"Host: 127.0.0.1:3000", "Host", "127.0.0.1:3000"},
		{"no colon", "", ""},
		{": value", "", ""},
		{"Bad Name: v", "", ""},
	} {
		name, value, err := ParseHeader(tc.in)
		if name != tc.name || value != tc.value || (err == nil) != (tc.name != "") {
			t.Errorf("ParseHeader(%q) = %q, %q, %v", tc.in, name, value, err)
		}
	}
}
