package probes

import (
	"encoding/json"
	"fmt"
)

// Tool is what planning needs to know of a listed tool.
type Tool struct {
	Name        string
	InputSchema json.RawMessage
}

// Call is one planned tools/call.
type Call struct {
	Tool      string
	Arguments json.RawMessage
	// Source is "probe" for a step of the probe file, "empty" for a tool
	// called with {} because its schema requires nothing.
	Source string
}

// Skip is a listed tool that will not be called, and why.
type Skip struct {
	Tool   string
	Reason string
}

// Plan orders the calls of a scan: the probe steps in file order, then each
// listed tool without a probe, in listing order, with {} when its input
// schema requires nothing. Steps naming unlisted tools are returned apart.
func Plan(tools []Tool, steps []Step) (calls []Call, skips []Skip, unknown []string) {
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
		calls = append(calls, Call{Tool: s.Tool, Arguments: s.Arguments, Source: "probe"})
	}
	for _, t := range tools {
		if probed[t.Name] {
			continue
		}
		req, err := requiredProps(t.InputSchema)
		switch {
		case err != nil:
			skips = append(skips, Skip{Tool: t.Name, Reason: "no probe, and its input schema does not decode: " + err.Error()})
		case len(req) > 0:
			skips = append(skips, Skip{Tool: t.Name, Reason: fmt.Sprintf("no probe, and its input schema requires %q", req)})
		default:
			calls = append(calls, Call{Tool: t.Name, Arguments: json.RawMessage("{}"), Source: "empty"})
		}
	}
	return calls, skips, unknown
}

// requiredProps returns the top-level required properties of a schema.
func requiredProps(schema json.RawMessage) ([]string, error) {
	if len(schema) == 0 || string(schema) == "null" {
		return nil, nil
	}
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	return s.Required, nil
}
