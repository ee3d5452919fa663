package bulk

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// SummaryVersion is summary.json's format.
const SummaryVersion = "bulk-summary/1"

// SummarySchemaID is where summary.json's published schema lives.
const SummarySchemaID = "https://github.com/mcpsandbox/mcpsandbox/ci/bulk/summary.schema.json"

// Summary is a batch's summary.json.
type Summary struct {
	SchemaVersion string `json:"schemaVersion"`
	// Packages has one row per spec, in input order (its ToolRows are in
	// Tools instead).
	Packages []Result `json:"packages"`
	// Tools has one row per tool of every scanned package.
	Tools  []ToolLine `json:"tools"`
	Totals Totals     `json:"totals"`
	// Changes compares, for a package scanned at two or more versions,
	// each version with the one before it.
	Changes []VersionChange `json:"changes"`
	// Inputs are the malformed lines and documents and the duplicates,
	// where each is.
	Inputs []InputError `json:"inputs"`
}

// ToolLine is a tool's row: the hints claimed, the coverage and the
// hints contradicted.
type ToolLine struct {
	Package string `json:"package"`
	Version string `json:"version"`
	ToolRow
}

// Totals count the rows.
type Totals struct {
	Packages  int            `json:"packages"`
	ByStatus  map[string]int `json:"byStatus"`
	Tools     int            `json:"tools"`
	Annotated int            `json:"annotated"`
	Exercised int            `json:"exercised"`
	Findings  int            `json:"findings"`
	ByRule    map[string]int `json:"byRule"`
	// Hints counts, per hint, the tools that claimed it true and false
	// and those a finding contradicts.
	Hints map[string]HintTotal `json:"hints"`
}

// HintTotal is one hint across the batch.
type HintTotal struct {
	True         int `json:"true"`
	False        int `json:"false"`
	Contradicted int `json:"contradicted"`
}

// VersionChange is what changed from one scanned version of a package to
// the next.
type VersionChange struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
	// NewFindings and GoneFindings count, per rule, the findings more and
	// fewer than in From.
	NewFindings  map[string]int `json:"newFindings,omitempty"`
	GoneFindings map[string]int `json:"goneFindings,omitempty"`
	// HintsFlipped lists "TOOL HINT: OLD -> NEW" (null: not declared).
	HintsFlipped []string `json:"hintsFlipped,omitempty"`
	ToolsAdded   []string `json:"toolsAdded,omitempty"`
	ToolsRemoved []string `json:"toolsRemoved,omitempty"`
}

// hintNames are the four hints, in the report's order.
var hintNames = []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

func hintValues(h report.Hints) []*bool {
	return []*bool{h.ReadOnly, h.Destructive, h.Idempotent, h.OpenWorld}
}

// Summarize builds the summary of a batch's results (in input order) and
// its input errors.
func Summarize(results []Result, inputs []InputError) Summary {
	s := Summary{SchemaVersion: SummaryVersion, Packages: []Result{}, Tools: []ToolLine{}, Changes: []VersionChange{}, Inputs: inputs,
		Totals: Totals{ByStatus: map[string]int{}, ByRule: map[string]int{}, Hints: map[string]HintTotal{}}}
	if s.Inputs == nil {
		s.Inputs = []InputError{}
	}
	for _, st := range Statuses() {
		s.Totals.ByStatus[st.String()] = 0
	}
	for _, h := range hintNames {
		s.Totals.Hints[h] = HintTotal{}
	}
	for _, r := range results {
		rows := r.ToolRows
		r.ToolRows = nil
		s.Packages = append(s.Packages, r)
		t := &s.Totals
		t.Packages++
		t.ByStatus[r.Status.String()]++
		t.Tools += r.Tools
		t.Annotated += r.Annotated
		t.Exercised += r.Exercised
		t.Findings += r.Findings
		for rule, n := range r.ByRule {
			t.ByRule[rule] += n
		}
		for _, row := range rows {
			s.Tools = append(s.Tools, ToolLine{Package: r.Name, Version: r.Version, ToolRow: row})
			for i, v := range hintValues(row.Hints) {
				ht := t.Hints[hintNames[i]]
				if v != nil && *v {
					ht.True++
				} else if v != nil {
					ht.False++
				}
				if slices.Contains(row.Contradicted, hintNames[i]) {
					ht.Contradicted++
				}
				t.Hints[hintNames[i]] = ht
			}
		}
	}
	s.Changes = versionChanges(results)
	return s
}

