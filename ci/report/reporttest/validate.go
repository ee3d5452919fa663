package reporttest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Validate checks a JSON report against ci/report/report.schema.json.
func Validate(doc []byte) error {
	_, file, _, _ := runtime.Caller(0)
	schemaPath := filepath.Join(filepath.Dir(file), "..", "report.schema.json")
	return ValidateWith(schemaPath, doc)
}

// ValidateWith checks a JSON document against the JSON Schema file at
// schemaPath (any draft the validator knows: 4, 6, 7, 2019-09, 2020-12).
func ValidateWith(schemaPath string, doc []byte) error {
	sb, err := os.ReadFile(schemaPath)
	if err != nil {
		return err
	}
	sv, err := jsonschema.UnmarshalJSON(bytes.NewReader(sb))
	if err != nil {
		return fmt.Errorf("reading schema %s: %w", schemaPath, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaPath, sv); err != nil {
		return err
	}
	s, err := c.Compile(schemaPath)
	if err != nil {
		return fmt.Errorf("compiling schema %s: %w", schemaPath, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("decoding document: %w", err)
	}
	return s.Validate(v)
}
