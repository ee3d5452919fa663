package proxy

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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
// title, an example is no new tool), and its description (hashed: a
// server's long descriptions cost the book 32 bytes each).
type identity struct {
	schema [sha256.Size]byte
	// trivial: the schema names no property (no arguments, or none
	// declared): common to unrelated tools, it identifies nothing.
	trivial     bool
	description [sha256.Size]byte
	described   bool
}

func identityOf(t report.Tool) identity {
	key, trivial := schemaKey(t.InputSchema)
	return identity{schema: key, trivial: trivial, description: sha256.Sum256([]byte(t.Description)), described: t.Description != ""}
}

// The ways two identities match (see match).
const (
	matchBoth   = "the same input schema and description"
	matchSchema = "the same input schema, annotations aside"
	matchDesc   = "the same description"
)

// match says how a and b name one tool: matchBoth, matchSchema,
// matchDesc, or "" for neither. A trivial schema and an empty
// description match nothing.
func (a identity) match(b identity) string {
	schema := !a.trivial && a.schema == b.schema
	desc := a.described && a.description == b.description
	switch {
	case schema && desc:
		return matchBoth
	case schema:
		return matchSchema
	case desc:
		return matchDesc
	}
	return ""
}

// keys are the index keys a record is found under.
func (a identity) keys() []string {
	var out []string
	if !a.trivial {
		out = append(out, "s:"+string(a.schema[:]))
	}
	if a.described {
		out = append(out, "d:"+string(a.description[:]))
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
					slices.SortFunc(req, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
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

// inherited is a tool that took the record of one it is the same as.
type inherited struct{ Tool, From, Why string }

// sighting is a tool's identity and when it was first seen as such (the
// book's page count then).
type sighting struct {
	id    identity
	order int
}

// sight notes that t was listed on page order (mu held): a name seen
// again with another identity is a new sighting (fresh). Full, the book
// forgets the oldest sighting of a tool without a record to make room: a
// server that lists names without end cannot stop the next one from
// being sighted (forgotten and listed again, a name is new: see
// distrustNew). False when every sighting has a record: the tool is then
// listed without its hints.
func (b *hintBook) sight(t report.Tool, order int) (fresh, sighted bool) {
	id := identityOf(t)
	s, seen := b.everSeen[t.Name]
	if seen && s.id == id {
		return false, true
	}
	if !seen && len(b.everSeen) >= maxEverSeen && !b.evictOne() {
		return false, false
	}
	if !seen {
		b.sightOrder = append(b.sightOrder, t.Name)
	}
	b.everSeen[t.Name] = sighting{id: id, order: order}
	return true, true
}

// evictOne forgets the oldest sighting of a tool whose record, if any,
// is not its own (mu held): a record taken is taken again from its
// source when the tool is sighted again; false when every sighting has
// a record of its own. Those go to the back, so a flood costs each name
// once.
func (b *hintBook) evictOne() bool {
	for range len(b.sightOrder) {
		n := b.sightOrder[0]
		b.sightOrder = b.sightOrder[1:]
		if _, ok := b.everSeen[n]; !ok {
			continue
		}
		if b.ownRecord[n] {
			b.sightOrder = append(b.sightOrder, n)
			continue
		}
		delete(b.everSeen, n)
		delete(b.fixes, n)
		delete(b.denies, n)
		delete(b.indexed, n)
		return true
	}
	return false
}

// catchUp gives tool the record of every tool with a record of its own
// that it is the same as (mu held): one it matches in schema and
// description (a twin), listed later, or no longer listed whenever it
// was; one it matches in schema or description alone only when that
// one is no longer listed (a rename). Present are the names of the page
// being listed (nil: none is). It returns what it took, for the log. It
// runs at each listing and before each call, so that a rename listed
// before its liar's call was judged takes the record all the same.
//
// Identity stops lazy renames only: one with a constraint changed and a
// new description matches nothing. distrustNew covers that for hints;
// deny-server-after for refusals.
func (b *hintBook) catchUp(tool string, present map[string]bool) []inherited {
	me, ok := b.everSeen[tool]
	if !ok {
		return nil
	}
	var out []inherited
	for _, k := range me.id.keys() {
		for _, from := range b.recBy[k] {
			fs, ok := b.everSeen[from]
			if from == tool || !ok {
				continue
			}
			why := me.id.match(fs.id)
			gone := !present[from] && b.tools[from].gen != b.gen
			later := fs.order < me.order
			if why == "" || !(gone || (why == matchBoth && later)) {
				continue
			}
			if b.take(tool, from, why) {
				out = append(out, inherited{Tool: tool, From: from, Why: why})
			}
		}
	}
	return out
}

// take gives tool from's corrections and refusal (mu held); it says
// whether that changed tool's record.
func (b *hintBook) take(tool, from, why string) bool {
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
	if d, ok := b.denies[from]; ok {
		if _, had := b.denies[tool]; !had {
			b.denies[tool] = denial{Rule: d.Rule, Reason: fmt.Sprintf("as %q, whose record it took (%s): %s", from, why, d.Reason)}
			changed = true
		}
	}
	if changed {
		b.noteRecord(tool, false)
	}
	return changed
}

// noteRecord indexes tool, which has a record (own: run's correction
// or refusal of it; else taken from another), under its identity's keys
// (mu held), at most maxPerIdentity tools a key: a tool whose record is
// its own displaces one whose record was taken, so that heirs a server
// multiplies cannot push the liar out, while a chain of renames still
// passes the record on.
func (b *hintBook) noteRecord(tool string, own bool) {
	s, ok := b.everSeen[tool]
	if !ok || (b.indexed[tool] && !own) || b.ownRecord[tool] {
		return
	}
	added := false
	for _, k := range s.id.keys() {
		l := b.recBy[k]
		switch {
		case slices.Contains(l, tool):
			added = true
		case len(l) < maxPerIdentity && len(b.recBy) < maxEverSeen:
			b.recBy[k], added = append(l, tool), true
		case own:
			if i := slices.IndexFunc(l, func(n string) bool { return !b.ownRecord[n] }); i >= 0 {
				l[i], added = tool, true
			}
		}
	}
	if added {
		b.indexed[tool] = true
		if own {
			b.ownRecord[tool] = true
		}
	}
}

// distrustNew notes that the server broke hint (mu held): a tool first
// sighted from the next page on is listed with hint on the safe side, a
// name being cheap to change (see catchUp).
func (b *hintBook) distrustNew(hint string) {
	if _, ok := b.distrust[hint]; !ok {
		b.distrust[hint] = b.pages
	}
}

// distrusted are the hints tool is not trusted with: first sighted after
// the server broke them, or not sighted at all (mu held).
func (b *hintBook) distrusted(tool string) []string {
	s, ok := b.everSeen[tool]
	var out []string
	for _, h := range safetyHints {
		if after, broke := b.distrust[h]; broke && (!ok || s.order > after) {
			out = append(out, h)
		}
	}
	return out
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
