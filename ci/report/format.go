package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes the report as indented JSON with a final newline. Map
// keys are sorted by encoding/json, so the bytes depend only on the report.
func WriteJSON(w io.Writer, r *Report) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encoding report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// Hint renders a declared hint: true, false, or "·" when not declared.
func Hint(b *bool) string {
	switch {
	case b == nil:
		return "·"
	case *b:
		return "true"
	}
	return "false"
}

// CompactJSON is raw JSON on one line, without insignificant spaces; raw
// as it is when it is not JSON ("" for none).
func CompactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
