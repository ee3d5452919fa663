package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/gate"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

const usage = `mcpsandbox runs an MCP server in a disposable Docker container, calls its
tools and reports every side effect.

Usage:
  mcpsandbox scan [flags] -- COMMAND [ARG...]   scan an MCP server (stdio; over HTTP with --transport)
  mcpsandbox scan [flags] --image REF           scan the server an image runs (its entrypoint and command)
  mcpsandbox client [flags] -- COMMAND [ARG...] test whether a client lets a server's readOnlyHint skip the human
  mcpsandbox run [flags] -- COMMAND [ARG...]    serve an MCP server from a sandbox to a client on stdio, hints verified
  mcpsandbox bulk [flags] LIST...               scan npm packages and images listed in files, resumably
  mcpsandbox bulk merge [--results OUT] DIR...  merge the results directories of shards into one
  mcpsandbox bulk k8s [flags]                   print a Kubernetes Indexed Job that runs the shards
  mcpsandbox images build [NAME...]             build runtime images from the host (base, node, python, strace, build)
  mcpsandbox images ls                          list the images mcpsandbox made, with the cache's sizes
  mcpsandbox images prune [--cache-size SIZE]   evict cached images, least recently used first
  mcpsandbox clean [--images] [--runs] [--states] [--live] [--kept] [--yes] [RUN...]
                                                remove what mcpsandbox made that no live process owns,
                                                or the runs named
  mcpsandbox runs                               list the named runs and the server states
  mcpsandbox changes RUN [PATH...]              what a run changed in its workspace, with diffs
  mcpsandbox apply RUN [PATH...]                write a run's workspace changes into the host directory
  mcpsandbox wrap [--dry-run] CLIENT|FILE       make each stdio server of a client's configuration start through run
  mcpsandbox unwrap CLIENT|FILE                 put a wrapped configuration back, byte for byte
  mcpsandbox version                            print the version

Run 'mcpsandbox COMMAND --help' for a command's flags.
Exit codes: 0 no findings, 1 findings, 2 usage or infrastructure error;
client: 0 REFUTED (backed), 1 CONFIRMED, 2 ERRORED, 3 SKIPPED or an unbacked REFUTED.
`

// usageError is a mistake in the command line: exit 2 with the usage hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// errHelp ends a run that printed help: exit 0.
var errHelp = pflag.ErrHelp

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	switch args[0] {
	case "scan":
		return runScan(ctx, args[1:], stdout, stderr)
	case "run":
		return runRun(ctx, args[1:], os.Stdin, stdout, stderr)
	case "bulk":
		return runBulk(ctx, args[1:], stdout, stderr)
	case "client":
		return runClient(ctx, args[1:], stdout, stderr)
	case "images":
		return runImages(ctx, args[1:], stdout, stderr)
	case "clean":
		return runClean(ctx, args[1:], stdout, stderr)
	case "runs":
		return runRuns(ctx, args[1:], stdout, stderr)
	case "changes":
		return runChanges(ctx, args[1:], stdout, stderr)
	case "apply":
		return runApply(ctx, args[1:], stdout, stderr)
	case "wrap":
		return runWrap(args[1:], stdout, stderr)
	case "unwrap":
		return runUnwrap(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "mcpsandbox", version())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

// newFlags returns a flag set that prints its usage on --help and never
// exits the process itself.
func newFlags(name, synopsis string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mcpsandbox %s\n\nFlags:\n%s", synopsis, fs.FlagUsages())
	}
	return fs
}

// parse parses flags, turning a parse error into a usage error.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return usageError{err.Error()}
	}
	return nil
}

// exitCode maps an error to the process exit code, printing its one-line
// message.
func exitCode(err error, stderr io.Writer) int {
	var ue usageError
	var ie *sandbox.InfraError
	var cv clientVerdict
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &cv):
		// `client`: the report says why.
		return cv.code
	case errors.Is(err, gate.ErrFindings):
		return 1
	case errors.Is(err, bulk.ErrConflict):
		// The merge ran; what it could not decide is listed.
		fmt.Fprintf(stderr, "mcpsandbox: %s\n", report.Printable(report.OneLine(err.Error())))
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "mcpsandbox: %s (see 'mcpsandbox --help')\n", ue.msg)
		return 2
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "mcpsandbox: %s\n", report.Printable(report.OneLine(err.Error())))
		return 2
	}
	// The error can quote the server (why it did not start): no control
	// character of its reaches the terminal.
	fmt.Fprintf(stderr, "mcpsandbox: %s\n", report.Printable(report.OneLine(err.Error())))
	return 2
}

func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return buildVersion(bi.Main.Version, bi.Settings)
}

// buildVersion is the module version with the VCS revision it was built
// from (12 digits) and "+dirty" when the tree had uncommitted changes:
// "(devel) (0b7bd0c1a2b3+dirty)" for a build from a clone.
func buildVersion(v string, settings []debug.BuildSetting) string {
	rev, dirty := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(len(s.Value), 12)]
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" || strings.Contains(v, rev) {
		return v // a pseudo-version names the revision (and +dirty) itself
	}
	if dirty {
		rev += "+dirty"
	}
	return v + " (" + rev + ")"
}
