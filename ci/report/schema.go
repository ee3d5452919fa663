package report

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema returns the JSON Schema of the report, derived from the Go type
// (the published copy is ci/report/report.schema.json, kept equal by a
// test).
func Schema() ([]byte, error) {
	// Raw JSON (annotations, schemas, arguments, serverInfo) is any JSON
	// value, as the server sent it.
	s, err := jsonschema.For[Report](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage](): {},
	}})
	if err != nil {
		return nil, fmt.Errorf("deriving the report schema: %w", err)
	}
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID = "https://github.com/mcpsandbox/mcpsandbox/ci/report/report.schema.json"
	s.Title = "mcpsandbox report (" + SchemaVersion + ")"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
