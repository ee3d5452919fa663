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
	// destructiveHint: false: they order the calls.
	ReadOnly, NonDestructive bool
}

// Call is one planned tools/call.
type Call struct {
	Tool      string
	Arguments json.RawMessage
	// Source is "probe" for a step of the probe file, "synth" for
	// arguments made from the input schema, "empty" for {}, "repeat" for a
	// call made again with the same arguments.
	Source      string
	ExpectError bool
	// Negative names the schema rule the arguments break (Source
	// "negative").
	Negative string
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
// listed tool without a probe (read-only ones first, then additive, then
// the rest, each in listing order), with arguments synthesized
// from its input schema ({} when it requires nothing). Steps naming
// unlisted tools are returned apart. Paths point into canary c.
func Plan(tools []Tool, steps []Step, c Canary) (calls []Call, skips []Skip, unknown []string) {
	listed := map[string]bool{}
	for _, t := range tools {
		listed[t.Name] = true
	}
	probed := map[string]bool{}
	for _, s := range steps {
		if !listed[s.Tool] {
			unknown = append(unknown, s.Tool)
			continue
		}
		probed[s.Tool] = true
		calls = append(calls, Call{Tool: s.Tool, Arguments: s.Arguments, Source: "probe", ExpectError: s.ExpectError})
		for i := 0; i < s.Repeat && i < 100; i++ {
			calls = append(calls, Call{Tool: s.Tool, Arguments: s.Arguments, Source: "repeat", ExpectError: s.ExpectError})
		}
	}
	// Tools without probes run read-only first, then additive, then the
	// rest, so that a tool that moves or deletes the canaries comes after
	// the tools that read them.
	order := append([]Tool(nil), tools...)
	rank := func(t Tool) int {
		switch {
		case t.ReadOnly:
			return 0
		case t.NonDestructive:
			return 1
		}
		return 2
	}
	sort.SliceStable(order, func(i, j int) bool { return rank(order[i]) < rank(order[j]) })
	for _, t := range order {
		if probed[t.Name] {
			continue
		}
		args, err := SynthesizeIn(c, t.Name, t.InputSchema)
		if err != nil {
			skips = append(skips, Skip{Tool: t.Name, Reason: "no probe, and " + err.Error()})
			continue
		}
		src := "synth"
		if string(args) == "{}" {
			src = "empty"
		}
		calls = append(calls, Call{Tool: t.Name, Arguments: args, Source: src})
	}
	return withRepeats(tools, calls), skips, unknown
}

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
