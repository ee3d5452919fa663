package clientadapter

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func vars(transport string) Vars {
	return Vars{Prompt: "do it", ServerName: "twin", StdioCommand: "/sbin/docker-init", StdioArg: "mcpsandbox-twin-stdio",
		MCPURL: "http://127.0.0.1:41171/mcp", ModelURL: "http://127.0.0.1:41172", Home: "/tmp/h", Workspace: "/workspace", Transport: transport}
}

// Every built-in parses, renders for each transport, trusted and not,
// into files under HOME or the workspace, and turns on no approve-all
// mode.
func TestBuiltins(t *testing.T) {
	for _, name := range Names() {
		a, ok := Builtin(name)
		if !ok {
			t.Fatalf("%s: not found", name)
		}
		for _, tr := range a.Transports {
			for _, trusted := range []bool{false, true} {
				r, err := a.Render(vars(tr), trusted)
				if err != nil {
					t.Fatalf("%s %s trusted=%t: %v", name, tr, trusted, err)
				}
				if err := Check([]string{"client"}, r); err != nil {
					t.Errorf("%s %s trusted=%t: %v", name, tr, trusted, err)
				}
				seen := map[string]bool{}
				for _, f := range r.Files {
					if !strings.HasPrefix(f.Path, "/tmp/h/") && !strings.HasPrefix(f.Path, "/workspace/") {
						t.Errorf("%s: file %s outside HOME and the workspace", name, f.Path)
					}
					if seen[f.Path] {
						t.Errorf("%s %s trusted=%t: %s written twice", name, tr, trusted, f.Path)
					}
					seen[f.Path] = true
					if strings.Contains(f.Content, "{{") {
						t.Errorf("%s: a placeholder left in %s:\n%s", name, f.Path, f.Content)
					}
				}
				all := strings.Join(r.Args, " ") + strings.Join(r.Env, " ")
				for _, f := range r.Files {
					all += f.Content
				}
				want := "mcpsandbox-twin-stdio"
				if tr == "http" {
					want = "http://127.0.0.1:41171/mcp"
				}
				if !strings.Contains(all, want) || !strings.Contains(all, "http://127.0.0.1:41172") || !strings.Contains(all, "do it") {
					t.Errorf("%s %s: not pointed at the twin (%s), the model and the prompt:\n%s", name, tr, want, all)
				}
			}
		}
	}
}

