package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
)

// TestCoverageInEveryFormat scans the fixture's coverage set (one tool
// that works, a twin named with terminal control characters, one whose
// calls all fail, one no input can call): every format gives the
// coverage, the text and Markdown say what it means and let no control
// character through, --min-coverage makes it fail the gate, and without a
// minimum the same observations raise nothing. (A --min-coverage that is
// not a share is refused in TestUsageAndExitCodes, with no engine.)
func TestCoverageInEveryFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flags := []string{"--no-seed", "--min-coverage", "0.75"}
	for _, f := range []string{"text", "markdown", "sarif", "junit"} {
		flags = append(flags, "--report", f+"="+filepath.Join(dir, "report."+f))
	}
	code, b, stderr := scanFixture(t, flags, "coverage")
	r := decode(t, b)
	if code != 1 || len(r.Findings) != 1 || r.Findings[0].Rule != "coverage-low" || r.Findings[0].Severity != report.SeverityError ||
		strings.Join(r.Findings[0].Evidence, ",") != "errored cov_fails,not-called cov_never" {
		t.Errorf("--min-coverage 0.75: exit %d, findings %+v; %s", code, r.Findings, stderr)
	}
	status := map[string]string{}
	for _, c := range r.Coverage {
		status[c.Tool] = c.Status.String() + " " + c.Reason
	}
	if !strings.HasPrefix(status["cov_ok"], "exercised") || !strings.HasPrefix(status["cov_ok\x1b[2J\r\a"], "exercised") ||
		!strings.HasPrefix(status["cov_fails"], `errored isError: cov_fails: the backend is not configured\x1b[2J \x07`) ||
		!strings.HasPrefix(status["cov_never"], "not-called ") || r.Summary.Exercised != 2 || r.Summary.Errored != 1 {
		t.Errorf("coverage %q, summary %+v", status, r.Summary)
	}
	controls := regexp.MustCompile("[\x00-\x09\x0b-\x1f\x7f]")
	for f, want := range map[string]string{
		"text":     "coverage exercised 2 of 4 tools (50%): 1 errored, 1 not called",
		"markdown": "**Coverage:** exercised 2 of 4 tools (50%): 1 errored, 1 not called.",
		"sarif":    `"summary": "exercised 2 of 4 tools (50%): 1 errored, 1 not called"`,
		"junit":    `<property name="coverage" value="exercised 2 of 4 tools (50%): 1 errored, 1 not called">`,
	} {
		out, err := os.ReadFile(filepath.Join(dir, "report."+f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("%s lacks %q:\n%s", f, want, out)
		}
		if f == "text" || f == "markdown" {
			if !bytes.Contains(out, []byte("no evidence of anything")) || !bytes.Contains(out, []byte(`cov_ok\x1b[2J\x0d\x07`)) {
				t.Errorf("%s does not say what coverage means, or shows the name unescaped:\n%s", f, out)
			}
			if loc := controls.FindIndex(out); loc != nil {
				t.Errorf("%s: a control character at %d: %q", f, loc[0], out[max(0, loc[0]-20):loc[1]])
			}
		}
	}

	// Without a minimum: the verdict alone, on the same observations (a
	// second scan would only observe them again; Finish reads nothing
	// else).
	verdict.Finish(&r, verdict.Config{})
	if len(r.Findings) != 0 {
		t.Errorf("no minimum: findings %+v, want none", r.Findings)
	}
}
