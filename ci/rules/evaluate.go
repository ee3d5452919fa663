package rules

import (
	"fmt"
	"net"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Options are what the rules take besides the report.
type Options struct {
	// AllowedHosts are names or addresses (globs) a closed-world tool may
	// reach without a finding: they are not outward, so not evidence.
	AllowedHosts []string
	// MinCoverage, above 0, is the share of listed tools (0 to 1) that must
	// be exercised: below it, a coverage-low finding.
	MinCoverage float64
}

// Evaluate returns what the rules find in r's calls and sandbox, at each
// rule's default severity, with no policy applied; r is not changed.
func Evaluate(r *report.Report, opts Options) []report.Finding {
	r = hinted(r)
	tools := map[string]report.Tool{}
	for _, t := range r.Tools {
		tools[t.Name] = t
	}
	after := afterCalls(r)
	e := &evaluator{opts: opts, isolation: r.Sandbox.Isolation, out: []report.Finding{}, scratch: newScratch(r), owned: ownedSet(r)}
	for i, c := range r.Calls {
		// What a call caused includes what it left running did after it
		// returned.
		effs := append([]report.Effects{c.Effects}, after[c.Seq]...)
		if c.Source == "boundary" {
			e.boundary(c, effs)
			continue
		}
		if c.Replay == nil {
			e.call(r, i, c, tools[c.Tool], effs, true)
			continue
		}
		e.replayed(r, i, c, tools, effs)
	}
	// What the server does on most calls whatever the tool is its own;
	// what the replays pinned on no call is one finding per rule.
	e.out = e.fold(e.owned, e.out)
	e.out = append(e.out, e.unpinnedFindings()...)
	// Outside calls: startup, initialize, tools/list, before the first
	// call, teardown; then the snapshot's bounds, wherever they were hit.
	e.phases(r)
	e.install(r)
	e.truncation(r)
	if n := r.Sandbox.EventsDropped; n > 0 {
		rl, _ := ByID(EventsDropped)
		e.out = append(e.out, report.Finding{Rule: rl.ID, Severity: rl.Severity, Message: fmt.Sprintf("the agent dropped %d events; %s", n, rl.Rationale),
			Evidence: []string{fmt.Sprintf("%d events dropped", n)}, EvidencePaths: []string{""}, Isolation: r.Sandbox.Isolation})
	}
	e.out = append(e.out, runsAsRoot(r)...)
	e.out = append(e.out, tamper(r)...)
	e.out = append(e.out, ambiguous(r)...)
	e.out = append(e.out, hashBudget(r)...)
	e.out = append(e.out, toolList(r)...)
	e.out = append(e.out, toolListCut(r)...)
	e.out = append(e.out, disk(r)...)
	e.out = append(e.out, lingerBound(r)...)
	e.out = append(e.out, journalMissed(r)...)
	e.out = append(e.out, reportBound(r)...)
	e.out = append(e.out, coverage(r, opts.MinCoverage)...)
	e.out = append(e.out, disclosed(r, r.Sandbox.Isolation)...)
	e.out = append(e.out, reads(r, e.owned, r.Sandbox.Isolation)...)
	e.out = append(e.out, surfaceListCut(r)...)
	if n := r.Sandbox.EventsTruncated; n > 0 {
		rl, _ := ByID(CaptureTruncated)
		e.out = append(e.out, report.Finding{Rule: rl.ID, Severity: rl.Severity, Message: fmt.Sprintf("%d agent events were cut at a bound; %s", n, rl.Rationale),
			Evidence: []string{fmt.Sprintf("%d events truncated", n)}, EvidencePaths: []string{""}, Isolation: r.Sandbox.Isolation})
	}
	return e.out
}

// hinted is r as the rules judge it: a server whose protocol version has
// no tool annotations (2024-11-05) makes no hint claim, so its tools'
// hints are left out, whatever it sent (the report keeps them as sent,
// and the sandbox says so in a protocol problem); r is not changed.
func hinted(r *report.Report) *report.Report {
	if report.ToolAnnotationsIn(r.Server.ProtocolVersion) {
		return r
	}
	c := *r
	c.Tools = make([]report.Tool, len(r.Tools))
	for i, t := range r.Tools {
		t.Hints = report.Hints{}
		c.Tools[i] = t
	}
	return &c
}

// call raises the rules on call c (the i-th) as if tool t made effs; full
// adds the rules that need the call itself (repeats, negatives), which a
// candidate standing in for another call does not answer.
func (e *evaluator) call(r *report.Report, i int, c report.Call, t report.Tool, effs []report.Effects, full bool) {
	h := t.Hints
	if isTrue(h.ReadOnly) {
		e.files(ReadonlyWrites, c, effs, "readOnlyHint: true", func(f report.FileChange) bool { return true })
		var ev []string
		for _, pr := range c.Effects.Processes {
			if pr.Background {
				ev = append(ev, "background: "+argv(pr))
			}
		}
		e.add(ReadonlyBackground, c, "readOnlyHint: true", ev, nil)
	}
	if !isTrue(h.ReadOnly) && isFalse(h.Destructive) {
		e.filesAt(NondestructiveDeletes, c, effs, "destructiveHint: false", func(j int, f report.FileChange) bool {
			// Appending, or rewriting a text file with every old line kept,
			// is additive; deleting, truncating or rewriting is not, unless
			// what is deleted is the server's own scratch (see scratch).
			switch {
			case f.Change == report.ChangeDeleted:
				return !e.scratch.ownInCall(i, j, effs, f.Path)
			case f.Change == report.ChangeModified && f.Type == "file":
				return !f.Appended && !f.LinesKept && !f.ContentKept
			}
			return false
		})
	}
	if full && isTrue(h.Idempotent) {
		if prev := previousSame(r.Calls[:i], c); prev != nil {
			e.files(IdempotentRepeats, c, effs, "idempotentHint: true", further(r.Calls[:i], c))
		}
	}
	if isFalse(h.OpenWorld) {
		var ev []string
		for _, ef := range effs {
			for _, n := range ef.Network {
				if s, ok := e.outward(n); ok {
					ev = append(ev, s)
				}
			}
		}
		e.add(ClosedWorldNetwork, c, "openWorldHint: false", ev, nil)
	}
	if full && c.Negative != "" {
		args := "arguments " + string(c.Arguments)
		if report.Succeeded(c) {
			e.add(SchemaViolationAccepted, c, "", []string{c.Negative, args}, nil)
		}
		ev, paths := []string{c.Negative}, []string{""}
		for _, ef := range effs {
			for _, f := range ef.Files {
				ev, paths = append(ev, f.Change.String()+" "+f.Path), append(paths, f.Path)
			}
			for _, p := range ef.Processes {
				ev, paths = append(ev, "ran "+argv(p)), append(paths, "")
			}
		}
		if len(ev) > 1 {
			e.add(SchemaViolationEffects, c, "", ev, paths)
		}
	}
	e.exfiltration(c, effs)
	e.files(ShellOrCredentialFiles, c, effs, "", func(f report.FileChange) bool { return IsShellOrCredentialFile(f.Path) })
	// Shell start-up and credential files are the rule above's, at its
	// higher severity: not listed twice.
	e.files(WritesOutsideWorkspace, c, effs, "", func(f report.FileChange) bool {
		return f.Scope == "outside" && !IsShellOrCredentialFile(f.Path)
	})
}

type evaluator struct {
	opts      Options
	isolation string
	out       []report.Finding
	// scratch knows the server's own scratch files (nil: none is).
	scratch *scratch
	// owned are the server's own file changes (see serverOwned).
	owned ownership
	// unpinned gathers, per rule, what the replays pinned on no call.
	unpinned map[string]*unpinned
}

// files raises rule on the call's file changes that match keep.
func (e *evaluator) files(rule string, c report.Call, effs []report.Effects, hint string, keep func(report.FileChange) bool) {
	e.filesAt(rule, c, effs, hint, func(_ int, f report.FileChange) bool { return keep(f) })
}

// filesAt is files with keep told which of effs the change is in.
func (e *evaluator) filesAt(rule string, c report.Call, effs []report.Effects, hint string, keep func(int, report.FileChange) bool) {
	var ev, paths []string
	for j, ef := range effs {
		for _, f := range ef.Files {
			if keep(j, f) {
				ev = append(ev, f.Change.String()+" "+f.Path)
				paths = append(paths, f.Path)
			}
		}
	}
	e.add(rule, c, hint, ev, paths)
}

// add raises rule on call c with its evidence, once per distinct item;
// paths, when set, are the evidence items' paths (for a policy's path
// ignores).
func (e *evaluator) add(rule string, c report.Call, hint string, evidence, paths []string) {
	if len(evidence) == 0 {
		return
	}
	rl, _ := ByID(rule)
	f := report.Finding{Rule: rule, Severity: rl.Severity, Tool: c.Tool, Call: c.Seq, Hint: hint, Isolation: e.isolation}
	f.Evidence, f.EvidencePaths = distinct(evidence, paths)
	f.Message = message(rl, f)
	e.out = append(e.out, f)
}

// distinct keeps each evidence item once (the same attempt twice, an A
// and an AAAA query, is one piece of evidence), with its path when paths
// are given.
func distinct(evidence, paths []string) (ev, ps []string) {
	ev, ps = []string{}, []string{}
	seen := map[string]bool{}
	for i, item := range evidence {
		if seen[item] {
			continue
		}
		seen[item] = true
		p := ""
		if paths != nil {
			p = paths[i]
		}
		ev, ps = append(ev, item), append(ps, p)
	}
	return ev, ps
}

// message is a call finding's message: the tool, what its call did, and
// for a hint the specification's words; or a server-level finding's:
// what the server did, where, and the rule's rationale. The policy
// renders it again when it drops evidence, so that the count stays true.
func message(rl Rule, f report.Finding) string {
	if f.Tool == "" && len(f.Calls) > 0 {
		return ownedMessage(rl, f)
	}
	if f.Tool == "" && rl.ServerMessage != "" {
		text := fmt.Sprintf(rl.ServerMessage, where(f.Evidence), len(f.Evidence))
		if f.Hint != "" {
			return text + "; every tool declares " + f.Hint + ", and the specification: " + specOpenWorld
		}
		return text + "; " + rl.Rationale
	}
	text := fmt.Sprintf("%s %s", quote(f.Tool), fmt.Sprintf(rl.Message, f.Call, len(f.Evidence)))
	if rl.Rationale != "" && f.Hint != "" {
		text += "; the specification: " + rl.Rationale
	}
	return text
}

// outward describes a network event that leaves the sandbox (or tries
// to), unless the policy allows its host.
func (e *evaluator) outward(n report.NetEvent) (string, bool) {
	switch n.Kind {
	case "dns":
		if n.Host == "localhost" || strings.HasSuffix(n.Host, ".localhost") || e.allowedHost(n.Host) {
			return "", false
		}
		return "dns " + n.Host, true
	case "connect":
		ip := net.ParseIP(n.Address)
		if n.Loopback || (ip != nil && ip.IsLoopback()) || e.allowedHost(n.Address) {
			return "", false
		}
		return fmt.Sprintf("connect %s:%d/%s %s", n.Address, n.Port, n.Protocol, n.Result), true
	case "http":
		if n.Method == "" {
			// The sinkhole took a connection that sent no HTTP request; the
			// connect event names its destination.
			return "", false
		}
		if e.allowedHost(hostOnly(n.Host)) {
			return "", false
		}
		return fmt.Sprintf("http %s %s%s", n.Method, n.Host, n.Path), true
	case "tls":
		if e.allowedHost(n.Host) {
			return "", false
		}
		return "tls " + n.Host, true
	}
	return "", false
}

func (e *evaluator) allowedHost(h string) bool {
	for _, g := range e.opts.AllowedHosts {
		if glob(g, h) {
			return true
		}
	}
	return false
}

func describeNet(n report.NetEvent) string {
	switch n.Kind {
	case "dns":
		return "dns query " + n.Host
	case "http":
		return fmt.Sprintf("http %s %s%s", n.Method, n.Host, n.Path)
	case "tls":
		return "tls " + n.Host
	}
	return fmt.Sprintf("%s %s:%d/%s", n.Kind, n.Address, n.Port, n.Protocol)
}

func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return h
}

