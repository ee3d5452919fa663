package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestDeterministicUnderLoad runs the determinism scenario several times
// while two other scans loop on the same engine and every CPU is busy:
// the reports must be byte-identical outside timing, and a baseline
// written from the first run must match every later one exactly (no new
// finding, no stale entry). A report that moves with machine load makes
// baselines go stale in CI, where the gate runs.
func TestDeterministicUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped by -short")
	}
	dir := t.TempDir()
	ws := seedWorkspaceDir(t)
	probes := writeFile(t, dir, "p.json", lyingProbes)
	base := filepath.Join(dir, "baseline.json")
	flags := []string{"--probes", probes, "--workspace", ws}
	// Build what the loops share before the load starts.
	scanFixture(t, []string{"--probes", probes}, "honest")

	ctx, stop := context.WithTimeout(context.Background(), 3*time.Minute)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for i := 0; i < runtime.NumCPU(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				for k := 0; k < 1e6; k++ {
				}
			}
		}()
	}
	for i := 0; i < 2; i++ {
		args := fixtureArgs(t, filepath.Join(dir, "load-"+itoa(i)+".json"), []string{"--probes", probes}, "honest", "liar")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				run(ctx, args, io.Discard, io.Discard)
			}
		}()
	}

	var first []byte
	for i := 0; i < 3; i++ {
		args := append([]string{}, flags...)
		if i == 0 {
			args = append(args, "--write-baseline", base)
		}
		code, b, stderr := scanFixture(t, args, "honest", "liar")
		if code != 1 {
			t.Fatalf("run %d: exit %d, want 1 (findings); %s", i, code, stderr)
		}
		got := withoutTiming(t, b)
		if i == 0 {
			first = got
			continue
		}
		if !bytes.Equal(first, got) {
			t.Errorf("run %d differs from run 0 outside timing: %s", i, firstDifference(first, got))
		}
	}
	for i := 0; i < 2; i++ {
		code, b, stderr := scanFixture(t, append(append([]string{}, flags...), "--baseline", base), "honest", "liar")
		r := decode(t, b)
		var fresh []string
		for _, f := range r.Findings {
			if !f.Baselined {
				fresh = append(fresh, f.Rule+" "+f.Tool)
			}
		}
		if code != 0 || len(fresh) > 0 {
			t.Errorf("baseline run %d: exit %d, findings outside the baseline (new or stale): %v; %s", i, code, fresh, stderr)
		}
	}
}

func withoutTiming(t *testing.T, b []byte) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m["timing"]) == 0 {
		t.Fatal("no timing block")
	}
	delete(m, "timing")
	return mustJSON(t, m)
}

func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-300)
	return "at byte " + itoa(i) + ":\n" + string(a[lo:min(len(a), i+300)]) + "\n---\n" + string(b[lo:min(len(b), i+300)])
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
