package rules

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// The server's own bookkeeping, as a server that logs every call, keeps
// usage counters and sends telemetry makes it.
var (
	ownLog      = report.FileChange{Path: "/home/sandbox/.fixture/log", Change: report.ChangeModified, Type: "file", Scope: "outside", Area: "home", Appended: true}
	ownLogNew   = report.FileChange{Path: "/home/sandbox/.fixture/log", Change: report.ChangeCreated, Type: "file", Scope: "outside", Area: "home"}
	ownCounters = report.FileChange{Path: "/home/sandbox/.fixture/counters.json", Change: report.ChangeModified, Type: "file", Scope: "outside", Area: "home"}
	ownWS       = report.FileChange{Path: "/workspace/.fixture-log", Change: report.ChangeModified, Type: "file", Scope: "workspace"}
	ownRC       = report.FileChange{Path: "/home/sandbox/.bashrc", Change: report.ChangeModified, Type: "file", Scope: "outside", Area: "home", Appended: true}
	telemetry   = report.NetEvent{Kind: "dns", Host: "telemetry.example.net", Result: "sinkholed"}
)

var (
	ro1  = report.Tool{Name: "ro1", Hints: report.Hints{ReadOnly: b(true), OpenWorld: b(false)}}
	ro2  = report.Tool{Name: "ro2", Hints: report.Hints{ReadOnly: b(true), OpenWorld: b(false)}}
	nd1  = report.Tool{Name: "nd1", Hints: report.Hints{ReadOnly: b(false), Destructive: b(false)}}
	nd2  = report.Tool{Name: "nd2", Hints: report.Hints{ReadOnly: b(false), Destructive: b(false)}}
	free = report.Tool{Name: "free"}
)

// bookkeeping is a call of tool that also does the server's own
// bookkeeping (first: it makes the log), with extra files of its own.
func bookkeeping(tool report.Tool, first bool, extra ...report.FileChange) call {
	log := ownLog
	if first {
		log = ownLogNew
	}
	return call{tool: tool, files: append([]report.FileChange{log, ownCounters}, extra...)}
}

type want struct {
	rule, tool string
	calls      []int
	evidence   []string
	sev        report.Severity
}

