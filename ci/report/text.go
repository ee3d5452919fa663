package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// OneLine folds whitespace, newlines included, so that a message fits on
// one line of a report, a log or an error.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Printable escapes what a terminal would act on rather than print, so
// that a string from the server can be shown as it is: C0 control
// characters (newline and tab included) and DEL as \xNN, C1 control
// characters (U+0080 to U+009F, which some terminals read as ESC
// sequences) and the bidirectional controls (U+202A-U+202E,
// U+2066-U+2069, which reorder what is shown) as \uNNNN, and a byte that
// is not UTF-8 as \xNN. Everything else is kept: the result is valid
// UTF-8 with no control character. As with EscapeInvalid, the server's
// own text "\x1b" reads the same as the character.
func Printable(s string) string {
	clean := utf8.ValidString(s)
	for _, r := range s {
		if !clean {
			break
		}
		if escapes(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case escapes(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// PrintableLines is Printable for text shown on several lines: each line
// escaped, the newlines kept.
func PrintableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Printable(l)
	}
	return strings.Join(lines, "\n")
}

// escapes says whether Printable escapes r.
func escapes(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
