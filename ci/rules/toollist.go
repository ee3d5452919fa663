package rules

import (
	"fmt"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Rule ids of a tool list that moves while the server runs (the report's
// toolChanges and toolListing).
const (
	ToolHintsChanged      = "tool-hints-changed"
	ToolDefinitionChanged = "tool-definition-changed"
	ToolAppearedLate      = "tool-appeared-late"
	ToolDisappeared       = "tool-disappeared"
	ToolListUnchecked     = "tool-list-unchecked"
)

func toolListRules() []Rule {
	return []Rule{
		{ID: ToolHintsChanged, Severity: report.SeverityError,
			Rationale: "A tool gave up a safety hint while the server ran (readOnlyHint true, destructiveHint false, idempotentHint true or openWorldHint false became anything else): a client that listed the tools before, as most do once and cache, still trusts a claim the tool no longer makes, and lets it do unasked what it now admits to."},
		{ID: ToolDefinitionChanged, Severity: report.SeverityWarning,
			Rationale: "A tool's description, title, schemas or annotations changed while the server ran: what a client (and the model reading the description) agreed to is not what the tool now says it is."},
		{ID: ToolAppearedLate, Severity: report.SeverityWarning,
			Rationale: "A tool that was not in the first listing appeared while the server ran: a client that reviewed the tool list at the start never saw it. It was called like the others, and its calls judged by its own hints."},
		{ID: ToolDisappeared, Severity: report.SeverityNote,
			Rationale: "A listed tool was withdrawn while the server ran. Withdrawing takes a capability away and claims nothing new, so it is recorded, not failing; a tool that comes back is compared with what it was."},
		{ID: ToolListUnchecked, Severity: report.SeverityError,
			Rationale: "The tool list could not be checked everywhere: a listing failed (the session listed no more after it) or a bound was hit (tools that appeared were not called, changes were not listed). What was not checked cannot be cleared."},
	}
}

// safeValue is the value of each safety hint that claims the safe side;
// giving it up (false, absent, or not a boolean) is a move toward less
// safe.
var safeValue = map[string]string{"readOnlyHint": "true", "destructiveHint": "false", "idempotentHint": "true", "openWorldHint": "false"}

// annotationsField prefixes a ToolChange field that is an annotation key.
const annotationsField = "annotations."

// toolList raises the findings on the report's tool list changes: one per
// rule and tool, its evidence each change in the order seen, and a
// server-level one for the places the list went unchecked.
func toolList(r *report.Report) []report.Finding {
	type key struct{ rule, tool string }
	var order []key
	found := map[key]*report.Finding{}
	add := func(rule, tool, hint, ev string) {
		k := key{rule, tool}
		f := found[k]
		if f == nil {
			rl, _ := ByID(rule)
			f = &report.Finding{Rule: rule, Severity: rl.Severity, Tool: tool, Hint: hint, Evidence: []string{}, EvidencePaths: []string{}, Isolation: r.Sandbox.Isolation}
			found[k] = f
			order = append(order, k)
		}
		for _, e := range f.Evidence {
			if e == ev {
				return
			}
		}
		f.Evidence, f.EvidencePaths = append(f.Evidence, ev), append(f.EvidencePaths, "")
	}
	for _, c := range r.ToolChanges {
		where := report.ListingWhere(c.Listing, c.Call)
		switch c.Change {
		case report.ToolAppeared:
			add(ToolAppearedLate, c.Tool, "", where+": appeared")
		case report.ToolDisappeared:
			add(ToolDisappeared, c.Tool, "", where+": disappeared")
		case report.ToolChanged:
			hint, isAnnotation := strings.CutPrefix(c.Field, annotationsField)
			switch {
			case isAnnotation && safeValue[hint] != "" && c.Old == safeValue[hint] && c.New != c.Old && report.ToolAnnotationsIn(r.Server.ProtocolVersion):
				add(ToolHintsChanged, c.Tool, hint+": "+c.Old, fmt.Sprintf("%s: %s: %s -> %s", where, hint, orAbsent(c.Old), orAbsent(c.New)))
			case isAnnotation && len(c.Old)+len(c.New) <= maxShownValues:
				add(ToolDefinitionChanged, c.Tool, "", fmt.Sprintf("%s: %s: %s -> %s", where, hint, orAbsent(c.Old), orAbsent(c.New)))
			default:
				// Descriptions and schemas are long: the report's toolChanges
				// has them; the evidence (and the fingerprint) names the field.
				add(ToolDefinitionChanged, c.Tool, "", where+": "+c.Field+" changed")
			}
		}
	}
	called := map[string]bool{}
	for _, c := range r.Calls {
		called[c.Tool] = true
	}
	var out []report.Finding
	for _, k := range order {
		f := found[k]
		rl, _ := ByID(k.rule)
		var what string
		switch k.rule {
		case ToolHintsChanged:
			what = "gave up a safety hint during the session"
		case ToolDefinitionChanged:
			what = "changed its definition during the session"
		case ToolAppearedLate:
			what = "was not in the first listing and appeared during the session"
			if !called[k.tool] {
				what += "; it was not called"
			}
		case ToolDisappeared:
			what = "was withdrawn during the session"
		}
		seen := f.Evidence[0]
		if n := len(f.Evidence); n > 1 {
			seen += fmt.Sprintf(", and %d more", n-1)
		}
		f.Message = fmt.Sprintf("%s %s (%s); %s", quote(k.tool), what, seen, rl.Rationale)
		out = append(out, *f)
	}
	if u := r.ToolListing.Unchecked; len(u) > 0 {
		rl, _ := ByID(ToolListUnchecked)
		f := report.Finding{Rule: rl.ID, Severity: rl.Severity, Evidence: []string{}, EvidencePaths: []string{}, Isolation: r.Sandbox.Isolation}
		for _, ev := range u {
			f.Evidence, f.EvidencePaths = append(f.Evidence, ev), append(f.EvidencePaths, "")
		}
		f.Message = fmt.Sprintf("the tool list went unchecked in %d place(s); %s", len(u), rl.Rationale)
		out = append(out, f)
	}
	return out
}

// maxShownValues bounds the old and new values of an annotation quoted in
// evidence; longer ones are named only.
const maxShownValues = 200

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}