func TestGeminiCLITrust(t *testing.T) {
	a, _ := Builtin("gemini-cli")
	plain, _ := a.Render(vars("stdio"), false)
	trusted, _ := a.Render(vars("stdio"), true)
	settings := func(r Rendered) map[string]any {
		for _, f := range r.Files {
			if f.Path == "/tmp/h/.gemini/settings.json" {
				var v map[string]any
				if err := json.Unmarshal([]byte(f.Content), &v); err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
		t.Fatal("no settings.json")
		return nil
	}
	trust := func(v map[string]any) any { return v["mcpServers"].(map[string]any)["twin"].(map[string]any)["trust"] }
	if trust(settings(plain)) != false || trust(settings(trusted)) != true {
		t.Errorf("trust: %v, control %v", trust(settings(plain)), trust(settings(trusted)))
	}
	if len(trusted.Files) != len(plain.Files)+1 || !strings.Contains(trusted.Files[len(trusted.Files)-1].Content, `"/workspace": "TRUST_FOLDER"`) {
		t.Errorf("the control's trusted folder: %+v", trusted.Files)
	}
	if strings.Join(plain.Args, " ") != "--approval-mode default do it" {
		t.Errorf("args %q", plain.Args)
	}
}

func TestCheckRefusesApproveAll(t *testing.T) {
	for _, tc := range []struct {
		cmd []string
		r   Rendered
	}{
		{[]string{"gemini", "--yolo"}, Rendered{}},
		{[]string{"gemini", "-y"}, Rendered{}},
		{[]string{"gemini"}, Rendered{Args: []string{"--approval-mode", "yolo"}}},
		{[]string{"gemini"}, Rendered{Args: []string{"--approval-mode=auto_edit"}}},
		{[]string{"claude", "--dangerously-skip-permissions"}, Rendered{}},
		{[]string{"claude"}, Rendered{Args: []string{"--permission-mode", "bypassPermissions"}}},
		{[]string{"claude"}, Rendered{Args: []string{"--allowedTools", "mcp__twin__alpha"}}},
		{[]string{"codex", "exec", "--full-auto"}, Rendered{}},
		{[]string{"codex", "-a", "never"}, Rendered{}},
		{[]string{"codex"}, Rendered{Files: []RenderedFile{{Path: "/h/c.toml", Content: "approval_policy = \"never\"\n"}}}},
		{[]string{"x"}, Rendered{Files: []RenderedFile{{Path: "/h/s.json", Content: `{"autoAccept": true}`}}}},
		{[]string{"x"}, Rendered{Files: []RenderedFile{{Path: "/h/s.json", Content: `{"permissions":{"defaultMode":"bypassPermissions"}}`}}}},
	} {
		if err := Check(tc.cmd, tc.r); !errors.Is(err, ErrAdapter) {
			t.Errorf("%v %+v: %v, want refused", tc.cmd, tc.r, err)
		}
	}
	if err := Check([]string{"gemini", "--approval-mode", "default", "-p", "x"}, Rendered{}); err != nil {
		t.Errorf("the default mode refused: %v", err)
	}
}

func TestParseAndLoad(t *testing.T) {
	for _, bad := range []string{
		`{"name":"x","api":"openai","transports":["stdio"],"extra":1}`,
		`{"api":"openai","transports":["stdio"]}`,
		`{"name":"x","api":"cohere","transports":["stdio"]}`,
		`{"name":"x","api":"openai","transports":["sse"]}`,
		`{"name":"x","api":"openai","transports":["stdio"],"files":[{"path":"/etc/passwd","text":"x"}]}`,
		`{"name":"x","api":"openai","transports":["stdio"],"files":[{"path":"~/../x","text":"x"}]}`,
		`{"name":"x","api":"openai","transports":["stdio"],"files":[{"path":"~/x"}]}`,
		`{"name":"x","api":"openai","transports":["stdio"],"trust":{"files":[{"path":"/x","text":"y"}]}}`,
		`{"name":"x","api":"openai","missing":"no-gate"}`,
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrAdapter) {
			t.Errorf("%s: %v, want ErrAdapter", bad, err)
		}
	}
	if _, err := Load("no-such-client"); !errors.Is(err, ErrAdapter) {
		t.Errorf("unknown built-in: %v", err)
	}
	p := filepath.Join(t.TempDir(), "mine.json")
	src := `{"name":"mine","api":"anthropic","transports":["http"],"args":["--ask","{{prompt}}"],"env":{"BASE":"{{modelURL}}/v1"},
	  "files":[{"path":".mine/cfg.json","json":{"servers":{"{{serverName}}":"{{mcpURL}}"}}}]}`
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if tr, err := a.Transport(""); tr != "http" || err != nil {
		t.Errorf("default transport %q %v", tr, err)
	}
	if _, err := a.Transport("stdio"); err == nil {
		t.Error("a transport the adapter lacks was taken")
	}
	r, err := a.Render(vars("http"), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Args, " ") != "--ask do it" || r.Env[0] != "BASE=http://127.0.0.1:41172/v1" ||
		r.Files[0].Path != "/workspace/.mine/cfg.json" || !strings.Contains(r.Files[0].Content, `"twin": "http://127.0.0.1:41171/mcp"`) {
		t.Errorf("rendered %+v", r)
	}
	if _, err := a.Render(vars("http"), true); !errors.Is(err, ErrAdapter) {
		t.Errorf("trusted without trust settings: %v", err)
	}
}
