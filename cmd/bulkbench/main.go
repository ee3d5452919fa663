package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
)

func main() {
	var o options
	flag.StringVar(&o.List, "list", "cmd/bulkbench/servers.txt", "the list of specs to scan")
	flag.StringVar(&o.Binary, "mcpsandbox", "bin/mcpsandbox", "the mcpsandbox binary")
	flag.StringVar(&o.Cache, "cache", "", "bulk's --cache (default: bulk's own, ~/.cache/mcpsandbox/bulk)")
	flag.StringVar(&o.Work, "work", "", "where the results directories go (default: a temporary directory, removed)")
	jobs := flag.String("j", "1,2", "the -j values to measure, comma-separated, in this order")
	extra := flag.String("flags", "", "more bulk flags for every run, space-separated")
	flag.Parse()
	for _, s := range strings.Split(*jobs, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bulkbench: -j %q: want numbers of 1 or more\n", *jobs)
			os.Exit(2)
		}
		o.Jobs = append(o.Jobs, n)
	}
	o.Flags = strings.Fields(*extra)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bulkbench:", err)
		os.Exit(1)
	}
}

type options struct {
	List, Binary, Cache, Work string
	Jobs                      []int
	Flags                     []string
}

// measured is one bulk run.
type measured struct {
	Jobs int
	Wall time.Duration
	Sum  bulk.Summary
	// Log is the run's stderr, each line with its time since the start.
	Log []logLine
	// Load is the host's 1-minute load average at the start and the end
	// (the engine is shared: other work slows the scans).
	Load [2]string
}

type logLine struct {
	At   time.Duration
	Text string
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	f, err := os.Open(o.List)
	if err != nil {
		return err
	}
	specs, bad := bulk.Parse(o.List, f)
	f.Close()
	if len(bad) > 0 {
		return fmt.Errorf("%s: %v", o.List, bad[0])
	}
	if o.Work == "" {
		if o.Work, err = os.MkdirTemp("", "bulkbench-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.Work)
	}
	common := []string{"--cache", o.Cache}
	if o.Cache == "" {
		common = nil
	}
	common = append(common, o.Flags...)

	// The warm-up: a bulk run at -j 2 whose scans are cut short fetches
	// everything through bulk's own installer, the same cache paths the
	// measured runs read. Timed apart; a cache already warm makes it
	// quick.
	fmt.Fprintf(stderr, "bulkbench: warming the cache for %d packages\n", len(specs))
	warm, err := bulkRun(ctx, o, filepath.Join(o.Work, "warm"), 2, append([]string{"--timeout", "1s"}, common...), false, stderr)
	if err != nil {
		return fmt.Errorf("warming the cache: %w", err)
	}
	for _, r := range warm.Sum.Packages {
		if r.Status == bulk.StatusFailedFetch || r.Status == bulk.StatusFailedInstall {
			return fmt.Errorf("warming the cache: %s: %s (%s)", r.Spec, r.Status, r.Why)
		}
	}
	fmt.Fprintf(stderr, "bulkbench: warm-up took %s\n", warm.Wall.Round(time.Second))

	var runs []measured
	for i, j := range o.Jobs {
		// The first run logs each scan's steps (-v), for the profile.
		m, err := bulkRun(ctx, o, filepath.Join(o.Work, fmt.Sprintf("j%d-%d", j, i)), j, common, i == 0, stderr)
		if err != nil {
			return err
		}
		runs = append(runs, m)
		fmt.Fprintf(stderr, "bulkbench: -j %d: %d packages in %s\n", j, len(m.Sum.Packages), m.Wall.Round(time.Second))
	}
	writeTables(stdout, runs)
	if len(runs) > 0 {
		writeProfile(stdout, runs[0])
	}
	return nil
}

// bulkRun runs mcpsandbox bulk on the list into results and reads its
// summary.
func bulkRun(ctx context.Context, o options, results string, jobs int, flags []string, verbose bool, stderr io.Writer) (measured, error) {
	args := []string{"bulk", "-j", strconv.Itoa(jobs), "--results", results}
	if verbose {
		args = append(args, "-v")
	}
	args = append(append(args, flags...), o.List)
	cmd := exec.CommandContext(ctx, o.Binary, args...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return measured{}, err
	}
	m := measured{Jobs: jobs}
	m.Load[0] = loadAvg()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return measured{}, err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			m.Log = append(m.Log, logLine{At: time.Since(start), Text: sc.Text()})
			if !verbose || strings.HasPrefix(sc.Text(), "[") {
				fmt.Fprintln(stderr, sc.Text())
			}
		}
	}()
	wg.Wait()
	err = cmd.Wait()
	m.Wall = time.Since(start)
	m.Load[1] = loadAvg()
	var log strings.Builder
	for _, l := range m.Log {
		fmt.Fprintf(&log, "%8.3f %s\n", l.At.Seconds(), l.Text)
	}
	if werr := os.WriteFile(results+".log", []byte(log.String()), 0o644); werr != nil {
		return m, werr
	}
	if err != nil {
		return m, fmt.Errorf("mcpsandbox %s: %w", strings.Join(args, " "), err)
	}
	b, err := os.ReadFile(filepath.Join(results, "summary.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m.Sum); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(results, "summary.json"), err)
	}
	return m, nil
}

