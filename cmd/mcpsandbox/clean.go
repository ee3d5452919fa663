package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

func runClean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("clean", "clean [--images] [--runs] [--states] [RUN...]", stderr)
	withImages := fs.Bool("images", false, "also remove the images: the runtime images and the cache (workspace, package and agent layers)")
	allRuns := fs.Bool("runs", false, "also remove every named run (its container and its changes, applied or not)")
	states := fs.Bool("states", false, "also remove every server state (--state)")
	if err := parse(fs, args); err != nil {
		return err
	}
	st, err := runStore()
	if err != nil {
		return err
	}
	for _, name := range fs.Args() {
		if err := sandbox.CheckRunName(name); err != nil {
			return usageError{err.Error()}
		}
		if _, err := st.Get(name); err != nil {
			return err
		}
	}
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if fs.NArg() > 0 {
		// Named runs only: nothing else is touched.
		for _, name := range fs.Args() {
			if err := st.Remove(ctx, cli, name); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "removed run %s\n", name)
		}
		return nil
	}
	if *allRuns {
		runs, err := st.List()
		if err != nil {
			return err
		}
		for _, r := range runs {
			if err := st.Remove(ctx, cli, r.Name); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "removed %d run(s)\n", len(runs))
	}
	if *states {
		names, err := st.States()
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := st.RemoveState(n); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "removed %d state(s)\n", len(names))
	}
	// The named runs' containers hold their changes until applied: they
	// go by name (or with --runs), never with the rest.
	keep, err := st.Containers()
	if err != nil {
		return err
	}
	n, err := sandbox.Clean(ctx, cli, sandbox.CleanOptions{Images: *withImages, Keep: keep})
	fmt.Fprintf(stdout, "removed %d object(s) labelled dev.mcpsandbox.managed=true\n", n)
	if len(keep) > 0 {
		fmt.Fprintf(stdout, "kept %d named run(s): 'mcpsandbox clean RUN' or 'clean --runs' removes them\n", len(keep))
	}
	return err
}
