package clientverdict

import (
	"fmt"
	"strconv"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/clientreport"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// AmbiguousMessage is the finding's rule: rules.AmbiguousMessage, the
// scan's rule for a server's message, here for a client's.
const AmbiguousMessage = rules.AmbiguousMessage

// Findings are the ambiguous-message findings of legs: one per leg whose
// client sent a message that reads two ways (or that the twin did not
// read), its evidence naming each place (method, tool, field) and what
// was counted, not kept. The finding's tool is the leg's.
func Findings(legs []clientreport.LegRun) []report.Finding {
	rl, _ := rules.ByID(AmbiguousMessage)
	var out []report.Finding
	for _, l := range legs {
		if len(l.Ambiguities) == 0 && l.AmbiguitiesOmitted == 0 && l.Unread == 0 {
			continue
		}
		ev := []string{}
		for _, a := range l.Ambiguities {
			ev = append(ev, ambiguityLine(a))
		}
		if l.AmbiguitiesOmitted > 0 {
			ev = append(ev, fmt.Sprintf("%d more not listed (the ledger's bound)", l.AmbiguitiesOmitted))
		}
		if l.Unread > 0 {
			ev = append(ev, fmt.Sprintf("%d message(s) the twin did not read (no reading every strict JSON reader takes, or over the bound)", l.Unread))
		}
		f := report.Finding{Rule: AmbiguousMessage, Severity: rl.Severity, Tool: l.Tool,
			Message: fmt.Sprintf("in the %s leg the client sent the twin messages that mainstream JSON readers read differently (%d place(s)): what the ledger says it called is one reading among several, so the leg is not certified",
				l.Name, len(l.Ambiguities)+l.AmbiguitiesOmitted+l.Unread),
			Evidence: ev, EvidencePaths: make([]string, len(ev))}
		f.Fingerprint = report.Fingerprint(f)
		out = append(out, f)
	}
	return out
}

// ambiguityLine is one place, as the scan's rule words it.
func ambiguityLine(a report.Ambiguity) string {
	where := a.Where()
	head := a.Method
	if a.Tool != "" {
		head += " (tool " + strconv.Quote(a.Tool) + ")"
	}
	if head != "" {
		where = head + ": " + where
	}
	line := fmt.Sprintf("%s at %s: %s", a.Kind, where, a.Detail)
	if a.Refused {
		line += " (not read by the twin)"
	}
	return line
}

// Judge is the client test's verdict as sandbox/clientrun asks for it:
// the legs are run there, and judged here.
type Judge struct{}

// Decide: see Decide.
func (Judge) Decide(in clientreport.Inputs) clientreport.Decision { return Decide(in) }

// Findings: see Findings.
func (Judge) Findings(legs []clientreport.LegRun) []report.Finding { return Findings(legs) }
