package bulk

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// sandboxScripts runs install scripts with the real engine, the build
// image built from the host's files, into cache.
func sandboxScripts(t *testing.T, cli *client.Client, cache string) *SandboxScripts {
	t.Helper()
	return &SandboxScripts{Engine: cli, RuntimeImage: sandboxtest.NodeImage(t, cli), Cache: cache, Timeout: 2 * time.Minute,
		Base: sandbox.SessionOptions{Agent: sandboxtest.Agent(t), User: images.User(), Limits: sandbox.DefaultLimits(), Changes: sandbox.ChangesAuto,
			Disk: sandbox.DefaultDisk, DiskInterval: sandbox.DefaultDiskInterval},
		BuildImage: func(ctx context.Context) (string, error) {
			b, err := images.Build(ctx, cli, "build", images.BuildOptions{})
			return b.Ref, err
		}}
}

// readReport reads a result's report.
func readReport(t *testing.T, o Options, r Result) *report.Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(o.Results, r.Report))
	if err != nil {
		t.Fatalf("%s: %v", r.Spec, err)
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", r.Spec, err)
	}
	return &rep
}

// TestBulkInstallsInTheSandbox is issue #19's second Done-when: local
// fixture packages packed with npm pack (never published), given as
// tgz:PATH. The postinstall one writes a shell start-up file and a file
// in /tmp, resolves a host name and sends its API key (a honeytoken)
// away as npm installs it: each is a finding of the install phase. The
// native one has a binding.gyp that node-gyp builds in the sandbox,
// offline, with the build image's compiler and node headers; its server
// then starts in the runtime image and its tool answers from the addon.
// A second run reuses both installs from the cache (no script runs) and
// gives the same findings. A failing postinstall is judged and the tree
// as fetched scanned.
func TestBulkInstallsInTheSandbox(t *testing.T) {
	cli := docker(t)
	reg := packFixtures(t, "postinstall", "native")
	server, err := os.ReadFile("testdata/postinstall/server.js")
	if err != nil {
		t.Fatal(err)
	}
	broken := packDir(t, map[string]string{
		"package.json": `{"name": "mcpsandbox-fixture-broken", "version": "1.0.0", "bin": "server.js", "scripts": {"postinstall": "echo the build broke >&2; exit 3"}}`,
		"server.js":    string(server),
	})
	daemon := packDir(t, map[string]string{
		"package.json": `{"name": "mcpsandbox-fixture-daemon", "version": "1.0.0", "bin": "server.js", "scripts": {"postinstall": "(sleep 600 &); echo started"}}`,
		"server.js":    string(server),
	})
	cache := t.TempDir()
	o := integrationOptions(t, cli, nil, nil)
	o.Installers = map[Kind]Installer{KindNPM: NPM{Cache: cache, Node: "20.0.0", Scripts: sandboxScripts(t, cli, cache)}}
	list := "tgz:" + reg.tarballs["mcpsandbox-fixture-postinstall@1.0.0"] + " secret:API_KEY\n" +
		"tgz:" + reg.tarballs["mcpsandbox-fixture-native@1.0.0"] + "\n" +
		"tgz:" + broken + "\n" +
		"tgz:" + daemon + "\n"
	specs, bad := ParseList("list.txt", strings.NewReader(list))
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	res, err := Run(context.Background(), specs, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d results", len(res))
	}
	post, native, fail, bg := res[0], res[1], res[2], res[3]

	// (a) The postinstall's effects are findings of their own.
	if post.Status != StatusFindings || post.Installed != "sandbox" || post.Version != "1.0.0" || !strings.HasPrefix(post.Integrity, "sha512-") {
		t.Errorf("postinstall: %s (%s), installed %q, %s %s", post.Status, post.Why, post.Installed, post.Version, post.Integrity)
	}
	for _, rule := range []string{"install-writes-outside-package", "install-network", "shell-or-credential-files", "secret-exfiltration", "install-scripts"} {
		if post.ByRule[rule] == 0 {
			t.Errorf("postinstall: no %s finding; by rule %v", rule, post.ByRule)
		}
	}
	if post.InstallEffects < 3 || post.Tools != 1 || post.Exercised != 1 {
		t.Errorf("postinstall: install effects %d, tools %d, exercised %d", post.InstallEffects, post.Tools, post.Exercised)
	}
	rep := readReport(t, o, post)
	if rep.Install == nil || !slices.Equal(rep.Install.Scripts, []string{"mcpsandbox-fixture-postinstall@1.0.0"}) || rep.Install.ExitCode == nil || *rep.Install.ExitCode != 0 ||
		rep.Install.Network != "sinkhole" || !strings.HasPrefix(rep.Install.Image, "mcpsandbox/build:") {
		t.Fatalf("postinstall: install %+v", rep.Install)
	}
	if len(rep.Phases) == 0 || rep.Phases[0].Name != "install" {
		t.Fatalf("postinstall: phases %+v: want the install phase first", rep.Phases)
	}
	var evidence []string
	for _, f := range rep.Findings {
		evidence = append(evidence, f.Evidence...)
	}
	all := strings.Join(evidence, "\n")
	for _, want := range []string{"install: created /home/sandbox/.bashrc", "install: created /tmp/mcpsandbox-fixture-postinstall", "install: dns install.fixture-exfil.example", "install: ran node postinstall.js"} {
		if !strings.Contains(all, want) {
			t.Errorf("postinstall: no evidence %q in\n%s", want, all)
		}
	}
	if strings.Contains(all, "/package/") {
		t.Errorf("postinstall: the package tree's own build is evidence:\n%s", all)
	}

	// (b) The native addon builds in the sandbox, and the server starts
	// and answers from it.
	if native.Status != StatusOK || native.Installed != "sandbox" || native.Tools != 1 || native.Exercised != 1 || native.InstallEffects != 0 {
		t.Errorf("native: %s (%s), installed %q, tools %d, exercised %d, install effects %d, by rule %v",
			native.Status, native.Why, native.Installed, native.Tools, native.Exercised, native.InstallEffects, native.ByRule)
	}
	nrep := readReport(t, o, native)
	if len(nrep.Calls) == 0 || !strings.Contains(string(nrep.Calls[0].Result), "hello from C") {
		t.Errorf("native: calls %+v: want the addon's answer", nrep.Calls)
	}
	if got := native.ByRule; len(got) != 1 || got["install-scripts"] != 1 {
		t.Errorf("native: by rule %v, want the build recorded (install-scripts) and nothing else", got)
	}

	// A script that fails (offline, say) costs the install, not the
	// scan: the tree as fetched is scanned, the install's report joined.
	if fail.Status == StatusFailedInstall || fail.Installed != "failed" || fail.Tools != 1 || !strings.Contains(strings.Join(fail.Notes, "; "), "exit 3") || fail.Report == "" {
		t.Errorf("broken: %s (%s), installed %q, tools %d, notes %q, report %q", fail.Status, fail.Why, fail.Installed, fail.Tools, fail.Notes, fail.Report)
	} else if frep := readReport(t, o, fail); frep.Install == nil || frep.Install.ExitCode == nil || *frep.Install.ExitCode != 3 || !strings.Contains(frep.Install.StderrTail, "the build broke") {
		t.Errorf("broken: install %+v", frep.Install)
	}
	// A daemon started at install and left running is a finding; the
	// server still starts.
	if bg.Status != StatusFindings || bg.ByRule["install-background"] != 1 || bg.Tools != 1 {
		t.Errorf("daemon: %s (%s), by rule %v, tools %d", bg.Status, bg.Why, bg.ByRule, bg.Tools)
	}
	noContainersOfThisProcess(t, cli)

	// Again: the installs come from the cache, the findings are the same.
	// The installed images are the engine's cache, which any user's scan
	// evicts from, least recently used first, once it is past its bound:
	// beside other suites, this one's images went between the two runs.
	// They are held meanwhile, as a scan holds what it is about to use;
	// one gone before its hold is installed again, findings the same.
	gone := holdInstalls(t, cli, cache)
	o.Force = true
	again, err := Run(context.Background(), specs, o)
	if err != nil || len(again) != 4 {
		t.Fatalf("again: %v, %d results", err, len(again))
	}
	for _, i := range []int{0, 1, 3} {
		r, want := again[i], "cached"
		if gone[res[i].Name] {
			want = "sandbox"
		}
		if r.Installed != want || r.Status != res[i].Status || !mapsEqual(r.ByRule, res[i].ByRule) || r.InstallEffects != res[i].InstallEffects {
			t.Errorf("again %s: installed %q (want %s), %s, by rule %v, install effects %d; first %s %v %d",
				r.Spec, r.Installed, want, r.Status, r.ByRule, r.InstallEffects, res[i].Status, res[i].ByRule, res[i].InstallEffects)
		}
	}
	releaseHolds(t, cli)
	noContainersOfThisProcess(t, cli)
}

