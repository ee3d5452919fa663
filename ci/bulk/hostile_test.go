package bulk

// hostile_test.go is issue #36 item 4: packages whose manifest or tarball
// aims at the host the fetch runs on. Each attack is a test; the host
// outside the cache must be as it was.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
)

// needNPM skips a test when the host has no npm, but fails it under
// CI=true: there a missing npm is a broken CI, as sandboxtest has it for
// the engine.
func needNPM(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no npm on the host: %v", err)
		}
		t.Skip("no npm on this host")
	}
}

// tarEntry is one entry of a hand-built tarball.
type tarEntry struct {
	name, body string
	mode       int64 // 0644 when 0
	typ        byte  // a regular file when 0
}

// rawTgz writes the entries, in order and named as given, as a gzip
// tarball at dir/file.
func rawTgz(t *testing.T, dir, file string, entries ...tarEntry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: e.typ}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size, h.Linkname = 0, e.body
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// snapshot lists every path under dir with its mode and content hash, to
// tell a directory unchanged.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha512.Sum512(b)
			v += " " + hex.EncodeToString(sum[:8])
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if before[p] != v {
			t.Errorf("%s: %s is new or changed (%s, was %q)", what, p, v, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s: %s is gone", what, p)
		}
	}
}

// escapeTo is a version that walks a tree's path out of the cache to dir.
func escapeTo(dir string) string {
	return "1.0.0/" + strings.Repeat("../", 64) + strings.TrimPrefix(dir, "/") + "/landed"
}

// landing is where the version of escapeTo put the tree of tarball before
// the fix: DIR/landed-HASH, HASH the tarball's first 16 hex digits.
func landing(t *testing.T, dir, tarball string) string {
	t.Helper()
	b, err := os.ReadFile(tarball)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(b)
	return filepath.Join(dir, "landed-"+hex.EncodeToString(sum[:])[:16])
}

func TestNPMNameRules(t *testing.T) {
	for name, why := range map[string]string{
		"echo-mcp": "", "@scope/pkg": "", "a.b_c-1": "", "x": "", strings.Repeat("a", maxNPMName): "",
		"":                                "is empty",
		strings.Repeat("a", maxNPMName+1): "is over 214 characters",
		"Echo":                            "has capital letters",
		".hidden":                         "starts with . or _",
		"_private":                        "starts with . or _",
		"@scope/.pkg":                     "starts with . or _",
		"@./pkg":                          "starts with . or _",
		"@scope/..":                       "starts with . or _",
		"a/b":                             "has a path separator",
		"@s/a/b":                          "has a path separator",
		`a\b`:                             "has a path separator",
		"@scope":                          "wants @scope/name",
		"@/pkg":                           "wants @scope/name",
		"node_modules":                    "is one npm reserves",
		"FAVICON.ICO":                     "is one npm reserves",
		" pad":                            "which is not URL-safe",
		"a~b":                             "which is not URL-safe",
		"a:b":                             "which is not URL-safe",
		"caf\u00e9":                       "which is not URL-safe",
	} {
		err := checkNPMName(name)
		switch {
		case why == "" && err != nil:
			t.Errorf("%q: %v, want it accepted", name, err)
		case why != "" && (!errors.Is(err, ErrInvalidPackage) || !strings.Contains(err.Error(), why)):
			t.Errorf("%q: %v, want %q", name, err, why)
		}
	}
}

