package wrap

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

func FuzzAttackWrapTOML(f *testing.F) {
	f.Add(codexConfig)
	f.Add("[mcp_servers.x]\ndescription = \"\"\"\nargs = [\"fake\"]\n\\\"\"\" still\"\"\"\nenv = { P = 'a # b' }\ncommand = \"np\\\"x\"")
	f.Add("[mcp_servers.a]\ncommand = '''x'''''\nargs = [ # c\n 'a', \"\"\"b\"\"\", ]\n[mcp_servers.b]\ncommand=\"y\"#c")
	f.Fuzz(func(t *testing.T, doc string) {
		out, _, err := WrapTOML([]byte(doc), "/bin/m", []string{"--x"})
		if err != nil {
			return
		}
		// Each span the scanner found must read as the value the reader gives.
		var orig map[string]any
		toml.Decode(doc, &orig)
		found, _ := scanTOML([]byte(doc))
		for _, s := range found {
			e := orig["mcp_servers"].(map[string]any)[s.name].(map[string]any)
			if s.hasCmd {
				var v map[string]any
				if _, err := toml.Decode("v = "+doc[s.command[0]:s.command[1]], &v); err != nil || !reflect.DeepEqual(v["v"], e["command"]) {
					t.Errorf("command span %q is not %q", doc[s.command[0]:s.command[1]], e["command"])
				}
			}
			if s.hasArg {
				var v map[string]any
				if _, err := toml.Decode("v = "+doc[s.args[0]:s.args[1]], &v); err != nil || !reflect.DeepEqual(v["v"], e["args"]) {
					t.Errorf("args span %q is not %v", doc[s.args[0]:s.args[1]], e["args"])
				}
			}
		}
		if bytes.Equal(out, []byte(doc)) && len(found) > 0 {
			// fine: nothing to wrap
		}
	})
}
