package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestDockerLineRefuses: each docker run option that would weaken the
// sandbox is refused, one line each, and the harmless ones are taken.
func TestDockerLineRefuses(t *testing.T) {
	ws := t.TempDir()
	outside := filepath.Join(t.TempDir(), "x.env")
	inside := filepath.Join(ws, "ok.env")
	for _, f := range []string{outside, inside} {
		if err := os.WriteFile(f, []byte("# a comment\nA=1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, opt := range [][]string{{"-v", "/:/host"}, {"--volume=/etc:/etc"}, {"--mount", "type=bind,src=/,dst=/h"}, {"--privileged"},
		{"--cap-add", "SYS_ADMIN"}, {"--device", "/dev/kmsg"}, {"--network", "host"}, {"--net=host"}, {"--pid", "host"}, {"--ipc", "host"},
		{"--security-opt", "seccomp=unconfined"}, {"-u", "0"}, {"--user=root:root"}, {"--env-file", outside}, {"-p", "80:80"}, {"-d"},
		{"--pull", "always"}, {"-e", "GITHUB_TOKEN"}, {"--weird"}} {
		so := &sandbox.SessionOptions{Workspace: ws, Argv: append(append([]string{"docker", "run", "-i", "--rm"}, opt...), "img", "a")}
		ok, err := dockerLine(so)
		if !ok || err == nil || !strings.Contains(err.Error(), "docker run "+strings.SplitN(opt[0], "=", 2)[0]) {
			t.Errorf("%q: %v %v, want refused naming it", opt, ok, err)
		}
	}
	// Two at once: two lines.
	so := &sandbox.SessionOptions{Argv: []string{"docker", "run", "-v", "/:/h", "--privileged", "img"}}
	if _, err := dockerLine(so); err == nil || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("two refused: %v, want two lines", err)
	}
	so = &sandbox.SessionOptions{Argv: []string{"docker", "run", "-it", "--rm", "--", "img"}}
	if ok, err := dockerLine(so); !ok || err != nil || so.Image != "img" {
		t.Errorf("-it --rm -- img: %v %v %+v", ok, err, so)
	}
	so = &sandbox.SessionOptions{Argv: []string{"docker", "run", "-ie", "K=V", "img"}}
	if ok, err := dockerLine(so); !ok || err != nil || so.Image != "img" || strings.Join(so.Env, " ") != "K=V" {
		t.Errorf("-ie K=V img: %v %v %+v", ok, err, so)
	}
	if _, err := dockerLine(&sandbox.SessionOptions{Argv: []string{"docker", "run", "-itd", "img"}}); err == nil || !strings.Contains(err.Error(), "docker run -d") {
		t.Errorf("-itd: %v, want -d refused", err)
	}
	so = &sandbox.SessionOptions{Workspace: ws, Argv: []string{"podman", "run", "-i", "--rm", "-e", "K=V", "--env-file", inside, "-u", "1000:1000",
		"--entrypoint", "/bin/server", "--name", "x", "img:1", "--stdio"}}
	ok, err := dockerLine(so)
	if !ok || err != nil || so.Image != "img:1" || so.Argv != nil || strings.Join(so.ImageEntrypoint, " ") != "/bin/server" ||
		strings.Join(so.ImageArgs, " ") != "--stdio" || strings.Join(so.Env, " ") != "K=V A=1" || so.User != "1000:1000" {
		t.Errorf("taken: %v %v %+v", ok, err, so)
	}
	if ok, _ := dockerLine(&sandbox.SessionOptions{Argv: []string{"docker", "ps"}}); ok {
		t.Error("docker ps taken for a docker run line")
	}
}

// TestDockerLineScan: the fixture, run by a docker run line of the node
// image (local, never pulled), scans as under --image.
func TestDockerLineScan(t *testing.T) {
	cli := sandboxtest.Docker(t)
	image := sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "r.json")
	code := exitCode(run(context.Background(), []string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t),
		"--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary", "--mount", fx.Source + ":" + fx.Target,
		"--", "docker", "run", "-i", "--rm", "-e", "FIXTURE_MODE=x", image, fx.Target, "honest"}, &stdout, &stderr), &stderr)
	var r report.Report
	if b, err := os.ReadFile(out); code == 2 || err != nil || json.Unmarshal(b, &r) != nil {
		t.Fatalf("exit %d %v:\n%s", code, err, stderr.String())
	}
	if r.Server.Image != image || len(r.Tools) == 0 || !strings.Contains(strings.Join(r.Server.Command, " "), fx.Target+" honest") {
		t.Errorf("image %q, %d tools, command %q", r.Server.Image, len(r.Tools), r.Server.Command)
	}
}
