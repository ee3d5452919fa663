package bulk

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// readme.go reads what a package's README tells a user to put in their
// client's configuration: the line that starts its server. Of a package
// with several bins, or a bin named like it that is a CLI, it is the
// README's line that a user copies; the entry point follows it.

// ReadmeLine is a server line a README's client configuration gives for
// the package itself.
type ReadmeLine struct {
	// Bin is the bin the line runs (npx -p PKG BIN, or BIN as the command
	// of a global install), "" for the package's default.
	Bin string
	// Args follow it, when none is a placeholder for the user to fill in.
	Args []string
}

// maxReadme bounds the README read.
const maxReadme = 1 << 20

var (
	codeBlockRE = regexp.MustCompile("(?s)```[a-zA-Z0-9]*\\s*\\n(.*?)```")
	// placeholderArg is an argument the user is to replace.
	placeholderArg = regexp.MustCompile(`(?i)(<[^>]*>|\$\{|\{\{|/path/to|your[_-]|xxx|\.\.\.|/Users/|/home/|^[a-z]:\\|username)`)
)

// readReadme reads the package directory's README (any case, .md or
// none), bounded.
func readReadme(dir string) []byte {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		n := strings.ToLower(e.Name())
		if !e.Type().IsRegular() || (n != "readme.md" && n != "readme" && n != "readme.markdown") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil
		}
		defer f.Close()
		b := make([]byte, maxReadme)
		n2, _ := f.Read(b)
		for n2 < len(b) {
			m, err := f.Read(b[n2:])
			n2 += m
			if err != nil || m == 0 {
				break
			}
		}
		return b[:n2]
	}
	return nil
}

// ReadmeLines are the README's server lines for package name and its
// bins: each JSON code block with mcpServers (or servers) whose entry
// runs the package through npx (or a launcher of its kin), or runs one
// of its bins directly.
func ReadmeLines(readme []byte, name string, bins map[string]string) []ReadmeLine {
	var out []ReadmeLine
	for _, m := range codeBlockRE.FindAllSubmatch(readme, 32) {
		var doc map[string]json.RawMessage
		if json.Unmarshal(m[1], &doc) != nil {
			continue
		}
		raw, ok := doc["mcpServers"]
		if !ok {
			raw = doc["servers"]
		}
		var servers map[string]clientServer
		if json.Unmarshal(raw, &servers) != nil {
			continue
		}
		for _, k := range sortedKeys(servers) {
			cs := servers[k]
			line := ReadmeLine{}
			if s, ok, err := ParseLauncher(append([]string{cs.Command}, cs.Args...)); ok && err == nil && s.Kind == KindNPM && s.Name == name {
				line.Bin, line.Args = s.Bin, s.Args
			} else if _, isBin := bins[cs.Command]; isBin {
				line.Bin, line.Args = cs.Command, cs.Args
			} else {
				continue
			}
			for _, a := range line.Args {
				if placeholderArg.MatchString(a) {
					line.Args = nil
					break
				}
			}
			out = append(out, line)
		}
	}
	return out
}