func TestSemverRules(t *testing.T) {
	for _, v := range []string{"0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7", "1.0.0-x.7.z.92", "1.0.0-x-y-z.--",
		"1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85", "1.0.0+21AF26D3----117B344092BD", "1.0.0-0A.is.legal"} {
		if err := checkNPMVersion(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"", "1", "1.2", "1.2.3.4", "01.2.3", "1.02.3", "v1.2.3", "=1.2.3", " 1.2.3", "1.2.3 ", "1.2.3-", "1.2.3+",
		"1.2.3-01", "1.2.3-a..b", "1.2.3+a..b", "1.2.3-a_b", "1.2.3+a+b", "1.2.3/../x", "1.0.0/../../etc", "../1.0.0", "1.2.x", "1.2.3-\u00e9",
		"1.2.3-" + strings.Repeat("a", maxNPMVersion)} {
		if err := checkNPMVersion(v); !errors.Is(err, ErrInvalidPackage) || !strings.Contains(err.Error(), "is not semver") {
			t.Errorf("%q: %v, want it refused", v, err)
		}
	}
}

// TestCachePathsStayInside: a path is built from single components and
// checked under the cache; a tree's name from a checked name and version.
func TestCachePathsStayInside(t *testing.T) {
	cache := t.TempDir()
	if p, err := cachePath(cache, treesDir, "a@1.0.0-0123456789abcdef"); err != nil || p != filepath.Join(cache, treesDir, "a@1.0.0-0123456789abcdef") {
		t.Errorf("a plain path: %q, %v", p, err)
	}
	for _, parts := range [][]string{{""}, {"."}, {".."}, {"trees", ".."}, {"a/../../x"}, {"/etc"}, {`a\b`}, {"a\x00b"}} {
		if p, err := cachePath(cache, parts...); !errors.Is(err, ErrOutsideCache) {
			t.Errorf("%q: %q, %v; want refused", parts, p, err)
		}
	}
	if err := inside(cache, filepath.Join(cache, "..", "x")); !errors.Is(err, ErrOutsideCache) {
		t.Errorf("../x: %v", err)
	}
	if err := inside(cache, cache); !errors.Is(err, ErrOutsideCache) {
		t.Errorf("the cache itself: %v", err)
	}
	digest := bytes.Repeat([]byte{0xab}, 64)
	if got, err := treeDirName("@s/p", "1.0.0-rc.1+b", digest); err != nil || got != "s__p@1.0.0-rc.1+b-abababababababab" {
		t.Errorf("tree name %q, %v", got, err)
	}
	for _, nv := range [][2]string{{"a", escapeTo("/tmp")}, {"../a", "1.0.0"}, {"a", "1.0.0\x00"}} {
		if _, err := treeDirName(nv[0], nv[1], digest); !errors.Is(err, ErrInvalidPackage) {
			t.Errorf("%q: %v", nv, err)
		}
	}
	if _, err := treeDirName("a", "1.0.0", []byte{1}); err == nil {
		t.Error("a short digest was taken")
	}
	for _, sri := range []string{"sha512-AAAA", "sha256-" + strings.Repeat("A", 44), "../x-AAAA", "md5"} {
		if _, err := tarballFileName(sri); err == nil {
			t.Errorf("integrity %q taken", sri)
		}
	}
}

// TestManifestKeysAsNPMReadsThem: keys count spelt as npm spells them
// (Go's decoder alone takes "VERSION" for version), the last of a key
// given twice wins, as in JSON.parse, and a byte-order mark is skipped.
func TestManifestKeysAsNPMReadsThem(t *testing.T) {
	m, err := parseManifest([]byte("\ufeff" + `{"name": "a", "version": "1.0.0", "VERSION": "1.0.0/../../x", "Name": "../b",
		"dependencies": {"d": "^1"}, "Dependencies": {"e": "git+file:///x"}, "main": "first", "main": "last"}`))
	if err != nil || m.Name != "a" || m.Version != "1.0.0" || m.Main != "last" || len(m.Dependencies) != 1 || m.Dependencies["d"] != "^1" {
		t.Errorf("manifest %+v, %v", m, err)
	}
	var r Resolved
	if err := r.UnmarshalJSON([]byte(`{"name": "a", "version": "2.0.0", "VERSION": "x", "dist": {"integrity": "sha512-x"}}`)); err != nil || r.Version != "2.0.0" || r.Dist.Integrity != "sha512-x" {
		t.Errorf("resolved %+v, %v", r, err)
	}
	if _, err := parseManifest([]byte(`{"name": 1}`)); err == nil {
		t.Error("a numeric name was taken")
	}
}

// TestTarballReadAsNPMExtractsIt: the entries land where node-tar under
// pacote writes them (the first component dropped, whatever it is, then
// leading slashes, "." and "//" gone); two that land on one path are
// refused, whichever way they are spelt; names npm reads otherwise are
// refused; the tarball written for npm holds the files read, plainly
// named, without set-id, sticky or world-writable bits.
func TestTarballReadAsNPMExtractsIt(t *testing.T) {
	for name, want := range map[string]string{
		"package/package.json": "package.json", "other/package.json": "package.json", "package//package.json": "package.json",
		"package/./package.json": "package.json", "package/lib//x.js": "lib/x.js", "package/lib/": "lib",
		"./package/package.json": "package/package.json", // node-tar drops ".", not "package"
		"package.json":           "", "package/": "", "package/.": "",
	} {
		if got, err := extractedPath(name); err != nil || got != want {
			t.Errorf("extractedPath(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	for name, why := range map[string]string{
		"package/../x": "has a ..", "package/a/../../x": "has a ..", `package\package.json`: `has a \`,
		"package/C:package.json": "drive letter", "package//c:/x": "drive letter", "package/\xffx": "not UTF-8",
		"package/" + strings.Repeat("a/", maxTarDepth) + "x": "components deep",
	} {
		if _, err := extractedPath(name); !errors.Is(err, ErrAmbiguousTarball) || !strings.Contains(err.Error(), why) {
			t.Errorf("extractedPath(%q): %v, want %q", name, err, why)
		}
	}

	pj := func(which string) string { return `{"name": "a", "version": "1.0.0", "which": "` + which + `"}` }
	for i, dup := range [][]string{
		{"package/package.json", "package/package.json"},
		{"package/package.json", "package//package.json"},
		{"package/package.json", "other/package.json"},
		{"package/package.json", "package/./package.json"},
		{"package/lib/x.js", "package/lib//x.js"},
	} {
		p := rawTgz(t, t.TempDir(), "dup.tgz", tarEntry{name: dup[0], body: pj("first")}, tarEntry{name: dup[1], body: pj("second")})
		if _, err := readPackageFile(p, ""); !errors.Is(err, ErrAmbiguousTarball) || !strings.Contains(err.Error(), "are both extracted to") {
			t.Errorf("%d %q: %v, want refused", i, dup, err)
		}
	}
	for _, es := range [][]string{{"package/lib", "package/lib/x.js"}, {"package/lib/x.js", "package/lib"}} {
		p := rawTgz(t, t.TempDir(), "conflict.tgz", tarEntry{name: "package/package.json", body: pj("root")}, tarEntry{name: es[0], body: "x"}, tarEntry{name: es[1], body: "x"})
		if _, err := readPackageFile(p, ""); !errors.Is(err, ErrAmbiguousTarball) || !strings.Contains(err.Error(), "needs a directory") {
			t.Errorf("%q: %v, want refused", es, err)
		}
	}
	// A bundled package's dependencies are checked as the package's own;
	// its other fields are not read.
	for bundled, want := range map[string]string{
		"package/node_modules/b/package.json":                `bundled node_modules/b/package.json: non-registry dependency: dependency x "github:a/b" is a git dependency`,
		"package/node_modules/@s/b/package.json":             "bundled node_modules/@s/b/package.json",
		"package/node_modules/a/node_modules/b/package.json": "bundled node_modules/a/node_modules/b/package.json",
		"package/lib/b/package.json":                         "",
	} {
		p := rawTgz(t, t.TempDir(), "bundled.tgz", tarEntry{name: "package/package.json", body: pj("root")},
			tarEntry{name: bundled, body: `{"name": "b", "engines": ["node >= 0.6"], "dependencies": {"x": "github:a/b"}}`})
		_, err := readPackageFile(p, "")
		if want == "" && err != nil || want != "" && (!errors.Is(err, ErrNonRegistryDependency) || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", bundled, err, want)
		}
	}
	if _, err := readPackageFile(rawTgz(t, t.TempDir(), "old.tgz", tarEntry{name: "package/package.json", body: pj("root")},
		tarEntry{name: "package/node_modules/b/package.json", body: `{"name": "b", "engines": ["node >= 0.6"], "dependencies": {"x": "~1.2"}}`}), ""); err != nil {
		t.Errorf("an old bundled package: %v", err)
	}
	// Not duplicates: ./package/ is a directory of the package, and
	// names differing in case are two files on Linux.
	dir := t.TempDir()
	p := rawTgz(t, dir, "ok.tgz",
		tarEntry{name: "./package/package.json", body: pj("nested")},
		tarEntry{name: "package/Package.json", body: pj("capital")},
		tarEntry{name: "package/package.json", body: pj("root")},
		tarEntry{name: "package/bin/suid", body: "#!/bin/sh\n", mode: 0o4777},
		tarEntry{name: "package/sticky", body: "x", mode: 0o1646},
		tarEntry{name: "package/lib", typ: tar.TypeDir, mode: 0o777},
		tarEntry{name: "package/link", body: "/etc/passwd", typ: tar.TypeSymlink},
		tarEntry{name: "package/hard", body: "package/package.json", typ: tar.TypeLink},
	)
	own := filepath.Join(dir, "own.tgz")
	m, err := readPackageFile(p, own)
	if err != nil || m.Name != "a" || m.Version != "1.0.0" {
		t.Fatalf("read: %+v, %v", m, err)
	}
	f, err := os.Open(own)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = fmt.Sprintf("%c %o %s", h.Typeflag, h.Mode, b)
	}
	want := map[string]string{
		"package/package/package.json": "0 644 " + pj("nested"),
		"package/Package.json":         "0 644 " + pj("capital"),
		"package/package.json":         "0 644 " + pj("root"),
		"package/bin/suid":             "0 775 #!/bin/sh\n",
		"package/sticky":               "0 644 x",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the tarball written for npm:\n%q\nwant\n%q", got, want)
	}
	if _, err := readPackageFile(rawTgz(t, t.TempDir(), "none.tgz", tarEntry{name: "./package/package.json", body: pj("x")}), ""); err == nil || !strings.Contains(err.Error(), "no package/package.json") {
		t.Errorf("only a nested manifest: %v", err)
	}
}

// refusingRegistry answers View with its resolution and fails Pack,
// counting the calls: a refusal must come before any download.
type refusingRegistry struct {
	r     Resolved
	packs atomic.Int32
}

func (f *refusingRegistry) View(context.Context, string, string) (Resolved, error) { return f.r, nil }

func (f *refusingRegistry) Pack(context.Context, string, string, string) (string, error) {
	f.packs.Add(1)
	return "", errors.New("downloaded")
}

// TestRefusedBeforeAnythingIsWritten: attacks 1 and 2 without npm. A
// version (or name) that is not npm's, from a tarball or the registry, is
// failed-fetch saying why before anything is written: the cache stays
// empty, the directory the version points into is as it was (its
// landed-HASH of an earlier run not removed), the registry is not asked
// for the tarball. A tarball with two manifests is refused the same way
// (npm would install the second, here with a git dependency).
func TestRefusedBeforeAnythingIsWritten(t *testing.T) {
	ctx := context.Background()
	target := t.TempDir()
	src := t.TempDir()
	escaping := rawTgz(t, src, "escape.tgz", tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-escape", "version": "` + escapeTo(target) + `", "bin": "s.js"}`},
		tarEntry{name: "package/s.js", body: "x"})
	// An earlier run's tree at the path the version names: kept.
	writeFile(t, landing(t, target, escaping), "keep", "the host's")
	badName := rawTgz(t, src, "name.tgz", tarEntry{name: "package/package.json", body: `{"name": "../../../escape", "version": "1.0.0"}`})
	twoManifests := rawTgz(t, src, "two.tgz",
		tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-two", "version": "1.0.0"}`},
		tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-two", "version": "1.0.0", "dependencies": {"x": "git+file:///nonexistent/repo"}}`})
	otherManifest := rawTgz(t, src, "other.tgz",
		tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-two", "version": "1.0.0"}`},
		tarEntry{name: "evil//package.json", body: `{"name": "mcpsandbox-fixture-two", "version": "1.0.0"}`})
	before, beforeSrc := snapshot(t, target), snapshot(t, src)

	for _, c := range []struct {
		tarball, why string
		sentinel     error
	}{
		{escaping, "is not semver", ErrInvalidPackage},
		{badName, "starts with . or _", ErrInvalidPackage},
		{twoManifests, `entries "package/package.json" and "package/package.json" are both extracted to package.json`, ErrAmbiguousTarball},
		{otherManifest, `"evil//package.json" are both extracted to package.json`, ErrAmbiguousTarball},
	} {
		cache := t.TempDir()
		_, err := NPM{Cache: cache}.Install(ctx, Spec{Kind: KindNPM, Name: c.tarball, Tarball: true})
		if !errors.Is(err, ErrFetch) || !errors.Is(err, c.sentinel) || !strings.Contains(err.Error(), c.why) || statusOfInstall(err) != StatusFailedFetch {
			t.Errorf("%s: %v, want failed-fetch saying %q", filepath.Base(c.tarball), err, c.why)
		}
		if entries, _ := os.ReadDir(cache); len(entries) != 0 {
			t.Errorf("%s: the cache has %v", filepath.Base(c.tarball), entries)
		}
	}

	// The registry's answer is checked as a tarball's is.
	for _, r := range []Resolved{{Manifest: Manifest{Name: "echo-mcp", Version: escapeTo(target)}}, {Manifest: Manifest{Name: "echo-mcp", Version: "file:../x"}}} {
		r.Dist.Integrity = "sha512-" + strings.Repeat("A", 86) + "=="
		reg := &refusingRegistry{r: r}
		cache := t.TempDir()
		_, err := NPM{Cache: cache, Registry: reg}.Install(ctx, Spec{Kind: KindNPM, Name: "echo-mcp"})
		if !errors.Is(err, ErrInvalidPackage) || statusOfInstall(err) != StatusFailedFetch || !strings.Contains(err.Error(), "the registry answered") || reg.packs.Load() != 0 {
			t.Errorf("registry version %q: %v (packs %d)", r.Version, err, reg.packs.Load())
		}
		if entries, _ := os.ReadDir(cache); len(entries) != 0 {
			t.Errorf("registry version %q: the cache has %v", r.Version, entries)
		}
	}
	for _, s := range []Spec{{Kind: KindNPM, Name: "Echo-MCP"}, {Kind: KindNPM, Name: "echo-mcp", Version: ".."}, {Kind: KindNPM, Name: "echo-mcp", Version: "~/x"}} {
		reg := &refusingRegistry{}
		if _, err := (NPM{Cache: t.TempDir(), Registry: reg}).Install(ctx, s); !errors.Is(err, ErrInvalidPackage) || !errors.Is(err, ErrFetch) {
			t.Errorf("%s: %v", s, err)
		}
	}
	sameSnapshot(t, "the target", before, snapshot(t, target))
	sameSnapshot(t, "the tarballs' directory", beforeSrc, snapshot(t, src))
}

// TestStripModes: set-id bits, a file's sticky bit and world-writable
// bits go; a directory's sticky bit stays; a link is not followed, so
// that the set-uid file it points to outside the tree is left alone.
func TestStripModes(t *testing.T) {
	tree, outside := t.TempDir(), t.TempDir()
	modes := map[string]fs.FileMode{
		"suid": 0o755 | fs.ModeSetuid, "sgid": 0o755 | fs.ModeSetgid, "sticky": 0o644 | fs.ModeSticky, "ww": 0o666, "plain": 0o640,
		"d/inner": 0o711 | fs.ModeSetuid,
	}
	for name, mode := range modes {
		writeFile(t, tree, name, "x")
		if err := os.Chmod(filepath.Join(tree, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(tree, "d"), 0o777|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(tree, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(tree, "tmp"), 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	writeFile(t, outside, "host-suid", "x")
	hostFile := filepath.Join(outside, "host-suid")
	if err := os.Chmod(hostFile, 0o755|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(hostFile, filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(tree, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := stripModes(tree); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{"suid": 0o755, "sgid": 0o755, "sticky": 0o644, "ww": 0o664, "plain": 0o640, "d/inner": 0o711,
		"d": fs.ModeDir | 0o775, "tmp": fs.ModeDir | fs.ModeSticky | 0o775}
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		info, err := os.Lstat(filepath.Join(tree, n))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want[n] {
			t.Errorf("%s: %v, want %v", n, info.Mode(), want[n])
		}
	}
	if info, err := os.Stat(hostFile); err != nil || info.Mode() != 0o755|fs.ModeSetuid {
		t.Errorf("the file outside, through a link: %v %v", info.Mode(), err)
	}
}

// fakeGit puts a git first on PATH that records its every run in the
// file it returns (and fails): the tests' witness that npm ran git.
func fakeGit(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	ran := filepath.Join(t.TempDir(), "git-ran")
	script := "#!/bin/sh\necho \"$@\" >> " + ran + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return ran
}

// TestHostilePackagesStayInTheCache runs the three attacks as local
// tarballs through a batch, with the real npm (offline: no registry
// dependency) and a fake scanner. (1) A version walking out of the cache
// is failed-fetch, why saying so; the directory it points into is as it
// was, its landed-HASH kept. A VERSION key (npm ignores it; Go's decoder
// alone would read it) changes nothing: the package installs in the
// cache at its version. (2) Two manifests, the second with a git+file:
// dependency, are failed-fetch, and git never runs. (3) A set-uid file
// (and sticky and world-writable ones) are installed without those bits.
func TestHostilePackagesStayInTheCache(t *testing.T) {
	needNPM(t)
	gitRan := fakeGit(t)
	target, src, cache := t.TempDir(), t.TempDir(), t.TempDir()
	server := "#!/usr/bin/env node\n"
	escaping := rawTgz(t, src, "escape.tgz",
		tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-escape", "version": "` + escapeTo(target) + `", "bin": "server.js"}`},
		tarEntry{name: "package/server.js", body: server, mode: 0o755})
	writeFile(t, landing(t, target, escaping), "keep", "the host's")
	shouting := rawTgz(t, src, "shout.tgz",
		tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-shout", "version": "1.0.0", "VERSION": "` + escapeTo(target) + `", "bin": "server.js"}`},
		tarEntry{name: "package/server.js", body: server, mode: 0o755})
	repo := t.TempDir() // a git+file: URL's repository, never cloned
	two := rawTgz(t, src, "two.tgz",
		tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-two", "version": "1.0.0", "bin": "server.js"}`},
		tarEntry{name: "package/server.js", body: server, mode: 0o755},
		tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-two", "version": "1.0.0", "bin": "server.js", "dependencies": {"x": "git+file://` + repo + `"}}`})
	suid := rawTgz(t, src, "suid.tgz",
		tarEntry{name: "package/package.json", body: `{"name": "mcpsandbox-fixture-suid", "version": "1.0.0", "bin": "server.js"}`},
		tarEntry{name: "package/server.js", body: server, mode: 0o4755},
		tarEntry{name: "package/lib/sgid", body: "x", mode: 0o2755},
		tarEntry{name: "package/lib/sticky", body: "x", mode: 0o1644},
		tarEntry{name: "package/lib/ww", body: "x", mode: 0o666})
	before := snapshot(t, target)

	o := testOptions(t, &fakeScanner{})
	o.Installers = map[Kind]Installer{KindNPM: NPM{Cache: cache}}
	specs, bad := ParseList("l", strings.NewReader("tgz:"+escaping+"\ntgz:"+shouting+"\ntgz:"+two+"\ntgz:"+suid+"\n"))
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	res, err := Run(context.Background(), specs, o)
	if err != nil || len(res) != 4 {
		t.Fatalf("%v, %d results", err, len(res))
	}
	for i, want := range []struct {
		status Status
		why    string
	}{
		{StatusFailedFetch, `version "` + escapeTo(target) + `" is not semver`},
		{StatusOK, ""},
		{StatusFailedFetch, `entries "package/package.json" and "package/package.json" are both extracted to package.json (npm keeps the last): refused`},
		{StatusOK, ""},
	} {
		if r := res[i]; r.Status != want.status || !strings.Contains(r.Why, want.why) {
			t.Errorf("%s: %s (%s), want %s saying %q", filepath.Base(r.Name), r.Status, r.Why, want.status, want.why)
		}
	}
	if res[1].Version != "1.0.0" {
		t.Errorf("VERSION key: version %q", res[1].Version)
	}
	sameSnapshot(t, "the target", before, snapshot(t, target))
	if b, err := os.ReadFile(gitRan); err == nil {
		t.Errorf("git ran: %s", b)
	}

	// The trees are in the cache, named by the checked version, without
	// the tarball npm was given.
	trees, _ := filepath.Glob(filepath.Join(cache, treesDir, "*"))
	if len(trees) != 2 || !strings.Contains(trees[0], "mcpsandbox-fixture-shout@1.0.0-") || !strings.Contains(trees[1], "mcpsandbox-fixture-suid@1.0.0-") {
		t.Fatalf("trees %q", trees)
	}
	if _, err := os.Stat(filepath.Join(trees[0], packageTarball)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the tarball given to npm is left in the tree: %v", err)
	}
	pkg := filepath.Join(trees[1], "node_modules", "mcpsandbox-fixture-suid")
	for name, want := range map[string]fs.FileMode{"server.js": 0o755, "lib/sgid": 0o755, "lib/sticky": 0o644, "lib/ww": 0o644} {
		info, err := os.Lstat(filepath.Join(pkg, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode(); got&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky|0o002) != 0 || got.Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, got, want)
		}
	}
	err = filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if info, err := d.Info(); err == nil && d.Type()&fs.ModeSymlink == 0 && info.Mode()&(fs.ModeSetuid|fs.ModeSetgid|0o002) != 0 {
			t.Errorf("%s: %v in the cache", p, info.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNPMRunsNoGitNoScriptsNoRemote: npm as the fetch runs it to install
// (its safe and install flags) given what the checks would refuse first. A git+file:
// dependency: npm refuses it and git never runs (without the flags, npm
// runs the fake git: the witness works). A tarball-URL dependency: no
// request reaches the server. A dependency's preinstall: not run.
func TestNPMRunsNoGitNoScriptsNoRemote(t *testing.T) {
	needNPM(t)
	gitRan := fakeGit(t)
	ctx := context.Background()
	cli := NPMCLI{Cache: t.TempDir(), Registry: defaultRegistryURL}
	prefix := func(deps string) string {
		dir := t.TempDir()
		writeFile(t, dir, "package.json", `{"name": "`+installPackageName+`", "private": true, "dependencies": {`+deps+`}}`)
		return dir
	}
	repo := t.TempDir()
	gitDep := `"x": "git+file://` + repo + `"`

	if _, err := cli.npm(ctx, prefix(gitDep), append([]string{"install", "--package-lock-only"}, npmInstallFlags()...)...); err == nil {
		t.Error("npm took a git dependency")
	}
	if b, err := os.ReadFile(gitRan); err == nil {
		t.Errorf("git ran: %s", b)
	}
	control := exec.Command("npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund", "--cache", cli.Cache)
	control.Dir = prefix(gitDep)
	control.Run()
	if _, err := os.Stat(gitRan); err != nil {
		t.Errorf("without the safe flags, npm did not run the fake git either (%v): the witness proves nothing", err)
	}

	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.NotFound(w, nil)
	}))
	defer srv.Close()
	if _, err := cli.npm(ctx, prefix(`"x": "`+srv.URL+`/x.tgz"`), append([]string{"install", "--package-lock-only"}, npmInstallFlags()...)...); err == nil || hits.Load() != 0 {
		t.Errorf("a tarball-URL dependency: %v, %d requests", err, hits.Load())
	}

	ran := filepath.Join(t.TempDir(), "script-ran")
	scripted := rawTgz(t, t.TempDir(), "s.tgz", tarEntry{name: "package/package.json",
		body: `{"name": "mcpsandbox-fixture-scripted", "version": "1.0.0", "scripts": {"preinstall": "touch ` + ran + `", "postinstall": "touch ` + ran + `"}}`})
	if _, err := cli.npm(ctx, prefix(`"mcpsandbox-fixture-scripted": "file:`+scripted+`"`), append([]string{"install"}, npmInstallFlags()...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a dependency's install script ran")
	}
}
