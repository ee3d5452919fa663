package bulk

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/bulk/pyindextest"
)

func TestPyVersionOrder(t *testing.T) {
	// Each sorts before the next (PEP 440's examples).
	order := []string{"1.0.dev456", "1.0a1", "1.0a2.dev456", "1.0a12.dev456", "1.0a12", "1.0b1.dev456", "1.0b2", "1.0b2.post345.dev456",
		"1.0b2.post345", "1.0rc1.dev456", "1.0rc1", "1.0", "1.0+abc.5", "1.0.post456.dev34", "1.0.post456", "1.1.dev1", "1.10", "1!0.1"}
	for i := 0; i+1 < len(order); i++ {
		a, err1 := parsePyVersion(order[i])
		b, err2 := parsePyVersion(order[i+1])
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if a.compare(b) >= 0 || b.compare(a) <= 0 {
			t.Errorf("%s should sort before %s", order[i], order[i+1])
		}
	}
	for _, eq := range [][2]string{{"1.0", "1.0.0"}, {"1.0alpha1", "1.0a1"}, {"1.0-post1", "1.0.post1"}, {"1.0-1", "1.0.post1"}, {"v2", "2"}} {
		a, _ := parsePyVersion(eq[0])
		b, _ := parsePyVersion(eq[1])
		if a.compare(b) != 0 {
			t.Errorf("%s != %s", eq[0], eq[1])
		}
	}
	for _, bad := range []string{"", "1..0", "latest", "1.0/../x", "1.0 ", "99999999999999999999"} {
		if _, err := parsePyVersion(bad); err == nil && bad != "1.0 " {
			t.Errorf("%q read as a version", bad)
		}
	}
}

