package label

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestOwnerAlive: this process is alive; an exited one is not; a reused
// pid (another start time) is not; another host's, another pid
// namespace's, an unreadable value, and one made without /proc cannot be
// told and count as alive. A label of the older form (no namespace) is
// still read.
func TestOwnerAlive(t *testing.T) {
	self := SelfOwner()
	if !OwnerAlive(self) {
		t.Fatalf("this process %q is not alive", self)
	}
	if strings.Count(self, ":") != 3 {
		t.Errorf("owner %q: want host:pid:start:pidns", self)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	o, _ := ParseOwner(self)
	for _, tc := range []struct {
		owner string
		alive bool
	}{
		{fmt.Sprintf("%s:%d:%s", host, os.Getpid(), o.Start), true}, // the older form
		{fmt.Sprintf("%s:%d:%s:%s", host, dead.Process.Pid, o.Start, o.PIDNS), false},
		{fmt.Sprintf("%s:%d:1:%s", host, os.Getpid(), o.PIDNS), false}, // the pid, reused
		{fmt.Sprintf("%s:%d:1", host, dead.Process.Pid), false},
		{fmt.Sprintf("another-%s:%d:1:%s", host, dead.Process.Pid, o.PIDNS), true},
		{fmt.Sprintf("%s:%d:1:1", host, dead.Process.Pid), true}, // another pid namespace
		{fmt.Sprintf("%s:%d:", host, dead.Process.Pid), true},    // made without /proc
		{"nonsense", true},
		{host + ":x:1", true},
	} {
		if got := OwnerAlive(tc.owner); got != tc.alive {
			t.Errorf("OwnerAlive(%q) = %v, want %v", tc.owner, got, tc.alive)
		}
	}
}

// TestOwnerString names the owner as clean says it.
func TestOwnerString(t *testing.T) {
	host, _ := os.Hostname()
	o, _ := ParseOwner(SelfOwner())
	for owner, want := range map[string]string{
		SelfOwner():                    fmt.Sprintf("pid %d on this host", os.Getpid()),
		"ci-elsewhere:42:7:" + o.PIDNS: "pid 42 on host ci-elsewhere",
		host + ":42:7:1":               "pid 42 in another pid namespace of this host",
	} {
		p, ok := ParseOwner(owner)
		if !ok || p.String() != want {
			t.Errorf("%q: %q %v, want %q", owner, p.String(), ok, want)
		}
	}
}
