package report

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Every string in a report is valid UTF-8, whatever the server sent: a
// byte that is not part of valid UTF-8 is written as the four characters
// \xNN (lower-case hex), as paths are (see overlay.EscapePath), and
// nothing else is changed. A server's own text that holds a backslash
// followed by "x" and two hex digits reads the same: the transcript keeps
// the bytes as sent (see sandbox.Frame).

// EscapeInvalid returns s with each byte that is not part of valid UTF-8
// written as \xNN; s itself when it is valid.
func EscapeInvalid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			fmt.Fprintf(&b, `\x%02x`, s[0])
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// CleanJSON returns raw JSON text that every strict reader accepts and in
// which no value is hidden by an escape: each string literal that holds
// invalid UTF-8, an unpaired surrogate escape (\ud800, which strict
// decoders refuse) or an escape of a printable ASCII character other than
// those encoders escape by habit (", \, <, >, &) is written again,
// decoded, with invalid bytes as the text \xNN and unpaired surrogates as
// the text \udXXX. Other literals, and everything outside strings, stay
// byte for byte, so that a schema as sent stays as sent. Text that is not
// JSON is returned as a JSON string of itself, escaped the same way.
func CleanJSON(raw []byte) []byte { return cleanJSON(raw, false) }

// DecodeEscapes is CleanJSON that keeps invalid bytes as they are: the
// same literals are written again, their escapes decoded (so that no
// escape hides a value from a search of the bytes), unpaired surrogates
// as the text \udXXX. The result is JSON only if raw was valid UTF-8.
func DecodeEscapes(raw []byte) []byte { return cleanJSON(raw, true) }

func cleanJSON(raw []byte, keepInvalid bool) []byte {
	if !json.Valid(raw) {
		if keepInvalid {
			return raw
		}
		if len(raw) == 0 {
			return raw
		}
		out, _ := json.Marshal(EscapeInvalid(string(raw)))
		return out
	}
	var out []byte
	last := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		end, dirty := scanString(raw, i)
		if dirty {
			if out == nil {
				out = make([]byte, 0, len(raw)+16)
			}
			out = append(out, raw[last:i]...)
			out = appendString(out, decodeString(raw[i+1:end], keepInvalid))
			last = end + 1
		}
		i = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}

// scanString finds the closing quote of the literal opening at raw[i] and
// says whether the literal must be written again.
func scanString(raw []byte, i int) (end int, dirty bool) {
	for j := i + 1; j < len(raw); j++ {
		c := raw[j]
		switch {
		case c == '"':
			return j, dirty
		case c == '\\' && j+1 < len(raw):
			j++
			switch raw[j] {
			case '/':
				dirty = true
			case 'u':
				if j+4 < len(raw) {
					r, _ := strconv.ParseUint(string(raw[j+1:j+5]), 16, 32)
					switch {
					case utf16.IsSurrogate(rune(r)):
						// A pair is fine; decodeString tells the unpaired.
						if r >= 0xdc00 || j+10 >= len(raw) || raw[j+5] != '\\' || raw[j+6] != 'u' {
							dirty = true
						} else if lo, _ := strconv.ParseUint(string(raw[j+7:j+11]), 16, 32); lo < 0xdc00 || lo > 0xdfff {
							dirty = true
						} else {
							j += 6 // the pair's low half
						}
					case r >= 0x20 && r < 0x7f && !strings.ContainsRune(`"\<>&`, rune(r)):
						dirty = true
					}
					j += 4
				}
			}
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(raw[j:])
			if r == utf8.RuneError && n == 1 {
				dirty = true
			}
			j += n - 1
		}
	}
	return len(raw) - 1, dirty
}

// decodeString decodes the body of a JSON string literal into text with
// invalid bytes as \xNN (or kept) and unpaired surrogates as \udXXX.
func decodeString(body []byte, keepInvalid bool) string {
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); i++ {
		// Plain ASCII goes in runs.
		j := i
		for j < len(body) && body[j] != '\\' && body[j] < utf8.RuneSelf {
			j++
		}
		if j > i {
			b.Write(body[i:j])
			i = j - 1
			continue
		}
		c := body[i]
		if c != '\\' || i+1 >= len(body) {
			if c >= utf8.RuneSelf {
				r, n := utf8.DecodeRune(body[i:])
				if r == utf8.RuneError && n == 1 && !keepInvalid {
					fmt.Fprintf(&b, `\x%02x`, c)
				} else {
					b.Write(body[i : i+n])
				}
				i += n - 1
				continue
			}
			b.WriteByte(c)
			continue
		}
		i++
		switch body[i] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if i+4 >= len(body) {
				b.Write(body[i-1:])
				return b.String()
			}
			r, _ := strconv.ParseUint(string(body[i+1:i+5]), 16, 32)
			i += 4
			if !utf16.IsSurrogate(rune(r)) {
				b.WriteRune(rune(r))
				continue
			}
			if r < 0xdc00 && i+6 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
				lo, _ := strconv.ParseUint(string(body[i+3:i+7]), 16, 32)
				if p := utf16.DecodeRune(rune(r), rune(lo)); p != utf8.RuneError {
					b.WriteRune(p)
					i += 6
					continue
				}
			}
			fmt.Fprintf(&b, `\u%04x`, r)
		default: // " \ /
			b.WriteByte(body[i])
		}
	}
	return b.String()
}

// appendString appends s as a JSON string literal, escaping only what JSON
// requires (s is valid UTF-8).
func appendString(out []byte, s string) []byte {
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\n':
			out = append(out, `\n`...)
		case c == '\r':
			out = append(out, `\r`...)
		case c == '\t':
			out = append(out, `\t`...)
		case c < 0x20:
			out = fmt.Appendf(out, `\u%04x`, c)
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// Sanitize makes every string of the report valid UTF-8 (EscapeInvalid)
// and every raw JSON value clean (CleanJSON). Scans call it before
// Redact, so that no escape hides a planted value from it.
func (r *Report) Sanitize() { sanitizeValue(reflect.ValueOf(r).Elem()) }

// Sanitize is Report.Sanitize for effects seen outside a report (a
// replay's), so that their keys compare with the report's.
func (e *Effects) Sanitize() { sanitizeValue(reflect.ValueOf(e).Elem()) }

func sanitizeValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			sanitizeValue(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				sanitizeValue(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Type() == rawType {
			if !v.IsNil() {
				v.SetBytes(CleanJSON(v.Bytes()))
			}
			return
		}
		for i := 0; i < v.Len(); i++ {
			sanitizeValue(v.Index(i))
		}
	case reflect.Map:
		// Maps hold counts (Summary.BySeverity), keyed by our own names.
	case reflect.String:
		if v.CanSet() {
			v.SetString(EscapeInvalid(v.String()))
		}
	}
}
