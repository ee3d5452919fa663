package wrap

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Attacks on Wrap. Each test asserts the SAFE outcome: after Wrap, no
// stdio server of the file, as a JSON.parse-based client reads it (last
// duplicate key wins, case-sensitive), starts without going through
// `BIN run`; or Wrap refuses the file. A failing test is an attack that
// works.

const attackBin = "/opt/mcpsandbox"

// clientView returns the stdio servers under path (e.g. ["mcpServers"]
// or ["projects", "*", "mcpServers"]) that a JSON.parse client would
// start without mcpsandbox run. encoding/json into maps: last key wins,
// case-sensitive, as JSON.parse.
func clientView(t *testing.T, doc []byte, path ...string) []string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatalf("the wrapped file is not JSON: %v\n%s", err, doc)
	}
	var bad []string
	var walk func(cur map[string]json.RawMessage, path []string, where string)
	walk = func(cur map[string]json.RawMessage, path []string, where string) {
		if len(path) == 0 {
			for name, raw := range cur {
				var e map[string]json.RawMessage
				if json.Unmarshal(raw, &e) != nil {
					continue
				}
				var cmd string
				if json.Unmarshal(e["command"], &cmd) != nil || cmd == "" {
					continue
				}
				var args []string
				json.Unmarshal(e["args"], &args)
				if cmd != attackBin || len(args) == 0 || args[0] != "run" {
					bad = append(bad, where+"/"+name+": "+cmd+" "+strings.Join(args, " "))
				}
			}
			return
		}
		if path[0] == "*" {
			for k, raw := range cur {
				var next map[string]json.RawMessage
				if json.Unmarshal(raw, &next) == nil {
					walk(next, path[1:], where+"/"+k)
				}
			}
			return
		}
		var next map[string]json.RawMessage
		if json.Unmarshal(cur[path[0]], &next) == nil {
			walk(next, path[1:], where+"/"+path[0])
		}
	}
	walk(top, path, "")
	return bad
}

// wrapOrRefuse runs Wrap; a refusal is safe (nil, true).
func wrapOrRefuse(t *testing.T, doc string) ([]byte, bool) {
	t.Helper()
	out, _, err := Wrap([]byte(doc), attackBin, []string{"--network", "none"})
	if err != nil {
		t.Logf("refused: %v", err)
		return nil, true
	}
	return out, false
}

func assertNoUnwrapped(t *testing.T, doc string, paths ...[]string) {
	t.Helper()
	out, refused := wrapOrRefuse(t, doc)
	if refused {
		return
	}
	for _, p := range paths {
		if bad := clientView(t, out, p...); len(bad) > 0 {
			t.Errorf("a JSON.parse client starts, unsandboxed: %q\nwrapped file:\n%s", bad, out)
		}
	}
}

// Duplicate "command": Wrap rewrites the first, a client runs the last.
func TestAttackWrapDuplicateCommand(t *testing.T) {
	assertNoUnwrapped(t, `{"mcpServers": {"a": {"command": "decoy", "command": "evil", "args": ["x.js"]}}}`, []string{"mcpServers"})
	assertNoUnwrapped(t, `{"mcpServers": {"a": {"command": "decoy", "command": "evil"}}}`, []string{"mcpServers"})
}

// Duplicate "args": Wrap rewrites the first, a client passes the last
// to BIN (not run: the server's own arguments to mcpsandbox).
func TestAttackWrapDuplicateArgs(t *testing.T) {
	assertNoUnwrapped(t, `{"mcpServers": {"a": {"command": "node", "args": ["decoy.js"], "args": ["x.js"]}}}`, []string{"mcpServers"})
}

// Duplicate "mcpServers": Wrap wraps the first, a client reads the last.
func TestAttackWrapDuplicateServersObject(t *testing.T) {
	assertNoUnwrapped(t, `{"mcpServers": {"a": {"command": "node"}}, "mcpServers": {"b": {"command": "evil"}}}`, []string{"mcpServers"})
}

// Duplicate server name: both are entries; the client takes the last.
func TestAttackWrapDuplicateServerName(t *testing.T) {
	assertNoUnwrapped(t, `{"mcpServers": {"a": {"command": "node"}, "a": {"command": "evil"}}}`, []string{"mcpServers"})
}

// Both "mcpServers" and "servers": VS Code's mcp.json reads "servers";
// Wrap only looks at "mcpServers" when it is there.
func TestAttackWrapBothKeys(t *testing.T) {
	assertNoUnwrapped(t, `{"mcpServers": {}, "servers": {"a": {"type": "stdio", "command": "evil"}}}`, []string{"servers"}, []string{"mcpServers"})
	assertNoUnwrapped(t, `{"mcpServers": {"x": {"command": "node"}}, "servers": {"a": {"command": "evil"}}}`, []string{"servers"}, []string{"mcpServers"})
}

