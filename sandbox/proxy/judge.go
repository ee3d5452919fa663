package proxy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// How run judges, as scan does, every stretch of the session: a call
// (or calls that overlapped), and what the server did outside calls (its
// startup, between calls, its teardown). run replays nothing, so an
// effect is pinned on one tool only when nothing else can explain it;
// otherwise every tool that could have caused it and whose claim it
// breaks (its candidates) has that hint corrected toward the safe side,
// and none is refused on that evidence alone. See docs/run.md, "Who is
// blamed".

// emitFn writes a record and its human line.
type emitFn func(RunRecord, string)

// calledTool is a tool the client called, as last called: the candidates
// of what happens later are taken from these.
type calledTool struct {
	Tool      string
	Seq       int
	Arguments []byte
	Declared  *report.Tool // as listed when it was called
}

// noteCalled adds the group's tools to those called (the last call of
// each kept), once its effects are judged.
func (r *relay) noteCalled(group []*callInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range group {
		i := slices.IndexFunc(r.called, func(t calledTool) bool { return t.Tool == c.Tool })
		ct := calledTool{Tool: c.Tool, Seq: c.Seq, Arguments: c.Arguments, Declared: c.Declared}
		switch {
		case i >= 0:
			r.called[i] = ct
		case len(r.called) < maxBookTools:
			r.called = append(r.called, ct)
		}
	}
	r.last = r.last[:0]
	for _, c := range group {
		if !slices.ContainsFunc(r.last, func(t calledTool) bool { return t.Tool == c.Tool }) {
			r.last = append(r.last, calledTool{Tool: c.Tool, Seq: c.Seq, Arguments: c.Arguments, Declared: c.Declared})
		}
	}
}

// lastCalled are the tools of the last calls judged, once each.
func (r *relay) lastCalled() []calledTool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.last)
}

// calledBefore are the tools called before, but for those named in skip.
func (r *relay) calledBefore(skip map[string]bool) []calledTool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []calledTool
	for _, t := range r.called {
		if !skip[t.Tool] {
			out = append(out, t)
		}
	}
	return out
}

// miniReport is a report for the rules, of tools as declared.
func (r *relay) miniReport(tools []report.Tool) *report.Report {
	r.mu.Lock()
	protocol := r.protocol
	r.mu.Unlock()
	rep := report.New()
	rep.Server.ProtocolVersion = protocol
	rep.Sandbox.Isolation = sandbox.IsolationSession.String()
	rep.Tools = tools
	return rep
}

// declaredNow are the named tools as the book has them now.
func (r *relay) declaredNow(names []string) []report.Tool {
	var out []report.Tool
	for _, n := range names {
		if t, ok := r.book.declared(n); ok {
			out = append(out, t)
		}
	}
	return out
}

// candidates judges the tools in ts as if each had caused eff (as a
// call's own effects, or with after, as what it left running did after
// it answered), and returns what the rules find on them: the hint rules'
// findings only, a tool's claim the effects break.
func (r *relay) candidates(ts []calledTool, eff report.Effects, after bool) []report.Finding {
	if len(ts) == 0 {
		return nil
	}
	rep := r.miniReport(declaredOf(ts))
	for _, t := range ts {
		c := report.Call{Seq: t.Seq, Tool: t.Tool, Arguments: t.Arguments, Source: "client", Effects: eff}
		if after {
			c.Effects = report.NewEffects()
			rep.Phases = append(rep.Phases, report.Phase{Name: "between", After: t.Seq, Effects: eff})
		}
		rep.Calls = append(rep.Calls, c)
	}
	verdict.Finish(rep, r.opts.Verdict)
	var out []report.Finding
	for _, f := range rep.Findings {
		if _, ok := hintFixes[f.Rule]; ok && f.Tool != "" {
			out = append(out, f)
		}
	}
	return out
}

