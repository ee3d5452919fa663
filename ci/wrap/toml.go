package wrap

// toml.go is Wrap for Codex's config.toml: each [mcp_servers.NAME]
// table's command and args values are replaced where they stand, every
// other byte (comments, order, spacing) kept. The edit is made on
// positions a small scanner finds, then proved: the rewritten file,
// read by a TOML reader, must say what the original said with only
// those two values changed, or nothing is written.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"
)

// ErrTOMLForm marks servers written in a form the rewrite does not edit
// (dotted keys, an inline table, [mcp_servers] with NAME.command): refused.
var ErrTOMLForm = errors.New("servers written in a form not rewritten here")

// tomlServer is where one [mcp_servers.NAME] table's values are.
type tomlServer struct {
	name           string
	command, args  [2]int // value's start and end; [0,0] when absent
	hasCmd, hasArg bool
	lineEnd        int // end of the command's line (after its newline, or the file's end)
}

// WrapTOML is Wrap for a TOML configuration (Codex's config.toml).
func WrapTOML(doc []byte, bin string, runArgs []string) ([]byte, []Entry, error) {
	var orig map[string]any
	if _, err := toml.Decode(string(doc), &orig); err != nil {
		return nil, nil, fmt.Errorf("not TOML: %w", err)
	}
	servers, ok := orig["mcp_servers"].(map[string]any)
	if !ok {
		return nil, nil, errors.New("no mcp_servers in it")
	}
	found, err := scanTOML(doc)
	if err != nil {
		return nil, nil, err
	}
	if len(found) != len(servers) {
		return nil, nil, fmt.Errorf("%w: %d servers, %d of them as [mcp_servers.NAME] tables", ErrTOMLForm, len(servers), len(found))
	}
	want := deepCopy(orig).(map[string]any)
	var edits []edit
	var out []Entry
	for _, s := range found {
		entry, ok := servers[s.name].(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%w: server %q", ErrTOMLForm, s.name)
		}
		command, _ := entry["command"].(string)
		if command == "" {
			if _, remote := entry["url"]; remote {
				out = append(out, Entry{Name: s.name, Why: "a remote server (url): nothing runs here to sandbox"})
			} else {
				out = append(out, Entry{Name: s.name, Why: "no command"})
			}
			continue
		}
		var args []string
		if raw, has := entry["args"]; has {
			list, ok := raw.([]any)
			for _, a := range list {
				str, isStr := a.(string)
				ok = ok && isStr
				args = append(args, str)
			}
			if !ok {
				out = append(out, Entry{Name: s.name, Why: "its args are not strings"})
				continue
			}
		}
		if command == bin && len(args) > 0 && args[0] == "run" {
			out = append(out, Entry{Name: s.name, Why: "wrapped already"})
			continue
		}
		newArgs := append(append(append([]string{"run"}, runArgs...), "--", command), args...)
		edits = append(edits, edit{at: s.command[0], n: s.command[1] - s.command[0], with: []byte(tomlString(bin))})
		if s.hasArg {
			edits = append(edits, edit{at: s.args[0], n: s.args[1] - s.args[0], with: []byte(tomlArray(newArgs))})
		} else {
			line := "args = " + tomlArray(newArgs) + "\n"
			if s.lineEnd == len(doc) && (len(doc) == 0 || doc[len(doc)-1] != '\n') {
				line = "\n" + line
			}
			edits = append(edits, edit{at: s.lineEnd, with: []byte(line)})
		}
		we := want["mcp_servers"].(map[string]any)[s.name].(map[string]any)
		we["command"] = bin
		list := make([]any, len(newArgs))
		for i, a := range newArgs {
			list[i] = a
		}
		we["args"] = list
		out = append(out, Entry{Name: s.name, Wrapped: true})
	}
	res := apply(doc, edits)
	var got map[string]any
	if _, err := toml.Decode(string(res), &got); err != nil || !sameTOML(got, want) {
		return nil, nil, fmt.Errorf("%w: the rewrite would change more than the servers' commands (%v)", ErrTOMLForm, err)
	}
	return res, out, nil
}

