package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/runs"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// cleanIn runs `mcpsandbox clean` in this process with stdin (never a
// terminal here): stdout, stderr, exit code.
func cleanIn(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := exitCode(cleanCommand(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr), &stderr)
	return stdout.String(), stderr.String(), code
}

// TestCleanLiveWithoutATerminalNeedsYes: --live and --kept remove what
// other processes and users may own; with no terminal to ask on, they
// are refused (exit 2) unless --yes is given, whatever stdin holds,
// before anything is looked at.
func TestCleanLiveWithoutATerminalNeedsYes(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, args := range [][]string{{"--live"}, {"--kept"}, {"--live", "--images"}} {
		_, stderr, code := cleanIn(t, "y\n", args...)
		if code != 2 || !strings.Contains(stderr, "--yes") || !strings.Contains(stderr, "no terminal") {
			t.Errorf("clean %s without a terminal: exit %d %q, want 2 naming --yes", strings.Join(args, " "), code, stderr)
		}
	}
	if _, stderr, code := cleanIn(t, "", "--live", "edit"); code != 2 || !strings.Contains(stderr, "not both") {
		t.Errorf("clean --live NAME: exit %d %q", code, stderr)
	}
}

// scanProcess is a runner process scanning the fixture server.
type scanProcess struct {
	cmd    *exec.Cmd
	out    string // the JSON report
	stderr *bytes.Buffer
	done   chan struct{}
	err    error
}

