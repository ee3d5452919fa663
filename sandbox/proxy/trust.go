package proxy

import (
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
// input schema with its annotations removed (a reworded property, a
// title, an example is no new tool), and its description.
type identity struct {
	schema [sha256.Size]byte
	// trivial: the schema names no property (no arguments, or none
	// declared): common to unrelated tools, it identifies nothing.
	trivial     bool
	description string
}

func identityOf(t report.Tool) identity {
	key, trivial := schemaKey(t.InputSchema)
	return identity{schema: key, trivial: trivial, description: t.Description}
}

// match says how a and b name one tool: both (the same schema and the
// same description), schema, description, or "" for neither. A trivial
// schema and an empty description match nothing.
func (a identity) match(b identity) string {
	schema := !a.trivial && a.schema == b.schema
	desc := a.description != "" && a.description == b.description
	switch {
	case schema && desc:
		return "the same input schema and description"
	case schema:
		return "the same input schema, annotations aside"
	case desc:
		return "the same description"
	}
	return ""
}

// keys are the index keys a record is found under.
func (a identity) keys() []string {
	var out []string
	if !a.trivial {
		out = append(out, "s:"+string(a.schema[:]))
	}
	if a.description != "" {
		out = append(out, "d:"+a.description)
	}
	return out
}

// annotationKeywords are the JSON Schema keywords that describe and
// constrain nothing: removed before a schema is compared.
var annotationKeywords = map[string]bool{"description": true, "title": true, "examples": true, "default": true,
	"$schema": true, "$comment": true, "$id": true, "deprecated": true, "readOnly": true, "writeOnly": true}

// schemaKey hashes an input schema read as JSON (numbers by value), its
// annotations removed at every depth along with the keywords that say
// nothing (additionalProperties true, an empty required), required
// sorted, re-encoded with its keys sorted; trivial says it has no
// property. A schema that does not decode is hashed as sent.
func schemaKey(raw json.RawMessage) (key [sha256.Size]byte, trivial bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return sha256.Sum256(raw), true
	}
	v = bare(v)
	m, _ := v.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	b, err := json.Marshal(v)
	if err != nil {
		return sha256.Sum256(raw), true
	}
	return sha256.Sum256(b), len(props) == 0
}

func bare(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if annotationKeywords[k] {
				continue
			}
			switch e := e.(type) {
			case bool:
				if k == "additionalProperties" && e {
					continue
				}
			case []any:
				if k == "required" {
					if len(e) == 0 {
						continue
					}
					req := slices.Clone(e)
					slices.SortFunc(req, func(a, b any) int { return cmpString(fmt.Sprint(a), fmt.Sprint(b)) })
					out[k] = req
					continue
				}
			}
			out[k] = bare(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = bare(e)
		}
		return out
	}
	return v
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// inherited is a tool that took the record of one it is the same as.
type inherited struct{ Tool, From, Why string }

// sighting is a tool's identity and when it was first seen as such (the
// book's page count then).
type sighting struct {
	id    identity
	order int
}

// sight notes that t was listed on page order (mu held): a name seen
// again with another identity is a new sighting.
func (b *hintBook) sight(t report.Tool, order int) {
	id := identityOf(t)
	if s, ok := b.everSeen[t.Name]; ok && s.id == id {
		return
	}
	if _, ok := b.everSeen[t.Name]; !ok && len(b.everSeen) >= maxEverSeen {
		return
	}
	b.everSeen[t.Name] = sighting{id: id, order: order}
}

// catchUp gives tool the record (corrections; a refusal, when the tool
// it succeeds is no longer listed or matches it in both schema and
// description) of every tool with a record that it succeeds: the same
// tool (see match), seen first on an earlier page (mu held). Two tools
// listed on one page are two tools. It returns what it took, for the
// log. It runs at each listing and before each call, so that a rename
// listed before its liar's call was judged takes the record all the
// same.
func (b *hintBook) catchUp(tool string) []inherited {
	me, ok := b.everSeen[tool]
	if !ok {
		return nil
	}
	var out []inherited
	for _, k := range me.id.keys() {
		for _, from := range b.recBy[k] {
			fs, ok := b.everSeen[from]
			if from == tool || !ok || fs.order >= me.order {
				continue
			}
			why := me.id.match(fs.id)
			if why == "" {
				continue
			}
			gone := b.tools[from].gen != b.gen
			if b.take(tool, from, why, gone || fs.id == me.id || why == "the same input schema and description") {
				out = append(out, inherited{Tool: tool, From: from, Why: why})
			}
		}
	}
	return out
}

// take gives tool from's corrections, and its refusal if withDenial
// (mu held); it says whether that changed tool's record.
func (b *hintBook) take(tool, from, why string, withDenial bool) bool {
	changed := false
	for h, v := range b.fixes[from] {
		if w, ok := b.fixes[tool][h]; ok && w == v {
			continue
		}
		if b.fixes[tool] == nil {
			b.fixes[tool] = map[string]bool{}
		}
		b.fixes[tool][h], changed = v, true
	}
	if d, ok := b.denies[from]; ok && withDenial {
		if _, had := b.denies[tool]; !had {
			b.denies[tool] = denial{Rule: d.Rule, Reason: fmt.Sprintf("as %q, whose record it took (%s): %s", from, why, d.Reason)}
			changed = true
		}
	}
	if changed {
		b.noteRecord(tool)
	}
	return changed
}

// noteRecord indexes tool, which has a record, under its identity's keys
// (mu held), at most maxPerIdentity tools a key: a record is passed on
// from the first that have it.
func (b *hintBook) noteRecord(tool string) {
	s, ok := b.everSeen[tool]
	if !ok {
		return
	}
	for _, k := range s.id.keys() {
		if l := b.recBy[k]; !slices.Contains(l, tool) && len(l) < maxPerIdentity && len(b.recBy) < maxEverSeen {
			b.recBy[k] = append(l, tool)
		}
	}
}

// maxPerIdentity bounds the tools with a record kept under one identity
// key: what a new name takes is found among these, so a listing costs
// at most this much per tool.
const maxPerIdentity = 16

// maxEverSeen bounds the names whose identities are remembered (and the
// identity keys indexed): past it, a new name is not sighted (it
// inherits nothing), and the server-level corrections and refusals
// still hold for it.
const maxEverSeen = 2 * maxBookTools
