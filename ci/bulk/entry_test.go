package bulk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestChooseEntry(t *testing.T) {
	for _, tc := range []struct {
		name, pkg, bin, main, named string
		path, chosen, why           string
		err                         bool
	}{
		{name: "bin string", pkg: "@s/srv", bin: `"dist/cli.js"`, path: "dist/cli.js", chosen: "srv", why: "the bin named like the package"},
		{name: "named like the package", pkg: "@s/srv", bin: `{"other":"o.js","srv":"./s.js"}`, path: "s.js", chosen: "srv", why: "the bin named like the package"},
		{name: "only one", pkg: "srv", bin: `{"srv-mcp":"m.js","srv-setup":"setup.js","remove-srv":"r.js"}`, path: "m.js", chosen: "srv-mcp", why: "the only bin (remove-srv, srv-setup left out"},
		{name: "never setup even if named like the package", pkg: "config", bin: `{"config":"c.js"}`, main: "index.js", path: "index.js", why: "main: every bin's name says"},
		{name: "several", pkg: "srv", bin: `{"a":"a.js","b":"b.js"}`, main: "lib/main.js", path: "lib/main.js", why: "main: bins a, b, none named like the package"},
		{name: "no main", pkg: "srv", path: "index.js", why: "index.js (no main): no bin"},
		{name: "named by the input", pkg: "srv", bin: `{"a":"a.js","b":"b.js"}`, named: "b", path: "b.js", chosen: "b", why: "the bin the input names"},
		{name: "a file named by the input", pkg: "srv", named: "./dist/index.js", path: "dist/index.js", why: "the file the input runs"},
		{name: "unknown bin", pkg: "srv", bin: `{"a":"a.js"}`, named: "zz", err: true},
		{name: "outside", pkg: "srv", bin: `"../../etc/x.js"`, err: true},
		{name: "bad bin", pkg: "srv", bin: `[1]`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Manifest{Name: tc.pkg, Main: tc.main}
			if tc.bin != "" {
				m.Bin = json.RawMessage(tc.bin)
			}
			e, err := ChooseEntry(m, tc.named)
			if tc.err {
				if !errors.Is(err, ErrInstall) {
					t.Fatalf("got %+v, %v; want an ErrInstall", e, err)
				}
				return
			}
			if err != nil || e.Path != tc.path || e.Bin != tc.chosen || !strings.HasPrefix(e.Why, tc.why) {
				t.Errorf("got %+v, %v; want path %q bin %q why %q...", e, err, tc.path, tc.chosen, tc.why)
			}
		})
	}
}

func TestSatisfies(t *testing.T) {
	for _, tc := range []struct {
		v, r string
		ok   bool
	}{
		{"20.20.2", ">=18", true}, {"20.20.2", ">= 22", false}, {"20.20.2", "^20.10.0", true}, {"20.20.2", "^22", false},
		{"20.20.2", "~20.20.0", true}, {"20.20.2", "~20.19", false}, {"20.20.2", "18 || 20", true}, {"20.20.2", "18.x || >=22", false},
		{"20.20.2", ">=18 <20", false}, {"20.20.2", ">=18.0.0 <21.0.0", true}, {"20.20.2", "*", true}, {"20.20.2", "16 - 20", true},
		{"20.20.2", "16 - 19.5", false}, {"20.20.2", "20.20.2", true}, {"20.20.2", ">20", false}, {"20.20.2", "<=20", true},
		{"0.2.5", "^0.2.3", true}, {"0.3.0", "^0.2.3", false}, {"0.0.4", "^0.0.3", false},
	} {
		ok, err := Satisfies(tc.v, tc.r)
		if err != nil || ok != tc.ok {
			t.Errorf("Satisfies(%q, %q) = %v, %v; want %v", tc.v, tc.r, ok, err, tc.ok)
		}
	}
	if _, err := Satisfies("20.20.2", ">=banana"); err == nil {
		t.Error("a range not understood gave no error")
	}
	// An empty alternative is any version, as npm reads it.
	for _, r := range []string{" ", ">=22 ||", "|| >=22"} {
		if ok, err := Satisfies("20.20.2", r); !ok || err != nil {
			t.Errorf("Satisfies(%q) = %v, %v; want true", r, ok, err)
		}
	}
}

