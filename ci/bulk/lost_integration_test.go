package bulk

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
)

// TestBulkLostPackageFails removes a package's scan container from
// outside while its call hangs: the package is failed (no result), its
// report kept and incomplete, with a sandbox-lost problem; nothing is left.
func TestBulkLostPackageFails(t *testing.T) {
	cli := docker(t)
	reg := packFixtures(t, "echo-mcp")
	specs, bad := ParseList("list.txt", strings.NewReader("npm:echo-mcp -- hang\n"))
	if len(bad) != 0 {
		t.Fatal(bad)
	}
	var once sync.Once
	// The removal from outside is waited for before looking for leftovers:
	// the runner, its sandbox lost, may end while the engine still removes
	// the container for the test (state "removing"), which is the test's
	// removal and not a leftover of the runner.
	var removing sync.WaitGroup
	log := &syncBuffer{}
	log.onLine = func(l string) {
		if !strings.HasPrefix(l, "call 1: ") {
			return
		}
		once.Do(func() {
			// Not on the writer's goroutine: the scan goes on meanwhile.
			removing.Add(1)
			go func() {
				defer removing.Done()
				list, err := cli.ContainerList(context.Background(), container.ListOptions{Filters: filters.NewArgs(
					filters.Arg("label", label.Owner+"="+label.SelfOwner()), filters.Arg("label", label.Kind+"=sandbox"))})
				if err != nil || len(list) != 1 {
					t.Errorf("want the scan's one sandbox, got %d (%v)", len(list), err)
					return
				}
				if err := cli.ContainerRemove(context.Background(), list[0].ID, container.RemoveOptions{Force: true}); err != nil {
					t.Error(err)
				}
			}()
		})
	}
	o := integrationOptions(t, cli, reg, log)
	res, err := Run(context.Background(), specs, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Status != StatusFailed || res[0].Complete || res[0].Report == "" || !strings.Contains(res[0].Why, "the sandbox was lost") {
		t.Fatalf("results %+v: want one failed, incomplete, with its report, saying the sandbox was lost", res)
	}
	rep := readReport(t, o, res[0])
	lost := false
	for _, p := range rep.Problems {
		lost = lost || p.Kind == report.ProblemSandboxLost
	}
	if !lost || len(rep.Tools) != 1 {
		t.Errorf("report: tools %d, problems %+v: want the tool kept and a sandbox-lost problem", len(rep.Tools), rep.Problems)
	}
	removing.Wait()
	noContainersOfThisProcess(t, cli)
}
