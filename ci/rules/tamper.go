package rules

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// AgentTamper is raised when the server aimed a call at the sandbox's
// agent (its limits, scheduling or CPUs): the agent refused each, and the
// server is judged for trying.
const AgentTamper = "agent-tamper"

func agentTamperRule() Rule {
	return Rule{ID: AgentTamper, Severity: report.SeverityError,
		Rationale: "The server tried to change the resource limits, scheduling or CPUs of the sandbox's PID 1, the agent that records what it does (the kernel allows it between processes of one user): lowered, they would kill it or blind it. The agent refused; a server that tries to weaken what watches it is not to be trusted with what it claims."}
}

// tamper raises agent-tamper, a finding on the server (no tool), with
// each refused call and where it happened.
func tamper(r *report.Report) []report.Finding {
	var ev []string
	add := func(where string, e report.Effects) {
		for _, t := range e.Tamper {
			ev = append(ev, fmt.Sprintf("%s: %s (%s)", where, t.Call, t.Result))
		}
	}
	for _, p := range r.Phases {
		add(phaseLabel(p), p.Effects)
	}
	for _, c := range r.Calls {
		add(fmt.Sprintf("call %d", c.Seq), c.Effects)
	}
	for _, rd := range r.Reads {
		add(readDescribe(rd), rd.Effects)
	}
	if len(ev) == 0 {
		return nil
	}
	rl := agentTamperRule()
	paths := make([]string, len(ev))
	return []report.Finding{{Rule: rl.ID, Severity: rl.Severity, Message: fmt.Sprintf("the server aimed %d call(s) at the sandbox's agent; %s", len(ev), rl.Rationale),
		Evidence: ev, EvidencePaths: paths, Isolation: r.Sandbox.Isolation}}
}
