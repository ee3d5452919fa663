package bulk

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestNonRegistryDependenciesRefused(t *testing.T) {
	for spec, want := range map[string]string{
		"^1.2.3": "", "latest": "", "npm:other@1": "", ">=1 <2": "",
		"git+https://github.com/a/b.git": "a git dependency", "github:a/b": "a git dependency", "a/b": "a git dependency (GitHub shorthand)",
		"https://example.com/x.tgz": "a tarball-URL dependency", "file:../x": "a local dependency", "link:../x": "a local dependency",
		"~/x": "a local dependency", `C:\x`: "a local dependency", "c:x": "a local dependency", "..": "a local dependency",
		"workspace:*": "a URL dependency", "npm:@s/x@^2": "", "npm:x@github:a/b": "an npm: alias of a git dependency",
		"npm:../x@1": "an npm: alias of no package name", "~1.2": "", "1.x || >=2.5.0": "",
	} {
		if got := nonRegistry(spec); got != want {
			t.Errorf("nonRegistry(%q) = %q, want %q", spec, got, want)
		}
	}
	err := refuseDeps(Manifest{Dependencies: map[string]string{"ok": "^1", "bad": "github:evil/prepare"}})
	if !errors.Is(err, ErrNonRegistryDependency) || !strings.Contains(err.Error(), `bad "github:evil/prepare" is a git dependency: refused`) {
		t.Errorf("refuseDeps: %v", err)
	}
	// npm installs a dependency's peers and heeds its overrides only at
	// the root: both are checked; its devDependencies are not installed.
	for m, want := range map[*Manifest]string{
		{PeerDependencies: map[string]string{"p": "git+file:///x"}}:              `p "git+file:///x" is a git dependency`,
		{OptionalDependencies: map[string]string{"o": "file:../o"}}:              `o "file:../o" is a local dependency`,
		{Overrides: []byte(`{"a": {".": "1", "b": "https://x/b.tgz"}}`)}:         `override a > b "https://x/b.tgz" is a tarball-URL dependency`,
		{Overrides: []byte(`{"a": "$a", "b": "^2"}`)}:                            "",
		{Overrides: []byte(`[1]`)}:                                               "neither a spec nor an object",
		{Dependencies: map[string]string{"../x": "^1"}}:                          `"../x" is not a package name`,
		{Dependencies: map[string]string{"JSONStream": "^1", "@s/x": "npm:y@2"}}: "",
	} {
		err := refuseDeps(*m)
		if want == "" && err != nil || want != "" && (!errors.Is(err, ErrNonRegistryDependency) || !strings.Contains(err.Error(), want)) {
			t.Errorf("%+v: %v, want %q", *m, err, want)
		}
	}
}

func TestCheckLockRefusesWhatIsNotTheRegistry(t *testing.T) {
	dir := t.TempDir()
	tgz := filepath.Join(dir, "t", "x.tgz")
	lock := `{"packages":{"":{},"node_modules/srv":{"resolved":"file:t/x.tgz"},
		"node_modules/dep":{"resolved":"https://registry.npmjs.org/dep/-/dep-1.0.0.tgz"},
		"node_modules/opt":{"optional":true},
		"node_modules/g":{"resolved":"git+ssh://git@github.com/a/g.git#abc"},
		"node_modules/u":{"resolved":"https://example.com/u.tgz"},
		"node_modules/l":{"link":true,"resolved":"../l"}}}`
	p := filepath.Join(dir, "package-lock.json")
	os.WriteFile(p, []byte(lock), 0o644)
	err := NPM{}.checkLock(p, "srv", tgz, dir)
	if err == nil {
		t.Fatal("a lock with git, URL and link packages was accepted")
	}
	for _, want := range []string{"node_modules/g resolves to git+ssh", "node_modules/u resolves to https://example.com/u.tgz", "node_modules/l is a link"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	for _, no := range []string{"node_modules/srv", "node_modules/dep", "node_modules/opt"} {
		if strings.Contains(err.Error(), no+" ") {
			t.Errorf("error names %s, which is fine: %v", no, err)
		}
	}
}

// badRegistry gives a tarball that is not the one its integrity names.
type badRegistry struct{ *localRegistry }

func (b badRegistry) Pack(ctx context.Context, name, version, dir string) (string, error) {
	p, err := b.localRegistry.Pack(ctx, name, version, dir)
	if err == nil {
		err = os.WriteFile(p, []byte("not the tarball"), 0o644)
	}
	return p, err
}

func TestDownloadRefusesAnotherTarball(t *testing.T) {
	reg := packFixtures(t, "echo-mcp")
	n := NPM{Cache: t.TempDir(), Registry: badRegistry{reg}}
	_, err := n.Install(context.Background(), Spec{Kind: KindNPM, Name: "echo-mcp"})
	if !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), "is not the registry's integrity") {
		t.Fatalf("got %v, want a refused download", err)
	}
	if statusOfInstall(err) != StatusFailedFetch {
		t.Errorf("status %s", statusOfInstall(err))
	}
}