// startScan starts the runner binary scanning the fixture's tool set
// with the probes given, --out a report in dir; env is added to the
// runner's.
func startScan(t *testing.T, dir, set, probes string, env []string, extra ...string) *scanProcess {
	t.Helper()
	fx := sandboxtest.Fixture(t)
	p := &scanProcess{out: filepath.Join(dir, "report.json"), stderr: &bytes.Buffer{}, done: make(chan struct{})}
	args := append([]string{"scan", "--format", "json", "--out", p.out, "--agent", sandboxtest.Agent(t),
		"--linger", sandboxtest.Linger.String(), "--no-replay", "--no-boundary",
		"--probes", writeFile(t, dir, "probes.json", probes), "--mount", fx.Source + ":" + fx.Target}, extra...)
	p.cmd = exec.Command(sandboxtest.Runner(t), append(args, "--", fx.Target, set)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// check fails the test unless the scan ended 0 or 1 with a complete
// report, its containers never lost under it.
func (p *scanProcess) check(t *testing.T) report.Report {
	t.Helper()
	<-p.done
	code := p.cmd.ProcessState.ExitCode()
	var r report.Report
	b, err := os.ReadFile(p.out)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if code > 1 || err != nil || !r.Complete {
		t.Errorf("scan %d: exit %d, report complete %v (%v)\nstderr:\n%s", p.cmd.Process.Pid, code, r.Complete, err, p.stderr)
	}
	for _, gone := range []string{"No such container", "marked for removal", "removal of container"} {
		if strings.Contains(p.stderr.String(), gone) {
			t.Errorf("scan %d lost a container (%q):\n%s", p.cmd.Process.Pid, gone, p.stderr)
		}
	}
	return r
}

// sandboxOf waits until process p has a running sandbox container and
// returns its id ("" if p ended first).
func sandboxOf(t *testing.T, cli *client.Client, p *scanProcess) string {
	t.Helper()
	host, _ := os.Hostname()
	prefix := fmt.Sprintf("%s:%d:", host, p.cmd.Process.Pid)
	for {
		list, err := cli.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(
			filters.Arg("label", label.ManagedFilter), filters.Arg("label", label.Kind+"=sandbox"), filters.Arg("status", "running"))})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			if strings.HasPrefix(c.Labels[label.Owner], prefix) {
				return c.ID
			}
		}
		select {
		case <-p.done:
			return ""
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestCleanLeavesAnotherProcesssScan: a plain `clean` while another
// process's scan is in a call removes nothing of it and says it left a
// live run's container, naming the process; the scan then completes.
// The call waits for a file that the test puts in the container once
// clean is done, so that the scan is live throughout, whatever the load.
func TestCleanLeavesAnotherProcesssScan(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	p := startScan(t, t.TempDir(), "ws", `{"wait_file":{"path":"/tmp/release","seconds":600}}`, nil, "--call-timeout", "10m")
	id := sandboxOf(t, cli, p)
	if id == "" {
		p.check(t)
		t.Fatal("the scan ended before its sandbox was seen")
	}
	out, stderr, code := cleanIn(t, "")
	if code != 0 {
		t.Fatalf("clean: exit %d %s %s", code, out, stderr)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "of live runs: ") {
			line = l
		}
	}
	want := fmt.Sprintf("pid %d on this host (", p.cmd.Process.Pid)
	if !strings.Contains(line, want) || !strings.Contains(line, "'clean --live' removes them") {
		t.Errorf("clean says:\n%s\nwant a line with %q", out, want)
	}
	if in, err := cli.ContainerInspect(context.Background(), id); err != nil || !in.State.Running {
		t.Fatalf("the scan's sandbox after clean: %v", err)
	}
	// Release the call.
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	tw.WriteHeader(&tar.Header{Name: "release", Mode: 0o644, Size: 3})
	tw.Write([]byte("go\n"))
	tw.Close()
	if err := cli.CopyToContainer(context.Background(), id, "/tmp", &tarball, container.CopyToContainerOptions{}); err != nil {
		t.Fatalf("releasing the call: %v", err)
	}
	r := p.check(t)
	if len(r.Calls) == 0 {
		t.Errorf("no calls in the report")
	}
}

// TestScansSideBySideWithCleanAndReaps: two suites' worth of work on one
// engine: runner processes scanning at once (one of them a named run in
// a store of its own, as another user's or another suite's), while this
// process cleans and reaps over and over until they are done. Every scan
// completes with none of its containers lost, and the other store's
// named run is still there, stopped.
func TestScansSideBySideWithCleanAndReaps(t *testing.T) {
	cli := sandboxtest.Docker(t)
	sandboxtest.NodeImage(t, cli)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	const scans = 4
	otherStore := t.TempDir()
	probes := `[{"tool":"add_note","arguments":{"text":"a"}},{"tool":"echo","arguments":{"text":"b"}}]`
	var ps []*scanProcess
	for i := range scans {
		var env, extra []string
		if i == 0 {
			env, extra = []string{"XDG_STATE_HOME=" + otherStore}, []string{"--name", "theirs"}
		}
		ps = append(ps, startScan(t, t.TempDir(), "honest", probes, env, extra...))
	}
	t.Cleanup(func() {
		st := runs.Store{Root: filepath.Join(otherStore, "mcpsandbox")}
		st.Remove(context.Background(), cli, "theirs")
	})
	all := make(chan struct{})
	go func() {
		for _, p := range ps {
			<-p.done
		}
		close(all)
	}()
	// A cleaner and a reaper, each looping until the scans end (paced,
	// so as not to flood the engine with lists).
	var wg sync.WaitGroup
	var cleans atomic.Int64
	loop := func(step func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-all:
					return
				case <-time.After(200 * time.Millisecond):
				}
				step()
			}
		}()
	}
	loop(func() {
		if out, stderr, code := cleanIn(t, ""); code != 0 {
			t.Errorf("clean: exit %d %s %s", code, out, stderr)
		}
		cleans.Add(1)
	})
	loop(func() {
		if _, err := sandbox.ReapAll(context.Background(), cli); err != nil {
			t.Errorf("reap: %v", err)
		}
	})
	<-all
	wg.Wait()
	for _, p := range ps {
		p.check(t)
	}
	if !strings.Contains(ps[0].stderr.String(), "kept run theirs") {
		t.Errorf("the named scan kept no run:\n%s", ps[0].stderr)
	}
	st := runs.Store{Root: filepath.Join(otherStore, "mcpsandbox")}
	m, err := st.Get("theirs")
	if err == nil {
		m, err = st.Refresh(context.Background(), cli, m)
	}
	if err != nil || m.State != runs.Stopped {
		t.Errorf("the other store's named run is %v (%v), want stopped: a clean outside its store removed it", m.State, err)
	}
	t.Logf("%d cleans ran beside the scans", cleans.Load())
}
