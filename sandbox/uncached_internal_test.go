package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestListResultsAreNeverCached: a list result's ttlMs is taken out before
// the SDK reads it (which would answer the next listing from its cache),
// and kept in the transcript; other results and fields are left alone.
func TestListResultsAreNeverCached(t *testing.T) {
	tr := NewTranscript(1 << 20)
	id, _ := jsonrpc.MakeID(float64(7))
	req := &jsonrpc.Request{ID: id, Method: "tools/list"}
	tr.expect(req)
	res := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"tools":[{"name":"a"}],"ttlMs":3600000,"cacheScope":"public"}`)}
	method := tr.methodOf(id)
	tr.record("recv", res)
	got := uncached(method, res).(*jsonrpc.Response)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(got.Result, &fields); err != nil {
		t.Fatal(err)
	}
	if _, ok := fields["ttlMs"]; ok || string(fields["tools"]) != `[{"name":"a"}]` || string(fields["cacheScope"]) != `"public"` {
		t.Errorf("the SDK reads %s", got.Result)
	}
	if kept := tr.Results("tools/list"); len(kept) != 1 || string(kept[0]) != string(res.Result) {
		t.Errorf("the transcript keeps %s, want the result as sent", kept)
	}
	call := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"content":[],"ttlMs":5}`)}
	if uncached("tools/call", call) != jsonrpc.Message(call) {
		t.Errorf("a tools/call result was changed")
	}
}

// TestInputError: the SDK client's own failures over a result that asks
// for input are told apart from an error the server sent, whatever its
// text.
func TestInputError(t *testing.T) {
	wire := &jsonrpc.Error{Code: 0, Message: `multi-round-trip: fulfilling input request "confirm": client does not support elicitation`}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("multi round-trip: %w", fmt.Errorf(`fulfilling input request "confirm": %w`, &jsonrpc.Error{Code: -32602, Message: "client does not support elicitation"})),
			"the tool asked for input the client does not give: "},
		{errors.New("multi-round-trip: exceeded maximum retries (10)"), "the tool asked for input more rounds than the client allows: "},
		{wire, ""},
		{errors.New("connection closed"), ""},
	} {
		if got := inputError(tc.err); got != tc.want {
			t.Errorf("inputError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
