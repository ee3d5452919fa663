package sandbox

import (
	"encoding/json"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

func TestRetryOf(t *testing.T) {
	alts := []json.RawMessage{json.RawMessage(`{"n":10}`), json.RawMessage(`{"n":0}`)}
	step := probes.Call{Tool: "t", Arguments: json.RawMessage(`{"n":1}`), Source: "synth", Alternatives: alts, Setup: true}
	for _, c := range []struct {
		call report.Call
		want bool
	}{
		{report.Call{Seq: 4, ErrorKind: "rpc", Error: "JSON-RPC error -32602: count must be at least 5"}, true},
		{report.Call{Seq: 4, ErrorKind: "rpc", Error: "JSON-RPC error -32603: boom"}, false},
		{report.Call{Seq: 4, IsError: true, Result: "Expected number, received string"}, true},
		{report.Call{Seq: 4, IsError: true, Result: "ENOENT"}, false},
		{report.Call{Seq: 4, ErrorKind: "timeout", Error: "no result: invalid"}, false},
	} {
		r, ok := retryOf(step, c.call)
		if ok != c.want {
			t.Errorf("%+v: retry %v", c.call, ok)
			continue
		}
		if ok && (r.Source != "retry" || r.Retries != 4 || string(r.Arguments) != `{"n":10}` || len(r.Alternatives) != 1 || !r.Setup) {
			t.Errorf("retry %+v", r)
		}
	}
	if _, ok := retryOf(probes.Call{Tool: "t", Source: "probe"}, report.Call{ErrorKind: "rpc", Error: "JSON-RPC error -32602: x"}); ok {
		t.Error("a probe step without candidates was retried")
	}
}

func TestFollowUpdatesRepeats(t *testing.T) {
	old, args := json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":10}`)
	rest := []probes.Call{{Tool: "t", Arguments: old, Source: "repeat"}, {Tool: "u", Arguments: old, Source: "synth"}}
	follow(rest, "t", old, args)
	if string(rest[0].Arguments) != `{"n":10}` || string(rest[1].Arguments) != `{"n":1}` {
		t.Errorf("after follow: %s, %s", rest[0].Arguments, rest[1].Arguments)
	}
}