// Claude Code's ~/.claude.json keeps per-project servers under
// projects.PATH.mcpServers: those start too.
func TestAttackWrapClaudeCodeProjects(t *testing.T) {
	assertNoUnwrapped(t, `{"mcpServers": {"g": {"command": "node", "args": ["g.js"]}},
 "projects": {"/home/u/p": {"mcpServers": {"evil": {"type": "stdio", "command": "evil", "args": []}}}}}`,
		[]string{"mcpServers"}, []string{"projects", "*", "mcpServers"})
}

// Escaped keys are the same key to a client.
func TestAttackWrapEscapedKeys(t *testing.T) {
	assertNoUnwrapped(t, `{"\u006dcpServers": {"a": {"\u0063ommand": "evil", "\u0061rgs": ["x"]}}}`, []string{"mcpServers"})
}

// Comments Wrap's lax scalar scanner lets through (a comment directly
// after a value): a JSONC client (VS Code) reads them as comments. The
// safe outcome: refused as ErrComments, or every entry wrapped.
func TestAttackWrapHiddenComments(t *testing.T) {
	for _, doc := range []string{
		`{"servers": {"a": {"command":/*c*/"evil", "args": ["x.js"]}}}`,
		`{"servers": {"a": {"command": "evil", "args": [/*c*/"x.js"]}}}`,
		`{"servers": {"a": {"type": "stdio", "n": 0//, "command": "decoy"
, "command": "evil"}}}`,
	} {
		out, _, err := Wrap([]byte(doc), attackBin, nil)
		if errors.Is(err, ErrComments) {
			continue
		}
		// Not refused: strip the comments as a JSONC client does and look.
		t.Errorf("a file with comments is not refused (err %v): a JSONC client reads it as\n%s\nWrap wrote\n%s", err, stripComments(doc), out)
	}
}

// stripComments removes // and /* */ outside strings (enough here).
func stripComments(s string) string {
	var b strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in && c == '\\':
			b.WriteByte(c)
			i++
			b.WriteByte(s[i])
			continue
		case c == '"':
			in = !in
		case !in && strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case !in && strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			i += j + 3
			continue
		}
		if i < len(s) {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// CRLF, BOM, trailing garbage, odd names, url and command.
func TestAttackWrapFormats(t *testing.T) {
	assertNoUnwrapped(t, "{\r\n\"mcpServers\": {\r\n\"a\": {\"command\": \"evil\"\r\n}\r\n}\r\n}\r\n", []string{"mcpServers"})
	if _, refused := wrapOrRefuse(t, "\xef\xbb\xbf{\"mcpServers\": {\"a\": {\"command\": \"evil\"}}}"); !refused {
		t.Log("BOM: taken")
	}
	if _, refused := wrapOrRefuse(t, `{"mcpServers": {"a": {"command": "evil"}}} {"mcpServers": {"b": {"command": "evil"}}}`); !refused {
		t.Error("trailing data: not refused")
	}
	assertNoUnwrapped(t, `{"mcpServers": {"a\"b\n\u2028c\u0000": {"command": "evil"}}}`, []string{"mcpServers"})
	assertNoUnwrapped(t, `{"mcpServers": {"a": {"url": "https://x", "command": "evil"}}}`, []string{"mcpServers"})
	assertNoUnwrapped(t, `{"mcpServers": {"a": {"command": "evil", "args": null}}}`, []string{"mcpServers"})
	// A huge file: every entry still wrapped.
	var b strings.Builder
	b.WriteString(`{"mcpServers": {`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"s` + strings.Repeat("x", 10) + string(rune('a'+i%26)) + `` + itoa(i) + `": {"command": "evil", "args": ["a", "b"]}`)
	}
	b.WriteString(`}}`)
	assertNoUnwrapped(t, b.String(), []string{"mcpServers"})
}

func itoa(i int) string {
	s, _ := json.Marshal(i)
	return string(s)
}

// An entry already "wrapped" (command BIN, args run ...) is left as it
// is, whatever run flags it carries: note what it keeps.
func TestAttackWrapAlreadyWrappedKeepsFlags(t *testing.T) {
	doc := `{"mcpServers": {"a": {"command": "` + attackBin + `", "args": ["run", "--network", "host", "--", "evil"]}}}`
	_, entries, err := Wrap([]byte(doc), attackBin, []string{"--network", "none"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 1 && !entries[0].Wrapped {
		t.Logf("left as it is (%s): its own run flags (--network host) are kept", entries[0].Why)
	}
}
