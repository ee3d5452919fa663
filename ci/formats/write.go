package formats

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// Names lists the formats.
func Names() []string { return []string{"json", "text", "markdown", "sarif", "junit"} }

// Write writes r in format.
func Write(w io.Writer, format string, r *report.Report, version string) error {
	switch format {
	case "json":
		return report.WriteJSON(w, r)
	case "text":
		return WriteText(w, r)
	case "markdown", "md":
		return WriteMarkdown(w, r)
	case "sarif":
		return WriteSARIF(w, r, version)
	case "junit":
		return WriteJUnit(w, r)
	}
	return fmt.Errorf("unknown report format %q (want one of %s)", format, strings.Join(Names(), ", "))
}

// WriteMarkdown writes a summary fit for $GITHUB_STEP_SUMMARY: the
// verdict and coverage, the tools, what was not exercised, the findings
// by rule (the rule's quote once, findings with the same evidence
// together) and the problems.
func WriteMarkdown(w io.Writer, r *report.Report) error {
	var b strings.Builder
	name := serverName(r)
	s := r.Summary
	verdict := "no contradictions"
	if n := s.Findings - s.Baselined; n > 0 {
		verdict = fmt.Sprintf("%d finding(s)", n)
	}
	ex, _, _ := report.CoverageCounts(r.Coverage)
	fmt.Fprintf(&b, "## mcpsandbox: %s — %s, exercised %d of %d tools\n\n", md(name), verdict, ex, len(r.Coverage))
	fmt.Fprintf(&b, "`%s` in `%s`, network `%s`", md(strings.Join(r.Server.Command, " ")), md(r.Server.Image), r.Sandbox.Network)
	if !r.Complete {
		b.WriteString(" — **incomplete scan** (see problems)")
	}
	fmt.Fprintf(&b, "\n\n**Coverage:** %s.", coverageLine(r))
	if ex < len(r.Coverage) {
		fmt.Fprintf(&b, " For the tools not exercised, %s.", notEvidence)
	}
	cov := coverageOf(r)
	b.WriteString("\n\n| tool | readOnly | destructive | idempotent | openWorld | calls | status | files | processes | network | findings |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, t := range r.Tools {
		calls, files, procs, nets, finds := 0, 0, 0, 0, 0
		for _, c := range r.Calls {
			if c.Tool == t.Name {
				calls++
				files += len(c.Effects.Files)
				procs += len(c.Effects.Processes)
				nets += len(c.Effects.Network)
			}
		}
		for _, f := range r.Findings {
			if f.Tool == t.Name && !f.Baselined {
				finds++
			}
		}
		mark := ""
		if finds > 0 {
			mark = " ❌"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %d | %s | %d | %d | %d | %d%s |\n", md(t.Name), report.Hint(t.Hints.ReadOnly), report.Hint(t.Hints.Destructive),
			report.Hint(t.Hints.Idempotent), report.Hint(t.Hints.OpenWorld), calls, statusText(cov[t.Name].Status), files, procs, nets, finds, mark)
	}
	b.WriteString("\nHints as declared; `·`: not declared (the specification's default applies). Status `exercised`: a call returned a result that is not an error (repeats, schema-breaking inputs and boundary probes do not count); `errored`: every call failed. ❌: findings that fail the gate or would.\n")
	var unexercised []report.ToolCoverage
	for _, c := range r.Coverage {
		if c.Status != report.CoverageExercised {
			unexercised = append(unexercised, c)
		}
	}
	if len(unexercised) > 0 {
		b.WriteString("\n### Not exercised\n\n")
		for _, c := range unexercised {
			fmt.Fprintf(&b, "- `%s`: %s\n", md(c.Tool), md(whyNot(c)))
		}
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n### Findings\n")
		for _, blk := range groupFindings(r.Findings) {
			fmt.Fprintf(&b, "\n#### **%s** `%s`\n\n", blk.severity, blk.rule)
			if label, q := ruleQuote(blk.rule); q != "" {
				fmt.Fprintf(&b, "> %s: %s\n\n", label, md(q))
			}
			for _, g := range blk.groups {
				first := g.findings[0]
				base := ""
				if first.Baselined {
					base = " (baselined)"
				}
				if len(g.findings) == 1 {
					fmt.Fprintf(&b, "- %s%s%s: %s\n", mdWhere(first), report.RoundsNote(r, first), base, md(rules.Brief(first)))
				} else {
					names := make([]string, len(g.findings))
					for i, f := range g.findings {
						names[i] = mdWhere(f) + report.RoundsNote(r, f)
					}
					fmt.Fprintf(&b, "- %d findings with the same evidence%s: %s\n", len(g.findings), base, strings.Join(names, ", "))
					for _, f := range g.findings {
						fmt.Fprintf(&b, "  - %s\n", md(rules.Brief(f)))
					}
				}
				for _, e := range first.Evidence {
					fmt.Fprintf(&b, "  - `%s`\n", md(e))
				}
			}
		}
	}
	if len(r.Problems) > 0 {
		b.WriteString("\n### Problems\n\n")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "- %s%s%s: %s\n", p.Kind, callRef(p.Call), roundRef(p.Round), md(p.Message))
		}
	}
	if len(r.Ignored) > 0 {
		fmt.Fprintf(&b, "\n%d finding(s) or evidence item(s) ignored by policy.\n", len(r.Ignored))
	}
	_, err := io.WriteString(w, report.PrintableLines(b.String()))
	return err
}

