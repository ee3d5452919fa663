package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunPolicy(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "policy.yaml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := LoadPolicy(write("run:\n  rules:\n    readonly-writes: deny\n    closed-world-network: log\n  tools:\n    \"fetch_*\": correct\n    \"fetch_evil\": deny\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rule, tool string
		want       Action
		set        bool
	}{
		{ReadonlyWrites, "x", ActionDeny, true},
		{ClosedWorldNetwork, "x", ActionLog, true},
		{ClosedWorldNetwork, "fetch_docs", ActionCorrect, true}, // the tool's wins
		{ClosedWorldNetwork, "fetch_evil", ActionDeny, true},    // the strictest tool glob
		{NondestructiveDeletes, "x", 0, false},
	} {
		if got, ok := p.Run.Action(c.rule, c.tool); got != c.want || ok != c.set {
			t.Errorf("%s on %s: %v %v, want %v %v", c.rule, c.tool, got, ok, c.want, c.set)
		}
	}
	for _, bad := range []struct{ policy, want string }{
		{"run:\n  rules:\n    readonly-writes: block\n", `action "block"`},
		{"run:\n  rules:\n    no-such-rule: deny\n", `unknown rule "no-such-rule"`},
		{"run:\n  actions: {}\n", "actions"},
	} {
		if _, err := LoadPolicy(write(bad.policy)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.policy, err, bad.want)
		}
	}
	if s := ActionDeny.String(); s != "deny" {
		t.Errorf("String %q", s)
	}
}
