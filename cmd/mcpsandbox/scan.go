package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/baseline"
	"github.com/mcpsandbox/mcpsandbox/ci/contract"
	"github.com/mcpsandbox/mcpsandbox/ci/formats"
	"github.com/mcpsandbox/mcpsandbox/ci/gate"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/overlay"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

func runScan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("scan", "scan [flags] -- COMMAND [ARG...] | scan [flags] --image REF", stderr)
	limits := sandbox.DefaultLimits()
	opts := sandbox.ScanOptions{SessionOptions: sandbox.SessionOptions{Changes: sandbox.ChangesAuto, Network: sandbox.DefaultNetwork}, Isolation: sandbox.IsolationSession}
	fs.StringVar(&opts.Image, "image", "mcpsandbox/node:latest", "image to run the server in (must be in the local engine; never pulled); with no command, the server is the image's own entrypoint and command")
	fs.StringVar(&opts.Workspace, "workspace", "", "host directory the server sees at /workspace, read-write, never modified (default: empty)")
	pkg := fs.String("package", "", "DIR[:/TARGET]: the server's code, seen at TARGET (default "+sandbox.DefaultPackageTarget+") as the workspace is: writable copy-on-write, never modified, its changes effects")
	fs.BoolVar(&opts.CopyWorkspace, "copy-workspace", false, "copy the workspace and the package into image layers instead of mounting them copy-on-write")
	probeFile := fs.String("probes", "", "probe file: JSON object of tool name to arguments, called in file order")
	fs.StringArrayVar(&opts.Env, "env", nil, "environment variable KEY=VAL for the server (repeatable)")
	fs.StringVar(&opts.User, "user", images.User(), "UID[:GID] the server runs as, whatever the image's USER; 0 runs it as root, with a warning and a server-runs-as-root finding")
	mounts := fs.StringArray("mount", nil, "HOST:CONTAINER path to mount read-only, for the server's code (repeatable)")
	fs.DurationVar(&opts.Timeout, "timeout", 0, "bound on the whole run (default 10m)")
	fs.DurationVar(&opts.StartTimeout, "start-timeout", 0, "bound on start and initialize (default 60s)")
	fs.DurationVar(&opts.CallTimeout, "call-timeout", 0, "bound on each call (default 30s)")
	fs.Int64Var(&limits.Pids, "pids", limits.Pids, "process limit")
	fs.Int64Var(&limits.MemoryMB, "memory", limits.MemoryMB, "memory limit in MiB")
	fs.Float64Var(&limits.CPUs, "cpus", limits.CPUs, "CPU limit")
	hashBudget := fs.Int64("hash-budget", overlay.DefaultHashBudget>>20, "MiB each snapshot may read to compare files by content; files past it are left unhashed, a finding that fails the gate")
	disk := byteSize(sandbox.DefaultDisk)
	fs.Var(&disk, "disk", "bound on the space the server's writes may hold (upper layer, workspace and package changes, /dev/shm): past it the server is stopped, a finding that fails the gate")
	fs.DurationVar(&opts.DiskInterval, "disk-interval", sandbox.DefaultDiskInterval, "how often the disk use is measured (what a writer gets past --disk grows with it)")
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
	fs.Var(&opts.Changes, "changes", "how file effects are read: auto, upperdir (the overlay upper dir, needs a local engine and root) or api (the Engine API)")
	agentPath := fs.String("agent", "", "a static build of mcpsandbox to run as the in-container agent (default: this binary)")
	noAgent := fs.Bool("no-agent", false, "run without the agent: processes and network attempts are not recorded")
	fs.Var(&opts.Network, "network", "sinkhole (default: every name resolves to a documentation address, common TCP ports answered by the agent; nothing leaves), none (loopback only; the default with --no-agent), bridge or host (the server can reach other machines)")
	fs.DurationVar(&opts.Linger, "linger", sandbox.DefaultLinger, "after the last call, keep observing this long for what the calls set off for later (timers, threads, children); 0: not at all")
	noReplay := fs.Bool("no-replay", false, "do not replay the calls whose effects raise findings: every effect is then the call's during which it was seen")
	fs.DurationVar(&opts.Settle, "settle", 0, "after a call, wait up to this long while processes it left behind run (default 2s)")
	fs.Var(&opts.Isolation, "isolation", "session (one container, calls in order) or call (a fresh container from the same starting state for each call)")
	fs.BoolVar(&opts.Negatives, "negatives", false, "also call each tool with inputs that break its input schema, one rule at a time; accepting one is a finding")
	fs.IntVar(&opts.FileLimits.MaxEntries, "max-files", 0, "entries walked per file snapshot (default 200,000; 20,000 with --changes api); past it the snapshot is truncated, a problem and a finding")
	fs.IntVar(&opts.MaxLateTools, "max-late-tools", 0, "tools that appear during the scan and are called (default 50); past it they are named, not called, a problem and a finding")
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
	bounds := boundFlags(fs)
	maxReport := reportBoundFlag(fs)
	cacheSize := cacheSizeFlag(fs)
	transport := transportFlags(fs)
	allowHosts := allowHostFlag(fs)
	state := stateFlag(fs)
	named := nameFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	var err error
	if opts.Bounds, err = bounds(); err != nil {
		return err
	}
	opts.Argv = fs.Args()
	if len(opts.Argv) == 0 && !fs.Changed("image") {
		fs.Usage()
		return usageError{"scan needs the server command after --, or --image REF to run the image's own entrypoint and command"}
	}
	opts.Limits = limits
	if opts.Linger == 0 {
		opts.Linger = -1 // --linger 0: none, not the library's default
	}
	if fs.Changed("bait-seed") {
		if *baitSeed > probes.MaxSeed {
			return usageError{fmt.Sprintf("--bait-seed %d: want 0 to %d", *baitSeed, uint64(probes.MaxSeed))}
		}
		opts.BaitSeed = baitSeed
	}
	if *rounds < 1 || *rounds > maxRounds {
		return usageError{fmt.Sprintf("--rounds %d: want 1 to %d", *rounds, maxRounds)}
	}
	if client.Name == "" {
		return usageError{"--client-name: want a name"}
	}
	if opts.FileLimits.HashBudget, err = sessionChecks(*hashBudget, opts.DiskInterval, opts.User, stderr); err != nil {
		return err
	}
	opts.Disk = int64(disk)
	for _, e := range opts.Env {
		if !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return usageError{fmt.Sprintf("--env %q: want KEY=VAL", e)}
		}
	}
	if opts.Mounts, err = parseMounts(*mounts); err != nil {
		return err
	}
	if opts.Workspace != "" {
		fi, err := os.Stat(opts.Workspace)
		if err != nil || !fi.IsDir() {
			return usageError{fmt.Sprintf("--workspace %q is not a directory", opts.Workspace)}
		}
	}
	if *pkg != "" {
		if opts.Package, opts.PackageTarget, err = parsePackage(*pkg); err != nil {
			return err
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
	if *noAgent && !fs.Changed("network") {
		// The sinkhole is the agent's: without it, the default is what
		// needs nothing of it.
		opts.Network = sandbox.NetworkNone
	}
	if !*noAgent {
		a, err := sandbox.FindAgent(*agentPath)
		if err != nil {
			return err
		}
		opts.Agent = a
	}
	opts.ClientInfo = client
	if opts.Transport, err = transport(opts.Network); err != nil {
		return err
	}
	if opts.AllowHosts, err = allowHosts(); err != nil {
		return err
	}
	if opts.State, err = state(); err != nil {
		return err
	}
	keptRun, err := named(&opts, *rounds, stderr)
	if err != nil {
		return err
	}

	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = gate.Run(ctx, cli, gate.Options{Scan: opts, Verdict: verdict.Config{Policy: policy, Contract: pinned, Baseline: base},
		FailOn: failGate, Outputs: outputs, Transcript: *transcript, TranscriptUnredacted: *transcriptUnredacted, ContractOut: *contractOut, WriteBaseline: *writeBaseline,
		NoReplay: *noReplay, Rounds: *rounds, MaxReport: maxReport(), Version: version(), Stdout: stdout, Notice: stderr})
	err = errors.Join(err, keptRun())
	evictAfterScan(ctx, cli, int64(*cacheSize), opts.Log, stderr)
	return err
}

// parseMounts reads --mount's HOST:/CONTAINER mounts, the host side made
// absolute (scan and run).
func parseMounts(mounts []string) ([]sandbox.Mount, error) {
	var out []sandbox.Mount
	for _, m := range mounts {
		src, dst, ok := strings.Cut(m, ":")
		if !ok || src == "" || !strings.HasPrefix(dst, "/") {
			return nil, usageError{fmt.Sprintf("--mount %q: want HOST:/CONTAINER/PATH", m)}
		}
		abs, err := filepath.Abs(src)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--mount %q: %v", m, err)}
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, usageError{fmt.Sprintf("--mount %q: %v", m, err)}
		}
		out = append(out, sandbox.Mount{Source: abs, Target: dst})
	}
	return out, nil
}

