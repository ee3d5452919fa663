package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/overlay"
)

func runApply(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("apply", "apply RUN [PATH...]", stderr)
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
	res, err := overlay.Apply(o, fs.Args()[1:]...)
	if err != nil {
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
	if len(res.Refused) > 0 {
		return fmt.Errorf("%d change(s) refused, %d applied", len(res.Refused), len(res.Applied))
	}
	if len(res.Applied) == 0 {
		fmt.Fprintln(stdout, "no changes to apply")
	}
	return nil
}