func TestPySpecifiers(t *testing.T) {
	for _, c := range []struct {
		spec, version string
		want          bool
	}{
		{"==1.2", "1.2.0", true}, {"==1.2.*", "1.2.9", true}, {"==1.2.*", "1.3", false}, {"!=1.2.*", "1.3", true},
		{">=1,<2", "1.9", true}, {">=1,<2", "2.0", false}, {"<2", "2.0a1", false}, {"<2a5", "2.0a1", true},
		{">1.7", "1.7.post2", false}, {">1.7.post1", "1.7.post2", true}, {"~=2.2", "2.9", true}, {"~=2.2", "3.0", false},
		{"~=1.4.5", "1.4.9", true}, {"~=1.4.5", "1.5", false}, {"===1.0+x", "1.0+x", true}, {"==1.0", "1.0+local", true},
		{"", "7", true},
	} {
		ss, err := parsePySpecifiers(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		v, err := parsePyVersion(c.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := ss.contains(v); got != c.want {
			t.Errorf("%s contains %s = %v, want %v", c.spec, c.version, got, c.want)
		}
	}
	for _, bad := range []string{"=1", "~=1", ">=", "== 1 2", "=>1"} {
		if _, err := parsePySpecifiers(bad); err == nil {
			t.Errorf("%q read", bad)
		}
	}
}

func TestPyMarkers(t *testing.T) {
	env := newPyEnv("3.11.2", "x86_64")
	for _, c := range []struct {
		marker string
		extras []string
		want   bool
	}{
		{`sys_platform == "win32"`, nil, false},
		{`sys_platform == 'linux' and python_version >= "3.8"`, nil, true},
		{`python_version < "3.10"`, nil, false},
		{`python_version < "3.10" or platform_machine == "x86_64"`, nil, true},
		{`(os_name == "nt" or os_name == "posix") and extra == "cli"`, []string{"cli"}, true},
		{`extra == "cli"`, nil, false},
		{`extra == "Some_Extra"`, []string{"some-extra"}, true},
		{`"linux" in sys_platform`, nil, true},
		{`platform_python_implementation != 'PyPy'`, nil, true},
		{`python_full_version >= "3.11.1"`, nil, true},
	} {
		e, err := parseMarker(c.marker)
		if err != nil {
			t.Fatalf("%s: %v", c.marker, err)
		}
		if got := e.eval(env, c.extras); got != c.want {
			t.Errorf("%s (extras %v) = %v, want %v", c.marker, c.extras, got, c.want)
		}
	}
	for _, bad := range []string{`sys_platform ==`, `(sys_platform == "x"`, `__import__("os") == "x"`, `a == b`, strings.Repeat("(", 600)} {
		if _, err := parseMarker(bad); err == nil {
			t.Errorf("%q read", bad)
		}
	}
}

func TestPyRequirement(t *testing.T) {
	r, err := parsePyRequirement(`mcp[cli, ws] (>=1.2,<2) ; python_version >= "3.10"`)
	if err != nil || r.name != "mcp" || len(r.extras) != 2 || len(r.specs) != 2 || r.marker == nil {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := parsePyRequirement("evil @ https://example.com/evil.whl"); !errors.Is(err, ErrNonRegistryDependency) {
		t.Errorf("a URL requirement: %v", err)
	}
	for _, bad := range []string{"../x", "-x", "x[../y]", ""} {
		if _, err := parsePyRequirement(bad); err == nil {
			t.Errorf("%q read", bad)
		}
	}
}

// target is the python image as these tests take it.
var testTarget = PyTarget{Version: "3.11.2", Machine: "x86_64", GlibcMajor: 2, GlibcMinor: 36}

func TestPyWheelFits(t *testing.T) {
	for file, want := range map[string]int{
		"a-1-py3-none-any.whl": 1, "a-1-py2.py3-none-any.whl": 1, "a-1-py2-none-any.whl": 0, "a-1-py312-none-any.whl": 0,
		"a-1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl": 2, "a-1-cp311-cp311-manylinux_2_39_x86_64.whl": 0,
		"a-1-cp38-abi3-manylinux2014_x86_64.whl": 2, "a-1-cp312-abi3-manylinux2014_x86_64.whl": 0, "a-1-cp311-cp311-win_amd64.whl": 0,
		"a-1-cp311-cp311-musllinux_1_1_x86_64.whl": 0, "a-1-cp311-cp311-manylinux2014_aarch64.whl": 0, "a-1-cp310-cp310-manylinux1_x86_64.whl": 0,
	} {
		wn, err := parseWheelName(file)
		if err != nil {
			t.Fatal(err)
		}
		if got := testTarget.fits(wn); got != want {
			t.Errorf("%s fits %d, want %d", file, got, want)
		}
	}
}

func pyInstaller(t *testing.T, url string) PyPI {
	return PyPI{Cache: t.TempDir(), IndexURL: url, Target: testTarget, Image: "mcpsandbox/python:test"}
}

// TestPyPIInstallFixture installs the fixture, built by Debian's
// python3-build, from an index on the loopback: the server and its
// dependency, the Windows-only one not fetched, a launcher per console
// script; the second install comes from the cache.
func TestPyPIInstallFixture(t *testing.T) {
	ix := &pyindextest.Index{}
	for name, b := range pyindextest.BuildFixture(t) {
		ix.Files = append(ix.Files, pyindextest.File{Name: name, Data: b})
	}
	p := pyInstaller(t, ix.Serve(t))
	s, _, err := ParseLauncher([]string{"uvx", "mcp-fixture-py", "--flag"})
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Install(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if in.Version != "0.3.1" || !strings.HasPrefix(in.Integrity, "sha256-") || in.Image != p.Image || in.Cached {
		t.Errorf("installed %+v", in)
	}
	if got := strings.Join(in.Argv, " "); got != "python3 /package/bin/mcp-fixture-py --flag" {
		t.Errorf("argv %q", got)
	}
	for _, f := range []string{"lib/mcp_fixture_py/server.py", "lib/fixture_helper/__init__.py", "bin/mcp-fixture-py", "bin/mcp-fixture-py-other",
		"lib/mcp_fixture_py-0.3.1.dist-info/RECORD"} {
		if _, err := os.Stat(filepath.Join(in.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	launcherText, _ := os.ReadFile(filepath.Join(in.Dir, "bin/mcp-fixture-py"))
	if !strings.Contains(string(launcherText), "from mcp_fixture_py.server import main") || !strings.HasPrefix(string(launcherText), "#!/usr/bin/python3\n") {
		t.Errorf("launcher:\n%s", launcherText)
	}
	if n := ix.Requests("/simple/never-on-linux/") + ix.Requests("/simple/never-asked/"); n != 0 {
		t.Errorf("fetched a dependency the image's environment excludes (%d requests)", n)
	}
	if !strings.Contains(strings.Join(in.Notes, "\n"), "fixture-helper 1.2.0") {
		t.Errorf("notes %q", in.Notes)
	}
	again, err := p.Install(context.Background(), s)
	if err != nil || !again.Cached || again.Dir != in.Dir {
		t.Errorf("second install: %+v %v", again, err)
	}
	s.Bin = "mcp-fixture-py-other"
	other, err := p.Install(context.Background(), s)
	if err != nil || other.Argv[1] != "/package/bin/mcp-fixture-py-other" {
		t.Errorf("--from: %+v %v", other, err)
	}
	s.Bin = "nope"
	if _, err := p.Install(context.Background(), s); !errors.Is(err, ErrInstall) || !strings.Contains(err.Error(), "mcp-fixture-py-other") {
		t.Errorf("a missing command: %v", err)
	}
}

// rezip rewrites a wheel's zip through edit (name -> content; "" drops).
func rezip(t *testing.T, whl []byte, edit func(name string, body []byte) (string, []byte)) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(whl), int64(len(whl)))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		rc, _ := f.Open()
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		name, body := edit(f.Name, b.Bytes())
		if name == "" {
			continue
		}
		w, _ := zw.Create(name)
		w.Write(body)
	}
	zw.Close()
	return buf.Bytes()
}

const okEntry = "[console_scripts]\nsrv = srv.main:run\n"

// TestPyPIHostile installs what a hostile package or index offers: each
// refused, nothing written outside the cache, none of it run.
func TestPyPIHostile(t *testing.T) {
	good := pyindextest.Wheel("srv", "1.0", map[string]string{"srv/__init__.py": "", "srv/main.py": "def run(): pass\n"}, "", okEntry)
	goodName := pyindextest.WheelName("srv", "1.0")
	with := func(files ...pyindextest.File) []pyindextest.File { return files }
	symlink := func() []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		h := &zip.FileHeader{Name: "srv/link"}
		h.SetMode(os.ModeSymlink | 0o777)
		w, _ := zw.CreateHeader(h)
		w.Write([]byte("/etc/passwd"))
		zw.Close()
		// Its RECORD would have to list it: the link is refused first.
		return buf.Bytes()
	}
	for _, c := range []struct {
		name  string
		files []pyindextest.File
		line  []string
		want  error
		text  string
	}{
		{"hash the index gives differs", with(pyindextest.File{Name: goodName, Data: good, SHA256: strings.Repeat("ab", 32)}), nil, ErrIntegrity, ""},
		{"no hash from the index", with(pyindextest.File{Name: goodName, Data: good, SHA256: "-"}), nil, ErrFetch, "no version"},
		{"a file changed after RECORD", with(pyindextest.File{Name: goodName, Data: rezip(t, good, func(n string, b []byte) (string, []byte) {
			if n == "srv/main.py" {
				return n, []byte("import os; os.system('id')\n")
			}
			return n, b
		})}), nil, ErrWheel, "does not match its hash"},
		{"a file not in RECORD", with(pyindextest.File{Name: goodName, Data: rezip(t, good, func(n string, b []byte) (string, []byte) {
			if n == "srv/__init__.py" {
				return "srv/extra.pth", []byte("import os\n")
			}
			return n, b
		})}), nil, ErrWheel, ""},
		{"a path out of the tree", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"../../evil.py": "x"}, "", okEntry)}), nil, ErrWheel, "leaves the wheel"},
		{"an absolute path", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"/etc/evil": "x"}, "", okEntry)}), nil, ErrWheel, ""},
		{"a backslash path", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{`..\evil`: "x"}, "", okEntry)}), nil, ErrWheel, ""},
		{"a data scheme out of the tree", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv-1.0.data/root/evil": "x"}, "", okEntry)}), nil, ErrWheel, "scheme"},
		{"a script in a subdirectory", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv-1.0.data/scripts/a/b": "x"}, "", okEntry)}), nil, ErrWheel, ""},
		{"a symlink", with(pyindextest.File{Name: goodName, Data: symlink()}), nil, ErrWheel, "not a file"},
		{"an entry point that injects code", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": ""}, "",
			"[console_scripts]\nsrv = os:system('id') or srv.main:run\n")}), nil, ErrWheel, "not an identifier"},
		{"a console script named to escape", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": ""}, "",
			"[console_scripts]\n../srv\" = srv.main:run\n")}), nil, ErrWheel, "console script name"},
		{"METADATA names another project", with(pyindextest.File{Name: goodName, Data: rezip(t, good, func(n string, b []byte) (string, []byte) {
			return n, bytes.ReplaceAll(b, []byte("Name: srv"), []byte("Name: other"))
		})}), nil, ErrWheel, ""},
		{"only an sdist", with(pyindextest.File{Name: "srv-1.0.tar.gz", Data: []byte("x"), Project: "srv"}), nil, ErrSdistOnly, ""},
		{"a dependency by URL", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": ""}, "Requires-Dist: evil @ https://example.com/e.whl\n", okEntry)}), nil, ErrNonRegistryDependency, ""},
		{"a Python the image lacks", with(pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": ""}, "Requires-Python: >=3.13\n", okEntry)}), nil, ErrFetch, "needs Python"},
		{"yanked, not pinned", with(pyindextest.File{Name: goodName, Data: good, Attrs: `data-yanked="bad"`}), nil, ErrFetch, "no version"},
		{"two wheels on one path", with(
			pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": ""}, "Requires-Dist: dep\n", okEntry)},
			pyindextest.File{Name: pyindextest.WheelName("dep", "1.0"), Data: pyindextest.Wheel("dep", "1.0", map[string]string{"srv/main.py": "evil"}, "", "")}), nil, ErrWheel, "both install"},
		{"a conflict", with(
			pyindextest.File{Name: goodName, Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": ""}, "Requires-Dist: dep>=2\n", okEntry)},
			pyindextest.File{Name: pyindextest.WheelName("dep", "1.0"), Data: pyindextest.Wheel("dep", "1.0", map[string]string{"dep.py": ""}, "", "")}), nil, ErrFetch, "no version"},
		{"a file on another host over http", with(pyindextest.File{Name: goodName, Data: good, Href: "http://127.0.0.2:1/" + goodName}), nil, ErrOffIndex, ""},
		{"a file at the link-local metadata address", with(pyindextest.File{Name: goodName, Data: good, Href: "https://169.254.169.254/latest/" + goodName}), nil, ErrOffIndex, ""},
		{"a file on localhost by name", with(pyindextest.File{Name: goodName, Data: good, Href: "https://localhost:1/" + goodName}), nil, ErrOffIndex, ""},
		{"a redirect to the private network", with(pyindextest.File{Name: goodName, Data: good, Href: "../../files/" + goodName + "?redirect=http://10.0.0.1/" + goodName}), nil, ErrOffIndex, ""},
		{"the wheel not on the page's project", with(pyindextest.File{Name: pyindextest.WheelName("other", "1.0"), Data: good, Project: "srv"}), nil, ErrFetch, "no version"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ix := &pyindextest.Index{Files: c.files}
			p := pyInstaller(t, ix.Serve(t))
			outside := t.TempDir()
			line := c.line
			if line == nil {
				line = []string{"uvx", "--from", "srv", "srv"}
			}
			s, _, err := ParseLauncher(line)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Install(context.Background(), s)
			if !errors.Is(err, c.want) || !strings.Contains(fmtErr(err), c.text) {
				t.Fatalf("got %v, want %v (%q)", err, c.want, c.text)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("wrote outside the cache: %v", entries)
			}
			if trees, _ := os.ReadDir(filepath.Join(p.Cache, pypiDir, treesDir)); len(trees) != 0 {
				t.Errorf("left a tree behind: %v", trees)
			}
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPyPICachedWheelChecked: a wheel in the cache that is not what its
// name (its hash) says is fetched again, never installed.
func TestPyPICachedWheelChecked(t *testing.T) {
	good := pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": "def run(): pass\n"}, "", okEntry)
	ix := &pyindextest.Index{Files: []pyindextest.File{{Name: pyindextest.WheelName("srv", "1.0"), Data: good}}}
	p := pyInstaller(t, ix.Serve(t))
	s := Spec{Kind: KindPyPI, Name: "srv"}
	if _, err := p.Install(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	wheels, _ := filepath.Glob(filepath.Join(p.Cache, pypiDir, "wheels", "*.whl"))
	trees, _ := filepath.Glob(filepath.Join(p.Cache, pypiDir, treesDir, "*"))
	if len(wheels) != 1 || len(trees) != 1 {
		t.Fatalf("cache: %v %v", wheels, trees)
	}
	evil := pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": "import os; os.system('id')\n"}, "", okEntry)
	if err := os.WriteFile(wheels[0], evil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(trees[0])
	in, err := p.Install(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(in.Dir, "lib", "srv", "main.py")); string(b) != "def run(): pass\n" {
		t.Errorf("installed the planted wheel: %q", b)
	}
	if ix.Requests("/files/"+pyindextest.WheelName("srv", "1.0")) != 2 {
		t.Errorf("the wheel was not fetched again")
	}
}

// TestPyPIResolveCycle: two packages that require each other resolve to
// both, once each.
func TestPyPIResolveCycle(t *testing.T) {
	ix := &pyindextest.Index{Files: []pyindextest.File{
		{Name: pyindextest.WheelName("srv", "1.0"), Data: pyindextest.Wheel("srv", "1.0", map[string]string{"srv/main.py": ""}, "Requires-Dist: dep\n", okEntry)},
		{Name: pyindextest.WheelName("srv", "2.0rc1"), Data: pyindextest.Wheel("srv", "2.0rc1", map[string]string{"srv/main.py": ""}, "", okEntry)},
		{Name: pyindextest.WheelName("dep", "1.0"), Data: pyindextest.Wheel("dep", "1.0", map[string]string{"dep.py": ""}, "Requires-Dist: srv\n", "")},
	}}
	p := pyInstaller(t, ix.Serve(t))
	in, err := p.Install(context.Background(), Spec{Kind: KindPyPI, Name: "srv"})
	if err != nil {
		t.Fatal(err)
	}
	if in.Version != "1.0" {
		t.Errorf("took %s (a pre-release when not pinned?)", in.Version)
	}
	if ix.Requests("/simple/srv/") != 1 || ix.Requests("/simple/dep/") != 1 {
		t.Errorf("pages fetched %d, %d times", ix.Requests("/simple/srv/"), ix.Requests("/simple/dep/"))
	}
	pre, err := p.Install(context.Background(), Spec{Kind: KindPyPI, Name: "srv", Version: "==2.0rc1"})
	if err != nil || pre.Version != "2.0rc1" {
		t.Errorf("pinned pre-release: %+v %v", pre, err)
	}
}
