package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// TestTimings: --timings writes where the run's time went, its replays'
// legs apart, and leaves the report's bytes as they are without it; a
// path that cannot be written fails before any container starts.
func TestTimings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	probeFile := writeFile(t, dir, "p.json", `{"summarize_workspace":{},"list_workspace":{}}`)
	file := filepath.Join(dir, "timings.json")
	flags := []string{"--probes", probeFile, "--bait-seed", "3", "--no-replay=false"}
	code, with, stderr := scanFixture(t, append(flags, "--timings", file), "wary")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the wary tool writes): %s", code, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var f timings.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	steps := map[timings.Step]bool{}
	for _, s := range f.Path {
		steps[s.Step] = true
	}
	for _, s := range []timings.Step{timings.StepStart, timings.StepHandshake, timings.StepList, timings.StepCall, timings.StepSnapshot, timings.StepLinger, timings.StepTeardown, timings.StepReplays} {
		if !steps[s] {
			t.Errorf("no %s on the path: %s", s, b)
		}
	}
	legs := map[string]bool{}
	for _, s := range f.Sessions {
		legs[s.Session] = true
	}
	if !legs["replay 1 with"] || !legs["replay 1 control"] || f.WallMs <= 0 {
		t.Errorf("sessions %v, wall %v", legs, f.WallMs)
	}

	_, without, _ := scanFixture(t, flags, "wary")
	if a, b := withoutTiming(t, with), withoutTiming(t, without); !bytes.Equal(a, b) {
		t.Errorf("--timings moved the report:\n%s", lineDiff(a, b))
	}
	if bytes.Contains(with, []byte("container-start")) {
		t.Errorf("the report carries the timings: %s", with)
	}

	var stdout, errb bytes.Buffer
	bad := filepath.Join(dir, "no", "such", "dir", "t.json")
	args := fixtureArgs(t, filepath.Join(dir, "r.json"), append(flags, "--timings", bad), "wary")
	err = run(t.Context(), args, &stdout, &errb)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an unwritable --timings: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "r.json")); serr == nil {
		t.Errorf("a report was written: the scan ran")
	}
}

// TestReplaysSideBySideSameReport: the demo's suspects replayed four at
// a time give the report they give one at a time, byte for byte outside
// timing.
func TestReplaysSideBySideSameReport(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.CopyFS(ws, os.DirFS("../../probes/examples/demo/workspace")); err != nil {
		t.Fatal(err)
	}
	scan := func(jobs string) ([]byte, report.Report) {
		flags := []string{"--probes", "../../probes/examples/demo/probes.json", "--workspace", ws, "--bait-seed", "5", "--no-replay=false", "--replay-jobs", jobs, "-v"}
		_, b, stderr := scanFixture(t, flags, "honest", "liar")
		r := decode(t, b)
		if r.Sandbox.Replay != "findings" {
			t.Fatalf("replay %q: %s", r.Sandbox.Replay, stderr)
		}
		// The calls before the last are replayed while the session
		// lingers (see replayEarly), taken by the replays after it.
		if !strings.Contains(stderr, "replays begun as the linger begins: calls [") {
			t.Errorf("no replay begun during the linger: %s", stderr)
		}
		return withoutTiming(t, b), r
	}
	one, r := scan("1")
	four, _ := scan("4")
	replayed := 0
	for _, c := range r.Calls {
		if c.Replay != nil && c.Replay.Status == "replayed" {
			replayed++
		}
	}
	if replayed < 4 {
		t.Fatalf("%d call(s) replayed: the test needs several", replayed)
	}
	if !bytes.Equal(one, four) {
		t.Errorf("four at a time moved the report:\n%s", lineDiff(one, four))
	}
}
