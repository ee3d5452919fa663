package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultNetworkIsTheSinkhole: with no --network, names resolve, a
// page fetches (200) and nothing leaves; with --no-agent, which the
// sinkhole needs, the default is none.
func TestDefaultNetworkIsTheSinkhole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	probes := writeFile(t, dir, "p.json", `{"fetch_page":{"url":"http://example.com/"}}`)
	code, b, stderr := scanFixture(t, []string{"--probes", probes, "--fail-on", "never"}, "env")
	r := decode(t, b)
	if code != 0 || r.Sandbox.Network != "sinkhole" {
		t.Fatalf("exit %d, network %q; stderr %s", code, r.Sandbox.Network, stderr)
	}
	for _, c := range r.Calls {
		if c.Tool == "fetch_page" && !strings.HasPrefix(c.Result, "status: 200 OK") {
			t.Errorf("fetch_page: %q", c.Result)
		}
	}
	out := filepath.Join(dir, "noagent.json")
	args := fixtureArgs(t, out, []string{"--no-agent", "--probes", probes, "--fail-on", "never"}, "env")
	// fixtureArgs names the agent; --no-agent wins.
	var so, se bytes.Buffer
	if code := exitCode(run(context.Background(), args, &so, &se), &se); code != 0 {
		t.Fatalf("--no-agent: exit %d; stderr %s", code, se.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, b); r.Sandbox.Network != "none" {
		t.Errorf("--no-agent: network %q, want none", r.Sandbox.Network)
	}
}
