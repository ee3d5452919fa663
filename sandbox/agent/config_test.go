package agent

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestConfigLeavesTheRestOfStdin: the config frame is read without taking
// a byte of the MCP stream behind it.
func TestConfigLeavesTheRestOfStdin(t *testing.T) {
	var b bytes.Buffer
	want := Config{Network: ModeSinkhole, MaxEvents: 7, Tick: 10 * time.Millisecond, Dir: "/workspace", Home: "/home/sandbox"}
	if err := WriteConfig(&b, want); err != nil {
		t.Fatal(err)
	}
	b.WriteString(`{"jsonrpc":"2.0"}` + "\n")
	got, err := ReadConfig(&b)
	if err != nil || got != want {
		t.Fatalf("ReadConfig = %+v, %v; want %+v", got, err, want)
	}
	if rest, _ := io.ReadAll(&b); string(rest) != `{"jsonrpc":"2.0"}`+"\n" {
		t.Fatalf("left on stdin: %q", rest)
	}
	for _, bad := range []string{"", "{}\n", "\x1e{\"k\":\"tick\"}\n", strings.Repeat("x", maxConfig+1)} {
		if _, err := ReadConfig(strings.NewReader(bad)); !errors.Is(err, ErrConfig) {
			t.Errorf("ReadConfig(%.20q) = %v, want ErrConfig", bad, err)
		}
	}
}
