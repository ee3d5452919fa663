package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/baseline"
	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/contract"
	"github.com/mcpsandbox/mcpsandbox/ci/formats"
	"github.com/mcpsandbox/mcpsandbox/ci/gate"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
	"golang.org/x/term"
)

func runScan(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("scan", "scan [flags] -- COMMAND [ARG...] | scan [flags] --image REF (no command: the image's own entrypoint and command)", stderr)
	opts := scan.Options{Isolation: sandbox.IsolationSession}
	session := sessionFlags(fs, serverFlags|flagCall, stderr)
	probeFile := fs.String("probes", "", "probe file: JSON object of tool name to arguments, called in file order")
	fs.StringArrayVar(&opts.Env, "env", nil, "environment variable KEY=VAL for the server (repeatable)")
	fs.DurationVar(&opts.Timeout, "timeout", 0, "bound on the whole run (default 10m)")
	format := fs.String("format", "", "report format on stdout or --out: text, json, markdown, sarif or junit (default: text on a terminal, else json)")
	reports := fs.StringArray("report", nil, "also write FORMAT=PATH (json, text, markdown, sarif, junit; repeatable)")
	policyFile := fs.String("policy", "", "policy file (YAML or JSON): rule severities, ignores, allowed hosts")
	baselineFile := fs.String("baseline", "", "baseline of accepted findings; new findings and stale entries fail the gate")
	writeBaseline := fs.String("write-baseline", "", "write the findings of this scan as a baseline")
	contractFile := fs.String("contract", "", "compare the tools with this contract; drift is reported as findings")
	contractOut := fs.String("contract-out", "", "write the published tools (names, descriptions, schemas, annotations as sent) as a contract")
	minCoverage := fs.Float64("min-coverage", 0, "share of the listed tools (0 to 1) that must be exercised, a call returning a result that is not an error; below it, a coverage-low finding (error). Overrides the policy's coverage.min; 0: no minimum")
	failOn := fs.String("fail-on", "error", "exit 1 on findings at or above: critical, error, warning, note; never to only report")
	out := fs.String("out", "", "write the report to this file instead of stdout")
	transcript := fs.String("transcript", "", "write every JSON-RPC frame, with timestamps, to this file (JSON Lines; the bait shows as its roles, as in the report)")
	transcriptUnredacted := fs.Bool("transcript-unredacted", false, "keep the planted names and honeytoken values in the --transcript, and the bytes exactly as received (it then holds this run's secrets: do not publish it)")
	timingsFile := fs.String("timings", "", "write where the run's time went (container starts, handshakes, calls, snapshots, replays, linger, probes) to this file as JSON; never in the report")
	fs.DurationVar(&opts.Linger, "linger", scan.DefaultLinger, "after the last call, keep observing at least this long for what the calls set off for later (timers, threads, children), unless the agent finds nothing in the sandbox that can still act; 0: not at all")
	fs.DurationVar(&opts.LingerMax, "linger-max", scan.DefaultLingerMax, "keep the linger open at most this long while something the calls set off can still act; past it, a linger-bound problem fails the gate")
	fs.IntVar(&opts.ReplayJobs, "replay-jobs", 0, "replays run side by side, two containers each (default: two per core); the report is the same whatever it is")
	noReplay := fs.Bool("no-replay", false, "do not replay the calls whose effects raise findings: every effect is then the call's during which it was seen")
	fs.DurationVar(&opts.Settle, "settle", 0, "after a call, wait up to this long while processes it left behind run (default 2s)")
	fs.Var(&opts.Isolation, "isolation", "session (one container, calls in order) or call (a fresh container from the same starting state for each call)")
	fs.BoolVar(&opts.Negatives, "negatives", false, "also call each tool with inputs that break its input schema, one rule at a time; accepting one is a finding")
	fs.IntVar(&opts.MaxLateTools, "max-late-tools", 0, "tools that appear during the scan and are called (default 50); past it they are named, not called, a problem and a finding")
	relist := fs.Int64("max-relist", scan.DefaultMaxRelistBytes>>20, "MiB of tools/list results the listings after calls and at sessions' ends read per scan; past it the tool list is not checked again, a problem and a finding")
	rounds := fs.Int("rounds", 1, "scan this many times, each round in fresh containers with the same bait seed, and report the findings of all rounds, each with the rounds that saw it; the gate acts on a finding any round saw")
	fs.BoolVar(&opts.NoBoundary, "no-boundary", false, "leave out the boundary probes: a traversal out of the canary project for path properties, a link-local and a loopback URL for URL properties (path-escape, ssrf-followed)")
	fs.BoolVar(&opts.NoSeed, "no-seed", false, "do not seed the canary workspace and honeytokens")
	baitSeed := fs.Uint64("bait-seed", 0, "draw the canary's names and the honeytokens' values from this seed (0 to 2^53-1; default: a random seed, reported under timing)")
	client := sandbox.DefaultClientInfo()
	fs.StringVar(&client.Name, "client-name", client.Name, "the name the client gives in initialize (clientInfo.name)")
	fs.StringVar(&client.Version, "client-version", client.Version, "the version the client gives in initialize (clientInfo.version)")
	fs.BoolVar(&opts.Keep, "keep", false, "leave the container (stopped) for debugging and print its id")
	verbose := fs.BoolP("verbose", "v", false, "print progress to stderr")
	fs.StringVar(&opts.RunID, "run-id", "", "the run's id, on every container it makes (dev.mcpsandbox.run; default: a new one)")
	fs.MarkHidden("run-id")
	maxReport := reportBoundFlag(fs)
	cacheSize := cacheSizeFlag(fs)
	named := nameFlag(fs)
	index := indexURLFlag(fs)
	fromCfg := fs.String("from-config", "", "FILE[#SERVER]: scan a server entry of an MCP client's configuration (Claude Desktop, Cursor, VS Code mcp.json, .mcp.json, Gemini's settings.json, Codex's config.toml) as its client starts it; variables named as secrets get honeytokens")
	if err := parse(fs, args); err != nil {
		return err
	}
	opts.Argv = fs.Args()
	if len(opts.Argv) == 0 && !fs.Changed("image") && *fromCfg == "" {
		fs.Usage()
		return usageError{"scan needs the server command after --, or --image REF to run the image's own entrypoint and command"}
	}
	if opts.Linger == 0 {
		opts.Linger = -1 // --linger 0: none, not the library's default
	}
	if fs.Changed("bait-seed") {
		if *baitSeed > probes.MaxSeed {
			return usageError{fmt.Sprintf("--bait-seed %d: want 0 to %d", *baitSeed, uint64(probes.MaxSeed))}
		}
		opts.BaitSeed = baitSeed
	}
	if *fromCfg != "" {
		argv, env, err := fromConfig(*fromCfg, opts.Argv, true, &opts.BaitSeed)
		if err != nil {
			return err
		}
		opts.Argv, opts.Env = argv, append(opts.Env, env...)
	}
	if *relist < 1 || *relist > maxRelistMiB {
		return usageError{fmt.Sprintf("--max-relist %d: want 1 to %d", *relist, maxRelistMiB)}
	}
	opts.MaxRelistBytes = *relist << 20
	if *rounds < 1 || *rounds > maxRounds {
		return usageError{fmt.Sprintf("--rounds %d: want 1 to %d", *rounds, maxRounds)}
	}
	if client.Name == "" {
		return usageError{"--client-name: want a name"}
	}
	for _, e := range opts.Env {
		if !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return usageError{fmt.Sprintf("--env %q: want KEY=VAL", e)}
		}
	}
	if *probeFile != "" {
		steps, err := probes.Load(*probeFile)
		if err != nil {
			return usageError{err.Error()}
		}
		opts.Probes = steps
	}
	if *format == "" {
		*format = "json"
		if *out == "" && isTerminal(stdout) {
			*format = "text"
		}
	}
	if !slices.Contains(formats.Names(), *format) {
		return usageError{fmt.Sprintf("--format %q: want one of %s", *format, strings.Join(formats.Names(), ", "))}
	}
	outputs := []gate.Output{{Format: *format, Path: *out}}
	for _, r := range *reports {
		f, p, ok := strings.Cut(r, "=")
		if !ok || p == "" || !slices.Contains(formats.Names(), f) {
			return usageError{fmt.Sprintf("--report %q: want FORMAT=PATH with FORMAT one of %s", r, strings.Join(formats.Names(), ", "))}
		}
		outputs = append(outputs, gate.Output{Format: f, Path: p})
	}
	// Every file the scan will write, checked before it starts: a path
	// that cannot be written is exit 2 now, not a report lost after the
	// whole scan.
	for flag, p := range map[string]string{"--transcript": *transcript, "--timings": *timingsFile, "--contract-out": *contractOut, "--write-baseline": *writeBaseline} {
		if err := checkWritable(p); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
	}
	for _, o := range outputs {
		if err := checkWritable(o.Path); err != nil {
			return fmt.Errorf("the %s report: %w", o.Format, err)
		}
	}
	failGate, err := verdict.ParseFailOn(*failOn)
	if err != nil {
		return usageError{fmt.Sprintf("--fail-on: %v", err)}
	}
	var policy rules.Policy
	if *policyFile != "" {
		p, err := rules.LoadPolicy(*policyFile)
		if err != nil {
			return usageError{err.Error()}
		}
		policy = p
	}
	if fs.Changed("min-coverage") {
		if err := rules.CheckMinCoverage(*minCoverage); err != nil {
			return usageError{fmt.Sprintf("--min-coverage: %v", err)}
		}
		policy.Coverage.Min = *minCoverage
	}
	var base *baseline.File
	if *baselineFile != "" {
		b, err := baseline.Load(*baselineFile)
		if err != nil {
			return usageError{err.Error()}
		}
		base = &b
	}
	var pinned *contract.File
	if *contractFile != "" {
		c, err := contract.Load(*contractFile)
		if err != nil {
			return usageError{err.Error()}
		}
		pinned = &c
	}
	if *verbose {
		opts.Log = stderr
	}
	if err := session(&opts.SessionOptions); err != nil {
		return err
	}
	opts.ClientInfo = client
	keptRun, err := named(&opts, *rounds, stderr)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, keptRun()) }()

	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := dockerLine(&opts.SessionOptions); err != nil {
		return err
	}
	installed, err := launch(ctx, cli, &opts.SessionOptions, false, *index, stderr)
	if err != nil {
		return err
	}
	if opts.Source == nil {
		if err := hostScript(&opts.SessionOptions, stderr); err != nil {
			return err
		}
	}
	var amend func(*report.Report)
	if installed != nil {
		amend = func(r *report.Report) { bulk.MergeInstall(r, installed.Report) }
	}
	_, err = gate.Run(ctx, cli, gate.Options{Scan: opts, Verdict: verdict.Config{Policy: policy, Contract: pinned, Baseline: base},
		FailOn: failGate, Outputs: outputs, Transcript: *transcript, Timings: *timingsFile, TranscriptUnredacted: *transcriptUnredacted, ContractOut: *contractOut, WriteBaseline: *writeBaseline,
		NoReplay: *noReplay, Rounds: *rounds, MaxReport: maxReport(), Version: version(), Stdout: stdout, Notice: stderr, Amend: amend})
	evictAfterScan(ctx, cli, cacheSize(), opts.Log, stderr)
	return err
}

// maxRounds bounds --rounds: each round is a whole scan.
const maxRounds = 100

// maxRelistMiB bounds --max-relist: 1 TiB, far past any scan's time.
const maxRelistMiB = 1 << 20

// isTerminal says whether v (a reader or a writer) is a terminal, as
// golang.org/x/term tells one: /dev/null, a character device too, is not.
func isTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// checkWritable says why a file could not be written at p ("" is
// stdout: nothing to check), without leaving anything there: its
// directory must take a new file, and p must not be a directory.
func checkWritable(p string) error {
	if p == "" {
		return nil
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".mcpsandbox-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the temporary name is ours, not the user's
		}
		return fmt.Errorf("cannot write %s: %w", p, err)
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}
