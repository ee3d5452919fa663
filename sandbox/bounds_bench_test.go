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
// whatever the server sends.
func BenchmarkRunnerPeakMemory(b *testing.B) {
	cli := sandboxtest.Docker(b)
	sandboxtest.NodeImage(b, cli)
	runner, agent, fx := sandboxtest.Runner(b), sandboxtest.Agent(b), sandboxtest.Fixture(b)
	const mib = 1 << 20
	under := sandbox.DefaultMaxMessage - 4<<10 // the largest a message can be and pass
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
	} {
		b.Run(c.name, func(b *testing.B) {
			dir := b.TempDir()
			probes, out := filepath.Join(dir, "probes.json"), filepath.Join(dir, "report.json")
			if err := os.WriteFile(probes, []byte(c.probes), 0o644); err != nil {
				b.Fatal(err)
			}
			var peak int64
			for range b.N {
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
				peak = max(peak, ru.Maxrss<<10) // KiB on Linux
			}
			st, err := os.Stat(out)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(peak)/1e6, "peak-MB")
			b.ReportMetric(float64(st.Size())/1e6, "report-MB")
			fmt.Printf("runner peak memory %-26s %6.1f MB, report %.2f MB\n", c.name, float64(peak)/1e6, float64(st.Size())/1e6)
			if peak > 256e6 {
				b.Errorf("the runner peaked at %.1f MB, over the 256 MB goal", float64(peak)/1e6)
			}
		})
	}
}