// judge gives the verdict's rules the effects of a group of calls that
// overlapped, and acts on what they find: each finding is logged. A
// contradicted hint is pinned on the group's one tool, corrected and,
// by policy, the tool refused, when no other tool can explain it: the
// group has one tool, and no tool called before it (whose timer, thread
// or child may have acted during the call) has a claim the same effects
// break. Otherwise each of those candidates is corrected, none refused.
//
// Its records go to emit; it says whether the client must be told the
// tool list changed.
func (r *relay) judge(group []*callInfo, eff report.Effects, emit emitFn) bool {
	tools := map[string]bool{}
	var names []string
	var declared []report.Tool
	for _, c := range group {
		if !tools[c.Tool] {
			tools[c.Tool] = true
			names = append(names, c.Tool)
			if c.Declared != nil {
				declared = append(declared, *c.Declared)
			}
		}
	}
	// Judged against the claims the client had when it called, not what
	// the server lists while the effects are read.
	rep := r.miniReport(declared)
	// One call per tool, each with the whole group's effects: with one
	// tool the findings are its own; with more each is a candidate.
	seen := map[string]bool{}
	for _, c := range group {
		if seen[c.Tool] {
			continue
		}
		seen[c.Tool] = true
		rep.Calls = append(rep.Calls, report.Call{Seq: c.Seq, Tool: c.Tool, Arguments: c.Arguments, Source: "client", IsError: c.IsError, FailsBy: c.FailsBy, Disclosed: c.Disclosed, Effects: eff})
	}
	verdict.Finish(rep, r.opts.Verdict)
	var earlier []report.Finding
	if slices.ContainsFunc(rep.Findings, func(f report.Finding) bool { _, ok := hintFixes[f.Rule]; return ok && f.Tool != "" }) {
		earlier = r.candidates(r.calledBefore(tools), eff, false)
	}
	w := r.window()
	notify := false
	for _, f := range rep.Findings {
		cands := candidateTools(f.Rule, rep.Findings, earlier)
		rec := RunRecord{Type: "finding", Seq: f.Call, Tool: f.Tool, Rule: f.Rule, Severity: f.Severity.String(), Message: f.Message, Evidence: f.Evidence}
		human := fmt.Sprintf("%s: %s", f.Severity, report.OneLine(f.Message))
		if len(cands) > 1 {
			rec.Candidates = cands
			human += fmt.Sprintf(" (candidates: %s)", strings.Join(cands, ", "))
		}
		if by := explainedBy(f.Rule, names, declared, rep.Findings); f.Tool != "" && by != "" {
			// Calls that overlapped, one of which declared what was seen:
			// nobody is blamed for it.
			rec.Reason = fmt.Sprintf("not corrected: %q, whose call overlapped, declares what was seen", by)
			emit(rec, human+fmt.Sprintf(" (not corrected: %s, whose call overlapped, declares it)", quoteTool(by)))
			continue
		}
		emit(rec, human)
		if f.Tool == "" {
			continue
		}
		w.broke(f.Rule)
		reason := fmt.Sprintf("call %d: %s", f.Call, report.OneLine(f.Message))
		if len(cands) <= 1 && len(names) == 1 {
			notify = r.act(f, reason, f.Call, emit) || notify
			continue
		}
		notify = r.correctCandidate(f.Tool, f.Rule, f.Call, reason, cands, emit) || notify
	}
	for _, f := range earlier {
		if !slices.ContainsFunc(rep.Findings, func(g report.Finding) bool { return g.Rule == f.Rule && g.Tool != "" }) ||
			explainedBy(f.Rule, names, declared, rep.Findings) != "" {
			continue // a tool of the call kept this claim: nothing of the call's to share
		}
		cands := candidateTools(f.Rule, rep.Findings, earlier)
		reason := fmt.Sprintf("a candidate for what was seen during call %d (%s), called before it", group[0].Seq, strings.Join(names, ", "))
		notify = r.correctCandidate(f.Tool, f.Rule, group[0].Seq, reason, cands, emit) || notify
	}
	if len(names) == 1 && len(earlier) == 0 && !eff.Empty() {
		t := report.Tool{Name: names[0]} // called without being listed: no claim, but what it did is kept
		if len(declared) == 1 {
			t = declared[0]
		}
		notify = r.observe(group[0], t, eff, emit) || notify
	}
	return r.settle(w, emit) || notify
}

