package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// heldScan scans the "held" fixture (files mapped shared and dirtied at
// startup, a file held open for writing) over the seed workspace, calling
// the given tools.
func heldScan(t *testing.T, probesJSON string, flags ...string) (int, report.Report, []byte, string) {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"--probes", writeFile(t, dir, "p.json", probesJSON), "--workspace", seedWorkspaceDir(t)}, flags...)
	code, b, stderr := scanFixture(t, args, "held")
	return code, decode(t, b), b, stderr
}

// modifiedBy lists the files the only call of tool modified, sorted.
func modifiedBy(t *testing.T, r report.Report, tool string) (report.Call, []string) {
	t.Helper()
	var call *report.Call
	for i, c := range r.Calls {
		if c.Tool == tool {
			if call != nil {
				t.Fatalf("%s called twice", tool)
			}
			call = &r.Calls[i]
		}
	}
	if call == nil {
		t.Fatalf("%s not called; not called %+v problems %+v", tool, r.NotCalled, r.Problems)
	}
	var out []string
	effs := []report.Effects{call.Effects}
	for _, ph := range r.Phases {
		if ph.Name == "between" && ph.After == call.Seq {
			effs = append(effs, ph.Effects)
		}
	}
	for _, e := range effs {
		for _, f := range e.Files {
			if f.Change == report.ChangeModified {
				out = append(out, f.Path)
			}
		}
	}
	sort.Strings(out)
	return *call, out
}

// readonlyFinding is the readonly-writes finding on call seq, if any.
func readonlyFinding(r report.Report, seq int) *report.Finding {
	for i, f := range r.Findings {
		if f.Rule == "readonly-writes" && f.Call == seq {
			return &r.Findings[i]
		}
	}
	return nil
}

// TestWritesThroughASharedMappingAreFound: a read-only tool that writes,
// through mappings dirtied at startup, a workspace file, a canary and
// ~/.aws/credentials changes no stat field; the files are compared by
// content all the same, in both isolation modes, whether the workspace
// is mounted or copied, and the gate fails on readonly-writes.
func TestWritesThroughASharedMappingAreFound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"session", nil},
		{"call", []string{"--isolation", "call"}},
		{"session-copied-workspace", []string{"--copy-workspace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, r, b, stderr := heldScan(t, `{"peek":{}}`, tc.flags...)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (the gate fails); %s", code, stderr)
			}
			call, got := modifiedBy(t, r, "peek")
			if call.IsError || call.Error != "" {
				t.Fatalf("peek failed: %+v", call)
			}
			for _, want := range []string{"/workspace/seed.txt", "/workspace/data.json", "/workspace/<project>/README.md", "/home/sandbox/.aws/credentials"} {
				if !contains(got, want) {
					t.Errorf("%s not found modified by peek; modified %q", want, got)
				}
			}
			f := readonlyFinding(r, call.Seq)
			if f == nil || f.Severity != report.SeverityError || f.Tool != "peek" {
				t.Fatalf("no readonly-writes finding on peek (call %d): %+v", call.Seq, r.Findings)
			}
			if r.Sandbox.FilesUnhashed != 0 || bytes.Contains(b, []byte(`"hash-budget"`)) {
				t.Errorf("files unhashed within the default budget: %d; problems %+v", r.Sandbox.FilesUnhashed, r.Problems)
			}
		})
	}
}

// TestFileHeldOpenAndWrittenWithMtimeRestored: a file kept open for
// writing from startup, written by a read-only tool that then puts its
// mtime back, is found modified by its content.
func TestFileHeldOpenAndWrittenWithMtimeRestored(t *testing.T) {
	t.Parallel()
	code, r, _, stderr := heldScan(t, `{"scribble":{}}`)
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	call, got := modifiedBy(t, r, "scribble")
	if len(got) != 1 || got[0] != "/workspace/held.log" {
		t.Fatalf("scribble modified %q, want only /workspace/held.log; call %+v", got, call)
	}
	if f := readonlyFinding(r, call.Seq); f == nil {
		t.Fatalf("no readonly-writes finding on scribble: %+v", r.Findings)
	}
}