// TestSatisfiesChanges lists every reading that changed when our
// hand-written semver gave way to Masterminds/semver (#33): was is the old
// code's answer, now ours, npm what npm's engines check says (its semver,
// 7.8.5, with includePrerelease). Where now is not npm, the comment says
// why it stays.
func TestSatisfiesChanges(t *testing.T) {
	const in, out, bad = "in", "out", "error"
	for _, tc := range []struct{ v, r, was, now, npm string }{
		// A prerelease in a range counts, no longer read as its release.
		{"20.20.2", "20.20.2-rc.1", in, out, out},
		{"20.20.2", "<=20.20.2-rc.1", in, out, out},
		{"20.20.2", ">20.20.2-rc.1", out, in, in},
		// A prerelease node (an rc, a nightly) is below its release.
		{"22.0.0-rc.1", ">=22.0.0", in, out, out},
		{"22.0.0-rc.1", "^22.0.0", in, out, out},
		{"23.0.0-rc.1", "<23.0.0", out, in, in},
		{"20.20.2-nightly2024", "20.20.2", in, out, out},
		// npm reads a partial bound, and a hyphen range's lower one, as
		// taking the prereleases of its release (>=22 is >=22.0.0-0); the
		// library does not. Only a prerelease node on the bound's own
		// release differs, and only in the note: kept.
		{"22.0.0-rc.1", ">=22", in, out, in},
		{"22.0.0-rc.1", "^22", in, out, in},
		{"22.0.0-rc.1", "22.x", in, out, in},
		{"22.0.0-rc.1", "^18 || ^20 || >=22", in, out, in},
		{"23.0.0-rc.1", "<23", out, in, out},
		{"20.20.2-nightly2024", "20.20.2 - 21", in, out, in},
		// Forms understood now; npm refuses all but ~> (its check then
		// reports the engine unsupported), the library reads them as
		// written.
		{"20.20.2", "~>20.20", bad, in, in},
		{"20.20.2", ">=18, <21", bad, in, bad},
		{"20.20.2", "!=19", bad, in, bad},
		{"20.20.2", "=>18", bad, in, bad},
		{"20.20.2", "=<20", bad, in, bad},
		// Malformed ranges the old code read somehow.
		{"20.20.2", "18 -20", out, bad, bad},
		{"20.20.2", "18 |", out, bad, bad},
		{"0.2.5", ">=18 <", out, bad, bad},
		{"20.20.2", "> =18", in, bad, in},
		// The library's ~0.0.0 is any version, npm's <0.1.0: no engines
		// range a node could meet says it.
		{"20.20.2", "~0.0.0", out, in, out},
		// The library's bounds: 512 bytes, 32 alternatives.
		{"20.20.2", strings.Repeat(">=18 ", 103), in, bad, in},
		{"20.20.2", strings.Repeat("18 || ", 32) + "20", in, bad, in},
		// The version is X.Y.Z with an optional v, as npm's.
		{"=20.20.2", ">=18", in, bad, bad},
		{"020.1.2", ">=18", in, bad, bad},
	} {
		ok, err := Satisfies(tc.v, tc.r)
		got := out
		switch {
		case err != nil:
			got = bad
		case ok:
			got = in
		}
		if got != tc.now || tc.was == tc.now {
			t.Errorf("Satisfies(%q, %.40q) = %s (%v); the table says was %s, now %s", tc.v, tc.r, got, err, tc.was, tc.now)
		}
	}
}

func TestChooseEntryReadme(t *testing.T) {
	m := Manifest{Name: "@s/pkg", Bin: json.RawMessage(`{"pkg":"cli.js","pkg-mcp":"m.js","pkg-setup":"s.js"}`)}
	block := func(args string) []byte {
		return []byte("# pkg\n\n```json\n{\"mcpServers\": {\"p\": {\"command\": \"npx\", \"args\": [" + args + "]}}}\n```\n")
	}
	for _, c := range []struct {
		name   string
		readme []byte
		bin    string
		args   []string
	}{
		{"no README: named like the package", nil, "pkg", nil},
		{"npx -p PKG BIN", block(`"-y", "-p", "@s/pkg", "pkg-mcp"`), "pkg-mcp", nil},
		{"npx PKG ARGS", block(`"-y", "@s/pkg", "serve", "--stdio"`), "pkg", []string{"serve", "--stdio"}},
		{"placeholders are not taken", block(`"-y", "@s/pkg", "/path/to/dir"`), "pkg", nil},
		{"another package's line", block(`"-y", "-p", "other", "pkg-mcp"`), "pkg", nil},
		{"a setup bin is never taken", block(`"-y", "-p", "@s/pkg", "pkg-setup"`), "pkg", nil},
		{"the bin as the command", []byte("```\n{\"mcpServers\": {\"p\": {\"command\": \"pkg-mcp\"}}}\n```"), "pkg-mcp", nil},
	} {
		e, err := ChooseEntryReadme(m, "", c.readme)
		if err != nil || e.Bin != c.bin || strings.Join(e.Args, " ") != strings.Join(c.args, " ") {
			t.Errorf("%s: %+v %v", c.name, e, err)
		}
	}
	// Of bins none named like the package, the one that says it serves.
	two := Manifest{Name: "pkg", Bin: json.RawMessage(`{"pkg-cli":"c.js","pkg-mcp-server":"m.js"}`)}
	if e, err := ChooseEntry(two, ""); err != nil || e.Bin != "pkg-mcp-server" {
		t.Errorf("server-named bin: %+v %v", e, err)
	}
}
