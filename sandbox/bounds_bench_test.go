package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

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
// after measured under the same load.
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
	}{
		{"pages-15MiB-x40", `[]`, []string{"pages=40", "page-bytes=" + strconv.Itoa(15*mib)}},
		{"pages-under-bound-x40", `[]`, []string{"pages=40", "page-bytes=" + strconv.Itoa(under)}},
		{"tools-100k", `[]`, []string{"pages=10", "tools=10000", "page-bytes=" + strconv.Itoa(under)}},
		{"results-15MiB-x40", `[{"tool":"big","repeat":40}]`, []string{"result-bytes=" + strconv.Itoa(15*mib)}},
		{"results-under-bound-x40", `[{"tool":"big","repeat":40}]`, []string{"result-bytes=" + strconv.Itoa(under-200)}},
		{"nesting-1500-x40", `[{"tool":"deep","repeat":40}]`, []string{"depth=1500"}},
		{"notifications-15MiB-x20", `[{"tool":"chatty","repeat":20}]`, []string{"notify-bytes=" + strconv.Itoa(15*mib)}},
		{"schema-under-bound", `[]`, []string{"schema-bytes=" + strconv.Itoa(under-1000)}},
		{"stderr-1GiB", `[{"tool":"echo"}]`, []string{"stderr-bytes=" + strconv.Itoa(1024*mib)}},
		// 200,001 entries as the server starts (/tmp/f and its files), past
		// the default --max-files: every snapshot walks 200,000 of them.
		{"files-200001-at-startup", `[{"tool":"echo"}]`, []string{"files=200000"}},
		// The same with names of 150 bytes: 31 MB of paths, just under the
		// walk's bound on them (overlay.DefaultMaxPathBytes).
		{"files-200001-long-names", `[{"tool":"echo"}]`, []string{"files=200000", "name-bytes=150"}},
		// A chain of directories 5,000 deep: paths of up to 10 KB each.
		{"dirs-5000-deep", `[{"tool":"echo"}]`, []string{"deep-dirs=5000"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			probes, out := filepath.Join(dir, "probes.json"), filepath.Join(dir, "report.json")
			if err := os.WriteFile(probes, []byte(c.probes), 0o644); err != nil {
				b.Fatal(err)
			}
			scan := func(runner, agent string) (peak int64) {
				args := []string{"scan", "--format", "json", "--out", out, "--agent", agent, "--mount", fx.Source + ":" + fx.Target,
					"--linger", sandboxtest.Linger.String(), "--no-replay", "--fail-on", "never", "--probes", probes, "--", fx.Target, "flood"}
				cmd := exec.Command(runner, append(args, c.args...)...)
				if outb, err := cmd.CombinedOutput(); err != nil {
					// Exit 2 is a scan that could not run every step: still a
					// measurement, as long as the report was written.
					if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
						b.Fatalf("runner: %v\n%s", err, outb)
					}
				}
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				return ru.Maxrss << 10 // KiB on Linux
			}
			var peak, beforePeak int64
			for range b.N {
				if before != "" {
					beforePeak = max(beforePeak, scan(before, before))
				}
				peak = max(peak, scan(runner, agent))
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
			fmt.Printf("runner peak memory %-26s %6.1f MB%s, report %.2f MB\n", c.name, float64(peak)/1e6, was, float64(st.Size())/1e6)
			if peak > 256e6 {
				b.Errorf("the runner peaked at %.1f MB, over the 256 MB goal", float64(peak)/1e6)
			}
		})
	}
}
