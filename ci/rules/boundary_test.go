package rules

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// boundaryReport is a read-only, closed-world tool's boundary calls with
// the effects given, after one ordinary call.
func boundaryReport(calls ...report.Call) *report.Report {
	r := report.New()
	r.Tools = []report.Tool{{Name: "t", Hints: report.Hints{ReadOnly: b(true), OpenWorld: b(false)}}}
	r.Calls = append(r.Calls, report.Call{Seq: 1, Tool: "t", Arguments: json.RawMessage(`{}`), Source: "synth", Effects: report.NewEffects()})
	for i, c := range calls {
		c.Seq, c.Tool, c.Source, c.Arguments = i+2, "t", "boundary", json.RawMessage(`{}`)
		if c.Effects.Files == nil {
			c.Effects = report.NewEffects()
		}
		r.Calls = append(r.Calls, c)
	}
	return r
}

func effects(files []report.FileChange, net []report.NetEvent) report.Effects {
	e := report.NewEffects()
	e.Files, e.Network = append(e.Files, files...), append(e.Network, net...)
	return e
}

const markerDir = "/home/sandbox/.local/share/<project>"

func TestBoundaryRules(t *testing.T) {
	file := &report.Boundary{Kind: "path-file", Property: "path", Target: markerDir + "/<project>.notes"}
	dest := &report.Boundary{Kind: "path-dest", Property: "dest", Target: markerDir + "/<project>.saved"}
	link := &report.Boundary{Kind: "url", Property: "url", Target: "http://169.254.169.254/latest/meta-data/", Address: "169.254.169.254"}
	loop := &report.Boundary{Kind: "url", Property: "url", Target: "http://127.0.0.1:8080/", Address: "127.0.0.1", Port: 8080}
	returned := *file
	returned.Returned = true
	outside := report.FileChange{Path: dest.Target, Change: report.ChangeCreated, Type: "file", Scope: "outside", Area: "home"}
	for _, tc := range []struct {
		name string
		call report.Call
		want []string
	}{
		{"refused", report.Call{Boundary: file, IsError: true}, nil},
		{"marker returned", report.Call{Boundary: &returned}, []string{PathEscape}},
		{"wrote outside", report.Call{Boundary: dest, Effects: effects([]report.FileChange{outside}, nil)}, []string{PathEscape}},
		{"wrote elsewhere", report.Call{Boundary: dest, Effects: effects([]report.FileChange{{Path: "/tmp/log", Change: report.ChangeModified, Type: "file", Scope: "outside", Area: "tmp"}}, nil)}, nil},
		{"metadata connect", report.Call{Boundary: link, Effects: effects(nil, []report.NetEvent{{Kind: "connect", Address: "169.254.169.254", Port: 80, Protocol: "tcp", Result: "ENETUNREACH"}})}, []string{SsrfFollowed}},
		{"sinkholed request", report.Call{Boundary: link, Effects: effects(nil, []report.NetEvent{{Kind: "http", Host: "169.254.169.254", Method: "GET", Path: "/latest/meta-data/"}})}, []string{SsrfFollowed}},
		{"loopback refused", report.Call{Boundary: loop, Effects: effects(nil, []report.NetEvent{{Kind: "connect", Address: "127.0.0.1", Port: 8080, Protocol: "tcp", Result: "ECONNREFUSED", Loopback: true}})}, []string{SsrfFollowed}},
		{"other loopback port", report.Call{Boundary: loop, Effects: effects(nil, []report.NetEvent{{Kind: "connect", Address: "127.0.0.1", Port: 53, Protocol: "udp"}})}, nil},
		{"secret sent", report.Call{Boundary: link, Effects: effects(nil, []report.NetEvent{{Kind: "dns", Host: "x.evil.test", Secrets: []string{"github-token"}}})}, []string{SecretExfiltration}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := boundaryReport(tc.call)
			var got []string
			for _, f := range Evaluate(r, Options{}) {
				got = append(got, f.Rule)
				if f.Call != 2 || f.Tool != "t" {
					t.Errorf("finding on %q call %d", f.Tool, f.Call)
				}
			}
			// Only the boundary rules judge the call: no readonly-writes for
			// the write outside, no closed-world-network for the connect.
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("findings %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBoundaryCallsAreNoSuspects: a boundary call is judged on what it did,
// never replayed.
func TestBoundaryCallsAreNoSuspects(t *testing.T) {
	dest := &report.Boundary{Kind: "path-dest", Property: "dest", Target: markerDir + "/<project>.saved"}
	r := boundaryReport(report.Call{Boundary: dest, Effects: effects([]report.FileChange{{Path: "/workspace/x", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}}, nil)})
	if got := Suspects(r, Options{}); len(got) != 0 {
		t.Errorf("suspects %v", got)
	}
}
