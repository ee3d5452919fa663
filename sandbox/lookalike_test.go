package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/mcpsandbox/mcpsandbox/images"
	"github.com/mcpsandbox/mcpsandbox/probes"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
	"github.com/mcpsandbox/mcpsandbox/sandbox/agent"
	"github.com/mcpsandbox/mcpsandbox/sandbox/label"
	"github.com/mcpsandbox/mcpsandbox/sandbox/sandboxtest"
	"github.com/mcpsandbox/mcpsandbox/sandbox/scan"
)

// TestScanLooksLikeDockerRunInit runs a detection script (the fixture's
// sandbox_view) inside a default scan, bait and all, and inside `docker
// run --init` of the same image with the same hardening flags (no
// capabilities, no-new-privileges, the same seccomp profile, no network),
// user, limits, working directory and mount, spoken to over stdio the
// same way. It compares all it sees and allows only the differences
// docs/effects.md lists as the tells that remain.
func TestScanLooksLikeDockerRunInit(t *testing.T) {
	t.Parallel()
	cli := sandboxtest.Docker(t)
	img := sandboxtest.NodeImage(t, cli)
	argv := []string{sandboxtest.FixtureMount, "confine"}
	fx := sandboxtest.Fixture(t)

	res, err := runScan(t, cli, scan.Options{SessionOptions: sandbox.SessionOptions{Image: img, Argv: argv, Mounts: []sandbox.Mount{fx}}, Probes: steps(t, `{"sandbox_view": {}}`)})
	if err != nil {
		t.Fatal(err)
	}
	// The report's result is bounded; the transcript's frames hold all of
	// it. The probe is the first call: its answer is the first that is
	// not to initialize or tools/list.
	var results []json.RawMessage
	frames, _ := res.Transcript.Frames()
	for _, f := range frames {
		var m struct{ Result json.RawMessage }
		if f.Dir == "recv" && json.Unmarshal(f.Message, &m) == nil && bytes.Contains(m.Result, []byte(`PID1Cmdline`)) {
			results = append(results, m.Result)
		}
	}
	if len(results) == 0 || res.Report.Calls[0].Tool != "sandbox_view" {
		t.Fatalf("%d call results; calls %+v", len(results), res.Report.Calls)
	}
	ours := decodeView(t, callText(t, results[0]))
	ref := decodeView(t, dockerRunInit(t, cli, img, argv, fx))
	bait := probes.NewBait(*res.Report.Timing.BaitSeed)

	same := func(what string, a, b any) {
		t.Helper()
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if strings.ReplaceAll(string(ja), "null", "[]") != strings.ReplaceAll(string(jb), "null", "[]") {
			t.Errorf("%s:\nscan          %s\ndocker --init %s", what, ja, jb)
		}
	}
	// The same, exactly.
	same("/proc/1/cmdline", ours.PID1Cmdline, ref.PID1Cmdline)
	same("/proc/1/comm", ours.PID1Comm, ref.PID1Comm)
	same("ids", []any{ours.UID, ours.GID, ours.EUID, ours.Groups}, []any{ref.UID, ref.GID, ref.EUID, ref.Groups})
	same("cwd", ours.Cwd, ref.Cwd)
	same("home", ours.Home, ref.Home)
	same("limits", ours.Limits, ref.Limits)
	same("low ports", ours.UnprivPortStart, ref.UnprivPortStart)
	for _, k := range slices.Sorted(maps.Keys(ref.Status)) {
		if k != "TracerPid" && k != "Seccomp_filters" && k != "Cpus_allowed_list" {
			same("status "+k, ours.Status[k], ref.Status[k])
		}
	}
	pinnedToOneOf(t, ours.Status["Cpus_allowed_list"], ref.Status["Cpus_allowed_list"])
	if !slices.Equal(ours.PID1Cmdline, append([]string{agent.Path, "--"}, argv...)) || ours.PID1Comm != agent.Name {
		t.Errorf("PID 1: %q %q", ours.PID1Cmdline, ours.PID1Comm)
	}
	// The hostname is the container id's prefix, as Docker makes it.
	hostname := regexp.MustCompile(`^[0-9a-f]{12}$`)
	for _, v := range []view{ours, ref} {
		if !hostname.MatchString(v.Hostname) || !strings.Contains(v.MountInfo, "/containers/"+v.Hostname) {
			t.Errorf("hostname %q is not the prefix of the container id in mountinfo", v.Hostname)
		}
	}
	// Docker's bind mount of its init is the only mount ours lacks.
	same("mounts", ours.Mounts, slices.DeleteFunc(slices.Clone(ref.Mounts), func(m string) bool { return strings.HasPrefix(m, agent.Path+" ") }))
	for _, tell := range []string{"mcpsandbox", "canary", sandboxtest.Agent(t)} {
		if strings.Count(ours.MountInfo, tell) > strings.Count(ref.MountInfo, tell) {
			t.Errorf("mountinfo names %q:\n%s", tell, ours.MountInfo)
		}
	}

	// The bait (docs/effects.md: the tells that remain): the honeytokens in the
	// environment, the canary project and .env in the workspace, the
	// credentials in the home directory; nothing else.
	var baitEnv []string
	for _, e := range bait.Env() {
		name, _, _ := strings.Cut(e, "=")
		baitEnv = append(baitEnv, name)
	}
	same("environment, less the honeytokens", slices.DeleteFunc(slices.Clone(ours.EnvNames), func(n string) bool { return slices.Contains(baitEnv, n) }), ref.EnvNames)
	if n := len(ours.EnvNames) - len(ref.EnvNames); n != len(baitEnv) {
		t.Errorf("environment: %d more names in the scan, want %d: %q", n, len(baitEnv), ours.EnvNames)
	}
	planted := map[string]bool{}
	for _, s := range append(bait.Seeds(), bait.BoundarySeed()) { // the boundary probes' marker too
		for p := s.Path; p != "/" && p != "/workspace" && p != ours.Home; p = parentOf(p) {
			planted[p] = true
		}
	}
	notPlanted := func(root string, entries []string) []string {
		return slices.DeleteFunc(slices.Clone(entries), func(e string) bool { return planted[root+"/"+e[2:]] })
	}
	same("workspace, less the canary project and .env", notPlanted("/workspace", ours.WorkspaceEntries), ref.WorkspaceEntries)
	same("home, less the credentials", notPlanted(ours.Home, ours.HomeEntries), ref.HomeEntries)
	if !slices.Contains(ours.WorkspaceEntries, "d "+bait.Project) || !slices.Contains(ours.HomeEntries, "f .aws/credentials") {
		t.Errorf("the bait is not where it was planted: %q %q", ours.WorkspaceEntries, ours.HomeEntries)
	}

	// The agent's own tells (docs/effects.md: "The agent in the container").
	want := map[string][2]string{
		"TracerPid":       {"1", "0"},
		"Seccomp_filters": {"2", "1"},
		"/proc/1/exe":     {"error: EACCES", agent.Path},
		"nameserver":      {"127.0.0.1", firstNameserver(ref.ResolvConf)},
		"listeners":       {"udp 127.0.0.1:53", ""},
	}
	got := map[string][2]string{
		"TracerPid":       {ours.Status["TracerPid"], ref.Status["TracerPid"]},
		"Seccomp_filters": {ours.Status["Seccomp_filters"], ref.Status["Seccomp_filters"]},
		"/proc/1/exe":     {ours.PID1Exe, ref.PID1Exe},
		"nameserver":      {firstNameserver(ours.ResolvConf), firstNameserver(ref.ResolvConf)},
		"listeners":       {strings.Join(ours.Listeners, ","), strings.Join(ref.Listeners, ",")},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: scan %q, docker --init %q; want %q, %q", k, got[k][0], got[k][1], w[0], w[1])
		}
	}
	if ref.PID1Threads != "1" || ours.PID1Threads == "1" || ours.PID <= ref.PID {
		t.Errorf("PID 1's threads: scan %s, docker --init %s; server pid %d, %d", ours.PID1Threads, ref.PID1Threads, ours.PID, ref.PID)
	}
	t.Logf("PID 1's threads %s vs %s; server pid %d vs %d", ours.PID1Threads, ref.PID1Threads, ours.PID, ref.PID)
}

