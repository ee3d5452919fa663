package probes

import (
	"encoding/json"
	"path"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// TestTraversalsReachTheMarker: the absolute traversal resolves to the
// target, and the relative one does from any root up to boundaryDepth
// deep; joined to a root (as an unguarded tool does), both do from
// roots up to six deep.
func TestTraversalsReachTheMarker(t *testing.T) {
	b := NewBait(7)
	vs := Traversals(b.Canary, b.Boundary.File)
	if len(vs) != 2 {
		t.Fatalf("traversals: %q", vs)
	}
	if got := path.Clean(vs[0]); got != b.Boundary.File {
		t.Errorf("absolute %q resolves to %q, want %q", vs[0], got, b.Boundary.File)
	}
	if !strings.HasPrefix(vs[0], b.Canary.Dir+"/..") || strings.HasPrefix(vs[1], "/") {
		t.Errorf("want one traversal from the project, one relative: %q", vs)
	}
	for _, root := range []string{"/", "/workspace", b.Canary.Dir, b.Canary.Nested, "/a/b/c/d/e/f"} {
		for _, v := range vs {
			if got := path.Join(root, v); got != b.Boundary.File {
				t.Errorf("%q joined to %q is %q, want %q", v, root, got, b.Boundary.File)
			}
		}
	}
	if strings.HasPrefix(b.Boundary.File, "/workspace/") {
		t.Errorf("marker %q is inside the workspace", b.Boundary.File)
	}
}

func boundaryKinds(calls []Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Boundary.Property+" "+c.Boundary.Kind.String()+" "+c.Boundary.Target)
	}
	return out
}

func TestBoundaryProbesByProperty(t *testing.T) {
	b := NewBait(3)
	m := b.Boundary
	schema := json.RawMessage(`{"type":"object","properties":{
		"path":{"type":"string","description":"file to read"},
		"directory":{"type":"string"},
		"destination":{"type":"string","description":"where to write the file"},
		"url":{"type":"string"},
		"webhook":{"type":"string","format":"uri"},
		"fileContent":{"type":"string"},
		"mode":{"type":"string","enum":["a","b"]},
		"count":{"type":"integer"}},
		"required":["path"]}`)
	calls := Boundary(schema, json.RawMessage(`{"path":"x","count":1}`), b.Canary, m)
	got := boundaryKinds(calls)
	// Two path properties (in name order: destination, directory), one
	// URL property (url), twice each.
	want := []string{
		"destination path-dest " + m.Dest, "destination path-dest " + m.Dest,
		"directory path-dir " + m.Dir, "directory path-dir " + m.Dir,
		"url url " + LinkLocalURL, "url url " + LoopbackURL,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("probes:\n%q\nwant\n%q", got, want)
	}
	for _, c := range calls {
		if c.Source != SourceBoundary || c.ExpectError || len(c.Alternatives) > 0 {
			t.Errorf("call %+v: want source boundary, nothing expected, no retries", c)
		}
		var args map[string]any
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			t.Fatal(err)
		}
		if args["path"] != "x" || args["count"] != 1.0 {
			t.Errorf("%s: the other arguments changed: %s", c.Boundary.Property, c.Arguments)
		}
	}
	if calls[2].Boundary.Expect != path.Base(m.File) || calls[0].Boundary.Expect != "" || calls[4].Boundary.Address != LinkLocalAddress ||
		calls[5].Boundary.Port != LoopbackPort {
		t.Errorf("expectations: %+v %+v %+v %+v", calls[0].Boundary, calls[2].Boundary, calls[4].Boundary, calls[5].Boundary)
	}

	file := Boundary(json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`), json.RawMessage(`{}`), b.Canary, m)
	if len(file) != 2 || file[0].Boundary.Kind != BoundaryFile || file[0].Boundary.Expect != m.Secret {
		t.Errorf("file probes: %+v", file)
	}
	// Without the marker (--no-seed), URLs only.
	if got := boundaryKinds(Boundary(schema, json.RawMessage(`{}`), b.Canary, BoundaryMarker{})); len(got) != 2 || !strings.HasPrefix(got[0], "url ") {
		t.Errorf("without a marker: %q", got)
	}
	// Nothing path- or URL-like: no probe.
	if got := Boundary(json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"targetTimezone":{"type":"string"}}}`), json.RawMessage(`{}`), b.Canary, m); len(got) != 0 {
		t.Errorf("probes for no path: %q", boundaryKinds(got))
	}
}

// TestWithBoundaryOncePerTool: the probes follow each tool's first call,
// after the plan, the same every time.
func TestWithBoundaryOncePerTool(t *testing.T) {
	b := NewBait(5)
	tools := []Tool{
		{Name: "read", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
		{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
	}
	plan := []Call{
		{Tool: "read", Arguments: json.RawMessage(`{"path":"a"}`), Source: "synth"},
		{Tool: "read", Arguments: json.RawMessage(`{"path":"a"}`), Source: "repeat"},
		{Tool: "echo", Arguments: json.RawMessage(`{}`), Source: "empty"},
	}
	got := WithBoundary(tools, plan, b.Canary, b.Boundary)
	if len(got) != 5 || !reflect.DeepEqual(got[:3], plan) {
		t.Fatalf("plan: %+v", got)
	}
	for _, c := range got[3:] {
		if c.Tool != "read" || c.Source != SourceBoundary {
			t.Errorf("boundary call %+v", c)
		}
	}
	if again := WithBoundary(tools, plan, b.Canary, b.Boundary); !reflect.DeepEqual(again, got) {
		t.Errorf("not deterministic")
	}
}

// TestBoundaryMarkerRedacted: the marker's secret and name become
// placeholders, and the draw of the earlier bait did not move.
func TestBoundaryMarkerRedacted(t *testing.T) {
	a, b := NewBait(1), NewBait(2)
	red := func(x Bait) string {
		s := x.BoundarySeed()
		return report.RedactString(s.Path+"\n"+s.Content+"\n"+x.Boundary.Dest, x.Placeholders())
	}
	if red(a) != red(b) || !strings.Contains(red(a), "<boundary-marker>") || !strings.Contains(red(a), "<project>.notes") {
		t.Errorf("redacted: %q vs %q", red(a), red(b))
	}
	if a.Boundary.Secret == b.Boundary.Secret || NewBait(1).Boundary != a.Boundary {
		t.Errorf("secrets: want drawn per seed, the same for one seed")
	}
	for _, w := range []string{"canary", "mcpsandbox", "honeytoken", "probe", "boundary"} {
		if s := a.BoundarySeed(); strings.Contains(strings.ToLower(s.Path+s.Content), w) {
			t.Errorf("the marker says %q: %+v", w, s)
		}
	}
}
