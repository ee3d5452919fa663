package bulk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrConflict is returned by Merge when two results directories hold
// different results for the same spec: the merge keeps neither and lists
// both, rather than choosing one silently.
var ErrConflict = errors.New("conflicting results")

// Conflict is one spec two directories disagree on.
type Conflict struct {
	Key  string   `json:"key"`
	Spec string   `json:"spec"`
	Dirs []string `json:"dirs"`
	// Results are each directory's result, in the order of Dirs.
	Results []Result `json:"results"`
}

// conflictsFile lists the conflicts of a merge in its output directory.
const conflictsFile = "conflicts.json"

// Merge joins results directories (the shards of one batch, or batches
// over different lists) into out, as if one machine had run them all:
// one state file, every report, one summary in the lists' order. A spec
// found in several directories with the same result (a shard run twice)
// is kept once; with different results it is a conflict, left out of the
// summary, written to conflicts.json and returned with ErrConflict. out
// must not be one of dirs; it may already hold an earlier merge's files,
// which are replaced.
func Merge(out string, dirs []string) (Summary, []Conflict, error) {
	if len(dirs) == 0 {
		return Summary{}, nil, fmt.Errorf("%w: nothing to merge", ErrBatch)
	}
	absOut, _ := filepath.Abs(out)
	for _, d := range dirs {
		if a, _ := filepath.Abs(d); a == absOut {
			return Summary{}, nil, fmt.Errorf("%w: %s is both merged and the merge's output", ErrBatch, d)
		}
	}
	type found struct {
		r   Result
		dir string
	}
	byKey := map[string][]found{}
	var keys []string
	var inputs []InputError
	seenInput := map[InputError]bool{}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, stateFile)); err != nil {
			return Summary{}, nil, fmt.Errorf("%w: %s is not a results directory: %w", ErrBatch, d, err)
		}
		st, err := LoadState(d)
		if err != nil {
			return Summary{}, nil, err
		}
		for _, k := range sortedKeys(st) {
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], found{st[k], d})
		}
		// The inputs' own errors (malformed lines, duplicates), which every
		// shard of a batch reads alike: kept once each, in order.
		b, err := os.ReadFile(filepath.Join(d, "summary.json"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return Summary{}, nil, fmt.Errorf("%w: %w", ErrBatch, err)
		}
		if err == nil {
			var s Summary
			if err := json.Unmarshal(b, &s); err != nil {
				return Summary{}, nil, fmt.Errorf("%w: %s: %w", ErrBatch, filepath.Join(d, "summary.json"), err)
			}
			for _, in := range s.Inputs {
				if !seenInput[in] {
					seenInput[in] = true
					inputs = append(inputs, in)
				}
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(out, reportsDir), 0o755); err != nil {
		return Summary{}, nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	unlock, err := lockResults(out)
	if err != nil {
		return Summary{}, nil, err
	}
	defer unlock()
	done := map[string]Result{}
	var conflicts []Conflict
	for _, k := range keys {
		fs := byKey[k]
		first := fs[0]
		var c *Conflict
		for _, f := range fs[1:] {
			if !sameResult(first.r, f.r) {
				if c == nil {
					c = &Conflict{Key: k, Spec: first.r.Spec, Dirs: []string{first.dir}, Results: []Result{first.r}}
				}
				c.Dirs, c.Results = append(c.Dirs, f.dir), append(c.Results, f.r)
			}
		}
		if c != nil {
			conflicts = append(conflicts, *c)
			continue
		}
		if first.r.Report != "" {
			if err := copyReport(first.dir, out, first.r.Report); err != nil {
				return Summary{}, nil, err
			}
		}
		done[k] = first.r
	}
	if err := writeState(out, done); err != nil {
		return Summary{}, nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	results := make([]Result, 0, len(done))
	for _, r := range done {
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b Result) int {
		if a.Order != b.Order {
			return a.Order - b.Order
		}
		return strings.Compare(a.Key, b.Key)
	})
	sum := Summarize(results, inputs)
	if err := WriteSummaries(out, sum); err != nil {
		return Summary{}, nil, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	cpath := filepath.Join(out, conflictsFile)
	if len(conflicts) == 0 {
		if err := os.Remove(cpath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return sum, nil, fmt.Errorf("%w: %w", ErrBatch, err)
		}
		return sum, nil, nil
	}
	b, err := json.MarshalIndent(conflicts, "", "  ")
	if err != nil {
		return sum, conflicts, fmt.Errorf("encoding the conflicts: %w", err)
	}
	if err := writeAtomic(cpath, append(b, '\n')); err != nil {
		return sum, conflicts, fmt.Errorf("%w: %w", ErrBatch, err)
	}
	return sum, conflicts, fmt.Errorf("%w: %d spec(s) have different results in different directories (see %s)", ErrConflict, len(conflicts), cpath)
}

// sameResult compares two results of one spec outside what differs run to
// run without the result differing: the time taken, where the input named
// it, its place in the list.
func sameResult(a, b Result) bool {
	norm := func(r Result) []byte {
		r.Seconds, r.Source, r.Order = 0, "", 0
		j, _ := json.Marshal(r)
		return j
	}
	return bytes.Equal(norm(a), norm(b))
}

// copyReport copies a report (a path relative to its results directory,
// under reports/) from one results directory to another.
func copyReport(from, to, rel string) error {
	clean := filepath.Clean(rel)
	if filepath.IsAbs(clean) || !strings.HasPrefix(clean, reportsDir+string(filepath.Separator)) {
		return fmt.Errorf("%w: a state file in %s names report %q, outside %s/", ErrBatch, from, rel, reportsDir)
	}
	b, err := os.ReadFile(filepath.Join(from, clean))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBatch, err)
	}
	if err := writeAtomic(filepath.Join(to, clean), b); err != nil {
		return fmt.Errorf("%w: %w", ErrBatch, err)
	}
	return nil
}
