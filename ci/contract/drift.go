package contract

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// safetyHints are the hints whose change alters what a client lets a tool
// do without asking.
var safetyHints = []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// Compare returns findings, at their rules' default severities, for every
// difference between the contract and the report's tools.
func Compare(want File, r *report.Report) []report.Finding {
	got := FromReport(r)
	old := map[string]Tool{}
	for _, t := range want.Tools {
		old[t.Name] = t
	}
	cur := map[string]Tool{}
	for _, t := range got.Tools {
		cur[t.Name] = t
	}
	var out []report.Finding
	for _, t := range got.Tools {
		o, ok := old[t.Name]
		if !ok {
			out = append(out, report.Finding{Rule: rules.ContractToolAdded, Severity: rules.DefaultSeverity(rules.ContractToolAdded), Tool: t.Name,
				Message: fmt.Sprintf("tool %q is not in the contract", t.Name), Evidence: []string{"annotations: " + report.CompactJSON(t.Annotations)}})
			continue
		}
		if ev := schemaDiff(o.InputSchema, t.InputSchema); len(ev) > 0 {
			out = append(out, report.Finding{Rule: rules.ContractSchemaChanged, Severity: rules.DefaultSeverity(rules.ContractSchemaChanged), Tool: t.Name,
				Message: fmt.Sprintf("tool %q changed its inputSchema", t.Name), Evidence: ev})
		}
		if ev, flipped := annotationDiff(o.Annotations, t.Annotations); len(ev) > 0 {
			// Only a safety hint's change is worth the rule's severity; a
			// title or another field is a note.
			sev := report.SeverityNote
			if flipped {
				sev = rules.DefaultSeverity(rules.ContractAnnotationChanged)
			}
			out = append(out, report.Finding{Rule: rules.ContractAnnotationChanged, Severity: sev, Tool: t.Name,
				Message: fmt.Sprintf("tool %q changed its annotations", t.Name), Evidence: ev})
		}
	}
	for _, t := range want.Tools {
		if _, ok := cur[t.Name]; !ok {
			out = append(out, report.Finding{Rule: rules.ContractToolRemoved, Severity: rules.DefaultSeverity(rules.ContractToolRemoved), Tool: t.Name,
				Message: fmt.Sprintf("tool %q is in the contract but no longer listed", t.Name), Evidence: []string{}})
		}
	}
	return out
}

// annotationDiff lists changed annotation fields as "field: old -> new"
// and says whether a safety hint changed.
func annotationDiff(a, b json.RawMessage) ([]string, bool) {
	am, bm := fields(a), fields(b)
	keys := map[string]bool{}
	for k := range am {
		keys[k] = true
	}
	for k := range bm {
		keys[k] = true
	}
	var ev []string
	flipped := false
	for _, k := range sortedKeys(keys) {
		if am[k] == bm[k] {
			continue
		}
		ev = append(ev, fmt.Sprintf("%s: %s -> %s", k, orAbsent(am[k]), orAbsent(bm[k])))
		for _, h := range safetyHints {
			flipped = flipped || k == h
		}
	}
	return ev, flipped
}

// schemaDiff names what changed in a schema: properties added, removed or
// changed, required changes; else the whole schema.
func schemaDiff(a, b json.RawMessage) []string {
	if canonical(a) == canonical(b) {
		return nil
	}
	var sa, sb struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	json.Unmarshal(a, &sa)
	json.Unmarshal(b, &sb)
	var ev []string
	keys := map[string]bool{}
	for k := range sa.Properties {
		keys[k] = true
	}
	for k := range sb.Properties {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		pa, ina := sa.Properties[k]
		pb, inb := sb.Properties[k]
		switch {
		case ina && !inb:
			ev = append(ev, fmt.Sprintf("property %q removed", k))
		case !ina && inb:
			ev = append(ev, fmt.Sprintf("property %q added: %s", k, canonical(pb)))
		case canonical(pa) != canonical(pb):
			ev = append(ev, fmt.Sprintf("property %q: %s -> %s", k, canonical(pa), canonical(pb)))
		}
	}
	ra, rb := strings.Join(sorted(sa.Required), ","), strings.Join(sorted(sb.Required), ",")
	if ra != rb {
		ev = append(ev, fmt.Sprintf("required: [%s] -> [%s]", ra, rb))
	}
	if len(ev) == 0 {
		ev = append(ev, fmt.Sprintf("schema: %s -> %s", canonical(a), canonical(b)))
	}
	return ev
}

func fields(raw json.RawMessage) map[string]string {
	m := map[string]json.RawMessage{}
	json.Unmarshal(raw, &m)
	out := map[string]string{}
	for k, v := range m {
		out[k] = canonical(v)
	}
	return out
}

// canonical re-encodes JSON with sorted keys and no spaces.
func canonical(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
