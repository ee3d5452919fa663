package formats

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// esc is a string from the server (or one that quotes it) made safe to
// print: no control character reaches the terminal (report.Printable).
func esc(s string) string { return report.Printable(s) }

// notEvidence is what the text and Markdown formats say of the tools that
// were not exercised.
const notEvidence = "their code did not run as a client would run it, so the absence of a finding about them is no evidence of anything (a finding about them still stands: it records what their calls did)"

// legend explains the text format's columns and symbols, once.
var legend = []string{
	"RO DESTR IDEMP OPEN: the readOnlyHint, destructiveHint, idempotentHint and openWorldHint the tool declared:",
	"  true, false, or · when not declared (the specification's default applies: false, true, false, true).",
	"CALLS: every call, repeats, schema-breaking inputs and boundary probes included. STATUS: exercised (a",
	"  call returned a result that is not an error), errored (every call failed), not called. Repeats,",
	"  schema-breaking inputs and boundary probes do not exercise a tool. FILES PROCS NET: the effects its",
	"  calls recorded.",
}

// coverageLine is the coverage in words: "exercised 11 of 13 tools (84%):
// 1 errored, 1 not called".
func coverageLine(r *report.Report) string {
	ex, er, nc := report.CoverageCounts(r.Coverage)
	n := len(r.Coverage)
	if n == 0 {
		return "no tools listed: nothing was exercised"
	}
	return fmt.Sprintf("exercised %d of %d tools (%s): %d errored, %d not called", ex, n, rules.Percent(ex, n), er, nc)
}

// coverageOf returns the coverage of each tool by name.
func coverageOf(r *report.Report) map[string]report.ToolCoverage {
	out := map[string]report.ToolCoverage{}
	for _, c := range r.Coverage {
		out[c.Tool] = c
	}
	return out
}

// statusText is a coverage status as the tables show it.
func statusText(s report.CoverageStatus) string {
	if s == report.CoverageNotCalled {
		return "not called"
	}
	if s == 0 {
		return "-"
	}
	return s.String()
}

// whyNot says why a tool was not exercised: "not called: REASON" or
// "errored (call 4): REASON".
func whyNot(c report.ToolCoverage) string {
	if c.Status == report.CoverageErrored {
		return fmt.Sprintf("errored (call %d): %s", c.Call, c.Reason)
	}
	return "not called: " + c.Reason
}

// findingGroup is the findings of one rule that share their evidence (the
// same items, whatever the order) and severity: one block, the tools
// listed, the evidence once.
type findingGroup struct {
	findings []report.Finding
}

// ruleBlock is one rule's findings, in groups.
type ruleBlock struct {
	rule     string
	severity report.Severity // the highest of its findings
	groups   []*findingGroup
}

// groupFindings puts findings in rule blocks, the most severe first (then
// in the order the report lists them), and in each block the findings
// with the same evidence and severity together.
func groupFindings(fs []report.Finding) []*ruleBlock {
	var blocks []*ruleBlock
	byRule := map[string]*ruleBlock{}
	byKey := map[string]*findingGroup{}
	for _, f := range fs {
		b := byRule[f.Rule]
		if b == nil {
			b = &ruleBlock{rule: f.Rule}
			byRule[f.Rule] = b
			blocks = append(blocks, b)
		}
		b.severity = max(b.severity, f.Severity)
		ev := slices.Clone(f.Evidence)
		slices.Sort(ev)
		ev = slices.Compact(ev)
		key := fmt.Sprintf("%s\x00%d\x00%t\x00%s", f.Rule, f.Severity, f.Baselined, strings.Join(ev, "\x00"))
		g := byKey[key]
		if g == nil || len(f.Evidence) == 0 {
			// Findings without evidence say different things: one each.
			g = &findingGroup{}
			byKey[key] = g
			b.groups = append(b.groups, g)
		}
		g.findings = append(g.findings, f)
	}
	slices.SortStableFunc(blocks, func(a, b *ruleBlock) int { return int(b.severity) - int(a.severity) })
	return blocks
}

// ruleQuote is what a rule block quotes once: the specification's words
// for a hint's rule, the rule's reason for the others.
func ruleQuote(rule string) (label, text string) {
	rl, ok := rules.ByID(rule)
	if !ok || rl.Rationale == "" {
		return "", ""
	}
	if rl.Hint != "" {
		return "the specification", rl.Rationale
	}
	return "why", rl.Rationale
}

// where names a finding's tool and call: "lying_read (call 1)", "(server)".
func where(f report.Finding) string {
	name := f.Tool
	if name == "" {
		name = "(server)"
	}
	if f.Call > 0 {
		name += fmt.Sprintf(" (call %d)", f.Call)
	}
	return name
}

