package main

import (
	"strings"
	"testing"
)

// TestDefaultNetworkIsTheSinkhole: with no --network, names resolve, a
// page fetches (200) and nothing leaves. (With --no-agent, which the
// sinkhole needs, the default is none: TestNoAgentNetworkIsNone, which
// needs no engine.)
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
}
