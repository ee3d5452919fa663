package scan

import (
	"encoding/json"
	"slices"
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
		r, ok := retryOf(step, c.call, nil, nil)
		if ok != c.want {
			t.Errorf("%+v: retry %v", c.call, ok)
			continue
		}
		if ok && (r.Source != "retry" || r.Retries != 4 || string(r.Arguments) != `{"n":10}` || len(r.Alternatives) != 1 || !r.Setup) {
			t.Errorf("retry %+v", r)
		}
	}
	// A repair's arguments come before the next candidate's, and use it up.
	fix := func(json.RawMessage, string) (json.RawMessage, bool) { return json.RawMessage(`{"n":5}`), true }
	if r, ok := retryOf(step, report.Call{Seq: 4, ErrorKind: "rpc", Error: "JSON-RPC error -32602: n must be at least 5"}, fix, nil); !ok || string(r.Arguments) != `{"n":5}` || len(r.Alternatives) != 1 {
		t.Errorf("repaired retry %+v", r)
	}
	// An error that is no validation message but asks for a property is
	// a refusal: the repair says so.
	if r, ok := retryOf(step, report.Call{Seq: 4, IsError: true, Result: "Write rejected: no 'mode' was specified"}, fix, nil); !ok || string(r.Arguments) != `{"n":5}` {
		t.Errorf("retry of a repairable error %+v, %v", r, ok)
	}
	empty := probes.Call{Tool: "t", Arguments: json.RawMessage(`{}`), Source: "empty", Alternatives: alts}
	for _, c := range []struct {
		call report.Call
		want bool
	}{
		{report.Call{Seq: 2, IsError: true, Result: "Provide one of: coordinates, a city_name"}, true},
		{report.Call{Seq: 2, ErrorKind: "rpc", Error: "JSON-RPC error -32603: fetch failed"}, true},
		{report.Call{Seq: 2, IsError: true, Result: "MCP error -32601: Tool t requires task augmentation"}, false},
		{report.Call{Seq: 2, ErrorKind: "rpc", Error: "JSON-RPC error -32601: method not found"}, false},
		{report.Call{Seq: 2, ErrorKind: "transport", Error: "EOF"}, false},
		{report.Call{Seq: 2, Result: "ok"}, false},
	} {
		if _, ok := retryOf(empty, c.call, nil, nil); ok != c.want {
			t.Errorf("empty call, %+v: retry %v", c.call, ok)
		}
	}
	if _, ok := retryOf(probes.Call{Tool: "t", Source: "probe"}, report.Call{ErrorKind: "rpc", Error: "JSON-RPC error -32602: x"}, nil, nil); ok {
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

// TestOfferNeverAPIDAResultNamed: a status dump's pid (the server's own)
// is never offered to a pid property, which keeps its synthesized value,
// or takes a process an earlier call started; other ids still come from
// results.
func TestOfferNeverAPIDAResultNamed(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"pid":{"type":"number"},"sessionId":{"type":"string"}},"required":["pid"]}`)
	sc := &scanner{schemas: map[string]json.RawMessage{"kill_process": schema}, state: &probes.State{}}
	sc.state.Harvest(3, "get_config", `{"processInfo":{"pid":12},"sessionId":"s-1"}`, nil)
	planned := json.RawMessage(`{"pid":4194304}`)

	args, from := sc.offer("kill_process", planned, nil)
	if string(args) != `{"pid":4194304,"sessionId":"s-1"}` || !slices.Equal(from, []int{3}) {
		t.Errorf("no process started: %s from %v", args, from)
	}

	exit := 0
	calls := []report.Call{
		{Seq: 5, Effects: report.Effects{Processes: []report.Process{{PID: 40, PPID: 12, ExitCode: &exit}}}},
		{Seq: 7, Effects: report.Effects{Processes: []report.Process{
			{PID: 99, PPID: 12, ExitCode: &exit}, {PID: 100, PPID: 99}, {PID: 12, PPID: 1}, {PID: 101, PPID: 12, ExecError: "ENOENT"}}}},
		{Seq: 8},
	}
	setup := append(slices.Clone(calls[:1]), report.Call{Seq: 6, Setup: true, Effects: report.Effects{Processes: []report.Process{{PID: 50, PPID: 12, ExitCode: &exit}}}})
	setup = append(setup, calls[1:]...)
	if pids, seq := startedPIDs(setup); !slices.Equal(pids, []int{50}) || seq != 6 {
		t.Errorf("with a setup call, startedPIDs = %v from %d", pids, seq)
	}
	if pids, seq := startedPIDs(calls); !slices.Equal(pids, []int{100, 99}) || seq != 7 {
		t.Errorf("startedPIDs = %v from %d", pids, seq)
	}
	args, from = sc.offer("kill_process", planned, calls)
	if string(args) != `{"pid":100,"sessionId":"s-1"}` || !slices.Equal(from, []int{3, 7}) {
		t.Errorf("a process started: %s from %v", args, from)
	}

	// Without a pid property, the offer is the state's.
	sc.schemas["read"] = json.RawMessage(`{"type":"object","properties":{"sessionId":{"type":"string"}},"required":["sessionId"]}`)
	if args, from := sc.offer("read", json.RawMessage(`{"sessionId":"example"}`), calls); string(args) != `{"sessionId":"s-1"}` || !slices.Equal(from, []int{3}) {
		t.Errorf("no pid: %s from %v", args, from)
	}
}
