package bulk

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
)

// writeFile writes body at dir/name, making its directories.
func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScriptPackages: the packages with install scripts are those either
// lockfile marks (the hidden one has read the packages: a binding.gyp
// without a script), once each, in path order; a tree with neither
// lockfile is an error, one without the hidden one is not.
func TestScriptPackages(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "package-lock.json", `{"packages": {"": {"name": "root"},
		"node_modules/a": {"version": "1.0.0", "hasInstallScript": true},
		"node_modules/@s/b": {"version": "2.0.0"},
		"node_modules/a/node_modules/c": {"version": "3.0.0"}}}`)
	got, err := scriptPackages(dir)
	if err != nil || !reflect.DeepEqual(got, []string{"a@1.0.0"}) {
		t.Errorf("without the hidden lockfile: %q, %v", got, err)
	}
	writeFile(t, dir, hiddenLockfile, `{"packages": {"node_modules/@s/b": {"version": "2.0.0", "hasInstallScript": true},
		"node_modules/a/node_modules/c": {"name": "c", "version": "3.0.0", "hasInstallScript": true}, "node_modules/a": {"version": "1.0.0"}}}`)
	got, err = scriptPackages(dir)
	if want := []string{"@s/b@2.0.0", "a@1.0.0", "c@3.0.0"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := scriptPackages(t.TempDir()); err == nil {
		t.Error("a tree without a lockfile: no error")
	}
	writeFile(t, dir, hiddenLockfile, `{`)
	if _, err := scriptPackages(dir); err == nil {
		t.Error("a broken lockfile: no error")
	}
}

