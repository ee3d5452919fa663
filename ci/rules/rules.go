// Package rules turns a report's effects into findings: each rule compares
// what a tool's annotations claim (quoting the MCP specification) with
// what its calls did, under a policy that may change severities, ignore
// paths and tools, and allow hosts, and that counts every ignore.
package rules

import (
	"fmt"
	"net"
	"strings"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// Rule is one check.
type Rule struct {
	ID string
	// Severity is the rule's default; a policy may change it.
	Severity report.Severity
	// Hint is the annotation the rule holds a tool to ("" for none).
	Hint string
	// Rationale quotes the specification.
	Rationale string
}

// The specification's words for each hint (MCP, ToolAnnotations).
const (
	specReadOnly    = `readOnlyHint: "If true, the tool does not modify its environment."`
	specDestructive = `destructiveHint: "If true, the tool may perform destructive updates to its environment. If false, the tool performs only additive updates."`
	specIdempotent  = `idempotentHint: "If true, calling the tool repeatedly with the same arguments will have no additional effect on its environment."`
	specOpenWorld   = `openWorldHint: "If true, this tool may interact with an 'open world' of external entities. If false, the tool's domain of interaction is closed."`
)

// All lists every rule, in a stable order.
func All() []Rule {
	return []Rule{
		{ID: "readonly-writes", Severity: report.SeverityError, Hint: "readOnlyHint", Rationale: specReadOnly},
		{ID: "readonly-background", Severity: report.SeverityWarning, Hint: "readOnlyHint", Rationale: specReadOnly + " A process left running after the call can modify it later."},
		{ID: "nondestructive-deletes", Severity: report.SeverityError, Hint: "destructiveHint", Rationale: specDestructive},
		{ID: "idempotent-repeats", Severity: report.SeverityError, Hint: "idempotentHint", Rationale: specIdempotent},
		{ID: "closed-world-network", Severity: report.SeverityError, Hint: "openWorldHint", Rationale: specOpenWorld},
		{ID: "writes-outside-workspace", Severity: report.SeverityWarning, Rationale: "Whatever its hints, a tool that changes files outside the workspace reaches beyond what it was given."},
		{ID: "secret-exfiltration", Severity: report.SeverityCritical, Rationale: "A honeytoken planted for this run left the tool in a network payload, DNS name or HTTP request."},
		{ID: "schema-violation-accepted", Severity: report.SeverityWarning, Rationale: "The tool accepted input its own inputSchema forbids."},
		{ID: "schema-violation-effects", Severity: report.SeverityError, Rationale: "Input its own inputSchema forbids made the tool change something."},
		{ID: "contract-tool-added", Severity: report.SeverityWarning, Rationale: "The server lists a tool the contract does not have."},
		{ID: "contract-tool-removed", Severity: report.SeverityWarning, Rationale: "The contract has a tool the server no longer lists."},
		{ID: "contract-schema-changed", Severity: report.SeverityWarning, Rationale: "A tool's inputSchema differs from the contract."},
		{ID: "contract-annotation-changed", Severity: report.SeverityError, Rationale: "A tool's annotations differ from the contract; a flipped safety hint changes what clients let it do unasked."},
		{ID: "events-dropped", Severity: report.SeverityError, Rationale: "The agent dropped events over its bound (a flood): what the server did afterwards is not fully recorded, so no verdict can clear it."},
		{ID: "baseline-stale", Severity: report.SeverityError, Rationale: "A baseline entry no longer occurs: the problem is fixed, so the exception must go."},
	}
}

// ByID returns the rule with id.
func ByID(id string) (Rule, bool) {
	for _, r := range All() {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// Evaluate replaces r.Findings and r.Ignored with what the rules find in
// r's calls under policy p.
func Evaluate(r *report.Report, p Policy) {
	tools := map[string]report.Tool{}
	for _, t := range r.Tools {
		tools[t.Name] = t
	}
	after := map[int][]report.Effects{}
	for _, ph := range r.Phases {
		if ph.Name == "between" && ph.After > 0 {
			after[ph.After] = append(after[ph.After], ph.Effects)
		}
	}
	e := &evaluator{p: p, r: r}
	r.Findings, r.Ignored = []report.Finding{}, []report.Ignored{}
	for i, c := range r.Calls {
		t := tools[c.Tool]
		// What a call caused includes what it left running did after it
		// returned.
		effs := append([]report.Effects{c.Effects}, after[c.Seq]...)
		h := t.Hints
		if isTrue(h.ReadOnly) {
			e.files("readonly-writes", c, effs, "readOnlyHint: true", func(f report.FileChange) bool { return true },
				"declares readOnlyHint: true, but call %d changed %d file(s)")
			var ev []string
			for _, pr := range c.Effects.Processes {
				if pr.Background {
					ev = append(ev, "background: "+argv(pr))
				}
			}
			e.add("readonly-background", c, "readOnlyHint: true", ev, nil, "declares readOnlyHint: true, but call %d left %d process(es) running")
		}
		if !isTrue(h.ReadOnly) && isFalse(h.Destructive) {
			e.files("nondestructive-deletes", c, effs, "destructiveHint: false", func(f report.FileChange) bool {
				// Appending is additive; deleting, truncating or rewriting is not.
				return f.Change == report.ChangeDeleted || (f.Change == report.ChangeModified && f.Type == "file" && !f.Appended)
			}, "declares destructiveHint: false, but call %d deleted or overwrote %d existing file(s)")
		}
		if isTrue(h.Idempotent) {
			if prev := previousSame(r.Calls[:i], c); prev != nil {
				e.files("idempotent-repeats", c, effs, "idempotentHint: true", further(r.Calls[:i], c),
					"declares idempotentHint: true, but repeating call %d's arguments changed %d more file(s)")
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
			e.add("closed-world-network", c, "openWorldHint: false", ev, nil, "declares openWorldHint: false, but call %d made %d network attempt(s) beyond the sandbox")
		}
		if c.Negative != "" {
			args := "arguments " + string(c.Arguments)
			if c.ErrorKind == "" && !c.IsError {
				e.add("schema-violation-accepted", c, "", []string{c.Negative, args}, nil, "call %d accepted input that breaks its own input schema (%d evidence items: the rule broken, the arguments)")
			}
			var ev []string
			for _, ef := range effs {
				for _, f := range ef.Files {
					ev = append(ev, f.Change.String()+" "+f.Path)
				}
				for _, p := range ef.Processes {
					ev = append(ev, "ran "+argv(p))
				}
			}
			if len(ev) > 0 {
				e.add("schema-violation-effects", c, "", append([]string{c.Negative}, ev...), nil, "call %d: input that breaks its own input schema changed things (%d evidence items)")
			}
		}
		var leaked []string
		for _, ef := range effs {
			for _, n := range ef.Network {
				for _, sec := range n.Secrets {
					leaked = append(leaked, fmt.Sprintf("%s in %s", sec, describeNet(n)))
				}
			}
		}
		e.add("secret-exfiltration", c, "", leaked, nil, "call %d sent %d planted secret(s) out of the sandbox")
		e.files("writes-outside-workspace", c, effs, "", func(f report.FileChange) bool { return f.Scope == "outside" },
			"call %d changed %d file(s) outside the workspace")
	}
	if n := r.Sandbox.EventsDropped; n > 0 {
		rl, _ := ByID("events-dropped")
		if sev, on := p.severity(rl); on {
			r.Findings = append(r.Findings, report.Finding{Rule: rl.ID, Severity: sev, Message: fmt.Sprintf("the agent dropped %d events; %s", n, rl.Rationale),
				Evidence: []string{fmt.Sprintf("%d events dropped", n)}, Isolation: r.Sandbox.Isolation})
		}
	}
	report.SortFindings(r.Findings)
	report.SortIgnored(r.Ignored)
}

type evaluator struct {
	p Policy
	r *report.Report
}

// files raises rule on the call's file changes that match keep.
func (e *evaluator) files(rule string, c report.Call, effs []report.Effects, hint string, keep func(report.FileChange) bool, msg string) {
	var ev, paths []string
	for _, ef := range effs {
		for _, f := range ef.Files {
			if keep(f) {
				ev = append(ev, f.Change.String()+" "+f.Path)
				paths = append(paths, f.Path)
			}
		}
	}
	e.add(rule, c, hint, ev, paths, msg)
}

// add records a finding with its evidence after the policy's ignores;
// paths, when set, are the evidence items' paths for path ignores.
func (e *evaluator) add(rule string, c report.Call, hint string, evidence, paths []string, msg string) {
	if len(evidence) == 0 {
		return
	}
	rl, _ := ByID(rule)
	sev, on := e.p.severity(rl)
	if !on {
		return
	}
	if g, ok := e.p.ignoredTool(rule, c.Tool); ok {
		e.r.Ignored = append(e.r.Ignored, report.Ignored{Rule: rule, Tool: c.Tool, Call: c.Seq, Reason: "tool " + g, Evidence: len(evidence)})
		return
	}
	var kept []string
	dropped := map[string]int{}
	seen := map[string]bool{}
	for i, ev := range evidence {
		if seen[ev] {
			continue // the same attempt twice (an A and an AAAA query) is one piece of evidence
		}
		seen[ev] = true
		if paths != nil {
			if g, ok := e.p.ignoredPath(rule, paths[i]); ok {
				dropped[g]++
				continue
			}
		}
		kept = append(kept, ev)
	}
	for g, n := range dropped {
		e.r.Ignored = append(e.r.Ignored, report.Ignored{Rule: rule, Tool: c.Tool, Call: c.Seq, Reason: "path " + g, Evidence: n})
	}
	if len(kept) == 0 {
		return
	}
	text := fmt.Sprintf("%s %s", quote(c.Tool), fmt.Sprintf(msg, c.Seq, len(kept)))
	if rl.Rationale != "" && hint != "" {
		text += "; the specification: " + rl.Rationale
	}
	e.r.Findings = append(e.r.Findings, report.Finding{Rule: rule, Severity: sev, Tool: c.Tool, Call: c.Seq, Hint: hint,
		Message: text, Evidence: kept, Isolation: e.r.Sandbox.Isolation})
}

// outward describes a network event that leaves the sandbox (or tries
// to), unless the policy allows its host.
func (e *evaluator) outward(n report.NetEvent) (string, bool) {
	switch n.Kind {
	case "dns":
		if n.Host == "localhost" || strings.HasSuffix(n.Host, ".localhost") || e.p.allowedHost(n.Host) {
			return "", false
		}
		return "dns " + n.Host, true
	case "connect":
		ip := net.ParseIP(n.Address)
		if n.Loopback || (ip != nil && ip.IsLoopback()) || e.p.allowedHost(n.Address) {
			return "", false
		}
		return fmt.Sprintf("connect %s:%d/%s %s", n.Address, n.Port, n.Protocol, n.Result), true
	case "http":
		if n.Method == "" {
			// The sinkhole took a connection that sent no HTTP request; the
			// connect event names its destination.
			return "", false
		}
		if e.p.allowedHost(hostOnly(n.Host)) {
			return "", false
		}
		return fmt.Sprintf("http %s %s%s", n.Method, n.Host, n.Path), true
	case "tls":
		if e.p.allowedHost(n.Host) {
			return "", false
		}
		return "tls " + n.Host, true
	}
	return "", false
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
