package clientadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Adapter is one client family's settings.
type Adapter struct {
	Name  string `json:"name"`
	About string `json:"about,omitempty"`
	// API is the model API the client speaks: openai, anthropic or gemini
	// (the scripted endpoint speaks them all; this is for the report).
	API string `json:"api"`
	// Transports are the twin's transports the adapter can point the
	// client at, the first the default: stdio, http.
	Transports []string `json:"transports"`
	// Args go after the client's command; Env is added to its
	// environment; Files are written before it starts.
	Args  []string          `json:"args,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	Files []File            `json:"files,omitempty"`
	// Trust is added for the positive control: its args after Args, its
	// env over Env, its files in place of those with the same path.
	// Without it the control cannot run and a REFUTED is unbacked.
	Trust *Settings `json:"trust,omitempty"`
	// Missing names a precondition the client family lacks (no MCP
	// support, no non-interactive way to add a server): the verdict is
	// SKIPPED without a run.
	Missing       string `json:"missing,omitempty"`
	MissingReason string `json:"missingReason,omitempty"`
}

// Settings are the trust additions.
type Settings struct {
	Args  []string          `json:"args,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	Files []File            `json:"files,omitempty"`
}

// File is a settings file. Path starts with ~/ (under the client's HOME)
// or is relative (under the workspace). Content is JSON (any value, whose
// strings and keys are filled in) or Text (filled in as is).
type File struct {
	Path string          `json:"path"`
	JSON json.RawMessage `json:"json,omitempty"`
	Text string          `json:"text,omitempty"`
	// When limits the file to one transport ("" every one).
	When string `json:"when,omitempty"`
}

// Vars are the placeholders' values: {{name}} in args, env values, file
// paths and contents.
type Vars struct {
	Prompt       string // what the client is asked
	ServerName   string // the twin's name in the client's settings
	StdioCommand string // the relay's command and its one argument
	StdioArg     string
	MCPURL       string // the twin over streamable HTTP
	ModelURL     string // the scripted model's base URL (no /v1)
	Home         string
	Workspace    string
	Transport    string
}

func (v Vars) replacer() *strings.Replacer {
	return strings.NewReplacer("{{prompt}}", v.Prompt, "{{serverName}}", v.ServerName, "{{stdioCommand}}", v.StdioCommand,
		"{{stdioArg}}", v.StdioArg, "{{mcpURL}}", v.MCPURL, "{{modelURL}}", v.ModelURL, "{{home}}", v.Home,
		"{{workspace}}", v.Workspace, "{{transport}}", v.Transport)
}

// Rendered is an adapter filled in for one run.
type Rendered struct {
	Args  []string
	Env   []string // KEY=VAL, sorted
	Files []RenderedFile
}

// RenderedFile is a file to write, at an absolute path.
type RenderedFile struct {
	Path    string
	Content string
}

// ErrAdapter marks an adapter that is malformed or would approve
// everything.
var ErrAdapter = errors.New("adapter")

// maxAdapter bounds an adapter file.
const maxAdapter = 1 << 20

// Load reads an adapter: a built-in's name or a JSON file's path.
func Load(nameOrPath string) (*Adapter, error) {
	if a, ok := Builtin(nameOrPath); ok {
		return a, nil
	}
	if !strings.ContainsAny(nameOrPath, "/.") {
		return nil, fmt.Errorf("%w: no built-in adapter %q (built-ins: %s; or give a file's path)", ErrAdapter, nameOrPath, strings.Join(Names(), ", "))
	}
	b, err := os.ReadFile(nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("reading the adapter: %w", err)
	}
	if len(b) > maxAdapter {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrAdapter, nameOrPath, maxAdapter)
	}
	return Parse(b)
}

// Parse decodes and checks an adapter file.
func Parse(b []byte) (*Adapter, error) {
	var a Adapter
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAdapter, err)
	}
	if err := a.validate(); err != nil {
		return nil, err
	}
	return &a, nil
}

func (a *Adapter) validate() error {
	if a.Name == "" {
		return fmt.Errorf("%w: no name", ErrAdapter)
	}
	switch a.API {
	case "openai", "anthropic", "gemini":
	default:
		return fmt.Errorf("%w %s: api %q is not openai, anthropic or gemini", ErrAdapter, a.Name, a.API)
	}
	switch a.Missing {
	case "", "no-mcp-support", "no-noninteractive-add":
	default:
		return fmt.Errorf("%w %s: missing %q is not no-mcp-support or no-noninteractive-add", ErrAdapter, a.Name, a.Missing)
	}
	if len(a.Transports) == 0 && a.Missing == "" {
		return fmt.Errorf("%w %s: no transports", ErrAdapter, a.Name)
	}
	for _, t := range a.Transports {
		if t != "stdio" && t != "http" {
			return fmt.Errorf("%w %s: transport %q is not stdio or http", ErrAdapter, a.Name, t)
		}
	}
	files := slices.Clone(a.Files)
	if a.Trust != nil {
		files = append(files, a.Trust.Files...)
	}
	for _, f := range files {
		if f.Path == "" || path.IsAbs(f.Path) || strings.Contains(f.Path, "..") {
			return fmt.Errorf("%w %s: file path %q must start with ~/ or be relative, without ..", ErrAdapter, a.Name, f.Path)
		}
		if (len(f.JSON) == 0) == (f.Text == "") {
			return fmt.Errorf("%w %s: file %s needs json or text (one)", ErrAdapter, a.Name, f.Path)
		}
		if f.When != "" && f.When != "stdio" && f.When != "http" {
			return fmt.Errorf("%w %s: file %s: when %q is not stdio or http", ErrAdapter, a.Name, f.Path, f.When)
		}
	}
	return nil
}

