package agent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
)

// BenchmarkOverhead runs a syscall-heavy workload (1M rounds of stat,
// open, read, close; and 1k execs) bare, under an allow-all seccomp filter
// (the baseline: every container has the engine's), under the agent as the
// runner starts it at the default --cpus 1 (--pin: the server on the
// agent's CPU), under the agent unpinned (--cpus over 1), under Debian's
// strace -f, under a seccomp user-notification supervisor that only sees
// execs (the design the agent did not take), and under ptracefloor, a
// tracer with the agent's stops that does nothing at them (what ptrace
// itself costs), side by side; and the baseline itself held on one CPU
// (taskset), to tell what the pinning changes in the workload from what
// the tracing costs. It runs on the host: the tracer works the same there,
// and container start-up would blur the ratios.
func BenchmarkOverhead(b *testing.B) {
	dir := b.TempDir()
	root := moduleRoot(b)
	build := func(name, pkg string) string {
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, o)
		}
		return out
	}
	agentBin := build(agent.Name, "./cmd/mcpsandbox") // the runner is the agent when named docker-init
	work := build("fixtureserver", "./sandbox/internal/fixtureserver")
	notif := build("usernotif", "./sandbox/agent/internal/usernotif")
	floor := build("ptracefloor", "./sandbox/agent/internal/ptracefloor")
	strace, _ := exec.LookPath("strace")
	taskset, _ := exec.LookPath("taskset")
	truePath, _ := exec.LookPath("true")
	workloads := map[string][]string{
		// A million rounds (about 3 s bare): what the agent costs per
		// syscall it does not stop, not what it costs once to start, which
		// the "start" workload measures apart.
		"stat-open-read-1m": {work, "workload", "stat", "1000000", dir},
		"exec-1k":           {work, "workload", "exec", "1000", truePath},
		"start":             {truePath},
	}
	for _, name := range []string{"start", "stat-open-read-1m", "exec-1k"} {
		argv := workloads[name]
		runners := map[string][]string{
			"bare":           argv,
			"seccomp":        append([]string{work, "under-seccomp"}, argv...),
			"seccomp-1cpu":   append([]string{taskset, "-c", "0", work, "under-seccomp"}, argv...),
			"agent":          append([]string{agentBin, "--network", "open", "--pin", "--"}, argv...),
			"agent-unpinned": append([]string{agentBin, "--network", "open", "--"}, argv...),
			"strace-f":       append([]string{strace, "-f", "-qq", "-o", "/dev/null"}, argv...),
			"usernotif":      append([]string{notif}, argv...),
			"ptrace":         append([]string{floor}, argv...),
		}
		for _, r := range []string{"bare", "seccomp", "seccomp-1cpu", "agent", "agent-unpinned", "strace-f", "usernotif", "ptrace"} {
			cmdline := runners[r]
			// strace -f takes minutes over a million rounds (it stops every
			// syscall): the 100k-round figure is in docs/measurements.md.
			if r == "strace-f" && (strace == "" || name == "stat-open-read-1m") {
				continue
			}
			if r == "seccomp-1cpu" && taskset == "" {
				continue
			}
			b.Run(name+"/"+r, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					cmd := exec.Command(cmdline[0], cmdline[1:]...)
					if out, err := cmd.CombinedOutput(); err != nil && !strings.Contains(string(out), "\"k\"") {
						b.Fatalf("%s: %v\n%s", strings.Join(cmdline, " "), err, out)
					}
				}
			})
		}
	}
}

func moduleRoot(b *testing.B) string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		b.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
