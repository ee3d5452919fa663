package proxy_test

import (
	"context"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/proxy"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// BenchmarkRunProxyLatency measures what `run` adds to a tools/call: a Go
// SDK client calls the fixture's echo, one call at a time, alternately
// straight on a sandboxed server's stdio and through the proxy to another
// (the relay, with the client on OS pipes as a client process is). Each
// call is timed from the request to the answer; after a proxied call the
// next waits for its effects to be collected, which happens after the
// answer and is not what the client waits for. Reported: the medians and the 90th
// percentiles, and the median added. The goal is at most 2 ms added.
//
// Back-to-back, the next proxied call is sent as soon as the last is
// answered, as a client that chains calls does: it then waits for the
// last call's effects to be read (95th percentiles reported too).
//
// Back-to-back-layer is back to back against a server that made 190,000
// files at startup (the flood fixture): what each collection reads is
// then the change journal's, where a walk would read the whole layer.
func BenchmarkRunProxyLatency(b *testing.B) {
	b.Run("spaced", func(b *testing.B) { benchRunProxyLatency(b, false, "honest") })
	b.Run("back-to-back", func(b *testing.B) { benchRunProxyLatency(b, true, "honest") })
	b.Run("back-to-back-layer", func(b *testing.B) { benchRunProxyLatency(b, true, "flood", "files=190000") })
}

func benchRunProxyLatency(b *testing.B, backToBack bool, fixture ...string) {
	cli := sandboxtest.Docker(b)
	image := sandboxtest.NodeImage(b, cli)
	so := sandbox.SessionOptions{Image: image, Argv: append([]string{sandboxtest.FixtureMount}, fixture...),
		Mounts: []sandbox.Mount{sandboxtest.Fixture(b)}, Agent: sandboxtest.Agent(b), Network: sandbox.NetworkNone}
	const calls, warm = 300, 20
	ctx := context.Background()
	args := map[string]any{"text": "hello"}

	call := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var direct, proxied []time.Duration
	for i := 0; i < b.N; i++ {
		// Direct: the client on the container's stdio.
		s, stdio, err := sandbox.OpenRaw(ctx, cli, so)
		if err != nil {
			s.Close(ctx)
			b.Fatal(err)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		dcs, err := c.Connect(ctx, &mcp.IOTransport{Reader: stdio.Reader, Writer: stdio.Writer}, nil)
		if err != nil {
			b.Fatal(err)
		}

		// Through the proxy, at the same time: the calls alternate, so
		// that both see the same load on the machine.
		cr, cw, _ := os.Pipe() // client -> proxy
		pr, pw, _ := os.Pipe() // proxy -> client
		collected := make(chan struct{}, 1)
		done := make(chan error, 1)
		go func() {
			_, err := proxy.Run(ctx, cli, proxy.RunOptions{Session: so, Stdin: cr, Stdout: pw, PhaseInterval: -1,
				OnRecord: func(r proxy.RunRecord) {
					if r.Type == "call" {
						select {
						case collected <- struct{}{}:
						default:
						}
					}
				}})
			pw.Close()
			done <- err
		}()
		pcs, err := c.Connect(ctx, &mcp.IOTransport{Reader: pr, Writer: cw}, nil)
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < calls+warm; j++ {
			// In turn first and second: a call right after a collection
			// pays for its aftermath (the collector's garbage, say),
			// whichever session it is on.
			var d, p time.Duration
			if backToBack {
				// The direct call first, then two proxied calls in a row:
				// the second is the one timed.
				d = call(dcs)
				call(pcs)
				p = call(pcs)
				select {
				case <-collected:
				default:
				}
			} else if j%2 == 0 {
				d = call(dcs)
				p = call(pcs)
				<-collected // the effects, read after the answer
			} else {
				p = call(pcs)
				<-collected
				d = call(dcs)
			}
			if j >= warm {
				direct, proxied = append(direct, d), append(proxied, p)
			}
		}
		dcs.Close()
		s.Close(ctx)
		pcs.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, pr)
		cr.Close()
		pr.Close()
	}
	// Each proxied call against the direct call just before it: the
	// median of the differences, the least sensitive to the load.
	var diff []time.Duration
	for i := range direct {
		diff = append(diff, proxied[i]-direct[i])
	}
	slices.Sort(diff)
	// Over every run's calls: the medians, the 90th percentiles.
	slices.Sort(direct)
	slices.Sort(proxied)
	{
		med := func(d []time.Duration) float64 { return float64(d[len(d)/2].Microseconds()) / 1000 }
		p90 := func(d []time.Duration) float64 { return float64(d[len(d)*9/10].Microseconds()) / 1000 }
		b.ReportMetric(med(direct), "direct-median-ms")
		b.ReportMetric(med(proxied), "proxy-median-ms")
		p95 := func(d []time.Duration) float64 { return float64(d[len(d)*95/100].Microseconds()) / 1000 }
		b.ReportMetric(p90(direct), "direct-p90-ms")
		b.ReportMetric(p90(proxied), "proxy-p90-ms")
		b.ReportMetric(p95(direct), "direct-p95-ms")
		b.ReportMetric(p95(proxied), "proxy-p95-ms")
		b.ReportMetric(med(proxied)-med(direct), "added-median-ms")
		b.ReportMetric(med(diff), "added-paired-median-ms")
	}
}