// holdInstalls holds the image of each install recorded in cache with a
// container made from it and never started (eviction leaves an image a
// container uses), labelled as this process's; it returns the specs
// whose image was gone already, by package name (each of these has
// install scripts of its own, so its record names it).
func holdInstalls(t *testing.T, cli *client.Client, cache string) map[string]bool {
	t.Helper()
	recs, err := filepath.Glob(filepath.Join(cache, "installs", "*.json"))
	if err != nil || len(recs) == 0 {
		t.Fatalf("install records: %v %v", recs, err)
	}
	gone := map[string]bool{}
	runID := label.NewRunID()
	for _, p := range recs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var rec installRecord
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatal(err)
		}
		_, err = cli.ContainerCreate(context.Background(), &container.Config{Image: rec.Image, Entrypoint: []string{}, Cmd: []string{"/bin/true"},
			Labels: label.Set(runID, map[string]string{label.Owner: label.SelfOwner(), label.Kind: installHold})}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
		switch {
		case cerrdefs.IsNotFound(err):
			t.Logf("%s: evicted before its hold: installed again", rec.Image)
			for _, s := range rec.Report.Install.Scripts { // NAME@VERSION
				if i := strings.LastIndex(s, "@"); i > 0 {
					gone[s[:i]] = true
				}
			}
		case err != nil:
			t.Fatalf("holding %s: %v", rec.Image, err)
		}
	}
	t.Cleanup(func() { releaseHolds(t, cli) })
	return gone
}

