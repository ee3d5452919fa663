package main

import "testing"

// TestByteSize: units are binary, a bare number is MiB, nonsense and
// zero are refused.
func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "20MiB": 20 << 20, "20mib": 20 << 20, "512KiB": 512 << 10, "4096B": 4096, "3": 3 << 20, "2G": 2 << 30, "7 MB": 7 << 20} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("%q = %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "1.5GiB", "MiB", "1TiB2", "99999999999GiB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("%q accepted as %d", in, b)
		}
	}
	b := byteSize(1 << 30)
	if b.String() != "1GiB" {
		t.Errorf("String = %s", b.String())
	}
}
