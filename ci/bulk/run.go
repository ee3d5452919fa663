package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/formats"
	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/probes"
)

// Result is one package's outcome: a line of the state file and a row of
// the summary.
type Result struct {
	// Key identifies the spec (Spec.Key); Spec is its list form.
	Key string `json:"key"`
	// Order is the spec's place in the whole list (Spec.Order): a merge of
	// shards sorts by it.
	Order  int    `json:"order"`
	Spec   string `json:"spec"`
	Kind   Kind   `json:"kind"`
	Name   string `json:"name"`
	Source string `json:"source"`
	Status Status `json:"status"`
	// Why says why a package was not scanned, or how its scan failed.
	Why string `json:"why,omitempty"`
	// Version is the version scanned (pinned), Integrity its tarball's.
	Version   string `json:"version,omitempty"`
	Integrity string `json:"integrity,omitempty"`
	Entry     *Entry `json:"entry,omitempty"`
	// Notes are what the fetch marked (an engines range the image's
	// runtime is outside of).
	Notes []string `json:"notes,omitempty"`
	// Report is the report's path in the results directory, "" for none.
	Report string `json:"report,omitempty"`
	// Complete is the report's: every planned step ran.
	Complete bool `json:"complete"`
	// Tools listed, Annotated of them with at least one hint, Exercised
	// (a call returned a result that is not an error).
	Tools     int `json:"tools"`
	Annotated int `json:"annotated"`
	Exercised int `json:"exercised"`
	Findings  int `json:"findings"`
	// Problems counts the report's problems (timeouts, crashes, noise).
	Problems int `json:"problems"`
	// ByRule counts the findings by rule, BySeverity by severity (those a
	// baseline accepts left out, as in the report's summary).
	ByRule     map[string]int `json:"byRule,omitempty"`
	BySeverity map[string]int `json:"bySeverity,omitempty"`
	// Installed says how the package's install scripts ran: "sandbox"
	// (now), "cached" (an earlier run's install, reused), "failed" (they
	// exited non-zero: the tree as fetched was scanned), "" (none).
	// InstallEffects counts what the install did outside its package
	// tree (files changed, network attempts); its findings are in ByRule.
	Installed      string `json:"installed,omitempty"`
	InstallEffects int    `json:"installEffects,omitempty"`
	// ToolRows are the per-tool rows of the summary.
	ToolRows []ToolRow `json:"toolRows,omitempty"`
	// Seconds is the wall time of fetch and scan, without the time waited
	// for a slot to fetch or scan in: timing, not a result.
	Seconds float64 `json:"seconds"`
}

// ToolRow is one tool of a scanned package: the hints it claimed, and
// which of them the scan saw contradicted.
type ToolRow struct {
	Tool     string       `json:"tool"`
	Hints    report.Hints `json:"hints"`
	Coverage string       `json:"coverage"`
	// Contradicted names the hints a finding contradicts
	// ("readOnlyHint"), sorted, once each.
	Contradicted []string `json:"contradicted,omitempty"`
	// Findings counts the tool's findings by rule.
	Findings map[string]int `json:"findings,omitempty"`
}

// Options configures a batch.
type Options struct {
	// Results is the results directory: state.json, reports/, summaries.
	Results string
	// Jobs is how many packages are scanned at once; as many more are
	// fetched meanwhile.
	Jobs int
	// Force scans again what the state file says is done; Retry only
	// what failed (failed-fetch, failed-install, failed-start, timeout).
	Force, Retry bool
	// Timeout bounds each package's scan; FetchTimeout its fetch and
	// install.
	Timeout, FetchTimeout time.Duration
	// FailOn is the threshold of the findings status (the zero FailOn:
	// any finding).
	FailOn verdict.FailOn
	// Installers by kind; a kind without one is not scanned here.
	Installers map[Kind]Installer
	Scanner    Scanner
	// Seed draws each scan's bait seed (probes.RandomSeed when nil).
	Seed func() uint64
	// Version names mcpsandbox in the reports.
	Version string
	// Log gets the lines that are not a package's result: those skipped
	// as done (nil: none).
	Log io.Writer
	// Progress follows the packages run (nil: Lines on Log).
	Progress Progress
}