// parsePackage reads --package's DIR[:/TARGET] (scan and run).
func parsePackage(pkg string) (dir, target string, err error) {
	dir = pkg
	if i := strings.LastIndex(dir, ":"); i >= 0 && strings.HasPrefix(dir[i+1:], "/") {
		dir, target = dir[:i], dir[i+1:]
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", "", usageError{fmt.Sprintf("--package %q: %q is not a directory", pkg, dir)}
	}
	return dir, target, nil
}

// maxRounds bounds --rounds: each round is a whole scan.
const maxRounds = 100

// validUser says whether s is what --user takes, UID[:GID] in numbers:
// with names, whether it is root would depend on the image's /etc/passwd.
func validUser(s string) bool {
	num := func(x string) bool { _, err := strconv.ParseUint(x, 10, 32); return err == nil }
	uid, gid, hasGID := strings.Cut(s, ":")
	return num(uid) && (!hasGID || num(gid))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// sessionChecks checks the session flags scan and run share and gives
// the hash budget in bytes (from MiB); running the server as root is
// warned of.
func sessionChecks(hashBudgetMiB int64, diskInterval time.Duration, user string, stderr io.Writer) (int64, error) {
	if hashBudgetMiB <= 0 || hashBudgetMiB > 1<<40 {
		return 0, usageError{fmt.Sprintf("--hash-budget %d: want MiB, more than 0", hashBudgetMiB)}
	}
	if diskInterval <= 0 {
		return 0, usageError{fmt.Sprintf("--disk-interval %s: want more than 0", diskInterval)}
	}
	if !validUser(user) {
		return 0, usageError{fmt.Sprintf("--user %q: want UID[:GID], numbers", user)}
	}
	if rules.RunsAsRoot(user) {
		fmt.Fprintf(stderr, "mcpsandbox: warning: --user %s runs the server as root in the sandbox: a %s finding\n", user, rules.ServerRunsAsRoot)
	}
	return hashBudgetMiB << 20, nil
}
