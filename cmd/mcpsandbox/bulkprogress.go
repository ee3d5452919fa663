package main

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk"
)

// barProgress is bulk's progress on a terminal: a bar with done/total,
// rate and time left, each package's line printed above it.
type barProgress struct {
	w   io.Writer
	bar *progressbar.ProgressBar
}

// Start implements bulk.Progress.
func (b *barProgress) Start(total int) {
	b.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(b.w), progressbar.OptionSetDescription("packages"),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	b.bar.RenderBlank()
}

// Done implements bulk.Progress.
func (b *barProgress) Done(r bulk.Result, done, total int, elapsed time.Duration) {
	b.bar.Clear()
	fmt.Fprintln(b.w, bulk.ProgressLine(r, done, total, elapsed))
	rate := ""
	if done > 0 && elapsed > 0 {
		rate = fmt.Sprintf(" (%.0f/h)", float64(done)*float64(time.Hour)/float64(elapsed))
	}
	b.bar.Describe("packages" + rate)
	b.bar.Add(1)
}