// Progress follows a batch: Start once with the number of packages to
// run, Done after each, in the order they finish (never concurrently).
type Progress interface {
	Start(total int)
	Done(r Result, done, total int, elapsed time.Duration)
}

// Lines is the progress as plain lines, one a package:
// [DONE/TOTAL, RATE/h, ETA ...] SPEC: STATUS (why).
type Lines struct{ W io.Writer }

// Start implements Progress.
func (Lines) Start(int) {}

// Done implements Progress.
func (l Lines) Done(r Result, done, total int, elapsed time.Duration) {
	fmt.Fprintln(l.W, ProgressLine(r, done, total, elapsed))
}

// ProgressLine is a finished package's line.
func ProgressLine(r Result, done, total int, elapsed time.Duration) string {
	return fmt.Sprintf("[%d/%d%s] %s: %s%s", done, total, progress(done, total, elapsed), report.Printable(r.Spec), r.Status, whyLine(r))
}

// Defaults of Options.
const (
	// DefaultTimeout fits a large server on a loaded 2-core machine: the
	// corpus's largest took 138 to 303 s alone, and 5 minutes cut their
	// replays under load (then the report says run-timeout, incomplete).
	DefaultTimeout      = 15 * time.Minute
	DefaultFetchTimeout = 5 * time.Minute
	// backstopGrace is how long past its own --timeout a scan may take to
	// finish its report before its context is cancelled.
	backstopGrace = time.Minute
	// stateFile and reportsDir are the results directory's.
	stateFile  = "state.json"
	reportsDir = "reports"
	// StateVersion is the state file's format.
	StateVersion = 1
)

// ErrInterrupted is returned when the batch was stopped before every
// package ran; what ran is in the state file.
var ErrInterrupted = errors.New("batch interrupted")

// lockFile is the results directory's lock: one batch at a time writes
// it.
const lockFile = ".lock"

// lockResults takes the results directory's lock, or says another batch
// holds it.
func lockResults(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: another batch is using %s: %w", ErrBatch, dir, err)
	}
	return func() { f.Close() }, nil
}

// ErrBatch is wrapped by the errors that stop a batch from running at all.
var ErrBatch = errors.New("the batch could not run")

// state is the state file: every package done, by key.
type state struct {
	Version int      `json:"version"`
	Results []Result `json:"results"`
}