// installHold is the kind label of holdInstalls' containers.
const installHold = "test-install-hold"

// releaseHolds removes holdInstalls' containers (idempotent).
func releaseHolds(t *testing.T, cli *client.Client) {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", label.Kind+"="+installHold), filters.Arg("label", label.Owner+"="+label.SelfOwner()))})
	if err != nil {
		t.Errorf("listing the holds: %v", err)
		return
	}
	for _, c := range list {
		if err := cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("releasing a hold: %v", err)
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// packDir writes files into a fresh directory and packs it with npm
// pack (scripts off), returning the tarball.
func packDir(t *testing.T, files map[string]string) string {
	t.Helper()
	src, out := t.TempDir(), t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "pack", "--json", "--ignore-scripts", "--pack-destination", out, src)
	cmd.Dir = out
	b, err := cmd.Output()
	var packed []struct{ Filename string }
	if err != nil || json.Unmarshal(b, &packed) != nil || len(packed) != 1 {
		t.Fatalf("npm pack: %v %s", err, b)
	}
	return filepath.Join(out, packed[0].Filename)
}

// TestBulkInstallBound: an install past its bound is killed, said, and
// failed-install, with its report (timedOut); no container is left.
func TestBulkInstallBound(t *testing.T) {
	cli := docker(t)
	slow := packDir(t, map[string]string{
		"package.json": `{"name": "mcpsandbox-fixture-slow", "version": "1.0.0", "bin": "server.js", "scripts": {"postinstall": "sleep 600"}}`,
		"server.js":    "#!/usr/bin/env node\n",
	})
	cache := t.TempDir()
	scripts := sandboxScripts(t, cli, cache)
	scripts.Timeout = 3 * time.Second
	o := integrationOptions(t, cli, nil, nil)
	o.Installers = map[Kind]Installer{KindNPM: NPM{Cache: cache, Node: "20.0.0", Scripts: scripts}}
	specs, _ := ParseList("l", strings.NewReader("tgz:"+slow+"\n"))
	res, err := Run(context.Background(), specs, o)
	if err != nil || len(res) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	r := res[0]
	if r.Status != StatusFailedInstall || !strings.Contains(r.Why, "did not end within 3s") || r.Report == "" {
		t.Fatalf("slow: %s (%s), report %q", r.Status, r.Why, r.Report)
	}
	if rep := readReport(t, o, r); rep.Install == nil || !rep.Install.TimedOut || rep.Install.ExitCode != nil {
		t.Errorf("slow: install %+v", rep.Install)
	}
	noContainersOfThisProcess(t, cli)
}

// TestBulkInstallOOM: an install sandbox the kernel kills for memory
// (exit 137, no output of its own) is failed-install with an install
// problem that says so; what it did until the kill is not judged as the
// package's install.
func TestBulkInstallOOM(t *testing.T) {
	cli := docker(t)
	server, err := os.ReadFile("testdata/postinstall/server.js")
	if err != nil {
		t.Fatal(err)
	}
	hog := packDir(t, map[string]string{
		"package.json": `{"name": "mcpsandbox-fixture-hog", "version": "1.0.0", "bin": "server.js", "scripts": {"postinstall": "node -e \"const a=[];for(;;)a.push(Buffer.alloc(16<<20,1))\""}}`,
		"server.js":    string(server),
	})
	cache := t.TempDir()
	scripts := sandboxScripts(t, cli, cache)
	scripts.Base.Limits.MemoryMB = 128
	o := integrationOptions(t, cli, nil, nil)
	o.Installers = map[Kind]Installer{KindNPM: NPM{Cache: cache, Node: "20.0.0", Scripts: scripts}}
	specs, bad := ParseList("list.txt", strings.NewReader("tgz:"+hog+"\n"))
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	res, err := Run(context.Background(), specs, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Status != StatusFailedInstall || !strings.Contains(res[0].Why, "killed for memory") || res[0].Findings != 0 {
		t.Fatalf("%+v", res)
	}
	rep := readReport(t, o, res[0])
	if rep.Install == nil || rep.Install.ExitCode != nil || !slices.ContainsFunc(rep.Install.Problems, func(p report.Problem) bool { return strings.Contains(p.Message, "not judged") }) {
		t.Errorf("install %+v", rep.Install)
	}
}
