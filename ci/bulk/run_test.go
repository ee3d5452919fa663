package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// fakeInstaller installs by the spec's name: "nofetch" fails to fetch,
// "noinstall" to install; anything else is installed.
type fakeInstaller struct{}

func (fakeInstaller) Install(_ context.Context, s Spec) (Installed, error) {
	switch s.Name {
	case "nofetch":
		return Installed{}, fmt.Errorf("%w: npm view nofetch@latest: E404", ErrFetch)
	case "noinstall":
		return Installed{}, fmt.Errorf("%w: no entry", ErrInstall)
	}
	return Installed{Dir: "/cache/" + s.Name, Argv: []string{"node", "/package/x.js"}, Version: "1.0.0", Integrity: "sha512-x", Notes: []string{"a note"}}, nil
}

// fakeScanner answers by the spec's name; it counts its scans and
// records the jobs.
type fakeScanner struct {
	mu    sync.Mutex
	scans map[string]int
	jobs  []Job
	// block, when set, is where "slow" waits until its context ends.
	block chan struct{}
}

func tru() *bool { b := true; return &b }

func (f *fakeScanner) Scan(ctx context.Context, j Job) (*report.Report, error) {
	f.mu.Lock()
	if f.scans == nil {
		f.scans = map[string]int{}
	}
	f.scans[j.Spec.Name]++
	f.jobs = append(f.jobs, j)
	f.mu.Unlock()
	rep := &report.Report{SchemaVersion: report.SchemaVersion, Complete: true,
		Tools:    []report.Tool{{Name: "read", Hints: report.Hints{ReadOnly: tru()}}, {Name: "plain"}},
		Coverage: []report.ToolCoverage{{Tool: "read", Status: report.CoverageExercised}, {Tool: "plain", Status: report.CoverageErrored}}}
	switch j.Spec.Name {
	case "liar":
		rep.Findings = []report.Finding{{Rule: "readonly-writes", Severity: report.SeverityError, Tool: "read", Hint: "readOnlyHint: true"}}
		rep.Summary.BySeverity = map[string]int{"error": 1}
	case "warns":
		rep.Findings = []report.Finding{{Rule: "something", Severity: report.SeverityWarning, Tool: "plain"}}
		rep.Summary.BySeverity = map[string]int{"warning": 1}
	case "nostart":
		return &report.Report{SchemaVersion: report.SchemaVersion}, fmt.Errorf("%w: exit 1", sandbox.ErrServerStart)
	case "slowpoke":
		rep.Complete = false
		rep.Problems = []report.Problem{{Kind: "run-timeout", Message: "the run exceeded --timeout"}}
		return rep, scan.ErrIncomplete
	case "slow":
		if f.block != nil {
			close(f.block)
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	return rep, nil
}

func testOptions(t *testing.T, sc Scanner) Options {
	return Options{Results: t.TempDir(), Jobs: 2, Installers: map[Kind]Installer{KindNPM: fakeInstaller{}}, Scanner: sc,
		FailOn: verdict.FailOn{Severity: report.SeverityError}, Seed: func() uint64 { return 42 }}
}

func TestRunStatusesAndResume(t *testing.T) {
	specs := []Spec{
		{Kind: KindNPM, Name: "honest", Source: "l:1", Env: []EnvVar{{Name: "API_KEY", Secret: true}, {Name: "MODE", Value: "x"}}},
		{Kind: KindNPM, Name: "liar", Source: "l:2"},
		{Kind: KindNPM, Name: "warns", Source: "l:3"},
		{Kind: KindNPM, Name: "nofetch", Source: "l:4"},
		{Kind: KindNPM, Name: "noinstall", Source: "l:5"},
		{Kind: KindNPM, Name: "nostart", Source: "l:6"},
		{Kind: KindNPM, Name: "slowpoke", Source: "l:7"},
		{Kind: KindNPM, Name: "needs", Source: "l:8", Status: StatusNeedsConfig, Why: "required: DB_PATH"},
		{Kind: KindRemote, Name: "https://x", Source: "l:9", Status: StatusNotScannedHere, Why: whyRemote},
		{Kind: KindImage, Name: "img:1", Source: "l:10"}, // no installer here
	}
	sc := &fakeScanner{}
	o := testOptions(t, sc)
	res, err := Run(context.Background(), specs, o)
	if err != nil {
		t.Fatal(err)
	}
	want := []Status{StatusOK, StatusFindings, StatusOK, StatusFailedFetch, StatusFailedInstall, StatusFailedStart, StatusTimeout, StatusNeedsConfig, StatusNotScannedHere, StatusNotScannedHere}
	if len(res) != len(want) {
		t.Fatalf("%d results, want %d", len(res), len(want))
	}
	for i, r := range res {
		if r.Status != want[i] || r.Source != specs[i].Source {
			t.Errorf("%s: %s (%s), want %s", r.Spec, r.Status, r.Why, want[i])
		}
	}
	if !strings.Contains(res[3].Why, "E404") || res[7].Why != "required: DB_PATH" {
		t.Errorf("why: %q %q", res[3].Why, res[7].Why)
	}
	// The report is written for every scan that gave one, the state file
	// for every package.
	for _, r := range res[:3] {
		b, err := os.ReadFile(filepath.Join(o.Results, r.Report))
		var rep report.Report
		if err != nil || json.Unmarshal(b, &rep) != nil {
			t.Errorf("%s: report %q: %v", r.Spec, r.Report, err)
		}
	}
	if r := res[1]; r.Tools != 2 || r.Annotated != 1 || r.Exercised != 1 || r.ByRule["readonly-writes"] != 1 ||
		len(r.ToolRows) != 2 || r.ToolRows[0].Coverage != "exercised" || len(r.ToolRows[0].Contradicted) != 1 || r.ToolRows[0].Contradicted[0] != "readOnlyHint" {
		t.Errorf("liar's row: %+v", r)
	}
	// The secret got the bait's honeytoken, drawn from the job's seed.
	j := sc.jobs[0]
	for _, job := range sc.jobs {
		if job.Spec.Name == "honest" {
			j = job
		}
	}
	tok := probes.NewBait(42).Tokens.DotEnvPassword
	if j.Seed != 42 || len(j.Env) != 2 || j.Env[0] != "API_KEY="+tok || j.Env[1] != "MODE=x" {
		t.Errorf("job env %q seed %d", j.Env, j.Seed)
	}
	st, err := LoadState(o.Results)
	if err != nil || len(st) != len(specs) {
		t.Fatalf("state: %d entries, %v", len(st), err)
	}
	if !Fails(res, verdict.FailOn{Severity: report.SeverityError}) || Fails(res, verdict.FailOn{Severity: report.SeverityCritical}) || Fails(res, verdict.FailOn{Never: true}) {
		t.Error("Fails does not follow the findings' severities")
	}

	// Run again: nothing is scanned; the results are the same.
	sc2 := &fakeScanner{}
	o.Scanner = sc2
	again, err := Run(context.Background(), specs, o)
	if err != nil || len(sc2.scans) != 0 || len(again) != len(res) {
		t.Fatalf("resumed run: %v, scans %v, %d results", err, sc2.scans, len(again))
	}
	for i := range again {
		if again[i].Status != res[i].Status {
			t.Errorf("%s: %s after resuming, was %s", again[i].Spec, again[i].Status, res[i].Status)
		}
	}
	// --force scans everything again.
	o.Force = true
	if _, err := Run(context.Background(), specs, o); err != nil || sc2.scans["honest"] != 1 || sc2.scans["liar"] != 1 {
		t.Errorf("forced run: %v, scans %v", err, sc2.scans)
	}
}

// TestInterruptedRunRecordsNothingHalfDone cancels the batch while one
// package is being scanned: that package is not recorded (and has no
// report); the packages done are; the next run scans only what is left.
func TestInterruptedRunRecordsNothingHalfDone(t *testing.T) {
	specs := []Spec{{Kind: KindNPM, Name: "honest", Source: "l:1"}, {Kind: KindNPM, Name: "slow", Source: "l:2"}, {Kind: KindNPM, Name: "later", Source: "l:3"}}
	sc := &fakeScanner{block: make(chan struct{})}
	o := testOptions(t, sc)
	o.Jobs = 1
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-sc.block; cancel() }()
	res, err := Run(ctx, specs, o)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v, want ErrInterrupted", err)
	}
	if len(res) != 1 || res[0].Spec != "npm:honest" {
		t.Fatalf("results %+v, want honest's alone", res)
	}
	if sc.scans["later"] != 0 {
		t.Error("a package was started after the interruption")
	}
	reports, _ := filepath.Glob(filepath.Join(o.Results, reportsDir, "*"))
	if len(reports) != 1 {
		t.Errorf("reports %q, want honest's alone", reports)
	}
	sc2 := &fakeScanner{}
	o.Scanner = sc2
	res, err = Run(context.Background(), specs, o)
	if err != nil || len(res) != 3 || sc2.scans["honest"] != 0 || sc2.scans["slow"] != 1 || sc2.scans["later"] != 1 {
		t.Errorf("resumed: %v, %d results, scans %v", err, len(res), sc2.scans)
	}
	// A forced run stopped midway: the specs it did not finish keep their
	// earlier results.
	sc3 := &fakeScanner{block: make(chan struct{})}
	o.Scanner, o.Force = sc3, true
	ctx, cancel = context.WithCancel(context.Background())
	go func() { <-sc3.block; cancel() }()
	res, err = Run(ctx, specs, o)
	if !errors.Is(err, ErrInterrupted) || len(res) != 3 || sc3.scans["later"] != 0 {
		t.Errorf("forced and stopped: %v, %d results, scans %v", err, len(res), sc3.scans)
	}
}

