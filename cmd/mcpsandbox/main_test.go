package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

func TestUsageAndExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "no command given"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"version"}, 0, "mcpsandbox"},
		{[]string{"scan", "--help"}, 0, "--call-timeout"},
		{[]string{"images", "build", "--help"}, 0, "--quiet"},
		{[]string{"scan"}, 2, "needs the server command after --, or --image REF"},
		{[]string{"scan", "--format", "xml", "--", "srv"}, 2, `--format "xml"`},
		{[]string{"scan", "--env", "NOEQUALS", "--", "srv"}, 2, "want KEY=VAL"},
		{[]string{"scan", "--mount", "relative", "--", "srv"}, 2, "want HOST:/CONTAINER/PATH"},
		{[]string{"scan", "--user", "root", "--", "srv"}, 2, `--user "root": want UID[:GID]`},
		{[]string{"scan", "--user", "1:", "--", "srv"}, 2, "want UID[:GID]"},
		{[]string{"scan", "--probes", "/no/such/file", "--", "srv"}, 2, "reading probes"},
		{[]string{"scan", "--no-such-flag"}, 2, "unknown flag"},
		{[]string{"scan", "--bait-seed", "9007199254740992", "--", "srv"}, 2, "--bait-seed 9007199254740992: want 0 to 9007199254740991"},
		{[]string{"scan", "--bait-seed", "-1", "--", "srv"}, 2, "--bait-seed"},
		{[]string{"scan", "--client-name", "", "--", "srv"}, 2, "--client-name: want a name"},
		{[]string{"scan", "--min-coverage", "80", "--", "srv"}, 2, "--min-coverage: coverage minimum 80 is not between 0 and 1"}, // a share, not a percentage
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errb)
		code := exitCode(err, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("mcpsandbox %q: exit %d (want %d), output %q lacks %q", tc.args, code, tc.code, out.String()+errb.String(), tc.want)
		}
	}
}

// binary builds mcpsandbox for the tests that run it as a process.
func binary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcpsandbox")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Built with the default CGO_ENABLED: the static_cgo.go file makes it
	// static either way, and it is its own agent.
	return bin
}

func TestScanExitCodesAndReport(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	mount := fx.Source + ":" + fx.Target
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"clean", []string{"--mount", mount, "--", fx.Target, "honest"}, 0},
		{"missing image", []string{"--image", "mcpsandbox/nope:1", "--", "node"}, 2},
		{"missing command", []string{"--", "/no/such/server"}, 2},
		{"crash", []string{"--mount", mount, "--probes", writeFile(t, dir, "p.json", `{"crash":{}}`), "--", fx.Target, "crash"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			var stdout, stderr bytes.Buffer
			args := append([]string{"scan", "--format", "json", "--out", out, "--agent", sandboxtest.Agent(t), "--linger", sandboxtest.Linger.String(), "--no-replay"}, tc.args...)
			code := exitCode(run(context.Background(), args, &stdout, &stderr), &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if code == 2 && (strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), "mcpsandbox: ")) {
				t.Errorf("want one line naming the cause, got %q", stderr.String())
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("no report written: %v", err)
			}
			var r report.Report
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatalf("report does not decode: %v", err)
			}
			if r.SchemaVersion != report.SchemaVersion || (code == 2) == r.Complete {
				t.Errorf("schema %q complete %v", r.SchemaVersion, r.Complete)
			}
			if code == 2 && len(r.Problems) == 0 {
				t.Errorf("partial report names no problem")
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSIGINTMidCallLeavesNothing interrupts a real runner process while a
// tool hangs: the runner must write its partial report, exit 2 and remove
// its container.
func TestSIGINTMidCallLeavesNothing(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	fx := sandboxtest.Fixture(t)
	bin := binary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "report.json")
	cmd := exec.Command(bin, "scan", "-v", "--format", "json", "--out", out, "--call-timeout", "5m",
		"--mount", fx.Source+":"+fx.Target, "--probes", writeFile(t, dir, "p.json", `{"hang":{}}`), "--", fx.Target, "hang")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "call 1: hang") {
			break
		}
	}
	time.Sleep(300 * time.Millisecond) // let the request reach the server
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v, want code 2; stderr:\n%s", err, strings.Join(lines, "\n"))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no partial report: %v", err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Complete || len(r.Calls) != 1 || r.Calls[0].ErrorKind != "interrupted" {
		t.Errorf("report: complete %v calls %+v", r.Complete, r.Calls)
	}
	host, _ := os.Hostname()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", label.ManagedFilter))})
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("%s:%d:", host, cmd.Process.Pid)
	for _, c := range list {
		if strings.HasPrefix(c.Labels[label.Owner], prefix) {
			t.Errorf("container %.12s of the interrupted runner is still there", c.ID)
		}
	}
}
