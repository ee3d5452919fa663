package sandbox_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestTheAgentAgainstAHostileServer runs the fixture's tools that attack
// the agent, in one scan in none mode (nothing leaves): every signal to
// PID 1, sockets of refused families, secrets hidden past the first
// buffer, long argv, disguised and anonymous programs, a non-dumpable
// child. The scan completes, the server lives on, the agent records every
// later call, and each move is in the report.
func TestTheAgentAgainstAHostileServer(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	opts := fixtureOpts(t, "honest", "agent")
	opts.Probes = steps(t, `[{"tool":"echo","arguments":{"text":"before"}},{"tool":"signal_init"},{"tool":"signal_flood"},{"tool":"make_sockets"},
		{"tool":"hide_sends"},{"tool":"big_argv"},{"tool":"exec_disguised"},{"tool":"exec_memfd"},{"tool":"nondumpable"},
		{"tool":"huge_argv"},{"tool":"big_send"},{"tool":"echo","arguments":{"text":"after"}}]`)
	res, err := runScan(t, cli, opts)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	r := res.Report
	if !r.Complete || r.Server.ExitCode != nil {
		t.Fatalf("complete %v, server exit %v; problems %+v", r.Complete, r.Server.ExitCode, r.Problems)
	}
	one := func(tool string) report.Call {
		t.Helper()
		c := callsOf(r, tool)
		if len(c) != 1 || c[0].ErrorKind != "" || c[0].IsError {
			t.Fatalf("%s: %+v", tool, c)
		}
		return c[0]
	}

	t.Run("signals", func(t *testing.T) {
		sig := one("signal_init")
		if n := strings.Count(sig.Result, "\n") + 1; n != 64 {
			t.Errorf("signal_init sent %d signals: %s", n, sig.Result)
		}
		if strings.Contains(sig.Result, ": kill ESRCH") {
			t.Errorf("PID 1 went away: %s", sig.Result)
		}
		if e := callsOf(r, "echo"); len(e) != 2 || e[1].Result != "echo: after" {
			t.Errorf("echo after the signals: %+v", e)
		}
		// A flood of flush and quiet requests costs the agent ticks and
		// readings (QuietGap apart), never the room of real events.
		one("signal_flood")
		if r.Sandbox.EventsDropped != 0 {
			t.Errorf("%d events dropped after the flood", r.Sandbox.EventsDropped)
		}
	})

	t.Run("sockets", func(t *testing.T) {
		c := one("make_sockets")
		for _, want := range []string{"vsock EAFNOSUPPORT", "packet EAFNOSUPPORT", "alg EAFNOSUPPORT", "bluetooth EAFNOSUPPORT",
			"netlink:15 EAFNOSUPPORT", "vsock-upper EAFNOSUPPORT", "unix ok", "inet ok", "inet6 ok", "netlink:0 ok"} {
			if !strings.Contains(c.Result, want+"\n") && !strings.HasSuffix(c.Result, want) {
				t.Errorf("make_sockets lacks %q: %s", want, c.Result)
			}
		}
		fams := map[string]int{}
		for _, n := range c.Effects.Network {
			if n.Kind == "socket" && n.Result == "EAFNOSUPPORT" {
				fams[n.Family]++
			}
		}
		if fams["vsock"] != 2 || fams["packet"] != 1 || fams["alg"] != 1 || fams["bluetooth"] != 1 || fams["netlink:15"] != 1 {
			t.Errorf("refused sockets recorded: %v", fams)
		}
	})

	t.Run("hidden sends", func(t *testing.T) {
		c := one("hide_sends")
		got := map[string]bool{}
		for _, n := range c.Effects.Network {
			if len(n.Secrets) == 0 {
				continue
			}
			switch {
			case n.Kind == "connect" && n.Address == "192.0.2.1":
				got["connect port "+itoa(n.Port)] = true
			case n.Kind == "dns":
				got["dns "+n.Address] = true
			}
		}
		for _, want := range []string{"connect port 9", "connect port 10", "connect port 11", "dns 192.0.2.53", "dns 127.0.0.1"} {
			if !got[want] {
				t.Errorf("no secret found in %s; network %+v", want, c.Effects.Network)
			}
		}
		for _, n := range c.Effects.Network {
			if n.Kind == "connect" && !n.Loopback && (n.Result == "ok" || n.Result == "sent" && n.Address != "192.0.2.1" && n.Address != "192.0.2.53") {
				t.Errorf("an unexpected destination: %+v", n)
			}
		}
	})

	t.Run("argv", func(t *testing.T) {
		ps := one("big_argv").Effects.Processes
		if len(ps) != 1 || ps[0].Argv[len(ps[0].Argv)-1] != "END-OF-ARGV" || len(ps[0].Argv) < 70 || ps[0].Truncated {
			t.Errorf("a 70 KiB argv did not arrive whole: %d args, truncated %v", len(ps[0].Argv), ps[0].Truncated)
		}
		ps = one("huge_argv").Effects.Processes
		if len(ps) != 1 || !ps[0].Truncated {
			t.Errorf("a 200 KiB argv is not marked truncated: %+v", ps)
		}
		var big bool
		for _, n := range one("big_send").Effects.Network {
			big = big || (n.Port == 12 && n.Truncated)
		}
		if !big {
			t.Errorf("80 KiB sent in one call is not marked truncated")
		}
		// Two bounds hit (the huge argv, the big send), and the program
		// run from a memfd open to writes (exec_memfd), whose sum need not
		// be what ran.
		if r.Sandbox.EventsTruncated != 3 || !hasProblem(r, "agent") {
			t.Errorf("eventsTruncated %d (want 3), problems %+v", r.Sandbox.EventsTruncated, r.Problems)
		}
	})

	t.Run("identity", func(t *testing.T) {
		b, err := os.ReadFile(sandboxtest.Fixture(t).Source)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		want := hex.EncodeToString(sum[:])
		ps := one("exec_disguised").Effects.Processes
		if len(ps) != 1 || ps[0].Argv[0] != "/usr/bin/ls" || ps[0].Exe != "/tmp/innocent" || ps[0].ExeSHA256 != want || ps[0].Anonymous {
			t.Errorf("disguised program: %+v, want exe /tmp/innocent sha256 %s", ps, want)
		}
		ps = one("exec_memfd").Effects.Processes
		if len(ps) != 1 || ps[0].Exe != "/memfd:payload (deleted)" || ps[0].ExeSHA256 != want || !ps[0].Anonymous || !ps[0].Truncated {
			t.Errorf("memfd program (unsealed: its sum marked): %+v", ps)
		}
		for _, p := range one("big_argv").Effects.Processes {
			if p.Exe == "" || p.ExeSHA256 == "" {
				t.Errorf("/bin/true without identity: %+v", p)
			}
		}
	})

	t.Run("non-dumpable", func(t *testing.T) {
		c := one("nondumpable")
		for _, want := range []string{"connect EACCES", "sendto EACCES", "exec ok"} {
			if !strings.Contains(c.Result, want) {
				t.Errorf("nondumpable said %q, want %q", c.Result, want)
			}
		}
		refused := 0
		for _, n := range c.Effects.Network {
			if n.Unreadable && n.Result == "EACCES" {
				refused++
			}
		}
		var ran bool
		for _, p := range c.Effects.Processes {
			ran = ran || (len(p.Argv) == 1 && p.Argv[0] == "/bin/true")
		}
		if refused != 2 || !ran {
			t.Errorf("refusals %d (want 2), /bin/true recorded %v: %+v", refused, ran, c.Effects)
		}
	})
}