// TestNPMInstallPinsAndCaches installs a packed fixture with scripts off:
// the unversioned spec is pinned with its integrity, the entry is the bin
// named like the package (not its setup bin), the engines range that
// excludes the image's node is noted, and a second install reuses the
// cache without downloading.
func TestNPMInstallPinsAndCaches(t *testing.T) {
	reg := packFixtures(t, "echo-mcp")
	cache := t.TempDir()
	n := NPM{Cache: cache, Registry: reg, Node: "20.20.2"}
	in, err := n.Install(context.Background(), Spec{Kind: KindNPM, Name: "echo-mcp", Args: []string{"liar"}})
	if err != nil {
		t.Fatal(err)
	}
	if in.Version != "1.0.0" || !strings.HasPrefix(in.Integrity, "sha512-") {
		t.Errorf("pinned %q %q", in.Version, in.Integrity)
	}
	if in.Entry == nil || in.Entry.Bin != "echo-mcp" || in.Entry.Path != "server.js" || !strings.Contains(in.Entry.Why, "echo-mcp-setup left out") {
		t.Errorf("entry %+v", in.Entry)
	}
	if want := []string{"node", "/package/node_modules/echo-mcp/server.js", "liar"}; !slices.Equal(in.Argv, want) {
		t.Errorf("argv %q, want %q", in.Argv, want)
	}
	if len(in.Notes) != 1 || !strings.Contains(in.Notes[0], `engines.node ">=99" excludes the image's node 20.20.2: scanned anyway`) {
		t.Errorf("notes %q", in.Notes)
	}
	if _, err := os.Stat(filepath.Join(in.Dir, "node_modules", "echo-mcp", "server.js")); err != nil {
		t.Errorf("not installed: %v", err)
	}
	tarballs, _ := filepath.Glob(filepath.Join(cache, "tarballs", "sha512-*.tgz"))
	if len(tarballs) != 1 {
		t.Errorf("tarballs in the cache: %q", tarballs)
	}
	// Again: the cache answers; nothing is packed (the registry cannot).
	n.Registry = noPack{reg}
	again, err := n.Install(context.Background(), Spec{Kind: KindNPM, Name: "echo-mcp", Version: "1.0.0"})
	if err != nil || again.Dir != in.Dir {
		t.Errorf("second install: %v, dir %q want %q", err, again.Dir, in.Dir)
	}
}

type noPack struct{ *localRegistry }

func (noPack) Pack(context.Context, string, string, string) (string, error) {
	return "", errors.New("downloaded again")
}

func TestNPMErrorsQuoteTheCause(t *testing.T) {
	stderr := "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found\nnpm error 404\nnpm error 404  'nope@latest' is not in this registry.\nnpm error A complete log of this run can be found in: /x.log\n"
	got := npmErrors(stderr)
	if got != "npm error code E404; npm error 404 Not Found - GET https://registry.npmjs.org/nope - Not found; npm error 404" {
		t.Errorf("npmErrors: %q", got)
	}
	if got := npmErrors("a\nb\nc\nd\n"); got != "b; c; d" {
		t.Errorf("npmErrors without npm error lines: %q", got)
	}
}

