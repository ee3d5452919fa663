package bulk

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// clientServer is one server entry of an MCP client configuration: VS
// Code's mcp.json (servers), Claude Desktop's, Cursor's and .mcp.json
// (mcpServers).
type clientServer struct {
	Type    string            `json:"type" toml:"type"`
	Command string            `json:"command" toml:"command"`
	Args    []string          `json:"args" toml:"args"`
	Env     map[string]string `json:"env" toml:"env"`
	URL     string            `json:"url" toml:"url"`
}

// parseClientConfig reads a configuration's server map, each entry
// becoming a spec: npx and node commands npm specs, docker run an image
// spec, others not scanned here with why.
func parseClientConfig(name string, v any, pointer string) ([]Spec, []InputError) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, []InputError{{Where: name + "#" + pointer, Msg: "want an object of servers by name"}}
	}
	var specs []Spec
	var bad []InputError
	for _, key := range sortedKeys(m) {
		where := name + "#" + pointer + "/" + strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
		b, _ := json.Marshal(m[key])
		var cs clientServer
		if err := json.Unmarshal(b, &cs); err != nil {
			bad = append(bad, InputError{Where: where, Msg: fmt.Sprintf("not a server entry: %v", err)})
			continue
		}
		s, err := clientSpec(cs)
		if err != nil {
			bad = append(bad, InputError{Where: where, Msg: err.Error()})
			continue
		}
		s.Source = where
		specs = append(specs, s)
	}
	return specs, bad
}

// placeholder is a value a client fills in when it starts the server:
// ${input:id}, ${env:NAME}, ${workspaceFolder}.
var placeholder = regexp.MustCompile(`\$\{[^}]*\}`)

// secretWords are the words (between _ or -) of an environment
// variable's name that say it holds a secret.
var secretWords = []string{"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PAT", "CREDENTIALS", "CREDENTIAL", "AUTH"}

// secretName says whether an environment variable's name says it holds a
// secret (GITHUB_PAT, OPENAI_API_KEY; not DB_PATH).
func secretName(n string) bool {
	for _, w := range strings.FieldsFunc(strings.ToUpper(n), func(r rune) bool { return r == '_' || r == '-' }) {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	return false
}

func clientSpec(cs clientServer) (Spec, error) {
	if cs.URL != "" || cs.Type == "http" || cs.Type == "sse" || cs.Type == "streamable-http" {
		return Spec{Kind: KindRemote, Name: cs.URL, Status: StatusNotScannedHere, Why: whyRemote}, nil
	}
	if cs.Command == "" {
		return Spec{}, fmt.Errorf("a server entry with neither command nor url")
	}
	var s Spec
	var missing []string
	for _, k := range sortedKeys(cs.Env) {
		v := cs.Env[k]
		switch {
		case !placeholder.MatchString(v):
			s.Env = append(s.Env, EnvVar{Name: k, Value: v})
		case secretName(k):
			s.Env = append(s.Env, EnvVar{Name: k, Secret: true})
		default:
			missing = append(missing, k)
		}
	}
	for _, a := range cs.Args {
		if placeholder.MatchString(a) {
			missing = append(missing, "argument "+a)
		}
	}
	cmd := path.Base(cs.Command)
	switch cmd {
	case "npx":
		if err := npxSpec(&s, cs.Args); err != nil {
			return Spec{}, err
		}
	case "node":
		if err := nodeSpec(&s, cs.Args); err != nil {
			return Spec{}, err
		}
	case "docker", "podman":
		if err := dockerSpec(&s, cs.Args, &missing); err != nil {
			return Spec{}, err
		}
	case "uvx", "uv", "pipx":
		ps, ok, err := ParseLauncher(append([]string{cs.Command}, cs.Args...))
		if err != nil {
			return Spec{}, err
		}
		if !ok {
			return Spec{Kind: KindOther, Name: strings.Join(append([]string{cs.Command}, cs.Args...), " "), Status: StatusNotScannedHere,
				Why: fmt.Sprintf("%s %s is not a line that runs a package", cmd, strings.Join(cs.Args, " "))}, nil
		}
		ps.Env, ps.Source = s.Env, s.Source
		s = ps
	case "python", "python3":
		return Spec{Kind: KindOther, Name: strings.Join(append([]string{cs.Command}, cs.Args...), " "), Status: StatusNotScannedHere, Why: whyHostScript}, nil
	default:
		return Spec{Kind: KindOther, Name: strings.Join(append([]string{cs.Command}, cs.Args...), " "), Status: StatusNotScannedHere,
			Why: fmt.Sprintf("command %q is neither npx, node nor docker run: not a package this command can fetch", cs.Command)}, nil
	}
	if len(missing) > 0 && s.Status == 0 {
		s.Status, s.Why = StatusNeedsConfig, "filled in by the client, with no value here: "+strings.Join(missing, ", ")
	}
	return s, nil
}

// npxFlagsWithValue are npx's flags that take the next argument.
var npxFlagsWithValue = map[string]bool{"-p": true, "--package": true, "-c": true, "--call": true, "--registry": true, "--cache": true, "--userconfig": true}

// npxSpec reads `npx [-y] [-p PKG] PKG|BIN [ARG...]`.
func npxSpec(s *Spec, args []string) error {
	s.Kind = KindNPM
	var pkg string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") {
			break
		}
		flag, val, hasVal := strings.Cut(a, "=")
		if flag == "-c" || flag == "--call" {
			return fmt.Errorf("npx %s: a shell command, not a package", flag)
		}
		if npxFlagsWithValue[flag] && !hasVal {
			i++
			if i >= len(args) {
				return fmt.Errorf("npx %s: no value", flag)
			}
			val = args[i]
		}
		if flag == "-p" || flag == "--package" {
			if pkg != "" {
				return fmt.Errorf("npx with more than one --package: not one server")
			}
			pkg = val
		}
	}
	if i >= len(args) {
		if pkg == "" {
			return fmt.Errorf("npx without a package")
		}
	}
	rest := args[min(i, len(args)):]
	if pkg == "" {
		pkg, rest = rest[0], rest[1:]
	} else if len(rest) > 0 {
		s.Bin, rest = rest[0], rest[1:]
	}
	name, version, err := splitNPM(pkg)
	if err != nil {
		return err
	}
	s.Name, s.Version, s.Args = name, version, rest
	return nil
}

