package wrap

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

const codexConfig = `# Codex's configuration
model = "o4-mini"   # kept

[mcp_servers.filesystem]
command = "npx" # the launcher
args = [
  "-y",   # yes
  "@modelcontextprotocol/server-filesystem",
  '/home/me/proj',
]
env = { "A" = "1" }

[mcp_servers.bare]
command = 'my-server'
startup_timeout_sec = 20

[mcp_servers."quoted name".env]
K = "v"

[mcp_servers."quoted name"]
command = "uvx"
args = ["mcp-server-fetch"]

[mcp_servers.remote]
url = "https://example.com/mcp"

[profiles.x]
args = ["not", "a", "server"]
`

// TestWrapTOML: Codex's config.toml is wrapped as JSON files are: each
// [mcp_servers.NAME] table's command and args rewritten where they
// stand, comments and every other byte kept, a second wrap changing
// nothing, a remote entry left.
func TestWrapTOML(t *testing.T) {
	bin := `/opt/mcp "sandbox"/mcpsandbox`
	out, entries, err := WrapTOML([]byte(codexConfig), bin, []string{"--rm"})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if _, err := toml.Decode(string(out), &got); err != nil {
		t.Fatalf("not TOML: %v\n%s", err, out)
	}
	servers := got["mcp_servers"].(map[string]any)
	for name, want := range map[string][]any{
		"filesystem":  {"run", "--rm", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/proj"},
		"bare":        {"run", "--rm", "--", "my-server"},
		"quoted name": {"run", "--rm", "--", "uvx", "mcp-server-fetch"},
	} {
		s := servers[name].(map[string]any)
		if s["command"] != bin || !reflect.DeepEqual(s["args"], want) {
			t.Errorf("%s: %v %v", name, s["command"], s["args"])
		}
	}
	for _, kept := range []string{"# Codex's configuration\nmodel = \"o4-mini\"   # kept\n", " # the launcher\n", "env = { \"A\" = \"1\" }", "startup_timeout_sec = 20",
		"[mcp_servers.remote]\nurl = \"https://example.com/mcp\"\n", "[profiles.x]\nargs = [\"not\", \"a\", \"server\"]\n"} {
		if !strings.Contains(string(out), kept) {
			t.Errorf("lost %q:\n%s", kept, out)
		}
	}
	var why []string
	for _, e := range entries {
		if !e.Wrapped {
			why = append(why, e.Name+": "+e.Why)
		}
	}
	if strings.Join(why, "\n") != "remote: a remote server (url): nothing runs here to sandbox" {
		t.Errorf("left %q", why)
	}
	again, _, err := WrapTOML(out, bin, []string{"--rm"})
	if err != nil || string(again) != string(out) {
		t.Errorf("a second wrap changed it: %v\n%s", err, again)
	}
	if orig, err := Unwrap(out, []byte(codexConfig), Sum(out)); err != nil || string(orig) != codexConfig {
		t.Errorf("unwrap: %v", err)
	}
}

// TestWrapTOMLRefuses: forms the rewrite does not edit, and files that
// are not TOML, are refused whole, nothing written.
func TestWrapTOMLRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"dotted keys":        "mcp_servers.x.command = \"npx\"\n",
		"an inline table":    "mcp_servers = { x = { command = \"npx\" } }\n",
		"names in the table": "[mcp_servers]\nx.command = \"npx\"\n",
		"an implicit table":  "[mcp_servers.x.env]\nA = \"1\"\n",
		"a key twice":        "[mcp_servers.x]\ncommand = \"a\"\ncommand = \"b\"\n",
		"not TOML":           "[mcp_servers.x\ncommand = \"a\"\n",
		"no servers":         "model = \"x\"\n",
		"an array of tables": "[[mcp_servers]]\ncommand = \"a\"\n",
	} {
		if out, _, err := WrapTOML([]byte(doc), "/bin/mcpsandbox", nil); err == nil {
			t.Errorf("%s: wrapped:\n%s", name, out)
		} else if name == "dotted keys" && !errors.Is(err, ErrTOMLForm) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestWrapTOMLStrings: a multi-line string, escapes and a missing final
// newline do not move the edit.
func TestWrapTOMLStrings(t *testing.T) {
	doc := "[mcp_servers.x]\ndescription = \"\"\"\nargs = [\"fake\"]\n\\\"\"\" still\"\"\"\nenv = { P = 'a # b' }\ncommand = \"np\\\"x\""
	out, entries, err := WrapTOML([]byte(doc), "/bin/m", nil)
	if err != nil || len(entries) != 1 || !entries[0].Wrapped {
		t.Fatalf("%v %+v\n%s", err, entries, out)
	}
	var got map[string]map[string]map[string]any
	if _, err := toml.Decode(string(out), &got); err != nil {
		t.Fatal(err)
	}
	x := got["mcp_servers"]["x"]
	if x["command"] != "/bin/m" || !reflect.DeepEqual(x["args"], []any{"run", "--", `np"x`}) || !strings.Contains(x["description"].(string), `args = ["fake"]`) {
		t.Errorf("%v\n%s", x, out)
	}
}

// TestWrapTOMLHostile: a file of many multi-line strings is read in one
// pass (it was quadratic: 650 KB took 12 s), and a file that says nan
// somewhere is still the same file once rewritten.
func TestWrapTOMLHostile(t *testing.T) {
	var b strings.Builder
	b.WriteString("[mcp_servers.x]\ncommand = \"npx\"\n[notes]\n")
	for i := 0; i < 40_000; i++ {
		fmt.Fprintf(&b, "k%d = \"\"\"v\\\"\"\" \"\"\"\n", i)
	}
	if _, _, err := WrapTOML([]byte(b.String()), "/bin/m", nil); err != nil {
		t.Errorf("%d KB: %v", b.Len()>>10, err)
	}
	out, entries, err := WrapTOML([]byte("threshold = nan\n[mcp_servers.x]\ncommand = \"npx\"\n"), "/bin/m", nil)
	if err != nil || len(entries) != 1 || !entries[0].Wrapped || !strings.Contains(string(out), "threshold = nan") {
		t.Errorf("nan: %v %+v", err, entries)
	}
}
