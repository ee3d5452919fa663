package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON with a final newline. Map
// keys are sorted by encoding/json, so the bytes depend only on the report.
func WriteJSON(w io.Writer, r *Report) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// WriteText writes the compact table a person reads in a terminal.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	name := dash(CompactJSON(r.Server.ServerInfo))
	fmt.Fprintf(&b, "server   %s\n", strings.Join(r.Server.Command, " "))
	fmt.Fprintf(&b, "info     %s  protocol %s  image %s  network %s\n", name, dash(r.Server.ProtocolVersion), r.Server.Image, r.Sandbox.Network)
	if !r.Complete {
		fmt.Fprintf(&b, "status   INCOMPLETE: the scan did not run every step (see problems)\n")
	}
	b.WriteString("\n")

	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tRO\tDESTR\tIDEMP\tOPEN\tCALLS\tRESULT\tFILES\tPROCS\tNET")
	for _, t := range r.Tools {
		calls, result, files, procs, nets := 0, "-", 0, 0, 0
		for _, c := range r.Calls {
			if c.Tool != t.Name {
				continue
			}
			calls++
			switch {
			case c.ErrorKind != "":
				result = c.ErrorKind
			case c.IsError && result == "-":
				result = "isError"
			case result == "-":
				result = "ok"
			}
			files += len(c.Effects.Files)
			procs += len(c.Effects.Processes)
			nets += len(c.Effects.Network)
		}
		if calls == 0 {
			result = "not called"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\n", t.Name,
			Hint(t.Hints.ReadOnly), Hint(t.Hints.Destructive), Hint(t.Hints.Idempotent), Hint(t.Hints.OpenWorld),
			calls, result, files, procs, nets)
	}
	tw.Flush()

	if len(r.NotCalled) > 0 {
		b.WriteString("\nnot called:\n")
		for _, n := range r.NotCalled {
			fmt.Fprintf(&b, "  %s: %s\n", n.Tool, n.Reason)
		}
	}
	if len(r.ToolChanges) > 0 {
		b.WriteString("\ntool list changes:\n")
		for _, c := range r.ToolChanges {
			what := c.Change
			if c.Field != "" {
				what = fmt.Sprintf("%s %s: %s -> %s", c.Change, c.Field, absentDash(c.Old), absentDash(c.New))
			}
			fmt.Fprintf(&b, "  %s: %s %s\n", ListingWhere(c.Listing, c.Call), c.Tool, what)
		}
	}
	if len(r.Findings) > 0 {
		b.WriteString("\nfindings:\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "  %-8s %s  %s (call %d)%s: %s\n", f.Severity, f.Rule, f.Tool, f.Call, RoundsNote(r, f), f.Message)
			for _, e := range f.Evidence {
				fmt.Fprintf(&b, "             %s\n", e)
			}
		}
	}
	if len(r.Problems) > 0 {
		b.WriteString("\nproblems:\n")
		for _, p := range r.Problems {
			at := ""
			if p.Call > 0 {
				at = fmt.Sprintf(" (call %d)", p.Call)
			}
			fmt.Fprintf(&b, "  %s%s%s: %s\n", p.Kind, at, roundRef(p), p.Message)
		}
	}
	if r.Server.StderrTail != "" && !r.Complete {
		b.WriteString("\nserver stderr (tail):\n")
		for _, l := range strings.Split(strings.TrimRight(lastLines(r.Server.StderrTail, 10), "\n"), "\n") {
			fmt.Fprintf(&b, "  | %s\n", l)
		}
	}
	s := r.Summary
	fmt.Fprintf(&b, "\n%d tools, %d calls, %d not called, %d findings, %d problems\n",
		s.Tools, s.Calls, s.NotCalled, s.Findings, s.Problems)
	if r.Rounds != nil {
		fmt.Fprintf(&b, "%d rounds: %d finding(s) not seen in every round\n", r.Rounds.Run, s.Unstable)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Hint renders a declared hint: true, false, or "·" when not declared.
func Hint(b *bool) string {
	switch {
	case b == nil:
		return "·"
	case *b:
		return "true"
	}
	return "false"
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

// CompactJSON is raw JSON on one line, without insignificant spaces; raw
// as it is when it is not JSON ("" for none).
func CompactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
