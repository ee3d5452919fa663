package sandbox

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestPageRepeat: only the answer to the armed request, with the hash
// expected, reaches the SDK as errPageRepeated; a late answer to an
// earlier request, another page, an error, an unarmed listing pass as
// sent.
func TestPageRepeat(t *testing.T) {
	page := json.RawMessage(`{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}`)
	other := json.RawMessage(`{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"nextCursor":"2"}`)
	id1, _ := jsonrpc.MakeID(float64(1))
	id2, _ := jsonrpc.MakeID(float64(2))
	var p pageRepeat
	resp := &jsonrpc.Response{ID: id2, Result: page}
	if got := p.answer(resp); got != resp {
		t.Errorf("unarmed: %+v", got)
	}
	for _, c := range []struct {
		name   string
		answer *jsonrpc.Response
		hit    bool
	}{
		{"the same page", &jsonrpc.Response{ID: id2, Result: page}, true},
		{"another page", &jsonrpc.Response{ID: id2, Result: other}, false},
		{"a late answer to an earlier request", &jsonrpc.Response{ID: id1, Result: page}, false},
		{"an error", &jsonrpc.Response{ID: id2, Error: errors.New("no")}, false},
	} {
		p.arm(sha256.Sum256(page))
		p.sending(&jsonrpc.Request{ID: id2, Method: "tools/list"})
		got := p.answer(c.answer)
		if hit := p.disarm(); hit != c.hit || (got != c.answer) != c.hit {
			t.Errorf("%s: hit %v, answer %+v", c.name, hit, got)
		}
		if c.hit && (!errors.Is(got.Error, errPageRepeated) || got.ID != id2) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
	// A request of another method taken while armed is not the listing's.
	p.arm(sha256.Sum256(page))
	p.sending(&jsonrpc.Request{ID: id1, Method: "tools/call"})
	p.sending(&jsonrpc.Request{ID: id2, Method: "tools/list"})
	if got := p.answer(&jsonrpc.Response{ID: id2, Result: page}); !errors.Is(got.Error, errPageRepeated) || !p.disarm() {
		t.Errorf("after a tools/call: %+v", got)
	}
}
