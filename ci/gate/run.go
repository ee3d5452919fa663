package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/baseline"
	"github.com/mcpsandbox/mcpsandbox/ci/contract"
	"github.com/mcpsandbox/mcpsandbox/ci/formats"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// Output is one report file to write.
type Output struct {
	Format string // one of formats.Names()
	Path   string // "" writes to Options.Stdout
}

// Options configures one gated scan.
type Options struct {
	Scan    scan.Options
	Verdict verdict.Config
	FailOn  verdict.FailOn
	// Outputs are the reports to write; one of them may go to Stdout.
	Outputs []Output
	// Transcript, ContractOut and WriteBaseline are paths to write the
	// JSON-RPC frames, the published tools and the findings as a baseline
	// ("" for none).
	Transcript, ContractOut, WriteBaseline string
	// Timings is a path to write where the run's time went (see
	// sandbox/timings; "" for none): never in the report.
	Timings string
	// TranscriptUnredacted keeps the run's planted names and honeytoken
	// values in the transcript (by default they show as their roles, as
	// in the report).
	TranscriptUnredacted bool
	// NoReplay leaves the calls unreplayed: every effect is the call's
	// during which it was seen (the report says replay "off").
	NoReplay bool
	// Rounds is how many times to scan (0 or 1: once), each round in
	// fresh containers; the report merges their findings (see
	// verdict.FinishRounds). The transcript is the first round's.
	Rounds int
	// MaxReport bounds the JSON report's bytes outside timing (0: the
	// default, verdict.DefaultMaxReport); past it the report sheds (see
	// verdict.FinishWithin) and the gate fails.
	MaxReport int64
	// Version names mcpsandbox in the reports.
	Version string
	Stdout  io.Writer
	// Notice receives one-line notices for the user (a kept container).
	Notice io.Writer
	// Amend, if set, adds to each round's report, before the verdict, what
	// the scan did not see (a package's install, run in a sandbox of its
	// own before it).
	Amend func(*report.Report)
}

// ErrFindings is returned when the scan ran and the gate fails.
var ErrFindings = errors.New("findings")

// Run scans, gives the verdict, writes every output and returns the
// report. The error is ErrFindings when the gate fails, the scan's error
// when it could not run every step (the outputs are written all the
// same), or an output's error.
func Run(ctx context.Context, cli sandbox.Engine, opts Options) (_ *report.Report, err error) {
	if opts.Timings != "" {
		// Opened first, so that a path that cannot be written fails
		// before any container starts.
		f, err := os.Create(opts.Timings)
		if err != nil {
			return report.New(), fmt.Errorf("writing the timings: %w", err)
		}
		rec := timings.New(time.Now())
		opts.Scan.Timings = rec
		defer func() {
			if werr := errors.Join(rec.Write(f, time.Since(rec.Start())), f.Close()); werr != nil {
				err = errors.Join(err, werr)
			}
		}()
	}
	if !opts.NoReplay && opts.Scan.Suspects == nil {
		opts.Scan.Suspects = func(r *report.Report) []int { return verdict.Suspects(r, opts.Verdict) }
	}
	results, reps, scanErr := scanRounds(ctx, cli, opts)
	res := results[0]
	if opts.Amend != nil {
		for _, r := range reps {
			opts.Amend(r)
		}
	}
	// The published tools are written as the server listed them, before
	// the report bound cuts their descriptions.
	published := contract.FromReport(reps[0])
	if opts.MaxReport <= 0 {
		opts.MaxReport = verdict.DefaultMaxReport
	}
	rep, err := verdict.FinishRoundsWithin(reps, opts.Verdict, opts.MaxReport)
	if err != nil {
		return rep, fmt.Errorf("bounding the report: %w", err)
	}

	for _, r := range results {
		if r.ContainerID != "" && opts.Notice != nil {
			fmt.Fprintf(opts.Notice, "mcpsandbox: kept container %s (remove it with `docker rm %.12s` or `mcpsandbox clean --kept`)\n", r.ContainerID, r.ContainerID)
		}
	}
	var werr error
	for _, o := range opts.Outputs {
		werr = errors.Join(werr, writeReport(rep, o, opts.Stdout, opts.Version))
	}
	if opts.Transcript != "" {
		ps := res.Placeholders
		if opts.TranscriptUnredacted {
			ps = nil
		}
		werr = errors.Join(werr, writeTranscript(res.Transcript, opts.Transcript, ps))
	}
	if opts.ContractOut != "" && len(rep.Tools) > 0 {
		werr = errors.Join(werr, contract.Write(opts.ContractOut, published))
	}
	if opts.WriteBaseline != "" && scanErr == nil {
		werr = errors.Join(werr, baseline.Write(opts.WriteBaseline, baseline.FromReport(rep)))
	}
	switch {
	case scanErr != nil:
		return rep, errors.Join(scanErr, werr)
	case werr != nil:
		return rep, werr
	case verdict.Fails(rep, opts.FailOn):
		return rep, ErrFindings
	}
	return rep, nil
}

func writeReport(rep *report.Report, o Output, stdout io.Writer, version string) (err error) {
	w := stdout
	if o.Path != "" {
		f, err := os.Create(o.Path)
		if err != nil {
			return fmt.Errorf("writing the %s report: %w", o.Format, err)
		}
		defer func() { err = errors.Join(err, f.Close()) }()
		w = f
	}
	if w == nil {
		return fmt.Errorf("writing the %s report: no output", o.Format)
	}
	return formats.Write(w, o.Format, rep, version)
}

// writeTranscript writes the frames as JSON Lines, the placeholders'
// values replaced by their roles.
func writeTranscript(t *sandbox.Transcript, path string, ps []report.Placeholder) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing transcript: %w", err)
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	frames, dropped := t.Frames()
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	for _, fr := range frames {
		if len(ps) > 0 {
			fr = fr.Redacted(ps)
		}
		if err := enc.Encode(fr); err != nil {
			return fmt.Errorf("writing transcript: %w", err)
		}
	}
	if dropped > 0 {
		return enc.Encode(map[string]int{"droppedFrames": dropped})
	}
	return nil
}