// observe judges a call pinned on its tool again, against every claim
// the tool could make (read-only and closed world; then a writer that
// destroys nothing), and records what its effects deny: a tool that
// wrote while it declared it writes, and later lists itself read-only,
// is listed corrected; so is one whose first correction left a claim the
// rules then did not judge (read-only corrected, destructiveHint false
// kept though it deleted). It says whether the tool's current listing
// claims what it was seen breaking.
func (r *relay) observe(c *callInfo, t report.Tool, eff report.Effects, emit emitFn) bool {
	notify := false
	for _, h := range []report.Hints{
		{ReadOnly: ptr(true), OpenWorld: ptr(false)},
		{ReadOnly: ptr(false), Destructive: ptr(false), OpenWorld: ptr(false)},
	} {
		t.Hints = h
		rep := r.miniReport([]report.Tool{t})
		rep.Calls = []report.Call{{Seq: c.Seq, Tool: c.Tool, Arguments: c.Arguments, Source: "client", IsError: c.IsError, FailsBy: c.FailsBy, Effects: eff}}
		verdict.Finish(rep, r.opts.Verdict)
		for _, f := range rep.Findings {
			fix, ok := hintFixes[f.Rule]
			if !ok || f.Tool != c.Tool || r.action(f.Rule, f.Tool) < rules.ActionCorrect || !r.book.observe(c.Tool, fix) {
				continue
			}
			// The client is told the tool claims what its call broke.
			to := fix.Value
			emit(RunRecord{Type: "hint", Tool: c.Tool, Hint: fix.Hint, To: &to, Rule: f.Rule, Seq: c.Seq, Reason: fmt.Sprintf("call %d did what its listing claims it does not", c.Seq)},
				fmt.Sprintf("%s: %s -> %v (call %d did what its listing claims it does not)", quoteTool(c.Tool), fix.Hint, to, c.Seq))
			notify = r.opts.Hints == HintsVerified || notify
		}
	}
	return notify
}

func ptr[T any](v T) *T { return &v }

// explainedBy is a tool of an overlap (names, as declared) whose claims
// allow what rule found (it has no finding of rule's: it declared the
// effect), or "".
func explainedBy(rule string, names []string, declared []report.Tool, fs []report.Finding) string {
	if len(names) < 2 {
		return ""
	}
	if _, ok := hintFixes[rule]; !ok {
		return ""
	}
	for _, t := range declared {
		if !slices.ContainsFunc(fs, func(f report.Finding) bool { return f.Rule == rule && f.Tool == t.Name }) {
			return t.Name
		}
	}
	return ""
}

// candidateTools are the tools found breaking rule's claim, the
// group's first, once each.
func candidateTools(rule string, fs ...[]report.Finding) []string {
	var out []string
	for _, l := range fs {
		for _, f := range l {
			if f.Rule == rule && f.Tool != "" && !slices.Contains(out, f.Tool) {
				out = append(out, f.Tool)
			}
		}
	}
	return out
}

// correctCandidate corrects tool's hint that rule found broken, as one
// of cands: toward the safe side (the policy permitting), never a
// refusal. It says whether what the client lists changed.
func (r *relay) correctCandidate(tool, rule string, call int, reason string, cands []string, emit emitFn) bool {
	fix, ok := hintFixes[rule]
	if !ok || r.action(rule, tool) < rules.ActionCorrect {
		return false
	}
	from, did := r.book.correct(tool, fix)
	if !did {
		return false
	}
	to := fix.Value
	why := reason
	if len(cands) > 1 {
		why += fmt.Sprintf("; one of %d candidates (%s): corrected, not refused", len(cands), strings.Join(cands, ", "))
	} else {
		why += "; seen outside its call: corrected, not refused"
	}
	rec := RunRecord{Type: "hint", Tool: tool, Hint: fix.Hint, From: from, To: &to, Rule: rule, Seq: call, Reason: why, Candidates: cands}
	human := fmt.Sprintf("%s: %s %v -> %v (%s)", quoteTool(tool), fix.Hint, fmtHint(from), to, why)
	return r.emitHint(rec, human, emit)
}

