package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// loopbackServer listens on the host's 127.0.0.1 and answers each line
// with its name; it counts the connections it took.
type loopbackServer struct {
	port  int
	conns atomic.Int64
}

func newLoopbackServer(t *testing.T, name string) *loopbackServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := &loopbackServer{port: l.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer c.Close()
				if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
					fmt.Fprintf(c, "pong from %s\n", name)
				}
			}()
		}
	}()
	return s
}

// testDial is the runner's dial for the tests' names: every allowed name
// is the host's loopback, never a remote address.
func testDial(ctx context.Context, network, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
}

func dialCall(r *report.Report, host string, port int) *report.Call {
	want := fmt.Sprintf(`{"host":%q,"port":%d}`, host, port)
	for i := range r.Calls {
		if c := &r.Calls[i]; c.Tool == "dial" && string(c.Arguments) == want && c.Source != "repeat" {
			return c
		}
	}
	return nil
}

// TestAllowHostReachesOnlyIt: with --allow-host, the server reaches the
// allowed host (a server on the host's loopback, by a name the runner
// resolves there) and nothing else: not another port of it, not another
// name, not the host's other loopback server. The connection is in the
// report as the allowed host's, not as the loopback.
func TestAllowHostReachesOnlyIt(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	for _, mode := range []sandbox.NetworkMode{sandbox.NetworkSinkhole, sandbox.NetworkNone} {
		t.Run(mode.String(), func(t *testing.T) {
			allowed, other := newLoopbackServer(t, "allowed"), newLoopbackServer(t, "other")
			opts := fixtureOpts(t, "runws")
			opts.Network = mode
			opts.NoBoundary, opts.NoSeed = true, true
			opts.AllowHosts = []sandbox.AllowHost{{Host: "api.allowed.test", Port: allowed.port}}
			opts.AllowDial = testDial
			opts.Probes = steps(t, fmt.Sprintf(`[
				{"tool":"dial","arguments":{"host":"api.allowed.test","port":%[1]d}},
				{"tool":"dial","arguments":{"host":"api.allowed.test","port":%[2]d}},
				{"tool":"dial","arguments":{"host":"other.test","port":%[1]d}},
				{"tool":"dial","arguments":{"host":"127.0.0.1","port":%[2]d}}]`, allowed.port, other.port))
			res, err := runScan(t, cli, opts)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			r := res.Report
			ok := dialCall(r, "api.allowed.test", allowed.port)
			if ok == nil || !strings.Contains(ok.Result, "pong from allowed") {
				t.Fatalf("the allowed host was not reached: %+v (problems %+v)", ok, r.Problems)
			}
			var seen bool
			for _, n := range ok.Effects.Network {
				if n.Kind == "connect" && n.Host == "api.allowed.test" && n.Port == allowed.port && !n.Loopback && strings.HasPrefix(n.Result, "allowed:") {
					seen = true
				}
			}
			if !seen {
				t.Errorf("the allowed connection is not recorded as the allowed host's: %+v", ok.Effects.Network)
			}
			for _, c := range []*report.Call{dialCall(r, "api.allowed.test", other.port), dialCall(r, "other.test", allowed.port), dialCall(r, "127.0.0.1", other.port)} {
				if c == nil || strings.Contains(c.Result, "pong") {
					t.Errorf("reached what is not allowed: %+v", c)
				}
			}
			if n := other.conns.Load(); n != 0 {
				t.Errorf("the other loopback server took %d connection(s)", n)
			}
			if n := allowed.conns.Load(); n != 1 {
				t.Errorf("the allowed server took %d connection(s), want 1 (the allowed call's)", n)
			}
			if got := r.Sandbox.AllowedHosts; len(got) != 1 || got[0] != fmt.Sprintf("api.allowed.test:%d", allowed.port) {
				t.Errorf("report allowedHosts %v", got)
			}
		})
	}
}

// TestAllowHostLoopbackAddress: with --network none, an allowed loopback
// address is the host's: the server's connection to 127.0.0.1:PORT in
// the container reaches the host's server on that port, and no other
// port. With the sinkhole it is refused (the sinkhole's redirects land
// on the container's loopback).
func TestAllowHostLoopbackAddress(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	allowed, other := newLoopbackServer(t, "allowed"), newLoopbackServer(t, "other")
	opts := fixtureOpts(t, "runws")
	opts.Network = sandbox.NetworkNone
	opts.NoBoundary, opts.NoSeed = true, true
	opts.AllowHosts = []sandbox.AllowHost{{Host: "127.0.0.1", Port: allowed.port}}
	opts.Probes = steps(t, fmt.Sprintf(`[
		{"tool":"dial","arguments":{"host":"127.0.0.1","port":%d}},
		{"tool":"dial","arguments":{"host":"127.0.0.1","port":%d}}]`, allowed.port, other.port))
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	if c := dialCall(res.Report, "127.0.0.1", allowed.port); c == nil || !strings.Contains(c.Result, "pong from allowed") {
		t.Errorf("allowed loopback port not reached: %+v", c)
	}
	if c := dialCall(res.Report, "127.0.0.1", other.port); c == nil || strings.Contains(c.Result, "pong") || other.conns.Load() != 0 {
		t.Errorf("another loopback port reached: %+v", c)
	}
	opts.Network = sandbox.NetworkSinkhole
	if _, err := runScan(t, cli, opts); err == nil || !strings.Contains(err.Error(), "sinkhole") {
		t.Errorf("a loopback address with the sinkhole: %v, want refused", err)
	}
}
