package rules

import (
	"fmt"
	"strconv"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// AmbiguousMessage is raised when a server's message reads one way to one
// mainstream JSON reader and another way to the next (duplicate or
// case-variant keys, NaN, a lone surrogate, an id in another form...):
// the judge read one document, a client may act on another.
const AmbiguousMessage = report.RuleAmbiguousMessage

func ambiguousMessageRule() Rule {
	return Rule{ID: AmbiguousMessage, Severity: report.SeverityError,
		Rationale: "Two mainstream clients read this message differently (JSON.parse, Go's encoding/json, Python's json; see docs/readers.md): what was judged is not what every client acts on, and an honest server has no reason to send it."}
}

// ambiguous raises ambiguous-message: one finding per tool whose
// definition held an ambiguity, one for the rest of the server's
// messages, each naming the fields.
func ambiguous(r *report.Report) []report.Finding {
	if len(r.Server.Ambiguities) == 0 && r.Server.AmbiguitiesOmitted == 0 {
		return nil
	}
	rl := ambiguousMessageRule()
	var order []string
	ev := map[string][]string{}
	for _, a := range r.Server.Ambiguities {
		if _, ok := ev[a.Tool]; !ok {
			order = append(order, a.Tool)
		}
		where := a.Where()
		if a.Method != "" {
			where = a.Method + ": " + where
		}
		line := fmt.Sprintf("%s at %s: %s", a.Kind, where, a.Detail)
		if a.Refused {
			line += " (not given to the client)"
		}
		ev[a.Tool] = append(ev[a.Tool], line)
	}
	if n := r.Server.AmbiguitiesOmitted; n > 0 {
		if _, ok := ev[""]; !ok {
			order = append(order, "")
		}
		ev[""] = append(ev[""], fmt.Sprintf("%d more not listed (the report's bound)", n))
	}
	var out []report.Finding
	for _, tool := range order {
		what := "the server's messages"
		if tool != "" {
			what = fmt.Sprintf("tool %s's definition", strconv.Quote(tool))
		}
		out = append(out, report.Finding{Rule: rl.ID, Severity: rl.Severity, Tool: tool,
			Message:  fmt.Sprintf("%s read differently by different clients (%d place(s)); %s", what, len(ev[tool]), rl.Rationale),
			Evidence: ev[tool], EvidencePaths: make([]string, len(ev[tool])), Isolation: r.Sandbox.Isolation})
	}
	return out
}
