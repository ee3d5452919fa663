package bulk

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
)

// whenRunning waits, bounded, for this process's one sandbox container
// to run a process whose command holds cmd, then does do to it.
func whenRunning(cli *client.Client, cmd string, do func(ctx context.Context, id string) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		list, err := cli.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
			filters.Arg("label", label.Owner+"="+label.SelfOwner()), filters.Arg("label", label.Kind+"=sandbox"))})
		if err == nil && len(list) == 1 {
			if top, err := cli.ContainerTop(ctx, list[0].ID, nil); err == nil && strings.Contains(fmt.Sprint(top.Processes), cmd) {
				return do(ctx, list[0].ID)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no sandbox of this process ran %q", cmd)
}

// TestBulkLostInstallFails removes a package's install sandbox from
// outside, or kills its init from the host, while its postinstall runs:
// an install problem says the sandbox was lost, the package is failed
// (no result, retried by --retry), its report kept; the install is not
// said to have timed out or exited, and nothing is left.
func TestBulkLostInstallFails(t *testing.T) {
	cli := docker(t)
	for _, tc := range sandboxtest.Losses(cli) {
		t.Run(tc.Name, func(t *testing.T) {
			slow := packDir(t, map[string]string{
				"package.json": `{"name": "mcpsandbox-fixture-stuck", "version": "1.0.0", "bin": "server.js", "scripts": {"postinstall": "sleep 600"}}`,
				"server.js":    "#!/usr/bin/env node\n",
			})
			cache := t.TempDir()
			o := integrationOptions(t, cli, nil, nil)
			o.Installers = map[Kind]Installer{KindNPM: NPM{Cache: cache, Node: "20.0.0", Scripts: sandboxScripts(t, cli, cache)}}
			specs, _ := ParseList("l", strings.NewReader("tgz:"+slow+"\n"))
			done := make(chan error, 1)
			go func() { done <- whenRunning(cli, "sleep 600", tc.Do) }()
			res, err := Run(context.Background(), specs, o)
			if derr := <-done; derr != nil {
				t.Fatal(derr)
			}
			if err != nil || len(res) != 1 {
				t.Fatalf("%v %+v", err, res)
			}
			r := res[0]
			if r.Status != StatusFailed || !r.Status.Failed() || !strings.Contains(r.Why, "the sandbox was lost") || r.Report == "" {
				t.Fatalf("%s (%s), report %q: want failed, saying the sandbox was lost, with its report", r.Status, r.Why, r.Report)
			}
			rep := readReport(t, o, r)
			if rep.Install == nil {
				t.Fatal("the report has no install")
			}
			lost := false
			for _, p := range rep.Install.Problems {
				lost = lost || (p.Kind == "install" && strings.Contains(p.Message, "the sandbox was lost") && strings.Contains(p.Message, tc.Want))
				if p.Kind == "run-timeout" || p.Kind == "sandbox-lost" {
					t.Errorf("a lost install sandbox is no %s: %+v", p.Kind, p)
				}
			}
			if !lost {
				t.Errorf("want an install problem saying the sandbox was lost %q; problems %+v", tc.Want, rep.Install.Problems)
			}
			if rep.Install.TimedOut || rep.Install.ExitCode != nil {
				t.Errorf("install %+v: a lost sandbox neither timed out nor exited", rep.Install)
			}
			noContainersOfThisProcess(t, cli)
		})
	}
}
