package phase

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// Options configures Run.
type Options struct {
	// Name names the phase in the report ("install").
	Name string
	// Timeout bounds the command (default 5 minutes): past it the command
	// is killed, and the phase says so.
	Timeout time.Duration
	// Bait, when set, is planted as a scan plants it (its environment
	// variables and files), found in what leaves the sandbox, and shown as
	// role placeholders in the report.
	Bait *probes.Bait
	// Extract, when set, is a directory in the container whose tree is
	// written, as the engine's tar (entries named after its base name), to
	// ExtractTo once the command ended with exit code 0: a package
	// directory the command built. The workspace and package are then
	// copied into image layers, not mounted, so that the tree stays in the
	// container's own filesystem.
	Extract   string
	ExtractTo io.Writer
}

// Result is how Run's command ended.
type Result struct {
	// Report holds the phase (first), the teardown, the sandbox and the
	// problems, in the report's deterministic form; no tools, no calls.
	Report *report.Report
	// Ended is false when the command was killed at the timeout;
	// ExitCode is its exit status when it ended.
	Ended    bool
	ExitCode int
	// Stderr is the end of what the command wrote to stderr (the report
	// keeps it too, redacted).
	Stderr string
}

// defaultTimeout is Options.Timeout's default.
const defaultTimeout = 5 * time.Minute

// ErrExtract wraps a failure to read the tree Options.Extract
// names out of the container.
var ErrExtract = errors.New("reading the built tree out of the container")

// Run runs opts.Argv to its end in a sandbox set up as a server's
// (image, agent, network, limits, workspace and package) and records
// everything it did, from its exec to its end, as one phase: a command
// that is not an MCP server (an install, a build), whose effects are
// judged as a server's phases are. Nothing is sent to its stdin; its
// stdout is read and dropped (give it 1>&2 to keep it). The error is
// the sandbox's (an InfraError) or ctx's; a command that fails or runs
// past the timeout is a result, not an error.
func Run(ctx context.Context, cli sandbox.Engine, opts sandbox.SessionOptions, po Options) (res Result, err error) {
	if po.Timeout <= 0 {
		po.Timeout = defaultTimeout
	}
	if po.Extract != "" {
		opts.CopyWorkspace = true
	}
	if po.Bait != nil {
		opts.Env = append(po.Bait.Env(), opts.Env...)
		opts.Seeds = append(po.Bait.Seeds(), opts.Seeds...)
		opts.Secrets = po.Bait.Find
		opts.Placeholders = po.Bait.Placeholders()
	}
	// The phase's bound is the command's, from its exec: the container's
	// start, slow on a loaded engine, is bounded apart (StartTimeout), as
	// a server's is, so that a load never reads as a command past its bound.
	s, err := sandbox.StartCommand(ctx, cli, opts)
	rep := s.Report()
	res.Report = rep
	finish := func() {
		err = errors.Join(err, s.Close(ctx))
		rep.Sanitize()
		if po.Bait != nil {
			rep.Redact(po.Bait.Placeholders())
		}
		rep.Normalize()
		res.Stderr = rep.Server.StderrTail
	}
	if err != nil {
		finish()
		return res, err
	}
	runCtx, cancel := context.WithTimeout(ctx, po.Timeout)
	defer cancel()
	st, ended := s.WaitCommand(runCtx, po.Timeout)
	if ctx.Err() != nil {
		finish()
		return res, ctx.Err()
	}
	s.Phase(ctx, po.Name, 0)
	res.Ended, res.ExitCode = ended, st.ExitCode
	// A container gone before its end seems not to have ended: that is
	// a lost sandbox (recorded by LostErr), not a command past its bound.
	if !ended && s.LostErr(ctx, 0) == nil {
		s.Problem("run-timeout", 0, "the %s did not end within %s: killed", po.Name, po.Timeout)
	}
	if ended && st.ExitCode == 0 && po.Extract != "" {
		// The container has stopped but is still there: its filesystem,
		// the tree included, is read as the engine archives it.
		rc, cerr := s.CopyOut(ctx, po.Extract)
		if cerr == nil {
			_, cerr = io.Copy(po.ExtractTo, rc)
			rc.Close()
		}
		if cerr != nil {
			err = fmt.Errorf("%w %s: %w", ErrExtract, po.Extract, cerr)
		}
	}
	finish()
	return res, err
}
