package jsonfile

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Write writes v as indented JSON; what names the file in errors.
func Write(path, what string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", what, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	return nil
}

// Read decodes path into v and checks that version() is one of want.
func Read(path, what string, v any, version func() string, want ...string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	if got := version(); !slices.Contains(want, got) {
		return fmt.Errorf("%s %s: version %q, want %s", what, path, got, strings.Join(want, " or "))
	}
	return nil
}
