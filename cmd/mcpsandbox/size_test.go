package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestSizeFlagsReadAlike: --disk, --max-report and --cache-size read a
// size one way (#33): 1MB, 1MiB, 1m and 1048576 are the same bytes.
func TestSizeFlagsReadAlike(t *testing.T) {
	for _, in := range []string{"1MB", "1MiB", "1048576", "1m", "1 MiB", "1024KiB", "1024k"} {
		so, _ := sessionOptions(t, flagLimits, "--disk", in)
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		cache, report := cacheSizeFlag(fs), reportBoundFlag(fs)
		if err := fs.Parse([]string{"--cache-size", in, "--max-report", in}); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if so.Disk != 1<<20 || cache() != 1<<20 || report() != 1<<20 {
			t.Errorf("%q: --disk %d, --cache-size %d, --max-report %d; want 1048576 each", in, so.Disk, cache(), report())
		}
	}
}

// TestByteSize: the units are go-units' binary ones, a decimal is taken,
// nonsense and sizes past 1PiB are refused; 0 only where it is a value.
func TestByteSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "20MiB": 20 << 20, "20mib": 20 << 20, "512KiB": 512 << 10,
		"4096B": 4096, "2G": 2 << 30, "7 MB": 7 << 20, "1.5GiB": 3 << 29, "2TB": 2 << 40, "1PiB": 1 << 50} {
		b := byteSize{}
		if err := b.Set(in); err != nil || b.n != want {
			t.Errorf("%q = %d, %v; want %d", in, b.n, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "MiB", "1TiB2", "1XB", "1MiBB", "99999999999GiB", "1e30", "1PiB1", "NaN", "Inf"} {
		b := byteSize{}
		if err := b.Set(in); err == nil {
			t.Errorf("%q accepted as %d", in, b.n)
		}
	}
	if b := (byteSize{zero: true}); b.Set("0") != nil || b.n != 0 {
		t.Errorf("0 where it is a value: %d", b.n)
	}
	for n, want := range map[int64]string{1 << 30: "1GiB", 64 << 20: "64MiB", 1536: "1536B", 7: "7B", 0: "0B"} {
		if got := (&byteSize{n: n}).String(); got != want {
			t.Errorf("String(%d) = %s, want %s", n, got, want)
		}
	}
	for n, want := range map[int64]string{0: "0B", 2 << 30: "2GiB", 3 << 19: "1.5MiB", 1536: "1.5KiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestOldBareSizesAreRefused: a bare number meant MiB in --disk and
// --max-report; one that as bytes is under 1 MiB is refused with a line
// saying what it means now, never taken for bytes. --cache-size's bare
// number was bytes already and stays so.
func TestOldBareSizesAreRefused(t *testing.T) {
	for _, flag := range []string{"--disk", "--max-report"} {
		var out, errb bytes.Buffer
		code := exitCode(run(context.Background(), []string{"scan", flag, "20", "--", "srv"}, &out, &errb), &errb)
		if code != 2 || !strings.Contains(errb.String(), "a bare number is bytes now (it was MiB); write 20MiB") {
			t.Errorf("scan %s 20: exit %d, stderr %q", flag, code, errb.String())
		}
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	cache := cacheSizeFlag(fs)
	if err := fs.Parse([]string{"--cache-size", "20"}); err != nil || cache() != 20 {
		t.Errorf("--cache-size 20 = %d, %v; want 20 bytes", cache(), err)
	}
}
