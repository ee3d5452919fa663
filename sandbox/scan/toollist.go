package scan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// The tool list is watched at fixed points only: the first listing,
// right after every call the server answered, and at the end of each
// session (before teardown). Each listing is compared with the one
// before it in the same session. notifications/tools/list_changed is
// counted and triggers nothing: every fixed point lists anyway, and
// listing when a notification happens to arrive would make the report
// depend on timing (go-sdk servers send it 10 ms after the change, so it
// lands before or after the next call by chance). A flood of them costs
// the runner reading them, never a listing.
//
// A tool that appears is planned as the first-listed ones were (probes,
// synthesized arguments, repeats, negatives) and called after the calls
// already planned, in the session where it appeared (with --isolation
// call a fresh container would not list it), up to MaxLateTools per
// scan.

// Defaults of the bounds on what a changing tool list can make the scan
// do and record.
const (
	defaultMaxLateTools   = 50
	defaultMaxToolChanges = 1000
	// DefaultMaxRelistBytes bounds the bytes the listings after calls and
	// at sessions' ends read per scan. A listing that did not change
	// costs its bytes only (read, bounded, hashed: about 100 ns a byte on
	// two loaded cores), but it comes after every call: 10 pages of
	// 10,000 tools (12 MB) after each of the 2,000 calls the tool bound
	// lets through is 24 GB, near an hour of reading, where 1 GiB is
	// about 90 such listings (2 minutes); a server of 1,000 tools of 500
	// bytes is listed 2,000 times within it.
	DefaultMaxRelistBytes = 1 << 30
)

// toolLists is what a scan's sessions share about the tool list.
type toolLists struct {
	rep *report.Report // the scan's report
	// first is the first listing: where every session starts from.
	first []report.Tool
	// planned names the tools planned: the first listing and the late
	// tools called.
	planned map[string]bool
	late    int
	// over names, in order, the late tools past MaxLateTools.
	over    []string
	overSet map[string]bool
	// omitted counts changes past MaxToolChanges.
	omitted int
	// unknown names, in order, the tools probe steps name that were not
	// listed when planned; those never listed become problems at the end.
	unknown    []string
	unknownSet map[string]bool
	// maxChanges bounds the changes listed in the report.
	maxChanges int
	// relistBytes counts the bytes the listings after calls and at
	// sessions' ends read, within maxRelist; relistOver is set once past
	// it (no session lists again).
	relistBytes, maxRelist int64
	relistOver             bool
	// notifications counts list_changed notifications over all sessions.
	notifications int64
	watch         *toolWatch // the open session's
}

func newToolLists(maxChanges int, maxRelist int64) *toolLists {
	return &toolLists{maxChanges: maxChanges, maxRelist: maxRelist, planned: map[string]bool{}, overSet: map[string]bool{}, unknownSet: map[string]bool{}}
}

// toolWatch follows one session's tool list.
type toolWatch struct {
	s *sandbox.Session
	// last is the definition last seen of every tool, kept when the tool
	// goes so that one coming back is compared with what it was; current
	// names the tools of the last listing, in its order.
	last    map[string]report.Tool
	current []string
	// fresh are the tools new to this session, in order of appearance,
	// not yet planned.
	fresh []report.Tool
	// stopped is set once a listing failed: the session lists no more.
	stopped bool
	// notes is the notification count at the last listing (for the log).
	notes int64
}

// watchFirst starts watching from the scan's first listing (rep.Tools,
// listed in s).
func (sc *scanner) watchFirst(s *sandbox.Session, rep *report.Report) {
	tl := sc.tl
	tl.rep = rep
	tl.first = append([]report.Tool(nil), rep.Tools...)
	for _, t := range rep.Tools {
		tl.planned[t.Name] = true
	}
	tl.rep.ToolListing.Listings++
	sc.startWatch(s)
}

// startWatch watches s's tool list from the first listing.
func (sc *scanner) startWatch(s *sandbox.Session) *toolWatch {
	w := &toolWatch{s: s, last: map[string]report.Tool{}}
	for _, t := range sc.tl.first {
		w.last[t.Name] = t
		w.current = append(w.current, t.Name)
	}
	sc.tl.watch = w
	return w
}

