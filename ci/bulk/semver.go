package bulk

import (
	"fmt"
	"strconv"
	"strings"
)

// version is a semantic version's numbers; prerelease tags are ignored
// (an engines range rarely names one).
type version [3]int

func parseVersion(s string) (version, int, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "v"), "=")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	var v version
	parts := strings.Split(s, ".")
	if len(parts) > 3 || s == "" {
		return v, 0, fmt.Errorf("version %q", s)
	}
	for i, p := range parts {
		if p == "x" || p == "X" || p == "*" {
			return v, i, nil
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, 0, fmt.Errorf("version %q", s)
		}
		v[i] = n
	}
	return v, len(parts), nil
}

func (a version) cmp(b version) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Satisfies says whether version v is in the npm range r (the common
// forms engines use: comparators >= > <= < =, ^, ~, x-ranges, hyphen
// ranges, ||). An error says the range was not understood.
func Satisfies(v, r string) (bool, error) {
	ver, n, err := parseVersion(v)
	if err != nil || n != 3 {
		return false, fmt.Errorf("version %q: want X.Y.Z", v)
	}
	for _, alt := range strings.Split(r, "||") {
		ok, err := satisfiesAll(ver, alt)
		if err != nil {
			return false, fmt.Errorf("range %q: %w", r, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func satisfiesAll(v version, set string) (bool, error) {
	set = strings.TrimSpace(set)
	if lo, hi, ok := strings.Cut(set, " - "); ok {
		a, _, err := parseVersion(lo)
		if err != nil {
			return false, err
		}
		b, n, err := parseVersion(hi)
		if err != nil {
			return false, err
		}
		return v.cmp(a) >= 0 && (v.cmp(b) <= 0 || n < 3 && upper(b, n).cmp(v) > 0), nil
	}
	// Operators may be followed by a space: ">= 18".
	for _, op := range []string{">=", "<=", ">", "<", "=", "^", "~"} {
		set = strings.ReplaceAll(set, op+" ", op)
	}
	for _, c := range strings.Fields(set) {
		ok, err := satisfiesOne(v, c)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// upper is the first version past a partial one: 1.2 → 1.3.0.
func upper(b version, n int) version {
	switch n {
	case 0:
		return version{1 << 30, 0, 0}
	case 1:
		return version{b[0] + 1, 0, 0}
	case 2:
		return version{b[0], b[1] + 1, 0}
	}
	return b
}

func satisfiesOne(v version, c string) (bool, error) {
	if c == "*" || c == "x" || c == "" {
		return true, nil
	}
	op := ""
	for _, o := range []string{">=", "<=", ">", "<", "=", "^", "~"} {
		if strings.HasPrefix(c, o) {
			op, c = o, c[len(o):]
			break
		}
	}
	b, n, err := parseVersion(c)
	if err != nil {
		return false, err
	}
	switch op {
	case ">=":
		return v.cmp(b) >= 0, nil
	case ">":
		if n < 3 {
			return v.cmp(upper(b, n)) >= 0, nil
		}
		return v.cmp(b) > 0, nil
	case "<=":
		if n < 3 {
			return v.cmp(upper(b, n)) < 0, nil
		}
		return v.cmp(b) <= 0, nil
	case "<":
		return v.cmp(b) < 0, nil
	case "^":
		hi := version{b[0] + 1, 0, 0}
		switch {
		case b[0] == 0 && n >= 2 && b[1] != 0:
			hi = version{0, b[1] + 1, 0}
		case b[0] == 0 && n == 3 && b[1] == 0:
			hi = version{0, 0, b[2] + 1}
		case b[0] == 0 && n == 2:
			hi = version{0, 1, 0}
		}
		return v.cmp(b) >= 0 && v.cmp(hi) < 0, nil
	case "~":
		hi := upper(b, min(n, 2))
		if n == 3 {
			hi = version{b[0], b[1] + 1, 0}
		}
		return v.cmp(b) >= 0 && v.cmp(hi) < 0, nil
	}
	// = or bare: a partial version is an x-range.
	return v.cmp(b) >= 0 && (n == 3 && v.cmp(b) == 0 || n < 3 && v.cmp(upper(b, n)) < 0), nil
}
