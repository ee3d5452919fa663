package rules

import (
	"fmt"
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
// A file change is the server's own (ServerOwned) when, over the calls
// that ran (those that got a result, an error result included), the same
// path changes in:
//   - at least OwnedShare percent of the calls, and calls of at least
//     OwnedTools different tools, when that many tools were called;
//   - every call, when two tools were called;
//   - never, when one tool was: the server and the tool cannot be told
//     apart.
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

// ServerOwned returns the paths whose changes the server makes whatever
// the tool, sorted.
func ServerOwned(r *report.Report) []string {
	after := afterCalls(r)
	count := map[string]int{}
	tools := map[string]map[string]bool{}
	called := map[string]bool{}
	ran := 0
	ok := map[string]bool{} // ownable, per path: its globs cost
	for _, c := range r.Calls {
		if c.ErrorKind != "" {
			continue
		}
		ran++
		called[c.Tool] = true
		seen := map[string]bool{}
		for _, ef := range append([]report.Effects{c.Effects}, after[c.Seq]...) {
			for _, f := range ef.Files {
				o, known := ok[f.Path]
				if !known {
					o = ownable(f)
					ok[f.Path] = o
				}
				if o && !seen[f.Path] {
					seen[f.Path] = true
					count[f.Path]++
					if tools[f.Path] == nil {
						tools[f.Path] = map[string]bool{}
					}
					tools[f.Path][c.Tool] = true
				}
			}
		}
	}
	var out []string
	for p, n := range count {
		switch {
		case len(called) >= OwnedTools:
			if n*100 >= OwnedShare*ran && len(tools[p]) >= OwnedTools {
				out = append(out, p)
			}
		case len(called) == 2:
			if n == ran {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// ownedSet is ServerOwned as a set.
func ownedSet(r *report.Report) map[string]bool {
	owned := map[string]bool{}
	for _, p := range ServerOwned(r) {
		owned[p] = true
	}
	return owned
}

// fold moves the evidence of the server's own file changes (owned) out
// of the tool findings in out (the calls' findings) into one server-level
// finding per rule, and returns the findings left and added.
func (e *evaluator) fold(owned map[string]bool, out []report.Finding) []report.Finding {
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
			if p == "" || !owned[p] {
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
			verb := "changed "
			if strings.HasPrefix(item, report.ChangeDeleted.String()+" ") {
				verb = "deleted "
			}
			if it := verb + p; !slices.Contains(g.Evidence, it) {
				g.Evidence, g.EvidencePaths = append(g.Evidence, it), append(g.EvidencePaths, p)
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