// WriteText writes what a person reads in a terminal: the server, the
// coverage, a table of the tools with a legend, what was not exercised
// and why, the tool list's changes, the findings by rule (the
// specification quoted once per rule, findings with the same evidence in
// one block), the problems and the counts. Every string from the server
// is printed with its control characters escaped.
func WriteText(w io.Writer, r *report.Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "server   %s\n", esc(strings.Join(r.Server.Command, " ")))
	fmt.Fprintf(&b, "info     %s  protocol %s  image %s  network %s\n", esc(dash(report.CompactJSON(r.Server.ServerInfo))), esc(dash(r.Server.ProtocolVersion)), esc(r.Server.Image), r.Sandbox.Network)
	fmt.Fprintf(&b, "coverage %s\n", coverageLine(r))
	if !r.Complete {
		b.WriteString("status   INCOMPLETE: the scan did not run every step (see problems)\n")
	}
	b.WriteString("\n")

	cov := coverageOf(r)
	if len(r.Tools) == 0 {
		b.WriteString("no tools listed\n")
	} else {
		writeToolTable(&b, r, cov)
	}
	var unexercised []report.ToolCoverage
	for _, c := range r.Coverage {
		if c.Status != report.CoverageExercised {
			unexercised = append(unexercised, c)
		}
	}
	if len(unexercised) > 0 {
		fmt.Fprintf(&b, "\nnot exercised (%d): %s.\n", len(unexercised), notEvidence)
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, c := range unexercised {
			fmt.Fprintf(tw, "  %s\t%s\n", esc(c.Tool), esc(whyNot(c)))
		}
		tw.Flush()
	}
	if len(r.Reads) > 0 {
		b.WriteString("\nreads (resources, prompts, completions):\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, rd := range r.Reads {
			status := "ok"
			if rd.ErrorKind != "" {
				status = "error " + rd.ErrorKind
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\tfiles %d\tprocs %d\tnet %d\n", rd.Seq, rd.Method, esc(rd.Target), status,
				len(rd.Effects.Files), len(rd.Effects.Processes), len(rd.Effects.Network))
		}
		tw.Flush()
	}
	if len(r.ToolChanges) > 0 {
		b.WriteString("\ntool list changes:\n")
		for _, c := range r.ToolChanges {
			what := c.Change
			if c.Field != "" {
				what = fmt.Sprintf("%s %s: %s -> %s", c.Change, c.Field, absentDash(c.Old), absentDash(c.New))
			}
			fmt.Fprintf(&b, "  %s: %s %s\n", report.ListingWhere(c.Listing, c.Call), esc(c.Tool), esc(what))
		}
	}
	if len(r.Findings) > 0 {
		b.WriteString("\nfindings (the specification quoted once per rule; findings with the same evidence in one block):\n")
		for _, blk := range groupFindings(r.Findings) {
			fmt.Fprintf(&b, "\n  %s %s\n", blk.severity, blk.rule)
			if label, q := ruleQuote(blk.rule); q != "" {
				fmt.Fprintf(&b, "    %s: %s\n", label, q)
			}
			for _, g := range blk.groups {
				writeTextGroup(&b, r, g)
			}
		}
	}
	if len(r.Problems) > 0 {
		b.WriteString("\nproblems:\n")
		for _, pr := range r.Problems {
			fmt.Fprintf(&b, "  %s%s%s: %s\n", pr.Kind, callRef(pr.Call), roundRef(pr.Round), esc(pr.Message))
		}
	}
	if !r.Complete {
		if r.Server.StderrHead != "" {
			writeLines(&b, "server stderr (head):", firstLines(r.Server.StderrHead, 10))
		}
		if r.Server.StderrTail != "" {
			writeLines(&b, "server stderr (tail):", lastLines(r.Server.StderrTail, 10))
		}
	}
	s := r.Summary
	fmt.Fprintf(&b, "\n%d tools (%d exercised), %d calls, %d not called, %d findings, %d problems\n",
		s.Tools, s.Exercised, s.Calls, s.NotCalled, s.Findings, s.Problems)
	if r.Rounds != nil {
		fmt.Fprintf(&b, "%d rounds: %d finding(s) not seen in every round\n", r.Rounds.Run, s.Unstable)
	}
	// Whatever a field let through, no control character but the newline
	// leaves this function.
	_, err := io.WriteString(w, report.PrintableLines(b.String()))
	return err
}

// writeToolTable writes the tools' table and its legend.
func writeToolTable(b *strings.Builder, r *report.Report, cov map[string]report.ToolCoverage) {
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tRO\tDESTR\tIDEMP\tOPEN\tCALLS\tSTATUS\tFILES\tPROCS\tNET")
	for _, t := range r.Tools {
		calls, files, procs, nets := 0, 0, 0, 0
		for _, c := range r.Calls {
			if c.Tool != t.Name {
				continue
			}
			calls++
			files += len(c.Effects.Files)
			procs += len(c.Effects.Processes)
			nets += len(c.Effects.Network)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\n", esc(t.Name),
			report.Hint(t.Hints.ReadOnly), report.Hint(t.Hints.Destructive), report.Hint(t.Hints.Idempotent), report.Hint(t.Hints.OpenWorld),
			calls, statusText(cov[t.Name].Status), files, procs, nets)
	}
	tw.Flush()
	b.WriteString("\nlegend:\n")
	for _, l := range legend {
		fmt.Fprintf(b, "  %s\n", l)
	}

}

// writeTextGroup writes one group of findings: the tools (with their
// messages, the rule's quote left out), then the evidence once.
func writeTextGroup(b *strings.Builder, r *report.Report, g *findingGroup) {
	first := g.findings[0]
	base := ""
	if first.Baselined {
		base = " (baselined)"
	}
	if len(g.findings) == 1 {
		fmt.Fprintf(b, "    %s%s%s: %s\n", esc(where(first)), report.RoundsNote(r, first), base, esc(rules.Brief(first)))
	} else {
		names := make([]string, len(g.findings))
		for i, f := range g.findings {
			names[i] = esc(where(f)) + report.RoundsNote(r, f)
		}
		fmt.Fprintf(b, "    %d findings with the same evidence%s: %s\n", len(g.findings), base, strings.Join(names, ", "))
		for _, f := range g.findings {
			fmt.Fprintf(b, "      %s\n", esc(rules.Brief(f)))
		}
	}
	for _, e := range first.Evidence {
		fmt.Fprintf(b, "        %s\n", esc(e))
	}
}

func writeLines(b *strings.Builder, title string, text string) {
	fmt.Fprintf(b, "\n%s\n", title)
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(b, "  | %s\n", esc(l))
	}
}

// absentDash shows a tool change's value, "(absent)" for none.
func absentDash(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
