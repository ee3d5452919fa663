package report

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaID is where the published schema lives; it stays the same across
// minor versions (the title names the version).
const SchemaID = "https://github.com/mcpsandbox/mcpsandbox/ci/report/report.schema.json"

// Schema returns the JSON Schema of the report, derived from the Go type
// (the published copy is ci/report/report.schema.json, kept equal by a
// test).
func Schema() ([]byte, error) {
	s, err := jsonschema.For[Report](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		// Raw JSON (annotations, schemas, arguments, serverInfo) is any
		// JSON value, as the server sent it.
		reflect.TypeFor[json.RawMessage](): {},
		// The enums are ints in Go and names in JSON.
		reflect.TypeFor[Severity]():       enumSchema(Severities()),
		reflect.TypeFor[ChangeKind]():     enumSchema(ChangeKinds()),
		reflect.TypeFor[CoverageStatus](): enumSchema(CoverageStatuses()),
	}})
	if err != nil {
		return nil, fmt.Errorf("deriving the report schema: %w", err)
	}
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID = SchemaID
	s.Title = "mcpsandbox report (" + SchemaVersion + ")"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// enumSchema is a string schema that allows the names of vs.
func enumSchema[T fmt.Stringer](vs []T) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range vs {
		s.Enum = append(s.Enum, v.String())
	}
	return s
}
