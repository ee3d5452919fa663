package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag of bytes written with a binary unit: 1GiB, 20MiB,
// 512KiB, 4096B (K, M, G and KB, MB, GB mean the same); a bare number is
// MiB, as --memory and --hash-budget are.
type byteSize int64

var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"gib", 30}, {"gb", 30}, {"g", 30}, {"mib", 20}, {"mb", 20}, {"m", 20}, {"kib", 10}, {"kb", 10}, {"k", 10}, {"b", 0}}

// maxSize bounds a size flag (1 PiB): no shift overflows.
const maxSize = 1 << 50

func (b *byteSize) Set(s string) error {
	low := strings.ToLower(strings.TrimSpace(s))
	shift := uint(20)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(low, u.suffix); ok {
			low, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(low, 10, 64)
	if err != nil || n <= 0 || n > maxSize>>shift {
		return fmt.Errorf("%q: want a size more than 0, e.g. 1GiB, 20MiB", s)
	}
	*b = byteSize(n << shift)
	return nil
}

func (b *byteSize) String() string {
	switch n := int64(*b); {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	default:
		return fmt.Sprintf("%dB", n)
	}
}

func (b *byteSize) Type() string { return "size" }
