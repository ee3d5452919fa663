package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// cacheEvictTimeout bounds the eviction after a scan: it waits for the
// cache lock while other scans make images, and a scan never waits long
// for it; the next run evicts what this one could not.
const cacheEvictTimeout = 30 * time.Second

// cacheSizeFlag adds --cache-size to fs and returns its value.
func cacheSizeFlag(fs *pflag.FlagSet) *byteSizeValue {
	v := byteSizeValue(sandbox.DefaultCacheSize)
	fs.Var(&v, "cache-size", "bound on the image cache (workspace, package and agent layers no scan uses), evicted least recently used first: bytes, or with KiB, MiB, GiB (KB, MB, GB: powers of 1000); 0 keeps nothing")
	return &v
}

// byteSizeValue is a flag of a size in bytes.
type byteSizeValue int64

func (v *byteSizeValue) String() string { return formatBytes(int64(*v)) }
func (v *byteSizeValue) Type() string   { return "size" }
func (v *byteSizeValue) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*v = byteSizeValue(n)
	return nil
}

// byteUnits are the suffixes parseBytes takes, longest first.
var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// parseBytes reads a size: a number of bytes, or a number (decimals
// allowed) with a unit of byteUnits.
func parseBytes(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || f*float64(mult) > float64(1<<62) {
		return 0, fmt.Errorf("%q is not a size (bytes, or a number with KiB, MiB, GiB, KB, MB or GB)", s)
	}
	return int64(f * float64(mult)), nil
}

// formatBytes prints n in the largest binary unit it reaches, to a tenth.
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

// evictAfterScan keeps the cache within max after a scan: never when the
// scan was interrupted; a failure is a warning, never the scan's error.
func evictAfterScan(ctx context.Context, cli sandbox.CacheEngine, max int64, log, stderr io.Writer) {
	if ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cacheEvictTimeout)
	defer cancel()
	res, err := sandbox.Evict(ctx, cli, sandbox.EvictOptions{MaxBytes: max})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stderr, "mcpsandbox: warning: keeping the image cache within %s: %v\n", formatBytes(max), report.OneLine(err.Error()))
	}
	if log != nil && len(res.Removed) > 0 {
		fmt.Fprintf(log, "evicted %d cached image(s); the cache now holds %s (bound %s)\n", len(res.Removed), formatBytes(res.Size), formatBytes(max))
	}
}
