package bulk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Manifest is what a package's package.json says that the fetch and the
// entry point need.
type Manifest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Bin is a string (one bin, named like the package) or an object of
	// bins by name; see Bins.
	Bin  json.RawMessage `json:"bin,omitempty"`
	Main string          `json:"main,omitempty"`
	// Engines is the runtimes the package says it works on.
	Engines map[string]string `json:"engines,omitempty"`
	// Dependencies are npm specs by name; npm installs the peer ones too.
	Dependencies         map[string]string `json:"dependencies,omitempty"`
	OptionalDependencies map[string]string `json:"optionalDependencies,omitempty"`
	PeerDependencies     map[string]string `json:"peerDependencies,omitempty"`
	// Overrides are npm's (specs, or objects of them), as written.
	Overrides json.RawMessage `json:"overrides,omitempty"`
}

// UnmarshalJSON reads the keys npm reads, spelt as npm spells them: Go's
// decoder alone also takes "VERSION" or "Name" for a field, keys npm
// ignores, so that the two would read different manifests. Of a key given
// twice the last counts, as in JSON.parse.
func (m *Manifest) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*m = Manifest{}
	for _, f := range []struct {
		key  string
		into any
	}{
		{"name", &m.Name}, {"version", &m.Version}, {"bin", &m.Bin}, {"main", &m.Main}, {"engines", &m.Engines},
		{"dependencies", &m.Dependencies}, {"optionalDependencies", &m.OptionalDependencies},
		{"peerDependencies", &m.PeerDependencies}, {"overrides", &m.Overrides},
	} {
		if v, ok := raw[f.key]; ok {
			if err := json.Unmarshal(v, f.into); err != nil {
				return fmt.Errorf("%s: %w", f.key, err)
			}
		}
	}
	return nil
}

// byteOrderMark may begin a package.json: npm skips it.
const byteOrderMark = "\ufeff"

// parseManifest reads a package.json as npm does: a leading byte-order
// mark is skipped.
func parseManifest(b []byte) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(bytes.TrimPrefix(b, []byte(byteOrderMark)), &m); err != nil {
		return Manifest{}, fmt.Errorf("package.json: %w", err)
	}
	return m, nil
}

// Bins returns the package's bins by name: a string bin is named like
// the package, without its scope.
func (m Manifest) Bins() (map[string]string, error) {
	if len(m.Bin) == 0 || string(m.Bin) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(m.Bin, &one) == nil {
		return map[string]string{unscoped(m.Name): one}, nil
	}
	var many map[string]string
	if err := json.Unmarshal(m.Bin, &many); err != nil {
		return nil, fmt.Errorf("package.json bin is neither a string nor an object of strings")
	}
	return many, nil
}

func unscoped(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// Entry is the file the scan runs, and why it was chosen.
type Entry struct {
	// Path is relative to the package's directory, cleaned ("dist/index.js").
	Path string `json:"path"`
	// Bin is the bin chosen, "" when Path is main or named by the input.
	Bin string `json:"bin,omitempty"`
	Why string `json:"why"`
	// Args are the arguments the README's client configuration gives the
	// bin, used when the input gives none.
	Args []string `json:"args,omitempty"`
}

// bannedBinWords are words that, in a bin's name, say it edits a
// client's configuration or the machine rather than serving MCP.
var bannedBinWords = []string{"setup", "install", "uninstall", "remove", "config", "configure"}

// bannedBin says whether a bin's name says setup, install, remove,
// uninstall or config (as a word between -, _ or .).
func bannedBin(name string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' || r == ':' }) {
		if slices.Contains(bannedBinWords, w) {
			return true
		}
	}
	return false
}

// ChooseEntry picks the package's entry point: the input's (a bin name,
// or a file when it starts with ./); else the bin named like the
// package, or the only one, never a bin whose name says setup, install,
// remove, uninstall or config; else main (index.js when main is unset,
// as node has it).
func ChooseEntry(m Manifest, named string) (Entry, error) {
	return ChooseEntryReadme(m, named, nil)
}

