package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// PhaseOptions configures RunPhase.
type PhaseOptions struct {
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

// PhaseResult is how RunPhase's command ended.
type PhaseResult struct {
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

// defaultPhaseTimeout is PhaseOptions.Timeout's default.
const defaultPhaseTimeout = 5 * time.Minute

// ErrPhaseExtract wraps a failure to read the tree PhaseOptions.Extract
// names out of the container.
var ErrPhaseExtract = errors.New("reading the built tree out of the container")

// RunPhase runs opts.Argv to its end in a sandbox set up as a server's
// (image, agent, network, limits, workspace and package) and records
// everything it did, from its exec to its end, as one phase: a command
// that is not an MCP server (an install, a build), whose effects are
// judged as a server's phases are. Nothing is sent to its stdin; its
// stdout is read and dropped (give it 1>&2 to keep it). The error is
// the sandbox's (an InfraError) or ctx's; a command that fails or runs
// past the timeout is a result, not an error.
func RunPhase(ctx context.Context, cli Engine, opts SessionOptions, po PhaseOptions) (res PhaseResult, err error) {
	if po.Timeout <= 0 {
		po.Timeout = defaultPhaseTimeout
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
	s := newSession(cli, opts)
	res.Report = s.rep
	finish := func() {
		err = errors.Join(err, s.Close(ctx))
		s.rep.Sanitize()
		if po.Bait != nil {
			s.rep.Redact(po.Bait.Placeholders())
		}
		s.rep.Normalize()
		res.Stderr = s.rep.Server.StderrTail
	}
	// The phase's bound is the command's, from its exec: the container's
	// start, slow on a loaded engine, is bounded apart (StartTimeout), as
	// a server's is, so that a load never reads as a command past its bound.
	startCtx, cancelStart := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancelStart()
	if err := s.launch(ctx, startCtx); err != nil {
		finish()
		return res, err
	}
	runCtx, cancel := context.WithTimeout(ctx, po.Timeout)
	defer cancel()
	// Nothing reads the command's stdout but this: a command that writes
	// there must not block on a full pipe.
	go io.Copy(io.Discard, s.ctr.Stdout())
	st, ended := s.ctr.Exited(runCtx, po.Timeout)
	if ctx.Err() != nil {
		finish()
		return res, ctx.Err()
	}
	s.Phase(ctx, po.Name, 0)
	res.Ended, res.ExitCode = ended, st.ExitCode
	// A container gone before its end seems not to have ended: that is
	// a lost sandbox (recorded by checkLost), not a command past its bound.
	if !ended && s.checkLost(ctx, 0, true) == nil {
		s.Problem("run-timeout", 0, "the %s did not end within %s: killed", po.Name, po.Timeout)
	}
	if ended && st.ExitCode == 0 && po.Extract != "" {
		// The container has stopped but is still there: its filesystem,
		// the tree included, is read as the engine archives it.
		rc, _, cerr := cli.CopyFromContainer(ctx, s.ctr.ID, po.Extract)
		if cerr == nil {
			_, cerr = io.Copy(po.ExtractTo, rc)
			rc.Close()
		}
		if cerr != nil {
			err = fmt.Errorf("%w %s: %w", ErrPhaseExtract, po.Extract, cerr)
		}
	}
	finish()
	return res, err
}

// InstalledRepo is the repository of the images LoadTreeImage makes for
// packages installed in a sandbox.
const InstalledRepo = "mcpsandbox/installed"

// LoadTreeImage makes image ref: image base plus one layer, the tar in
// layer, with entries relative to the root (as the engine archives a
// directory: /package's entries are package/...). It is labelled a cached
// package image (KindPackage), which eviction may remove once no
// container uses it; createdBy names the layer in the image's history.
func LoadTreeImage(ctx context.Context, cli Engine, base string, layer *os.File, ref, runID, createdBy string) error {
	img, err := cli.ImageInspect(ctx, base)
	if err != nil {
		return fmt.Errorf("inspecting image %s: %w", base, err)
	}
	if err := loadLayerImage(ctx, cli, img, layer, ref, label.Set(runID, map[string]string{label.Kind: KindPackage}), createdBy); err != nil {
		return err
	}
	return TouchImage(ctx, cli, ref)
}

// TouchImage records a use of the cached image ref now, for
// least-recently-used eviction (a loaded image has no use recorded yet,
// and would go first).
func TouchImage(ctx context.Context, cli Engine, ref string) error {
	return touch(ctx, cli, ref, ref)
}