// judgePhase judges what the server did outside any call, as scan
// judges it: phases are one stretch (the startup's two, the sandbox's and
// the handshake's, judged together), after the last call before it (0:
// none). A stretch after a call is that call's, as in a scan (what it
// left running): see judgeAfter. The others (the startup, before the
// first call, the teardown) are the server's: a finding there corrects,
// for every tool listed now or later, each hint such effects could
// contradict (phaseFixes); at the teardown the tools called before are
// candidates too. It says whether the client must be told the tool list
// changed.
func (r *relay) judgePhase(phases []report.Phase, emit emitFn) bool {
	empty := true
	for _, p := range phases {
		empty = empty && p.Effects.Empty()
	}
	if empty {
		return false
	}
	phases = r.withoutScratch(phases)
	last := phases[len(phases)-1]
	if last.Name == "between" && last.After > 0 {
		return r.judgeAfter(last, emit)
	}
	rep := r.miniReport(r.declaredNow(r.book.names()))
	rep.Phases = phases
	verdict.Finish(rep, r.opts.Verdict)
	w := r.window()
	notify := false
	for _, f := range rep.Findings {
		emit(RunRecord{Type: "finding", Rule: f.Rule, Severity: f.Severity.String(), Message: f.Message, Evidence: f.Evidence},
			fmt.Sprintf("%s: %s", f.Severity, report.OneLine(f.Message)))
		for _, fix := range phaseFixes[f.Rule] {
			w.brokeHint(fix.Hint)
			reason := fmt.Sprintf("%s: the server acted outside any tool call (%s)", f.Rule, where(phases))
			notify = r.serverFix(f.Rule, fix, reason, emit) || notify
		}
	}
	if last.Name == "teardown" {
		cf := r.candidates(r.calledBefore(nil), last.Effects, true)
		for _, f := range cf {
			cands := candidateTools(f.Rule, cf)
			w.broke(f.Rule)
			rec := RunRecord{Type: "finding", Seq: f.Call, Tool: f.Tool, Rule: f.Rule, Severity: f.Severity.String(), Message: f.Message, Evidence: f.Evidence, Candidates: cands}
			emit(rec, fmt.Sprintf("%s: %s (candidates: %s)", f.Severity, report.OneLine(f.Message), strings.Join(cands, ", ")))
			reason := fmt.Sprintf("teardown after call %d: %s", last.After, report.OneLine(f.Message))
			notify = r.correctCandidate(f.Tool, f.Rule, f.Call, reason, cands, emit) || notify
		}
	}
	return r.settle(w, emit) || notify
}

// judgeAfter judges a stretch between calls as the last calls' (what
// they left running did it), as scan's rules count it: when their claims
// cover it (a writer's late flush), nobody is blamed. When it breaks a
// claim of theirs, somebody lied: the last calls' tools and the tools
// called before whose claims it breaks are candidates, each corrected,
// none refused on it alone, and the server, which acted between calls,
// no longer has that hint trusted for any tool.
func (r *relay) judgeAfter(p report.Phase, emit emitFn) bool {
	lastTools := r.lastCalled()
	rep := r.miniReport(declaredOf(lastTools))
	for _, t := range lastTools {
		rep.Calls = append(rep.Calls, report.Call{Seq: t.Seq, Tool: t.Tool, Arguments: t.Arguments, Source: "client", Effects: report.NewEffects()})
	}
	rep.Phases = []report.Phase{p}
	verdict.Finish(rep, r.opts.Verdict)
	lied := slices.ContainsFunc(rep.Findings, func(f report.Finding) bool { _, ok := hintFixes[f.Rule]; return ok && f.Tool != "" })
	var earlier []report.Finding
	if lied {
		skip := map[string]bool{}
		for _, t := range lastTools {
			skip[t.Tool] = true
		}
		earlier = r.candidates(r.calledBefore(skip), p.Effects, true)
	}
	w := r.window()
	notify := false
	for _, f := range slices.Concat(rep.Findings, earlier) {
		cands := candidateTools(f.Rule, rep.Findings, earlier)
		rec := RunRecord{Type: "finding", Seq: f.Call, Tool: f.Tool, Rule: f.Rule, Severity: f.Severity.String(), Message: f.Message, Evidence: f.Evidence}
		human := fmt.Sprintf("%s: %s", f.Severity, report.OneLine(f.Message))
		if f.Tool != "" && len(cands) > 0 {
			rec.Candidates = cands
			human += fmt.Sprintf(" (candidates: %s)", strings.Join(cands, ", "))
		}
		emit(rec, human)
		fix, ok := hintFixes[f.Rule]
		if !ok || f.Tool == "" {
			continue
		}
		w.broke(f.Rule)
		reason := fmt.Sprintf("between calls, after call %d: %s", p.After, report.OneLine(f.Message))
		notify = r.correctCandidate(f.Tool, f.Rule, f.Call, reason, cands, emit) || notify
		notify = r.serverFix(f.Rule, fix, fmt.Sprintf("%s: the server acted between calls, after call %d, as no claim of that call's allows", f.Rule, p.After), emit) || notify
	}
	return r.settle(w, emit) || notify
}

