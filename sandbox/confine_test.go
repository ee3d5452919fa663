package sandbox_test

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcpsandbox/mcpsandbox/ci/report"
	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// view is what the fixture's sandbox_view tool (and `fixtureserver
// view`) reports.
type view struct {
	PID              int
	UID, GID, EUID   int
	Groups           []int
	Hostname         string
	Cwd              string
	EnvNames         []string
	PID1Cmdline      []string
	PID1Comm         string
	PID1Exe          string
	PID1Threads      string
	Status           map[string]string
	Mounts           []string
	MountInfo        string
	ResolvConf       string
	UnprivPortStart  string
	Listeners        []string
	Home             string
	HomeEntries      []string
	WorkspaceEntries []string
	Limits           map[string]string
}

func decodeView(t *testing.T, js string) view {
	t.Helper()
	var v view
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("the view does not decode: %v\n%s", err, js)
	}
	return v
}

// resultOf returns the result of the first call of tool.
func resultOf(t *testing.T, r *report.Report, tool string) string {
	t.Helper()
	for _, c := range r.Calls {
		if c.Tool == tool {
			if c.ErrorKind != "" || c.IsError {
				t.Fatalf("%s: %s %s", tool, c.ErrorKind, c.Error)
			}
			return c.Result
		}
	}
	t.Fatalf("%s was not called", tool)
	return ""
}

// TestSocketFamiliesInEveryMode: with and without the agent, in every
// network mode, a server creates AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK
// sockets, and every other family fails with EAFNOSUPPORT, AF_VSOCK with
// upper bits set in the domain included; io_uring fails with ENOSYS.
// Sockets are created and closed, never connected.
func TestSocketFamiliesInEveryMode(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	img := sandboxtest.FixtureImage(t, cli)
	want := strings.Join([]string{"AF_UNIX=ok", "AF_INET=ok", "AF_INET6=ok", "AF_NETLINK=ok", "AF_PACKET=EAFNOSUPPORT",
		"AF_BLUETOOTH=EAFNOSUPPORT", "AF_ALG=EAFNOSUPPORT", "AF_VSOCK=EAFNOSUPPORT", "0x100000028=EAFNOSUPPORT", "io_uring_setup=ENOSYS"}, "\n")
	for _, tc := range []struct {
		name    string
		agent   string
		network sandbox.NetworkMode
	}{
		{"no agent, none", "none", sandbox.NetworkNone},
		{"no agent, bridge", "none", sandbox.NetworkBridge},
		{"agent, none", "", sandbox.NetworkNone},
		{"agent, sinkhole", "", sandbox.NetworkSinkhole},
		{"agent, bridge", "", sandbox.NetworkBridge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Image: img, Argv: []string{sandboxtest.FixtureMount, "confine"},
				Agent: tc.agent, Network: tc.network}, NoSeed: true, Probes: steps(t, `{"socket_families": {}}`)})
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			if got := resultOf(t, res.Report, "socket_families"); got != want {
				t.Errorf("socket families:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestServerRunsAsTheSandboxUser: an image without USER (root) runs the
// server as the sandbox user; User "0" runs it as root, and the report
// says so.
func TestServerRunsAsTheSandboxUser(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	img := sandboxtest.FixtureImage(t, cli)
	for _, tc := range []struct {
		user, reported string
		uid            int
	}{{"", images.User(), images.UID}, {"0", "0", 0}} {
		res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Image: img, Argv: []string{sandboxtest.FixtureMount, "confine"}, User: tc.user},
			NoSeed: true, Probes: steps(t, `{"sandbox_view": {}}`)})
		if err != nil {
			t.Fatalf("scan as %q: %v", tc.user, err)
		}
		// The result is bounded; the ids come near the start.
		m := regexp.MustCompile(`"UID":(\d+),"GID":(\d+),"EUID":(\d+)`).FindStringSubmatch(resultOf(t, res.Report, "sandbox_view"))
		if m == nil || m[1] != m[3] || m[1] != strconv.Itoa(tc.uid) || res.Report.Sandbox.User != tc.reported {
			t.Errorf("user %q: ids %q, sandbox.user %q; want uid %d, %q", tc.user, m, res.Report.Sandbox.User, tc.uid, tc.reported)
		}
	}
}