// nodeSpec reads `node [FLAGS] .../node_modules/PKG/FILE [ARG...]`: the
// package whose installed file it runs. A script outside node_modules is
// not a package.
func nodeSpec(s *Spec, args []string) error {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		i++
	}
	if i >= len(args) {
		return fmt.Errorf("node without a script")
	}
	script := args[i]
	_, after, ok := strings.Cut(script, "node_modules/")
	if !ok {
		s.Kind, s.Name, s.Status = KindOther, "node "+script, StatusNotScannedHere
		s.Why = "node runs a local script, not an installed package: there is nothing to fetch"
		return nil
	}
	parts := strings.Split(after, "/")
	n := 1
	if strings.HasPrefix(parts[0], "@") {
		n = 2
	}
	if len(parts) <= n {
		return fmt.Errorf("node %s: no file in the package", script)
	}
	name := strings.Join(parts[:n], "/")
	if !validNPMName(name) {
		return fmt.Errorf("node %s: %q is not an npm package name", script, name)
	}
	s.Kind, s.Name, s.Bin, s.Args = KindNPM, name, "./"+strings.Join(parts[n:], "/"), args[i+1:]
	return nil
}

// dockerFlagsWithValue are docker run's flags that take the next argument
// (the common ones; an unknown flag with a value is a malformed entry).
var dockerFlagsWithValue = map[string]bool{"-e": true, "--env": true, "-v": true, "--volume": true, "--name": true, "--network": true,
	"--net": true, "-u": true, "--user": true, "-w": true, "--workdir": true, "--entrypoint": true, "-p": true, "--publish": true,
	"--mount": true, "-l": true, "--label": true, "--env-file": true, "-m": true, "--memory": true, "--cpus": true, "--platform": true, "--pull": true}

// dockerSpec reads `docker run [FLAGS] IMAGE [ARG...]`; -e KEY=VAL gives
// the server KEY; -e KEY alone is the client's environment, a secret
// (honeytoken) when its name says so, else a value this input lacks.
func dockerSpec(s *Spec, args []string, missing *[]string) error {
	if len(args) == 0 || args[0] != "run" {
		return fmt.Errorf("docker without run: not a server")
	}
	s.Kind = KindImage
	i := 1
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		flag, val, hasVal := strings.Cut(args[i], "=")
		if dockerFlagsWithValue[flag] && !hasVal {
			i++
			if i >= len(args) {
				return fmt.Errorf("docker run %s: no value", flag)
			}
			val = args[i]
		}
		switch flag {
		case "-e", "--env":
			k, v, ok := strings.Cut(val, "=")
			switch {
			case !ok && slices.ContainsFunc(s.Env, func(e EnvVar) bool { return e.Name == k }):
				// The entry's env gives it (read above).
			case !ok && slices.Contains(*missing, k):
			case ok && !placeholder.MatchString(v):
				s.Env = append(s.Env, EnvVar{Name: k, Value: v})
			case secretName(k):
				s.Env = append(s.Env, EnvVar{Name: k, Secret: true})
			default:
				return fmt.Errorf("docker run -e %s: the value comes from the client's environment; give it in the entry's env", k)
			}
		case "--entrypoint", "--env-file":
			return fmt.Errorf("docker run %s: not supported in bulk (give the command after the image)", flag)
		}
	}
	if i >= len(args) {
		return fmt.Errorf("docker run without an image")
	}
	s.Name, s.Args = args[i], args[i+1:]
	return nil
}