// sameTOML is reflect.DeepEqual with NaN equal to NaN: a file that says
// nan somewhere is the same file.
func sameTOML(a, b any) bool {
	a, b = anyList(a), anyList(b)
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameTOML(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameTOML(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	}
	return reflect.DeepEqual(a, b)
}

// anyList is an array of tables ([[x]], []map[string]any) as the []any
// other arrays are, for sameTOML.
func anyList(v any) any {
	if l, ok := v.([]map[string]any); ok {
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out
	}
	return v
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlArray(list []string) string {
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = deepCopy(x)
		}
		return l
	case []map[string]any:
		l := make([]map[string]any, len(t))
		for i, x := range t {
			l[i] = deepCopy(x).(map[string]any)
		}
		return l
	}
	return v
}

// tomlScanner walks a TOML document for the positions of the servers'
// values. It need not read values, only step over them: the result is
// proved by the TOML reader afterwards.
type tomlScanner struct {
	doc []byte
	i   int
}

func scanTOML(doc []byte) ([]tomlServer, error) {
	sc := &tomlScanner{doc: doc}
	var out []tomlServer
	var table []string
	var cur *tomlServer
	for {
		sc.skipSpace(true)
		if sc.i >= len(doc) {
			break
		}
		if doc[sc.i] == '[' {
			array := sc.i+1 < len(doc) && doc[sc.i+1] == '['
			sc.i++
			if array {
				sc.i++
			}
			key, err := sc.key()
			if err != nil {
				return nil, err
			}
			if !sc.expect(']') || array && !sc.expect(']') {
				return nil, fmt.Errorf("a table header at byte %d", sc.i)
			}
			table, cur = key, nil
			if len(key) > 0 && key[0] == "mcp_servers" {
				switch {
				case array || len(key) == 1:
					// [mcp_servers] itself holds NAME.command keys: not edited.
					if array {
						return nil, fmt.Errorf("%w: [[mcp_servers]]", ErrTOMLForm)
					}
				case len(key) == 2:
					out = append(out, tomlServer{name: key[1]})
					cur = &out[len(out)-1]
				}
			}
			sc.restOfLine()
			continue
		}
		key, err := sc.key()
		if err != nil {
			return nil, err
		}
		if !sc.expect('=') {
			return nil, fmt.Errorf("no = after a key at byte %d", sc.i)
		}
		sc.skipSpace(false)
		start := sc.i
		if err := sc.value(); err != nil {
			return nil, err
		}
		end := sc.i
		full := append(append([]string{}, table...), key...)
		if len(full) > 0 && full[0] == "mcp_servers" && (len(table) < 2 || len(key) > 1 && cur != nil && (key[0] == "command" || key[0] == "args")) {
			return nil, fmt.Errorf("%w: %s", ErrTOMLForm, strings.Join(full, "."))
		}
		sc.restOfLine()
		if cur != nil && len(key) == 1 {
			switch key[0] {
			case "command":
				cur.command, cur.hasCmd, cur.lineEnd = [2]int{start, end}, true, sc.i
			case "args":
				cur.args, cur.hasArg = [2]int{start, end}, true
			}
		}
	}
	for i := range out {
		if out[i].hasArg && !out[i].hasCmd {
			out[i].lineEnd = out[i].args[1]
		}
	}
	return out, nil
}

// skipSpace steps over blanks and comments, and newlines when lines.
func (sc *tomlScanner) skipSpace(lines bool) {
	for sc.i < len(sc.doc) {
		switch c := sc.doc[sc.i]; {
		case c == ' ' || c == '\t' || c == '\r':
			sc.i++
		case c == '\n' && lines:
			sc.i++
		case c == '#' && lines:
			for sc.i < len(sc.doc) && sc.doc[sc.i] != '\n' {
				sc.i++
			}
		default:
			return
		}
	}
}

// restOfLine steps past a trailing comment and the newline.
func (sc *tomlScanner) restOfLine() {
	for sc.i < len(sc.doc) && sc.doc[sc.i] != '\n' {
		sc.i++
	}
	if sc.i < len(sc.doc) {
		sc.i++
	}
}

