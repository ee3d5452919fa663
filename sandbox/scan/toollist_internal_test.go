package scan

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

func tool(name, desc, ann, schema string) report.Tool {
	t := report.Tool{Name: name, Description: desc, Annotations: json.RawMessage("null"), InputSchema: json.RawMessage(schema)}
	if ann != "" {
		t.Annotations = json.RawMessage(ann)
	}
	return t
}

func fields(cs []report.ToolChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Tool+" "+c.Change+" "+c.Field+" "+c.Old+" -> "+c.New)
	}
	return out
}

// TestDiffTool: each field compared as canonical JSON (key order and
// spacing are no change, numbers kept as written), annotations key by
// key, absent told from false, the annotation title said once.
func TestDiffTool(t *testing.T) {
	a := tool("t", "reads", `{"readOnlyHint":true,"title":"T","destructiveHint":false}`, `{"type":"object","maximum":12345678901234567890}`)
	a.Title = "T"
	same := tool("t", "reads", `{ "destructiveHint": false, "title": "T", "readOnlyHint": true }`, `{"maximum":12345678901234567890, "type":"object"}`)
	same.Title = "T"
	if d := diffTool(a, same); len(d) != 0 {
		t.Errorf("no change expected: %v", fields(d))
	}
	b := tool("t", "reads and uploads", `{"title":"U","destructiveHint":false}`, `{"type":"object","maximum":12345678901234567891}`)
	b.Title = "U"
	got := fields(diffTool(a, b))
	want := []string{
		`t changed description "reads" -> "reads and uploads"`,
		`t changed inputSchema {"maximum":12345678901234567890,"type":"object"} -> {"maximum":12345678901234567891,"type":"object"}`,
		`t changed annotations.readOnlyHint true -> `,
		`t changed annotations.title "T" -> "U"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("diff:\n got %q\nwant %q", got, want)
	}
	// Annotations gone altogether: each hint is absent now.
	c := tool("t", "reads", "", `{"maximum":12345678901234567890,"type":"object"}`)
	c.Title = "T"
	got = fields(diffTool(a, c))
	want = []string{`t changed annotations.destructiveHint false -> `, `t changed annotations.readOnlyHint true -> `, `t changed annotations.title "T" -> `}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("annotations removed:\n got %q\nwant %q", got, want)
	}
}

// TestCutValue: values shown are bounded, on a rune boundary.
func TestCutValue(t *testing.T) {
	long := `"` + strings.Repeat("é", report.MaxChangeValue) + `"`
	s, wasCut := cut(long)
	if !wasCut || len(s) > report.MaxChangeValue+len("…") || !strings.HasSuffix(s, "…") || !strings.HasPrefix(s, `"é`) {
		t.Errorf("cut = %d bytes, %v", len(s), wasCut)
	}
	if s, c := cut(`"short"`); c || s != `"short"` {
		t.Errorf("short value cut: %q", s)
	}
}

func testScanner(maxLate, maxChanges int, first ...report.Tool) (*scanner, *toolWatch) {
	sc := &scanner{opts: Options{MaxLateTools: maxLate}, tl: newToolLists(maxChanges, DefaultMaxRelistBytes)}
	rep := report.New()
	rep.Tools = first
	sc.tl.rep = rep
	sc.tl.first = first
	for _, t := range first {
		sc.tl.planned[t.Name] = true
	}
	return sc, sc.startWatch(new(sandbox.Session)) // a session only by identity here
}

// TestCompareListings: a tool that appears is recorded and planned once,
// one that goes is recorded, one that comes back is compared with what it
// was; past the bounds, late tools are named and changes counted.
func TestCompareListings(t *testing.T) {
	a := tool("a", "A", `{"readOnlyHint":true}`, `{"type":"object"}`)
	sc, w := testScanner(1, 4, a)
	late1 := tool("late1", "L", `{"readOnlyHint":true}`, `{"type":"object"}`)
	late2 := tool("late2", "L", `{"readOnlyHint":true}`, `{"type":"object"}`)
	sc.compare(w, []report.Tool{a, late1, late2}, report.ListingAfterCall, 1)
	if got := sc.admitLate(w); len(got) != 1 || got[0].Name != "late1" {
		t.Fatalf("admitted %+v, want late1 only (bound 1)", got)
	}
	// a goes, then comes back with its hint flipped.
	sc.compare(w, []report.Tool{late1, late2}, report.ListingAfterCall, 2)
	a2 := tool("a", "A", `{"readOnlyHint":false}`, `{"type":"object"}`)
	sc.compare(w, []report.Tool{a2, late1, late2}, report.ListingEnd, 3)
	got := fields(sc.tl.rep.ToolChanges)
	want := []string{"late1 appeared   -> ", "late2 appeared   -> ", "a disappeared   -> ", "a appeared   -> "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes:\n got %q\nwant %q", got, want)
	}
	if sc.tl.omitted != 1 {
		t.Errorf("omitted = %d, want 1 (the flip, past the bound of 4)", sc.tl.omitted)
	}
	if len(w.fresh) != 0 {
		t.Errorf("a known tool coming back is not new: %+v", w.fresh)
	}
	if names := toolNames(sc.tl.rep.Tools); !reflect.DeepEqual(names, []string{"a", "late1"}) {
		t.Errorf("report tools = %v", names)
	}
	sc.tl.noteUnknown([]string{"late2", "ghost", "late1"})
	rep := sc.tl.rep
	sc.finishToolLists(rep)
	if len(rep.ToolListing.Unchecked) != 2 || !strings.Contains(rep.ToolListing.Unchecked[0], "late2") || !strings.Contains(rep.ToolListing.Unchecked[1], "1 change(s)") {
		t.Errorf("unchecked = %q", rep.ToolListing.Unchecked)
	}
	var probeProblems []string
	for _, p := range rep.Problems {
		if p.Kind == "probe" {
			probeProblems = append(probeProblems, p.Message)
		}
	}
	if len(probeProblems) != 1 || !strings.Contains(probeProblems[0], `"ghost"`) {
		t.Errorf("probe problems = %q, want only ghost (late1 was listed, late2 seen past the bound)", probeProblems)
	}
}

// TestFlipRecorded: a flipped hint after a call is one change, with its
// place, old and new values.
func TestFlipRecorded(t *testing.T) {
	a := tool("a", "A", `{"readOnlyHint":true}`, `{"type":"object"}`)
	sc, w := testScanner(5, 100, a)
	sc.compare(w, []report.Tool{tool("a", "A", `{"readOnlyHint":false}`, `{"type":"object"}`)}, report.ListingAfterCall, 4)
	want := []report.ToolChange{{Listing: report.ListingAfterCall, Call: 4, Tool: "a", Change: report.ToolChanged, Field: "annotations.readOnlyHint", Old: "true", New: "false"}}
	if !reflect.DeepEqual(sc.tl.rep.ToolChanges, want) {
		t.Errorf("changes = %+v", sc.tl.rep.ToolChanges)
	}
}

func toolNames(ts []report.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// TestDedupProblems: a problem said at an earlier listing is not said again.
func TestDedupProblems(t *testing.T) {
	ps := []report.Problem{{Kind: "protocol", Message: "x"}, {Kind: "protocol", Message: "x"}, {Kind: "protocol", Message: "y"}, {Kind: "protocol", Message: "y"}}
	got := dedupProblems(ps, 1)
	if len(got) != 2 || got[1].Message != "y" {
		t.Errorf("got %+v", got)
	}
}
