package bulk

import (
	"errors"
	"testing"
)

// TestReadConfigEntry: the shapes of the clients' configurations.
func TestReadConfigEntry(t *testing.T) {
	for _, c := range []struct {
		doc, server, command string
		err                  error
	}{
		{`{"mcpServers":{"a":{"command":"npx","args":["-y","p"]}}}`, "", "npx", nil},
		{"\ufeff" + `{"servers":{"a":{"type":"stdio","command":"node"},"b":{"command":"uvx"}}}`, "b", "uvx", nil},
		{`{"mcpServers":{"a":{"command":"x"},"b":{"command":"y"}}}`, "", "", ErrNoSuchServer},
		{`{"mcpServers":{"a":{"command":"x"}}}`, "z", "", ErrNoSuchServer},
	} {
		e, err := ReadConfigEntry([]byte(c.doc), c.server)
		if !errors.Is(err, c.err) || (c.err == nil && e.Command != c.command) {
			t.Errorf("%s #%s: %+v %v", c.doc, c.server, e, err)
		}
	}
	if _, err := ReadConfigEntry([]byte(`{"x":1}`), ""); err == nil {
		t.Error("a document with no servers read")
	}
}

// TestReadConfigFileTOML: Codex's config.toml, its servers under
// mcp_servers.
func TestReadConfigFileTOML(t *testing.T) {
	doc := `model = "o3"

[mcp_servers.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/workspace"]
env = { "GITHUB_TOKEN" = "ghp_x" }
`
	e, err := ReadConfigFile("config.toml", []byte(doc), "")
	if err != nil || e.Name != "fs" || e.Command != "npx" || len(e.Args) != 3 || e.Env["GITHUB_TOKEN"] != "ghp_x" {
		t.Errorf("%+v %v", e, err)
	}
	if _, err := ReadConfigFile("config.toml", []byte("model = 1\n"), ""); err == nil {
		t.Error("a TOML with no servers read")
	}
}
