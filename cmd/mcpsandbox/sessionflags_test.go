package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
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