// serverFix corrects fix for every tool, listed now or later, the
// policy permitting; it says whether the client's list changed.
func (r *relay) serverFix(rule string, fix hintFix, reason string, emit emitFn) bool {
	if r.action(rule, "") < rules.ActionCorrect || !r.book.correctServer(fix) {
		return false
	}
	to := fix.Value
	rec := RunRecord{Type: "hint", Hint: fix.Hint, To: &to, Rule: rule, Reason: reason + "; every tool's " + fix.Hint + " is set so"}
	human := fmt.Sprintf("every tool: %s -> %v (%s)", fix.Hint, to, reason)
	return r.emitHint(rec, human, emit)
}

// declaredOf are the tools as declared when called.
func declaredOf(ts []calledTool) []report.Tool {
	var out []report.Tool
	for _, t := range ts {
		if t.Declared != nil {
			out = append(out, *t.Declared)
		}
	}
	return out
}

// violations is one judged stretch's tally of the hints the server
// broke, for deny-server-after: a stretch counts once per hint, however
// many tools it names.
type violations struct{ hints map[string]bool }

func (r *relay) window() *violations { return &violations{hints: map[string]bool{}} }

func (v *violations) broke(rule string) {
	if f, ok := hintFixes[rule]; ok {
		v.hints[f.Hint] = true
	}
}

func (v *violations) brokeHint(hint string) { v.hints[hint] = true }

// settle counts the stretch's violations: once the server has broken a
// hint deny-server-after times and the policy denies on the hint's rule,
// every tool that claims it, under any name, now or later, is refused.
// It says whether the list changed (never: a refusal is at the call).
func (r *relay) settle(v *violations, emit emitFn) bool {
	after := r.opts.Verdict.Policy.Run.DenyServerAfter
	if after <= 0 {
		after = rules.DefaultDenyServerAfter
	}
	for _, h := range safetyHints {
		if !v.hints[h] {
			continue
		}
		r.mu.Lock()
		r.broken[h]++
		n := r.broken[h]
		r.mu.Unlock()
		rule := hintRule(h)
		if a, ok := r.opts.Verdict.Policy.Run.Rules[rule]; !ok || a != rules.ActionDeny || n < after {
			continue
		}
		reason := fmt.Sprintf("the server broke %s %d time(s) (deny-server-after %d)", h, n, after)
		if r.book.denyServer(h, denial{Rule: rule, Reason: reason}) {
			emit(RunRecord{Type: "policy", Hint: h, Rule: rule, Reason: reason},
				fmt.Sprintf("every tool that claims %s: later calls are refused (%s; policy: deny on %s)", claimWord(h), reason, rule))
		}
	}
	return false
}

// claimWord is the unsafe side of hint, as a tool claims it.
func claimWord(hint string) string {
	return fmt.Sprintf("%s: %v", hint, !hintFixes[hintRule(hint)].Value)
}

// act applies the policy's action on finding f, pinned on its tool; it
// says whether what the client lists changed.
func (r *relay) act(f report.Finding, reason string, call int, emit emitFn) bool {
	action := r.action(f.Rule, f.Tool)
	changed := false
	if fix, ok := hintFixes[f.Rule]; ok && action >= rules.ActionCorrect {
		if from, did := r.book.correct(f.Tool, fix); did {
			to := fix.Value
			rec := RunRecord{Type: "hint", Tool: f.Tool, Hint: fix.Hint, From: from, To: &to, Rule: f.Rule, Seq: call, Reason: reason}
			changed = r.emitHint(rec, fmt.Sprintf("%s: %s %v -> %v (%s)", quoteTool(f.Tool), fix.Hint, fmtHint(from), to, reason), emit)
		}
	}
	if action == rules.ActionDeny && r.book.deny(f.Tool, denial{Rule: f.Rule, Reason: reason}) {
		emit(RunRecord{Type: "policy", Tool: f.Tool, Rule: f.Rule, Reason: reason}, fmt.Sprintf("%s: later calls are refused (policy: deny on %s)", quoteTool(f.Tool), f.Rule))
	}
	return changed
}

