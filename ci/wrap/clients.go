package wrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Clients are the clients whose configuration Wrap knows where to find,
// by name: the file of the user's own servers.
var Clients = map[string]func() (string, error){
	// ~/.config/Claude (Linux), ~/Library/Application Support/Claude
	// (macOS), %APPDATA%\Claude (Windows).
	"claude-desktop": inConfigDir("Claude", "claude_desktop_config.json"),
	"claude-code":    inHome(".claude.json"),
	"vscode":         inConfigDir("Code", "User", "mcp.json"),
	"cursor":         inHome(".cursor", "mcp.json"),
	"codex":          inHome(".codex", "config.toml"),
	"gemini":         inHome(".gemini", "settings.json"),
	"qwen":           inHome(".qwen", "settings.json"),
}

// ClientNames are Clients' names, sorted.
func ClientNames() []string {
	var out []string
	for n := range Clients {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ConfigPath is the file a client name or a path names.
func ConfigPath(clientOrFile string) (string, error) {
	if where, ok := Clients[clientOrFile]; ok {
		p, err := where()
		if err != nil {
			return "", fmt.Errorf("%s's configuration: %w", clientOrFile, err)
		}
		return p, nil
	}
	if !strings.ContainsAny(clientOrFile, `/\`) && !strings.HasSuffix(clientOrFile, ".json") && !strings.HasSuffix(clientOrFile, ".toml") {
		return "", fmt.Errorf("%q is neither a client (%s) nor a file", clientOrFile, strings.Join(ClientNames(), ", "))
	}
	return clientOrFile, nil
}

func inConfigDir(parts ...string) func() (string, error) {
	return func() (string, error) {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(append([]string{d}, parts...)...), nil
	}
}

func inHome(parts ...string) func() (string, error) {
	return func() (string, error) {
		d, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(append([]string{d}, parts...)...), nil
	}
}
