//go:build linux && amd64

package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Attacks on the agent by a hostile server: the program identity hashed
// while the program runs (identify, settle, the exe cache) and the
// pinner. The server is sandbox/agent/internal/attackprobe, built here.

var attackProbe struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// buildAttackProbe builds attackprobe once for the tests of this file.
func buildAttackProbe(t *testing.T) string {
	t.Helper()
	attackProbe.once.Do(func() {
		dir, err := os.MkdirTemp("", "agent-attackprobe-")
		if err != nil {
			attackProbe.err = err
			return
		}
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			attackProbe.err = err
			return
		}
		attackProbe.path = filepath.Join(dir, "attackprobe")
		cmd := exec.Command("go", "build", "-o", attackProbe.path, "./sandbox/agent/internal/attackprobe")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		attackProbe.out, attackProbe.err = cmd.CombinedOutput()
	})
	if attackProbe.err != nil {
		t.Skipf("go build attackprobe: %v\n%s", attackProbe.err, attackProbe.out)
	}
	return attackProbe.path
}

// lines parses "key value" lines.
func lines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			m[k] = v
		}
	}
	return m
}

// TestMemfdRewrittenThroughAMappingIsNotTheCachedProgram: a memfd can be
// exec'd while a shared writable mapping of it lives, and a write
// through that mapping changes neither its size nor its times. Run once
// as /bin/true (hashed, its stat cached), rewritten to /bin/false through
// the mapping and run again, it must be reported with the sum of what
// ran the second time, or as exe-changed: never with the first sum.
func TestMemfdRewrittenThroughAMappingIsNotTheCachedProgram(t *testing.T) {
	probe := buildAttackProbe(t)
	truePath, err1 := exec.LookPath("true")
	falsePath, err2 := exec.LookPath("false")
	if err1 != nil || err2 != nil {
		t.Skip("no true or false")
	}
	res := runAgent(t, agentRun{args: []string{"--network", "open", "--", probe, "memfd-swap", truePath, falsePath}})
	out := lines(res.stdout)
	if out["code1"] != "0" || out["code2"] != "1" || out["samestat"] != "true" || out["sum1"] == out["sum2"] {
		t.Fatalf("the probe did not run both programs from one unchanged stat: %q", res.stdout)
	}
	var exes []Event
	for _, e := range res.of(KindExe) {
		if strings.HasPrefix(e.Exe, "/memfd:swap") {
			exes = append(exes, e)
		}
	}
	if len(exes) != 2 {
		t.Fatalf("memfd program events %+v, want 2", exes)
	}
	if exes[0].SHA256 != out["sum1"] {
		t.Errorf("first run: sha256 %s, want %s", exes[0].SHA256, out["sum1"])
	}
	if second := exes[1]; second.SHA256 != out["sum2"] && second.Truncated != ExeChanged {
		t.Errorf("second run (/bin/false, exit 1): sha256 %s truncated %q; want %s (what ran) or exe-changed; the first run's sum is %s",
			second.SHA256, second.Truncated, out["sum2"], out["sum1"])
	}
}
