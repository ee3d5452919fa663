package depguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's path.
const module = "github.com/mcpsandbox/mcpsandbox"

// boundary forbids the packages matched by patterns, but those in except,
// to depend, directly or not, on any package with one of the forbidden
// prefixes but those with an allowed one (a prefix matches the package
// itself and those below it).
type boundary struct {
	patterns  []string
	except    []string
	forbidden []string
	allowed   []string
}

func boundaries() []boundary {
	return []boundary{
		{patterns: []string{"./overlay/...", "./probes/..."}, forbidden: []string{
			"github.com/docker/", "github.com/moby/", "github.com/modelcontextprotocol/go-sdk", module + "/sandbox",
		}},
		{patterns: []string{"./ci/report/..."}, forbidden: []string{module + "/"}, allowed: []string{module + "/ci/report"}},
		// Observation and judgement stay apart: what runs servers and
		// clients imports of ci/ only the report types. The proxy
		// (`run`) is the exception: its job is to act on the verdict at
		// the boundary, while the client waits.
		{patterns: []string{"./sandbox/..."}, except: []string{module + "/sandbox/proxy"},
			forbidden: []string{module + "/ci/"}, allowed: []string{module + "/ci/report"}},
	}
}

// String is the rule as docs/architecture.md states it, the module's
// packages by their paths in it.
func (b boundary) String() string {
	rel := func(ps []string) string {
		var out []string
		for _, p := range ps {
			switch {
			case p == module+"/":
				out = append(out, "this module")
			case strings.HasPrefix(p, module+"/"):
				out = append(out, "./"+strings.TrimPrefix(p, module+"/"))
			default:
				out = append(out, p)
			}
		}
		return strings.Join(out, ", ")
	}
	s := strings.Join(b.patterns, " ")
	if len(b.except) > 0 {
		s += " (but " + rel(b.except) + ")"
	}
	s += " import nothing of " + rel(b.forbidden)
	if len(b.allowed) > 0 {
		s += " but " + rel(b.allowed)
	}
	return s
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	DepOnly    bool
}

func TestImportBoundaries(t *testing.T) {
	for _, b := range boundaries() {
		graph, roots := goList(t, b.patterns)
		if len(roots) == 0 {
			t.Fatalf("%v matched no package", b.patterns)
		}
		for _, root := range roots {
			if slices.Contains(b.except, root) {
				continue
			}
			for _, chain := range violations(graph, root, b.forbidden, b.allowed) {
				t.Errorf("%s must not import %s: %s", root, chain[len(chain)-1], strings.Join(chain, " -> "))
			}
		}
	}
}

// goList returns the import graph of the packages matched by patterns and
// their dependencies, and the matched packages.
func goList(t *testing.T, patterns []string) (map[string][]string, []string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Imports,DepOnly"}, patterns...)...)
	cmd.Dir = "../.." // the module root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", patterns, err, stderr.String())
	}
	graph := map[string][]string{}
	var roots []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		graph[p.ImportPath] = p.Imports
		if !p.DepOnly {
			roots = append(roots, p.ImportPath)
		}
	}
	return graph, roots
}

// violations returns, for each forbidden package root reaches, the
// shortest import chain from root to it.
func violations(graph map[string][]string, root string, forbidden, allowed []string) [][]string {
	var out [][]string
	from := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != root && under(p, forbidden) && !under(p, allowed) {
			chain := []string{p}
			for q := from[p]; q != ""; q = from[q] {
				chain = append([]string{q}, chain...)
			}
			out = append(out, chain)
			continue // one chain per forbidden package is enough
		}
		for _, d := range graph[p] {
			if _, seen := from[d]; !seen {
				from[d] = p
				queue = append(queue, d)
			}
		}
	}
	return out
}

// under says whether p is one of prefixes or below one.
func under(p string, prefixes []string) bool {
	for _, f := range prefixes {
		if p == strings.TrimSuffix(f, "/") || strings.HasPrefix(p, strings.TrimSuffix(f, "/")+"/") {
			return true
		}
	}
	return false
}

// TestViolationsNamesTheChain: the check finds a forbidden package behind
// an allowed one and says how it is reached.
func TestViolationsNamesTheChain(t *testing.T) {
	graph := map[string][]string{
		"m/overlay":   {"fmt", "m/ci/report"},
		"m/ci/report": {"m/sandbox/label"},
		"m/sandbox":   {"m/overlay"},
	}
	got := violations(graph, "m/overlay", []string{"m/sandbox"}, nil)
	if len(got) != 1 || strings.Join(got[0], " -> ") != "m/overlay -> m/ci/report -> m/sandbox/label" {
		t.Errorf("violations = %q", got)
	}
	if got := violations(graph, "m/overlay", []string{"m/sand"}, nil); len(got) != 0 {
		t.Errorf("a prefix matched inside a path element: %q", got)
	}
	// An allowed package under a forbidden prefix is passed, and so is what
	// it imports only if that is allowed too.
	graph = map[string][]string{
		"m/sandbox/x":    {"m/ci/report", "m/ci/verdict"},
		"m/ci/report":    {},
		"m/ci/verdict":   {"m/ci/report"},
		"m/ci/report/cr": {"m/ci/rules"},
	}
	got = violations(graph, "m/sandbox/x", []string{"m/ci/"}, []string{"m/ci/report"})
	if len(got) != 1 || strings.Join(got[0], " -> ") != "m/sandbox/x -> m/ci/verdict" {
		t.Errorf("violations = %q", got)
	}
}
