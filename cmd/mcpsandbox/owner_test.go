package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
)

const ownerProbes = `[{"tool":"owner_status"},{"tool":"owner_search"},{"tool":"owner_begin"},{"tool":"owner_end"},
	{"tool":"owner_save","arguments":{"text":"first"}},{"tool":"owner_save","arguments":{"text":"second"}},{"tool":"owner_spawn"}]`

// TestEffectsGoToTheirOwner scans a server that logs every call to its
// own file, rewrites its usage counters and reports to a telemetry host
// whatever the tool, and whose tools take and release a lock, rewrite an
// append-only store whole and spawn a program that is not installed:
//
//   - the log and the counters are the server's: one server-level
//     finding per rule they break (the counters' rewrite still an error
//     under destructiveHint: false), listing the calls, none on a tool;
//   - the telemetry host is not allowed: each closed-world tool keeps its
//     closed-world-network finding, and allowing the host clears them;
//   - the lock's removal, the store's rewrite and the failed spawn are no
//     findings, and the spawn is one process entry, not one per PATH
//     directory.
//
// One scan, with --policy allowing the host; the findings without it are
// the verdict alone on the same observations (verdict.Finish reads
// nothing else; a second scan would only observe them again).
func TestEffectsGoToTheirOwner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	probes := writeFile(t, dir, "p.json", ownerProbes)
	policy := writeFile(t, dir, "policy.yml", "allowedHosts: [\"telemetry.fixture.example\"]\n")
	code, b, stderr := scanFixture(t, []string{"--network", "sinkhole", "--probes", probes, "--workspace", seedWorkspaceDir(t), "--policy", policy}, "owner")
	r := decode(t, b)
	if !r.Complete || len(r.Calls) != 7 {
		t.Fatalf("complete %v, %d calls; problems %+v", r.Complete, len(r.Calls), r.Problems)
	}
	// Allowing the telemetry host leaves what the server owns, which
	// fails the default gate all the same.
	if code != 1 {
		t.Fatalf("allowed: exit %d, want 1; %s", code, stderr)
	}
	for _, f := range r.Findings {
		if f.Tool != "" {
			t.Errorf("allowed: a tool's finding %+v", f)
		}
	}

	verdict.Finish(&r, verdict.Config{})
	type got struct {
		rule, tool string
		calls      []int
		sev        report.Severity
	}
	var fs []got
	for _, f := range r.Findings {
		fs = append(fs, got{f.Rule, f.Tool, f.Calls, f.Severity})
	}
	want := []got{
		{"closed-world-network", "owner_search", nil, report.SeverityError},
		{"closed-world-network", "owner_spawn", nil, report.SeverityError},
		{"closed-world-network", "owner_status", nil, report.SeverityError},
		{"nondestructive-deletes", "", []int{3, 4, 5, 6}, report.SeverityError},
		{"phase-writes-outside-workspace", "", nil, report.SeverityNote},
		{"readonly-writes", "", []int{1, 2, 7}, report.SeverityError},
		{"writes-outside-workspace", "", []int{1, 2, 3, 4, 5, 6, 7}, report.SeverityWarning},
	}
	slices.SortFunc(fs, func(a, b got) int { return strings.Compare(a.rule+" "+a.tool, b.rule+" "+b.tool) })
	if !reflect.DeepEqual(fs, want) {
		t.Errorf("findings:\n got %+v\nwant %+v\n%s", fs, want, b)
	}
	for _, f := range r.Findings {
		switch {
		case f.Rule == "nondestructive-deletes":
			if !reflect.DeepEqual(f.Evidence, []string{"changed /home/sandbox/.fixture/counters.json"}) {
				t.Errorf("nondestructive-deletes evidence %q", f.Evidence)
			}
		case f.Tool == "" && len(f.Calls) > 0:
			if !reflect.DeepEqual(f.Evidence, []string{"changed /home/sandbox/.fixture/counters.json", "changed /home/sandbox/.fixture/log"}) {
				t.Errorf("%s evidence %q", f.Rule, f.Evidence)
			}
		}
	}

	// The spawn: one entry for the helper, one for the program it looked
	// for, with its final outcome; nothing left in the background.
	spawn := r.Calls[6]
	procs := spawn.Effects.Processes
	for _, ph := range r.Phases {
		if ph.Name == "between" && ph.After == 7 {
			procs = append(procs, ph.Effects.Processes...)
		}
	}
	var missing []report.Process
	for _, p := range procs {
		if p.Background {
			t.Errorf("background: %+v", p)
		}
		if len(p.Argv) > 0 && p.Argv[0] == "missing-prog" {
			missing = append(missing, p)
		}
	}
	if len(missing) != 1 || missing[0].ExecError != "ENOENT" {
		t.Errorf("missing-prog entries %+v (processes %+v)", missing, procs)
	}
	// The store rewritten whole kept every line.
	var store *report.FileChange
	for i, f := range r.Calls[5].Effects.Files {
		if f.Path == "/workspace/.owner/store.jsonl" {
			store = &r.Calls[5].Effects.Files[i]
		}
	}
	if store == nil || store.Change != report.ChangeModified || !store.LinesKept || store.Appended {
		t.Errorf("the store's rewrite: %+v", store)
	}
}

// TestBackgroundOutlivesTheSettle: a read-only tool's child that is still
// alive at the end of --settle is readonly-background; the same child
// ending within a longer settle is not (its write is the call's all the
// same).
func TestBackgroundOutlivesTheSettle(t *testing.T) {
	dir := t.TempDir()
	probes := writeFile(t, dir, "p.json", `[{"tool":"background"}]`)
	for settle, want := range map[string]bool{"200ms": true, "3s": false} {
		t.Run(settle, func(t *testing.T) {
			_, b, stderr := scanFixture(t, []string{"--settle", settle, "--probes", probes}, "liar")
			r := decode(t, b)
			got := map[string]bool{}
			for _, f := range r.Findings {
				got[f.Rule+" "+f.Tool] = true
			}
			if got["readonly-background background"] != want {
				t.Errorf("readonly-background %v, want %v; findings %+v; %s", !want, want, r.Findings, stderr)
			}
			if !want && !got["readonly-writes background"] {
				t.Errorf("the child's write is not the call's: %+v", r.Findings)
			}
		})
	}
}
