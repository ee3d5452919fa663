package bulk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// ConfigEntry is one server entry of an MCP client's configuration, as
// the client would start it.
type ConfigEntry struct {
	// Name is the entry's key.
	Name    string
	Command string
	Args    []string
	// Env is the entry's environment, by name.
	Env map[string]string
	// URL is a remote server's (nothing to sandbox).
	URL string
}

// ErrNoSuchServer marks a --from-config naming a server the file does
// not have.
var ErrNoSuchServer = errors.New("no such server in the configuration")

// ReadConfigFile reads the entry named server of a configuration file
// named name (by its extension: Codex's config.toml is TOML, with its
// servers under mcp_servers; the others JSON, as ReadConfigEntry).
func ReadConfigFile(name string, b []byte, server string) (ConfigEntry, error) {
	if !strings.HasSuffix(name, ".toml") {
		return ReadConfigEntry(b, server)
	}
	var doc struct {
		Servers map[string]clientServer `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(string(b), &doc); err != nil {
		return ConfigEntry{}, fmt.Errorf("not TOML: %w", err)
	}
	if doc.Servers == nil {
		return ConfigEntry{}, fmt.Errorf("no mcp_servers in it")
	}
	return pickEntry(doc.Servers, server)
}

// ReadConfigEntry reads the entry named server ("" for the only one) of
// a client configuration: Claude Desktop's, Cursor's, .mcp.json, Gemini's
// and Qwen's settings.json (mcpServers), VS Code's mcp.json (servers).
// JSON with comments is refused, never read past what it says.
func ReadConfigEntry(b []byte, server string) (ConfigEntry, error) {
	b = bytes.TrimPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("\ufeff"))
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return ConfigEntry{}, fmt.Errorf("not a JSON object (comments are not read: remove them, or name the server's command after --): %w", err)
	}
	raw, ok := doc["mcpServers"]
	if !ok {
		raw, ok = doc["servers"]
	}
	if !ok {
		return ConfigEntry{}, fmt.Errorf("no mcpServers or servers in it")
	}
	var servers map[string]clientServer
	if err := json.Unmarshal(raw, &servers); err != nil {
		return ConfigEntry{}, fmt.Errorf("its servers are not entries by name: %w", err)
	}
	return pickEntry(servers, server)
}

// pickEntry is the entry named server ("" for the only one).
func pickEntry(servers map[string]clientServer, server string) (ConfigEntry, error) {
	names := sortedKeys(servers)
	if server == "" {
		if len(names) != 1 {
			return ConfigEntry{}, fmt.Errorf("%w: it has %d (%s): name one, FILE#NAME", ErrNoSuchServer, len(names), strings.Join(names, ", "))
		}
		server = names[0]
	}
	if !slices.Contains(names, server) {
		return ConfigEntry{}, fmt.Errorf("%w: %q (it has %s)", ErrNoSuchServer, server, strings.Join(names, ", "))
	}
	cs := servers[server]
	e := ConfigEntry{Name: server, Command: cs.Command, Args: cs.Args, Env: cs.Env, URL: cs.URL}
	if e.Command == "" && e.URL == "" {
		return ConfigEntry{}, fmt.Errorf("server %q has neither command nor url", server)
	}
	return e, nil
}

// Placeholders are the entry's values its client fills in when it starts
// the server (${input:id}, ${env:NAME}, ${workspaceFolder}), by where.
func (e ConfigEntry) Placeholders() []string {
	var out []string
	for _, a := range e.Args {
		if placeholder.MatchString(a) {
			out = append(out, "argument "+a)
		}
	}
	for _, k := range sortedKeys(e.Env) {
		if placeholder.MatchString(e.Env[k]) {
			out = append(out, "env "+k)
		}
	}
	return out
}

// SecretName says whether an environment variable's name says it holds a
// secret (GITHUB_PAT, OPENAI_API_KEY; not DB_PATH): a scan gives it a
// honeytoken.
func SecretName(n string) bool { return secretName(n) }