// watchSession starts watching a call session whose first listing,
// tools, is compared with the scan's first.
func (sc *scanner) watchSession(s *sandbox.Session, tools []report.Tool, call int) {
	w := sc.startWatch(s)
	sc.tl.rep.ToolListing.Listings++
	sc.compare(w, tools, report.ListingSessionStart, call)
}

// stopWatch ends the open session's watch.
func (sc *scanner) stopWatch(s *sandbox.Session) {
	sc.tl.notifications += s.ToolListChanged()
	sc.tl.watch = nil
}

// relist lists the tools again after call c, if the server answered it.
func (sc *scanner) relist(s *sandbox.Session, c report.Call) {
	switch c.ErrorKind {
	case "", "rpc", "client":
		sc.listAgain(s, report.ListingAfterCall, c.Seq)
	}
}

// endListing is the session's last listing, before teardown. Tools it
// finds new are recorded but not called: no call follows it.
func (sc *scanner) endListing(s *sandbox.Session) {
	last := 0
	if n := len(s.Report().Calls); n > 0 {
		last = s.Report().Calls[n-1].Seq
	}
	sc.listAgain(s, report.ListingEnd, last)
	w := sc.tl.watch
	if w == nil {
		return
	}
	for _, t := range sc.admitLate(w) {
		s.Report().NotCalled = append(s.Report().NotCalled, report.NotCalled{Tool: t.Name, Reason: "appeared at the end of the session, after every call"})
	}
}

// listAgain lists the tools in the watched session and records what
// changed since its last listing.
func (sc *scanner) listAgain(s *sandbox.Session, where string, call int) {
	w := sc.tl.watch
	if w == nil || w.s != s || w.stopped || sc.ctx.Err() != nil {
		return
	}
	if sc.tl.relistBytes >= sc.tl.maxRelist {
		w.stopped = true
		if !sc.tl.relistOver {
			sc.tl.relistOver = true
			msg := fmt.Sprintf("%s: the tool list was not checked again in this scan: the listings after calls read %d bytes, past the bound of %d bytes (--max-relist)",
				report.ListingWhere(where, call), sc.tl.relistBytes, sc.tl.maxRelist)
			sc.tl.rep.ToolListing.Unchecked = append(sc.tl.rep.ToolListing.Unchecked, msg)
			s.Problem("tool-list", call, "%s", msg)
		}
		return
	}
	// What the server does while it answers is its own, a "tools/list"
	// phase after the call: not the call's, whose "between" phase is
	// closed first.
	s.Phase(sc.ctx, "between", call)
	before := len(s.Report().Problems)
	l, err := s.RelistTools(sc.ctx)
	sc.tl.relistBytes += int64(l.Bytes)
	s.Report().Problems = dedupProblems(s.Report().Problems, before)
	if eff := s.Mark(sc.ctx, false, call); !eff.Empty() {
		s.Report().Phases = append(s.Report().Phases, report.Phase{Name: "tools/list", After: call, Effects: eff})
	}
	if err != nil {
		if sc.ctx.Err() != nil {
			return // the scan reports the run's end
		}
		w.stopped = true
		msg := fmt.Sprintf("%s: tools/list failed (%s); the tool list was not checked again in this session", report.ListingWhere(where, call), report.OneLine(err.Error()))
		sc.tl.rep.ToolListing.Unchecked = append(sc.tl.rep.ToolListing.Unchecked, msg)
		s.Problem("tool-list", call, "%s", msg)
		return
	}
	sc.tl.rep.ToolListing.Listings++
	if n := s.ToolListChanged(); n != w.notes {
		sc.logf("%s: the server sent %d notifications/tools/list_changed since the last listing", report.ListingWhere(where, call), n-w.notes)
		w.notes = n
	}
	if l.Same {
		// Byte for byte the session's last listing, which w's last compare
		// read (every listing of the session is compared): nothing changed.
		return
	}
	sc.compare(w, l.Tools, where, call)
}

