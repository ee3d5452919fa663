package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
)

const cleanSynopsis = "clean [--images] [--runs] [--states] [--live] [--kept] [--yes] [RUN...]"

func runClean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cleanCommand(ctx, args, os.Stdin, stdout, stderr)
}

// cleanCommand is `mcpsandbox clean`, asking on stdin (when it is a
// terminal) before it removes what others may own.
func cleanCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("clean", cleanSynopsis, stderr)
	withImages := fs.Bool("images", false, "also remove the images no container uses and no live process made: the runtime images and the cache (workspace, package and agent layers)")
	allRuns := fs.Bool("runs", false, "also remove every named run whose runner is gone (its container and its changes, applied or not)")
	states := fs.Bool("states", false, "also remove every server state (--state)")
	live := fs.Bool("live", false, "also remove the containers of live runs: other processes' running scans and runs, other users' too, and those whose owner cannot be told (another host's); asks first")
	kept := fs.Bool("kept", false, "also remove the kept containers whose runner is gone (--keep, and other stores' named runs); asks first")
	yes := fs.Bool("yes", false, "with --live or --kept: do not ask (needed without a terminal)")
	if err := parse(fs, args); err != nil {
		return err
	}
	asks := *live || *kept
	if fs.NArg() > 0 && (asks || *withImages || *allRuns || *states) {
		return usageError{"clean RUN... removes those runs and nothing else: give the runs or the flags, not both"}
	}
	if asks && !*yes && !isTerminal(stdin) {
		return usageError{"clean --live and --kept remove what other processes and users may own: with no terminal to ask on, add --yes"}
	}
	st, err := runStore()
	if err != nil {
		return err
	}
	for _, name := range fs.Args() {
		if err := runs.CheckName(name); err != nil {
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
		if err := cleanRuns(ctx, st, cli, stdout); err != nil {
			return err
		}
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
	runs, err := st.Containers()
	if err != nil {
		return err
	}
	opts := sandbox.CleanOptions{Images: *withImages, Runs: runs, Live: *live, Kept: *kept}
	if asks && !*yes {
		in := bufio.NewReader(stdin)
		opts.Confirm = func(extra []sandbox.Leftover) bool { return confirmClean(in, stderr, extra) }
	}
	res, err := sandbox.Clean(ctx, cli, opts)
	printCleaned(stdout, res)
	return err
}

// cleanRuns removes the store's runs whose runner is gone; a run still
// served is left and said (`clean NAME` removes it).
func cleanRuns(ctx context.Context, st runs.Store, cli runs.Engine, stdout io.Writer) error {
	list, err := st.List()
	if err != nil {
		return err
	}
	n := 0
	for _, r := range list {
		if r.Owner != "" && label.OwnerAlive(r.Owner) {
			o, _ := label.ParseOwner(r.Owner)
			fmt.Fprintf(stdout, "left run %s: its runner lives (%s); 'mcpsandbox clean %s' removes it\n", r.Name, o, r.Name)
			continue
		}
		if err := st.Remove(ctx, cli, r.Name); err != nil {
			return err
		}
		n++
	}
	fmt.Fprintf(stdout, "removed %d run(s)\n", n)
	return nil
}

// confirmClean asks on stderr whether to remove what --live and --kept
// added, and reads the answer: yes only for "y" or "yes".
func confirmClean(in *bufio.Reader, stderr io.Writer, extra []sandbox.Leftover) bool {
	var live, kept []sandbox.Leftover
	for _, l := range extra {
		if l.Why == sandbox.LeftLive {
			live = append(live, l)
		} else {
			kept = append(kept, l)
		}
	}
	var what []string
	if len(live) > 0 {
		what = append(what, fmt.Sprintf("%d container(s) of live runs: %s", len(live), strings.Join(sandbox.Owners(live), ", ")))
	}
	if len(kept) > 0 {
		what = append(what, fmt.Sprintf("%d kept container(s) whose runner is gone", len(kept)))
	}
	fmt.Fprintf(stderr, "remove %s? [y/N] ", strings.Join(what, "; and "))
	answer, _ := in.ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return true
	}
	return false
}

// printCleaned says what clean removed, and what it left and why.
func printCleaned(w io.Writer, res sandbox.CleanResult) {
	var parts []string
	for _, t := range []string{"container", "network", "volume", "image"} {
		if n := res.Removed[t]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s(s)", n, t))
		}
	}
	line := fmt.Sprintf("removed %d object(s) labelled %s", res.Total(), label.ManagedFilter)
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	fmt.Fprintln(w, line)
	for _, g := range []struct{ why, says string }{
		{sandbox.LeftLive, "of live runs: %s; 'clean --live' removes them"},
		{sandbox.LeftKept, "kept, whose runner is gone (--keep, or another store's named runs): 'clean --kept' removes them"},
		{sandbox.LeftRun, "of named runs: 'mcpsandbox clean RUN' or 'clean --runs' removes them"},
		{sandbox.LeftInUse, "that a container uses"},
		{sandbox.LeftRefuse, "the engine would not remove (child images, or a container made meanwhile)"},
	} {
		byType := map[string][]sandbox.Leftover{}
		for _, l := range res.LeftBy(g.why) {
			byType[l.Type] = append(byType[l.Type], l)
		}
		for _, t := range []string{"container", "network", "volume", "image"} {
			left := byType[t]
			if len(left) == 0 {
				continue
			}
			says := g.says
			if g.why == sandbox.LeftLive {
				says = fmt.Sprintf(says, strings.Join(sandbox.Owners(left), ", "))
			}
			fmt.Fprintf(w, "left %d %s(s) %s\n", len(left), t, says)
		}
	}
}
