package report

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
)

// FingerprintVersion names the way Fingerprint is computed. It is hashed
// in, so a change of method changes every fingerprint, never a few.
const FingerprintVersion = "mcpsandbox.fingerprint/v3"

// serverTool stands for the tool of a server-level finding (one whose
// Tool is ""); MCP tool names cannot hold parentheses.
const serverTool = "(server)"

// Fingerprint identifies a finding across runs, for baselines, SARIF and
// JUnit: the first 16 hex digits of a sha256 over FingerprintVersion, the
// rule, the tool (or "(server)") and the finding's evidence, normalized,
// deduplicated and sorted. The call number, severity and message are left
// out, so reordering probes or changing a policy keeps it. Normalizing
// drops what differs between two runs of the same behaviour (see
// NormalizeEvidence), and with duplicates gone so does any count.
func Fingerprint(f Finding) string {
	seen := map[string]bool{}
	var ev []string
	for _, e := range f.Evidence {
		n := NormalizeEvidence(e)
		if !seen[n] {
			seen[n] = true
			ev = append(ev, n)
		}
	}
	sort.Strings(ev)
	tool := f.Tool
	if tool == "" {
		tool = serverTool
	}
	h := sha256.New()
	for _, part := range append([]string{FingerprintVersion, f.Rule, tool}, ev...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Placeholders for the run-specific parts of evidence.
const (
	placeNumber = "<n>"
	placeID     = "<id>"
	placeHex    = "<hex>"
	placeUUID   = "<uuid>"
)

// NormalizeEvidence replaces the parts of an evidence item that differ
// from run to run of the same behaviour by placeholders, word by word (a
// word is a run of ASCII letters and digits):
//
//   - a UUID becomes <uuid>;
//   - a Python tempfile name (tmp and 8 of [a-z0-9_]) becomes tmp<id>;
//   - a word of 8 or more hex digits, at least one a decimal digit, becomes
//     <hex> (all-decimal ones too, so that a random hex name that happens
//     to have no letter keeps its fingerprint);
//   - in a name with a word tmp or temp (tmp-123-AbC9xz, tmp.AbC9xz1234,
//     x.tmp-AbCdEf12), a later word of 6 or more characters with a letter
//     becomes <id>;
//   - a 6-character word after ".", "-" or "_" that mixes letters and
//     digits, or has an upper-case letter after the first and a lower-case
//     one, becomes <id> (a mkstemp-style suffix, foo-AbC9xz);
//   - a path component of two hex digits under objects, sha1, sha256 or
//     sha512, or under another such component, becomes <hex>: a store's
//     fan-out by hash (.git/objects/9d, cacache's sha512/9d/3a);
//   - every other run of digits becomes <n>: pids, temp suffixes
//     (.tmp-1234), counts.
//
// Hosts are kept as they are: the word after dns, tls and connect, and the
// host after http's method, up to a "/" (what follows, a URL path or a
// protocol, is normalized).
func NormalizeEvidence(e string) string {
	toks := strings.Split(e, " ")
	skip, host := 0, false
	for i, t := range toks {
		switch {
		case skip > 0:
			skip-- // an HTTP method
			host = skip == 0
		case host:
			host = false
			if t == "query" { // "dns query example.com"
				host = true
				continue
			}
			h, rest, ok := strings.Cut(t, "/")
			if ok {
				toks[i] = h + "/" + normalizeWords(rest)
			}
		case t == "dns" || t == "tls" || t == "connect":
			host = true
		case t == "http":
			skip = 1
		default:
			toks[i] = normalizeWords(t)
		}
	}
	return strings.Join(toks, " ")
}

// normalizeWords applies NormalizeEvidence's rules to text with no host.
func normalizeWords(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if !isAlnum(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		if n := uuidAt(s[i:]); n > 0 {
			b.WriteString(placeUUID)
			i += n
			continue
		}
		if n := pyTempAt(s[i:]); n > 0 {
			b.WriteString("tmp" + placeID)
			i += n
			continue
		}
		j := i
		for j < len(s) && isAlnum(s[j]) {
			j++
		}
		if fanOutDir(s, i, j) {
			b.WriteString(placeHex)
		} else {
			b.WriteString(normalizeWord(s[i:j], s[:i]))
		}
		i = j
	}
	return b.String()
}

// fanOutParents name the directories whose two-hex-digit children are a
// store's fan-out by hash: git's objects, content-addressed caches'.
var fanOutParents = map[string]bool{"objects": true, "sha1": true, "sha256": true, "sha512": true}

// fanOutDir says whether s[i:j] is a whole path component of two hex
// digits under a fan-out parent, or under another such component (npm's
// cacache: sha512/9d/3a): a directory named by the hash of what it
// holds, which differs between runs of the same behaviour.
func fanOutDir(s string, i, j int) bool {
	if j-i != 2 || !isHex(s[i]) || !isHex(s[i+1]) || i == 0 || s[i-1] != '/' || (j < len(s) && s[j] != '/') {
		return false
	}
	start := strings.LastIndexAny(s[:i-1], "/ ") + 1
	return fanOutParents[s[start:i-1]] || fanOutDir(s, start, i-1)
}

// normalizeWord replaces one word, given the text before it.
func normalizeWord(w, before string) string {
	letters, digits, upperLater, lower, hexOnly := 0, 0, false, false, true
	for k := 0; k < len(w); k++ {
		c := w[k]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z':
			letters++
			lower = true
		default:
			letters++
			upperLater = upperLater || k > 0
		}
		hexOnly = hexOnly && isHex(c)
	}
	sep := before != "" && strings.ContainsRune(".-_", rune(before[len(before)-1]))
	switch {
	case len(w) >= 8 && hexOnly && digits > 0:
		// Before numbers: one random hex name in forty has no letter.
		return placeHex
	case letters == 0:
		return placeNumber
	case sep && len(w) >= 6 && inTempName(before):
		return placeID
	case sep && len(w) == 6 && (digits > 0 || upperLater && lower):
		return placeID
	}
	var b strings.Builder
	for k := 0; k < len(w); {
		if w[k] < '0' || w[k] > '9' {
			b.WriteByte(w[k])
			k++
			continue
		}
		for k < len(w) && w[k] >= '0' && w[k] <= '9' {
			k++
		}
		b.WriteString(placeNumber)
	}
	return b.String()
}

// inTempName reports whether the name the next word belongs to (the text
// since the last "/" or space) has a word tmp or temp before it.
func inTempName(before string) bool {
	name := before[strings.LastIndexAny(before, "/ ")+1:]
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r > 0x7f || !isAlnum(byte(r)) }) {
		if strings.EqualFold(w, "tmp") || strings.EqualFold(w, "temp") {
			return true
		}
	}
	return false
}

// uuidAt returns the length of a UUID (8-4-4-4-12 hex digits) s starts
// with and that ends a word, or 0.
func uuidAt(s string) int {
	const n = 36
	if len(s) < n || (len(s) > n && isAlnum(s[n])) {
		return 0
	}
	for k := 0; k < n; k++ {
		switch k {
		case 8, 13, 18, 23:
			if s[k] != '-' {
				return 0
			}
		default:
			if !isHex(s[k]) {
				return 0
			}
		}
	}
	return n
}

// pyTempAt returns the length of a Python tempfile name (tmp and 8 of
// [a-z0-9_]) s starts with, or 0.
func pyTempAt(s string) int {
	const n = 3 + 8
	if len(s) < n || !strings.HasPrefix(s, "tmp") || (len(s) > n && (isAlnum(s[n]) || s[n] == '_')) {
		return 0
	}
	for k := 3; k < n; k++ {
		if c := s[k]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return 0
		}
	}
	return n
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
