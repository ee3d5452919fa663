package sandbox_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// TestImageOwnCommand: an image FROM scratch that holds only the static
// fixture server (no shell, no C library, no /etc/passwd, no /tmp, no
// /workspace, no home), with an entrypoint, a command and a working
// directory, scanned with no command: the agent is PID 1 and execs the
// image's own argv in the image's working directory, as the sandbox user
// (the image has no USER: root), with the sandbox's directories made
// (/workspace, the home, /tmp), HOME at the home and the bait planted;
// the liar's lies are caught as when the same server is given as a
// command in the node image, but for the one that needs a shell.
func TestImageOwnCommand(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	argv := []string{sandboxtest.FixtureMount, "honest", "liar", "confine"}
	img := sandboxtest.ImageWith(t, cli, []string{`ENTRYPOINT ["` + argv[0] + `"]`, `CMD ["honest", "liar", "confine"]`, "WORKDIR /opt/fixture"},
		sandboxtest.ImageFile{Path: strings.TrimPrefix(sandboxtest.FixtureMount, "/"), Mode: 0o755, Source: sandboxtest.Fixture(t).Source})
	seed := uint64(18)
	// The whole sandbox_view, not the report's first 4 KiB of it.
	bounds := sandbox.Bounds{MaxResultText: 1 << 20}
	res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Image: img, Bounds: bounds}, BaitSeed: &seed})
	if err != nil {
		t.Fatalf("scan of %s with no command: %v", img, err)
	}
	rep := res.Report
	if !slices.Equal(rep.Server.Command, argv) || !rep.Complete {
		t.Errorf("server command %q (complete %v), want the image's %q", rep.Server.Command, rep.Complete, argv)
	}
	for _, p := range rep.Problems {
		t.Errorf("problem: %s: %s", p.Kind, p.Message)
	}
	var v struct {
		UID, GID         int
		Cwd              string
		PID1Cmdline      []string
		Status           map[string]string
		Home             string
		WorkspaceEntries []string
		EnvNames         []string
	}
	if err := json.Unmarshal([]byte(resultOf(t, rep, "sandbox_view")), &v); err != nil {
		t.Fatalf("sandbox_view: %v", err)
	}
	if v.UID != images.UID || v.GID != images.GID || v.Cwd != "/opt/fixture" || v.Status["TracerPid"] != "1" ||
		!slices.Equal(v.PID1Cmdline, append([]string{"/sbin/docker-init", "--"}, argv...)) {
		t.Errorf("the server sees uid %d gid %d, cwd %q, TracerPid %s, PID 1 %q; want the sandbox user in /opt/fixture under the agent running %q",
			v.UID, v.GID, v.Cwd, v.Status["TracerPid"], v.PID1Cmdline, argv)
	}
	// No /etc/passwd: the engine's HOME is "/", the agent's the sandbox
	// user's home, where the bait is; the engine's place in the
	// environment is kept (last), and there is one.
	if v.Home != "/home/sandbox" || len(v.EnvNames) == 0 || v.EnvNames[len(v.EnvNames)-1] != "HOME" || slices.Index(v.EnvNames, "HOME") != len(v.EnvNames)-1 {
		t.Errorf("HOME %q, environment %q: want /home/sandbox, once, last", v.Home, v.EnvNames)
	}
	if !slices.ContainsFunc(v.WorkspaceEntries, func(e string) bool { return strings.HasSuffix(e, "/package.json") }) {
		t.Errorf("workspace %q: the canary project is not there", v.WorkspaceEntries)
	}

	stdio := fixtureOpts(t, argv[1:]...)
	stdio.BaitSeed, stdio.Bounds = &seed, bounds
	ref, err := runScan(t, cli, stdio)
	if err != nil {
		t.Fatalf("scan of the fixture as a command: %v", err)
	}
	// run_tests runs /bin/sh, which the image lacks: its call fails, and
	// its lie is not told.
	if c := callsOf(rep, "run_tests"); len(c) != 1 || !c[0].IsError || !strings.Contains(c[0].Result, "/bin/sh") {
		t.Errorf("run_tests calls %+v: want one that fails for want of /bin/sh", c)
	}
	shell := func(f string) bool { return strings.HasSuffix(f, " run_tests") }
	if got, want := lies(rep), slices.DeleteFunc(lies(ref.Report), shell); !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("findings from the image's own command:\n%q\nwant, as from the command in the node image:\n%q", got, want)
	}
}

// lies are the rules and tools of rep's findings, once each, sorted.
func lies(rep *report.Report) []string {
	verdict.Finish(rep, verdict.Config{})
	var out []string
	for _, f := range rep.Findings {
		out = append(out, f.Rule+" "+f.Tool)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestImageNotInTheEngine: an image that is not in the local engine is
// never pulled: the scan stops with an error that says so, which
// errors.Is tells apart, with or without a command, with or without the
// agent.
func TestImageNotInTheEngine(t *testing.T) {
	cli := sandboxtest.Docker(t)
	ref := "mcpsandbox-test/absent:" + label.NewRunID()
	for _, tc := range []struct {
		name  string
		argv  []string
		agent string
	}{{"own command", nil, ""}, {"command", []string{"/server"}, ""}, {"no agent", nil, "none"}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Image: ref, Argv: tc.argv, Agent: tc.agent}, NoSeed: true})
			var ie *sandbox.InfraError
			if !errors.Is(err, sandbox.ErrImageNotFound) || !errors.As(err, &ie) || !strings.Contains(err.Error(), ref+" is not in the local Docker engine") ||
				!strings.Contains(err.Error(), "never pulls") {
				t.Errorf("scan of an absent image: %v; want ErrImageNotFound, saying so", err)
			}
		})
	}
}

// TestImageWithoutCommand: an image with neither entrypoint nor command,
// scanned with no command, is an error that says to give one.
func TestImageWithoutCommand(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img := sandboxtest.FixtureImage(t, cli)
	_, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Image: img}, NoSeed: true})
	if err == nil || !strings.Contains(err.Error(), "no entrypoint and no command") {
		t.Errorf("scan of an image without a command: %v", err)
	}
}