func got(fs []report.Finding) []want {
	var out []want
	for _, f := range fs {
		out = append(out, want{f.Rule, f.Tool, f.Calls, f.Evidence, f.Severity})
	}
	slices.SortFunc(out, func(a, b want) int {
		if a.rule != b.rule {
			return cmpStr(a.rule, b.rule)
		}
		return cmpStr(a.tool, b.tool)
	})
	return out
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestTheServersOwnEffectsAreReportedOnce(t *testing.T) {
	r := scenario(
		bookkeeping(ro1, true, tmpWrite),
		bookkeeping(ro2, false),
		bookkeeping(nd1, false),
		bookkeeping(nd2, false),
		bookkeeping(free, false),
		bookkeeping(ro1, false),
	)
	fs := Evaluate(r, Options{})
	both := []string{"changed /home/sandbox/.fixture/log", "changed /home/sandbox/.fixture/counters.json"}
	exp := []want{
		// The server's: once per rule, listing the calls it spans.
		{NondestructiveDeletes, "", []int{3, 4}, []string{"changed /home/sandbox/.fixture/counters.json"}, report.SeverityError},
		{ReadonlyWrites, "", []int{1, 2, 6}, both, report.SeverityError},
		// ro1's own write stays ro1's, without the server's.
		{ReadonlyWrites, "ro1", nil, []string{"created /tmp/x"}, report.SeverityError},
		{WritesOutsideWorkspace, "", []int{1, 2, 3, 4, 5, 6}, both, report.SeverityWarning},
		{WritesOutsideWorkspace, "ro1", nil, []string{"created /tmp/x"}, report.SeverityWarning},
	}
	if g := got(fs); !reflect.DeepEqual(g, exp) {
		t.Errorf("findings:\n got %+v\nwant %+v", g, exp)
	}
	for _, f := range fs {
		if f.Tool == "" && (f.Message == "" || f.Fingerprint != "") {
			t.Errorf("message %q", f.Message)
		}
	}
	if owned := ServerOwned(r); !reflect.DeepEqual(owned, []string{"/home/sandbox/.fixture/counters.json", "/home/sandbox/.fixture/log"}) {
		t.Errorf("ServerOwned = %q", owned)
	}
	// Nothing the server owns makes a call worth replaying: only ro1's own
	// write does.
	if s := Suspects(r, Options{}); !reflect.DeepEqual(s, []int{1}) {
		t.Errorf("suspects %v, want [1]", s)
	}
}

func TestOwnershipThresholds(t *testing.T) {
	folded := func(r *report.Report) bool {
		for _, f := range Evaluate(r, Options{}) {
			if f.Tool == "" && len(f.Calls) > 0 {
				return true
			}
		}
		return false
	}
	plain := func(tool report.Tool) call { return call{tool: tool} }
	for name, tc := range map[string]struct {
		r    *report.Report
		want bool
	}{
		// 3 of 5 calls (60%), 3 tools.
		"60% of calls, 3 tools": {scenario(bookkeeping(ro1, true), bookkeeping(ro2, false), bookkeeping(free, false), plain(nd1), plain(nd2)), true},
		// 3 of 6 (50%).
		"50% of calls": {scenario(bookkeeping(ro1, true), bookkeeping(ro2, false), bookkeeping(free, false), plain(nd1), plain(nd2), plain(ro1)), false},
		// 4 of 5, but only 2 tools.
		"2 tools of 5": {scenario(bookkeeping(ro1, true), bookkeeping(ro2, false), bookkeeping(ro1, false), bookkeeping(ro2, false), plain(free)), false},
		// Only two tools called: every call.
		"two tools, every call":    {scenario(bookkeeping(ro1, true), bookkeeping(ro2, false), bookkeeping(ro1, false)), true},
		"two tools, not every one": {scenario(bookkeeping(ro1, true), bookkeeping(ro2, false), plain(ro1)), false},
		// One tool: the server and the tool cannot be told apart.
		"one tool": {scenario(bookkeeping(ro1, true), bookkeeping(ro1, false), bookkeeping(ro1, false)), false},
	} {
		if got := folded(tc.r); got != tc.want {
			t.Errorf("%s: folded %v, want %v", name, got, tc.want)
		}
	}
	// Calls that got no result did not run the tool and do not count.
	r := scenario(bookkeeping(ro1, true), bookkeeping(ro2, false), bookkeeping(free, false), plain(nd1), plain(nd2))
	r.Calls[3].ErrorKind, r.Calls[4].ErrorKind = "rpc", "rpc"
	r.Calls[0].Effects.Files = r.Calls[0].Effects.Files[:1]
	if !folded(r) {
		t.Errorf("3 of 3 calls that ran: not folded")
	}
}

// TestNeverFolded: changes to the workspace, to shell and credential
// files and to the planted files, and network attempts, stay on each tool
// even when every call makes them.
func TestNeverFolded(t *testing.T) {
	canary := report.FileChange{Path: "/home/sandbox/<project>/notes", Change: report.ChangeModified, Type: "file", Scope: "outside", Area: "home"}
	var calls []call
	for _, tl := range []report.Tool{ro1, ro2, free, ro1} {
		calls = append(calls, call{tool: tl, files: []report.FileChange{ownWS, ownRC, canary}, net: []report.NetEvent{telemetry}})
	}
	r := scenario(calls...)
	if owned := ServerOwned(r); len(owned) != 0 {
		t.Fatalf("ServerOwned = %q", owned)
	}
	for _, f := range Evaluate(r, Options{}) {
		if f.Tool == "" {
			t.Errorf("folded: %+v", f)
		}
	}
	count := map[string]int{}
	for _, f := range Evaluate(r, Options{}) {
		count[f.Rule]++
	}
	if count[ClosedWorldNetwork] != 3 || count[ShellOrCredentialFiles] != 4 || count[ReadonlyWrites] != 3 {
		t.Errorf("per-tool findings %v", count)
	}
}

// TestFoldedFingerprintIsStable: the server-level finding's fingerprint
// names the effect, not the calls: another order of calls, another number
// of calls, or which call made the file first, leave it unchanged.
func TestFoldedFingerprintIsStable(t *testing.T) {
	fp := func(r *report.Report) string {
		for _, f := range Evaluate(r, Options{}) {
			if f.Tool == "" && f.Rule == ReadonlyWrites {
				return report.Fingerprint(f)
			}
		}
		t.Fatal("no server-level readonly-writes")
		return ""
	}
	a := fp(scenario(bookkeeping(ro1, true), bookkeeping(ro2, false), bookkeeping(free, false), bookkeeping(nd1, false)))
	b := fp(scenario(bookkeeping(free, true), bookkeeping(ro2, false), bookkeeping(nd1, false), bookkeeping(ro1, false), bookkeeping(ro2, false), bookkeeping(nd2, false)))
	if a != b {
		t.Errorf("fingerprints differ: %s, %s", a, b)
	}
}

// TestFoldingNeverLowersASeverity: the server-level finding has the
// highest severity of what it folded, and the policy then treats it as it
// would the rule's findings on tools.
func TestFoldingNeverLowersASeverity(t *testing.T) {
	r := scenario(bookkeeping(ro1, true), bookkeeping(ro2, false), bookkeeping(free, false))
	p := Policy{Rules: map[string]Override{WritesOutsideWorkspace: {Severity: report.SeverityCritical}}}
	evaluate(r, p)
	var sev []string
	for _, f := range r.Findings {
		sev = append(sev, f.Rule+" "+f.Tool+" "+f.Severity.String())
	}
	slices.Sort(sev)
	if want := []string{"readonly-writes  error", "writes-outside-workspace  critical"}; !reflect.DeepEqual(sev, want) {
		t.Errorf("findings %q, want %q", sev, want)
	}
}

func TestCallRanges(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{{[]int{3}, "call 3"}, {[]int{1, 2, 3, 5, 7, 8}, "calls 1-3, 5, 7-8"}} {
		if got := callRanges(tc.in); got != tc.want {
			t.Errorf("callRanges(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// withPhase adds a server phase (outside any call) after call after
// with files to r.
func withPhase(r *report.Report, name string, after int, files ...report.FileChange) *report.Report {
	eff := report.NewEffects()
	eff.Files = append(eff.Files, files...)
	r.Phases = append(r.Phases, report.Phase{Name: name, After: after, Effects: eff})
	return r
}

func outside(p string, change report.ChangeKind, typ string) report.FileChange {
	return report.FileChange{Path: p, Change: change, Type: typ, Scope: "outside", Area: "home"}
}

// TestTheServersOwnDirectoryIsOnePlace: a directory the server made as
// it started is its own; what changes in it is counted as one place, so
// that a history it flushes on a timer, which lands in a call now and
// then, is folded with the log it writes on every call. A file there
// that only one tool writes stays that tool's.
func TestTheServersOwnDirectoryIsOnePlace(t *testing.T) {
	const dir = "/home/sandbox/.state"
	log := outside(dir+"/calls.log", report.ChangeModified, "file")
	log.Appended = true
	hist := outside(dir+"/history.jsonl", report.ChangeModified, "file")
	hist.Appended = true
	saved := outside(dir+"/saved.json", report.ChangeCreated, "file")
	r := scenario(
		call{tool: ro1, files: []report.FileChange{log, hist}},
		call{tool: ro2, files: []report.FileChange{log}},
		call{tool: free, files: []report.FileChange{log, saved}},
		call{tool: nd1, files: []report.FileChange{log}},
		call{tool: ro1, files: []report.FileChange{log}},
		call{tool: ro2, files: []report.FileChange{log, hist}},
	)
	withPhase(r, "initialize", 0, outside(dir, report.ChangeCreated, "dir"), outside(dir+"/calls.log", report.ChangeCreated, "file"))
	exp := []want{
		{PhaseWritesOutsideWorkspace, "", nil, []string{"startup: changed " + dir, "startup: changed " + dir + "/calls.log"}, report.SeverityNote},
		{ReadonlyWrites, "", []int{1, 2, 5, 6}, []string{"changed " + dir + "/calls.log", "changed " + dir + "/history.jsonl"}, report.SeverityError},
		{WritesOutsideWorkspace, "", []int{1, 2, 3, 4, 5, 6}, []string{"changed " + dir + "/calls.log", "changed " + dir + "/history.jsonl"}, report.SeverityWarning},
		{WritesOutsideWorkspace, "free", nil, []string{"created " + dir + "/saved.json"}, report.SeverityWarning},
	}
	if g := got(Evaluate(r, Options{})); !reflect.DeepEqual(g, exp) {
		t.Errorf("findings:\n got %+v\nwant %+v", g, exp)
	}
	// Without the directory made outside any call, the history (2 of 6
	// calls) and the saved file (1) are the tools'.
	r.Phases = nil
	var tools []string
	for _, f := range Evaluate(r, Options{}) {
		if f.Tool != "" {
			tools = append(tools, f.Rule+" "+f.Tool+" "+strings.Join(f.Evidence, ","))
		}
	}
	slices.Sort(tools)
	if want := []string{
		"readonly-writes ro1 modified " + dir + "/history.jsonl",
		"readonly-writes ro2 modified " + dir + "/history.jsonl",
		"writes-outside-workspace free created " + dir + "/saved.json",
		"writes-outside-workspace ro1 modified " + dir + "/history.jsonl",
		"writes-outside-workspace ro2 modified " + dir + "/history.jsonl",
	}; !reflect.DeepEqual(tools, want) {
		t.Errorf("tool findings:\n got %q\nwant %q", tools, want)
	}
}

// TestLockAndTemporaryFilesAreTheirFilesFamily: the lock and temporary
// files of an atomic rewrite of an owned file (proper-lockfile's P.lock
// directory, P.PID.TIME.RAND.tmp) are reported as a change of that file,
// whichever call a snapshot caught them in; a file named like one that
// an argument named stays the tool's.
func TestLockAndTemporaryFilesAreTheirFilesFamily(t *testing.T) {
	const counters = "/home/sandbox/.fixture/counters.json"
	lock := outside(counters+".lock", report.ChangeCreated, "dir")
	unlock := outside(counters+".lock", report.ChangeDeleted, "dir")
	tmp := outside(counters+".12.1796100364010.b5496124a03d9.tmp", report.ChangeCreated, "file")
	untmp := outside(counters+".12.1796100364010.b5496124a03d9.tmp", report.ChangeDeleted, "file")
	bak := outside(counters+".bak", report.ChangeCreated, "file")
	r := scenario(
		bookkeeping(ro1, true, lock),
		bookkeeping(ro2, false, unlock, tmp),
		bookkeeping(free, false, untmp),
		call{tool: ro1, files: []report.FileChange{ownLog, lock}},
		bookkeeping(nd1, false, unlock),
		call{tool: ro2, args: `{"backup":"` + counters + `.bak"}`, files: []report.FileChange{bak}},
	)
	// A lock a listing caught removed is the counters' change there too.
	withPhase(r, "tools/list", 1, unlock)
	both := []string{"changed /home/sandbox/.fixture/log", "changed " + counters}
	exp := []want{
		// The counters rewritten on an additive tool's call: not additive.
		{NondestructiveDeletes, "", []int{5}, []string{"changed " + counters}, report.SeverityError},
		{PhaseWritesOutsideWorkspace, "", nil, []string{"tools/list: changed " + counters}, report.SeverityNote},
		{ReadonlyWrites, "", []int{1, 2, 4}, both, report.SeverityError},
		{ReadonlyWrites, "ro2", nil, []string{"created " + counters + ".bak"}, report.SeverityError},
		{WritesOutsideWorkspace, "", []int{1, 2, 3, 4, 5}, both, report.SeverityWarning},
		{WritesOutsideWorkspace, "ro2", nil, []string{"created " + counters + ".bak"}, report.SeverityWarning},
	}
	if g := got(Evaluate(r, Options{})); !reflect.DeepEqual(g, exp) {
		t.Errorf("findings:\n got %+v\nwant %+v", g, exp)
	}
}