// runView runs `fixtureserver view` in image and returns what it printed:
// under the agent through sandbox.Start, or, as the reference, as
// `docker run --init` runs it, with the same user and hardening.
func runView(t *testing.T, cli *client.Client, img string, underAgent bool) view {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	argv := []string{sandboxtest.FixtureMount, "view"}
	if underAgent {
		ref, err := sandbox.AgentImage(ctx, cli, img, sandboxtest.Agent(t), runID)
		if err != nil {
			t.Fatal(err)
		}
		hostPid := 0
		c, err := sandbox.Start(ctx, cli, sandbox.ContainerOptions{Image: ref, Argv: argv, RunID: runID, Agent: true,
			AfterStart: func(_ context.Context, _ string, pid int) error { hostPid = pid; return nil }})
		if c != nil {
			defer c.Close(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if hostPid <= 0 {
			t.Errorf("AfterStart got pid %d", hostPid)
		}
		c.Stdin().Close()
		out, err := io.ReadAll(c.Stdout())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		return decodeView(t, string(out))
	}
	init := true
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: argv, User: images.User(), WorkingDir: "/workspace",
		Labels: label.Set(runID, map[string]string{label.Owner: label.SelfOwner(), label.Kind: "test"})},
		&container.HostConfig{Init: &init, NetworkMode: "none", CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"}}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	waitC, errC := cli.ContainerWait(ctx, created.ID, container.WaitConditionNotRunning)
	select {
	case <-waitC:
	case err := <-errC:
		t.Fatal(err)
	}
	logs, err := cli.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var stdout, stderr strings.Builder
	if _, err := stdcopy.StdCopy(&stdout, &stderr, logs); err != nil {
		t.Fatal(err)
	}
	return decodeView(t, stdout.String())
}

// TestAgentLooksLikeDockerInit compares what a server sees under the agent
// with what it sees under `docker run --init` of the same image, same
// user and hardening: PID 1's command line and name, the mounts (ours
// have no /sbin/docker-init bind mount, and no host path of ours), the
// hostname (the container id's prefix), the environment, the ids and the
// working directory are the same. What differs is listed, and is what
// docs/effects.md lists as the tells that remain.
func TestAgentLooksLikeDockerInit(t *testing.T) {
	cli := sandboxtest.Docker(t)
	img := sandboxtest.FixtureImage(t, cli)
	ours, ref := runView(t, cli, img, true), runView(t, cli, img, false)

	wantCmdline := []string{agent.Path, "--", sandboxtest.FixtureMount, "view"}
	if !slices.Equal(ours.PID1Cmdline, wantCmdline) || !slices.Equal(ref.PID1Cmdline, wantCmdline) {
		t.Errorf("/proc/1/cmdline: ours %q, docker-init's %q, want %q", ours.PID1Cmdline, ref.PID1Cmdline, wantCmdline)
	}
	if ours.PID1Comm != agent.Name || ref.PID1Comm != agent.Name {
		t.Errorf("/proc/1/comm: ours %q, docker-init's %q", ours.PID1Comm, ref.PID1Comm)
	}
	hostname := regexp.MustCompile(`^[0-9a-f]{12}$`)
	for _, v := range []view{ours, ref} {
		if !hostname.MatchString(v.Hostname) || !strings.Contains(v.MountInfo, "/containers/"+v.Hostname) {
			t.Errorf("hostname %q is not the prefix of the container id in mountinfo", v.Hostname)
		}
	}
	// The engine itself opens the low ports (20.10 sets
	// ip_unprivileged_port_start to 0 in every container), so the sysctl
	// the agent's sinks need is no tell.
	if ours.UID != ref.UID || ours.GID != ref.GID || !slices.Equal(ours.Groups, ref.Groups) || ours.Cwd != ref.Cwd ||
		!slices.Equal(ours.EnvNames, ref.EnvNames) || ours.UnprivPortStart != ref.UnprivPortStart {
		t.Errorf("ids, cwd, environment or low ports differ:\nours %d:%d %v %s %v %s\nref  %d:%d %v %s %v %s", ours.UID, ours.GID, ours.Groups, ours.Cwd, ours.EnvNames, ours.UnprivPortStart,
			ref.UID, ref.GID, ref.Groups, ref.Cwd, ref.EnvNames, ref.UnprivPortStart)
	}
	refMounts := slices.DeleteFunc(slices.Clone(ref.Mounts), func(m string) bool { return strings.HasPrefix(m, agent.Path+" ") })
	if len(refMounts) != len(ref.Mounts)-1 || !slices.Equal(ours.Mounts, refMounts) {
		t.Errorf("mounts: ours %q\ndocker-init's %q\nwant docker-init's without its %s bind mount", ours.Mounts, ref.Mounts, agent.Path)
	}
	agentBin := sandboxtest.Agent(t)
	for _, tell := range []string{agentBin, "mcpsandbox", agent.Path} {
		if strings.Contains(ours.MountInfo, tell) {
			t.Errorf("mountinfo names %q:\n%s", tell, ours.MountInfo)
		}
	}

	// The tells that remain (docs/effects.md: "The agent in the container").
	tells := map[string][2]string{
		"TracerPid (the server is traced by PID 1)":    {ours.Status["TracerPid"], ref.Status["TracerPid"]},
		"Seccomp_filters (the agent's filter on top)":  {ours.Status["Seccomp_filters"], ref.Status["Seccomp_filters"]},
		"/proc/1/exe (the agent is not dumpable)":      {ours.PID1Exe, ref.PID1Exe},
		"PID 1's threads (a Go runtime)":               {ours.PID1Threads, ref.PID1Threads},
		"resolv.conf (the agent answers DNS)":          {firstNameserver(ours.ResolvConf), firstNameserver(ref.ResolvConf)},
		"listening sockets (the agent's DNS sink)":     {strings.Join(ours.Listeners, ","), strings.Join(ref.Listeners, ",")},
		"the server's pid (PID 1's threads took some)": {strconv.Itoa(ours.PID), strconv.Itoa(ref.PID)},
	}
	want := map[string][2]string{
		"TracerPid (the server is traced by PID 1)":   {"1", "0"},
		"Seccomp_filters (the agent's filter on top)": {"2", "1"},
		"/proc/1/exe (the agent is not dumpable)":     {"error: EACCES", agent.Path},
		"resolv.conf (the agent answers DNS)":         {"127.0.0.1", firstNameserver(ref.ResolvConf)},
	}
	for _, k := range slices.Sorted(maps.Keys(tells)) {
		v := tells[k]
		t.Logf("%s: ours %q, docker-init's %q", k, v[0], v[1])
		if w, ok := want[k]; ok && v != w {
			t.Errorf("%s: ours %q, docker-init's %q; want %q, %q", k, v[0], v[1], w[0], w[1])
		}
	}
	if ref.PID1Threads != "1" || ours.PID1Threads == "1" {
		t.Errorf("PID 1's threads: ours %s, docker-init's %s", ours.PID1Threads, ref.PID1Threads)
	}
	if len(ref.Listeners) != 0 {
		t.Errorf("docker-init's container listens on %q", ref.Listeners)
	}
	pinnedToOneOf(t, ours.Status["Cpus_allowed_list"], ref.Status["Cpus_allowed_list"])
	// Everything else the view holds is the same.
	for k := range ours.Status {
		if k != "TracerPid" && k != "Seccomp_filters" && k != "Cpus_allowed_list" && ours.Status[k] != ref.Status[k] {
			t.Errorf("status %s: ours %q, docker-init's %q", k, ours.Status[k], ref.Status[k])
		}
	}
}

// pinnedToOneOf checks the tell of the agent's pinning at the default
// --cpus 1 (docs/effects.md: the tells that remain): the server may run where
// docker-init's may, or, while it stops often, on one of those CPUs only.
func pinnedToOneOf(t *testing.T, ours, ref string) {
	t.Helper()
	t.Logf("Cpus_allowed_list (the server pinned to the agent's CPU while it stops often): ours %q, docker-init's %q", ours, ref)
	if ours == ref {
		return
	}
	cpus := func(list string) []int {
		var out []int
		for _, r := range strings.Split(list, ",") {
			lo, hi, ok := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if !ok {
				b, err2 = a, err1
			}
			if err1 != nil || err2 != nil {
				return nil
			}
			for c := a; c <= b; c++ {
				out = append(out, c)
			}
		}
		return out
	}
	o, r := cpus(ours), cpus(ref)
	if len(o) != 1 || !slices.Contains(r, o[0]) {
		t.Errorf("Cpus_allowed_list: ours %q, docker-init's %q: want one CPU of docker-init's", ours, ref)
	}
}

func firstNameserver(resolv string) string {
	for _, line := range strings.Split(resolv, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" {
			return f[1]
		}
	}
	return ""
}

// TestAgentImageKeepsTheImagesSbin: the agent goes where /sbin really is
// (through a merged-/usr link, which stays a link, beside the tools
// already there), as root's 0755 file; a missing /sbin is made; the
// directory keeps the image's mode and time; a second call is the cache.
func TestAgentImageKeepsTheImagesSbin(t *testing.T) {
	cli := sandboxtest.Docker(t)
	ctx := context.Background()
	fx := sandboxtest.Fixture(t)
	bin := sandboxtest.Agent(t)
	server := sandboxtest.ImageFile{Path: strings.TrimPrefix(sandboxtest.FixtureMount, "/"), Mode: 0o755, Source: fx.Source}
	for _, tc := range []struct {
		name    string
		files   []sandboxtest.ImageFile
		realDir string // where the agent lands
		dirMode fs.FileMode
	}{
		{"sbin directory", []sandboxtest.ImageFile{{Path: "sbin", Dir: true, Mode: 0o750}, {Path: "sbin/tool", Mode: 0o755, Content: []byte("x")}, server}, "/sbin", 0o750},
		{"merged usr", []sandboxtest.ImageFile{{Path: "usr", Dir: true, Mode: 0o755}, {Path: "usr/sbin", Dir: true, Mode: 0o711},
			{Path: "usr/sbin/tool", Mode: 0o755, Content: []byte("x")}, {Path: "sbin", Link: "usr/sbin"}, server}, "/usr/sbin", 0o711},
		{"no sbin", []sandboxtest.ImageFile{server}, "/sbin", 0o755},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := sandboxtest.Image(t, cli, tc.files...)
			runID := label.NewRunID()
			sandboxtest.NoLeftovers(t, cli, runID)
			ref, err := sandbox.AgentImage(ctx, cli, img, bin, runID)
			if err != nil {
				t.Fatal(err)
			}
			again, err := sandbox.AgentImage(ctx, cli, img, bin, runID)
			if err != nil || again != ref {
				t.Errorf("second AgentImage: %q, %v; want the cached %q", again, err, ref)
			}
			in, err := cli.ImageInspect(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			base, _ := cli.ImageInspect(ctx, img)
			if in.Config.Labels[label.Kind] != "agent" || in.Config.Labels[label.Managed] != "true" ||
				len(in.RootFS.Layers) != len(base.RootFS.Layers)+1 {
				t.Errorf("labels %v, %d layers on %d", in.Config.Labels, len(in.RootFS.Layers), len(base.RootFS.Layers))
			}
			created, err := cli.ContainerCreate(ctx, &container.Config{Image: ref, Cmd: []string{"x"},
				Labels: label.Set(runID, map[string]string{label.Owner: label.SelfOwner(), label.Kind: "test"})}, nil, nil, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			defer cli.ContainerRemove(ctx, created.ID, container.RemoveOptions{Force: true})
			st, err := cli.ContainerStatPath(ctx, created.ID, agent.Path)
			if err != nil || st.Mode.Perm() != 0o755 || !st.Mode.IsRegular() {
				t.Fatalf("%s: %+v, %v", agent.Path, st, err)
			}
			if tc.realDir != "/sbin" {
				link, err := cli.ContainerStatPath(ctx, created.ID, "/sbin")
				if err != nil || link.Mode&fs.ModeSymlink == 0 || link.LinkTarget != tc.realDir {
					t.Errorf("/sbin: %+v, %v; want still a link to %s", link, err, tc.realDir)
				}
				if _, err := cli.ContainerStatPath(ctx, created.ID, "/sbin/tool"); err != nil {
					t.Errorf("/sbin/tool is gone: %v", err)
				}
			}
			dir, err := cli.ContainerStatPath(ctx, created.ID, tc.realDir)
			if err != nil || dir.Mode.Perm() != tc.dirMode || !dir.Mode.IsDir() {
				t.Errorf("%s: %+v, %v; want a directory, mode %o", tc.realDir, dir, err, tc.dirMode)
			}
			rc, _, err := cli.CopyFromContainer(ctx, created.ID, agent.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			owner := ownerOf(t, rc)
			if owner != "0:0" {
				t.Errorf("%s owned by %s, want root", agent.Path, owner)
			}
			if tc.name == "sbin directory" && !dir.Mtime.Equal(time.Unix(1_700_000_000, 0)) {
				t.Errorf("/sbin mtime %v, want the image's", dir.Mtime)
			}
		})
	}
}

func ownerOf(t *testing.T, r io.Reader) string {
	t.Helper()
	hdr, err := tar.NewReader(r).Next()
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(hdr.Uid) + ":" + strconv.Itoa(hdr.Gid)
}

// TestAgentPinsInTheSandbox: in a container at the default --cpus 1, where
// the agent runs as the server's user, a burst of execs keeps the server
// on one CPU, and it gets the container's CPUs back once it stops execing
// (docs/effects.md: "Processes and network").
func TestAgentPinsInTheSandbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, ref, runID := agentSandbox(ctx, t)
	script := `i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done; ` +
		`grep Cpus_allowed_list /proc/self/status; sleep 0.3; grep Cpus_allowed_list /proc/self/status`
	c, err := sandbox.Start(ctx, cli, sandbox.ContainerOptions{Image: ref, Argv: []string{"/bin/sh", "-c", script}, RunID: runID, Agent: true,
		Limits: sandbox.DefaultLimits()})
	if c != nil {
		defer c.Close(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Stdin().Close()
	out, err := io.ReadAll(c.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var lists []string
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			lists = append(lists, strings.TrimSpace(v))
		}
	}
	if len(lists) != 2 {
		t.Fatalf("stdout %q", out)
	}
	t.Logf("at the end of the burst and after: %q", lists)
	if !strings.ContainsAny(lists[1], ",-") {
		t.Skipf("the container may run on %q only: nothing to pin to", lists[1])
	}
	if strings.ContainsAny(lists[0], ",-") {
		t.Errorf("the server may run on %q at the end of its burst of execs, %q after: want one CPU, then all", lists[0], lists[1])
	}
}

// agentSandbox is what a test of the agent in a container starts from:
// the engine, the node image with the agent added, and a run id whose
// containers are checked gone at the test's end.
func agentSandbox(ctx context.Context, t *testing.T) (*client.Client, string, string) {
	t.Helper()
	cli := sandboxtest.Docker(t)
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	ref, err := sandbox.AgentImage(ctx, cli, sandboxtest.NodeImage(t, cli), sandboxtest.Agent(t), runID)
	if err != nil {
		t.Fatal(err)
	}
	return cli, ref, runID
}
