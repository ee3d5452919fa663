package rules

import (
	"slices"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestAgentTamper: each call aimed at the agent, wherever it happened, is
// evidence of one server-level error; a report without any raises none.
func TestAgentTamper(t *testing.T) {
	var r report.Report
	r.Phases = []report.Phase{{Name: "startup", Effects: report.Effects{Tamper: []report.Tamper{{PID: 3, Call: "prlimit64 RLIMIT_CPU of the agent", Result: "EPERM"}}}}}
	r.Calls = []report.Call{{Seq: 2, Tool: "t", Effects: report.Effects{Tamper: []report.Tamper{{PID: 4, Call: "setpriority of the agent's user", Result: "EPERM"}}}}}
	got := tamper(&r)
	want := []string{"startup: prlimit64 RLIMIT_CPU of the agent (EPERM)", "call 2: setpriority of the agent's user (EPERM)"}
	if len(got) != 1 || got[0].Rule != AgentTamper || got[0].Severity != report.SeverityError || !slices.Equal(got[0].Evidence, want) || len(got[0].EvidencePaths) != 2 {
		t.Errorf("findings %+v", got)
	}
	if _, ok := ByID(AgentTamper); !ok {
		t.Error("agent-tamper is not among the rules")
	}
	if f := tamper(&report.Report{Calls: []report.Call{{Seq: 1}}}); f != nil {
		t.Errorf("no tampering: %+v", f)
	}
}