func TestRunRefusesABadStateFile(t *testing.T) {
	o := testOptions(t, &fakeScanner{})
	os.WriteFile(filepath.Join(o.Results, stateFile), []byte(`{"version": 99}`), 0o644)
	if _, err := Run(context.Background(), nil, o); !errors.Is(err, ErrBatch) {
		t.Errorf("err %v, want ErrBatch", err)
	}
}

func TestStatusOf(t *testing.T) {
	fail := verdict.FailOn{Severity: report.SeverityError}
	ok := &report.Report{Tools: []report.Tool{{Name: "t"}}, Complete: true}
	for _, tc := range []struct {
		name string
		rep  *report.Report
		err  error
		want Status
	}{
		{"ok", ok, nil, StatusOK},
		{"findings", &report.Report{Tools: ok.Tools, Findings: []report.Finding{{Severity: report.SeverityCritical}}}, nil, StatusFindings},
		{"below the threshold", &report.Report{Tools: ok.Tools, Findings: []report.Finding{{Severity: report.SeverityNote}}}, nil, StatusOK},
		{"start", &report.Report{}, fmt.Errorf("x: %w", sandbox.ErrServerStart), StatusFailedStart},
		{"no report", nil, errors.New("engine gone"), StatusFailedStart},
		{"run timeout", &report.Report{Tools: ok.Tools, Problems: []report.Problem{{Kind: "run-timeout"}}}, scan.ErrIncomplete, StatusTimeout},
		{"backstop", nil, context.DeadlineExceeded, StatusTimeout},
		{"crashed mid-way, findings", &report.Report{Tools: ok.Tools, Findings: []report.Finding{{Severity: report.SeverityError}}}, scan.ErrIncomplete, StatusFindings},
		// A lost sandbox is no result, whatever it saw until then.
		{"sandbox lost, findings", &report.Report{Tools: ok.Tools, Findings: []report.Finding{{Severity: report.SeverityError}}},
			fmt.Errorf("%w: %w: gone", scan.ErrIncomplete, sandbox.ErrSandboxLost), StatusFailed},
		{"sandbox lost, in the report", &report.Report{Tools: ok.Tools, Problems: []report.Problem{{Kind: report.ProblemSandboxLost}}}, scan.ErrIncomplete, StatusFailed},
	} {
		if got := StatusOf(tc.rep, tc.err, fail); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	for _, s := range Statuses() {
		var back Status
		b, _ := s.MarshalText()
		if back.UnmarshalText(b) != nil || back != s {
			t.Errorf("%s does not round-trip", s)
		}
	}
}

func TestProgress(t *testing.T) {
	if got := progress(2, 10, time.Minute); got != ", 120/h, ETA 4m0s" {
		t.Errorf("progress: %q", got)
	}
	if got := progress(0, 10, time.Minute); got != "" {
		t.Errorf("progress before anything is done: %q", got)
	}
}

func TestRetryRunsTheFailedAgain(t *testing.T) {
	specs := []Spec{{Kind: KindNPM, Name: "honest", Source: "l:1"}, {Kind: KindNPM, Name: "nostart", Source: "l:2"}, {Kind: KindNPM, Name: "nofetch", Source: "l:3"}}
	o := testOptions(t, &fakeScanner{})
	if _, err := Run(context.Background(), specs, o); err != nil {
		t.Fatal(err)
	}
	sc := &fakeScanner{}
	o.Scanner, o.Retry = sc, true
	if _, err := Run(context.Background(), specs, o); err != nil || sc.scans["honest"] != 0 || sc.scans["nostart"] != 1 {
		t.Errorf("retry: %v, scans %v", err, sc.scans)
	}
}

func TestOneBatchAtATime(t *testing.T) {
	o := testOptions(t, &fakeScanner{})
	unlock, err := lockResults(o.Results)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Run(context.Background(), nil, o); !errors.Is(err, ErrBatch) || !strings.Contains(err.Error(), "another batch") {
		t.Errorf("second batch on the same results: %v", err)
	}
}

// pipeInstaller and pipeScanner follow how many installs and scans run
// at once; the scan of "first" waits until the install of "second" has
// begun, which only a fetch that runs ahead of the scans lets happen.
type pipeline struct {
	mu                    sync.Mutex
	installs, scans       int
	maxInstalls, maxScans int
	secondFetching        chan struct{}
	once                  sync.Once
}

func (p *pipeline) enter(n, most *int, d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*n += d
	*most = max(*most, *n)
}

type pipeInstaller struct{ p *pipeline }

func (pi pipeInstaller) Install(ctx context.Context, s Spec) (Installed, error) {
	pi.p.enter(&pi.p.installs, &pi.p.maxInstalls, 1)
	defer pi.p.enter(&pi.p.installs, &pi.p.maxInstalls, -1)
	if s.Name == "second" {
		pi.p.once.Do(func() { close(pi.p.secondFetching) })
	}
	return fakeInstaller{}.Install(ctx, s)
}

type pipeScanner struct{ p *pipeline }

func (ps pipeScanner) Scan(ctx context.Context, j Job) (*report.Report, error) {
	ps.p.enter(&ps.p.scans, &ps.p.maxScans, 1)
	defer ps.p.enter(&ps.p.scans, &ps.p.maxScans, -1)
	if j.Spec.Name == "first" {
		select {
		case <-ps.p.secondFetching:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute): // a bound on a broken pipeline, not a timing
			return nil, errors.New("the second package was not fetched while the first scanned")
		}
	}
	return (&fakeScanner{}).Scan(ctx, j)
}