func (sc *tomlScanner) expect(c byte) bool {
	sc.skipSpace(false)
	if sc.i < len(sc.doc) && sc.doc[sc.i] == c {
		sc.i++
		return true
	}
	return false
}

// key reads a dotted key: bare, "basic" or 'literal' parts.
func (sc *tomlScanner) key() ([]string, error) {
	var parts []string
	for {
		sc.skipSpace(false)
		if sc.i >= len(sc.doc) {
			return nil, errors.New("a key cut short")
		}
		switch sc.doc[sc.i] {
		case '"', '\'':
			start := sc.i
			if err := sc.value(); err != nil {
				return nil, err
			}
			var v struct{ K string }
			if _, err := toml.Decode("K = "+string(sc.doc[start:sc.i]), &v); err != nil {
				return nil, fmt.Errorf("a quoted key at byte %d: %w", start, err)
			}
			parts = append(parts, v.K)
		default:
			start := sc.i
			for sc.i < len(sc.doc) && isBareKey(sc.doc[sc.i]) {
				sc.i++
			}
			if sc.i == start {
				return nil, fmt.Errorf("no key at byte %d", start)
			}
			parts = append(parts, string(sc.doc[start:sc.i]))
		}
		sc.skipSpace(false)
		if sc.i < len(sc.doc) && sc.doc[sc.i] == '.' {
			sc.i++
			continue
		}
		return parts, nil
	}
}

func isBareKey(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value steps over one value.
func (sc *tomlScanner) value() error {
	d := sc.doc
	if sc.i >= len(d) {
		return errors.New("a value cut short")
	}
	switch d[sc.i] {
	case '"', '\'':
		q := d[sc.i]
		if sc.i+2 < len(d) && d[sc.i+1] == q && d[sc.i+2] == q {
			// A multi-line string: up to the first run of three quotes
			// not escaped (bytes.Index on the slice: no copy of the rest).
			close := []byte{q, q, q}
			from := sc.i + 3
			end := -1
			for from <= len(d) {
				k := bytes.Index(d[from:], close)
				if k < 0 {
					break
				}
				if q == '"' && escaped(d, from+k) {
					from += k + 1
					continue
				}
				end = from + k
				break
			}
			if end < 0 {
				return errors.New("a multi-line string not closed")
			}
			sc.i = end + 3
			for sc.i < len(d) && d[sc.i] == q { // up to two quotes may close it
				sc.i++
			}
			return nil
		}
		for j := sc.i + 1; j < len(d) && d[j] != '\n'; j++ {
			if q == '"' && d[j] == '\\' {
				j++
				continue
			}
			if d[j] == q {
				sc.i = j + 1
				return nil
			}
		}
		return errors.New("a string not closed")
	case '[':
		sc.i++
		for {
			sc.skipSpace(true)
			if sc.i >= len(d) {
				return errors.New("an array not closed")
			}
			if d[sc.i] == ']' {
				sc.i++
				return nil
			}
			if d[sc.i] == ',' {
				sc.i++
				continue
			}
			if err := sc.value(); err != nil {
				return err
			}
		}
	case '{':
		sc.i++
		for {
			sc.skipSpace(false)
			if sc.i >= len(d) {
				return errors.New("an inline table not closed")
			}
			if d[sc.i] == '}' {
				sc.i++
				return nil
			}
			if d[sc.i] == ',' {
				sc.i++
				continue
			}
			if _, err := sc.key(); err != nil {
				return err
			}
			if !sc.expect('=') {
				return errors.New("an inline table's key without =")
			}
			sc.skipSpace(false)
			if err := sc.value(); err != nil {
				return err
			}
		}
	}
	start := sc.i
	for sc.i < len(d) && !strings.ContainsRune(" \t\r\n,]}#", rune(d[sc.i])) {
		sc.i++
	}
	if sc.i == start {
		return fmt.Errorf("no value at byte %d", start)
	}
	return nil
}

// escaped says whether the quote at i follows an odd run of backslashes.
func escaped(d []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && d[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}
