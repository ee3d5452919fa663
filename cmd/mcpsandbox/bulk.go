package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
	"github.com/mcpsandbox/mcpsandbox/ci/gate"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// runBulk is `mcpsandbox bulk`: flags in, ci/bulk does the work.
func runBulk(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		// A list named like a subcommand is given as ./merge.
		switch args[0] {
		case "merge":
			return runBulkMerge(args[1:], stdout, stderr)
		case "k8s":
			return runBulkK8s(args[1:], stdout, stderr)
		}
	}
	fs := newFlags("bulk", "bulk [flags] LIST...   (LIST: a file of specs, a server.json, an MCP client configuration, or - for stdin)", stderr)
	jobs := fs.IntP("jobs", "j", runtime.NumCPU(), "packages fetched and scanned at once")
	results := fs.String("results", "bulk-results", "results directory: state.json, reports/, summary.json, summary.csv, tools.csv, summary.md")
	cache := fs.String("cache", defaultBulkCache(), "cache of downloaded tarballs and installed trees, by content")
	force := fs.Bool("force", false, "scan again the packages the state file says are done")
	retry := fs.Bool("retry", false, "scan again the packages the state file says failed (failed-fetch, failed-install, failed-start, timeout)")
	timeout := fs.Duration("timeout", bulk.DefaultTimeout, "bound on each package's scan (its --timeout)")
	fetchTimeout := fs.Duration("fetch-timeout", bulk.DefaultFetchTimeout, "bound on each package's fetch and install")
	failOn := fs.String("fail-on", "never", "exit 1 when a package has findings at or above: critical, error, warning, note; never: findings do not change the exit code")
	findingsAt := fs.String("findings-at", "error", "a package's status is findings when it has a finding at or above this severity (critical, error, warning, note)")
	image := fs.String("image", defaultImage, "image npm packages are scanned in (must be in the local engine; never pulled); by default the node image, built from the host's files when missing, by its content tag")
	node := fs.String("node", "", "the image's node version, for engines ranges (default: the host's node --version: images are built from the host's files)")
	session := sessionFlags(fs, flagNetwork|flagAgent|flagStart|flagCall, stderr)
	linger := fs.Duration("linger", scan.DefaultLinger, "after the last call, keep observing at least this long, unless nothing in the sandbox can still act; 0: not at all")
	lingerMax := fs.Duration("linger-max", scan.DefaultLingerMax, "keep the linger open at most this long while something the calls set off can still act; past it, a linger-bound problem")
	noReplay := fs.Bool("no-replay", false, "do not replay the calls whose effects raise findings")
	timingsDir := fs.String("timings", "", "write each package's scan timings (see scan --timings) into this directory, one file a package named as its report")
	noBoundary := fs.Bool("no-boundary", false, "leave out the boundary probes")
	verbose := fs.BoolP("verbose", "v", false, "print each scan's progress to stderr too")
	shardFlag := fs.String("shard", "", "I/N: scan only shard I of N of the lists (by a hash of each spec; N machines given 0..N-1 cover the lists once; see bulk merge)")
	noScripts := fs.Bool("no-scripts", false, "leave npm install scripts unrun (the package is scanned as fetched, a note says so); by default they run offline in a sandbox of the build image, recorded as the install phase")
	cacheSize := cacheSizeFlag(fs)
	index := indexURLFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	var shard bulk.Shard
	if *shardFlag != "" {
		var err error
		if shard, err = bulk.ParseShard(*shardFlag); err != nil {
			return usageError{fmt.Sprintf("--shard: %v", err)}
		}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usageError{"bulk needs at least one LIST"}
	}
	if *jobs < 1 {
		return usageError{fmt.Sprintf("--jobs %d: want 1 or more", *jobs)}
	}
	exitOn, err := verdict.ParseFailOn(*failOn)
	if err != nil {
		return usageError{fmt.Sprintf("--fail-on: %v", err)}
	}
	statusAt, err := verdict.ParseFailOn(*findingsAt)
	if err != nil || statusAt.Never {
		return usageError{fmt.Sprintf("--findings-at %q: want critical, error, warning or note", *findingsAt)}
	}
	if *timeout <= 0 || *fetchTimeout <= 0 {
		return usageError{"--timeout and --fetch-timeout: want more than 0"}
	}

	var specs []bulk.Spec
	var inputs []bulk.InputError
	for _, name := range fs.Args() {
		var r io.Reader = os.Stdin
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return usageError{fmt.Sprintf("LIST %q: %v", name, err)}
			}
			defer f.Close()
			r = f
		}
		s, bad := bulk.Parse(name, r)
		specs, inputs = append(specs, s...), append(inputs, bad...)
	}
	specs, dups := bulk.Dedupe(specs)
	inputs = append(inputs, dups...)
	// Numbered before sharding: a merge puts the rows back in list order.
	specs = shard.Pick(bulk.Number(specs))
	for _, e := range inputs {
		fmt.Fprintf(stderr, "mcpsandbox: %s\n", report.Printable(e.Error()))
	}

	if *node == "" {
		*node = hostNode(ctx)
	}
	cli, err := sandbox.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if !fs.Changed("image") {
		// The node image, built from the host's files if need be, by its
		// content tag: every package of the batch is scanned in the same
		// image, whatever another build on the engine does to :latest.
		built, err := images.Build(ctx, cli, "node", images.BuildOptions{})
		if err != nil {
			return fmt.Errorf("%w: the node image: %w", bulk.ErrBatch, err)
		}
		*image = built.Ref
	}
	if *timingsDir != "" {
		if err := os.MkdirAll(*timingsDir, 0o755); err != nil {
			return fmt.Errorf("%w: --timings: %w", bulk.ErrBatch, err)
		}
	}
	base := scan.Options{SessionOptions: sandbox.SessionOptions{Image: *image, Changes: sandbox.ChangesAuto,
		User: images.User(), Limits: sandbox.DefaultLimits(), ClientInfo: sandbox.DefaultClientInfo(),
		Disk: sandbox.DefaultDisk, DiskInterval: sandbox.DefaultDiskInterval},
		Isolation: sandbox.IsolationSession, Linger: *linger, LingerMax: *lingerMax, NoBoundary: *noBoundary,
		// The packages scanned at once share the cores their replays use.
		ReplayJobs: max(1, scan.DefaultReplayJobs()/max(*jobs, 1))}
	if base.Linger == 0 {
		base.Linger = -1
	}
	if *verbose {
		base.Log = stderr
	}
	// The network, the agent, the start and call bounds.
	if err := session(&base.SessionOptions); err != nil {
		return err
	}
	npm := newNPM(cli, *cache, *node, base.SessionOptions, *fetchTimeout, !*noScripts)
	o := bulk.Options{Results: *results, Jobs: *jobs, Force: *force, Retry: *retry, Timeout: *timeout, FetchTimeout: *fetchTimeout, FailOn: statusAt,
		Installers: map[bulk.Kind]bulk.Installer{
			bulk.KindNPM:   npm,
			bulk.KindImage: bulk.EngineImages(cli),
		},
		Scanner: bulk.GateScanner{Engine: cli, Base: base, NoReplay: *noReplay, Version: version(), TimingsDir: *timingsDir},
		Version: version(), Log: stderr}
	if isTerminal(stderr) && !*verbose {
		o.Progress = &barProgress{w: stderr}
	}
	if slices.ContainsFunc(specs, func(s bulk.Spec) bool { return s.Kind == bulk.KindPyPI && s.Status == 0 }) {
		// Python packages run in the python image, wheels for its Python.
		pypi, err := pythonInstaller(ctx, cli, *cache, *index)
		if err != nil {
			return fmt.Errorf("%w: %w", bulk.ErrBatch, err)
		}
		o.Installers[bulk.KindPyPI] = pypi
	}
	res, runErr := bulk.Run(ctx, specs, o)
	evictAfterScan(ctx, cli, cacheSize(), base.Log, stderr)
	if errors.Is(runErr, bulk.ErrBatch) {
		return runErr
	}
	sum := bulk.Summarize(res, inputs)
	if err := bulk.WriteSummaries(*results, sum); err != nil {
		return fmt.Errorf("%w: %w", bulk.ErrBatch, err)
	}
	var counts []string
	for _, st := range bulk.Statuses() {
		if n := sum.Totals.ByStatus[st.String()]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", st, n))
		}
	}
	fmt.Fprintf(stdout, "%d of %d packages done (%s); summary in %s\n", sum.Totals.Packages, len(specs), strings.Join(counts, ", "), filepath.Join(*results, "summary.md"))
	if runErr != nil {
		return fmt.Errorf("%w: the same command goes on where it stopped", runErr)
	}
	if bulk.Fails(res, exitOn) {
		return gate.ErrFindings
	}
	return nil
}

