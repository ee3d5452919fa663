package sandbox

import (
	"encoding/json"
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
