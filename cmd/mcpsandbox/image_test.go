package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestScanImageOwnCommand: `scan --image REF` with no command scans the
// server the image runs (an image FROM scratch with an entrypoint and a
// command): the lies are found (exit 1) and the report names the
// command. An image the engine does not have is exit 2, saying so. (No
// command and no --image is a usage error: TestUsageAndExitCodes, which
// needs no engine.)
func TestScanImageOwnCommand(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	img := sandboxtest.ImageWith(t, cli, []string{`ENTRYPOINT ["` + sandboxtest.FixtureMount + `", "liar"]`, `CMD ["echo"]`},
		sandboxtest.ImageFile{Path: strings.TrimPrefix(sandboxtest.FixtureMount, "/"), Mode: 0o755, Source: sandboxtest.Fixture(t).Source})
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr bytes.Buffer
	args := []string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t), "--linger", sandboxtest.Linger.String(), "--no-replay", "--image", img}
	if code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr); code != 1 {
		t.Fatalf("exit %d, stderr %q; want 1 (findings)", code, stderr.String())
	}
	r := readReport(t, out)
	if want := []string{sandboxtest.FixtureMount, "liar", "echo"}; !slices.Equal(r.Server.Command, want) || !r.Complete {
		t.Errorf("server.command %q (complete %v), want %q", r.Server.Command, r.Complete, want)
	}
	if !slices.ContainsFunc(r.Findings, func(f report.Finding) bool { return f.Rule == "readonly-writes" && f.Tool == "lying_read" }) {
		t.Errorf("findings %+v lack readonly-writes on lying_read", r.Findings)
	}

	stderr.Reset()
	absent := "mcpsandbox-test/absent:" + label.NewRunID()
	args = []string{"scan", "--format", "json", "--out", filepath.Join(t.TempDir(), "r.json"), "--agent", sandboxtest.Agent(t), "--image", absent}
	if code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr); code != 2 || !strings.Contains(stderr.String(), absent+" is not in the local Docker engine") {
		t.Errorf("absent image: exit %d, stderr %q; want 2, saying it is not in the engine", code, stderr.String())
	}
}