// versionChanges compares the scanned versions of each package, in the
// order the input gave them.
func versionChanges(results []Result) []VersionChange {
	byName := map[string][]Result{}
	var names []string
	for _, r := range results {
		if r.Report == "" || r.Version == "" {
			continue
		}
		k := r.Kind.String() + ":" + r.Name
		if _, ok := byName[k]; !ok {
			names = append(names, k)
		}
		byName[k] = append(byName[k], r)
	}
	out := []VersionChange{}
	for _, k := range names {
		rs := byName[k]
		for i := 1; i < len(rs); i++ {
			a, b := rs[i-1], rs[i]
			if a.Version == b.Version {
				continue
			}
			out = append(out, compareVersions(a, b))
		}
	}
	return out
}

func compareVersions(a, b Result) VersionChange {
	c := VersionChange{Name: a.Name, From: a.Version, To: b.Version}
	for _, rule := range sortedKeys(union(a.ByRule, b.ByRule)) {
		switch d := b.ByRule[rule] - a.ByRule[rule]; {
		case d > 0:
			if c.NewFindings == nil {
				c.NewFindings = map[string]int{}
			}
			c.NewFindings[rule] = d
		case d < 0:
			if c.GoneFindings == nil {
				c.GoneFindings = map[string]int{}
			}
			c.GoneFindings[rule] = -d
		}
	}
	old := map[string]ToolRow{}
	for _, t := range a.ToolRows {
		old[t.Tool] = t
	}
	seen := map[string]bool{}
	for _, t := range b.ToolRows {
		seen[t.Tool] = true
		o, ok := old[t.Tool]
		if !ok {
			c.ToolsAdded = append(c.ToolsAdded, t.Tool)
			continue
		}
		ov, nv := hintValues(o.Hints), hintValues(t.Hints)
		for i := range ov {
			if show(ov[i]) != show(nv[i]) {
				c.HintsFlipped = append(c.HintsFlipped, fmt.Sprintf("%s %s: %s -> %s", t.Tool, hintNames[i], show(ov[i]), show(nv[i])))
			}
		}
	}
	for _, t := range a.ToolRows {
		if !seen[t.Tool] {
			c.ToolsRemoved = append(c.ToolsRemoved, t.Tool)
		}
	}
	return c
}

func union(a, b map[string]int) map[string]int {
	u := map[string]int{}
	for k := range a {
		u[k] = 0
	}
	for k := range b {
		u[k] = 0
	}
	return u
}

func show(v *bool) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatBool(*v)
}

