package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// cacheEvictTimeout bounds the eviction after a scan: it waits for the
// cache lock while other scans make images, and a scan never waits long
// for it; the next run evicts what this one could not.
const cacheEvictTimeout = 30 * time.Second

// cacheSizeFlag adds --cache-size to fs and returns what reads it.
func cacheSizeFlag(fs *pflag.FlagSet) func() int64 {
	v := byteSize{n: sandbox.DefaultCacheSize, zero: true}
	fs.Var(&v, "cache-size", "bound on the image cache (workspace, package and agent layers no scan uses), evicted least recently used first: "+sizeHelp+"; 0 keeps nothing")
	return func() int64 { return v.n }
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