// loadAvg is the host's 1-minute load average, "?" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// perHour is the rate of n packages in d.
func perHour(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) * float64(time.Hour) / float64(d)
}

func writeTables(w io.Writer, runs []measured) {
	fmt.Fprintln(w, "| -j | packages | wall | packages/h | package seconds: median | max | sum | statuses | load avg, start → end |")
	fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
	for _, m := range runs {
		var secs []float64
		sum := 0.0
		for _, r := range m.Sum.Packages {
			secs = append(secs, r.Seconds)
			sum += r.Seconds
		}
		sort.Float64s(secs)
		med, mx := 0.0, 0.0
		if len(secs) > 0 {
			med, mx = secs[len(secs)/2], secs[len(secs)-1]
		}
		var st []string
		for _, s := range bulk.Statuses() {
			if n := m.Sum.Totals.ByStatus[s.String()]; n > 0 {
				st = append(st, fmt.Sprintf("%s %d", s, n))
			}
		}
		fmt.Fprintf(w, "| %d | %d | %s | **%.0f** | %.1f s | %.1f s | %.0f s | %s | %s → %s |\n", m.Jobs, len(m.Sum.Packages),
			m.Wall.Round(100*time.Millisecond), perHour(len(m.Sum.Packages), m.Wall), med, mx, sum, strings.Join(st, ", "), m.Load[0], m.Load[1])
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "| package | tools | findings |")
	for _, m := range runs {
		fmt.Fprintf(w, " s at -j %d |", m.Jobs)
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, "| --- | ---: | ---: |")
	for range runs {
		fmt.Fprint(w, " ---: |")
	}
	fmt.Fprintln(w)
	if len(runs) == 0 {
		return
	}
	for i, r := range runs[0].Sum.Packages {
		fmt.Fprintf(w, "| %s | %d | %d |", r.Name, r.Tools, r.Findings)
		for _, m := range runs {
			if i < len(m.Sum.Packages) && m.Sum.Packages[i].Key == r.Key {
				fmt.Fprintf(w, " %.1f |", m.Sum.Packages[i].Seconds)
			} else {
				fmt.Fprint(w, " — |")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// writeProfile adds up, over the packages of a -v run at -j 1, the time
// between each log line and the next by what the line says started.
func writeProfile(w io.Writer, m measured) {
	if m.Jobs != 1 {
		return // lines of two packages interleave: no profile
	}
	total, order := Profile(m.Log)
	all := time.Duration(0)
	for _, d := range total {
		all += d
	}
	n := max(len(m.Sum.Packages), 1)
	fmt.Fprintf(w, "Where the seconds of a package go (-j %d, -v, %d packages, %s in all):\n\n", m.Jobs, n, all.Round(100*time.Millisecond))
	fmt.Fprintln(w, "| step | total | per package | share |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: |")
	for _, k := range order {
		d := total[k]
		share := 0.0
		if all > 0 {
			share = 100 * float64(d) / float64(all)
		}
		fmt.Fprintf(w, "| %s | %.1f s | %.2f s | %.0f%% |\n", k, d.Seconds(), d.Seconds()/float64(n), share)
	}
	fmt.Fprintln(w)
}

// steps are the -v lines that start a step, by prefix, checked in order,
// and the step's name; a line that matches none goes on the step before.
var steps = []struct{ match, step string }{
	{"adding the agent", "image: agent layer"},
	{"preparing an image layer", "image: package layer"},
	{"starting ", "start: container, node, initialize"},
	{"initialized ", "list tools"},
	{"listed ", "first call"},
	{"call * left *settling", "settle (background processes)"},
	{"call *'s session: replaying setup", stepReplay},
	{"call ", "calls (each call's own time)"},
	{"read ", "calls (each call's own time)"},
	{"lingering ", "linger"},
	{"replaying call", stepReplay},
	{"disk: ", "teardown, verdict, report"},
	{"[", stepNext},
}

const (
	stepReplay = "replay rounds (their sessions' start, calls, linger, teardown)"
	stepNext   = "fetch (warm cache) and next container"
)

// stepOf names the step a -v line starts, "" for none.
func stepOf(line string) string {
	for _, s := range steps {
		if matchGlob(s.match, line) {
			return s.step
		}
	}
	return ""
}

// matchGlob matches a prefix pattern where * stands for any text.
func matchGlob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1:] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// Profile adds up the time from each line to the next by the step the
// line starts (the time before the first line is the first fetch), and
// returns the steps in the order they first appear.
func Profile(log []logLine) (map[string]time.Duration, []string) {
	total := map[string]time.Duration{}
	var order []string
	cur, since := stepNext, time.Duration(0)
	add := func(step string, d time.Duration) {
		if _, ok := total[step]; !ok {
			order = append(order, step)
		}
		total[step] += d
	}
	replaying := false
	for _, l := range log {
		step := stepOf(l.Text)
		if step == "" {
			continue
		}
		// A replay's sessions start, call and linger too: from the first
		// replay to the package's end, every line is the replay's.
		switch {
		case step == stepReplay:
			replaying = true
		case step == stepNext:
			replaying = false
		case replaying:
			continue
		}
		add(cur, l.At-since)
		cur, since = step, l.At
	}
	return total, order
}
