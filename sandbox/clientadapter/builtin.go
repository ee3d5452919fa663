package clientadapter

import (
	"encoding/json"
	"slices"
)

// builtins are the shipped adapters, as adapter files would give them.
// They follow each client's public documentation; a client whose flags
// moved is given an adapter file of one's own (--adapter FILE).
var builtins = map[string]string{
	// gemini-cli: settings.json's mcpServers with a per-server trust, a
	// positional prompt runs it non-interactively, --approval-mode default
	// asks before every call that is not auto-approved; the API's base
	// URL from GOOGLE_GEMINI_BASE_URL. Headless runs (0.61 on) need the
	// workspace folder trusted (GEMINI_CLI_TRUST_WORKSPACE): a trust of
	// the folder, not of the server, given in every leg. The control
	// trusts the server too, and records the folder as trusted.
	"gemini-cli": `{
  "name": "gemini-cli",
  "about": "Google's gemini-cli (npm @google/gemini-cli): gemini --approval-mode default PROMPT",
  "api": "gemini",
  "transports": ["stdio", "http"],
  "args": ["--approval-mode", "default", "{{prompt}}"],
  "env": {"GEMINI_API_KEY": "mcpsandbox-scripted", "GOOGLE_GEMINI_BASE_URL": "{{modelURL}}", "GEMINI_MODEL": "gemini-2.5-flash",
          "GEMINI_CLI_NO_RELAUNCH": "true", "NO_BROWSER": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"},
  "files": [
    {"path": "~/.gemini/settings.json", "when": "stdio", "json": {
      "mcpServers": {"{{serverName}}": {"command": "{{stdioCommand}}", "args": ["{{stdioArg}}"], "trust": false}},
      "security": {"auth": {"selectedType": "gemini-api-key"}},
      "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
      "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}},
    {"path": "~/.gemini/settings.json", "when": "http", "json": {
      "mcpServers": {"{{serverName}}": {"httpUrl": "{{mcpURL}}", "trust": false}},
      "security": {"auth": {"selectedType": "gemini-api-key"}},
      "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
      "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}}
  ],
  "trust": {"files": [
    {"path": "~/.gemini/settings.json", "when": "stdio", "json": {
      "mcpServers": {"{{serverName}}": {"command": "{{stdioCommand}}", "args": ["{{stdioArg}}"], "trust": true}},
      "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": true}},
      "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
      "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}},
    {"path": "~/.gemini/settings.json", "when": "http", "json": {
      "mcpServers": {"{{serverName}}": {"httpUrl": "{{mcpURL}}", "trust": true}},
      "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": true}},
      "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
      "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}},
    {"path": "~/.gemini/trustedFolders.json", "json": {"{{workspace}}": "TRUST_FOLDER"}}
  ]}
}`,
	// claude-code: -p PROMPT is its non-interactive mode, --mcp-config a
	// file with mcpServers, --permission-mode default asks; the API's base
	// URL from ANTHROPIC_BASE_URL. The control allows the server's tools
	// (permissions.allow "mcp__twin": every tool of that server, none
	// other).
	"claude-code": `{
  "name": "claude-code",
  "about": "Anthropic's Claude Code (npm @anthropic-ai/claude-code): claude -p PROMPT --mcp-config FILE --permission-mode default",
  "api": "anthropic",
  "transports": ["stdio", "http"],
  "args": ["-p", "{{prompt}}", "--mcp-config", "{{home}}/.mcpsandbox/mcp.json", "--strict-mcp-config", "--permission-mode", "default", "--output-format", "text"],
  "env": {"ANTHROPIC_BASE_URL": "{{modelURL}}", "ANTHROPIC_API_KEY": "mcpsandbox-scripted", "DISABLE_AUTOUPDATER": "1",
          "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
  "files": [
    {"path": "~/.mcpsandbox/mcp.json", "when": "stdio", "json": {"mcpServers": {"{{serverName}}": {"type": "stdio", "command": "{{stdioCommand}}", "args": ["{{stdioArg}}"]}}}},
    {"path": "~/.mcpsandbox/mcp.json", "when": "http", "json": {"mcpServers": {"{{serverName}}": {"type": "http", "url": "{{mcpURL}}"}}}},
    {"path": "~/.claude.json", "json": {"hasCompletedOnboarding": true}}
  ],
  "trust": {"files": [
    {"path": "~/.claude/settings.json", "json": {"permissions": {"allow": ["mcp__{{serverName}}"]}}}
  ]}
}`,
	// codex: `codex exec PROMPT` is its non-interactive mode, config.toml
	// under ~/.codex names the MCP server and a model provider (the
	// Responses wire API, whose MCP tools come in a namespace), the
	// approval policy on-request (0.171 refuses "untrusted"). The control
	// marks the workspace a trusted project.
	"codex": `{
  "name": "codex",
  "about": "OpenAI's Codex CLI (npm @openai/codex): codex exec PROMPT with ~/.codex/config.toml",
  "api": "openai",
  "transports": ["stdio", "http"],
  "args": ["exec", "--skip-git-repo-check", "{{prompt}}"],
  "env": {"MCPSANDBOX_MODEL_KEY": "mcpsandbox-scripted", "CODEX_HOME": "{{home}}/.codex"},
  "files": [
    {"path": "~/.codex/config.toml", "when": "stdio", "text": "model = \"scripted\"\nmodel_provider = \"twin\"\napproval_policy = \"on-request\"\nsandbox_mode = \"read-only\"\n\n[model_providers.twin]\nname = \"mcpsandbox scripted model\"\nbase_url = \"{{modelURL}}/v1\"\nwire_api = \"responses\"\nenv_key = \"MCPSANDBOX_MODEL_KEY\"\n\n[mcp_servers.{{serverName}}]\ncommand = \"{{stdioCommand}}\"\nargs = [\"{{stdioArg}}\"]\n"},
    {"path": "~/.codex/config.toml", "when": "http", "text": "model = \"scripted\"\nmodel_provider = \"twin\"\napproval_policy = \"on-request\"\nsandbox_mode = \"read-only\"\n\n[model_providers.twin]\nname = \"mcpsandbox scripted model\"\nbase_url = \"{{modelURL}}/v1\"\nwire_api = \"responses\"\nenv_key = \"MCPSANDBOX_MODEL_KEY\"\n\n[mcp_servers.{{serverName}}]\nurl = \"{{mcpURL}}\"\n"}
  ],
  "trust": {"files": [
    {"path": "~/.codex/config.toml", "when": "stdio", "text": "model = \"scripted\"\nmodel_provider = \"twin\"\napproval_policy = \"on-request\"\nsandbox_mode = \"read-only\"\n\n[model_providers.twin]\nname = \"mcpsandbox scripted model\"\nbase_url = \"{{modelURL}}/v1\"\nwire_api = \"responses\"\nenv_key = \"MCPSANDBOX_MODEL_KEY\"\n\n[mcp_servers.{{serverName}}]\ncommand = \"{{stdioCommand}}\"\nargs = [\"{{stdioArg}}\"]\n\n[projects.\"{{workspace}}\"]\ntrust_level = \"trusted\"\n"},
    {"path": "~/.codex/config.toml", "when": "http", "text": "model = \"scripted\"\nmodel_provider = \"twin\"\napproval_policy = \"on-request\"\nsandbox_mode = \"read-only\"\n\n[model_providers.twin]\nname = \"mcpsandbox scripted model\"\nbase_url = \"{{modelURL}}/v1\"\nwire_api = \"responses\"\nenv_key = \"MCPSANDBOX_MODEL_KEY\"\n\n[mcp_servers.{{serverName}}]\nurl = \"{{mcpURL}}\"\n\n[projects.\"{{workspace}}\"]\ntrust_level = \"trusted\"\n"}
  ]}
}`,
	// fixture: the Go fixture client of the tests (and a template for an
	// adapter file): its settings name the server, the model and whether
	// the server is trusted.
	"fixture": `{
  "name": "fixture",
  "about": "mcpsandbox's fixture client (sandbox/internal/fixtureclient)",
  "api": "openai",
  "transports": ["stdio", "http"],
  "args": ["{{prompt}}"],
  "files": [
    {"path": "~/.fixtureclient/settings.json", "when": "stdio", "json": {"server": {"name": "{{serverName}}", "command": ["{{stdioCommand}}", "{{stdioArg}}"]}, "model": "{{modelURL}}", "trust": false}},
    {"path": "~/.fixtureclient/settings.json", "when": "http", "json": {"server": {"name": "{{serverName}}", "url": "{{mcpURL}}"}, "model": "{{modelURL}}", "trust": false}}
  ],
  "trust": {"files": [
    {"path": "~/.fixtureclient/settings.json", "when": "stdio", "json": {"server": {"name": "{{serverName}}", "command": ["{{stdioCommand}}", "{{stdioArg}}"]}, "model": "{{modelURL}}", "trust": true}},
    {"path": "~/.fixtureclient/settings.json", "when": "http", "json": {"server": {"name": "{{serverName}}", "url": "{{mcpURL}}"}, "model": "{{modelURL}}", "trust": true}}
  ]}
}`,
}

// Builtin returns the built-in adapter called name.
func Builtin(name string) (*Adapter, bool) {
	src, ok := builtins[name]
	if !ok {
		return nil, false
	}
	a, err := Parse([]byte(src))
	if err != nil {
		panic("built-in adapter " + name + ": " + err.Error()) // the tests parse every one
	}
	return a, true
}

// Names lists the built-ins, sorted.
func Names() []string {
	var out []string
	for n := range builtins {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Source is a built-in's adapter file, to start one's own from.
func Source(name string) (json.RawMessage, bool) {
	src, ok := builtins[name]
	return json.RawMessage(src), ok
}
