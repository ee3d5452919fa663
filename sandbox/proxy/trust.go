package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/rules"
)

// What the hint book holds of the server as a whole, beyond its tools
// one by one: hints corrected for every tool (the server acted outside
// any call: at startup, between calls), hints whose every claimant is
// refused (deny-server-after), and the identity that carries a tool's
// record across a rename.

// phaseFixes are the corrections a finding on what the server did
// outside any tool call makes for every tool: its effects could be any
// tool's (a timer armed at startup, a thread of its own), so no claim
// they contradict is trusted. The runtime's own writes (a note,
// phase-writes-outside-workspace) correct nothing.
var phaseFixes = map[string][]hintFix{
	rules.ShellOrCredentialFiles: {{Hint: "readOnlyHint", Value: false}},
	rules.PhaseWorkspaceChanges:  {{Hint: "readOnlyHint", Value: false}, {Hint: "destructiveHint", Value: true}},
	rules.PhaseWorkspaceCreates:  {{Hint: "readOnlyHint", Value: false}},
	rules.PhaseNetwork:           {{Hint: "openWorldHint", Value: true}},
	rules.SecretExfiltration:     {{Hint: "openWorldHint", Value: true}},
	// What went unseen may have broken any claim.
	rules.SnapshotTruncated: {{Hint: "readOnlyHint", Value: false}, {Hint: "destructiveHint", Value: true}, {Hint: "openWorldHint", Value: true}},
}

// hintRule is the rule whose policy action governs a hint (see
// deny-server-after): the hint rule that finds its contradiction in a
// call.
func hintRule(hint string) string {
	for rule, f := range hintFixes {
		if f.Hint == hint {
			return rule
		}
	}
	return ""
}

// claims says whether a tool declared h on its unsafe side (readOnlyHint
// true, destructiveHint false, openWorldHint false): the claim a server
// that broke h no longer backs.
func claims(h report.Hints, hint string) bool {
	v := hintOf(h, hint)
	safe := hintFixes[hintRule(hint)].Value
	return v != nil && *v != safe
}

// correctServer records fix for every tool, listed now or later; it
// says whether it is new.
func (b *hintBook) correctServer(fix hintFix) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.serverFixes[fix.Hint]; ok && v == fix.Value {
		return false
	}
	b.serverFixes[fix.Hint] = fix.Value
	return true
}

// stripEvery strips the safety hints of every tool from now on, in
// every mode: the server's startup was not judged in time, so nothing it
// claims is held up. It says whether it is new.
func (b *hintBook) stripEvery(why string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stripAll != "" {
		return false
	}
	b.stripAll = why
	return true
}

// denyServer refuses, from now on, the calls of every tool that claims
// hint (as it declared it, under any name); false when it was.
func (b *hintBook) denyServer(hint string, d denial) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.serverDenies[hint]; ok {
		return false
	}
	b.serverDenies[hint] = d
	return true
}

// serverDenial is why tool's calls are refused for a hint it claims
// (mu held).
func (b *hintBook) serverDenial(tool string) (denial, bool) {
	t, ok := b.tools[tool]
	if !ok || len(b.serverDenies) == 0 {
		return denial{}, false
	}
	for _, h := range safetyHints {
		if d, ok := b.serverDenies[h]; ok && claims(t.tool.Hints, h) {
			return d, true
		}
	}
	return denial{}, false
}

// identity is what makes a tool the same tool under another name: its
// input schema with every description removed (a reworded property is
// no new tool), and its description.
type identity struct {
	schema      [sha256.Size]byte
	description string
}

func identityOf(t report.Tool) identity {
	return identity{schema: schemaKey(t.InputSchema), description: t.Description}
}

// same says whether a and b name one tool: the same canonical schema,
// or the same description (not empty).
func (a identity) same(b identity) bool {
	return a.schema == b.schema || (a.description != "" && a.description == b.description)
}