// tgz packs files (name: body) under package/ into a tarball.
func tgz(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	p := filepath.Join(dir, "pkg.tgz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTarballSpecs: tgz:PATH is an npm spec of a local tarball, its
// path made absolute, with an npm line's options; it is keyed and shown
// as tgz:; its content goes into the cache under its sha512 integrity,
// its name and version come from its package.json.
func TestTarballSpecs(t *testing.T) {
	specs, bad := ParseList("l", strings.NewReader("tgz:rel/x.tgz bin:srv env:MODE=a secret:API_KEY -- --flag\ntgz:\nnpm:./x.tgz\n"))
	if len(specs) != 1 || len(bad) != 2 {
		t.Fatalf("specs %+v, bad %v", specs, bad)
	}
	s := specs[0]
	cwd, _ := os.Getwd()
	if !s.Tarball || s.Kind != KindNPM || s.Name != filepath.Join(cwd, "rel/x.tgz") || s.Bin != "srv" || len(s.Env) != 2 || !reflect.DeepEqual(s.Args, []string{"--flag"}) {
		t.Errorf("spec %+v", s)
	}
	if got := s.String(); got != "tgz:"+s.Name+" -- --flag" {
		t.Errorf("String %q", got)
	}
	reg := s
	reg.Tarball = false
	if s.Key() == reg.Key() {
		t.Error("a tarball and a registry package of the same name share a key")
	}

	dir := t.TempDir()
	p := tgz(t, dir, map[string]string{"package.json": `{"name": "local-pkg", "version": "0.1.0", "dependencies": {"x": "^1"}}`})
	n := NPM{Cache: t.TempDir()}
	r, cached, err := n.resolveTarball(context.Background(), Spec{Kind: KindNPM, Name: p, Tarball: true})
	if err != nil || r.Name != "local-pkg" || r.Version != "0.1.0" || !strings.HasPrefix(r.Dist.Integrity, "sha512-") {
		t.Fatalf("resolved %+v, %v", r, err)
	}
	if h, want, _ := sriHash(r.Dist.Integrity); !strings.Contains(cached, "sha512-") || h == nil || len(want) != 64 {
		t.Errorf("cached at %s", cached)
	}
	// Installing refuses a git dependency before anything runs.
	git := tgz(t, t.TempDir(), map[string]string{"package.json": `{"name": "local-pkg", "version": "0.1.0", "dependencies": {"x": "github:a/b"}}`})
	if _, err := n.Install(context.Background(), Spec{Kind: KindNPM, Name: git, Tarball: true}); !errors.Is(err, ErrFetch) || !errors.Is(err, ErrNonRegistryDependency) || !strings.Contains(err.Error(), "git dependency") {
		t.Errorf("git dependency: %v", err)
	}
	for _, files := range []map[string]string{{"README": "x"}, {"package.json": `{"name": "Bad Name", "version": "1"}`}, {"package.json": `{`}} {
		q := tgz(t, t.TempDir(), files)
		if _, _, err := n.resolveTarball(context.Background(), Spec{Name: q, Tarball: true}); !errors.Is(err, ErrFetch) {
			t.Errorf("%v: %v, want failed-fetch", files, err)
		}
	}
	if _, _, err := n.resolveTarball(context.Background(), Spec{Name: filepath.Join(dir, "none.tgz"), Tarball: true}); !errors.Is(err, ErrFetch) {
		t.Errorf("missing tarball: %v", err)
	}
}

// TestInstallKey: the install's cache key changes with the package, its
// integrity, either image and the spec's plain environment, not with
// a secret's (drawn anew each time).
func TestInstallKey(t *testing.T) {
	base := ScriptTree{Name: "a", Version: "1.0.0", Integrity: "sha512-x", Env: []EnvVar{{Name: "K", Secret: true}}}
	k := installKey(base, "b1", "r1")
	for _, other := range []string{
		installKey(ScriptTree{Name: "a", Version: "1.0.1", Integrity: "sha512-x", Env: base.Env}, "b1", "r1"),
		installKey(ScriptTree{Name: "a", Version: "1.0.0", Integrity: "sha512-y", Env: base.Env}, "b1", "r1"),
		installKey(base, "b2", "r1"),
		installKey(base, "b1", "r2"),
		installKey(ScriptTree{Name: "a", Version: "1.0.0", Integrity: "sha512-x", Env: []EnvVar{{Name: "K", Value: "v"}}}, "b1", "r1"),
	} {
		if other == k {
			t.Error("a change left the key as it was")
		}
	}
	if installKey(base, "b1", "r1") != k || len(k) != 64 {
		t.Errorf("key %q not stable", k)
	}
}

// installRep is an install's report: files in and out of the tree, a
// DNS query.
func installRep() *report.Report {
	rep := report.New()
	rep.Install = &report.Install{Command: InstallCommand, Package: PackageTarget, Scripts: []string{"a@1.0.0"}}
	eff := report.NewEffects()
	c := report.ChangeCreated
	eff.Files = []report.FileChange{{Path: "/package/node_modules/a/build/a.node", Change: c}, {Path: "/tmp/x", Change: c}, {Path: "/home/sandbox/.bashrc", Change: c}}
	eff.Network = []report.NetEvent{{Kind: "dns", Host: "x.example"}}
	rep.Phases = []report.Phase{{Name: "install", Effects: eff}}
	rep.Sandbox.EventsDropped = 2
	return rep
}

// TestMergeInstall: the install's record and phase go first into the
// scan's report; its agent losses count with the scan's; its effects
// outside the tree are the install effects.
func TestMergeInstall(t *testing.T) {
	scan := report.New()
	scan.Phases = []report.Phase{{Name: "startup", Effects: report.NewEffects()}}
	scan.Sandbox.EventsDropped = 1
	MergeInstall(scan, installRep())
	if scan.Install == nil || len(scan.Phases) != 2 || scan.Phases[0].Name != "install" || scan.Phases[1].Name != "startup" || scan.Sandbox.EventsDropped != 3 {
		t.Errorf("merged: install %+v, phases %+v, dropped %d", scan.Install, scan.Phases, scan.Sandbox.EventsDropped)
	}
	if n := InstallEffects(scan); n != 3 {
		t.Errorf("install effects %d, want 3 (two files outside the tree, one query)", n)
	}
	if n := InstallEffects(report.New()); n != 0 {
		t.Errorf("no install: %d effects", n)
	}
	MergeInstall(nil, installRep()) // nothing to merge into: no panic
}

// installFailing is an installer whose install failed in the sandbox.
type installFailing struct{}

func (installFailing) Install(context.Context, Spec) (Installed, error) {
	return Installed{Version: "1.0.0", Integrity: "sha512-x"}, &InstallError{Report: installRep(), Err: errors.New("install: the install scripts failed (exit 3): broke")}
}

// TestFailedInstallKeepsItsReport: a failed install is failed-install
// with why; its report (the install's, judged) is written and its
// findings and install effects count in the row and the summary.
func TestFailedInstallKeepsItsReport(t *testing.T) {
	sc := &fakeScanner{}
	o := testOptions(t, sc)
	o.Installers = map[Kind]Installer{KindNPM: installFailing{}}
	res, err := Run(context.Background(), []Spec{{Kind: KindNPM, Name: "broken", Source: "l:1"}}, o)
	if err != nil || len(res) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	r := res[0]
	if r.Status != StatusFailedInstall || !strings.Contains(r.Why, "exit 3") || r.Version != "1.0.0" || r.Installed != "sandbox" || r.InstallEffects != 3 || r.Report == "" {
		t.Errorf("row %+v", r)
	}
	if r.ByRule["install-writes-outside-package"] != 1 || r.ByRule["install-network"] != 1 || r.ByRule["shell-or-credential-files"] != 1 {
		t.Errorf("by rule %v", r.ByRule)
	}
	if len(sc.jobs) != 0 {
		t.Error("a failed install was scanned")
	}
	b, err := os.ReadFile(filepath.Join(o.Results, r.Report))
	var rep report.Report
	if err != nil || json.Unmarshal(b, &rep) != nil || rep.Install == nil || len(rep.Findings) == 0 {
		t.Errorf("report: %v %s", err, b)
	}
	sum := Summarize(res, nil)
	var csv, md bytes.Buffer
	if err := WriteCSV(&csv, sum); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	if !strings.HasSuffix(lines[0], ",installed,install_effects") || !strings.HasSuffix(lines[1], ",sandbox,3") {
		t.Errorf("csv:\n%s", csv.String())
	}
	if err := WriteMarkdown(&md, sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| install effects |") || !strings.Contains(md.String(), "| 3 |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
