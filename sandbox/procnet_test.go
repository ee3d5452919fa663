package sandbox_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

func netBrief(c report.Call) []string {
	var out []string
	for _, n := range c.Effects.Network {
		s := n.Kind + " "
		switch n.Kind {
		case "dns", "tls":
			s += n.Host + " " + n.Result
		case "http":
			s += n.Method + " " + n.Host + n.Path
		default:
			s += n.Address + ":" + itoa(n.Port) + "/" + n.Protocol + " " + n.Result
		}
		out = append(out, s)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

func has(list []string, want string) bool {
	for _, s := range list {
		if s == want {
			return true
		}
	}
	return false
}

// TestProcessesAndNetworkInNoneMode: the fixture's exec, DNS lookup and TCP
// connect to 203.0.113.7:443 appear on the right call, nothing leaves, and
// a background process's late write is a "between" effect of its call.
func TestProcessesAndNetworkInNoneMode(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "liar")
	opts.Probes = steps(t, `[{"tool":"run_tests"},{"tool":"lookup"},{"tool":"background"},{"tool":"tidy"}]`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if !r.Sandbox.Agent || r.Sandbox.Network != "none" {
		t.Fatalf("sandbox = %+v", r.Sandbox)
	}
	rt := callsOf(r, "run_tests")[0].Effects.Processes
	if len(rt) != 1 || rt[0].Argv[0] != "/bin/sh" || rt[0].ExitCode == nil || *rt[0].ExitCode != 0 || rt[0].Background {
		t.Errorf("run_tests processes = %+v", rt)
	}
	lk := netBrief(callsOf(r, "lookup")[0])
	if !has(lk, "dns telemetry.example.com nxdomain") || !has(lk, "connect 203.0.113.7:443/tcp ENETUNREACH") {
		t.Errorf("lookup network = %q", lk)
	}
	for _, c := range r.Calls {
		for _, n := range c.Effects.Network {
			if n.Kind == "connect" && !n.Loopback && n.Result == "ok" {
				t.Errorf("call %d: a connection left the container: %+v", c.Seq, n)
			}
		}
	}
	bg := callsOf(r, "background")[0]
	// Its child outlived the call, then ended within --settle: not
	// background.
	if ps := bg.Effects.Processes; len(ps) != 1 || ps[0].Background || ps[0].ExitCode == nil {
		t.Errorf("background processes = %+v, want one, ended, not background", ps)
	}
	if len(bg.Effects.Files) != 0 {
		t.Errorf("background call has file effects %+v; the write comes a second later", bg.Effects.Files)
	}
	var between *report.Phase
	for i, p := range r.Phases {
		if p.Name == "between" && p.After == bg.Seq {
			between = &r.Phases[i]
		}
	}
	if between == nil || len(between.Effects.Files) != 1 || between.Effects.Files[0].Path != "/tmp/late.txt" {
		t.Fatalf("no between phase after call %d with the late write: %+v", bg.Seq, r.Phases)
	}
	if tidy := callsOf(r, "tidy")[0]; len(tidy.Effects.Processes) != 0 {
		t.Errorf("the next call got the background process: %+v", tidy.Effects.Processes)
	}
	// The server itself is the first process (id 1, child of the agent, 0),
	// in a phase before any call.
	var server bool
	for _, p := range r.Phases {
		for _, pr := range p.Effects.Processes {
			server = server || (pr.PID == 1 && pr.PPID == 0 && pr.Argv[0] == sandboxtest.FixtureMount)
		}
	}
	if !server {
		t.Errorf("the server's own exec is not in a phase: %+v", r.Phases)
	}
}

// TestSinkholeRecordsRequests: in sinkhole mode DNS answers the loopback,
// outbound TCP is taken by the agent, and the HTTP Host and path and the
// TLS SNI are recorded.
func TestSinkholeRecordsRequests(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "liar")
	opts.Network = sandbox.NetworkSinkhole
	opts.Probes = steps(t, `[{"tool":"upload"}]`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	up := callsOf(res.Report, "upload")[0]
	got := netBrief(up)
	for _, want := range []string{
		"dns collector.example.net sinkholed",
		"http POST collector.example.net/upload?id=42",
		"connect 203.0.113.7:80/tcp sinkholed:EINPROGRESS",
		"http GET direct.example.net/direct",
		"tls api.example.org ",
	} {
		if !has(got, want) {
			t.Errorf("upload network lacks %q: %q", want, got)
		}
	}
	if !strings.Contains(up.Result, "post: 200 OK") {
		t.Errorf("upload result %q: the sinkhole did not answer", up.Result)
	}
}

// TestBadServersUnderTheAgent: a fork bomb is held by the pids limit and
// reported; a flood of events is bounded and counted; a server that closes
// stdout, or exits at once, ends the scan in bounded time with a clear
// report.
func TestBadServersUnderTheAgent(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	t.Run("forkbomb", func(t *testing.T) {
		opts := fixtureOpts(t, "honest", "forkbomb")
		opts.Limits = sandbox.Limits{Pids: 64, MemoryMB: 512, CPUs: 1}
		opts.Settle = 500 * time.Millisecond
		opts.Probes = steps(t, `[{"tool":"forkbomb"},{"tool":"echo","arguments":{"text":"alive"}}]`)
		res, _ := runScan(t, cli, opts)
		r := res.Report
		fb := callsOf(r, "forkbomb")
		if len(fb) != 1 || !strings.Contains(fb[0].Result, "refused") {
			t.Fatalf("forkbomb = %+v", fb)
		}
		if n := len(fb[0].Effects.Processes); n == 0 || n > 64 {
			t.Errorf("forkbomb recorded %d processes; the pids limit is 64", n)
		}
		// The limit holds for the server too: a Go server that cannot make a
		// thread dies. Either way the agent (PID 1) reports, and the report
		// says what happened.
		if e := callsOf(r, "echo"); len(e) != 1 || (e[0].Result != "echo: alive" && !hasProblem(r, "crash")) {
			t.Errorf("after the fork bomb: echo %+v, problems %+v", e, r.Problems)
		}
		for _, p := range r.Problems {
			if p.Kind == "agent" {
				t.Errorf("agent trouble: %s", p.Message)
			}
		}
	})
	t.Run("event flood", func(t *testing.T) {
		opts := fixtureOpts(t, "net_flood")
		opts.MaxEvents = 500
		opts.Probes = steps(t, `[{"tool":"net_flood","arguments":{"count":3000}}]`)
		res, _ := runScan(t, cli, opts)
		r := res.Report
		nf := callsOf(r, "net_flood")
		if len(nf) != 1 || len(nf[0].Effects.Network) > 500 {
			t.Fatalf("net_flood: %d events", len(nf[0].Effects.Network))
		}
		if !hasProblem(r, "agent") || r.Sandbox.EventsDropped == 0 {
			t.Errorf("dropped events not reported: %+v, eventsDropped %d", r.Problems, r.Sandbox.EventsDropped)
		}
	})
	t.Run("close stdout", func(t *testing.T) {
		opts := fixtureOpts(t, "close_stdout", "garbage")
		opts.CallTimeout = 5 * time.Second
		opts.Probes = steps(t, `[{"tool":"close_stdout"},{"tool":"garbage"}]`)
		res, err := runScan(t, cli, opts)
		if !errors.Is(err, scan.ErrIncomplete) {
			t.Fatalf("err = %v, want ErrIncomplete", err)
		}
		// The engine holds the stdout pipe open, so closing it is silence,
		// not EOF: the call times out, ping fails, the scan ends.
		if c := callsOf(res.Report, "close_stdout"); len(c) != 1 || c[0].ErrorKind != "timeout" || !hasProblem(res.Report, "unresponsive") {
			t.Errorf("close_stdout = %+v, problems %+v", c, res.Report.Problems)
		}
	})
	t.Run("exits at once", func(t *testing.T) {
		res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Argv: []string{"/bin/true"}}})
		if !errors.Is(err, scan.ErrIncomplete) || res.Report.Server.ExitCode == nil || *res.Report.Server.ExitCode != 0 {
			t.Fatalf("err = %v, exit %v", err, res.Report.Server.ExitCode)
		}
	})
}
