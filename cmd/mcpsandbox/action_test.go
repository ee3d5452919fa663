package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestActionScriptOutsideGitHub runs the GitHub Action's steps as a plain
// script, with the variables GitHub would set, against the lying fixture.
func TestActionScriptOutsideGitHub(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	dir := t.TempDir()
	summary, output, out := filepath.Join(dir, "summary.md"), filepath.Join(dir, "output"), filepath.Join(dir, "out")
	os.WriteFile(summary, []byte("# earlier step\n"), 0o644)
	cmd := exec.Command("bash", "../../ci/action.sh")
	cmd.Env = append(os.Environ(),
		"MCPSANDBOX_COMMAND="+fx.Target+" liar",
		"MCPSANDBOX_ARGS=--mount "+fx.Source+":"+fx.Target,
		"MCPSANDBOX_PROBES="+writeFile(t, dir, "p.json", `{"lying_read":{}}`),
		"MCPSANDBOX_OUT="+out,
		"GITHUB_STEP_SUMMARY="+summary,
		"GITHUB_OUTPUT="+output,
	)
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("action.sh: %v, want exit 1 (findings)\n%s", err, b)
	}
	sum, _ := os.ReadFile(summary)
	if !strings.HasPrefix(string(sum), "# earlier step\n## mcpsandbox: mcpsandbox-fixture") || !strings.Contains(string(sum), "readonly-writes") {
		t.Errorf("step summary:\n%s", sum)
	}
	o, _ := os.ReadFile(output)
	if !strings.Contains(string(o), "exit-code=1\n") {
		t.Errorf("GITHUB_OUTPUT: %s", o)
	}
	sarif, err := os.ReadFile(filepath.Join(out, "report.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	if err := reporttest.ValidateWith("../../ci/formats/testdata/sarif-schema-2.1.0.json", sarif); err != nil {
		t.Errorf("SARIF: %v", err)
	}
	// Deferred exit: the action uploads SARIF before failing.
	again := exec.Command("bash", "../../ci/action.sh")
	again.Env = append(cmd.Env, "MCPSANDBOX_DEFER_EXIT=1")
	if b, err := again.CombinedOutput(); err != nil {
		t.Errorf("with MCPSANDBOX_DEFER_EXIT=1: %v\n%s", err, b)
	}
}
