package rules

import (
	"encoding/json"
	"path"
	"sort"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Scratch files. A path the server created during the scan (the first
// change the session saw to it is a creation: it was not in the image
// nor the workspace) and that no argument of any call named is the
// server's own scratch (a lock, a temporary file): removing it destroys
// none of the user's data, so its deletion is no evidence of a
// destructive update (nondestructive-deletes, phase-workspace-changes).
// Its creation is judged as any write.

// stretch is one call's or phase's effects, in the order they happened.
type stretch struct {
	after int // the call's seq, or for a phase the call it follows
	rank  int // within one place: the call, then its phases in report order
	eff   report.Effects
}

// beforeCalls are the phases that, with no call before them (After 0),
// happen before the first call; the others with After 0 (before-reads,
// teardown) happen after the last.
var beforeCalls = map[string]bool{"startup": true, "initialize": true, "tools/list": true, "between": true}

// timeline is r's calls and phases in the order they happened, for a
// scan in one session. The report lists phases as they happened: after
// a call, its settling ("between"), the listing after it ("tools/list")
// and the wait for the next call ("between" again) keep that order.
func timeline(r *report.Report) []stretch {
	var out []stretch
	last := 0
	for _, c := range r.Calls {
		out = append(out, stretch{after: c.Seq, eff: c.Effects})
		last = max(last, c.Seq)
	}
	for i, p := range r.Phases {
		after := p.After
		if after == 0 && !beforeCalls[p.Name] {
			after = last + 1
		}
		out = append(out, stretch{after: after, rank: i + 1, eff: p.Effects})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].after != out[j].after {
			return out[i].after < out[j].after
		}
		return out[i].rank < out[j].rank
	})
	return out
}

// scratch knows which paths are the server's own scratch.
type scratch struct {
	// named holds the strings of every call's arguments.
	named []string
	// first is, per path, the first change the scan saw to it (session
	// isolation; with a session per call, each call's session is read
	// from r when asked).
	first map[string]firstChange
	r     *report.Report
}

type firstChange struct{ created bool }

func newScratch(r *report.Report) *scratch {
	s := &scratch{first: map[string]firstChange{}, r: r}
	for _, c := range r.Calls {
		s.named = append(s.named, argStrings(c.Arguments)...)
	}
	for _, st := range timeline(r) {
		for _, f := range st.eff.Files {
			if _, ok := s.first[f.Path]; !ok {
				s.first[f.Path] = firstChange{created: f.Change == report.ChangeCreated}
			}
		}
	}
	return s
}

// ownInCall reports whether a deletion of p in effs[j] of the i-th call
// removes the server's own scratch.
func (s *scratch) ownInCall(i, j int, effs []report.Effects, p string) bool {
	if s == nil || s.isNamed(p) {
		return false
	}
	if s.r.Sandbox.Isolation == "call" {
		// Each call's session starts afresh: only its own calls tell.
		for _, k := range report.Candidates(s.r, i) {
			for _, c := range s.r.Calls {
				if c.Seq != k {
					continue
				}
				list := []report.Effects{c.Effects}
				if c.Seq == s.r.Calls[i].Seq {
					list = effs[:j+1]
				}
				for _, ef := range list {
					for _, f := range ef.Files {
						if f.Path == p {
							return f.Change == report.ChangeCreated
						}
					}
				}
			}
		}
		return false
	}
	fc, ok := s.first[p]
	return ok && fc.created
}

// ownInPhase reports whether a deletion of p in a server phase removes
// the server's own scratch (session isolation only: with a session per
// call, which session a phase belongs to is not in the report).
func (s *scratch) ownInPhase(p string) bool {
	if s == nil || s.isNamed(p) || s.r.Sandbox.Isolation == "call" {
		return false
	}
	fc, ok := s.first[p]
	return ok && fc.created
}

// madeByServer reports whether p is a path the scan saw made (its first
// change a creation) that no argument named.
func (s *scratch) madeByServer(p string) bool {
	fc, ok := s.first[p]
	return ok && fc.created && !s.isNamed(p)
}

// isNamed reports whether an argument of any call names p: the path
// itself or a directory above it, absolute, relative (the end of p) or
// as a file: URL.
func (s *scratch) isNamed(p string) bool {
	for _, a := range s.named {
		if names(a, p) {
			return true
		}
	}
	return false
}

// names reports whether the argument string a names path p.
func names(a, p string) bool {
	a = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(a), "file://"))
	if a == "" {
		return false
	}
	a = path.Clean(a)
	if strings.HasPrefix(a, "/") {
		return p == a || strings.HasPrefix(p, strings.TrimSuffix(a, "/")+"/")
	}
	if a == "." || a == ".." || strings.HasPrefix(a, "../") {
		a = strings.TrimLeft(a, "./")
		if a == "" {
			return false
		}
	}
	return strings.HasSuffix(p, "/"+a) || strings.Contains(p, "/"+a+"/")
}

// argStrings are the strings in a call's arguments, keys and values, at
// any depth.
func argStrings(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return []string{string(raw)}
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
