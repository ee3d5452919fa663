package scan

import (
	"context"
	"strconv"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/timings"
)

// BenchmarkRelist measures what the listing after a call costs the scan
// (its two marks, tools/list over every page, reading and comparing it)
// when the list does not change, against the fixture's flood server with
// tools of about 300 bytes (tools-100k: 10 pages of 10,000 of 120 bytes,
// the tool bound keeping 2,000). It only calls listAgain, which every
// build has, so that a test binary built from an earlier commit with
// this file measures the same thing beside it (docs/measurements.md).
func BenchmarkRelist(b *testing.B) {
	cli := sandboxtest.Docker(b)
	img := sandboxtest.NodeImage(b, cli)
	agent, fx := sandboxtest.Agent(b), sandboxtest.Fixture(b)
	for _, c := range []struct {
		name                    string
		pages, tools, pageBytes int
	}{
		{"tools-10", 1, 10, 3000}, {"tools-1000", 1, 1000, 300000}, {"tools-1000-pages-10", 10, 100, 30000}, {"tools-100k", 10, 10000, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			// flood's last page holds its own tools: pages+1 pages in all.
			argv := []string{sandboxtest.FixtureMount, "flood", "pages=" + strconv.Itoa(c.pages+1), "tools=" + strconv.Itoa(c.tools),
				"page-bytes=" + strconv.Itoa(c.pageBytes)}
			opts := Options{SessionOptions: sandbox.SessionOptions{Argv: argv, Mounts: []sandbox.Mount{fx}, Image: img, Agent: agent}, Probes: []probes.Step{}}
			sc, err := newScanner(context.Background(), cli, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer sc.cancel()
			s, err := sc.open(timings.SessionMain)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background())
			tools, err := sc.list(s)
			if err != nil {
				b.Fatal(err)
			}
			s.Report().Tools = tools
			sc.watchFirst(s, s.Report())
			b.ResetTimer()
			for range b.N {
				sc.listAgain(s, report.ListingAfterCall, 1)
			}
			b.StopTimer()
			if n := len(s.Report().ToolChanges); n != 0 || sc.tl.watch.stopped {
				b.Errorf("%d changes, stopped %v: want the list listed unchanged", n, sc.tl.watch.stopped)
			}
		})
	}
}
