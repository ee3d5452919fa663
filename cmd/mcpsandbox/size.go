package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/docker/go-units"
)

// sizeHelp is what every size flag's help says of its units: the one
// reading, go-units' RAMInBytes (docker run --memory's).
const sizeHelp = "bytes, or a number with K, M, G, T (KB = KiB = 1024 bytes, MB = MiB, ...)"

// maxSize bounds a size flag (1 PiB): past it a bound means nothing, and
// the float go-units reads through cannot wrap into a small int64.
const maxSize = 1 << 50

// byteSize is a size flag. Every size flag reads its value one way,
// go-units' RAMInBytes: a bare number is bytes; K, M, G, T, P, with or
// without B or iB and in any case, are powers of 1024 (1MB = 1MiB =
// 1048576); a decimal number is taken (1.5GiB).
type byteSize struct {
	n int64
	// zero: 0 is a value (--cache-size 0 keeps nothing).
	zero bool
	// bareWasMiB: a bare number meant MiB in this flag before it read
	// sizes as the others do. One that as bytes is under 1 MiB is
	// refused with a line that says what it means now, so that an old
	// "--disk 20" is never taken for 20 bytes; one of 1 MiB or more meant
	// a TiB or more before, which no one asked of these bounds.
	bareWasMiB bool
}

// parseSize is the one size parser: go-units' RAMInBytes, bounded.
func parseSize(s string) (int64, error) {
	n, err := units.RAMInBytes(strings.TrimSpace(s))
	if err != nil || n < 0 || n > maxSize {
		return 0, fmt.Errorf("%q is not a size: want %s, at most 1PiB", s, sizeHelp)
	}
	return n, nil
}

func (b *byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n == 0 && !b.zero {
		return fmt.Errorf("%q: want a size more than 0, e.g. 1GiB, 20MiB", s)
	}
	if _, bare := strconv.ParseFloat(strings.TrimSpace(s), 64); b.bareWasMiB && bare == nil && n < 1<<20 {
		return fmt.Errorf("%q is %d bytes: a bare number is bytes now (it was MiB); write %sMiB for that, or %sB for bytes", s, n, strings.TrimSpace(s), strings.TrimSpace(s))
	}
	b.n = n
	return nil
}

// String prints the size exactly, in the largest binary unit that
// divides it, so that a default reads back as itself.
func (b *byteSize) String() string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if b.n != 0 && b.n%(1<<u.shift) == 0 {
			return strconv.FormatInt(b.n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(b.n, 10) + "B"
}

func (b *byteSize) Type() string { return "size" }

// formatBytes prints n in the largest binary unit it reaches, to a tenth,
// for people (the cache's listing and messages); byteSize.String is exact.
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size {
			return strings.TrimSuffix(strconv.FormatFloat(float64(n)/float64(u.size), 'f', 1, 64), ".0") + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
