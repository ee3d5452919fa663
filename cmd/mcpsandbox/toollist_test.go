package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
)

// findingSet names each finding as "rule severity tool".
func findingSet(r report.Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Rule+" "+f.Severity.String()+" "+f.Tool)
	}
	sort.Strings(out)
	return out
}

// TestToolListHostile: a hint flipped after the first call is an error, a
// description that drifts and a tool that appears late are warnings; the
// late tool is called like the others and its lie caught; the default
// gate fails. The same in both isolation modes.
func TestToolListHostile(t *testing.T) {
	t.Parallel()
	want := []string{
		"readonly-writes error late_writer",
		"tool-appeared-late warning late_writer",
		"tool-definition-changed warning drift_desc",
		"tool-hints-changed error flip_hint",
	}
	for _, iso := range []string{"session", "call"} {
		t.Run(iso, func(t *testing.T) {
			code, b, stderr := scanFixture(t, []string{"--isolation", iso}, "toollist-hostile")
			if code != 1 {
				t.Fatalf("exit %d, want 1 (the default gate fails); %s", code, stderr)
			}
			r := decode(t, b)
			if got := findingSet(r); !reflect.DeepEqual(got, want) {
				t.Errorf("findings:\n got %q\nwant %q", got, want)
			}
			var late []report.Call
			for _, c := range r.Calls {
				if c.Tool == "late_writer" {
					late = append(late, c)
				}
			}
			if len(late) != 1 || late[0].Source != "empty" || !late[0].Late || late[0].ErrorKind != "" || len(late[0].Effects.Files) == 0 {
				t.Errorf("late_writer calls = %+v, want one, planned as the others, that wrote", late)
			}
			for _, f := range r.Findings {
				switch f.Rule {
				case "tool-hints-changed":
					if f.Hint != "readOnlyHint: true" || len(f.Evidence) != 1 || !strings.HasSuffix(f.Evidence[0], "readOnlyHint: true -> false") {
						t.Errorf("flip finding: hint %q evidence %q", f.Hint, f.Evidence)
					}
				case "readonly-writes":
					if f.Call != late[0].Seq {
						t.Errorf("readonly-writes on call %d, want the late tool's call %d", f.Call, late[0].Seq)
					}
				}
			}
			if toolIndex(r, "late_writer") < 0 {
				t.Error("the late tool is not in the report's tools")
			}
			if len(r.ToolListing.Unchecked) != 0 || len(r.Problems) != 0 {
				t.Errorf("unchecked %q problems %+v", r.ToolListing.Unchecked, r.Problems)
			}
			if err := reporttest.Validate(b); err != nil {
				t.Errorf("the report does not validate: %v", err)
			}
		})
	}
}

func toolIndex(r report.Report, name string) int {
	for i, t := range r.Tools {
		if t.Name == name {
			return i
		}
	}
	return -1
}

// TestToolListChangesSameBytes: the list changes are seen at fixed points,
// so two scans give the same report outside timing, though the
// notifications arrive when they arrive.
func TestToolListChangesSameBytes(t *testing.T) {
	t.Parallel()
	var outs [][]byte
	for i := 0; i < 2; i++ {
		_, b, _ := scanFixture(t, nil, "toollist-hostile")
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "timing")
		outs = append(outs, mustJSON(t, m))
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Errorf("two runs differ outside timing:\n%s\n---\n%s", outs[0], outs[1])
	}
}

// TestToolListFlood: ten thousand list_changed notifications cost no
// listing: the tools are listed at the fixed points only (first, after the
// call, at the end), and the count is in timing.
func TestToolListFlood(t *testing.T) {
	t.Parallel()
	code, b, stderr := scanFixture(t, nil, "list_flood")
	if code != 0 {
		t.Fatalf("exit %d, want 0 (nothing changed); %s", code, stderr)
	}
	r := decode(t, b)
	if r.ToolListing.Listings != 3 || len(r.ToolChanges) != 0 || len(r.Findings) != 0 {
		t.Errorf("listings %d changes %+v findings %+v; want 3 listings, nothing else", r.ToolListing.Listings, r.ToolChanges, r.Findings)
	}
	if r.Timing == nil || r.Timing.ToolListChanged == 0 {
		t.Errorf("the notifications are not counted: %+v", r.Timing)
	}
}