// LoadState reads the results directory's state file (none: empty).
func LoadState(results string) (map[string]Result, error) {
	b, err := os.ReadFile(filepath.Join(results, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Result{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading the state file: %w", ErrBatch, err)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%w: the state file %s: %w", ErrBatch, filepath.Join(results, stateFile), err)
	}
	if st.Version != StateVersion {
		return nil, fmt.Errorf("%w: the state file %s has version %d, want %d", ErrBatch, filepath.Join(results, stateFile), st.Version, StateVersion)
	}
	out := make(map[string]Result, len(st.Results))
	for _, r := range st.Results {
		out[r.Key] = r
	}
	return out, nil
}

// Run fetches and scans every spec, Jobs at a time, skipping those the
// state file says are done unless Force, and returns every spec's result
// in input order (a spec not run, after an interruption, has its result
// of an earlier run, or none). One
// package never ends the batch: its failure is its status. The error is
// ErrInterrupted when ctx ended first, or wraps ErrBatch when the results
// directory cannot be used.
func Run(ctx context.Context, specs []Spec, o Options) ([]Result, error) {
	if o.Jobs < 1 {
		o.Jobs = 1
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.Seed == nil {
		o.Seed = probes.RandomSeed
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Progress == nil {
		o.Progress = Lines{W: o.Log}
	}
	if err := os.MkdirAll(filepath.Join(o.Results, reportsDir), 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	unlock, err := lockResults(o.Results)
	if err != nil {
		return nil, err
	}
	defer unlock()
	done, err := LoadState(o.Results)
	if err != nil {
		return nil, err
	}
	// Written at once: a shard given nothing to do is still a results
	// directory a merge can read.
	if err := writeState(o.Results, done); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	// prior is the state as this run found it: what to skip is decided on
	// it, while the jobs update done.
	prior := make(map[string]Result, len(done))
	for k, r := range done {
		prior[k] = r
	}
	redo := func(s Spec) bool {
		r, ok := prior[s.Key()]
		return !ok || o.Force || o.Retry && r.Status.Failed()
	}
	var mu sync.Mutex // done, the state file and the log
	results := make([]*Result, len(specs))
	todo := 0
	for _, s := range specs {
		if redo(s) {
			todo++
		}
	}
	start, finished := time.Now(), 0
	o.Progress.Start(todo)
	record := func(i int, r Result) error {
		mu.Lock()
		defer mu.Unlock()
		results[i] = &r
		done[r.Key] = r
		finished++
		o.Progress.Done(r, finished, todo, time.Since(start))
		return writeState(o.Results, done)
	}
	// Jobs packages scan at once, and up to Jobs more are fetched ahead
	// meanwhile: a fetch (npm on the host, the network) and a scan (the
	// engine, idle while a scan lingers) use different things, so the next
	// package's fetch overlaps the scans under way instead of following
	// them. At most 2*Jobs packages are under way.
	sl := slots{fetch: make(chan struct{}, o.Jobs), scan: make(chan struct{}, o.Jobs)}
	window := make(chan struct{}, 2*o.Jobs)
	// Scans still begin in the lists' order: each package takes its scan
	// slot after the one before it took its own (or did not need one).
	prev := make(chan struct{})
	close(prev)
	var wg sync.WaitGroup
	var werr error
	var werrOnce sync.Once
	for i, s := range specs {
		if r, ok := prior[s.Key()]; ok && !redo(s) {
			r.Source, r.Order = s.Source, s.Order
			results[i] = &r
			fmt.Fprintf(o.Log, "%s: done (%s), skipped\n", s, r.Status)
			continue
		}
		select {
		case window <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		turn := turns{prev: prev, mine: make(chan struct{})}
		prev = turn.mine
		go func(i int, s Spec) {
			defer wg.Done()
			defer func() { <-window }()
			r, ok := runOne(ctx, s, o, sl, turn)
			if !ok {
				return // interrupted: not recorded, run again next time
			}
			if err := record(i, r); err != nil {
				werrOnce.Do(func() { werr = err })
			}
		}(i, s)
	}
	wg.Wait()
	var out []Result
	missing := 0
	for i, r := range results {
		if r == nil {
			// Not run this time (interrupted): its latest result, from an
			// earlier run, if any (a forced run that was stopped).
			missing++
			prev, ok := done[specs[i].Key()]
			if !ok {
				continue
			}
			prev.Source, prev.Order = specs[i].Source, specs[i].Order
			r = &prev
		}
		out = append(out, *r)
	}
	if werr != nil {
		return out, fmt.Errorf("%w: %w", ErrBatch, werr)
	}
	if ctx.Err() != nil && missing > 0 {
		return out, ErrInterrupted
	}
	return out, nil
}

// progress is the rate and the time left, from what took elapsed.
func progress(done, total int, elapsed time.Duration) string {
	if done == 0 || elapsed <= 0 {
		return ""
	}
	per := elapsed / time.Duration(done)
	return fmt.Sprintf(", %.0f/h, ETA %s", float64(time.Hour)/float64(per), (per * time.Duration(total-done)).Round(time.Second))
}

func whyLine(r Result) string {
	if r.Why == "" {
		return ""
	}
	return " (" + report.Printable(report.OneLine(r.Why)) + ")"
}

// slots bound the fetches and the scans under way at once.
type slots struct{ fetch, scan chan struct{} }

// scanSlot is one package's scan slot. A scan that lingers (it waits on
// its server, using no CPU) gives its slot up, so that the next package's
// scan can start meanwhile, and takes one again after only if one is
// free: a scan never waits for a slot in the middle (its --timeout runs),
// so that for a while more than Jobs scans can run, never more than the
// packages under way (2*Jobs).
type scanSlot struct {
	mu   sync.Mutex
	ch   chan struct{}
	held bool
}

func (s *scanSlot) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		<-s.ch
		s.held = false
	}
}

func (s *scanSlot) idle() (resume func()) {
	s.release()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.held {
			return
		}
		select {
		case s.ch <- struct{}{}:
			s.held = true
		default:
		}
	}
}

// take waits for a slot of c; it says false when ctx ended first. The
// time waited is added to waited: it is not the package's.
func take(ctx context.Context, c chan struct{}, waited *time.Duration) bool {
	t := time.Now()
	defer func() { *waited += time.Since(t) }()
	select {
	case c <- struct{}{}:
		if ctx.Err() != nil {
			// Both were ready and select chose the slot: no package
			// starts a step after the batch was stopped.
			<-c
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// turns order the scans: a package takes its scan slot once prev is
// closed, and closes mine once it has (or needs none).
type turns struct{ prev, mine chan struct{} }

// pass closes mine after prev (or when ctx ends): once.
func (t *turns) pass(ctx context.Context) {
	if t.mine == nil {
		return
	}
	select {
	case <-t.prev:
	case <-ctx.Done():
	}
	close(t.mine)
	t.mine = nil
}

// runOne fetches and scans one spec, each step in a slot of its kind,
// its scan in its turn. ok is false when ctx ended before it finished:
// nothing is recorded.
func runOne(ctx context.Context, s Spec, o Options, sl slots, turn turns) (Result, bool) {
	defer turn.pass(ctx)
	start := time.Now()
	var waited time.Duration // for a slot or a turn: not the package's time
	r := Result{Key: s.Key(), Order: s.Order, Spec: s.String(), Kind: s.Kind, Name: s.Name, Source: s.Source}
	finish := func(st Status, why string) (Result, bool) {
		if ctx.Err() != nil {
			return r, false
		}
		r.Status, r.Why = st, why
		r.Seconds = (time.Since(start) - waited).Round(time.Millisecond).Seconds()
		return r, true
	}
	if s.Status != 0 {
		return finish(s.Status, s.Why)
	}
	inst := o.Installers[s.Kind]
	if inst == nil {
		return finish(StatusNotScannedHere, fmt.Sprintf("%s specs are not scanned here", s.Kind))
	}
	if !take(ctx, sl.fetch, &waited) {
		return r, false
	}
	fctx, cancel := context.WithTimeout(ctx, o.FetchTimeout)
	in, err := inst.Install(fctx, s)
	cancel()
	<-sl.fetch
	if err != nil {
		if errors.Is(fctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return finish(StatusTimeout, fmt.Sprintf("fetch and install past %s: %v", o.FetchTimeout, err))
		}
		if werr := installFailed(&r, s, o, in, err); werr != nil {
			return finish(StatusFailedInstall, errors.Join(err, werr).Error())
		}
		return finish(statusOfInstall(err), err.Error())
	}
	r.Version, r.Integrity, r.Entry, r.Notes = in.Version, in.Integrity, in.Entry, in.Notes
	installed(&r, in)
	t := time.Now()
	select {
	case <-turn.prev:
	case <-ctx.Done():
	}
	waited += time.Since(t)
	if !take(ctx, sl.scan, &waited) {
		return r, false
	}
	slot := &scanSlot{ch: sl.scan, held: true}
	defer slot.release()
	turn.pass(ctx)
	seed := o.Seed()
	sctx, cancel := context.WithTimeout(ctx, o.Timeout+backstopGrace)
	defer cancel()
	rep, err := o.Scanner.Scan(sctx, Job{Spec: s, Installed: in, Env: envOf(s, seed), Seed: seed, Timeout: o.Timeout, Idle: slot.idle})
	if ctx.Err() != nil {
		return r, false
	}
	if errors.Is(sctx.Err(), context.DeadlineExceeded) {
		err = errors.Join(err, context.DeadlineExceeded)
	}
	st := StatusOf(rep, err, o.FailOn)
	// The chosen bin did not answer initialize (a CLI named like the
	// package exits 0): the package's other bins are tried, in a sandbox
	// as every scan is, and the first that starts is the package's entry.
	var tried []string
	for _, alt := range in.Alternatives {
		if st != StatusFailedStart || sctx.Err() != nil {
			break
		}
		tried = append(tried, fmt.Sprintf("%s did not start (%s)", in.Entry.Name(), report.OneLine(startWhy(rep, err))))
		next := in
		e := alt.Entry
		next.Entry, next.Argv = &e, alt.Argv
		rep2, err2 := o.Scanner.Scan(sctx, Job{Spec: s, Installed: next, Env: envOf(s, seed), Seed: seed, Timeout: o.Timeout, Idle: slot.idle})
		if ctx.Err() != nil {
			return r, false
		}
		if st2 := StatusOf(rep2, err2, o.FailOn); st2 != StatusFailedStart {
			in, rep, err, st = next, rep2, err2, st2
			e.Why = e.Bin + ": the first bin that answered initialize; " + strings.Join(tried, "; ")
			r.Entry = &e
			break
		}
		in.Entry, rep, err = next.Entry, rep2, err2
	}
	why := ""
	if err != nil {
		why = err.Error()
	}
	if rep != nil {
		var buf bytes.Buffer
		if werr := formats.Write(&buf, "json", rep, o.Version); werr != nil {
			return finish(StatusFailedStart, fmt.Sprintf("writing the report: %v", werr))
		}
		rel := filepath.Join(reportsDir, s.Slug()+".json")
		if werr := writeAtomic(filepath.Join(o.Results, rel), buf.Bytes()); werr != nil {
			return finish(StatusFailedStart, werr.Error())
		}
		r.Report = filepath.ToSlash(rel)
		summarize(&r, rep)
	}
	return finish(st, why)
}

// startWhy is why a scan did not start, in words.
func startWhy(rep *report.Report, err error) string {
	if err != nil {
		return err.Error()
	}
	if rep != nil && rep.Server.ExitCode != nil {
		return fmt.Sprintf("exit %d", *rep.Server.ExitCode)
	}
	return "no initialize"
}

// summarize fills a result's counts and tool rows from its report.
func summarize(r *Result, rep *report.Report) {
	r.Complete = rep.Complete
	r.Tools, r.Findings, r.Problems = len(rep.Tools), len(rep.Findings), len(rep.Problems)
	r.ByRule = map[string]int{}
	r.BySeverity = map[string]int{}
	for k, n := range rep.Summary.BySeverity {
		if n > 0 {
			r.BySeverity[k] = n
		}
	}
	byTool := map[string]int{}
	for i, t := range rep.Tools {
		h := t.Hints
		if h.ReadOnly != nil || h.Destructive != nil || h.Idempotent != nil || h.OpenWorld != nil {
			r.Annotated++
		}
		row := ToolRow{Tool: t.Name, Hints: h, Coverage: "not-called"}
		if i < len(rep.Coverage) && rep.Coverage[i].Tool == t.Name {
			row.Coverage = rep.Coverage[i].Status.String()
			if rep.Coverage[i].Status == report.CoverageExercised {
				r.Exercised++
			}
		}
		if _, dup := byTool[t.Name]; !dup {
			byTool[t.Name] = len(r.ToolRows)
		}
		r.ToolRows = append(r.ToolRows, row)
	}
	for _, f := range rep.Findings {
		r.ByRule[f.Rule]++
		i, ok := byTool[f.Tool]
		if !ok {
			continue // a finding of the server, not of a tool
		}
		row := &r.ToolRows[i]
		if row.Findings == nil {
			row.Findings = map[string]int{}
		}
		row.Findings[f.Rule]++
		if hint, _, ok := cutHint(f.Hint); ok && !slices.Contains(row.Contradicted, hint) {
			row.Contradicted = append(row.Contradicted, hint)
			slices.Sort(row.Contradicted)
		}
	}
}

// cutHint splits a finding's hint ("readOnlyHint: true").
func cutHint(h string) (name, value string, ok bool) {
	name, value, ok = strings.Cut(h, ": ")
	return name, value, ok && name != ""
}

// writeState writes every result done, sorted by key, atomically.
func writeState(results string, done map[string]Result) error {
	st := state{Version: StateVersion}
	for _, k := range sortedKeys(done) {
		st.Results = append(st.Results, done[k])
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the state: %w", err)
	}
	return writeAtomic(filepath.Join(results, stateFile), append(b, '\n'))
}

// Fails says whether a package has a finding at or above failOn: the
// exit code of `bulk --fail-on`.
func Fails(results []Result, failOn verdict.FailOn) bool {
	if failOn.Never {
		return false
	}
	for _, r := range results {
		for name, n := range r.BySeverity {
			if sev, err := report.ParseSeverity(name); err == nil && n > 0 && sev >= failOn.Severity {
				return true
			}
		}
	}
	return false
}
