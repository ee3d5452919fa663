package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// answerFirst is a connection whose peer answers before Write returns, as
// a fast server over a pipe can.
type answerFirst struct {
	mcp.Connection
	in   chan jsonrpc.Message
	read chan struct{}
}

func (a *answerFirst) Write(ctx context.Context, msg jsonrpc.Message) error {
	req := msg.(*jsonrpc.Request)
	a.in <- &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{"tools":[{"name":"t"}]}`)}
	<-a.read // the answer has been read and recorded
	return nil
}

func (a *answerFirst) Read(ctx context.Context) (jsonrpc.Message, error) { return <-a.in, nil }

func TestTranscriptKeepsAnAnswerReadBeforeItsRequestIsRecorded(t *testing.T) {
	tr := NewTranscript(1 << 20)
	a := &answerFirst{in: make(chan jsonrpc.Message, 1), read: make(chan struct{})}
	c := &recordingConn{Connection: a, t: tr}
	go func() {
		c.Read(context.Background())
		close(a.read)
	}()
	id, _ := jsonrpc.MakeID(float64(1))
	if err := c.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "tools/list"}); err != nil {
		t.Fatal(err)
	}
	if got := tr.Results("tools/list"); len(got) != 1 {
		t.Fatalf("results = %q: the answer was lost", got)
	}
	if frames, _ := tr.Frames(); len(frames) != 2 || frames[0].Dir != "send" || frames[1].Dir != "recv" {
		t.Errorf("frames %+v, want the request first, then its answer", frames)
	}
}

// TestTranscriptBoundCountsWhatItDrops: frames past the transcript's byte
// bound are counted, not kept, and numbered as if they were; the
// tools/list results the report is built from are kept whole all the
// same (they are bounded on the wire and in all).
func TestTranscriptBoundCountsWhatItDrops(t *testing.T) {
	const bound = 400
	tr := NewTranscript(bound)
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 300) + `"}]}`)
	for i := 1; i <= 4; i++ {
		id, _ := jsonrpc.MakeID(float64(i))
		method := "tools/call"
		if i == 4 {
			method = "tools/list"
		}
		req := &jsonrpc.Request{ID: id, Method: method}
		tr.expect(req)
		tr.record("send", req)
		tr.record("recv", &jsonrpc.Response{ID: id, Result: big})
	}
	frames, dropped := tr.Frames()
	kept := 0
	for _, f := range frames {
		kept += len(f.Message)
	}
	if kept > bound || dropped == 0 || len(frames)+dropped != 8 {
		t.Fatalf("%d frames of %d bytes kept, %d dropped; want within %d, 8 in all", len(frames), kept, dropped, bound)
	}
	if last := frames[len(frames)-1]; last.Seq > 8 || last.Seq < len(frames) {
		t.Errorf("last frame kept numbered %d", last.Seq)
	}
	if got := tr.Results("tools/list"); len(got) != 1 || string(got[0]) != string(big) {
		t.Errorf("tools/list results %q, want the one result whole", got)
	}
}
