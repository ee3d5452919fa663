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