// schemaKey hashes an input schema read as JSON (numbers as written),
// its "description" members removed at every depth, re-encoded with its
// keys sorted. A schema that does not decode is hashed as sent.
func schemaKey(raw json.RawMessage) [sha256.Size]byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return sha256.Sum256(raw)
	}
	b, err := json.Marshal(undescribed(v))
	if err != nil {
		return sha256.Sum256(raw)
	}
	return sha256.Sum256(b)
}

func undescribed(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k != "description" {
				out[k] = undescribed(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = undescribed(e)
		}
		return out
	}
	return v
}

// inherited is a tool that took the record of one it is the same as.
type inherited struct{ Tool, From, Why string }

// sighting is a tool's identity and the listing it was first seen in.
type sighting struct {
	id  identity
	gen int
}

// successor says whether t (as sighted) takes the record of from: the
// same tool, first seen in a later listing (two tools listed together
// from the start are two tools, whatever their schemas).
func successor(t, from sighting) (string, bool) {
	if t.gen <= from.gen || !t.id.same(from.id) {
		return "", false
	}
	if t.id.schema == from.id.schema {
		return "the same input schema, descriptions aside", true
	}
	return "the same description", true
}

// inherit notes t's first sighting, in listing gen, and gives it the
// record (corrections, refusal) of every tool with a record it succeeds
// (mu held): a server that renames a tool after each call, or lists a
// twin of a known liar later, starts it with the liar's record, not a
// clean one.
func (b *hintBook) inherit(t report.Tool, gen int) []inherited {
	if _, seen := b.everSeen[t.Name]; seen || len(b.everSeen) >= maxEverSeen {
		return nil
	}
	me := sighting{id: identityOf(t), gen: gen}
	b.everSeen[t.Name] = me
	var out []inherited
	for _, from := range slices.Clone(b.recorded) {
		if why, ok := successor(me, b.everSeen[from]); ok && from != t.Name {
			b.take(t.Name, from, why)
			out = append(out, inherited{Tool: t.Name, From: from, Why: why})
		}
	}
	return out
}

// take gives tool the record of from (mu held).
func (b *hintBook) take(tool, from, why string) {
	for h, v := range b.fixes[from] {
		if b.fixes[tool] == nil {
			b.fixes[tool] = map[string]bool{}
		}
		b.fixes[tool][h] = v
	}
	if d, ok := b.denies[from]; ok {
		if _, had := b.denies[tool]; !had {
			b.denies[tool] = denial{Rule: d.Rule, Reason: fmt.Sprintf("as %q, whose record it took (%s): %s", from, why, d.Reason)}
		}
	}
	b.noteRecord(tool)
}

// noteRecord remembers that tool has a record to pass on, and passes
// it to the tools seen already that succeed it (mu held): a rename
// listed before the liar's call was judged takes its record all the
// same.
func (b *hintBook) noteRecord(tool string) {
	if !slices.Contains(b.recorded, tool) {
		if len(b.recorded) >= maxRecorded {
			return
		}
		b.recorded = append(b.recorded, tool)
	}
	from, ok := b.everSeen[tool]
	if !ok {
		return
	}
	for name, s := range b.everSeen {
		if why, ok := successor(s, from); ok && name != tool && !b.sameRecord(name, tool) {
			b.take(name, tool, why)
		}
	}
}

// sameRecord says whether tool holds every part of from's record
// already (mu held): taking it again changes nothing.
func (b *hintBook) sameRecord(tool, from string) bool {
	for h, v := range b.fixes[from] {
		if w, ok := b.fixes[tool][h]; !ok || w != v {
			return false
		}
	}
	_, fromDenied := b.denies[from]
	_, denied := b.denies[tool]
	return !fromDenied || denied
}

// maxRecorded bounds the tools whose records are kept for those that
// take them (every tool with a correction or a denial): a server that
// renames without end is stopped by denyServer, not by this list.
const maxRecorded = 1024

// maxEverSeen bounds the names whose identities are remembered: past
// it, a new name is taken as seen (it inherits nothing), and the
// server-level corrections and denials still hold for it.
const maxEverSeen = 2 * maxBookTools
