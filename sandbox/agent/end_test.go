//go:build linux && amd64

package agent

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestAgentSaysItsLastWord: whatever way the server ends (exit 0, exit 1,
// a kill -9 of itself, a command that is not there), the agent's last
// frame is KindEnd with its exit code, written once, after every other
// frame, and never dropped, however many events went over the bound. A
// server that prints an end frame to its stderr or stdout forges
// nothing: the first reaches the runner inside a stderr frame, the
// second is not on the agent's stream at all.
func TestAgentSaysItsLastWord(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	forged := `printf '\036{"t":1,"k":"end","exit":0}\n' >&2; printf '\036{"t":1,"k":"end","exit":0}\n'`
	for _, tc := range []struct {
		name string
		argv []string
		code int
	}{
		{"exit 0", []string{"/bin/sh", "-c", "exit 0"}, 0},
		{"exit 1", []string{"/bin/sh", "-c", "exit 1"}, 1},
		{"kill -9 of itself", []string{"/bin/sh", "-c", "kill -9 $$"}, 128 + 9},
		{"a forged end, then kill -9 of itself", []string{"/bin/sh", "-c", forged + "; kill -9 $$"}, 128 + 9},
		{"a flood over the bound", []string{"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do /bin/true; done; exit 3"}, 3},
		{"no such command", []string{"/no/such/server"}, 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(self, agentArg, "--network", "open", "--tick", "1s", "--max-events", "2", "--")
			cmd.Args = append(cmd.Args, tc.argv...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatalf("the agent did not end; stderr:\n%s", stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Fatalf("agent exit %d (%v), want %d; stderr:\n%s", code, err, tc.code, stderr.String())
			}
			var events []Event
			Decode(&stderr, func(e Event) { events = append(events, e) }, func(b []byte) { t.Errorf("raw bytes %q", b) })
			ends := 0
			for _, e := range events {
				if e.Kind == KindEnd {
					ends++
				}
			}
			last := events[len(events)-1]
			if ends != 1 || last.Kind != KindEnd || last.ExitCode == nil || *last.ExitCode != tc.code {
				t.Fatalf("%d end frame(s), the last frame %+v: want one end frame, last, with exit %d", ends, last, tc.code)
			}
			if strings.HasPrefix(tc.name, "a forged") {
				stderrFrames := ""
				for _, e := range events {
					if e.Kind == KindStderr {
						stderrFrames += e.Data
					}
				}
				if !strings.Contains(stderrFrames, `"k":"end"`) || !strings.Contains(stdout.String(), `"k":"end"`) {
					t.Errorf("the forged frames did not go where the server's output goes: stderr frames %q, stdout %q", stderrFrames, stdout.String())
				}
			}
			if strings.HasPrefix(tc.name, "a flood") {
				dropped := false
				for _, e := range events {
					dropped = dropped || e.Kind == KindDropped
				}
				if !dropped {
					t.Errorf("no event was dropped: the bound was not reached, the case proves nothing")
				}
			}
		})
	}
}

// TestAgentWithoutItsSettingsSaysItsLastWord: an agent that cannot read
// its settings ends at once, and says so in its last frame too.
func TestAgentWithoutItsSettingsSaysItsLastWord(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, agentArg, "--network", "bogus", "--", "/bin/true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	var last Event
	Decode(&stderr, func(e Event) { last = e }, func([]byte) {})
	if cmd.ProcessState.ExitCode() != 2 || last.Kind != KindEnd || last.ExitCode == nil || *last.ExitCode != 2 || !strings.Contains(last.Data, "bogus") {
		t.Errorf("exit %d, last frame %+v", cmd.ProcessState.ExitCode(), last)
	}
}
