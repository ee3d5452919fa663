package main

import (
	"bytes"
	"context"
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