// startupOnce judges the server's startup (the sandbox's phase before
// the handshake and the handshake's own) before the first answer
// reaches the client, so that no hint its effects contradict is ever
// listed. It waits at most StartBound: past it every hint is stripped
// from then on and a problem logged; the judgement, when it comes,
// still acts, and the client is then told the list changed. A call
// already in flight (a client that called before any handshake or
// listing) takes the handshake's effects as its own; the sandbox's
// startup is judged alone.
func (r *relay) startupOnce(ctx context.Context) {
	r.startup.Do(func() {
		var released atomic.Bool
		done := make(chan struct{})
		r.work.Add(1)
		go func() {
			defer r.work.Done()
			defer close(done)
			ran, changed := r.calls.phase(ctx, r, "initialize", r.opts.Startup...)
			if !ran {
				changed = r.judgePhase(r.opts.Startup, r.log.record)
			}
			if changed && released.Load() {
				r.listChanged()
			}
		}()
		bound := r.opts.StartBound
		if bound <= 0 {
			bound = sandbox.DefaultStartTimeout
		}
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-ctx.Done():
		case <-t.C:
			why := fmt.Sprintf("the server's startup was not judged within %s (--start-timeout): every tool's safety hints are stripped", bound)
			if r.book.stripEvery("its server's startup was not judged in time (--start-timeout)") {
				r.log.record(RunRecord{Type: "problem", Reason: "startup", Message: why}, "startup: "+why)
			}
		}
		released.Store(true)
	})
}

// judgeEnd judges the teardown (what the server did once its stdin
// ended, up to its removal), for the log: no client is left to tell.
func (r *relay) judgeEnd(ctx context.Context, rep *report.Report) {
	// A server nobody spoke to is judged at startup too.
	r.startupOnce(ctx)
	for _, p := range rep.Phases {
		if p.Name == "teardown" {
			r.calls.mu.Lock()
			p.After = r.calls.after
			r.calls.mu.Unlock()
			r.judgePhase([]report.Phase{p}, r.log.record)
		}
	}
}

// where names the phases judged together, for a hint record.
func where(phases []report.Phase) string {
	last := phases[len(phases)-1]
	switch {
	case last.Name == "initialize":
		return "at startup"
	case last.Name == "between" && last.After > 0:
		return fmt.Sprintf("between calls, after call %d", last.After)
	case last.Name == "between":
		return "before the first call"
	}
	return "at " + last.Name
}

// noteScratch remembers the workspace files the server made in eff that
// no call's arguments name (its own scratch), at most maxScratch.
func (r *relay) noteScratch(eff report.Effects, group []*callInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range eff.Files {
		if f.Scope != "workspace" || f.Change != report.ChangeCreated || len(r.scratch) >= maxScratch {
			continue
		}
		named := slices.ContainsFunc(group, func(c *callInfo) bool {
			return strings.Contains(string(c.Arguments), strings.TrimPrefix(f.Path, "/workspace/"))
		})
		if !named {
			r.scratch[f.Path] = true
		}
	}
}

// withoutScratch are phases with the deletions of the server's own
// scratch left out (they destroy nothing of the user's), as scan's rules
// leave them out with the whole session before them.
func (r *relay) withoutScratch(phases []report.Phase) []report.Phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.scratch) == 0 {
		return phases
	}
	out := slices.Clone(phases)
	for i, p := range out {
		files := slices.DeleteFunc(slices.Clone(p.Effects.Files), func(f report.FileChange) bool {
			return f.Scope == "workspace" && f.Change == report.ChangeDeleted && r.scratch[f.Path]
		})
		out[i].Effects.Files = files
	}
	return out
}

// maxScratch bounds the scratch files remembered: past it a deletion is
// judged as any other (the safe side).
const maxScratch = 4096

// emitHint writes a correction's record; with --hints other than
// verified the list is not rewritten, and the record says so. It says
// whether what the client lists changed.
func (r *relay) emitHint(rec RunRecord, human string, emit emitFn) bool {
	if r.opts.Hints != HintsVerified {
		rec.Reason += fmt.Sprintf("; not rewritten in the list with --hints %s", r.opts.Hints)
		human += fmt.Sprintf("; not rewritten with --hints %s", r.opts.Hints)
		emit(rec, human)
		return false
	}
	emit(rec, human)
	return true
}
