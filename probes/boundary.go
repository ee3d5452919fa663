package probes

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// The boundary probes ask whether a tool stays inside what it was given:
// a path property gets a traversal out of the canary project to a marker
// planted outside the workspace, a URL property the cloud metadata
// address and a loopback port. The scan records whether the marker came
// back (see BoundaryProbe.Expect); the rules judge the effects.

// boundaryRole is the marker's role among the planted files.
const boundaryRole = "boundary-marker"

// boundaryDepth is how many ".." a traversal climbs: enough to reach /
// from a root up to this deep, whatever the tool joins the value to
// (extra ".." at / stay at /).
const boundaryDepth = 8

// The URLs given to URL-like properties: the link-local cloud metadata
// address, and a loopback port the sinkhole answers (with --network
// sinkhole; otherwise the connect is refused, and recorded all the same).
const (
	LinkLocalAddress = "169.254.169.254"
	LinkLocalURL     = "http://" + LinkLocalAddress + "/latest/meta-data/"
	LoopbackAddress  = "127.0.0.1"
	LoopbackPort     = 8080
)

// LoopbackURL is the loopback URL a URL property is given.
var LoopbackURL = fmt.Sprintf("http://%s:%d/", LoopbackAddress, LoopbackPort)

// Bounds on the boundary calls of one tool.
const (
	maxBoundaryPaths = 2 // path properties probed per tool
	maxBoundaryURLs  = 1 // URL properties probed per tool
)

// BoundaryMarker is what the boundary probes look for outside the
// workspace: a directory in the sandbox user's home holding one file,
// named after the project, whose content holds a drawn secret.
type BoundaryMarker struct {
	// Dir holds File; Dest does not exist (the destination a write is
	// pointed at).
	Dir, File, Dest string
	// Secret is in File's content and nowhere else: a result that holds
	// it read the file.
	Secret string
}

func newBoundaryMarker(project, secret string) BoundaryMarker {
	dir := "/home/sandbox/.local/share/" + project
	return BoundaryMarker{Dir: dir, File: dir + "/" + project + ".notes", Dest: dir + "/" + project + ".saved", Secret: secret}
}

// BoundarySeed is the marker file, planted with the boundary probes.
func (b Bait) BoundarySeed() SeedFile {
	return SeedFile{Role: boundaryRole, Path: b.Boundary.File, Mode: 0o644, Age: b.ages[boundaryRole],
		Content: "last-session: " + b.Boundary.Secret + "\n"}
}

// BoundaryKind is what a boundary probe tries.
type BoundaryKind int

const (
	BoundaryFile BoundaryKind = iota // read a file outside the root
	BoundaryDir                      // list a directory outside the root
	BoundaryDest                     // write a file outside the root
	BoundaryURL                      // fetch a link-local or loopback URL
)

func (k BoundaryKind) String() string {
	return [...]string{"path-file", "path-dir", "path-dest", "url"}[k]
}

// BoundaryProbe is what one boundary call tries and how it is told.
type BoundaryProbe struct {
	Kind     BoundaryKind
	Property string
	// Target is the path the traversal names once resolved (the marker
	// file, its directory, or the destination), or the URL.
	Target string
	// Address and Port are where fetching the URL connects (Port 0: any).
	Address string
	Port    int
	// Expect is what a result holds when the tool followed the path: the
	// marker's secret (a file read) or the marker file's name (a
	// directory listed); empty for destinations and URLs, which are told
	// by their effects.
	Expect string
}

