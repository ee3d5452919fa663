package sandbox

import (
	"context"
	"encoding/json"
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
}
