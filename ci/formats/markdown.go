package formats

import (
	"fmt"
	"io"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

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

// md keeps text from breaking a table or inline code, and from
// reaching the reader's terminal as control characters.
func md(s string) string {
	return report.Printable(strings.NewReplacer("|", "\\|", "`", "'", "\n", " ").Replace(s))
}
