package overlay

import (
	"bytes"
	"hash/maphash"
	"unicode/utf8"
)

// Lines. An append-only store rewritten whole (a JSON-lines file written
// to a temporary name and renamed over the old one, newest record first
// or in key order) changes bytes before its old end, so it is not
// Appended; yet it keeps every old line, which is an additive update. To
// tell, a snapshot keeps a hash of each line of the text files it hashes
// (up to Limits.LineBound bytes each, Limits.MaxLines lines in all): a
// modified file whose new lines hold every old line, in order, is
// LinesKept.
//
// The line hashes are keyed with a seed drawn per snapshot source
// (hash/maphash), so a server cannot make two different lines collide:
// the outcome is the same for every seed, unless by a chance of about
// one in 2^64 per pair of lines.

// DefaultLineBound is the largest text file whose lines are kept.
const DefaultLineBound = 1 << 20

// DefaultMaxLines bounds the line hashes kept at once, over every file
// (8 bytes each: 32 MiB). Past it a file's lines are not kept, and a
// rewrite of it is judged as any rewrite: the stricter way.
const DefaultMaxLines = 4 << 20

// lineSet holds the hashes of a text file's lines, in order. A pointer,
// so that an Entry stays comparable.
type lineSet struct {
	h []uint64
	// json is the file's values, when it reads as JSON or JSON lines
	// (see content.go); nodes counts them.
	json  *jnode
	nodes int
}

// noLines is the lines of an empty file, one set for all of them (it is
// never written to).
var noLines = &lineSet{h: []uint64{}}

// n counts the lines (0 for none known), a JSON value counting as
// jsonNodeWeight of them.
func (l *lineSet) n() int {
	if l == nil {
		return 0
	}
	return len(l.h) + l.nodes*jsonNodeWeight
}

// lineHashes returns the hashes of the lines of b (split at '\n', a final
// '\r' dropped, the last line with or without its '\n'), or nil when b is
// not text: not UTF-8, or holding a NUL.
func lineHashes(seed maphash.Seed, b []byte) *lineSet {
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return nil
	}
	if len(b) == 0 {
		return noLines
	}
	whole := b
	out := []uint64{}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		out = append(out, maphash.Bytes(seed, bytes.TrimSuffix(line, []byte{'\r'})))
	}
	ls := &lineSet{h: out}
	ls.json, ls.nodes = jsonTree(seed, whole)
	return ls
}

// keepsContent reports whether cur's JSON values hold every one of
// old's (see holds): both must read as JSON.
func keepsContent(old, cur *lineSet) bool {
	return old != nil && cur != nil && holds(old.json, cur.json)
}

// keepsLines reports whether every line of old is in cur, in order (old
// is a subsequence of cur). Unknown lines (nil) keep nothing.
func keepsLines(old, cur *lineSet) bool {
	if old == nil || cur == nil {
		return false
	}
	j := 0
	for _, h := range cur.h {
		if j < len(old.h) && old.h[j] == h {
			j++
		}
	}
	return j == len(old.h)
}
