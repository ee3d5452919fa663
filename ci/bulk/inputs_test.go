package bulk

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	in := `# servers
npm:@modelcontextprotocol/server-filesystem@2026.8.31 -- /workspace
npm:time-mcp

image:mcpsandbox/demo:1 env:MODE=x -- /srv/server --stdio
npm:@scope/pkg@^1.2 bin:pkg-server env:A=1 secret:API_KEY
pypi:mcp-server-fetch
bogus line
npm:github:evil/repo
npm:pkg@
npm:pkg env:NOEQUALS
npm:Pkg/with/two/slashes
npm:pkg --
`
	specs, bad := ParseList("list.txt", strings.NewReader(in))
	want := []Spec{
		{Kind: KindNPM, Name: "@modelcontextprotocol/server-filesystem", Version: "2026.8.31", Args: []string{"/workspace"}, Source: "list.txt:2"},
		{Kind: KindNPM, Name: "time-mcp", Source: "list.txt:3"},
		{Kind: KindImage, Name: "mcpsandbox/demo:1", Env: []EnvVar{{Name: "MODE", Value: "x"}}, Args: []string{"/srv/server", "--stdio"}, Source: "list.txt:5"},
		{Kind: KindNPM, Name: "@scope/pkg", Version: "^1.2", Bin: "pkg-server", Env: []EnvVar{{Name: "A", Value: "1"}, {Name: "API_KEY", Secret: true}}, Source: "list.txt:6"},
		{Kind: KindPyPI, Name: "mcp-server-fetch", Source: "list.txt:7"},
		{Kind: KindNPM, Name: "pkg", Source: "list.txt:13"},
	}
	for i := range want {
		if want[i].Args == nil {
			want[i].Args = []string{}
		}
	}
	for i := range specs {
		if specs[i].Args == nil {
			specs[i].Args = []string{}
		}
	}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("specs:\n got %+v\nwant %+v", specs, want)
	}
	var where []string
	for _, e := range bad {
		where = append(where, e.Where)
		if !errors.Is(e, ErrInput) {
			t.Errorf("%v is not an ErrInput", e)
		}
	}
	if w := []string{"list.txt:8", "list.txt:9", "list.txt:10", "list.txt:11", "list.txt:12"}; !slices.Equal(where, w) {
		t.Errorf("malformed lines at %q, want %q (%v)", where, w, bad)
	}
	if !strings.Contains(bad[1].Msg, "git, URL, file and alias specs are refused") {
		t.Errorf("git spec: %q", bad[1].Msg)
	}
}

const serverJSONDoc = `{
  "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
  "name": "io.github.example/weather",
  "version": "1.2.0",
  "packages": [
    {"registryType": "npm", "identifier": "@example/weather-mcp", "version": "1.2.0", "runtimeHint": "npx",
     "transport": {"type": "stdio"},
     "packageArguments": [
       {"type": "positional", "valueHint": "root", "default": "/workspace"},
       {"type": "named", "name": "--units", "value": "metric"},
       {"type": "named", "name": "--verbose"}
     ],
     "environmentVariables": [
       {"name": "WEATHER_API_KEY", "isRequired": true, "isSecret": true},
       {"name": "REGION", "default": "eu"},
       {"name": "OPTIONAL_THING"}
     ]},
    {"registryType": "npm", "identifier": "@example/weather-db", "version": "1.2.0", "transport": {"type": "stdio"},
     "environmentVariables": [{"name": "DATABASE_PATH", "isRequired": true}, {"name": "DB_TOKEN", "isSecret": true}]},
    {"registryType": "oci", "identifier": "ghcr.io/example/weather", "version": "1.2.0", "transport": {"type": "stdio"}},
    {"registryType": "pypi", "identifier": "weather-mcp", "version": "1.2.0", "transport": {"type": "stdio"}},
    {"registryType": "mcpb", "identifier": "https://example.com/weather.mcpb", "transport": {"type": "stdio"}},
    {"registryType": "npm", "identifier": "@example/weather-http", "version": "1.2.0", "transport": {"type": "streamable-http", "url": "http://localhost:8080/mcp"}}
  ],
  "remotes": [{"type": "streamable-http", "url": "https://weather.example.com/mcp"}]
}`

