package probes

import (
	"encoding/json"
	"sort"
)

// Tool is what planning needs to know of a listed tool.
type Tool struct {
	Name        string
	InputSchema json.RawMessage
	// Idempotent is a declared idempotentHint: true; such a tool is called
	// a second time with the same arguments, to check the claim.
	Idempotent bool
	// ReadOnly and NonDestructive are declared readOnlyHint: true and
	// destructiveHint: false, Destructive destructiveHint: true (and not
	// read-only): they order the calls.
	ReadOnly, NonDestructive, Destructive bool
}

// Call is one planned tools/call.
type Call struct {
	Tool      string
	Arguments json.RawMessage
	// Source is "probe" for a step of the probe file, "synth" for
	// arguments made from the input schema, "empty" for {}, "repeat" for a
	// call made again with the same arguments, "negative" and "retry" (see
	// Negative, Retries), "boundary" for a path or URL out of bounds (see
	// Boundary).
	Source      string
	ExpectError bool
	// Negative names the schema rule the arguments break (Source
	// "negative").
	Negative string
	// Alternatives are the next candidate arguments, tried in order (Source
	// "retry") when the server refuses these (see Refused).
	Alternatives []json.RawMessage
	// Setup marks the call of a setup tool (see IsSetup), whose state later
	// calls may need: with --isolation call, their sessions replay it.
	Setup bool
	// Retries is the seq of the call this one retries (Source "retry"),
	// set as the scan runs.
	Retries int
	// Offer says that the arguments take, at call time, the ids and names
	// that earlier results returned (see State.Offer).
	Offer bool
	// Boundary is what a boundary call tries (Source "boundary"; see
	// WithBoundary).
	Boundary *BoundaryProbe
}

// WithNegatives appends, for each tool's first call, calls whose inputs
// each break one rule of its schema (see Negatives).
func WithNegatives(tools []Tool, calls []Call) []Call {
	schema := map[string]json.RawMessage{}
	for _, t := range tools {
		schema[t.Name] = t.InputSchema
	}
	out := append([]Call(nil), calls...)
	done := map[string]bool{}
	for _, c := range calls {
		if done[c.Tool] || c.Source == "repeat" {
			continue
		}
		done[c.Tool] = true
		for _, n := range Negatives(schema[c.Tool], c.Arguments) {
			out = append(out, Call{Tool: c.Tool, Arguments: n.Arguments, Source: "negative", ExpectError: true, Negative: n.Violation})
		}
	}
	return out
}

// Skip is a listed tool that will not be called, and why.
type Skip struct {
	Tool   string
	Reason string
}

// Plan orders the calls of a scan: the probe steps in file order, then each
// listed tool without a probe: setup tools first (see IsSetup; those that
// declare destructiveHint: true stay with the rest), then read-only ones,
// then additive, then the rest, then teardown tools (see IsTeardown),
// each in listing order (setup tools that choose a place first), with arguments
// synthesized from its input schema ({} when it requires nothing) and
// the next candidates for retries. Steps naming unlisted tools are
// returned apart. Paths point into canary c.
func Plan(tools []Tool, steps []Step, c Canary) (calls []Call, skips []Skip, unknown []string) {
	listed := map[string]bool{}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		listed[t.Name] = true
		names = append(names, t.Name)
	}
	prefix := ServerPrefix(names)
	probed := map[string]bool{}
	for _, s := range steps {
		if !listed[s.Tool] {
			unknown = append(unknown, s.Tool)
			continue
		}
		probed[s.Tool] = true
		calls = append(calls, Call{Tool: s.Tool, Arguments: s.Arguments, Source: "probe", ExpectError: s.ExpectError, Setup: IsSetup(s.Tool, prefix)})
		for i := 0; i < min(s.Repeat, MaxRepeat); i++ { // Parse refuses more
			calls = append(calls, Call{Tool: s.Tool, Arguments: s.Arguments, Source: "repeat", ExpectError: s.ExpectError})
		}
	}
	order := append([]Tool(nil), tools...)
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i], prefix) < rank(order[j], prefix) })
	for _, t := range order {
		if probed[t.Name] {
			continue
		}
		cands, err := CandidatesIn(c, t.Name, t.InputSchema, MaxCandidates)
		if err != nil {
			skips = append(skips, Skip{Tool: t.Name, Reason: "no probe, and " + err.Error()})
			continue
		}
		src := "synth"
		if string(cands[0]) == "{}" {
			src = "empty"
		}
		calls = append(calls, Call{Tool: t.Name, Arguments: cands[0], Source: src, Alternatives: cands[1:], Setup: IsSetup(t.Name, prefix), Offer: true})
	}
	return withRepeats(tools, calls), skips, unknown
}

// rank orders the tools without probes. Setup tools come first, those
// that choose a place (see IsPlaceSetup) before the others, so that the
// state they make (a working directory, a session, a connection) is
// there for the tools that read it; then read-only tools, then additive,
// then the rest, so that a tool that moves or deletes the canaries comes
// after the tools that read them, and among the rest those that replace
// or remove what they are given (see ReplaceWords: write_file, move_file,
// delete_branch) after those that change it in place (edit_block), which
// need it as it was; teardown tools last, so that they do
// not undo the setup before the others ran. A setup tool that declares
// itself destructive keeps its place among the rest, for the same
// reason. Names are read after the server's prefix too (see
// ServerPrefix): git_set_working_dir is a setup tool.
func rank(t Tool, prefix []string) int {
	const (
		placeSetup = iota
		setup
		readOnly
		additive
		rest
		replacing
		teardown
	)
	switch {
	case IsSetup(t.Name, prefix) && t.Destructive:
		return rest
	case IsPlaceSetup(t.Name, prefix):
		return placeSetup
	case IsSetup(t.Name, prefix):
		return setup
	case IsTeardown(t.Name, prefix):
		return teardown
	case t.ReadOnly:
		return readOnly
	case t.NonDestructive:
		return additive
	case hasVerb(t.Name, prefix, ReplaceWords):
		return replacing
	}
	return rest
}

// ReplaceWords are the verbs of the names of tools that replace or remove
// what they are given (write_file overwrites a file, move_file takes it
// away): called after the other tools that change things, so that those
// find the canaries as they were planted.
var ReplaceWords = []string{"write", "overwrite", "move", "mv", "rename", "delete", "remove", "rm", "kill", "drop", "destroy", "purge", "wipe", "truncate"}

// withRepeats calls each idempotent tool a second time, right after its
// first call with the same arguments, unless the plan already repeats it.
func withRepeats(tools []Tool, calls []Call) []Call {
	idem := map[string]bool{}
	for _, t := range tools {
		idem[t.Name] = t.Idempotent
	}
	var out []Call
	seen := map[string]int{}
	for _, c := range calls {
		seen[c.Tool+"\x00"+string(c.Arguments)]++
	}
	done := map[string]bool{}
	for _, c := range calls {
		out = append(out, c)
		key := c.Tool + "\x00" + string(c.Arguments)
		if idem[c.Tool] && seen[key] == 1 && !done[key] {
			done[key] = true
			out = append(out, Call{Tool: c.Tool, Arguments: c.Arguments, Source: "repeat", ExpectError: c.ExpectError})
		}
	}
	return out
}
