package sandbox_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// BenchmarkRunnerPeakMemory runs the mcpsandbox command, a process of its
// own with its default bounds, against the flood fixture at its worst,
// one input at a time, and reports the runner's peak resident memory
// (getrusage's maxrss) and the report's size. The goal is at most 256 MB
// whatever the server sends. With MCPSANDBOX_BENCH_BEFORE naming another
// build of the command (an earlier commit's), each input runs it too, and
// its peak is reported beside (before-peak-MB), for a table of before and
// after measured under the same load. A case with a --timeout the run
// passes also reports how far past it the runner ended (overrun-s, the
// report's timing.overrunMs; before-overrun-s) and how far past it the
// process exited (exit-past-s, measured here; before-exit-past-s), which
// should stay within a few seconds (sandbox.TeardownGrace) whatever the
// engine's removal of the container takes.
func BenchmarkRunnerPeakMemory(b *testing.B) {
	cli := sandboxtest.Docker(b)
	sandboxtest.NodeImage(b, cli)
	runner, agent, fx := sandboxtest.Runner(b), sandboxtest.Agent(b), sandboxtest.Fixture(b)
	const mib = 1 << 20
	under := sandbox.DefaultMaxMessage - 4<<10 // the largest a message can be and pass
	before := os.Getenv("MCPSANDBOX_BENCH_BEFORE")
	for _, c := range []struct {
		name   string
		probes string
		args   []string
		// timeout, if set, is the runner's --timeout: one the run passes.
		timeout time.Duration
	}{
		{"pages-15MiB-x40", `[]`, []string{"pages=40", "page-bytes=" + strconv.Itoa(15*mib)}, 0},
		{"pages-under-bound-x40", `[]`, []string{"pages=40", "page-bytes=" + strconv.Itoa(under)}, 0},
		{"tools-100k", `[]`, []string{"pages=10", "tools=10000", "page-bytes=" + strconv.Itoa(under)}, 0},
		{"results-15MiB-x40", `[{"tool":"big","repeat":40}]`, []string{"result-bytes=" + strconv.Itoa(15*mib)}, 0},
		{"results-under-bound-x40", `[{"tool":"big","repeat":40}]`, []string{"result-bytes=" + strconv.Itoa(under-200)}, 0},
		{"nesting-1500-x40", `[{"tool":"deep","repeat":40}]`, []string{"depth=1500"}, 0},
		{"notifications-15MiB-x20", `[{"tool":"chatty","repeat":20}]`, []string{"notify-bytes=" + strconv.Itoa(15*mib)}, 0},
		{"schema-under-bound", `[]`, []string{"schema-bytes=" + strconv.Itoa(under-1000)}, 0},
		{"stderr-1GiB", `[{"tool":"echo"}]`, []string{"stderr-bytes=" + strconv.Itoa(1024*mib)}, 0},
		// 200,001 entries as the server starts (/tmp/f and its files), past
		// the default --max-files: every snapshot walks 200,000 of them.
		{"files-200001-at-startup", `[{"tool":"echo"}]`, []string{"files=200000"}, 0},
		// The same with names of 150 bytes: 31 MB of paths, just under the
		// walk's bound on them (overlay.DefaultMaxPathBytes).
		{"files-200001-long-names", `[{"tool":"echo"}]`, []string{"files=200000", "name-bytes=150"}, 0},
		// The same flood with a --timeout the run passes, its 200,001
		// files made by then: past it, the teardown waits no more than
		// sandbox.TeardownGrace for the engine (whose removal of them has
		// taken 20 s on a loaded machine).
		{"files-200001-timeout-60s", `[{"tool":"echo"}]`, []string{"files=200000"}, 60 * time.Second},
		// A chain of directories 5,000 deep: paths of up to 10 KB each.
		{"dirs-5000-deep", `[{"tool":"echo"}]`, []string{"deep-dirs=5000"}, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			probes, out := filepath.Join(dir, "probes.json"), filepath.Join(dir, "report.json")
			if err := os.WriteFile(probes, []byte(c.probes), 0o644); err != nil {
				b.Fatal(err)
			}
			// scan returns the runner's peak and, with a timeout, how far
			// past it the run ended (the report's word: 0 when it did not)
			// and the process exited.
			scan := func(runner, agent string) (peak int64, past overrun) {
				args := []string{"scan", "--format", "json", "--out", out, "--agent", agent, "--mount", fx.Source + ":" + fx.Target,
					"--linger", sandboxtest.Linger.String(), "--no-replay", "--fail-on", "never", "--probes", probes}
				if c.timeout > 0 {
					args = append(args, "--timeout", c.timeout.String())
				}
				args = append(args, "--", fx.Target, "flood")
				cmd := exec.Command(runner, append(args, c.args...)...)
				start := time.Now()
				if outb, err := cmd.CombinedOutput(); err != nil {
					// Exit 2 is a scan that could not run every step: still a
					// measurement, as long as the report was written.
					if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
						b.Fatalf("runner: %v\n%s", err, outb)
					}
				}
				past.exit = time.Since(start) - c.timeout
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				if c.timeout > 0 {
					past.report = reportOverrun(b, out)
				}
				return ru.Maxrss << 10, past // KiB on Linux
			}
			var peak, beforePeak int64
			var past, beforePast overrun
			for range b.N {
				if before != "" {
					p, o := scan(before, before)
					beforePeak, beforePast = max(beforePeak, p), beforePast.max(o)
				}
				p, o := scan(runner, agent)
				peak, past = max(peak, p), past.max(o)
			}
			st, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(peak)/1e6, "peak-MB")
			b.ReportMetric(float64(st.Size())/1e6, "report-MB")
			was := ""
			if before != "" {
				b.ReportMetric(float64(beforePeak)/1e6, "before-peak-MB")
				was = fmt.Sprintf(" (before: %.1f MB)", float64(beforePeak)/1e6)
			}
			if c.timeout > 0 {
				b.ReportMetric(past.report.Seconds(), "overrun-s")
				b.ReportMetric(past.exit.Seconds(), "exit-past-s")
				was += fmt.Sprintf(", past --timeout by %.1f s, exited %.1f s past it", past.report.Seconds(), past.exit.Seconds())
				if before != "" {
					b.ReportMetric(beforePast.report.Seconds(), "before-overrun-s")
					b.ReportMetric(beforePast.exit.Seconds(), "before-exit-past-s")
					was += fmt.Sprintf(" (before: %.1f s, %.1f s)", beforePast.report.Seconds(), beforePast.exit.Seconds())
				}
			}
			fmt.Printf("runner peak memory %-26s %6.1f MB%s, report %.2f MB\n", c.name, float64(peak)/1e6, was, float64(st.Size())/1e6)
			if peak > 256e6 {
				b.Errorf("the runner peaked at %.1f MB, over the 256 MB goal", float64(peak)/1e6)
			}
		})
	}
}

// overrun is how far past its --timeout a run ended, by its report
// (timing.overrunMs), and its process exited.
type overrun struct{ report, exit time.Duration }

func (o overrun) max(p overrun) overrun { return overrun{max(o.report, p.report), max(o.exit, p.exit)} }

// reportOverrun reads timing.overrunMs of the report at path.
func reportOverrun(b *testing.B, path string) time.Duration {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		b.Fatal(err)
	}
	if rep.Timing == nil {
		return 0
	}
	return time.Duration(rep.Timing.OverrunMs) * time.Millisecond
}
