package enum

import (
	"fmt"
	"strings"
)

// ErrUnknown is wrapped by every Parse error (sandbox.ErrUnknownMode is
// it).
var ErrUnknown = fmt.Errorf("unknown mode")

// Name is v's name in names, or mode(v) for 0 and values past the list.
func Name(names []string, v int) string {
	if v <= 0 || v >= len(names) {
		return fmt.Sprintf("mode(%d)", v)
	}
	return names[v]
}

// Parse is the value named s in names; what names the enum in the error.
func Parse(names []string, what, s string) (int, error) {
	for v, n := range names {
		if n != "" && n == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: %s %q (want %s)", ErrUnknown, what, s, strings.Join(names[1:], ", "))
}