// TestFetchRunsAheadOfScans: at -j 1 the next package is fetched while
// one scans (the fetch and the scan overlap), and never more than Jobs
// fetches nor Jobs scans run at once.
func TestFetchRunsAheadOfScans(t *testing.T) {
	p := &pipeline{secondFetching: make(chan struct{})}
	o := testOptions(t, pipeScanner{p})
	o.Jobs = 1
	o.Installers = map[Kind]Installer{KindNPM: pipeInstaller{p}}
	specs := []Spec{{Kind: KindNPM, Name: "first", Source: "l:1"}, {Kind: KindNPM, Name: "second", Source: "l:2"}}
	res, err := Run(context.Background(), specs, o)
	if err != nil || len(res) != 2 {
		t.Fatalf("%v, %d results", err, len(res))
	}
	for _, r := range res {
		if r.Status != StatusOK {
			t.Errorf("%s: %s (%s)", r.Spec, r.Status, r.Why)
		}
	}
	if p.maxScans != 1 || p.maxInstalls != 1 {
		t.Errorf("at -j 1: %d scans and %d fetches at once", p.maxScans, p.maxInstalls)
	}

	p = &pipeline{secondFetching: make(chan struct{})}
	o = testOptions(t, pipeScanner{p})
	o.Jobs = 2
	o.Installers = map[Kind]Installer{KindNPM: pipeInstaller{p}}
	specs = specs[:0]
	for i := range 8 {
		specs = append(specs, Spec{Kind: KindNPM, Name: fmt.Sprintf("p%d", i), Source: fmt.Sprintf("l:%d", i+1)})
	}
	if res, err := Run(context.Background(), specs, o); err != nil || len(res) != 8 {
		t.Fatalf("%v, %d results", err, len(res))
	}
	if p.maxScans > 2 || p.maxInstalls > 2 {
		t.Errorf("at -j 2: %d scans and %d fetches at once", p.maxScans, p.maxInstalls)
	}
}

// lingerScanner's first scan lingers (Idle) until the second has begun:
// with one slot, that holds only if a lingering scan gives its slot up.
type lingerScanner struct{ second chan struct{} }

func (l *lingerScanner) Scan(ctx context.Context, j Job) (*report.Report, error) {
	rep := &report.Report{Complete: true}
	if j.Spec.Name != "lingers" {
		close(l.second)
		return rep, nil
	}
	resume := j.Idle()
	select {
	case <-l.second:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	resume()
	return rep, nil
}

// TestALingeringScanGivesItsSlotUp: bulk -j 1 starts the next package's
// scan while the one before it lingers, and both finish.
func TestALingeringScanGivesItsSlotUp(t *testing.T) {
	o := testOptions(t, &lingerScanner{second: make(chan struct{})})
	o.Jobs = 1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, []Spec{{Kind: KindNPM, Name: "lingers", Source: "l:1"}, {Kind: KindNPM, Name: "next", Source: "l:2"}}, o)
	if err != nil || ctx.Err() != nil {
		t.Fatalf("run: %v, %v", err, ctx.Err())
	}
	if len(res) != 2 || res[0].Status != StatusOK || res[1].Status != StatusOK {
		t.Errorf("results %+v", res)
	}
}
