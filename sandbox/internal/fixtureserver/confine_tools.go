package main

// The confine tools (set "confine") report what a server sees of its
// sandbox, for the tests of how the agent is delivered and what the
// sandbox lets a server do. "fixtureserver view" prints the same view and
// exits, for a container that runs it without MCP (`docker run --init`,
// to compare with).

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

func init() {
	if len(os.Args) == 2 && os.Args[1] == "view" {
		b, err := json.Marshal(look())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s\n", b)
		os.Exit(0)
	}
}

func addConfine(s *mcp.Server, on bool) {
	if !on {
		return
	}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: no()}
	mcp.AddTool(s, &mcp.Tool{Name: "sandbox_view", Description: "Reports what this process sees of its sandbox: ids, PID 1, mounts, hostname, its own status. Read-only.",
		Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			b, err := json.Marshal(look())
			if err != nil {
				return nil, nil, err
			}
			return text("%s", b), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "socket_families", Description: "Creates, and closes at once, a socket of each of several families (never connecting one), and calls io_uring_setup; reports each result. Read-only.",
		Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest, in none) (*mcp.CallToolResult, any, error) {
			return text("%s", tryFamilies()), nil, nil
		})
}

// view is what a process sees of its sandbox.
type view struct {
	PID            int
	UID, GID, EUID int
	Groups         []int
	Hostname       string
	Cwd            string
	EnvNames       []string
	PID1Cmdline    []string
	PID1Comm       string
	// PID1Exe is where /proc/1/exe leads, or why it cannot be read.
	PID1Exe     string
	PID1Threads string
	// Status holds fields of this process's /proc/self/status.
	Status map[string]string
	// Mounts are the mount points and filesystem types, in order.
	Mounts          []string
	MountInfo       string
	ResolvConf      string
	UnprivPortStart string
	// Listeners are the sockets listening (TCP) or bound (UDP) in the
	// network namespace, as "tcp 127.0.0.1:53".
	Listeners []string
	// Home is $HOME (or the user's home); HomeEntries and
	// WorkspaceEntries list what is in it and in /workspace, three levels
	// down, as "d name" or "f name" relative to the root.
	Home                          string
	HomeEntries, WorkspaceEntries []string
	// Limits are the cgroup limits and /proc/self/limits, by file.
	Limits map[string]string
}

func look() view {
	v := view{PID: os.Getpid(), UID: os.Getuid(), GID: os.Getgid(), EUID: os.Geteuid(), Status: map[string]string{}}
	v.Groups, _ = os.Getgroups()
	v.Hostname, _ = os.Hostname()
	v.Cwd, _ = os.Getwd()
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		v.EnvNames = append(v.EnvNames, name)
	}
	if b, err := os.ReadFile("/proc/1/cmdline"); err == nil {
		v.PID1Cmdline = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	}
	v.PID1Comm = strings.TrimSpace(readOr("/proc/1/comm"))
	if exe, err := os.Readlink("/proc/1/exe"); err == nil {
		v.PID1Exe = exe
	} else {
		v.PID1Exe = "error: " + unwrapErrno(err)
	}
	v.PID1Threads = statusField(readOr("/proc/1/status"), "Threads")
	self := readOr("/proc/self/status")
	for _, k := range []string{"TracerPid", "Seccomp", "Seccomp_filters", "NoNewPrivs", "CapEff", "CapBnd", "Cpus_allowed_list"} {
		v.Status[k] = statusField(self, k)
	}
	v.MountInfo = readOr("/proc/self/mountinfo")
	for _, line := range strings.Split(strings.TrimSpace(v.MountInfo), "\n") {
		pre, post, _ := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) > 4 && len(g) > 0 {
			v.Mounts = append(v.Mounts, f[4]+" "+g[0])
		}
	}
	v.ResolvConf = readOr("/etc/resolv.conf")
	v.UnprivPortStart = strings.TrimSpace(readOr("/proc/sys/net/ipv4/ip_unprivileged_port_start"))
	v.Listeners = listeners()
	v.Home = os.Getenv("HOME")
	v.HomeEntries, v.WorkspaceEntries = entries(v.Home), entries("/workspace")
	v.Limits = map[string]string{}
	for _, p := range []string{"/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
		"/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us",
		"/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/cpu.max", "/proc/self/limits"} {
		v.Limits[p] = strings.TrimSpace(readOr(p))
	}
	return v
}