// defaultBulkCache is $XDG_CACHE_HOME/mcpsandbox/bulk (~/.cache/...).
func defaultBulkCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "mcpsandbox", "bulk")
}

// hostNode is the host's node version (X.Y.Z), which the node image is
// built from; "" when there is none (engines then go unchecked).
func hostNode(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "node", "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
}

// newNPM is bulk's fetcher, the one scan and run use for a launcher line
// too: cache the cache directory, node the runtime's version for engines
// ("" skips the check); with scripts, a package's install scripts run in
// a sandbox under base's agent, user and bounds.
func newNPM(cli engineImages, cache, node string, base sandbox.SessionOptions, timeout time.Duration, scripts bool) bulk.NPM {
	npm := bulk.NPM{Cache: cache, Node: node}
	if scripts {
		npm.Scripts = &bulk.SandboxScripts{Engine: cli, RuntimeImage: base.Image, Cache: cache, Timeout: timeout,
			Base: sandbox.SessionOptions{Agent: base.Agent, User: base.User, Limits: base.Limits, Changes: base.Changes,
				Disk: base.Disk, DiskInterval: base.DiskInterval, Log: base.Log},
			// The build image, built from the host's files the first time a
			// package has install scripts.
			BuildImage: func(ctx context.Context) (string, error) {
				b, err := images.Build(ctx, cli, "build", images.BuildOptions{})
				return b.Ref, err
			}}
	}
	return npm
}

// engineImages is the engine as scans and image builds use it.
type engineImages interface {
	sandbox.Engine
	images.Client
}