// WriteCSV writes one row per package.
func WriteCSV(w io.Writer, s Summary) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"spec", "kind", "name", "version", "status", "why", "entry", "notes", "tools", "annotated", "exercised", "findings", "by_rule", "problems", "complete", "report", "seconds", "source", "installed", "install_effects"})
	for _, r := range s.Packages {
		entry := ""
		if r.Entry != nil {
			entry = r.Entry.Path
		}
		cw.Write([]string{r.Spec, r.Kind.String(), r.Name, r.Version, r.Status.String(), csvSafe(r.Why), csvSafe(entry), csvSafe(strings.Join(r.Notes, "; ")),
			strconv.Itoa(r.Tools), strconv.Itoa(r.Annotated), strconv.Itoa(r.Exercised), strconv.Itoa(r.Findings), byRule(r.ByRule),
			strconv.Itoa(r.Problems), strconv.FormatBool(r.Complete), r.Report, strconv.FormatFloat(r.Seconds, 'f', 1, 64), csvSafe(r.Source), r.Installed, strconv.Itoa(r.InstallEffects)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteToolsCSV writes one row per tool.
func WriteToolsCSV(w io.Writer, s Summary) error {
	cw := csv.NewWriter(w)
	cw.Write(append(append([]string{"package", "version", "tool"}, hintNames...), "coverage", "contradicted", "findings"))
	for _, t := range s.Tools {
		row := []string{t.Package, t.Version, csvSafe(t.Tool)}
		for _, v := range hintValues(t.Hints) {
			row = append(row, show(v))
		}
		cw.Write(append(row, t.Coverage, strings.Join(t.Contradicted, " "), byRule(t.Findings)))
	}
	cw.Flush()
	return cw.Error()
}

// csvSafe keeps a cell a spreadsheet would read as a formula text: the
// server chose tool names and error messages.
func csvSafe(s string) string {
	s = report.OneLine(s)
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func byRule(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

// WriteMarkdown writes the summary for people: packages, totals, hints,
// changes between versions, input errors.
func WriteMarkdown(w io.Writer, s Summary) error {
	md := func(x string) string {
		return strings.NewReplacer("|", "\\|", "`", "'", "<", "&lt;", ">", "&gt;").Replace(report.Printable(report.OneLine(x)))
	}
	var b strings.Builder
	b.WriteString("# mcpsandbox bulk summary\n\n")
	fmt.Fprintf(&b, "%d packages:", s.Totals.Packages)
	for _, st := range Statuses() {
		if n := s.Totals.ByStatus[st.String()]; n > 0 {
			fmt.Fprintf(&b, " %s %d,", st, n)
		}
	}
	fmt.Fprintf(&b, " %d tools (%d annotated, %d exercised), %d findings.\n\n", s.Totals.Tools, s.Totals.Annotated, s.Totals.Exercised, s.Totals.Findings)
	b.WriteString("| package | version | status | tools | annotated | exercised | findings | by rule | install effects | problems | seconds |\n| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n")
	for _, r := range s.Packages {
		status := r.Status.String()
		if r.Why != "" {
			status += ": " + r.Why
		}
		if len(r.Notes) > 0 {
			status += " (" + strings.Join(r.Notes, "; ") + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %s | %s | %d | %.1f |\n", md(r.Name), md(r.Version), md(status), r.Tools, r.Annotated, r.Exercised, r.Findings, md(byRule(r.ByRule)), installCell(r), r.Problems, r.Seconds)
	}
	b.WriteString("\n## Hints claimed and contradicted\n\n| hint | claimed true | claimed false | contradicted |\n| --- | ---: | ---: | ---: |\n")
	for _, h := range hintNames {
		t := s.Totals.Hints[h]
		fmt.Fprintf(&b, "| %s | %d | %d | %d |\n", h, t.True, t.False, t.Contradicted)
	}
	if len(s.Changes) > 0 {
		b.WriteString("\n## Changes between versions\n\n")
		for _, c := range s.Changes {
			fmt.Fprintf(&b, "- %s %s -> %s: new findings %s; gone %s; hints flipped: %s; tools added: %s; removed: %s\n", md(c.Name), md(c.From), md(c.To),
				orNone(byRule(c.NewFindings)), orNone(byRule(c.GoneFindings)), orNone(md(strings.Join(c.HintsFlipped, ", "))),
				orNone(md(strings.Join(c.ToolsAdded, ", "))), orNone(md(strings.Join(c.ToolsRemoved, ", "))))
		}
	}
	if len(s.Inputs) > 0 {
		b.WriteString("\n## Inputs not run\n\n")
		for _, e := range s.Inputs {
			fmt.Fprintf(&b, "- %s: %s\n", md(e.Where), md(e.Msg))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// WriteSummaries writes summary.json, summary.csv, tools.csv and
// summary.md into the results directory, each atomically.
func WriteSummaries(dir string, s Summary) error {
	j, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the summary: %w", err)
	}
	var c, t, m strings.Builder
	if err := WriteCSV(&c, s); err != nil {
		return err
	}
	if err := WriteToolsCSV(&t, s); err != nil {
		return err
	}
	if err := WriteMarkdown(&m, s); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"summary.json": append(j, '\n'), "summary.csv": []byte(c.String()), "tools.csv": []byte(t.String()), "summary.md": []byte(m.String())} {
		if err := writeAtomic(filepath.Join(dir, name), b); err != nil {
			return err
		}
	}
	return nil
}

// SummarySchema returns summary.json's JSON Schema, derived from the Go
// type (the published copy is ci/bulk/summary.schema.json, kept equal by
// a test).
func SummarySchema() ([]byte, error) {
	str := func(names []string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Enum: toAny(names)} }
	var statuses, kinds []string
	for _, s := range Statuses() {
		statuses = append(statuses, s.String())
	}
	for _, k := range []Kind{KindNPM, KindImage, KindPyPI, KindRemote, KindOther} {
		kinds = append(kinds, k.String())
	}
	s, err := jsonschema.For[Summary](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Status](): str(statuses),
		reflect.TypeFor[Kind]():   str(kinds),
	}})
	if err != nil {
		return nil, fmt.Errorf("deriving the summary schema: %w", err)
	}
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID = SummarySchemaID
	s.Title = "mcpsandbox bulk summary (" + SummaryVersion + ")"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func toAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
