package rules

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Who owns an effect. A server that appends every call to its own log,
// rewrites its usage counters or keeps a cache, whatever the tool, makes
// the same file change on most calls: that is the server's doing, not
// each tool's. Such a change is reported once, as a server-level finding
// of each rule it breaks (no tool, its calls listed in Finding.Calls),
// and the tools' findings keep what they did beyond it.
//
// A file change is the server's own (ServerOwned) when the same place
// (its path, its family or the server's own directory: see ownPlaces)
// changes on most calls of several tools (see serverOwned).
//
// Never folded: changes in the workspace, to the planted files (the
// canaries are in the workspace; the honeytokens are credential files)
// and to shell start-up or credential files, and every network attempt
// and process: those stay on the tool that made them. Folding never
// lowers a severity: the server-level finding has the highest severity
// of what it folded, and the policy treats it as the rule's.

// The thresholds of ServerOwned.
const (
	OwnedShare = 60 // percent of the calls that ran
	OwnedTools = 3  // different tools among them
)

// foldable are the rules whose evidence may be the server's own: those
// judging file changes.
var foldable = []string{ReadonlyWrites, NondestructiveDeletes, IdempotentRepeats, WritesOutsideWorkspace, SchemaViolationEffects}

// ownable reports whether a file change may be the server's own.
func ownable(f report.FileChange) bool {
	return f.Scope != "workspace" && !IsShellOrCredentialFile(f.Path) && !strings.Contains(f.Path, "<")
}

// A change's ownership is counted by its place (see places), not by its
// path alone, because a server's bookkeeping does not land on the same
// path in the same call every time:
//   - a lock or temporary file named after another file the scan saw
//     changed (P.lock, P.12.1796100364010.b5496124.tmp: P's name and a
//     dot-suffix, in P's directory), made during the scan and named by no
//     argument, is counted, and reported, as P (its family): an atomic
//     rewrite of P makes them, under a new name each time, and whether a
//     snapshot catches one is a matter of timing;
//   - a file under a directory the server made outside any call (as it
//     started, while it answered a listing: see serverPhases), outside
//     the workspace, is counted as that directory, the server's own state
//     directory: a history it flushes on a timer lands in whichever call
//     is running then, its log in most. When the directory is the
//     server's, a file in it is, but for one that only one tool's calls
//     changed and nothing outside a call did: that tool's own;
//   - any other path is counted as itself.

// ownership is what serverOwned found: each owned path, with the path
// the evidence names it by (its family's, or its own).
type ownership map[string]string

// places is where each ownable path r changed is counted (see above).
type places struct {
	key    map[string]string // path: the place it is counted as
	family map[string]string // lock or temporary file: the file it is named after
	dir    map[string]bool   // the server's own directories
	phase  map[string]bool   // changed outside any call
}

// ownPlaces computes r's places.
func ownPlaces(r *report.Report) places {
	ok := map[string]bool{} // ownable, per path: its globs cost
	note := func(f report.FileChange) {
		if _, known := ok[f.Path]; !known {
			ok[f.Path] = ownable(f)
		}
	}
	for _, c := range r.Calls {
		for _, f := range c.Effects.Files {
			note(f)
		}
	}
	for _, p := range r.Phases {
		for _, f := range p.Effects.Files {
			note(f)
		}
	}
	pl := places{key: map[string]string{}, family: map[string]string{}, dir: map[string]bool{}, phase: map[string]bool{}}
	dirs := map[string]bool{}
	for _, p := range serverPhases(r) {
		for _, f := range p.Effects.Files {
			pl.phase[f.Path] = true
			if f.Type == "dir" && f.Change == report.ChangeCreated && ok[f.Path] {
				dirs[f.Path] = true
			}
		}
	}
	sc := newScratch(r)
	for p, o := range ok {
		if !o {
			continue
		}
		pl.key[p] = p
		if f := familyOf(p, ok, sc); f != "" {
			pl.family[p] = f
			pl.key[p] = f
		}
		// The outermost of the server's directories above p, p included:
		// as many lookups as p has levels, however many there are.
		for d := p; ; d = path.Dir(d) {
			if dirs[d] {
				pl.key[p] = d
			}
			if d == "/" || d == "." {
				break
			}
		}
		if k := pl.key[p]; dirs[k] {
			pl.dir[k] = true
		}
	}
	return pl
}

// familyOf returns the ownable changed file that p, a lock or temporary
// file the server made, is named after ("" if none): the longest one, and
// that one's own family if it has one.
func familyOf(p string, ok map[string]bool, sc *scratch) string {
	dir, name := path.Split(p)
	for i := len(name) - 1; i > 0; i-- {
		if name[i] != '.' {
			continue
		}
		if q := dir + name[:i]; ok[q] {
			// Asked only of a name that has a family: the arguments are
			// searched once per such file, not once per file changed.
			if !sc.madeByServer(p) {
				return ""
			}
			if f := familyOf(q, ok, sc); f != "" {
				return f
			}
			return q
		}
	}
	return ""
}

