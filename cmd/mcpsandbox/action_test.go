package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report/reporttest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// TestActionScriptOutsideGitHub runs the GitHub Action's steps as a plain
// script, with the variables GitHub would set, against the lying fixture.
func TestActionScriptOutsideGitHub(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	dir := t.TempDir()
	summary, output, out := filepath.Join(dir, "summary.md"), filepath.Join(dir, "output"), filepath.Join(dir, "out")
	os.WriteFile(summary, []byte("# earlier step\n"), 0o644)
	cmd := exec.Command("bash", "../../ci/action.sh")
	cmd.Env = append(os.Environ(),
		"MCPSANDBOX_COMMAND="+fx.Target+" liar",
		"MCPSANDBOX_ARGS=--no-replay --linger "+sandboxtest.Linger.String()+" --mount "+fx.Source+":"+fx.Target,
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
	liar := outputValue(t, o, "category")
	if !regexp.MustCompile(`^mcpsandbox/server-liar-[0-9a-f]{8}$`).MatchString(liar) {
		t.Errorf("category %q, want mcpsandbox/server-liar-<hash>", liar)
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

	// The SARIF category is one per server: the same command gives the
	// same one, another command another, and the category input wins. A
	// server that is not there fails fast (exit 2) and still gets one.
	category := func(command, input string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "output")
		c := exec.Command("bash", "../../ci/action.sh")
		c.Env = append(os.Environ(), "MCPSANDBOX_COMMAND="+command, "MCPSANDBOX_OUT="+filepath.Join(dir, "out2"),
			"MCPSANDBOX_CATEGORY="+input, "MCPSANDBOX_DEFER_EXIT=1", "GITHUB_OUTPUT="+out)
		if b, err := c.CombinedOutput(); err != nil {
			t.Fatalf("action.sh %q: %v\n%s", command, err, b)
		}
		o, _ := os.ReadFile(out)
		return outputValue(t, o, "category")
	}
	if again := outputValue(t, mustRead(t, output), "category"); again != liar {
		t.Errorf("the same command twice: categories %q and %q", liar, again)
	}
	other := category("/opt/mcpsandbox-absent/server liar", "")
	if other == liar || !strings.HasPrefix(other, "mcpsandbox/server-liar-") {
		t.Errorf("two commands, categories %q and %q: want two, each mcpsandbox/server-liar-<hash>", liar, other)
	}
	t.Logf("categories: %s, %s", liar, other)
	if got := category("/opt/mcpsandbox-absent/server liar", "team/fs-server"); got != "team/fs-server" {
		t.Errorf("category input team/fs-server: got %q", got)
	}
}

// outputValue is the last value of key in a $GITHUB_OUTPUT file.
func outputValue(t *testing.T, out []byte, key string) string {
	t.Helper()
	v, found := "", false
	for _, l := range strings.Split(string(out), "\n") {
		if k, val, ok := strings.Cut(l, "="); ok && k == key {
			v, found = val, true
		}
	}
	if !found {
		t.Errorf("GITHUB_OUTPUT has no %s:\n%s", key, out)
	}
	return v
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
