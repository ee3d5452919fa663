package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
		switch {
		case c.Binary:
			line += " (binary)"
		case c.DiffOmitted != "":
			line += " (no diff: " + c.DiffOmitted + ")"
		}
		if c.Refused != nil {
			line += fmt.Sprintf("  [refused: %s: %s]", c.Refused.Reason, report.Printable(c.Refused.Detail))
		}
		fmt.Fprintln(w, line)
	}
}
