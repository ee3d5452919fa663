package overlay

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"io"
	"sort"
)

// Content. A store that adds a value where a line already is (a
// knowledge graph's entity whose observations array gains one, in a
// JSON-lines file; a JSON document that gains a member) changes an old
// line, so it is not LinesKept; yet every old value is still there. To
// tell, a snapshot keeps, for a text file within the line bound that
// reads as JSON (one document) or JSON lines (one document a non-blank
// line), a tree of hashes of its values: a modified file whose new tree
// holds the old one (each old member with a value that holds the old
// one, each old array a subsequence of the new, element by element) is
// ContentKept, an additive update. A removed or changed value is not.
// Bounded: at most maxJSONDepth levels and maxJSONNodes values a file;
// past either the file has no tree and the line rule alone judges it.
// CSV rows are lines (LinesKept); YAML and SQLite are not parsed.

const (
	// maxJSONDepth bounds a document's nesting.
	maxJSONDepth = 64
	// maxJSONNodes bounds a document's values.
	maxJSONNodes = 100_000
	// jsonNodeWeight is what one value counts against Limits.MaxLines
	// (a line hash is 8 bytes; a node about 64).
	jsonNodeWeight = 8
)

// jnode is one JSON value: its hash (of its canonical form, keyed with
// the snapshot's seed), its kind, and an object's members (keys sorted)
// or an array's elements.
type jnode struct {
	h    uint64
	kind byte // 'o' object, 'a' array, 's' anything else
	keys []string
	kids []*jnode
}

// jsonTree reads b as one JSON document, or as JSON lines (the file an
// array of its lines' documents); nil when it is neither, or past the
// bounds.
func jsonTree(seed maphash.Seed, b []byte) (*jnode, int) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
		return nil, 0 // not JSON: no parse (every text file is hashed)
	}
	nodes := 0
	if t, ok := parseJSON(seed, trimmed, &nodes); ok {
		return t, nodes
	}
	// JSON lines: every non-blank line a document.
	nodes = 0
	root := &jnode{kind: 'a'}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		t, ok := parseJSON(seed, line, &nodes)
		if !ok {
			return nil, 0
		}
		root.kids = append(root.kids, t)
	}
	if len(root.kids) < 2 {
		return nil, 0 // one line: the document case, which failed
	}
	root.h = hashKids(seed, 'a', nil, root.kids)
	return root, nodes + 1
}

func parseJSON(seed maphash.Seed, b []byte, nodes *int) (*jnode, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, false // more than one document
	}
	return build(seed, v, 0, nodes)
}

func build(seed maphash.Seed, v any, depth int, nodes *int) (*jnode, bool) {
	*nodes++
	if depth > maxJSONDepth || *nodes > maxJSONNodes {
		return nil, false
	}
	switch t := v.(type) {
	case map[string]any:
		n := &jnode{kind: 'o'}
		for k := range t {
			n.keys = append(n.keys, k)
		}
		sort.Strings(n.keys)
		for _, k := range n.keys {
			kid, ok := build(seed, t[k], depth+1, nodes)
			if !ok {
				return nil, false
			}
			n.kids = append(n.kids, kid)
		}
		n.h = hashKids(seed, 'o', n.keys, n.kids)
		return n, true
	case []any:
		n := &jnode{kind: 'a'}
		for _, x := range t {
			kid, ok := build(seed, x, depth+1, nodes)
			if !ok {
				return nil, false
			}
			n.kids = append(n.kids, kid)
		}
		n.h = hashKids(seed, 'a', nil, n.kids)
		return n, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return &jnode{kind: 's', h: maphash.Bytes(seed, append([]byte{'s'}, b...))}, true
}

func hashKids(seed maphash.Seed, kind byte, keys []string, kids []*jnode) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteByte(kind)
	for i, k := range kids {
		if keys != nil {
			h.WriteString(keys[i])
			h.WriteByte(0)
		}
		var b [8]byte
		for j := range b {
			b[j] = byte(k.h >> (8 * j))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

// holds reports whether cur holds every value of old: the same value, an
// object with each of old's members holding old's, or an array of which
// old's elements are a subsequence, each held.
func holds(old, cur *jnode) bool {
	if old == nil || cur == nil {
		return false
	}
	if old.h == cur.h && old.kind == cur.kind {
		return true
	}
	if old.kind != cur.kind {
		return false
	}
	switch old.kind {
	case 'o':
		for i, k := range old.keys {
			j := sort.SearchStrings(cur.keys, k)
			if j >= len(cur.keys) || cur.keys[j] != k || !holds(old.kids[i], cur.kids[j]) {
				return false
			}
		}
		return true
	case 'a':
		j := 0
		for _, c := range cur.kids {
			if j < len(old.kids) && holds(old.kids[j], c) {
				j++
			}
		}
		return j == len(old.kids)
	}
	return false
}
