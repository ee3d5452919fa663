// Package pyindextest serves Python packages to tests as a package index
// would: a PEP 503 simple index on the loopback, over a set of files. It
// builds the Python MCP server fixture's wheels (testdata, standard
// library only) with Debian's python3-build, and writes wheels in Go for
// tests that need a hostile one.
package pyindextest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

//go:embed all:testdata
var sources embed.FS

// Python is the interpreter the fixtures are built with: Debian's, which
// has python3-build, python3-wheel and python3-setuptools
// (ci/host-deps.sh installs them).
const Python = "/usr/bin/python3"

// FixtureProjects are the fixture's projects: the server and the
// dependency it imports.
var FixtureProjects = []string{"mcp-fixture-py", "fixture-helper"}

// BuildFixture builds the fixture's wheels and returns them by file name.
// Without python3-build the test is skipped, or fails under CI=true.
func BuildFixture(t testing.TB) map[string][]byte {
	t.Helper()
	if err := exec.Command(Python, "-c", "import build, setuptools, wheel").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s lacks build, setuptools or wheel (Debian's python3-build, python3-setuptools, python3-wheel; ci/host-deps.sh): %v", Python, err)
		}
		t.Skipf("%s lacks build, setuptools or wheel: %v", Python, err)
	}
	src := t.TempDir()
	if err := os.CopyFS(src, must(fs.Sub(sources, "testdata"))); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	wheels := map[string][]byte{}
	for _, p := range FixtureProjects {
		cmd := exec.Command(Python, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, filepath.Join(src, p))
		// The same sources give the same bytes, so the same hash.
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000", "PYTHONDONTWRITEBYTECODE=1")
		cmd.Dir = src
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", p, err, b)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(out, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		wheels[e.Name()] = b
	}
	return wheels
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// File is one file of the index.
type File struct {
	Name string
	Data []byte
	// SHA256 overrides the hash the index gives ("" for the file's own;
	// "-" for none).
	SHA256 string
	// Attrs are extra anchor attributes (data-yanked, data-requires-python).
	Attrs string
	// Project is the project whose page lists it ("" for the wheel
	// name's first part).
	Project string
	// Href is the link the page gives ("" for the index's own
	// /files/NAME); any path with ?redirect=URL answers 302 to URL.
	Href string
}

// Index is a simple index's files; the project of each is read from its
// name (the part before the first -, normalized).
type Index struct {
	Files    []File
	mu       sync.Mutex
	requests map[string]int
}

// Requests is how many requests the index served for path.
func (ix *Index) Requests(path string) int {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.requests[path]
}

// Serve serves the index on the loopback until the test ends and returns
// its URL (…/simple/).
func (ix *Index) Serve(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ix.mu.Lock()
		if ix.requests == nil {
			ix.requests = map[string]int{}
		}
		ix.requests[r.URL.Path]++
		ix.mu.Unlock()
		ix.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/simple/"
}

func (ix *Index) serve(w http.ResponseWriter, r *http.Request) {
	if to, ok := strings.CutPrefix(r.URL.RawQuery, "redirect="); ok {
		http.Redirect(w, r, to, http.StatusFound)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, "/files/"); ok {
		for _, f := range ix.Files {
			if f.Name == name {
				w.Write(f.Data)
				return
			}
		}
		http.NotFound(w, r)
		return
	}
	project, ok := strings.CutPrefix(r.URL.Path, "/simple/")
	project, ok2 := strings.CutSuffix(project, "/")
	if !ok || !ok2 {
		http.NotFound(w, r)
		return
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><body>\n")
	n := 0
	files := append([]File{}, ix.Files...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	for _, f := range files {
		p := f.Project
		if p == "" {
			p = strings.SplitN(f.Name, "-", 2)[0]
		}
		if Normalize(p) != project {
			continue
		}
		sum := f.SHA256
		if sum == "" {
			s := sha256.Sum256(f.Data)
			sum = hex.EncodeToString(s[:])
		}
		href := "../../files/" + f.Name
		if f.Href != "" {
			href = f.Href
		}
		if sum != "-" {
			href += "#sha256=" + sum
		}
		fmt.Fprintf(&b, "<a href=\"%s\" %s>%s</a><br/>\n", html.EscapeString(href), f.Attrs, html.EscapeString(f.Name))
		n++
	}
	if n == 0 {
		http.NotFound(w, r)
		return
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte(b.String()))
}

// Normalize is PEP 503's normalized name.
func Normalize(name string) string {
	name = strings.ToLower(name)
	for _, sep := range []string{"_", "."} {
		name = strings.ReplaceAll(name, sep, "-")
	}
	for strings.Contains(name, "--") {
		name = strings.ReplaceAll(name, "--", "-")
	}
	return name
}

// Wheel writes a wheel in Go: files by path, the dist-info's METADATA,
// WHEEL and RECORD added (RECORD with every file's hash). metadata is
// METADATA's headers after Name and Version; entryPoints, its
// entry_points.txt ("" for none). Tests tamper with the result.
func Wheel(name, version string, files map[string]string, metadata, entryPoints string) []byte {
	dist := strings.ReplaceAll(name, "-", "_") + "-" + version + ".dist-info"
	all := map[string]string{}
	for k, v := range files {
		all[k] = v
	}
	all[dist+"/METADATA"] = "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n" + metadata
	all[dist+"/WHEEL"] = "Wheel-Version: 1.0\nGenerator: pyindextest\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	if entryPoints != "" {
		all[dist+"/entry_points.txt"] = entryPoints
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	var record strings.Builder
	for _, n := range names {
		s := sha256.Sum256([]byte(all[n]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(s[:]), len(all[n]))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", dist)
	all[dist+"/RECORD"] = record.String()
	names = append(names, dist+"/RECORD")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			panic(err)
		}
		w.Write([]byte(all[n]))
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// WheelName is a pure wheel's file name.
func WheelName(name, version string) string {
	return strings.ReplaceAll(name, "-", "_") + "-" + version + "-py3-none-any.whl"
}