func TestParseServerJSON(t *testing.T) {
	specs, bad := Parse("server.json", strings.NewReader(serverJSONDoc))
	if len(bad) != 0 {
		t.Fatalf("malformed: %v", bad)
	}
	if len(specs) != 7 {
		t.Fatalf("%d specs, want 7: %+v", len(specs), specs)
	}
	w := specs[0]
	if w.Kind != KindNPM || w.Name != "@example/weather-mcp" || w.Version != "1.2.0" || w.Status != 0 || w.Source != "server.json/packages/0" {
		t.Errorf("weather: %+v", w)
	}
	if want := []string{"/workspace", "--units", "metric"}; !slices.Equal(w.Args, want) {
		t.Errorf("args %q, want %q", w.Args, want)
	}
	if want := []EnvVar{{Name: "WEATHER_API_KEY", Secret: true}, {Name: "REGION", Value: "eu"}}; !reflect.DeepEqual(w.Env, want) {
		t.Errorf("env %+v, want %+v", w.Env, want)
	}
	if db := specs[1]; db.Status != StatusNeedsConfig || !strings.Contains(db.Why, "DATABASE_PATH") || strings.Contains(db.Why, "DB_TOKEN") {
		t.Errorf("db: %s %q", db.Status, db.Why)
	}
	if o := specs[2]; o.Kind != KindImage || o.Name != "ghcr.io/example/weather:1.2.0" || o.Status != 0 {
		t.Errorf("oci: %+v", o)
	}
	if py := specs[3]; py.Kind != KindPyPI || py.Status != 0 {
		t.Errorf("pypi: %+v", py)
	}
	for i, want := range map[int]string{4: "MCPB", 5: `transport "streamable-http"`, 6: "remote server"} {
		if specs[i].Status != StatusNotScannedHere || !strings.Contains(specs[i].Why, want) {
			t.Errorf("spec %d: %s %q, want not-scanned-here naming %q", i, specs[i].Status, specs[i].Why, want)
		}
	}
}

func TestParseRegistryListAndArrays(t *testing.T) {
	list := `{"servers": [{"server": ` + serverJSONDoc + `, "_meta": {}}, {"server": {"name": "x"}}], "metadata": {"count": 2}}`
	specs, bad := Parse("list.json", strings.NewReader(list))
	if len(specs) != 7 || len(bad) != 1 || bad[0].Where != "list.json#/servers/1/server" {
		t.Errorf("list response: %d specs, bad %v", len(specs), bad)
	}
	if specs[0].Source != "list.json#/servers/0/server/packages/0" {
		t.Errorf("source %q", specs[0].Source)
	}
	arr := `[` + serverJSONDoc + `, 7]`
	specs, bad = Parse("arr.json", strings.NewReader(arr))
	if len(specs) != 7 || len(bad) != 1 || bad[0].Where != "arr.json#/1" {
		t.Errorf("array: %d specs, bad %v", len(specs), bad)
	}
	_, bad = Parse("broken.json", strings.NewReader("{\n  \"servers\": [\n  oops\n]}"))
	if len(bad) != 1 || bad[0].Where != "broken.json:3" {
		t.Errorf("syntax error: %v, want it at line 3", bad)
	}
}