func parentOf(p string) string {
	if i := strings.LastIndex(p, "/"); i > 0 {
		return p[:i]
	}
	return "/"
}

// callText is the text of a tools/call result.
func callText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("a call result without text (%v): %s", err, raw)
	}
	return r.Content[0].Text
}

// dockerRunInit runs argv as `docker run --init -i` would, with the
// sandbox's hardening, user, limits and working directory and fx mounted
// read-only, speaks MCP to it over stdio (initialize, then a call to
// sandbox_view), and returns the call's text.
func dockerRunInit(t *testing.T, cli *client.Client, img string, argv []string, fx sandbox.Mount) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	runID := label.NewRunID()
	sandboxtest.NoLeftovers(t, cli, runID)
	profile, err := sandbox.SeccompProfile(false)
	if err != nil {
		t.Fatal(err)
	}
	lim := sandbox.DefaultLimits()
	init := true
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: argv, User: images.User(), WorkingDir: "/workspace",
		AttachStdin: true, AttachStdout: true, AttachStderr: true, OpenStdin: true, StdinOnce: true,
		Labels: label.Set(runID, map[string]string{label.Owner: label.SelfOwner(), label.Kind: "test"})},
		&container.HostConfig{Init: &init, NetworkMode: "none", CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges", "seccomp=" + profile},
			Resources: container.Resources{PidsLimit: &lim.Pids, Memory: lim.MemoryMB << 20, MemorySwap: lim.MemoryMB << 20, NanoCPUs: int64(lim.CPUs * 1e9)},
			Mounts:    []mount.Mount{{Type: mount.TypeBind, Source: fx.Source, Target: fx.Target, ReadOnly: true}}}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
	att, err := cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, io.Discard, att.Reader)
		pw.CloseWithError(err)
	}()
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	info := sandbox.DefaultClientInfo()
	for _, msg := range []string{
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":%q,"version":%q}}}`, "2025-11-25", info.Name, info.Version),
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_view","arguments":{}}}`,
	} {
		if _, err := io.WriteString(att.Conn, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID == 2 {
			att.CloseWrite()
			return callText(t, m.Result)
		}
	}
	t.Fatalf("no answer to the call: %v", sc.Err())
	return ""
}
