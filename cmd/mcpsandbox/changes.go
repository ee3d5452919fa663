package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/docker/go-units"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
)

func runChanges(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("changes", "changes [--json] [--no-diff] RUN [PATH...]", stderr)
	asJSON := fs.Bool("json", false, "print the changes as JSON")
	noDiff := fs.Bool("no-diff", false, "list the paths only, without the diffs")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return usageError{"changes needs a run's name (see 'mcpsandbox runs')"}
	}
	o, err := runApplyOptions(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	cs, err := overlay.Changes(o)
	if err != nil {
		return err
	}
	if picks := fs.Args()[1:]; len(picks) > 0 {
		cs = pickChanges(cs, picks)
	}
	if *asJSON {
		if cs == nil {
			cs = []overlay.WorkspaceChange{}
		}
		b, _ := json.MarshalIndent(cs, "", "  ")
		_, err := fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	if len(cs) == 0 {
		fmt.Fprintln(stdout, "no changes")
		return nil
	}
	printChanges(stdout, cs)
	var total int64
	for _, c := range cs {
		if c.Type == overlay.File && c.Change != report.ChangeDeleted && c.Refused == nil {
			total += c.Size
		}
	}
	if bound, err := overlay.DefaultApplyBound(o.Host); err == nil && total > 0 {
		over := ""
		if total > bound {
			over = ": over it, apply writes nothing without --max-apply"
		}
		fmt.Fprintf(stdout, "apply would write %s (apparent sizes); its default bound here is %s%s\n", units.BytesSize(float64(total)), units.BytesSize(float64(bound)), over)
	}
	if !*noDiff {
		for _, c := range cs {
			if c.Diff != "" {
				fmt.Fprintf(stdout, "\n%s", report.PrintableLines(c.Diff))
			}
		}
	}
	return nil
}

// runApplyOptions finds a run's workspace, changes and baseline.
func runApplyOptions(ctx context.Context, name string) (overlay.ApplyOptions, error) {
	if err := runs.CheckName(name); err != nil {
		return overlay.ApplyOptions{}, usageError{err.Error()}
	}
	st, err := runStore()
	if err != nil {
		return overlay.ApplyOptions{}, err
	}
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return overlay.ApplyOptions{}, err
	}
	defer cli.Close()
	return st.ApplyOptions(ctx, cli, name)
}

// pickChanges keeps the changes at or under the paths given.
func pickChanges(cs []overlay.WorkspaceChange, picks []string) []overlay.WorkspaceChange {
	var out []overlay.WorkspaceChange
	for _, c := range cs {
		for _, p := range picks {
			p = strings.Trim(p, "/")
			if p == "" || c.Path == p || strings.HasPrefix(c.Path, p+"/") {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// printChanges lists changes one a line: what, the path, what apply
// would refuse.
func printChanges(w io.Writer, cs []overlay.WorkspaceChange) {
	for _, c := range cs {
		p, _ := overlay.EscapePath(c.Path)
		line := fmt.Sprintf("%-8s %s", c.Change, report.Printable(p))
		if c.Type == overlay.Dir {
			line += "/"
		}
		if c.Type == overlay.Symlink {
			t, _ := overlay.EscapePath(c.LinkTarget)
			line += " -> " + report.Printable(t)
		}
		if what := changeFacts(c); what != "" {
			line += " (" + what + ")"
		}
		if c.Refused != nil {
			what := "refused"
			if c.Refused.Reason.HeldBack() {
				what = "held back"
			}
			line += fmt.Sprintf("  [%s: %s: %s]", what, c.Refused.Reason, report.Printable(c.Refused.Detail))
		}
		fmt.Fprintln(w, line)
	}
}

// changeFacts is what a change does besides its content, in words: a type
// replaced, a mode set or changed (the executable bit called out), the
// size with what it holds when sparse, why there is no diff.
func changeFacts(c overlay.WorkspaceChange) string {
	var facts []string
	if c.Was != "" {
		facts = append(facts, fmt.Sprintf("was a %s", c.Was))
	}
	switch {
	case c.Change == report.ChangeDeleted:
	case c.Change == report.ChangeModified && c.Was == "" && c.ModeBefore != c.Mode:
		facts = append(facts, fmt.Sprintf("mode %04o -> %04o", c.ModeBefore, c.Mode))
	case c.Change == report.ChangeCreated || c.Was != "":
		facts = append(facts, fmt.Sprintf("mode %04o", c.Mode))
	}
	if c.NewExec() {
		facts = append(facts, "executable")
	}
	if c.Type == overlay.File && c.Change != report.ChangeDeleted {
		size := units.BytesSize(float64(c.Size))
		if c.Allocated < c.Size {
			size += fmt.Sprintf(", sparse: %s allocated", units.BytesSize(float64(c.Allocated)))
		}
		facts = append(facts, size)
	}
	switch {
	case c.Binary:
		facts = append(facts, "binary")
	case c.DiffOmitted != "":
		facts = append(facts, "no diff: "+c.DiffOmitted)
	}
	return strings.Join(facts, ", ")
}