func TestParseClientConfigs(t *testing.T) {
	vscode := `{
  "inputs": [{"type": "promptString", "id": "gh", "password": true}],
  "servers": {
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem@2026.8.31", "/workspace"]},
    "gh": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
           "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${input:gh}"}},
    "web": {"type": "http", "url": "https://api.example.com/mcp"},
    "py": {"command": "uvx", "args": ["mcp-server-fetch"]},
    "db": {"command": "npx", "args": ["-y", "db-mcp"], "env": {"DB_PATH": "${input:db}"}},
    "bad": {"command": "npx", "args": ["-y"]}
  }
}`
	specs, bad := Parse(".vscode/mcp.json", strings.NewReader(vscode))
	if len(bad) != 1 || bad[0].Where != ".vscode/mcp.json#/servers/bad" {
		t.Errorf("malformed: %v", bad)
	}
	by := map[string]Spec{}
	for _, s := range specs {
		by[s.Source[strings.LastIndex(s.Source, "/")+1:]] = s
	}
	if s := by["fs"]; s.Kind != KindNPM || s.Name != "@modelcontextprotocol/server-filesystem" || s.Version != "2026.8.31" || !slices.Equal(s.Args, []string{"/workspace"}) {
		t.Errorf("fs: %+v", s)
	}
	if s := by["gh"]; s.Kind != KindImage || s.Name != "ghcr.io/github/github-mcp-server" || len(s.Env) != 1 || !s.Env[0].Secret || s.Status != 0 {
		t.Errorf("gh: %+v", s)
	}
	if s := by["web"]; s.Kind != KindRemote || s.Status != StatusNotScannedHere {
		t.Errorf("web: %+v", s)
	}
	if s := by["py"]; s.Kind != KindPyPI || s.Name != "mcp-server-fetch" || s.Status != 0 {
		t.Errorf("py: %+v", s)
	}
	if s := by["db"]; s.Status != StatusNeedsConfig || !strings.Contains(s.Why, "DB_PATH") {
		t.Errorf("db: %+v", s)
	}

	claude := `{"mcpServers": {
    "mem": {"command": "node", "args": ["/home/me/.npm-global/lib/node_modules/@modelcontextprotocol/server-memory/dist/index.js"]},
    "local": {"command": "node", "args": ["/home/me/src/server.js"]},
    "pinned": {"command": "npx", "args": ["--yes", "-p", "tool-pkg@2.0.0", "tool-pkg-mcp", "--stdio"], "env": {"LOG": "debug"}},
    "bin": {"command": "/usr/local/bin/my-server"}
  }}`
	specs, bad = Parse("claude_desktop_config.json", strings.NewReader(claude))
	if len(bad) != 0 {
		t.Errorf("malformed: %v", bad)
	}
	by = map[string]Spec{}
	for _, s := range specs {
		by[s.Source[strings.LastIndex(s.Source, "/")+1:]] = s
	}
	if s := by["mem"]; s.Kind != KindNPM || s.Name != "@modelcontextprotocol/server-memory" || s.Bin != "./dist/index.js" {
		t.Errorf("mem: %+v", s)
	}
	if s := by["local"]; s.Status != StatusNotScannedHere || !strings.Contains(s.Why, "local script") {
		t.Errorf("local: %+v", s)
	}
	if s := by["pinned"]; s.Name != "tool-pkg" || s.Version != "2.0.0" || s.Bin != "tool-pkg-mcp" || !slices.Equal(s.Args, []string{"--stdio"}) || s.Env[0] != (EnvVar{Name: "LOG", Value: "debug"}) {
		t.Errorf("pinned: %+v", s)
	}
	if s := by["bin"]; s.Status != StatusNotScannedHere || !strings.Contains(s.Why, "neither npx, node nor docker run") {
		t.Errorf("bin: %+v", s)
	}
}

func TestDedupe(t *testing.T) {
	a := Spec{Kind: KindNPM, Name: "x", Version: "1.0.0", Source: "a:1"}
	b := a
	b.Source = "b.json#/servers/x"
	c := a
	c.Args = []string{"--other"}
	kept, dups := Dedupe([]Spec{a, b, c})
	if len(kept) != 2 || kept[0].Source != "a:1" || len(dups) != 1 || dups[0].Where != "b.json#/servers/x" || !strings.Contains(dups[0].Msg, "duplicates a:1") {
		t.Errorf("kept %+v dups %+v", kept, dups)
	}
	if a.Slug() == c.Slug() || !strings.HasPrefix(a.Slug(), "npm-x-") {
		t.Errorf("slugs %q %q", a.Slug(), c.Slug())
	}
}

func TestSecretName(t *testing.T) {
	for n, want := range map[string]bool{"GITHUB_PAT": true, "OPENAI_API_KEY": true, "DB_TOKEN": true, "api-key": true, "DB_PATH": false, "KEYBOARD_LAYOUT": false, "MONKEY": false} {
		if secretName(n) != want {
			t.Errorf("secretName(%q) = %v", n, !want)
		}
	}
}