// previousSame finds an earlier call of the same tool with the same
// arguments.
func previousSame(earlier []report.Call, c report.Call) *report.Call {
	for i := len(earlier) - 1; i >= 0; i-- {
		if earlier[i].Tool == c.Tool && string(earlier[i].Arguments) == string(c.Arguments) {
			return &earlier[i]
		}
	}
	return nil
}

// further keeps the repeat's changes that change state again: a file
// rewritten with the bytes it already had is no additional effect.
func further(earlier []report.Call, c report.Call) func(report.FileChange) bool {
	type state struct {
		change report.ChangeKind
		sum    string
	}
	last := map[string]state{}
	for _, e := range earlier {
		for _, f := range e.Effects.Files {
			last[f.Path] = state{f.Change, f.SHA256}
		}
	}
	return func(f report.FileChange) bool {
		if f.Change == report.ChangeModified && f.Type == "file" {
			prev, ok := last[f.Path]
			return !ok || prev != state{report.ChangeModified, f.SHA256} && prev != state{report.ChangeCreated, f.SHA256}
		}
		return true
	}
}

func isTrue(b *bool) bool  { return b != nil && *b }
func isFalse(b *bool) bool { return b != nil && !*b }

func argv(p report.Process) string { return strings.Join(p.Argv, " ") }

func quote(s string) string { return fmt.Sprintf("%q", s) }

// exfiltration raises secret-exfiltration on call c for every planted
// secret its network events carried.
func (e *evaluator) exfiltration(c report.Call, effs []report.Effects) {
	var leaked []string
	for _, ef := range effs {
		for _, n := range ef.Network {
			for _, sec := range n.Secrets {
				leaked = append(leaked, fmt.Sprintf("%s in %s", sec, describeNet(n)))
			}
		}
	}
	e.add(SecretExfiltration, c, "", leaked, nil)
}