// serverBinWords are words that, in a bin's name, say it serves MCP.
var serverBinWords = []string{"mcp", "server", "serve", "stdio"}

// serverBin says whether a bin's name says mcp, server, serve or stdio.
func serverBin(name string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' || r == ':' }) {
		if slices.Contains(serverBinWords, w) {
			return true
		}
	}
	return false
}

// ChooseEntryReadme is ChooseEntry that, before the bins' names, takes
// the line the package's README gives a client's configuration (the bin
// it runs, and its arguments when none is a placeholder); and, of bins
// none named like the package, the only one whose name says mcp, server,
// serve or stdio.
func ChooseEntryReadme(m Manifest, named string, readme []byte) (Entry, error) {
	bins, err := m.Bins()
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrInstall, err)
	}
	clean := func(p string) (string, error) {
		c := path.Clean(strings.TrimPrefix(p, "./"))
		if c == "." || c == ".." || strings.HasPrefix(c, "../") || path.IsAbs(c) {
			return "", fmt.Errorf("%w: entry %q is outside the package", ErrInstall, p)
		}
		return c, nil
	}
	if strings.HasPrefix(named, "./") {
		p, err := clean(named)
		if err != nil {
			return Entry{}, err
		}
		return Entry{Path: p, Why: "the file the input runs"}, nil
	}
	if named != "" {
		p, ok := bins[named]
		if !ok {
			return Entry{}, fmt.Errorf("%w: the input names bin %q; the package has %s", ErrInstall, named, binList(bins))
		}
		c, err := clean(p)
		return Entry{Path: c, Bin: named, Why: "the bin the input names"}, err
	}
	var allowed, banned []string
	for _, n := range sortedKeys(bins) {
		if bannedBin(n) {
			banned = append(banned, n)
		} else {
			allowed = append(allowed, n)
		}
	}
	note := ""
	if len(banned) > 0 {
		note = fmt.Sprintf(" (%s left out: the name says setup, install, remove or config)", strings.Join(banned, ", "))
	}
	if lines := ReadmeLines(readme, m.Name, bins); len(lines) > 0 {
		l := lines[0]
		n := l.Bin
		if n == "" && slices.Contains(allowed, unscoped(m.Name)) {
			n = unscoped(m.Name)
		} else if n == "" && len(allowed) == 1 {
			n = allowed[0]
		}
		if p, ok := bins[n]; ok && !bannedBin(n) {
			c, err := clean(p)
			return Entry{Path: c, Bin: n, Args: l.Args, Why: "the bin the README's client configuration runs" + note}, err
		}
	}
	if n := unscoped(m.Name); slices.Contains(allowed, n) {
		c, err := clean(bins[n])
		return Entry{Path: c, Bin: n, Why: "the bin named like the package" + note}, err
	}
	if len(allowed) == 1 {
		c, err := clean(bins[allowed[0]])
		return Entry{Path: c, Bin: allowed[0], Why: "the only bin" + note}, err
	}
	var servers []string
	for _, n := range allowed {
		if serverBin(n) {
			servers = append(servers, n)
		}
	}
	if len(servers) == 1 {
		c, err := clean(bins[servers[0]])
		return Entry{Path: c, Bin: servers[0], Why: "the only bin whose name says it serves (mcp, server)" + note}, err
	}
	why := "no bin"
	if len(allowed) > 1 {
		why = fmt.Sprintf("bins %s, none named like the package", strings.Join(allowed, ", "))
	} else if len(banned) > 0 {
		why = "every bin's name says setup, install, remove or config"
	}
	if m.Main != "" {
		c, err := clean(m.Main)
		return Entry{Path: c, Why: "main: " + why + note}, err
	}
	return Entry{Path: "index.js", Why: "index.js (no main): " + why + note}, nil
}

// Name is what the entry is called in words: its bin, else its file.
func (e Entry) Name() string {
	if e.Bin != "" {
		return e.Bin
	}
	return e.Path
}

func binList(bins map[string]string) string {
	if len(bins) == 0 {
		return "no bin"
	}
	return "bins " + strings.Join(sortedKeys(bins), ", ")
}
