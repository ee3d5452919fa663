package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestOneBinaryScansAScratchImage: `CGO_ENABLED=1 go build ./cmd/mcpsandbox`
// gives a static ELF, with no linker warning, and that binary alone (no
// --agent: it is its own agent) scans a server in an image FROM scratch
// that holds nothing but the static server binary.
func TestOneBinaryScansAScratchImage(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	cc, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath(strings.TrimSpace(string(cc))); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no C compiler (%s) for the CGO_ENABLED=1 build: %v", cc, err)
		}
		t.Skipf("no C compiler (%s): the CGO_ENABLED=1 build cannot be shown", cc)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcpsandbox")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mcpsandbox")
	build.Dir = sandboxtest.ModuleRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("CGO_ENABLED=1 go build: %v\n%s", err, out)
	}
	if len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("CGO_ENABLED=1 go build printed:\n%s", out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the CGO_ENABLED=1 build is dynamically linked")
		}
	}
	f.Close()
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "CGO_ENABLED" && s.Value == "1" }) {
		t.Errorf("build settings %v lack CGO_ENABLED=1", bi.Settings)
	}

	img := sandboxtest.FixtureImage(t, cli)
	reportPath := filepath.Join(dir, "report.json")
	scan := exec.Command(bin, "scan", "--format", "json", "--out", reportPath, "--image", img, "--linger", sandboxtest.Linger.String(), "--no-replay", "--", sandboxtest.FixtureMount, "honest")
	var stderr bytes.Buffer
	scan.Stderr = &stderr
	if err := scan.Run(); err != nil {
		t.Fatalf("mcpsandbox scan --image %s: %v\n%s", img, err, stderr.String())
	}
	r := readReport(t, reportPath)
	if !r.Complete || !r.Sandbox.Agent || len(r.Tools) == 0 || len(r.Calls) == 0 {
		t.Errorf("report: complete %v, agent %v, %d tools, %d calls; problems %+v", r.Complete, r.Sandbox.Agent, len(r.Tools), len(r.Calls), r.Problems)
	}
	var server bool
	for _, ph := range r.Phases {
		for _, p := range ph.Effects.Processes {
			server = server || (len(p.Argv) > 0 && p.Argv[0] == sandboxtest.FixtureMount)
		}
	}
	if !server {
		t.Errorf("the agent did not record the server's own exec: phases %+v", r.Phases)
	}
	for _, p := range r.Problems {
		if p.Kind == "agent" {
			t.Errorf("agent problem: %s", p.Message)
		}
	}
}
