package rules

import (
	"reflect"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

var (
	lockMade  = report.FileChange{Path: "/tmp/app.lock", Change: report.ChangeCreated, Type: "file", Scope: "outside", Area: "tmp"}
	lockGone  = report.FileChange{Path: "/tmp/app.lock", Change: report.ChangeDeleted, Type: "file", Scope: "outside", Area: "tmp"}
	wsLock    = report.FileChange{Path: "/workspace/.lock", Change: report.ChangeCreated, Type: "file", Scope: "workspace"}
	wsLockGon = report.FileChange{Path: "/workspace/.lock", Change: report.ChangeDeleted, Type: "file", Scope: "workspace"}
	storeKept = report.FileChange{Path: "/workspace/store.jsonl", Change: report.ChangeModified, Type: "file", Scope: "workspace", LinesKept: true}
)

func findingsOf(fs []report.Finding, rule string) []report.Finding {
	var out []report.Finding
	for _, f := range fs {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

// TestScratchFilesAreNotTheUsersData: a file the server made during the
// scan and removed, which no argument named, is its own scratch (a lock,
// a temporary file): removing it is no destructive update. A file that
// was there before, or one an argument named, is the user's.
func TestScratchFilesAreNotTheUsersData(t *testing.T) {
	nd := report.Tool{Name: "nd", Hints: report.Hints{ReadOnly: b(false), Destructive: b(false)}}
	userFile := report.FileChange{Path: "/tmp/app.lock", Change: report.ChangeDeleted, Type: "file", Scope: "outside", Area: "tmp"}
	for name, tc := range map[string]struct {
		r    *report.Report
		want int // nondestructive-deletes findings
	}{
		"made by one call, removed by the next": {scenario(call{tool: nd, files: []report.FileChange{lockMade}}, call{tool: nd, files: []report.FileChange{lockGone}}), 0},
		"removed by the call after it, in the between phase": {func() *report.Report {
			r := scenario(call{tool: nd, files: []report.FileChange{lockMade}})
			ph := report.Phase{Name: "between", After: 1, Effects: report.NewEffects()}
			ph.Effects.Files = []report.FileChange{lockGone}
			r.Phases = append(r.Phases, ph)
			return r
		}(), 0},
		"made as the server started": {func() *report.Report {
			r := scenario(call{tool: nd, files: []report.FileChange{lockGone}})
			ph := report.Phase{Name: "startup", Effects: report.NewEffects()}
			ph.Effects.Files = []report.FileChange{lockMade}
			r.Phases = append(r.Phases, ph)
			return r
		}(), 0},
		// The report lists phases as they happened: a listing after call
		// 1 caught the file made, the wait for call 2 caught it grown,
		// call 2 removed it.
		"made in the listing after a call, before the between phase after it": {func() *report.Report {
			r := scenario(call{tool: nd}, call{tool: nd, files: []report.FileChange{lockGone}})
			grown := lockMade
			grown.Change, grown.Appended = report.ChangeModified, true
			for _, ph := range []report.Phase{{Name: "between", After: 1}, {Name: "tools/list", After: 1}, {Name: "between", After: 1}} {
				ph.Effects = report.NewEffects()
				switch ph.Name {
				case "tools/list":
					ph.Effects.Files = []report.FileChange{lockMade}
				default:
					if len(r.Phases) > 0 {
						ph.Effects.Files = []report.FileChange{grown}
					}
				}
				r.Phases = append(r.Phases, ph)
			}
			return r
		}(), 0},
		"there before the scan":    {scenario(call{tool: nd, files: []report.FileChange{userFile}}), 1},
		"named by an argument":     {scenario(call{tool: nd, files: []report.FileChange{lockMade}}, call{tool: nd, args: `{"path":"/tmp/app.lock"}`, files: []report.FileChange{lockGone}}), 1},
		"named relatively":         {scenario(call{tool: nd, args: `{"files":["app.lock"]}`, files: []report.FileChange{lockMade}}, call{tool: nd, files: []report.FileChange{lockGone}}), 1},
		"its directory named":      {scenario(call{tool: nd, files: []report.FileChange{lockMade}}, call{tool: nd, args: `{"dir":"file:///tmp"}`, files: []report.FileChange{lockGone}}), 1},
		"deleted, made, deleted":   {scenario(call{tool: nd, files: []report.FileChange{userFile}}, call{tool: nd, files: []report.FileChange{lockMade}}, call{tool: nd, files: []report.FileChange{lockGone}}), 2},
		"lines kept is additive":   {scenario(call{tool: nd, files: []report.FileChange{storeKept}}), 0},
		"a rewrite is destructive": {scenario(call{tool: nd, files: []report.FileChange{rewrote}}), 1},
	} {
		if got := len(findingsOf(Evaluate(tc.r, Options{}), NondestructiveDeletes)); got != tc.want {
			t.Errorf("%s: %d nondestructive-deletes, want %d", name, got, tc.want)
		}
	}
}

// TestScratchUnderCallIsolation: each call's session starts afresh, so
// only the calls of its own session tell that the server made a file.
func TestScratchUnderCallIsolation(t *testing.T) {
	nd := report.Tool{Name: "nd", Hints: report.Hints{ReadOnly: b(false), Destructive: b(false)}}
	r := scenario(call{tool: nd, files: []report.FileChange{lockMade}}, call{tool: nd, files: []report.FileChange{lockGone}})
	r.Sandbox.Isolation = "call"
	if got := len(findingsOf(Evaluate(r, Options{}), NondestructiveDeletes)); got != 1 {
		t.Errorf("another session's file: %d findings, want 1", got)
	}
	r.Calls[1].Source = "repeat" // the same session
	if got := len(findingsOf(Evaluate(r, Options{}), NondestructiveDeletes)); got != 0 {
		t.Errorf("the session's own file: %d findings, want 0", got)
	}
}

// TestScratchOutsideCalls: a workspace lock a call made and the server
// removed as it shut down is not a change to the user's workspace.
func TestScratchOutsideCalls(t *testing.T) {
	free := report.Tool{Name: "free"}
	r := scenario(call{tool: free, files: []report.FileChange{wsLock}})
	ph := report.Phase{Name: "teardown", Effects: report.NewEffects()}
	ph.Effects.Files = []report.FileChange{wsLockGon, del}
	r.Phases = append(r.Phases, ph)
	fs := findingsOf(Evaluate(r, Options{}), PhaseWorkspaceChanges)
	if len(fs) != 1 || !reflect.DeepEqual(fs[0].Evidence, []string{"teardown: deleted /workspace/seed"}) {
		t.Errorf("phase-workspace-changes %+v, want the seed's deletion only", fs)
	}
}

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		arg, path string
		want      bool
	}{
		{"/tmp/app.lock", "/tmp/app.lock", true},
		{"/tmp", "/tmp/app.lock", true},
		{"/tm", "/tmp/app.lock", false},
		{"app.lock", "/tmp/app.lock", true},
		{"./tmp/app.lock", "/tmp/app.lock", true},
		{"pp.lock", "/tmp/app.lock", false},
		{"file:///tmp/app.lock", "/tmp/app.lock", true},
		{"", "/tmp/app.lock", false},
		{".", "/tmp/app.lock", false},
		{"hello world", "/tmp/app.lock", false},
	} {
		if got := names(tc.arg, tc.path); got != tc.want {
			t.Errorf("names(%q, %q) = %v, want %v", tc.arg, tc.path, got, tc.want)
		}
	}
}