// TestParseLauncher: the launcher lines clients' configurations give, as
// the package, version, bin and arguments they name.
func TestParseLauncher(t *testing.T) {
	for _, c := range []struct {
		argv                []string
		name, version, bin  string
		args                []string
		notLauncher, failed bool
		pypi                bool
	}{
		{argv: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/workspace"}, name: "@modelcontextprotocol/server-filesystem", args: []string{"/workspace"}},
		{argv: []string{"/usr/bin/npx", "--yes", "pkg@1.2.3"}, name: "pkg", version: "1.2.3"},
		{argv: []string{"npx", "-p", "pkg@^2", "pkg-serve", "--stdio"}, name: "pkg", version: "^2", bin: "pkg-serve", args: []string{"--stdio"}},
		{argv: []string{"npm", "exec", "--yes", "--", "pkg", "a"}, name: "pkg", args: []string{"a"}},
		{argv: []string{"npm", "x", "pkg"}, name: "pkg"},
		{argv: []string{"pnpm", "dlx", "pkg@latest"}, name: "pkg", version: "latest"},
		{argv: []string{"pnpx", "pkg"}, name: "pkg"},
		{argv: []string{"bunx", "pkg", "x"}, name: "pkg", args: []string{"x"}},
		{argv: []string{"yarn", "dlx", "pkg"}, name: "pkg"},
		{argv: []string{"node", "server.js"}, notLauncher: true},
		{argv: []string{"uvx", "mcp-server-fetch", "--x"}, name: "mcp-server-fetch", args: []string{"--x"}, pypi: true},
		{argv: []string{"uvx", "--from", "x", "serve", "--a"}, pypi: true, name: "x", bin: "serve", args: []string{"--a"}},
		{argv: []string{"uvx", "pkg@1.2", "a"}, pypi: true, name: "pkg", version: "==1.2", args: []string{"a"}},
		{argv: []string{"uvx", "-q", "--python", "3.11", "--with", "a,b>=2", "Pkg[X]@latest"}, pypi: true, name: "Pkg"},
		{argv: []string{"pipx", "run", "pkg==2.0"}, name: "pkg", version: "==2.0", pypi: true},
		{argv: []string{"pipx", "run", "--spec", "pkg>=1,<2", "app"}, name: "pkg", version: ">=1,<2", bin: "app", pypi: true},
		{argv: []string{"uvx", "--index-url", "http://10.0.0.1/", "pkg"}, failed: true},
		{argv: []string{"uvx", "--default-index=http://x/", "pkg"}, failed: true},
		{argv: []string{"uvx", "--bogus", "pkg"}, failed: true},
		{argv: []string{"uvx", "--from"}, failed: true},
		{argv: []string{"uvx", "--from", "pkg"}, failed: true},
		{argv: []string{"uvx", "pkg@https://example.com/x.whl"}, failed: true},
		{argv: []string{"uvx", "pkg @ https://example.com/x.whl"}, failed: true},
		{argv: []string{"uvx", "../../etc"}, failed: true},
		{argv: []string{"uv", "tool", "run", "pkg"}, name: "pkg", pypi: true},
		{argv: []string{"npm", "start"}, notLauncher: true},
		{argv: []string{"npx", "-c", "rm -rf /"}, failed: true},
		{argv: []string{"npx", "-y"}, failed: true},
		{argv: []string{"npx", "git+https://example.com/x.git"}, failed: true},
	} {
		s, ok, err := ParseLauncher(c.argv)
		switch {
		case c.notLauncher:
			if ok || err != nil {
				t.Errorf("%q: a launcher (%+v, %v)", c.argv, s, err)
			}
		case c.failed:
			if !ok || err == nil {
				t.Errorf("%q: %+v %v %v, want refused", c.argv, s, ok, err)
			}
		case c.pypi:
			if !ok || err != nil || s.Kind != KindPyPI || s.Name != c.name || s.Version != c.version || s.Bin != c.bin || strings.Join(s.Args, " ") != strings.Join(c.args, " ") {
				t.Errorf("%q: %+v %v %v", c.argv, s, ok, err)
			}
		case !ok || err != nil || s.Kind != KindNPM || s.Name != c.name || s.Version != c.version || s.Bin != c.bin || strings.Join(s.Args, " ") != strings.Join(c.args, " "):
			t.Errorf("%q: %+v %v %v", c.argv, s, ok, err)
		}
	}
}
