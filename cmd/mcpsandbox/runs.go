package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// runStore is the user's run store; tests set XDG_STATE_HOME.
func runStore() (runs.Store, error) { return runs.DefaultStore() }

func runRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("runs", "runs [--json]", stderr)
	asJSON := fs.Bool("json", false, "print the runs as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{"runs takes no arguments"}
	}
	st, err := runStore()
	if err != nil {
		return err
	}
	list, err := st.List()
	if err != nil {
		return err
	}
	if len(list) > 0 {
		cli, err := sandbox.Connect(ctx)
		if err != nil {
			return err
		}
		defer cli.Close()
		// A run whose runner died with its server still running is
		// stopped first, so that it is listed as it will stay.
		if r, err := sandbox.ReapAll(ctx, cli); err != nil {
			fmt.Fprintf(stderr, "mcpsandbox: %v\n", err)
		} else if len(r.Stopped) > 0 {
			fmt.Fprintf(stderr, "stopped %d kept container(s) whose runner died\n", len(r.Stopped))
		}
		for i := range list {
			was := list[i].State
			if list[i], err = st.Refresh(ctx, cli, list[i]); err != nil {
				return err
			}
			if was == runs.Running && list[i].State != was {
				// Recorded, so that the store says it without the engine.
				if err := st.Update(list[i]); err != nil {
					return err
				}
			}
		}
	}
	states, err := st.States()
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []runs.Meta{}
		}
		if states == nil {
			states = []string{}
		}
		b, _ := json.MarshalIndent(map[string]any{"runs": list, "states": states}, "", "  ")
		_, err := fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tCREATED\tWORKSPACE\tCOMMAND")
	for _, r := range list {
		ws := r.Workspace
		if ws == "" {
			ws = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.State, r.Created.UTC().Format("2006-01-02 15:04:05"),
			report.Printable(ws), report.Printable(strings.Join(r.Command, " ")))
	}
	tw.Flush()
	if len(states) > 0 {
		fmt.Fprintf(stdout, "\nstates (--state): %s\n", strings.Join(states, ", "))
	}
	return nil
}

// allowHostFlag adds --allow-host to a command's flags; the function it
// returns reads them.
func allowHostFlag(fs *pflag.FlagSet) func() ([]sandbox.AllowHost, error) {
	hosts := fs.StringArray("allow-host", nil, "HOST[:PORT] the server may reach, through the runner, and nothing else (repeatable; no port: 443 and 80; a name, or a loopback address with --network none)")
	return func() ([]sandbox.AllowHost, error) {
		var out []sandbox.AllowHost
		for _, h := range *hosts {
			a, err := sandbox.ParseAllowHost(h)
			if err != nil {
				return nil, usageError{err.Error()}
			}
			out = append(out, a)
		}
		return out, nil
	}
}

// stateFlag adds --state to a command's flags; the function it returns
// opens the state named (nil: none).
func stateFlag(fs *pflag.FlagSet) func() (*runs.StateDir, error) {
	name := fs.String("state", "", "NAME of a server state: the server's own files outside the workspace are put back before it starts and saved when it ends, for servers that store data")
	return func() (*runs.StateDir, error) {
		if *name == "" {
			return nil, nil
		}
		if err := runs.CheckName(*name); err != nil {
			return nil, usageError{"--state: " + err.Error()}
		}
		st, err := runStore()
		if err != nil {
			return nil, err
		}
		return st.OpenState(*name)
	}
}

// nameFlag adds --name to scan: the scan's container is kept (stopped)
// as a named run, its workspace changes listed by `changes` and written
// by `apply`. The function it returns records the run and sets opts up
// before the scan (runs.Named, as run --name does); the one that
// returns reports the run after it, or forgets it when no container was
// kept.
func nameFlag(fs *pflag.FlagSet) func(opts *scan.Options, rounds int, stdout io.Writer) (func() error, error) {
	name := fs.String("name", "", "keep the container (stopped) as a named run: 'mcpsandbox changes NAME' lists what it changed in the --workspace, 'apply NAME' writes it to the host, 'clean NAME' removes it")
	return func(opts *scan.Options, rounds int, stdout io.Writer) (func() error, error) {
		if *name == "" {
			return func() error { return nil }, nil
		}
		if err := runs.CheckName(*name); err != nil {
			return nil, usageError{"--name: " + err.Error()}
		}
		if rounds > 1 {
			return nil, usageError{"--name with --rounds: only one round's container can be the run"}
		}
		st, err := runStore()
		if err != nil {
			return nil, err
		}
		if _, err := st.Get(*name); err == nil {
			return nil, usageError{fmt.Sprintf("--name %s: a run of that name exists (see 'mcpsandbox runs')", *name)}
		}
		n, err := runs.Begin(st, *name, opts.SessionOptions)
		if err != nil {
			return nil, err
		}
		opts.Keep = true
		var msg string
		var kerr error
		opts.OnKept = func(k sandbox.KeptSession) { msg, kerr = n.Kept(k) }
		return func() error {
			if kerr != nil {
				return kerr
			}
			if msg != "" {
				fmt.Fprintf(stdout, "mcpsandbox: %s\n", msg)
			}
			// A scan that kept no container (it did not start) leaves
			// no name behind.
			return n.Forget()
		}, nil
	}
}
