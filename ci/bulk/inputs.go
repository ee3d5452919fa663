package bulk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// ErrInput is wrapped by every error of a malformed line or document.
var ErrInput = errors.New("malformed input")

// InputError is one malformed line or document: where, and why. The rest
// of the input still runs.
type InputError struct {
	// Where is FILE:LINE, or FILE#POINTER for a JSON document.
	Where string `json:"where"`
	Msg   string `json:"message"`
}

func (e InputError) Error() string { return e.Where + ": " + e.Msg }

// Unwrap makes every InputError an ErrInput.
func (e InputError) Unwrap() error { return ErrInput }

// maxInput bounds one input file: a list of thousands of specs is far
// below it, and a file past it is not read whole into memory.
const maxInput = 64 << 20

// Parse reads one input named name: a JSON document (server.json, an
// array of them, the registry's list response, or an MCP client
// configuration) when it starts with { or [, else a list of specs. It
// returns the specs in input order and the malformed parts.
func Parse(name string, r io.Reader) ([]Spec, []InputError) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, []InputError{{Where: name, Msg: fmt.Sprintf("reading: %v", err)}}
	}
	if len(b) > maxInput {
		return nil, []InputError{{Where: name, Msg: fmt.Sprintf("larger than %d MiB", maxInput>>20)}}
	}
	trimmed := bytes.TrimLeft(b, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return parseJSON(name, trimmed)
	}
	return ParseList(name, bytes.NewReader(b))
}

// listPrefixes are the kinds a list line may name.
var listPrefixes = map[string]Kind{"npm": KindNPM, "image": KindImage, "pypi": KindPyPI}

// ParseList reads a list of specs, one a line:
//
//	npm:NAME[@VERSION] [bin:BIN] [env:KEY=VAL] [secret:KEY] [-- ARG...]
//	image:REF [env:KEY=VAL] [secret:KEY] [-- ARG...]
//	tgz:PATH [bin:BIN] [env:KEY=VAL] [secret:KEY] [-- ARG...]
//
// Blank lines and lines starting with # are skipped; arguments are split
// on white space (no quoting). secret:KEY gives KEY a honeytoken.
func ParseList(name string, r io.Reader) ([]Spec, []InputError) {
	var specs []Spec
	var bad []InputError
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		where := fmt.Sprintf("%s:%d", name, n)
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			bad = append(bad, InputError{Where: where, Msg: err.Error()})
			continue
		}
		s.Source = where
		specs = append(specs, s)
	}
	if err := sc.Err(); err != nil {
		bad = append(bad, InputError{Where: fmt.Sprintf("%s:%d", name, n+1), Msg: err.Error()})
	}
	return specs, bad
}

func parseLine(line string) (Spec, error) {
	head, args, hasArgs := strings.Cut(line, " -- ")
	if !hasArgs && strings.HasSuffix(head, " --") {
		head = strings.TrimSuffix(head, " --")
	}
	f := strings.Fields(head)
	prefix, ref, ok := strings.Cut(f[0], ":")
	if prefix == tarballPrefix && ok {
		return parseTarballLine(ref, f[1:], args)
	}
	kind, known := listPrefixes[prefix]
	if !ok || !known || ref == "" {
		return Spec{}, fmt.Errorf("%q: want npm:NAME[@VERSION] or image:REF", f[0])
	}
	s := Spec{Kind: kind, Name: ref}
	if kind == KindPyPI {
		name, extras, version, err := pythonPackageArg(ref)
		if err != nil {
			return Spec{}, err
		}
		s.Name, s.Extras, s.Version = name, extras, version
	}
	if kind == KindNPM {
		name, version, err := splitNPM(ref)
		if err != nil {
			return Spec{}, err
		}
		s.Name, s.Version = name, version
	}
	return withOptions(s, f[1:], args)
}

// withOptions adds a line's options (env:, secret:, bin:) and arguments.
func withOptions(s Spec, opts []string, args string) (Spec, error) {
	kind := s.Kind
	for _, a := range opts {
		switch {
		case strings.HasPrefix(a, "env:"):
			k, v, ok := strings.Cut(strings.TrimPrefix(a, "env:"), "=")
			if !ok || k == "" {
				return Spec{}, fmt.Errorf("%q: want env:KEY=VAL", a)
			}
			s.Env = append(s.Env, EnvVar{Name: k, Value: v})
		case strings.HasPrefix(a, "secret:") && len(a) > len("secret:"):
			s.Env = append(s.Env, EnvVar{Name: strings.TrimPrefix(a, "secret:"), Secret: true})
		case strings.HasPrefix(a, "bin:") && len(a) > len("bin:") && (kind == KindNPM || kind == KindPyPI):
			s.Bin = strings.TrimPrefix(a, "bin:")
		default:
			return Spec{}, fmt.Errorf("%q: want env:KEY=VAL, secret:KEY, bin:NAME or -- before the arguments", a)
		}
	}
	s.Args = strings.Fields(args)
	return s, nil
}

