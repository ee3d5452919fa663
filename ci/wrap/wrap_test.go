package wrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

const claudeConfig = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/proj"],
      "env": {"A": "1"}
    },
    "bare": { "command": "my-server" },
    "remote": { "url": "https://example.com/mcp" }
  }
}
`

const vscodeConfig = `{
	"inputs": [{"type": "promptString", "id": "token", "password": true}],
	"servers": {
		"gh": {"type": "stdio", "args": ["run", "-i", "ghcr.io/x/y"], "command": "docker", "env": {"T": "${input:token}"}, "dev": {"watch": "x"}}
	}
}
`

// TestWrapKeepsEveryOtherByte: each stdio entry runs through mcpsandbox
// run with its line; what is not the command and args is as it was; a
// second wrap changes nothing; a remote entry is left, said.
func TestWrapKeepsEveryOtherByte(t *testing.T) {
	for _, doc := range []string{claudeConfig, vscodeConfig} {
		out, entries, err := Wrap([]byte(doc), "/usr/local/bin/mcpsandbox", []string{"--rm"})
		if err != nil {
			t.Fatal(err)
		}
		var orig, got map[string]any
		if json.Unmarshal([]byte(doc), &orig) != nil || json.Unmarshal(out, &got) != nil {
			t.Fatalf("not JSON:\n%s", out)
		}
		key := "mcpServers"
		if _, ok := orig["servers"]; ok {
			key = "servers"
		}
		for name, v := range orig[key].(map[string]any) {
			o, g := v.(map[string]any), got[key].(map[string]any)[name].(map[string]any)
			if _, remote := o["url"]; remote {
				if len(g) != len(o) {
					t.Errorf("%s: the remote entry changed: %v", name, g)
				}
				continue
			}
			args, _ := g["args"].([]any)
			want := append([]any{"run", "--rm", "--", o["command"]}, anys(o["args"])...)
			if g["command"] != "/usr/local/bin/mcpsandbox" || !equal(args, want) {
				t.Errorf("%s: %v %v, want %v", name, g["command"], args, want)
			}
			for k := range o {
				if k != "command" && k != "args" {
					a, _ := json.Marshal(o[k])
					b, _ := json.Marshal(g[k])
					if !bytes.Equal(a, b) {
						t.Errorf("%s.%s changed: %s -> %s", name, k, a, b)
					}
				}
			}
		}
		// Every byte before the first server is as it was.
		if i := bytes.Index([]byte(doc), []byte(`"command"`)); !bytes.HasPrefix(out, []byte(doc)[:min(i, bytes.Index([]byte(doc), []byte(`"args"`)))]) {
			t.Errorf("bytes before the servers changed:\n%s", out)
		}
		again, entries2, err := Wrap(out, "/usr/local/bin/mcpsandbox", []string{"--rm"})
		if err != nil || !bytes.Equal(again, out) {
			t.Errorf("a second wrap changed the file:\n%s", again)
		}
		for _, e := range entries2 {
			if e.Wrapped {
				t.Errorf("%s wrapped twice", e.Name)
			}
		}
		n := 0
		for _, e := range entries {
			if e.Wrapped {
				n++
			} else if e.Why == "" {
				t.Errorf("%s not wrapped, with no why", e.Name)
			}
		}
		if n == 0 {
			t.Error("nothing wrapped")
		}
		back, err := Unwrap(out, []byte(doc), Sum(out))
		if err != nil || !bytes.Equal(back, []byte(doc)) {
			t.Errorf("unwrap: %v", err)
		}
		if _, err := Unwrap(append(out, ' '), []byte(doc), Sum(out)); err == nil {
			t.Error("unwrap of a file changed since: restored")
		}
	}
}

// TestWrapRefusesComments: JSONC is refused, never stripped.
func TestWrapRefusesComments(t *testing.T) {
	_, _, err := Wrap([]byte("{\n  // my servers\n  \"servers\": {}\n}\n"), "/bin/mcpsandbox", nil)
	if !errors.Is(err, ErrComments) {
		t.Errorf("%v, want ErrComments", err)
	}
	if _, _, err := Wrap([]byte(`{"servers":{"a":{"command":"x","args":["http://y//z"]}}}`), "/bin/m", nil); err != nil {
		t.Errorf("a // inside a string taken for a comment: %v", err)
	}
}

func anys(v any) []any {
	a, _ := v.([]any)
	return a
}

func equal(a, b []any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