// entries lists what is below root, three levels down.
func entries(root string) []string {
	var out []string
	if root == "" || root == "/" {
		return out
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return nil
		}
		rel := strings.TrimPrefix(p, root+"/")
		kind := "f"
		if d.IsDir() {
			kind = "d"
			if strings.Count(rel, "/") >= 2 {
				return fs.SkipDir
			}
		}
		out = append(out, kind+" "+rel)
		return nil
	})
	return out
}

// listeners reads /proc/net/{tcp,udp}: TCP sockets in LISTEN (0A), UDP
// sockets bound to a port, IPv4 only.
func listeners() []string {
	var out []string
	for _, proto := range []string{"tcp", "udp"} {
		lines := strings.Split(readOr("/proc/net/"+proto), "\n")
		for _, line := range lines[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || (proto == "tcp" && f[3] != "0A") {
				continue
			}
			hexIP, hexPort, ok := strings.Cut(f[1], ":")
			ip, err1 := strconv.ParseUint(hexIP, 16, 32)
			port, err2 := strconv.ParseUint(hexPort, 16, 16)
			if !ok || err1 != nil || err2 != nil || port == 0 {
				continue
			}
			// /proc/net shows the address in host byte order (little endian).
			out = append(out, fmt.Sprintf("%s %d.%d.%d.%d:%d", proto, ip&0xff, ip>>8&0xff, ip>>16&0xff, ip>>24, port))
		}
	}
	return out
}

func readOr(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "error: " + unwrapErrno(err)
	}
	return string(b)
}

func statusField(status, key string) string {
	for _, line := range strings.Split(status, "\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(val)
		}
	}
	return ""
}

func unwrapErrno(err error) string {
	var e syscall.Errno
	if pe, ok := err.(*os.PathError); ok {
		if en, ok := pe.Err.(syscall.Errno); ok {
			e = en
		}
	}
	if le, ok := err.(*os.LinkError); ok {
		if en, ok := le.Err.(syscall.Errno); ok {
			e = en
		}
	}
	if e != 0 {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

// sysIoUringSetup is io_uring_setup's number on linux/amd64.
const sysIoUringSetup = 425

// tryFamilies creates a socket of each family and closes it, and reports
// "NAME=ok" or "NAME=ERRNO", one a line. No socket is ever connected.
func tryFamilies() string {
	families := []struct {
		name              string
		domain, typ, prot uint64
	}{
		{"AF_UNIX", 1, syscall.SOCK_STREAM, 0},
		{"AF_INET", 2, syscall.SOCK_DGRAM, 0},
		{"AF_INET6", 10, syscall.SOCK_DGRAM, 0},
		{"AF_NETLINK", 16, syscall.SOCK_DGRAM, 0},
		{"AF_PACKET", 17, syscall.SOCK_DGRAM, 0},
		{"AF_BLUETOOTH", 31, syscall.SOCK_STREAM, 3},
		{"AF_ALG", 38, syscall.SOCK_SEQPACKET, 0},
		{"AF_VSOCK", 40, syscall.SOCK_STREAM, 0},
		// AF_VSOCK with upper bits set: the kernel reads an int.
		{"0x100000028", 1<<32 | 40, syscall.SOCK_STREAM, 0},
	}
	var lines []string
	for _, f := range families {
		fd, _, e := syscall.RawSyscall(syscall.SYS_SOCKET, uintptr(f.domain), uintptr(f.typ), uintptr(f.prot))
		if e == 0 {
			syscall.Close(int(fd))
		}
		lines = append(lines, f.name+"="+result(e))
	}
	_, _, e := syscall.RawSyscall(sysIoUringSetup, 1, 0, 0)
	lines = append(lines, "io_uring_setup="+result(e))
	return strings.Join(lines, "\n")
}

func result(e syscall.Errno) string {
	if e == 0 {
		return "ok"
	}
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return "errno " + strconv.Itoa(int(e))
}
