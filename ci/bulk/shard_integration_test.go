package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Environment of a shard process: TestShardChild runs a shard when these
// are set, and is a no-op otherwise.
const (
	envShard    = "MCPSANDBOX_TEST_SHARD"
	envResults  = "MCPSANDBOX_TEST_SHARD_RESULTS"
	envList     = "MCPSANDBOX_TEST_SHARD_LIST"
	envTarballs = "MCPSANDBOX_TEST_SHARD_TARBALLS"
)

// runShard does what `mcpsandbox bulk --shard` does with the fixture
// registry: parse, dedupe, number, pick, run, summarize.
func runShard(t *testing.T, reg *localRegistry, list, results string, sh Shard) {
	t.Helper()
	f, err := os.Open(list)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	specs, inputs := Parse(list, f)
	specs, dups := Dedupe(specs)
	inputs = append(inputs, dups...)
	specs = sh.Pick(Number(specs))
	o := integrationOptions(t, docker(t), reg, nil)
	o.Results, o.Jobs = results, 1
	o.Seed = func() uint64 { return 7 }
	res, err := Run(context.Background(), specs, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSummaries(results, Summarize(res, inputs)); err != nil {
		t.Fatal(err)
	}
}

// TestShardChild is a shard process of TestShardsMergedEqualOneRun.
func TestShardChild(t *testing.T) {
	if os.Getenv(envShard) == "" {
		return // not a shard process
	}
	sh, err := ParseShard(os.Getenv(envShard))
	if err != nil {
		t.Fatal(err)
	}
	reg := &localRegistry{tarballs: map[string]string{}}
	for _, kv := range strings.Split(os.Getenv(envTarballs), "\n") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			reg.tarballs[k] = v
		}
	}
	runShard(t, reg, os.Getenv(envList), os.Getenv(envResults), sh)
}

// N shard processes on the fixture packages, merged, give the summary one
// process gives of the whole list, outside the time each package took.
func TestShardsMergedEqualOneRun(t *testing.T) {
	docker(t)
	reg := packFixtures(t, "echo-mcp")
	dir := t.TempDir()
	list := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(list, []byte("npm:echo-mcp\nnpm:echo-mcp -- liar\nnpm:no-such-fixture\npypi:mcp-server-fetch\nnot a spec\nnpm:echo-mcp\nnpm:echo-mcp -- crash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(dir, "single")
	runShard(t, reg, list, single, Shard{})

	const n = 3
	var tarballs []string
	for k, v := range reg.tarballs {
		tarballs = append(tarballs, k+"="+v)
	}
	var shards []string
	procs := make([]*exec.Cmd, n)
	outs := make([]*bytes.Buffer, n)
	for i := range n {
		res := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		shards = append(shards, res)
		cmd := exec.Command(os.Args[0], "-test.run=^TestShardChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envShard+"="+fmt.Sprintf("%d/%d", i, n), envResults+"="+res, envList+"="+list,
			envTarballs+"="+strings.Join(tarballs, "\n"))
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = cmd
	}
	for i, cmd := range procs {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("shard %d/%d: %v\n%s", i, n, err, outs[i])
		}
	}
	merged := filepath.Join(dir, "merged")
	got, conflicts, err := Merge(merged, shards)
	if err != nil || len(conflicts) != 0 {
		t.Fatalf("merge: %v %+v", err, conflicts)
	}
	b, err := os.ReadFile(filepath.Join(single, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want Summary
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if w, g := untimed(t, want), untimed(t, got); w != g {
		t.Errorf("merged summary differs from one run's:\nmerged: %s\nsingle: %s", g, w)
		// What differs is most often a problem one run met: said, so that
		// a flake under load can be told from a change of behaviour.
		for _, d := range append([]string{single}, shards...) {
			reports, _ := filepath.Glob(filepath.Join(d, reportsDir, "*.json"))
			for _, rp := range reports {
				var r report.Report
				if b, err := os.ReadFile(rp); err == nil && json.Unmarshal(b, &r) == nil && len(r.Problems) > 0 {
					t.Logf("%s: problems %+v", rp, r.Problems)
				}
			}
		}
	}
	if want.Totals.Packages != 5 || want.Totals.ByStatus[StatusOK.String()] != 1 || want.Totals.ByStatus[StatusFindings.String()] != 1 {
		t.Errorf("one run: %d packages by status %v, want 5 (the duplicate once), one ok, one with findings", want.Totals.Packages, want.Totals.ByStatus)
	}
	busy := 0
	for _, d := range shards {
		if st, err := LoadState(d); err == nil && len(st) > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Errorf("only %d of %d shards had work: the list did not spread", busy, n)
	}
}

// untimed is the summary as JSON without the seconds each package took.
func untimed(t *testing.T, s Summary) string {
	t.Helper()
	for i := range s.Packages {
		s.Packages[i].Seconds = 0
	}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
