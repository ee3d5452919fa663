//go:build linux

package quiet

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTask is a task of a made-up proc tree: its files, by name.
type fakeTask map[string]string

const (
	statS  = "%d (srv) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0"
	idleSC = "0 0x0 0x7ffd 0x10000 0x0 0x0 0x0 0x7ffd 0x7f"
)

// fakeProc writes a proc tree: for each pid, its tasks; every task's fd 0
// is a pipe.
func fakeProc(t *testing.T, procs map[int]map[int]fakeTask) string {
	root := t.TempDir()
	for pid, tasks := range procs {
		dir := filepath.Join(root, itoa(pid))
		write(t, filepath.Join(dir, "timers"), "")
		for tid, files := range tasks {
			tdir := filepath.Join(dir, "task", itoa(tid))
			os.MkdirAll(filepath.Join(tdir, "fd"), 0o755)
			os.Symlink("pipe:[7]", filepath.Join(tdir, "fd", "0"))
			base := fakeTask{"stat": strings.Replace(statS, "%d", itoa(tid), 1), "schedstat": "1 2 3", "syscall": idleSC}
			for name, body := range files {
				base[name] = body
			}
			for name, body := range base {
				write(t, filepath.Join(tdir, name), body)
			}
		}
	}
	return root
}

func write(t *testing.T, path, body string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTreeRules: the agent's own process left out; a leader that ended
// before its threads not a zombie; one alone is; each bound hit said.
func TestTreeRules(t *testing.T) {
	root := fakeProc(t, map[int]map[int]fakeTask{
		1:  {1: {"stat": "1 (docker-init) R 0", "syscall": "running"}},
		10: {10: {"stat": "10 (srv) Z 1"}, 11: {}},
		20: {20: {"stat": "20 (gone) Z 1"}},
		30: {30: {}, 31: {}, 32: {}},
	})
	ws, err := Pending(Options{Root: root, Self: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].PID != 20 || ws[0].Reason != Zombie || ws[0].Comm != "gone" {
		t.Errorf("read:\n%s", show(ws))
	}
	ws, _ = Pending(Options{Root: root, Self: []int{1}, MaxTasks: 3})
	if last := ws[len(ws)-1]; last.Reason != Bound || last.PID != 30 {
		t.Errorf("past MaxTasks:\n%s", show(ws))
	}
	for i := 1; i < 3; i++ {
		os.Symlink("pipe:[8]", filepath.Join(root, "30", "task", "31", "fd", itoa(i)))
	}
	ws, _ = Pending(Options{Root: root, Self: []int{1}, MaxFDs: 2})
	var bound []Wakeup
	for _, w := range ws {
		if w.Reason == Bound {
			bound = append(bound, w)
		}
	}
	if len(bound) != 1 || bound[0].TID != 31 || bound[0].Detail != "more than 2 fds; the rest not read" {
		t.Errorf("past MaxFDs:\n%s", show(ws))
	}
}

// TestTreeSameBytes: the same tree reads as the same wakeups, in the
// same order, whatever order the directories list in.
func TestTreeSameBytes(t *testing.T) {
	procs := map[int]map[int]fakeTask{}
	for pid := 2; pid < 40; pid++ {
		procs[pid] = map[int]fakeTask{pid: {"syscall": "35 0x7ffd 0x0 0x0 0x0 0x0 0x0 0x7ffd 0x7f"}, pid + 1000: {"stat": "1 (w) R 1"}}
	}
	root := fakeProc(t, procs)
	var first []byte
	for range 5 {
		ws, err := Pending(Options{Root: root, Self: []int{1}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ws)
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("two readings differ:\n%s\n%s", first, b)
		}
	}
	if !bytes.Contains(first, []byte(`"reason":"timed-wait","syscall":"nanosleep"`)) {
		t.Errorf("read %s", first)
	}
}

// TestCompare: a task that ran, appeared or ended between the passes,
// and a process that appeared, make the sandbox not quiet.
func TestCompare(t *testing.T) {
	r := &reader{comm: map[int]string{}}
	first := snapshot{5: {5: []byte("a"), 6: []byte("b"), 7: []byte("c")}}
	second := snapshot{5: {5: []byte("a"), 6: []byte("B"), 8: []byte("d")}, 9: {9: []byte("e")}}
	r.compare(first, second)
	got := map[string]bool{}
	for _, w := range r.out {
		got[itoa(w.PID)+"/"+itoa(w.TID)+" "+w.Detail] = true
	}
	for _, want := range []string{"5/6 task ran", "5/7 task ended", "5/8 task appeared", "9/0 process appeared", "9/9 task appeared"} {
		if !got[want] {
			t.Errorf("no %q in %v", want, got)
		}
	}
	if len(got) != 5 {
		t.Errorf("read %v", got)
	}
}