// Transport returns the transport to use: want if the adapter has it
// ("" its default).
func (a *Adapter) Transport(want string) (string, error) {
	if want == "" {
		if len(a.Transports) == 0 {
			return "stdio", nil
		}
		return a.Transports[0], nil
	}
	if !slices.Contains(a.Transports, want) {
		return "", fmt.Errorf("%w %s: no %s transport (it has %s)", ErrAdapter, a.Name, want, strings.Join(a.Transports, ", "))
	}
	return want, nil
}

// Render fills the adapter in; trusted adds the Trust settings.
func (a *Adapter) Render(v Vars, trusted bool) (Rendered, error) {
	r := v.replacer()
	var out Rendered
	args := slices.Clone(a.Args)
	env := map[string]string{}
	for k, val := range a.Env {
		env[k] = val
	}
	files := slices.Clone(a.Files)
	if trusted {
		if a.Trust == nil {
			return Rendered{}, fmt.Errorf("%w %s: no trust settings", ErrAdapter, a.Name)
		}
		args = append(args, a.Trust.Args...)
		for k, val := range a.Trust.Env {
			env[k] = val
		}
		for _, f := range a.Trust.Files {
			files = slices.DeleteFunc(files, func(g File) bool { return g.Path == f.Path && (g.When == "" || f.When == "" || g.When == f.When) })
			files = append(files, f)
		}
	}
	for _, s := range args {
		out.Args = append(out.Args, r.Replace(s))
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out.Env = append(out.Env, k+"="+r.Replace(env[k]))
	}
	for _, f := range files {
		if f.When != "" && f.When != v.Transport {
			continue
		}
		p := r.Replace(f.Path)
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			p = path.Join(v.Home, rest)
		} else {
			p = path.Join(v.Workspace, p)
		}
		content := r.Replace(f.Text)
		if len(f.JSON) > 0 {
			var val any
			if err := json.Unmarshal(f.JSON, &val); err != nil {
				return Rendered{}, fmt.Errorf("%w %s: file %s: %v", ErrAdapter, a.Name, f.Path, err)
			}
			b, err := json.MarshalIndent(fill(val, r), "", "  ")
			if err != nil {
				return Rendered{}, fmt.Errorf("%w %s: file %s: %v", ErrAdapter, a.Name, f.Path, err)
			}
			content = string(b) + "\n"
		}
		out.Files = append(out.Files, RenderedFile{Path: p, Content: content})
	}
	return out, nil
}

// fill replaces the placeholders in v's strings and keys.
func fill(v any, r *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		return r.Replace(x)
	case []any:
		for i := range x {
			x[i] = fill(x[i], r)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[r.Replace(k)] = fill(val, r)
		}
		return out
	}
	return v
}

// approveAll are the switches known to approve every tool call, or
// every call of a named tool, in some agent CLI: none may be on in a leg.
// The trust settings may name the twin (a per-server trust), never turn
// these on.
var approveAll = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?i)(^|\s)--?yolo\b`), "--yolo"},
	{regexp.MustCompile(`(?i)(^|\s)-y(\s|$)`), "-y (yolo)"},
	{regexp.MustCompile(`(?i)approval[-_]?mode["'=:\s]+["']?(yolo|auto)`), "approval mode yolo"},
	{regexp.MustCompile(`(?i)dangerously`), "a --dangerously-* switch"},
	{regexp.MustCompile(`(?i)bypass[-_]?permissions`), "bypassPermissions"},
	{regexp.MustCompile(`(?i)--full-auto`), "--full-auto"},
	{regexp.MustCompile(`(?i)(approval[-_]?policy|ask[-_]for[-_]approval|(^|\s)-a)["'=:\s]+["']?never`), "approval policy never"},
	{regexp.MustCompile(`(?i)"autoAccept"\s*:\s*true`), "autoAccept"},
	{regexp.MustCompile(`(?i)--allowed-?tools`), "--allowedTools"},
}

// Check refuses a rendered run, with the client's command, that turns on
// a mode approving everything.
func Check(command []string, r Rendered) error {
	var parts []string
	parts = append(parts, strings.Join(command, " "), strings.Join(r.Args, " "))
	parts = append(parts, r.Env...)
	for _, f := range r.Files {
		parts = append(parts, f.Content)
	}
	for _, p := range parts {
		for _, a := range approveAll {
			if a.re.MatchString(p) {
				return fmt.Errorf("%w: %s approves every call, and the differential would mean nothing: %q", ErrAdapter, a.what, clip(p, 200))
			}
		}
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