// TestToolListBounds: tools that appear past --max-late-tools are named,
// not called, and fail the gate; so does a server that refuses to list
// its tools again.
func TestToolListBounds(t *testing.T) {
	t.Parallel()
	code, b, _ := scanFixture(t, []string{"--max-late-tools", "2"}, "spawn_tools")
	if code != 1 {
		t.Errorf("late tools past the bound: exit %d, want 1", code)
	}
	r := decode(t, b)
	var called []string
	for _, c := range r.Calls {
		called = append(called, c.Tool)
	}
	if !reflect.DeepEqual(called, []string{"spawn_tools", "spawned_01", "spawned_02"}) {
		t.Errorf("calls %q, want the first two late tools called", called)
	}
	if len(r.ToolListing.Unchecked) != 1 || !strings.Contains(r.ToolListing.Unchecked[0], "spawned_03, spawned_04, spawned_05") || !hasRule(r, "tool-list-unchecked") || !hasProblem(r, "tool-list") {
		t.Errorf("bound not reported: unchecked %q findings %q problems %+v", r.ToolListing.Unchecked, findingSet(r), r.Problems)
	}

	code, b, _ = scanFixture(t, nil, "list_refuser")
	if code != 1 {
		t.Errorf("tools/list refused after a call: exit %d, want 1", code)
	}
	r = decode(t, b)
	if len(r.ToolListing.Unchecked) != 1 || !strings.HasPrefix(r.ToolListing.Unchecked[0], "after call 1: tools/list failed") || !hasRule(r, "tool-list-unchecked") || r.ToolListing.Listings != 1 {
		t.Errorf("refusal not reported: listings %d unchecked %q findings %q", r.ToolListing.Listings, r.ToolListing.Unchecked, findingSet(r))
	}
}

// TestToolListStillHonest: a server whose list does not move gets no
// tool list finding, and is listed at every fixed point.
func TestToolListStillHonest(t *testing.T) {
	t.Parallel()
	_, b, _ := scanFixture(t, nil, "honest")
	r := decode(t, b)
	if len(r.ToolChanges) != 0 || len(r.ToolListing.Unchecked) != 0 {
		t.Errorf("changes %+v unchecked %q", r.ToolChanges, r.ToolListing.Unchecked)
	}
	if want := len(r.Calls) + 2; r.ToolListing.Listings != want {
		t.Errorf("listings = %d, want %d (first, one per call, end)", r.ToolListing.Listings, want)
	}
	for _, f := range r.Findings {
		if strings.HasPrefix(f.Rule, "tool-") {
			t.Errorf("a tool list finding on an honest server: %+v", f)
		}
	}
}

func hasRule(r report.Report, rule string) bool {
	for _, f := range r.Findings {
		if f.Rule == rule {
			return true
		}
	}
	return false
}

func hasProblem(r report.Report, kind string) bool {
	for _, p := range r.Problems {
		if p.Kind == kind {
			return true
		}
	}
	return false
}

// TestToolListBlinks: a server that changes its list for one listing
// (the one right after a call) and back is caught: the listing after
// every call is read, and a list read the same as the last one only
// saves decoding it, never a listing.
func TestToolListBlinks(t *testing.T) {
	t.Parallel()
	for _, iso := range []string{"session", "call"} {
		t.Run(iso, func(t *testing.T) {
			code, b, stderr := scanFixture(t, []string{"--isolation", iso}, "blink_hint")
			if code != 1 {
				t.Fatalf("exit %d, want 1 (the default gate fails); %s", code, stderr)
			}
			r := decode(t, b)
			// The hint weakened is an error; the way back a change too.
			if !reflect.DeepEqual(findingSet(r), []string{"tool-definition-changed warning blink_hint", "tool-hints-changed error blink_hint"}) {
				t.Errorf("findings %q", findingSet(r))
			}
			var got []string
			for _, c := range r.ToolChanges {
				got = append(got, c.Listing+" "+c.Field+" "+c.Old+" -> "+c.New)
			}
			want := []string{"after-call annotations.readOnlyHint true -> false", "end annotations.readOnlyHint false -> true"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("changes\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestToolListBig: 10 pages of 10,000 tools, listed after every call,
// finish: past --max-relist the list is not checked again, which the
// report says (a tool-list problem, toolListing.unchecked) and the gate
// fails on, as on the tool bound that cut the first listing.
func TestToolListBig(t *testing.T) {
	t.Parallel()
	// Each listing is 10 pages of 1.2 MB: three listings after calls pass
	// 30 MiB, and the fourth is not made.
	code, b, stderr := scanFixture(t, []string{"--max-tools", "6", "--max-relist", "30", "--probes", writeFile(t, t.TempDir(), "p.json", `[]`)}, "flood", "pages=11", "tools=10000")
	if code != 1 {
		t.Fatalf("exit %d, want 1; %s", code, stderr)
	}
	r := decode(t, b)
	if !r.Complete || len(r.Calls) != 6 || r.ToolListing.Listings != 4 {
		t.Errorf("complete %v, %d calls, %d listings; want complete, 6 calls, 4 listings (first, after calls 1 to 3)", r.Complete, len(r.Calls), r.ToolListing.Listings)
	}
	if len(r.ToolListing.Unchecked) != 1 || !strings.HasPrefix(r.ToolListing.Unchecked[0], "after call 4: the tool list was not checked again in this scan") ||
		!strings.Contains(r.ToolListing.Unchecked[0], "(--max-relist)") || !hasProblem(r, "tool-list") || !hasRule(r, "tool-list-unchecked") || !hasRule(r, "tool-list-truncated") {
		t.Errorf("the bound is not reported: unchecked %q findings %q problems %+v", r.ToolListing.Unchecked, findingSet(r), r.Problems)
	}
	if len(r.ToolChanges) != 0 {
		t.Errorf("changes %+v", r.ToolChanges)
	}
}
