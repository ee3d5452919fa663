package reporttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// StrictJSON checks data as the strictest reader would: one JSON value
// (or, with lines, one per line), valid UTF-8 throughout, no unpaired
// surrogate escape and no replacement character in any string (Go decodes
// both invalid bytes and unpaired surrogates to U+FFFD, so one there means
// the text was not clean).
func StrictJSON(data []byte, lines bool) error {
	if !utf8.Valid(data) {
		return errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for n := 0; ; n++ {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF && (lines || n == 1) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("value %d: %w", n+1, err)
		}
		if !lines && n > 0 {
			return errors.New("more than one JSON value")
		}
		if err := strictValue(v); err != nil {
			return fmt.Errorf("value %d: %w", n+1, err)
		}
	}
}

func strictValue(v any) error {
	switch v := v.(type) {
	case string:
		if strings.ContainsRune(v, utf8.RuneError) {
			return fmt.Errorf("string %q holds U+FFFD (invalid bytes or an unpaired surrogate)", v)
		}
	case []any:
		for _, x := range v {
			if err := strictValue(x); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, x := range v {
			if err := strictValue(k); err != nil {
				return err
			}
			if err := strictValue(x); err != nil {
				return err
			}
		}
	}
	return nil
}