// dedupProblems drops the problems from index from on whose message an
// earlier one already has: a tool that does not decode is said once, not
// at every listing.
func dedupProblems(ps []report.Problem, from int) []report.Problem {
	seen := map[string]bool{}
	for _, p := range ps[:from] {
		seen[p.Kind+"\x00"+p.Message] = true
	}
	out := ps[:from]
	for _, p := range ps[from:] {
		if k := p.Kind + "\x00" + p.Message; !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

// compare records what differs between w's last listing and tools.
func (sc *scanner) compare(w *toolWatch, tools []report.Tool, where string, call int) {
	rec := func(c report.ToolChange) {
		c.Listing, c.Call = where, call
		sc.tl.record(c)
	}
	now := map[string]bool{}
	var names []string
	cur := map[string]bool{}
	for _, n := range w.current {
		cur[n] = true
	}
	for _, t := range tools {
		now[t.Name] = true
		names = append(names, t.Name)
		old, known := w.last[t.Name]
		if !cur[t.Name] {
			rec(report.ToolChange{Tool: t.Name, Change: report.ToolAppeared})
			if !known {
				w.fresh = append(w.fresh, t)
			}
		}
		if known {
			for _, c := range diffTool(old, t) {
				rec(c)
			}
		}
		w.last[t.Name] = t
	}
	for _, n := range w.current {
		if !now[n] {
			rec(report.ToolChange{Tool: n, Change: report.ToolDisappeared})
		}
	}
	w.current = names
}

// record adds a change to the report, within MaxToolChanges.
func (tl *toolLists) record(c report.ToolChange) {
	if len(tl.rep.ToolChanges) >= tl.maxChanges {
		tl.omitted++
		return
	}
	tl.rep.ToolChanges = append(tl.rep.ToolChanges, c)
}

// lateCalls plans the calls of the tools new to the watched session.
func (sc *scanner) lateCalls(s *sandbox.Session) []probes.Call {
	w := sc.tl.watch
	if w == nil || w.s != s {
		return nil
	}
	tools := sc.admitLate(w)
	if len(tools) == 0 {
		return nil
	}
	sc.logf("%d tool(s) appeared during the session; calling them", len(tools))
	return sc.planTools(s.Report(), tools)
}

// lateCallsPending says whether tools new to s will be called after the
// calls planned so far: the linger window then waits for the last of
// those.
func (sc *scanner) lateCallsPending(s *sandbox.Session) bool {
	w := sc.tl.watch
	if w == nil || w.s != s {
		return false
	}
	for _, t := range w.fresh {
		if !sc.tl.planned[t.Name] && sc.tl.late < sc.opts.MaxLateTools {
			return true
		}
	}
	return false
}

// admitLate takes w's new tools: those not planned yet join the report's
// tools, within MaxLateTools per scan; those past it are named at the
// end.
func (sc *scanner) admitLate(w *toolWatch) []report.Tool {
	tl := sc.tl
	var out []report.Tool
	for _, t := range w.fresh {
		if tl.planned[t.Name] {
			continue // planned in an earlier session (--isolation call)
		}
		if tl.late >= sc.opts.MaxLateTools {
			if !tl.overSet[t.Name] {
				tl.overSet[t.Name] = true
				tl.over = append(tl.over, t.Name)
			}
			continue
		}
		tl.planned[t.Name] = true
		tl.late++
		tl.rep.Tools = append(tl.rep.Tools, t)
		out = append(out, t)
	}
	w.fresh = nil
	return out
}

// callAll makes the planned calls, then the calls of the tools that
// appeared while they ran, until no listing finds a new one.
func (sc *scanner) callAll(s *sandbox.Session, plan []probes.Call, first int) error {
	for late := false; len(plan) > 0; late = true {
		n := len(s.Report().Calls)
		err := sc.runCalls(s, plan, first)
		for i := n; late && i < len(s.Report().Calls); i++ {
			s.Report().Calls[i].Late = true
		}
		if err != nil {
			return err
		}
		first += len(s.Report().Calls) - n // retries make more calls than planned
		plan = sc.lateCalls(s)
	}
	return nil
}

// noteUnknown remembers probe steps that name tools not listed (yet).
func (tl *toolLists) noteUnknown(names []string) {
	for _, n := range names {
		if !tl.unknownSet[n] {
			tl.unknownSet[n] = true
			tl.unknown = append(tl.unknown, n)
		}
	}
}

// finish records, once the sessions are over, the bounds hit, the probe
// steps that named tools never listed, and the notification count.
func (sc *scanner) finishToolLists(rep *report.Report) {
	tl := sc.tl
	listed := map[string]bool{}
	for _, t := range rep.Tools {
		listed[t.Name] = true
	}
	for _, u := range tl.unknown {
		if !listed[u] && !tl.overSet[u] {
			rep.Problems = append(rep.Problems, report.Problem{Kind: "probe", Message: fmt.Sprintf("the probes name tool %q, which the server does not list", u)})
		}
	}
	unchecked := func(msg string) {
		rep.ToolListing.Unchecked = append(rep.ToolListing.Unchecked, msg)
		rep.Problems = append(rep.Problems, report.Problem{Kind: "tool-list", Message: msg})
	}
	if len(tl.over) > 0 {
		names := tl.over
		more := ""
		if len(names) > sandbox.MaxNamed {
			names, more = names[:sandbox.MaxNamed], fmt.Sprintf(" and %d more", len(tl.over)-sandbox.MaxNamed)
		}
		unchecked(fmt.Sprintf("%d tool(s) appeared during the session past the bound of %d late tools (--max-late-tools) and were not called: %s%s",
			len(tl.over), sc.opts.MaxLateTools, strings.Join(names, ", "), more))
	}
	if tl.omitted > 0 {
		unchecked(fmt.Sprintf("%d change(s) to the tool list past the bound of %d were counted, not listed, and not judged", tl.omitted, tl.maxChanges))
	}
	if !sc.opts.NoSeed {
		// What call sessions added to the scan's report after the first
		// session's redaction, the bait as placeholders like the rest.
		part := report.Report{ToolChanges: rep.ToolChanges, ToolListing: rep.ToolListing}
		if tl.rep == rep {
			part.Tools = rep.Tools[min(len(tl.first), len(rep.Tools)):]
		}
		part.Redact(sc.bait.Placeholders())
	}
	if rep.Timing == nil {
		rep.Timing = &report.Timing{}
	}
	rep.Timing.ToolListChanged = int(tl.notifications)
}

// diffTool lists what changed between two definitions of one tool, field
// by field; annotations key by key when both are objects (or absent).
func diffTool(a, b report.Tool) []report.ToolChange {
	var out []report.ToolChange
	add := func(field, old, new string, absentOld, absentNew bool) {
		if old == new && absentOld == absentNew {
			return
		}
		c := report.ToolChange{Tool: b.Name, Change: report.ToolChanged, Field: field}
		var cutOld, cutNew bool
		if !absentOld {
			c.Old, cutOld = cut(old)
		}
		if !absentNew {
			c.New, cutNew = cut(new)
		}
		c.Truncated = cutOld || cutNew
		out = append(out, c)
	}
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	annA, okA := objectFields(a.Annotations)
	annB, okB := objectFields(b.Annotations)
	// The report's title falls back to annotations.title; a change there
	// is said once, as the annotation's.
	if a.Title != b.Title && !(okA && okB && annA["title"] != annB["title"]) {
		add("title", str(a.Title), str(b.Title), false, false)
	}
	add("description", str(a.Description), str(b.Description), false, false)
	for _, f := range []struct {
		name string
		a, b json.RawMessage
	}{{"inputSchema", a.InputSchema, b.InputSchema}, {"outputSchema", a.OutputSchema, b.OutputSchema}} {
		ca, cb := canonical(f.a), canonical(f.b)
		add(f.name, ca, cb, absent(ca), absent(cb))
	}
	if okA && okB {
		for _, k := range unionKeys(annA, annB) {
			va, inA := annA[k]
			vb, inB := annB[k]
			add("annotations."+k, va, vb, !inA, !inB)
		}
	} else {
		ca, cb := canonical(a.Annotations), canonical(b.Annotations)
		add("annotations", ca, cb, absent(ca), absent(cb))
	}
	return out
}

// canonical re-encodes JSON with sorted keys, no spaces and numbers as
// written; "" for absent.
func canonical(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

// absent says whether a canonical tool field is not there: the report
// has null for a schema or annotations the server left out.
func absent(c string) bool { return c == "" || c == "null" }

// objectFields splits a JSON object into canonical values by key; absent
// or null is the empty object. ok is false for anything else.
func objectFields(raw json.RawMessage) (map[string]string, bool) {
	if absent(canonical(raw)) {
		return map[string]string{}, true
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = canonical(v)
	}
	return out, true
}

func unionKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// cut bounds a value shown in the report at report.MaxChangeValue bytes.
func cut(s string) (string, bool) {
	if len(s) <= report.MaxChangeValue {
		return s, false
	}
	n := report.MaxChangeValue
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…", true
}
