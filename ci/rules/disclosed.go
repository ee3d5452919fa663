package rules

import (
	"fmt"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// SecretDisclosed is raised when a planted secret reaches the model or
// the client: in a call's whole result (report.Call.Disclosed), or in the
// server's stderr or instructions (report.Server.StderrDisclosed).
const SecretDisclosed = "secret-disclosed"

func secretDisclosedRule() Rule {
	return Rule{ID: SecretDisclosed, Severity: report.SeverityWarning,
		Rationale:     "A honeytoken planted for this run (in the environment or a credential file) was handed to the model or the client: whatever reads the result or the log, a prompt injection included, now holds it. A tool that reads files may be asked to; the finding says which call returned which secret, so that a reader can tell.",
		Message:       "call %d handed %d planted secret(s) to the model in its result",
		ServerMessage: "the server handed planted secrets to the model or the client: %s (%d in all)"}
}

// disclosed raises secret-disclosed: one finding per tool whose results
// held planted secrets (at its first such call, with every call and role
// as evidence), and one on the server for its stderr and instructions.
// The evidence names roles, never values.
func disclosed(r *report.Report, isolation string) []report.Finding {
	rl := secretDisclosedRule()
	var out []report.Finding
	byTool := map[string]int{} // index in out
	for _, c := range r.Calls {
		if len(c.Disclosed) == 0 {
			continue
		}
		i, ok := byTool[c.Tool]
		if !ok {
			i = len(out)
			byTool[c.Tool] = i
			out = append(out, report.Finding{Rule: rl.ID, Severity: rl.Severity, Tool: c.Tool, Call: c.Seq, Isolation: isolation,
				Evidence: []string{}, EvidencePaths: []string{}})
		}
		f := &out[i]
		for _, role := range c.Disclosed {
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s in the result of call %d", role, c.Seq))
			f.EvidencePaths = append(f.EvidencePaths, "")
		}
	}
	for i := range out {
		out[i].Message = message(rl, out[i])
	}
	if ds := r.Server.StderrDisclosed; len(ds) > 0 {
		f := report.Finding{Rule: rl.ID, Severity: rl.Severity, Isolation: isolation}
		for _, role := range ds {
			f.Evidence = append(f.Evidence, role+" in the server's stderr or instructions")
			f.EvidencePaths = append(f.EvidencePaths, "")
		}
		f.Message = message(rl, f)
		out = append(out, f)
	}
	return out
}