// mdWhere names a finding's tool (in code) and call.
func mdWhere(f report.Finding) string {
	if f.Tool == "" {
		return "(server)" + callRef(f.Call)
	}
	return "`" + md(f.Tool) + "`" + callRef(f.Call)
}

// roundRef names a problem's round with --rounds N: " (round 2)".
func roundRef(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (round %d)", n)
}

func callRef(seq int) string {
	if seq == 0 {
		return ""
	}
	return fmt.Sprintf(" (call %d)", seq)
}

// md keeps text from breaking a table or inline code, and from
// reaching the reader's terminal as control characters.
func md(s string) string {
	return report.Printable(strings.NewReplacer("|", "\\|", "`", "'", "\n", " ").Replace(s))
}

func serverName(r *report.Report) string {
	var info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	json.Unmarshal(r.Server.ServerInfo, &info)
	if info.Name == "" {
		return strings.Join(r.Server.Command, " ")
	}
	if info.Version != "" {
		return info.Name + " " + info.Version
	}
	return info.Name
}

// SARIF 2.1.0, the parts mcpsandbox fills.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool          `json:"tool"`
	Results    []sarifResult      `json:"results"`
	Properties sarifRunProperties `json:"properties"`
}

// sarifRunProperties is the run's property bag: the coverage, which says
// what the results (and their absence) are worth.
type sarifRunProperties struct {
	Coverage sarifCoverage `json:"mcpsandbox/coverage"`
}

