// Package wrap rewrites an MCP client's configuration so that each of its
// stdio servers starts through `mcpsandbox run` with the same command
// line, and puts it back: every byte it does not change is kept, a
// wrapped entry is left alone, a file it cannot read exactly (JSON with
// comments) is refused, never rewritten past what it says.
package wrap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpsandbox/mcpsandbox/sandbox/wire"
)

// Entry is what Wrap did with one server entry.
type Entry struct {
	Name string
	// Wrapped: its command now runs mcpsandbox run; else Why says why
	// not (wrapped already, remote).
	Wrapped bool
	Why     string
}

// ErrComments marks a file with comments (VS Code's JSONC): refused.
var ErrComments = errors.New("the file has comments, which a rewrite would not keep: refused")

// Wrap returns doc with each stdio server entry (mcpServers or servers)
// run as bin run [runArgs...] -- COMMAND ARG..., and what it did with
// each. An entry whose command is bin and first argument run is wrapped
// already and left as it is.
func Wrap(doc []byte, bin string, runArgs []string) ([]byte, []Entry, error) {
	// Comments first: the reader would take /*c*/"x" for one value.
	if hasComments(doc) {
		return nil, nil, ErrComments
	}
	if !json.Valid(doc) {
		return nil, nil, errors.New("not JSON")
	}
	top, err := wire.ParseObject(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if err := unique(top, "the file"); err != nil {
		return nil, nil, err
	}
	// Every place a client reads servers from: mcpServers (Claude, Cursor,
	// Gemini...), servers (VS Code), and Claude Code's projects.
	var places []json.RawMessage
	for _, k := range []string{"mcpServers", "servers"} {
		if v, ok := member(top, k); ok {
			places = append(places, v)
		}
	}
	if projects, ok := member(top, "projects"); ok {
		if ps, err := wire.ParseObject(projects); err == nil {
			if err := unique(ps, "projects"); err != nil {
				return nil, nil, err
			}
			for _, p := range ps {
				fields, err := wire.ParseObject(p.Val)
				if err != nil {
					continue
				}
				if err := unique(fields, "project "+p.Key); err != nil {
					return nil, nil, err
				}
				if v, ok := member(fields, "mcpServers"); ok {
					places = append(places, v)
				}
			}
		}
	}
	if len(places) == 0 {
		return nil, nil, errors.New("no mcpServers or servers in it")
	}
	var entries wire.Object
	for _, servers := range places {
		es, err := wire.ParseObject(servers)
		if err != nil {
			return nil, nil, fmt.Errorf("its servers are not entries by name: %w", err)
		}
		if err := unique(es, "the servers"); err != nil {
			return nil, nil, err
		}
		entries = append(entries, es...)
	}
	var edits []edit
	var out []Entry
	for _, e := range entries {
		fields, err := wire.ParseObject(e.Val)
		if err != nil {
			out = append(out, Entry{Name: e.Key, Why: "not an object"})
			continue
		}
		if err := unique(fields, "server "+e.Key); err != nil {
			return nil, nil, err
		}
		cmdVal, hasCmd := member(fields, "command")
		var command string
		if !hasCmd || json.Unmarshal(cmdVal, &command) != nil || command == "" {
			if _, remote := member(fields, "url"); remote {
				out = append(out, Entry{Name: e.Key, Why: "a remote server (url): nothing runs here to sandbox"})
			} else {
				out = append(out, Entry{Name: e.Key, Why: "no command"})
			}
			continue
		}
		var args []string
		argsVal, hasArgs := member(fields, "args")
		if hasArgs && json.Unmarshal(argsVal, &args) != nil {
			out = append(out, Entry{Name: e.Key, Why: "its args are not strings"})
			continue
		}
		if command == bin && len(args) > 0 && args[0] == "run" {
			out = append(out, Entry{Name: e.Key, Why: "wrapped already"})
			continue
		}
		newArgs := append(append(append([]string{"run"}, runArgs...), "--", command), args...)
		cb, _ := json.Marshal(bin)
		ab, _ := json.Marshal(newArgs)
		edits = append(edits, edit{at: offset(doc, cmdVal), n: len(cmdVal), with: cb})
		if hasArgs {
			edits = append(edits, edit{at: offset(doc, argsVal), n: len(argsVal), with: ab})
		} else {
			edits = append(edits, edit{at: offset(doc, cmdVal) + len(cmdVal), with: append([]byte(`, "args": `), ab...)})
		}
		out = append(out, Entry{Name: e.Key, Wrapped: true})
	}
	return apply(doc, edits), out, nil
}

// Unwrap returns the original of a file Wrap changed: backup, when the
// file is still what Wrap wrote (its sum, wrote), byte for byte.
func Unwrap(cur, backup []byte, wrote string) ([]byte, error) {
	if Sum(cur) != wrote {
		return nil, errors.New("the file changed since it was wrapped: not restored (its backup is kept)")
	}
	return backup, nil
}

// Sum names a file's content.
func Sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ErrDuplicateKey marks a file with a key twice in one object: a client
// reads the last (JSON.parse), another reader the first: refused.
var ErrDuplicateKey = errors.New("a key twice in one object")

// unique refuses an object with a key twice.
func unique(o wire.Object, where string) error {
	seen := map[string]bool{}
	for _, m := range o {
		if seen[m.Key] {
			return fmt.Errorf("%w: %q in %s", ErrDuplicateKey, m.Key, where)
		}
		seen[m.Key] = true
	}
	return nil
}

func member(o wire.Object, key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Val, true
		}
	}
	return nil, false
}

// offset is where v, a slice of doc, begins in it.
func offset(doc []byte, v []byte) int { return cap(doc) - cap(v) }

type edit struct {
	at, n int
	with  []byte
}

// apply makes the edits (none overlapping).
func apply(doc []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return a.at - b.at })
	var b bytes.Buffer
	last := 0
	for _, e := range edits {
		b.Write(doc[last:e.at])
		b.Write(e.with)
		last = e.at + e.n
	}
	b.Write(doc[last:])
	return b.Bytes()
}

// hasComments says whether doc has a // or /* outside its strings.
func hasComments(doc []byte) bool {
	in := false
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && c == '/' && i+1 < len(doc) && (doc[i+1] == '/' || doc[i+1] == '*'):
			return true
		}
	}
	return false
}
