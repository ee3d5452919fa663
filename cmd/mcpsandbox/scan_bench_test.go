package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkDemoScan: the demo's scan (make demo: the fixture's honest and
// liar servers, the demo probe file) at default flags, beside the same
// scan with its replays one at a time (--replay-jobs 1) and beside its
// floor (--no-replay --linger 0: one container and the calls), interleaved
// in each iteration, so that the ratios compare what ran under the same
// load. Reported: each one's median seconds, and default/floor (the
// issue's fixture goal: at most 3) and default/serial.
func BenchmarkDemoScan(b *testing.B) {
	variants := []struct {
		name  string
		flags []string
	}{
		{"default", nil},
		{"serial", []string{"--replay-jobs", "1"}},
		{"floor", []string{"--no-replay", "--linger", "0"}},
	}
	took := make([][]float64, len(variants))
	for i := 0; i < b.N; i++ {
		for k, v := range variants {
			ws := b.TempDir()
			if err := os.CopyFS(ws, os.DirFS("../../probes/examples/demo/workspace")); err != nil {
				b.Fatal(err)
			}
			out := filepath.Join(b.TempDir(), "r.json")
			// The default linger and boundary probes, replays on: as make
			// demo runs it.
			flags := append([]string{"--probes", "../../probes/examples/demo/probes.json", "--workspace", ws, "--network", "sinkhole",
				"--linger", "3s", "--no-replay=false", "--no-boundary=false"}, v.flags...)
			args := fixtureArgs(b, out, flags, "honest", "liar")
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
			took[k] = append(took[k], time.Since(start).Seconds())
			if code != 1 {
				b.Fatalf("%s: exit %d, want 1 (the liar's findings): %s", v.name, code, stderr.String())
			}
		}
	}
	med := make([]float64, len(variants))
	for k, v := range variants {
		med[k] = median(took[k])
		b.ReportMetric(med[k], v.name+"-s")
	}
	b.ReportMetric(med[0]/med[2], "default/floor")
	b.ReportMetric(med[0]/med[1], "default/serial")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