// ServerOwned returns the paths whose changes the server makes whatever
// the tool, sorted.
func ServerOwned(r *report.Report) []string {
	owned := serverOwned(r)
	out := make([]string, 0, len(owned))
	for p := range owned {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// serverOwned finds the server's own changes: a place (see ownPlaces)
// is the server's when, over the calls that ran (those that got a
// result, an error result included), something there changes in:
//   - at least OwnedShare percent of the calls, and calls of at least
//     OwnedTools different tools, when that many tools were called;
//   - every call, when two tools were called;
//   - never, when one tool was: the server and the tool cannot be told
//     apart.
func serverOwned(r *report.Report) ownership {
	pl := ownPlaces(r)
	after := afterCalls(r)
	count := map[string]int{}
	tools := map[string]map[string]bool{} // per place, and per family
	called := map[string]bool{}
	ran := 0
	for _, c := range r.Calls {
		if c.ErrorKind != "" {
			continue
		}
		ran++
		called[c.Tool] = true
		seen := map[string]bool{}
		for _, ef := range append([]report.Effects{c.Effects}, after[c.Seq]...) {
			for _, f := range ef.Files {
				k, o := pl.key[f.Path]
				if !o {
					continue
				}
				for _, at := range []string{k, pl.familyOf(f.Path)} {
					if tools[at] == nil {
						tools[at] = map[string]bool{}
					}
					tools[at][c.Tool] = true
				}
				if !seen[k] {
					seen[k] = true
					count[k]++
				}
			}
		}
	}
	ownPlace := map[string]bool{}
	for k, n := range count {
		switch {
		case len(called) >= OwnedTools:
			ownPlace[k] = n*100 >= OwnedShare*ran && len(tools[k]) >= OwnedTools
		case len(called) == 2:
			ownPlace[k] = n == ran
		}
	}
	owned := ownership{}
	for p, k := range pl.key {
		if !ownPlace[k] {
			continue
		}
		f := pl.familyOf(p)
		if pl.dir[k] && len(tools[f]) < 2 && !pl.phase[f] {
			continue // in the server's directory, one tool's own file
		}
		owned[p] = f
	}
	return owned
}

// familyOf is the path p's changes are reported as: its family's, or
// its own.
func (pl places) familyOf(p string) string {
	if f, ok := pl.family[p]; ok {
		return f
	}
	return p
}

// ownedSet is serverOwned, for the rules.
func ownedSet(r *report.Report) ownership { return serverOwned(r) }

// fold moves the evidence of the server's own file changes (owned) out
// of the tool findings in out (the calls' findings) into one server-level
// finding per rule, and returns the findings left and added.
func (e *evaluator) fold(owned ownership, out []report.Finding) []report.Finding {
	if len(owned) == 0 {
		return out
	}
	groups := map[string]*report.Finding{}
	var kept []report.Finding
	for _, f := range out {
		if f.Tool == "" || f.Call == 0 || !slices.Contains(foldable, f.Rule) {
			kept = append(kept, f)
			continue
		}
		var ev, paths []string
		moved := false
		for i, item := range f.Evidence {
			p := ""
			if i < len(f.EvidencePaths) {
				p = f.EvidencePaths[i]
			}
			name, own := owned[p]
			if p == "" || !own {
				ev, paths = append(ev, item), append(paths, p)
				continue
			}
			moved = true
			g := groups[f.Rule]
			if g == nil {
				g = &report.Finding{Rule: f.Rule, Hint: f.Hint, Isolation: e.isolation, Evidence: []string{}, EvidencePaths: []string{}}
				groups[f.Rule] = g
			}
			g.Severity = max(g.Severity, f.Severity)
			// Which call made the file and which changed it after depends
			// on the order of the calls: the server's finding says only
			// that it changed or deleted it.
			// A lock or temporary file is named as the file it is named
			// after: changed, since that file was not deleted.
			verb := "changed "
			if strings.HasPrefix(item, report.ChangeDeleted.String()+" ") && name == p {
				verb = "deleted "
			}
			if it := verb + name; !slices.Contains(g.Evidence, it) {
				g.Evidence, g.EvidencePaths = append(g.Evidence, it), append(g.EvidencePaths, name)
			}
			if !slices.Contains(g.Calls, f.Call) {
				g.Calls = append(g.Calls, f.Call)
			}
		}
		if !moved {
			kept = append(kept, f)
			continue
		}
		left := len(ev)
		if f.Rule == SchemaViolationEffects {
			left-- // the schema rule broken, not an effect
		}
		if left <= 0 {
			continue
		}
		f.Evidence, f.EvidencePaths = ev, paths
		rl, _ := ByID(f.Rule)
		f.Message = message(rl, f)
		kept = append(kept, f)
	}
	for _, rule := range foldable {
		g := groups[rule]
		if g == nil {
			continue
		}
		sort.Ints(g.Calls)
		rl, _ := ByID(rule)
		g.Message = message(rl, *g)
		kept = append(kept, *g)
	}
	return kept
}

// ownedMessage is a folded finding's message.
func ownedMessage(rl Rule, f report.Finding) string {
	text := fmt.Sprintf("the server, on %d calls whatever the tool (%s), made the same %d file change(s): its own doing, reported once rather than on each tool",
		len(f.Calls), callRanges(f.Calls), len(f.Evidence))
	if f.Hint != "" {
		return text + "; those calls' tools declare " + f.Hint + ", and the specification: " + rl.Rationale
	}
	return text + "; " + rl.Rationale
}

// callRanges writes sorted call numbers as "calls 1-4, 6".
func callRanges(calls []int) string {
	var parts []string
	for i := 0; i < len(calls); {
		j := i
		for j+1 < len(calls) && calls[j+1] == calls[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", calls[i], calls[j]))
		} else {
			parts = append(parts, fmt.Sprint(calls[i]))
		}
		i = j + 1
	}
	word := "calls "
	if len(calls) == 1 {
		word = "call "
	}
	return word + strings.Join(parts, ", ")
}
