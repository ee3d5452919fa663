package probes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Step is one tool call to make.
type Step struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Repeat makes the call this many more times with the same arguments
	// (0 to MaxRepeat: a file asking more is refused, not cut).
	Repeat int `json:"repeat,omitempty"`
	// ExpectError says the call should fail (isError or a JSON-RPC error);
	// a success is then a problem in the report.
	ExpectError bool `json:"expectError,omitempty"`
}

// MaxRepeat bounds a step's repeat: each is a call, and the calls before
// a suspect are made again in each of its replay's two legs.
const MaxRepeat = 100

// Load reads a probe file.
func Load(path string) ([]Step, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading probes: %w", err)
	}
	steps, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("probes %s: %w", path, err)
	}
	return steps, nil
}

// Parse reads probes from JSON: either an object mapping tool names to
// argument objects, kept in file order, or an array of steps.
func Parse(b []byte) ([]Step, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("empty file")
	}
	switch b[0] {
	case '[':
		var steps []Step
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&steps); err != nil {
			return nil, fmt.Errorf("decoding steps: %w", err)
		}
		for i := range steps {
			if steps[i].Tool == "" {
				return nil, fmt.Errorf("step %d names no tool", i+1)
			}
			if err := checkArgs(steps[i].Tool, &steps[i].Arguments); err != nil {
				return nil, err
			}
			if r := steps[i].Repeat; r < 0 || r > MaxRepeat {
				return nil, fmt.Errorf("step %d (%q): repeat %d: want 0 to %d", i+1, steps[i].Tool, r, MaxRepeat)
			}
		}
		return steps, nil
	case '{':
		return parseObject(b)
	}
	return nil, fmt.Errorf("want a JSON object (tool name to arguments) or an array of steps")
}

// parseObject decodes an object token by token, since a map would lose the
// file's order.
func parseObject(b []byte) ([]Step, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var steps []Step
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		name := tok.(string) // object keys are strings
		var args json.RawMessage
		if err := dec.Decode(&args); err != nil {
			return nil, fmt.Errorf("decoding arguments of %q: %w", name, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("tool %q appears twice", name)
		}
		seen[name] = true
		if err := checkArgs(name, &args); err != nil {
			return nil, err
		}
		steps = append(steps, Step{Tool: name, Arguments: args})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the object")
	}
	return steps, nil
}

// checkArgs requires arguments to be an object; absent or null means {}.
func checkArgs(tool string, args *json.RawMessage) error {
	t := bytes.TrimSpace(*args)
	if len(t) == 0 || string(t) == "null" {
		*args = json.RawMessage("{}")
		return nil
	}
	if t[0] != '{' {
		return fmt.Errorf("arguments of %q must be a JSON object", tool)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, t); err != nil {
		return fmt.Errorf("arguments of %q: %w", tool, err)
	}
	*args = buf.Bytes()
	return nil
}
