package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
)

func runApply(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("apply", "apply [--allow-exec] [--max-apply SIZE] RUN [PATH...]", stderr)
	allowExec := fs.Bool("allow-exec", false, "write what is held back without naming it: files given an executable bit, and files in places that run code on the host (git hooks, editor tasks, shell start-up files, build files: see 'mcpsandbox changes')")
	maxApply := byteSize{zero: true}
	fs.Var(&maxApply, "max-apply", "bound on the bytes one apply writes (the files' apparent sizes), checked before anything is written (default the smaller of 1GiB and a tenth of the directory's free space): "+sizeHelp)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return usageError{"apply needs a run's name (see 'mcpsandbox runs'), then the paths to apply (default: every change)"}
	}
	o, err := runApplyOptions(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	o.AllowExec, o.MaxBytes = *allowExec, maxApply.n
	res, err := overlay.Apply(ctx, o, fs.Args()[1:]...)
	if err != nil && len(res.Applied) == 0 {
		return err
	}
	if len(res.Applied) > 0 {
		// What was applied is the host's now: no longer a change of the
		// run's, nor a host copy changed since it started.
		st, err := runStore()
		if err != nil {
			return err
		}
		if err := o.Baseline.Update(o.Host, res.Applied); err != nil {
			return err
		}
		if err := st.SaveBaseline(fs.Arg(0), o.Baseline); err != nil {
			return err
		}
	}
	if len(res.Applied) > 0 {
		fmt.Fprintf(stdout, "applied to %s:\n", report.Printable(o.Host))
		printChanges(stdout, res.Applied)
	}
	for _, r := range res.Refused {
		fmt.Fprintf(stderr, "mcpsandbox: %s\n", report.Printable(r.Error()))
	}
	if err != nil {
		// Interrupted after some were written: those are recorded.
		return fmt.Errorf("%d change(s) applied before: %w", len(res.Applied), err)
	}
	if len(res.Refused) > 0 {
		return fmt.Errorf("%d change(s) refused or held back, %d applied", len(res.Refused), len(res.Applied))
	}
	if len(res.Applied) == 0 {
		fmt.Fprintln(stdout, "no changes to apply")
	}
	return nil
}
