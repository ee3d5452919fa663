package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestTransportFlags: the transport flags' mistakes are usage errors
// that name the flag, before anything starts.
func TestTransportFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--transport", "grpc"}, `--transport`},
		{[]string{"--transport", "http"}, "--transport http needs --port PORT or --port auto"},
		{[]string{"--transport", "sse", "--port", "0"}, `--port "0": want 1 to 65535, or auto`},
		{[]string{"--transport", "http", "--port", "x"}, `--port "x"`},
		{[]string{"--port", "3000"}, "--port is for --transport http or sse"},
		{[]string{"--header", "X: y"}, "--port, --path and --header are for --transport http or sse"},
		{[]string{"--transport", "http", "--port", "3000", "--header", "no colon"}, `--header "no colon": want 'Name: value'`},
		{[]string{"--transport", "http", "--port", "8080"}, "port 8080 is the sinkhole's"},
		{[]string{"--transport", "http", "--port", "3000", "--path", "mcp"}, `path "mcp"`},
	} {
		var out, errb bytes.Buffer
		args := append(append([]string{"scan"}, tc.args...), "--", "srv")
		code := exitCode(run(context.Background(), args, &out, &errb), &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("mcpsandbox %q: exit %d, stderr %q; want 2 and %q", args, code, errb.String(), tc.want)
		}
	}
}

// TestSameScenarioSameBytesOverHTTP: over streamable HTTP too, two scans
// of one scenario give byte-identical JSON outside the timing block.
func TestSameScenarioSameBytesOverHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := seedWorkspaceDir(t)
	probes := writeFile(t, dir, "p.json", lyingProbes)
	var outs [][]byte
	for i := 0; i < 2; i++ {
		_, b, _ := scanFixture(t, []string{"--probes", probes, "--workspace", ws, "--transport", "http", "--port", "3000"}, "honest", "liar", "--http=127.0.0.1:3000")
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "timing")
		outs = append(outs, mustJSON(t, m))
	}
	if !bytes.Equal(outs[0], outs[1]) {
		i := 0
		for i < len(outs[0]) && i < len(outs[1]) && outs[0][i] == outs[1][i] {
			i++
		}
		lo := max(0, i-200)
		t.Errorf("two runs differ outside timing at byte %d:\n%s\n---\n%s", i, outs[0][lo:min(len(outs[0]), i+200)], outs[1][lo:min(len(outs[1]), i+200)])
	}
}
