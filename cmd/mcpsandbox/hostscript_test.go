package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// TestHostScript: a script on the host runs from its project mounted
// at /project as --package mounts (above node_modules); one in the home
// directory, or with no project above it, is refused with the hint; a
// path the host does not have is left to the container.
func TestHostScript(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	proj := filepath.Join(home, "proj")
	for _, f := range []string{"package.json", "server.js", "node_modules/@s/pkg/package.json", "node_modules/@s/pkg/dist/index.js"} {
		p := filepath.Join(proj, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loose := filepath.Join(home, "loose.js")
	if err := os.WriteFile(loose, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	for _, c := range []struct {
		argv    []string
		mounted string // the mount added ("" none)
		script  string // the script's argument after
		refused bool
	}{
		{argv: []string{"node", "./server.js", "--stdio"}, mounted: proj, script: "/project/server.js"},
		{argv: []string{"node", "--enable-source-maps", filepath.Join(proj, "node_modules/@s/pkg/dist/index.js")}, mounted: proj,
			script: "/project/node_modules/@s/pkg/dist/index.js"},
		{argv: []string{"node", loose}, refused: true},
		{argv: []string{"node", "/opt/server/index.js"}, script: "/opt/server/index.js"},
		{argv: []string{"node", "-e", "x"}, script: "x"},
		{argv: []string{"npx", "-y", "pkg"}},
	} {
		so := &sandbox.SessionOptions{Argv: append([]string{}, c.argv...)}
		err := hostScript(so, io.Discard)
		switch {
		case c.refused:
			if err == nil || !strings.Contains(err.Error(), "--package") {
				t.Errorf("%q: %v, want refused with the hint", c.argv, err)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", c.argv, err)
			continue
		}
		got := so.Package
		if got != "" && so.PackageTarget != hostProjectTarget {
			t.Errorf("%q: mounted at %s, want %s", c.argv, so.PackageTarget, hostProjectTarget)
		}
		if got != c.mounted || (c.script != "" && !strings.Contains(strings.Join(so.Argv, " "), c.script)) {
			t.Errorf("%q: mounted %q argv %q; want %q and %q", c.argv, got, so.Argv, c.mounted, c.script)
		}
	}
}
