package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// flagLine is a flag's name in a line of FlagUsages.
var flagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z][a-z0-9-]*)`)

// helpLines are the flag lines of a usage text by flag name, their
// padding (which depends on the other flags) collapsed.
func helpLines(text string) map[string]string {
	lines := map[string]string{}
	for _, l := range strings.Split(text, "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil {
			lines[m[1]] = strings.Join(strings.Fields(l), " ")
		}
	}
	return lines
}

// TestSessionFlagsHelp: a session flag reads the same in the help of
// every command that has it (scan, run, client, bulk): one name, one
// default, one help text. No engine is needed.
func TestSessionFlagsHelp(t *testing.T) {
	all := pflag.NewFlagSet("all", pflag.ContinueOnError)
	sessionFlags(all, ^sessionFlag(0), io.Discard)
	want := helpLines(all.FlagUsages())
	// The flags of a command's own of a name the session's has: bulk's
	// --image is the image npm packages are scanned in, by default one
	// built from the host; client's --transport the twin's the client is
	// pointed at.
	own := map[string]map[string]bool{"bulk": {"image": true}, "client": {"transport": true}}
	seen := map[string][]string{}
	for _, cmd := range []string{"scan", "run", "client", "bulk"} {
		var out, errb bytes.Buffer
		if code := exitCode(run(context.Background(), []string{cmd, "--help"}, &out, &errb), &errb); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", cmd, code, errb.String())
		}
		got := helpLines(out.String() + errb.String())
		if len(got) == 0 {
			t.Fatalf("%s --help lists no flags:\n%s", cmd, out.String()+errb.String())
		}
		for name, line := range got {
			w, shared := want[name]
			switch {
			case !shared:
			case own[cmd][name]:
				if line == w {
					t.Errorf("%s --%s is the session's now: drop it from own", cmd, name)
				}
			case line != w:
				t.Errorf("%s --help:\n  %s\nwant the session's\n  %s", cmd, line, w)
			default:
				seen[name] = append(seen[name], cmd)
			}
		}
	}
	for name := range want {
		if len(seen[name]) == 0 {
			t.Errorf("--%s: in no command's help", name)
		}
	}
	// What each command takes of the session's flags.
	for _, tc := range []struct{ flag, cmds string }{
		{"image", "scan run client"}, {"mount", "scan run client"}, {"package", "scan run client"},
		{"agent", "scan run client bulk"}, {"network", "scan run bulk"}, {"start-timeout", "scan run bulk"},
		{"call-timeout", "scan bulk"}, {"workspace", "scan run"}, {"user", "scan run"}, {"disk", "scan run"},
		{"no-agent", "scan run"}, {"transport", "scan run"}, {"max-message", "scan run"}, {"state", "scan run"},
	} {
		if got := strings.Join(seen[tc.flag], " "); got != tc.cmds {
			t.Errorf("--%s in the help of %q, want %q", tc.flag, got, tc.cmds)
		}
	}
}

// sessionOptions parses args as the session flags of which and fills a
// SessionOptions from them, as runScan does before it connects to the
// engine: what the flags make of a command line, with no engine.
func sessionOptions(t *testing.T, which sessionFlag, args ...string) (sandbox.SessionOptions, string) {
	t.Helper()
	var stderr bytes.Buffer
	fs := newFlags("scan", "scan", &stderr)
	fill := sessionFlags(fs, which, &stderr)
	if err := parse(fs, args); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	var so sandbox.SessionOptions
	if err := fill(&so); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return so, stderr.String()
}

// TestNoAgentNetworkIsNone: the sinkhole is the agent's, so --no-agent
// makes the default network none, and wins over an --agent given too (it
// is not even looked for); a --network given is kept (the session then
// says the sinkhole needs the agent). That a scan runs on the default
// sinkhole and the report says so is TestDefaultNetworkIsTheSinkhole's.
func TestNoAgentNetworkIsNone(t *testing.T) {
	const which = flagNoAgent | flagNetwork | flagAgent
	for _, tc := range []struct {
		args []string
		want sandbox.NetworkMode
	}{
		{[]string{"--no-agent"}, sandbox.NetworkNone},
		{[]string{"--agent", "/no/such/agent", "--no-agent"}, sandbox.NetworkNone},
		{[]string{"--no-agent", "--network", "sinkhole"}, sandbox.NetworkSinkhole},
		{[]string{"--no-agent", "--network", "bridge"}, sandbox.NetworkBridge},
	} {
		so, _ := sessionOptions(t, which, tc.args...)
		if so.Network != tc.want || so.Agent != "" {
			t.Errorf("%q: network %s, agent %q; want %s and no agent", tc.args, so.Network, so.Agent, tc.want)
		}
	}
	// Without --no-agent (the agent left out of which: finding it is not
	// this test's), the default is the sinkhole.
	if so, _ := sessionOptions(t, flagNoAgent|flagNetwork); so.Network != sandbox.DefaultNetwork || sandbox.DefaultNetwork != sandbox.NetworkSinkhole {
		t.Errorf("no flags: network %s, want the sinkhole", so.Network)
	}
}