// boundaryProp is a string property of an input schema.
type boundaryProp struct {
	Type        any    `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
	Const       any    `json:"const"`
}

// isString says whether a property takes strings (type "string", or a
// list of types holding it).
func (p boundaryProp) isString() bool {
	switch t := p.Type.(type) {
	case string:
		return t == "string"
	case []any:
		return slices.Contains(t, any("string"))
	}
	return false
}

// urlWords are the whole words that make a name URL-like.
var urlWords = map[string]bool{"url": true, "urls": true, "uri": true, "link": true, "href": true, "endpoint": true,
	"website": true, "homepage": true, "webhook": true}

// isURL says whether a property names a URL: by a whole word of its name,
// or its format.
func isURL(name string, p boundaryProp) bool {
	if p.Format == "uri" || p.Format == "url" || p.Format == "iri" {
		return true
	}
	return slices.ContainsFunc(Words(name), func(w string) bool { return urlWords[w] })
}

// Boundary returns the boundary calls of one tool: from base (the
// arguments of its first call), for up to maxBoundaryPaths path-like
// string properties (in name order) a traversal from the canary
// project, absolute and relative, to the marker's file, directory or
// destination; and for up to maxBoundaryURLs URL-like properties the
// link-local and the loopback URL. A property with an enum or a const
// is left alone: it takes no path of the caller's choosing. The calls'
// Tool is the caller's to set.
func Boundary(schema, base json.RawMessage, c Canary, m BoundaryMarker) []Call {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(schema, &s) != nil || json.Unmarshal(base, &args) != nil {
		return nil
	}
	if args == nil {
		args = map[string]json.RawMessage{}
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Call
	paths, urls := 0, 0
	for _, name := range names {
		var p boundaryProp
		if json.Unmarshal(s.Properties[name], &p) != nil || !p.isString() || p.Enum != nil || p.Const != nil {
			continue
		}
		switch kind := ClassifyPath(name, p.Description, p.Format); {
		case kind != PathNone && paths < maxBoundaryPaths && m.Dir != "":
			paths++
			pr := BoundaryProbe{Kind: BoundaryFile, Property: name, Target: m.File, Expect: m.Secret}
			switch kind {
			case PathDir:
				pr = BoundaryProbe{Kind: BoundaryDir, Property: name, Target: m.Dir, Expect: path.Base(m.File)}
			case PathDest:
				pr = BoundaryProbe{Kind: BoundaryDest, Property: name, Target: m.Dest}
			}
			for _, v := range Traversals(c, pr.Target) {
				out = append(out, boundaryCall(args, pr, v))
			}
		case kind == PathNone && isURL(name, p) && urls < maxBoundaryURLs:
			urls++
			out = append(out,
				boundaryCall(args, BoundaryProbe{Kind: BoundaryURL, Property: name, Target: LinkLocalURL, Address: LinkLocalAddress}, LinkLocalURL),
				boundaryCall(args, BoundaryProbe{Kind: BoundaryURL, Property: name, Target: LoopbackURL, Address: LoopbackAddress, Port: LoopbackPort}, LoopbackURL))
		}
	}
	return out
}

// Traversals are the values that name target from inside the canary
// project by climbing out of it: absolute (the project's path, then
// "..") and relative (".." from wherever the tool starts).
func Traversals(c Canary, target string) []string {
	rel := strings.TrimPrefix(target, "/")
	return []string{c.Dir + strings.Repeat("/..", boundaryDepth) + "/" + rel, strings.Repeat("../", boundaryDepth) + rel}
}

// boundaryCall is base with property set to value.
func boundaryCall(base map[string]json.RawMessage, pr BoundaryProbe, value string) Call {
	args := make(map[string]json.RawMessage, len(base)+1)
	for k, v := range base {
		args[k] = v
	}
	v, _ := json.Marshal(value) // a string always marshals
	args[pr.Property] = v
	b, _ := json.Marshal(args) // raw messages that unmarshalled marshal again
	probe := pr
	return Call{Tool: "", Arguments: b, Source: SourceBoundary, Boundary: &probe}
}

// SourceBoundary is the source of the boundary calls.
const SourceBoundary = "boundary"

// WithBoundary appends, for each tool's first call, its boundary calls
// (see Boundary), tools in plan order.
func WithBoundary(tools []Tool, calls []Call, c Canary, m BoundaryMarker) []Call {
	schema := map[string]json.RawMessage{}
	for _, t := range tools {
		schema[t.Name] = t.InputSchema
	}
	out := slices.Clone(calls)
	done := map[string]bool{}
	for _, call := range calls {
		if done[call.Tool] || call.Source == "repeat" || call.Source == "negative" {
			continue
		}
		done[call.Tool] = true
		for _, b := range Boundary(schema[call.Tool], call.Arguments, c, m) {
			b.Tool = call.Tool
			out = append(out, b)
		}
	}
	return out
}