type sarifCoverage struct {
	Summary   string                `json:"summary"` // "exercised 11 of 13 tools (84%): ..."
	Tools     int                   `json:"tools"`
	Exercised int                   `json:"exercised"`
	Errored   int                   `json:"errored"`
	NotCalled int                   `json:"notCalled"`
	ByTool    []report.ToolCoverage `json:"byTool"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	FullDescription      sarifMessage `json:"fullDescription"`
	DefaultConfiguration struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
	Properties sarifProperties `json:"properties"`
}

// sarifProperties is the property bag GitHub code scanning reads: a
// security-severity score, and tags (security puts results in the security
// view).
type sarifProperties struct {
	SecuritySeverity string   `json:"security-severity"`
	Tags             []string `json:"tags,omitempty"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	BaselineState       string            `json:"baselineState,omitempty"`
	Properties          sarifProperties   `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical  `json:"physicalLocation"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
	Message          *sarifMessage  `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation struct {
		URI string `json:"uri"`
	} `json:"artifactLocation"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// sarifFingerprint is the partialFingerprints key of report.Fingerprint;
// it names the fingerprint's version, so a change of method is a new key.
const sarifFingerprint = "mcpsandbox/v2"

// securitySeverity is the score GitHub code scanning ranks a result by
// (0.1-3.9 low, 4.0-6.9 medium, 7.0-8.9 high, 9.0-10.0 critical):
// critical 9.5, error 7.5, warning 5.0, note 2.0.
func securitySeverity(sev report.Severity) string {
	score := map[report.Severity]float64{report.SeverityCritical: 9.5, report.SeverityError: 7.5, report.SeverityWarning: 5.0, report.SeverityNote: 2.0}[sev]
	return strconv.FormatFloat(score, 'f', 1, 64)
}

// sarifLevel maps a severity to a SARIF level, which has no "critical".
func sarifLevel(sev report.Severity) string {
	switch {
	case sev >= report.SeverityError:
		return "error"
	case sev == report.SeverityWarning:
		return "warning"
	}
	return "note"
}

// WriteSARIF writes findings as SARIF 2.1.0 results, one rule per
// mcpsandbox rule. Each result points at the workspace file its first
// piece of evidence names, or at a logical location for the tool.
func WriteSARIF(w io.Writer, r *report.Report, version string) error {
	drv := sarifDriver{Name: "mcpsandbox", Version: version, InformationURI: "https://github.com/mcpsandbox/mcpsandbox", Rules: []sarifRule{}}
	for _, rl := range rules.All() {
		sr := sarifRule{ID: rl.ID, ShortDescription: sarifMessage{Text: rl.ID}, FullDescription: sarifMessage{Text: rl.Rationale},
			Properties: sarifProperties{SecuritySeverity: securitySeverity(rl.Severity), Tags: []string{"security"}}}
		sr.DefaultConfiguration.Level = sarifLevel(rl.Severity)
		drv.Rules = append(drv.Rules, sr)
	}
	ex, er, nc := report.CoverageCounts(r.Coverage)
	run := sarifRun{Tool: sarifTool{Driver: drv}, Results: []sarifResult{}, Properties: sarifRunProperties{Coverage: sarifCoverage{
		Summary: coverageLine(r), Tools: len(r.Coverage), Exercised: ex, Errored: er, NotCalled: nc, ByTool: r.Coverage}}}
	if run.Properties.Coverage.ByTool == nil {
		run.Properties.Coverage.ByTool = []report.ToolCoverage{}
	}
	for _, f := range r.Findings {
		res := sarifResult{RuleID: f.Rule, Level: sarifLevel(f.Severity), Message: sarifMessage{Text: f.Message + evidenceText(f.Evidence)},
			PartialFingerprints: map[string]string{sarifFingerprint: fingerprint(f)}, Properties: sarifProperties{SecuritySeverity: securitySeverity(f.Severity)}}
		if f.Baselined {
			res.BaselineState = "unchanged"
		}
		loc := sarifLocation{LogicalLocations: []sarifLogical{{Name: f.Tool, FullyQualifiedName: "mcp/tools/" + f.Tool, Kind: "function"}}}
		loc.PhysicalLocation.ArtifactLocation.URI = artifactURI(f)
		res.Locations = []sarifLocation{loc}
		run.Results = append(run.Results, res)
	}
	log := sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}

// artifactURI is a workspace file the finding names, relative to the
// workspace (what a repository checkout has), else a stand-in for the tool.
// Each segment is escaped: a URI holds no "<" (the bait's placeholders,
// "<project>/README.md"), space or control character.
func artifactURI(f report.Finding) string {
	for _, e := range f.Evidence {
		if i := strings.Index(e, " /workspace/"); i >= 0 {
			segs := strings.Split(strings.TrimPrefix(e[i+1:], "/workspace/"), "/")
			for k := range segs {
				segs[k] = url.PathEscape(segs[k])
			}
			return strings.Join(segs, "/")
		}
	}
	return "mcp-tools/" + url.PathEscape(f.Tool)
}

func evidenceText(ev []string) string {
	if len(ev) == 0 {
		return ""
	}
	return "\nEvidence:\n- " + strings.Join(ev, "\n- ")
}

// fingerprint is the finding's report.Fingerprint, computed when the
// report did not go through verdict.Finish.
func fingerprint(f report.Finding) string {
	if f.Fingerprint != "" {
		return f.Fingerprint
	}
	return report.Fingerprint(f)
}

// JUnit XML: a testsuite for the server (its coverage a property), a
// testcase per tool, a failure per finding, skipped for tools not
// exercised (errored or not called) that have no finding. A failing testcase lists its
// findings' fingerprints as properties named fingerprint.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Fails      int              `xml:"failures,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Properties *junitProperties `xml:"properties"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitCase struct {
	Name       string           `xml:"name,attr"`
	Classname  string           `xml:"classname,attr"`
	Properties *junitProperties `xml:"properties"`
	Failures   []junitFailure   `xml:"failure"`
	Skipped    *junitSkipped    `xml:"skipped"`
	SystemOut  string           `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// junitFingerprint names the property that carries a finding's
// fingerprint; junitCoverage, the suite's that says how many tools were
// exercised.
const (
	junitFingerprint = "fingerprint"
	junitCoverage    = "coverage"
)

// fail records a finding as a failure of tc, with its fingerprint.
func (tc *junitCase) fail(f report.Finding) {
	tc.Failures = append(tc.Failures, junitFailure{Message: f.Message, Type: f.Rule + " (" + f.Severity.String() + ")",
		Text: strings.Join(f.Evidence, "\n")})
	if tc.Properties == nil {
		tc.Properties = &junitProperties{}
	}
	tc.Properties.Property = append(tc.Properties.Property, junitProperty{Name: junitFingerprint, Value: fingerprint(f)})
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML.
func WriteJUnit(w io.Writer, r *report.Report) error {
	suite := junitSuite{Name: "mcpsandbox: " + serverName(r),
		Properties: &junitProperties{Property: []junitProperty{{Name: junitCoverage, Value: coverageLine(r)}}}}
	cov := coverageOf(r)
	for _, t := range r.Tools {
		tc := junitCase{Name: t.Name, Classname: "mcp.tools"}
		for _, f := range r.Findings {
			if f.Tool != t.Name || f.Baselined {
				continue
			}
			tc.fail(f)
		}
		// A tool not exercised passed nothing: skipped, with why.
		if c, ok := cov[t.Name]; ok && c.Status != report.CoverageExercised && len(tc.Failures) == 0 {
			tc.Skipped = &junitSkipped{Message: whyNot(c)}
			suite.Skipped++
		}
		if len(tc.Failures) > 0 {
			suite.Fails++
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests = len(suite.Cases)
	// Findings on tools the server no longer lists (contract drift, stale
	// baseline entries) and on the server itself.
	listed := map[string]bool{}
	for _, t := range r.Tools {
		listed[t.Name] = true
	}
	for _, f := range r.Findings {
		if !listed[f.Tool] && !f.Baselined {
			tc := junitCase{Name: f.Tool, Classname: "mcp.contract"}
			if f.Tool == "" {
				tc = junitCase{Name: serverName(r), Classname: "mcp.server"}
			}
			tc.fail(f)
			suite.Cases = append(suite.Cases, tc)
			suite.Tests++
			suite.Fails++
		}
	}
	all := junitSuites{Name: "mcpsandbox", Tests: suite.Tests, Fails: suite.Fails, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(all); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
