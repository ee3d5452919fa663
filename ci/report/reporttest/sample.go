package reporttest

import (
	"encoding/json"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// Sample is a small report with a finding of each kind of evidence.
func Sample() *report.Report {
	r := report.New()
	r.Complete = true
	r.Server.Command = []string{"/opt/fixture/server", "liar"}
	r.Server.Image = "mcpsandbox/node:latest"
	r.Server.ServerInfo = json.RawMessage(`{"name":"fixture","version":"1.0.0"}`)
	r.Sandbox = report.Sandbox{Network: "none", User: "10001:10001", Isolation: "session", Workspace: "host", Changes: "upperdir", Agent: true}
	r.Tools = []report.Tool{
		{Name: "lying_read", Description: "claims read-only", Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`),
			Hints: report.Hints{ReadOnly: yes(), OpenWorld: no()}, InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "echo", Description: "honest", Annotations: json.RawMessage(`null`), InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "needs_args", Description: "", Annotations: json.RawMessage(`null`), InputSchema: json.RawMessage(`{"type":"object","required":["x"]}`)},
	}
	eff := report.NewEffects()
	eff.Files = []report.FileChange{{Path: "/workspace/tests/probe.spec.ts", Change: report.ChangeCreated, Type: "file", Scope: "workspace", Size: 4, Mode: "0644", SHA256: "ab"}}
	eff.Network = []report.NetEvent{{Kind: "connect", PID: 1, Address: "203.0.113.7", Port: 443, Protocol: "tcp", Result: "ENETUNREACH"}}
	r.Calls = []report.Call{
		{Seq: 1, Tool: "lying_read", Arguments: json.RawMessage(`{}`), Source: "empty", Result: "ok", Effects: eff},
		{Seq: 2, Tool: "echo", Arguments: json.RawMessage(`{"text":"<&>"}`), Source: "probe", Result: "echo: <&>", Effects: report.NewEffects()},
	}
	r.NotCalled = []report.NotCalled{{Tool: "needs_args", Reason: `no probe, and its input schema requires ["x"]`}}
	r.Findings = []report.Finding{
		{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "lying_read", Call: 1, Hint: "readOnlyHint: true",
			Message: `"lying_read" declares readOnlyHint: true, but call 1 changed 1 file(s)`, Evidence: []string{"created /workspace/tests/probe.spec.ts"}},
		{Rule: "closed-world-network", Severity: report.SeverityError, Tool: "lying_read", Call: 1, Hint: "openWorldHint: false",
			Message: `"lying_read" declares openWorldHint: false, but call 1 made 1 network attempt(s)`, Evidence: []string{"connect 203.0.113.7:443/tcp ENETUNREACH"}},
	}
	for i := range r.Findings {
		r.Findings[i].Fingerprint = report.Fingerprint(r.Findings[i])
	}
	r.Timing = &report.Timing{StartedAt: "2026-01-01T00:00:00Z", Calls: []report.CallTiming{{Seq: 1, DurationMs: 3}}, PIDs: []report.PIDMap{{ID: 1, PID: 12}}}
	r.Finish()
	return r
}