// TestHashBudgetExceededFailsTheGate: a held file larger than the budget
// is left unhashed at every snapshot: a hash-budget problem naming it and
// a server-level hash-budget-exceeded finding that fails the default
// gate.
func TestHashBudgetExceededFailsTheGate(t *testing.T) {
	t.Parallel()
	ws := seedWorkspaceDir(t)
	big := bytes.Repeat([]byte("x"), 2<<20)
	if err := os.WriteFile(filepath.Join(ws, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, b, stderr := scanFixture(t, []string{"--probes", writeFile(t, dir, "p.json", `[]`), "--workspace", ws, "--hash-budget", "1"}, "held")
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	r := decode(t, b)
	if r.Sandbox.FilesUnhashed == 0 || r.Sandbox.HashBudget != 1<<20 {
		t.Fatalf("sandbox %+v", r.Sandbox)
	}
	var named bool
	for _, p := range r.Problems {
		if p.Kind == "hash-budget" && strings.Contains(p.Message, "/workspace/big.bin") {
			named = true
		}
	}
	if !named {
		t.Errorf("no hash-budget problem naming /workspace/big.bin: %+v", r.Problems)
	}
	var f *report.Finding
	for i := range r.Findings {
		if r.Findings[i].Rule == "hash-budget-exceeded" {
			f = &r.Findings[i]
		}
	}
	if f == nil || f.Severity != report.SeverityError || f.Tool != "" {
		t.Fatalf("hash-budget-exceeded = %+v; findings %+v", f, r.Findings)
	}
}

// TestAPISourceSaysWhatItCannotSee: through the Engine API the held
// files cannot be found; the report says so instead of passing in
// silence.
func TestAPISourceSaysWhatItCannotSee(t *testing.T) {
	t.Parallel()
	_, r, _, stderr := heldScan(t, `{"scribble":{}}`, "--changes", "api")
	for _, p := range r.Problems {
		if p.Kind == "effects" && strings.Contains(p.Message, "--changes api") {
			return
		}
	}
	t.Fatalf("no effects problem on what --changes api cannot see: %+v; %s", r.Problems, stderr)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestTimeoutBoundsHashing: once the run's --timeout has passed, no
// snapshot reads a file to hash it, teardown's included: the files held
// (mapped shared, so compared by content at every snapshot) are left
// unhashed and counted, with a hash-budget problem naming the timeout as
// the cause and the hash-budget-exceeded finding, besides the
// run-timeout. The hash budget is ample: only the deadline stops
// hashing.
func TestTimeoutBoundsHashing(t *testing.T) {
	t.Parallel()
	ws := seedWorkspaceDir(t)
	for i := range 8 {
		f, err := os.Create(filepath.Join(ws, fmt.Sprintf("large%d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: cheap to make, a full read to hash.
		if err := errors.Join(f.Truncate(16<<20), f.Close()); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	code, b, stderr := scanFixture(t, []string{"--probes", writeFile(t, dir, "p.json", `{"hang":{}}`), "--workspace", ws,
		"--timeout", "10s", "--call-timeout", "5m", "--hash-budget", "4096"}, "held", "hang")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (the run timed out); %s", code, stderr)
	}
	r := decode(t, b)
	var timedOut, atTeardown bool
	for _, p := range r.Problems {
		timedOut = timedOut || p.Kind == "run-timeout"
		// The message names the first files in order; the seeded project
		// comes before large*.bin, which the teardown phase counts below.
		if p.Kind == "hash-budget" && p.Call == 0 && strings.Contains(p.Message, "--timeout") {
			atTeardown = true
		}
	}
	if !timedOut || !atTeardown {
		t.Fatalf("run-timeout %v, hash-budget problem at teardown naming --timeout %v: %+v", timedOut, atTeardown, r.Problems)
	}
	var teardown *report.Phase
	for i, ph := range r.Phases {
		if ph.Name == "teardown" {
			teardown = &r.Phases[i]
		}
	}
	if teardown == nil || teardown.Effects.FilesUnhashed < 8 {
		t.Fatalf("teardown phase %+v: want the 8 held files unhashed", teardown)
	}
	if r.Sandbox.FilesUnhashed < 8 {
		t.Errorf("sandbox.filesUnhashed %d, want at least 8", r.Sandbox.FilesUnhashed)
	}
	var f *report.Finding
	for i := range r.Findings {
		if r.Findings[i].Rule == "hash-budget-exceeded" {
			f = &r.Findings[i]
		}
	}
	if f == nil || f.Severity != report.SeverityError {
		t.Fatalf("hash-budget-exceeded = %+v; findings %+v", f, r.Findings)
	}
}