// splitNPM splits NAME[@VERSION], the name possibly scoped (@scope/name).
// Specs npm would fetch from elsewhere than the registry (git, URLs,
// files, aliases) are refused: they can run code on the host.
func splitNPM(ref string) (name, version string, err error) {
	name = ref
	if at := strings.LastIndex(ref, "@"); at > 0 {
		name, version = ref[:at], ref[at+1:]
		if version == "" {
			return "", "", fmt.Errorf("%q: empty version after @", ref)
		}
	}
	if !validNPMName(name) {
		return "", "", fmt.Errorf("%q: not an npm package name (git, URL, file and alias specs are refused)", ref)
	}
	if strings.ContainsAny(version, ":/") {
		return "", "", fmt.Errorf("%q: version %q is not a version, range or tag (git, URL and file specs are refused)", ref, version)
	}
	return name, version, nil
}

// validNPMName is npm's rule for new names, loosely: lower case, URL-safe,
// one optional scope.
func validNPMName(n string) bool {
	if n == "" || len(n) > 214 {
		return false
	}
	rest := n
	if strings.HasPrefix(n, "@") {
		scope, pkg, ok := strings.Cut(n[1:], "/")
		if !ok || scope == "" || pkg == "" {
			return false
		}
		rest = scope + pkg
	} else if strings.Contains(n, "/") {
		return false
	}
	if strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "_") {
		return false
	}
	for _, r := range rest {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == '~' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// Why strings of the kinds not scanned here.
const (
	whyHostScript = "a script on the user's machine, not a package: scan it with mcpsandbox scan -- python3 PATH"
	whyRemote     = "a remote server (reached over HTTP) runs elsewhere: there is nothing to sandbox"
	whyMCPB       = "MCPB bundles are not scanned here yet"
)

// parseJSON reads a JSON document: a client configuration (an object with
// servers or mcpServers), the registry's list response (servers, an array
// of {server: ...}), one server.json or an array of them.
func parseJSON(name string, b []byte) ([]Spec, []InputError) {
	var probe any
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, []InputError{{Where: name + lineOf(b, err), Msg: fmt.Sprintf("not JSON: %v", err)}}
	}
	switch v := probe.(type) {
	case []any:
		var specs []Spec
		var bad []InputError
		for i, raw := range v {
			s, e := parseServerJSON(fmt.Sprintf("%s#/%d", name, i), raw)
			specs, bad = append(specs, s...), append(bad, e...)
		}
		return specs, bad
	case map[string]any:
		if _, ok := v["mcpServers"]; ok {
			return parseClientConfig(name, v["mcpServers"], "/mcpServers")
		}
		if servers, ok := v["servers"]; ok {
			if list, ok := servers.([]any); ok {
				// The registry's list response: {"servers":[{"server":{...}}]}.
				var specs []Spec
				var bad []InputError
				for i, item := range list {
					where := fmt.Sprintf("%s#/servers/%d", name, i)
					m, _ := item.(map[string]any)
					srv, ok := m["server"]
					if !ok {
						srv = item // a bare server.json in the list
					} else {
						where += "/server"
					}
					s, e := parseServerJSON(where, srv)
					specs, bad = append(specs, s...), append(bad, e...)
				}
				return specs, bad
			}
			return parseClientConfig(name, servers, "/servers")
		}
		return parseServerJSON(name, v)
	}
	return nil, []InputError{{Where: name, Msg: "want an object or an array"}}
}

// lineOf says at which line a JSON syntax error is, as ":LINE".
func lineOf(b []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset <= int64(len(b)) {
		return fmt.Sprintf(":%d", bytes.Count(b[:se.Offset], []byte("\n"))+1)
	}
	return ""
}

// sortedKeys returns a map's keys sorted, for an order that does not
// depend on the map.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Dedupe drops the specs whose key an earlier one has, and returns the
// kept specs and, for each dropped one, where and which it duplicates.
func Dedupe(specs []Spec) (kept []Spec, dups []InputError) {
	seen := map[string]string{}
	for _, s := range specs {
		k := s.Key()
		if first, ok := seen[k]; ok {
			dups = append(dups, InputError{Where: s.Source, Msg: fmt.Sprintf("%s duplicates %s: scanned once", s, first)})
			continue
		}
		seen[k] = s.Source
		kept = append(kept, s)
	}
	return kept, dups
}
