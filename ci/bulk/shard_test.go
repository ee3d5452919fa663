package bulk

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"0/1": {0, 1}, "3/4": {3, 4}} {
		if got, err := ParseShard(in); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "1", "4/4", "-1/2", "0/0", "a/b", "1/2/3"} {
		if _, err := ParseShard(in); !errors.Is(err, ErrShard) {
			t.Errorf("ParseShard(%q): %v, want ErrShard", in, err)
		}
	}
}

// Every spec lands in exactly one shard, whatever N, and the whole list
// is the zero shard.
func TestShardsCoverTheListOnce(t *testing.T) {
	var specs []Spec
	for i := range 200 {
		specs = append(specs, Spec{Kind: KindNPM, Name: fmt.Sprintf("pkg-%d", i), Version: "1.0.0"})
	}
	specs = append(specs, Spec{Kind: KindImage, Name: "local/server:1"}, Spec{Kind: KindNPM, Name: "pkg-1", Args: []string{"--root", "/x"}})
	Number(specs)
	if got := (Shard{}).Pick(specs); len(got) != len(specs) {
		t.Fatalf("the zero shard has %d of %d", len(got), len(specs))
	}
	for n := 1; n <= 5; n++ {
		seen := map[string]int{}
		for i := range n {
			for _, s := range (Shard{i, n}).Pick(specs) {
				seen[s.Key()]++
			}
		}
		for _, s := range specs {
			if seen[s.Key()] != 1 {
				t.Errorf("N=%d: %s in %d shards", n, s, seen[s.Key()])
			}
		}
		if n == 4 {
			for i := range n {
				if k := len((Shard{i, n}).Pick(specs)); k < 30 {
					t.Errorf("shard %d/4 has only %d of %d specs", i, k, len(specs))
				}
			}
		}
	}
}

// resultsDir writes a results directory as a finished bulk would.
func resultsDir(t *testing.T, rs []Result, inputs []InputError) string {
	t.Helper()
	dir := t.TempDir()
	done := map[string]Result{}
	for _, r := range rs {
		if r.Report != "" {
			if err := os.MkdirAll(filepath.Join(dir, reportsDir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, r.Report), []byte(`{"for":"`+r.Spec+`"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		done[r.Key] = r
	}
	if err := writeState(dir, done); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummaries(dir, Summarize(rs, inputs)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMergeKeepsOrderAndReports(t *testing.T) {
	a := Result{Key: "a", Order: 2, Spec: "npm:a@1.0.0", Kind: KindNPM, Name: "a", Status: StatusOK, Report: "reports/a.json", Seconds: 3}
	b := Result{Key: "b", Order: 0, Spec: "npm:b@1.0.0", Kind: KindNPM, Name: "b", Status: StatusFindings, Findings: 2, Report: "reports/b.json", ByRule: map[string]int{"readonly-writes": 2}}
	c := Result{Key: "c", Order: 1, Spec: "pypi:c", Kind: KindPyPI, Name: "c", Status: StatusNotScannedHere, Why: "PyPI is not installed here"}
	bad := []InputError{{Where: "list.txt:4", Msg: "not a spec"}}
	again := a
	again.Seconds = 9 // the same shard run twice: the same result, another time
	d1, d2, d3 := resultsDir(t, []Result{a, c}, bad), resultsDir(t, []Result{b}, bad), resultsDir(t, []Result{again}, bad)
	out := filepath.Join(t.TempDir(), "merged")
	sum, conflicts, err := Merge(out, []string{d1, d2, d3})
	if err != nil || len(conflicts) != 0 {
		t.Fatalf("merge: %v %v", err, conflicts)
	}
	var order []string
	for _, p := range sum.Packages {
		order = append(order, p.Key)
	}
	if strings.Join(order, ",") != "b,c,a" {
		t.Errorf("rows %v, want the list's order b,c,a", order)
	}
	if len(sum.Inputs) != 1 || sum.Totals.Packages != 3 {
		t.Errorf("inputs %v (want the malformed line once), %d packages", sum.Inputs, sum.Totals.Packages)
	}
	for _, r := range []Result{a, b} {
		if got, err := os.ReadFile(filepath.Join(out, r.Report)); err != nil || !strings.Contains(string(got), r.Spec) {
			t.Errorf("report %s: %q %v", r.Report, got, err)
		}
	}
	st, err := LoadState(out)
	if err != nil || len(st) != 3 {
		t.Errorf("merged state: %d results, %v", len(st), err)
	}
	if _, err := os.Stat(filepath.Join(out, conflictsFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("conflicts.json without a conflict: %v", err)
	}
}

func TestMergeReportsConflictsAndChoosesNeither(t *testing.T) {
	a := Result{Key: "a", Spec: "npm:a@1.0.0", Kind: KindNPM, Name: "a", Status: StatusOK}
	flipped := a
	flipped.Status, flipped.Findings = StatusFindings, 1
	other := Result{Key: "o", Order: 1, Spec: "npm:o@2.0.0", Kind: KindNPM, Name: "o", Status: StatusOK}
	d1, d2 := resultsDir(t, []Result{a, other}, nil), resultsDir(t, []Result{flipped}, nil)
	out := t.TempDir()
	sum, conflicts, err := Merge(out, []string{d1, d2})
	if !errors.Is(err, ErrConflict) || len(conflicts) != 1 || conflicts[0].Key != "a" || len(conflicts[0].Dirs) != 2 {
		t.Fatalf("merge: %v, conflicts %+v", err, conflicts)
	}
	if len(sum.Packages) != 1 || sum.Packages[0].Key != "o" {
		t.Errorf("summary rows %+v: a conflicting spec must not be chosen", sum.Packages)
	}
	b, err := os.ReadFile(filepath.Join(out, conflictsFile))
	var listed []Conflict
	if err != nil || json.Unmarshal(b, &listed) != nil || len(listed) != 1 {
		t.Errorf("conflicts.json: %s %v", b, err)
	}
}

func TestMergeRefusesWhatIsNotAResultsDirectory(t *testing.T) {
	d := resultsDir(t, nil, nil)
	for name, dirs := range map[string][]string{"none": nil, "missing": {t.TempDir()}, "itself": {d}} {
		out := t.TempDir()
		if name == "itself" {
			out = d
		}
		if _, _, err := Merge(out, dirs); !errors.Is(err, ErrBatch) {
			t.Errorf("%s: %v, want ErrBatch", name, err)
		}
	}
	// A state file naming a report outside reports/ is refused, not read.
	evil := resultsDir(t, []Result{{Key: "e", Spec: "npm:e", Kind: KindNPM, Name: "e", Status: StatusOK}}, nil)
	st := map[string]Result{"e": {Key: "e", Spec: "npm:e", Kind: KindNPM, Name: "e", Status: StatusOK, Report: "../../etc/passwd"}}
	if err := writeState(evil, st); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Merge(t.TempDir(), []string{evil}); !errors.Is(err, ErrBatch) {
		t.Errorf("a report outside reports/: %v, want ErrBatch", err)
	}
}
