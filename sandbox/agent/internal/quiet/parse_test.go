package quiet

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSyscallLines reads testdata/syscalls.txt: each syscall line and
// what it reads as.
func TestSyscallLines(t *testing.T) {
	f, err := os.Open("testdata/syscalls.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line, want, ok := strings.Cut(sc.Text(), "|")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		line, want = strings.TrimSpace(line), strings.TrimSpace(want)
		if got := readLine(t, line); got != want {
			t.Errorf("%s\n got %s\nwant %s", line, got, want)
		}
	}
	if n < 50 {
		t.Fatalf("%d cases read", n)
	}
}

// readLine is the verdict of one syscall line, as the table spells it.
func readLine(t *testing.T, line string) string {
	st, nr, args, err := parseSyscall([]byte(line + "\n"))
	if err != nil {
		t.Errorf("%s: %v", line, err)
		return "error"
	}
	switch st {
	case runningState:
		return "running"
	case notInSyscall:
		return "transient"
	}
	v := classify(nr, args)
	switch {
	case v.fd >= 0:
		return "fd " + itoa(v.fd) + " " + v.name
	case v.quiet:
		return "quiet " + v.name
	case v.bounded:
		return string(v.reason) + " " + v.name + " " + v.within.String()
	}
	return string(v.reason) + " " + v.name
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestSyscallLinesMalformed(t *testing.T) {
	for _, line := range []string{"", "running now", "-1", "202 0x1", "x 0 0 0 0 0 0 0 0", "-5 0 0 0 0 0 0 0 0", "0 0xzz 0 0 0 0 0 0 0"} {
		if _, _, _, err := parseSyscall([]byte(line)); err == nil {
			t.Errorf("%q: read without an error", line)
		}
	}
}

// TestStatHostileComm: the comm is the server's; the state is after the
// last ")", whatever the comm holds.
func TestStatHostileComm(t *testing.T) {
	for _, tc := range []struct {
		line, comm string
		state      byte
	}{
		{"12 (node) S 1 12 12 0 -1", "node", 'S'},
		{"12 (a) R (b) S 1 12", "a) R (b", 'S'},
		{"12 (x\n) R 1) D 1 12", "x\n) R 1", 'D'},
		{"12 () Z 1", "", 'Z'},
	} {
		comm, state, err := parseStat([]byte(tc.line))
		if err != nil || string(comm) != tc.comm || state != tc.state {
			t.Errorf("%q: %q %c %v, want %q %c", tc.line, comm, state, err, tc.comm, tc.state)
		}
	}
	for _, line := range []string{"", "12 node S", "12 (node)", "12 (node)S"} {
		if _, _, err := parseStat([]byte(line)); err == nil {
			t.Errorf("%q: read without an error", line)
		}
	}
	if got, want := escape([]byte("\x1b[31mev\\l\n\xff")), `\x1b[31mev\x5cl\x0a\xff`; got != want {
		t.Errorf("escape: %s, want %s", got, want)
	}
}

func TestTimerfdInfo(t *testing.T) {
	armed := "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\nclockid: 1\nticks: 0\nsettime flags: 00\nit_value: (29, 999912345)\nit_interval: (0, 0)\n"
	if d, err := parseTimerfd([]byte(armed)); err != nil || d != 29*time.Second+999912345 {
		t.Errorf("armed: %v %v", d, err)
	}
	off := strings.Replace(armed, "(29, 999912345)", "(0, 0)", 1)
	if d, err := parseTimerfd([]byte(off)); err != nil || d != 0 {
		t.Errorf("disarmed: %v %v", d, err)
	}
	far := strings.Replace(armed, "(29, 999912345)", "(9223372036854775807, 0)", 1)
	if d, err := parseTimerfd([]byte(far)); err != nil || d != maxTimerfdSec*time.Second {
		t.Errorf("far: %v %v", d, err)
	}
	for _, bad := range []string{"pos: 0\n", "it_value: (x, 0)\n", "it_value: (-1, 0)\n"} {
		if _, err := parseTimerfd([]byte(bad)); err == nil {
			t.Errorf("%q: read without an error", bad)
		}
	}
	if n := posixTimers([]byte("ID: 0\nsignal: 14/0000000000000000\nnotify: signal/pid.7\nClockID: 1\nID: 1\nsignal: 14/0\nnotify: thread/tid.8\nClockID: 0\n")); n != 2 {
		t.Errorf("posix timers: %d, want 2", n)
	}
}

func TestDue(t *testing.T) {
	if d, ok := (Wakeups{}).Due(); !ok || d != 0 {
		t.Errorf("none: %v %v", d, ok)
	}
	ws := Wakeups{{Reason: TimedWait, Within: time.Second, Bounded: true}, {Reason: Timerfd, Within: 3 * time.Second, Bounded: true}}
	if d, ok := ws.Due(); !ok || d != 3*time.Second {
		t.Errorf("bounded: %v %v", d, ok)
	}
	if _, ok := append(ws, Wakeup{Reason: TimedWait}).Due(); ok {
		t.Error("one without a bound: due")
	}
}
