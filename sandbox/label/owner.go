package label

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SelfOwner returns the Owner label value for this process.
func SelfOwner() string { return OwnerOf(os.Getpid()) }

// OwnerOf returns the Owner label value for process pid of this host:
// "host:pid:start:pidns", its start time telling a reused pid from it, and
// its pid namespace telling whose pids these are (two jobs in containers
// that share the host's name and engine have pids of their own). Without
// /proc it is "host:pid:" (OwnerAlive then always answers true).
func OwnerOf(pid int) string {
	host, _ := os.Hostname()
	owner := fmt.Sprintf("%s:%d:%s", host, pid, procStart(pid))
	if ns := pidNS(pid); ns != "" {
		owner += ":" + ns
	}
	return owner
}

// OwnerAlive reports whether the process named by an Owner label value still
// runs. It answers true when it cannot tell (another host, another pid
// namespace, unreadable /proc, a value it cannot read), so that reaping
// never removes a container whose owner may be alive.
func OwnerAlive(owner string) bool {
	o, ok := ParseOwner(owner)
	if !ok || o.Elsewhere() || o.Start == "" {
		return true // not ours to look up, or made where /proc could not be read
	}
	if procStart(os.Getpid()) == "" {
		return true // no /proc here: cannot tell
	}
	start := procStart(o.PID)
	if start == "" {
		return false // no such process
	}
	return start == o.Start
}

// OwnerInfo is an Owner label value read.
type OwnerInfo struct {
	Host  string
	PID   int
	Start string
	// PIDNS is the owner's pid namespace ("": a label made before it was
	// recorded, taken as this process's).
	PIDNS string
}

// ParseOwner reads an Owner label value; ok is false when it is not one.
func ParseOwner(owner string) (o OwnerInfo, ok bool) {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 && len(parts) != 4 {
		return o, false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return o, false
	}
	o = OwnerInfo{Host: parts[0], PID: pid, Start: parts[2]}
	if len(parts) == 4 {
		o.PIDNS = parts[3]
	}
	return o, true
}

// Elsewhere says whether the owner's pid is not one this process can look
// up: another host's, or another pid namespace's.
func (o OwnerInfo) Elsewhere() bool {
	host, _ := os.Hostname()
	if o.Host != host {
		return true
	}
	return o.PIDNS != "" && o.PIDNS != pidNS(os.Getpid())
}

// String names the owner for a person: "pid 1234 on this host", "pid 1234
// on host ci-2", "pid 1234 in another pid namespace".
func (o OwnerInfo) String() string {
	host, _ := os.Hostname()
	switch {
	case o.Host != host:
		return fmt.Sprintf("pid %d on host %s", o.PID, o.Host)
	case o.Elsewhere():
		return fmt.Sprintf("pid %d in another pid namespace of this host", o.PID)
	}
	return fmt.Sprintf("pid %d on this host", o.PID)
}

// pidNS returns the inode number of pid's pid namespace
// (/proc/pid/ns/pid links to "pid:[4026531836]"), "" when unreadable.
func pidNS(pid int) string {
	link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return ""
	}
	ino, ok := strings.CutPrefix(link, "pid:[")
	if !ok {
		return ""
	}
	return strings.TrimSuffix(ino, "]")
}

// procStart returns the start time of pid in clock ticks since boot (field 22
// of /proc/pid/stat), which tells a reused pid from the original process.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
