package probes

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// exampleURL is the URL given to URL-like properties: plain http, of a
// host the sinkhole answers (with --network sinkhole), so that a fetch
// gets a page rather than a refused connection.
const exampleURL = "http://example.com/"

// exampleJSONURL is a URL for a property that fetches JSON: the
// sinkhole answers a path that ends in .json with a JSON page.
const exampleJSONURL = "http://example.com/data.json"

// JSONURLValues are the URLs for a URL property (urlWords) whose name or
// description says it names JSON ("URL of the JSON to fetch"), none for
// others. Bounded: the first maxDescription bytes of the description.
func JSONURLValues(name, desc string) []string {
	ws := Words(name)
	if !slices.ContainsFunc(ws, func(w string) bool { return urlWords[w] }) {
		return nil
	}
	for _, tok := range descWord.FindAllString(clip(desc, maxDescription)+" "+name, -1) {
		if strings.EqualFold(tok, "json") {
			return []string{exampleJSONURL}
		}
	}
	if slices.Contains(ws, "json") {
		return []string{exampleJSONURL}
	}
	return nil
}

// exampleJWT is a JWT-shaped string (header {"alg":"HS256","typ":"JWT"},
// payload {"sub":"example"}) for properties named like tokens: it is no
// credential of anything.
const exampleJWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJleGFtcGxlIn0.c2lnbmF0dXJlLWV4YW1wbGU"

// Words splits a property or tool name into lower-case words at
// camelCase, snake_case, kebab-case, dots, spaces, and before the digits
// that end a word: "targetTimezone" is [target timezone], "HTTPPath"
// [http path], "set_working_dir" [set working dir], "date2" [date 2].
func Words(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) == 0 {
			return
		}
		// Digits that end a word are a word of their own: "date2" is the
		// second date, "text1" a text, "ipv4" an "ipv".
		i := len(cur)
		for i > 0 && unicode.IsDigit(cur[i-1]) {
			i--
		}
		if i > 0 && i < len(cur) {
			out = append(out, strings.ToLower(string(cur[:i])), string(cur[i:]))
		} else {
			out = append(out, strings.ToLower(string(cur)))
		}
		cur = cur[:0]
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0:
			prev := cur[len(cur)-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			// a lower-case letter or digit before, or the last capital of
			// an acronym before a word ("HTTPPath": HTTP, Path)
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// PathKind is what a property names, as far as paths go.
type PathKind int

const (
	PathNone PathKind = iota // not a path
	PathFile                 // a file (or a path of either kind)
	PathDir                  // a directory
	PathDest                 // a destination: a path that should not exist yet
)

func (k PathKind) String() string {
	return [...]string{"none", "file", "dir", "dest"}[k]
}

// pathWords are the whole words that make a name path-like; dirWords
// name directories, destWords destinations. ambiguousWords (source,
// target, root...) are paths only with another path word, a description
// that speaks of paths or files, or none at all.
var (
	pathWords = map[string]bool{"path": true, "paths": true, "file": true, "files": true, "filename": true, "filepath": true,
		"pathname": true, "dir": true, "dirs": true, "dirname": true, "directory": true, "directories": true, "folder": true,
		"folders": true, "root": true, "cwd": true, "src": true, "source": true, "sources": true, "dest": true,
		"destination": true, "target": true, "workdir": true}
	dirWords       = map[string]bool{"dir": true, "dirs": true, "dirname": true, "directory": true, "directories": true, "folder": true, "folders": true, "root": true, "cwd": true}
	destWords      = map[string]bool{"dest": true, "destination": true, "target": true, "new": true}
	ambiguousWords = map[string]bool{"source": true, "sources": true, "src": true, "target": true, "dest": true, "destination": true, "root": true}
	// repoDirWords name a directory among a path's words (repo_path,
	// workspaceDir, project_root): a repository is a directory, the
	// project's (with pathWords' workdir, a path by itself); not with
	// fileWords (repo_file_path is a file in it).
	repoDirWords = map[string]bool{"repo": true, "repository": true, "workspace": true, "project": true, "worktree": true, "workdir": true}
	fileWords    = map[string]bool{"file": true, "files": true, "filename": true, "filepath": true}
	// notPathWords make a name something else whatever its other words:
	// "targetTimezone" is a time zone, "fileContent" text, "sourceLang" a
	// language.
	notPathWords = map[string]bool{"timezone": true, "tz": true, "zone": true, "tag": true, "tags": true, "branch": true,
		"lang": true, "language": true, "locale": true, "currency": true, "format": true, "type": true, "id": true, "ids": true,
		"date": true, "time": true, "url": true, "uri": true, "content": true, "contents": true, "text": true, "body": true,
		"data": true, "encoding": true, "size": true, "count": true, "mode": true, "pattern": true, "glob": true, "query": true,
		"version": true, "hash": true, "sha": true, "commit": true, "ref": true, "user": true, "email": true, "host": true,
		"port": true, "ext": true, "extension": true, "limit": true, "code": true, "unit": true, "units": true, "color": true,
		"colour": true, "number": true, "line": true, "lines": true, "offset": true, "index": true, "key": true, "token": true}
	descPath = regexp.MustCompile(`(?i)\b(path|paths|file|files|filename|directory|directories|folder|folders)\b`)
)

// ClassifyPath says whether a property (name, description, format) names
// a path and of what kind, by the whole words of the name, not
// substrings: "path", "filePath", "target_dir" are paths, "newTag",
// "targetTimezone", "fileContent" are not.
func ClassifyPath(name, desc, format string) PathKind {
	ws := Words(name)
	if len(ws) == 0 {
		return PathNone
	}
	var has, unambiguous, dir, dest bool
	for _, w := range ws {
		if notPathWords[w] {
			return PathNone
		}
		if pathWords[w] {
			has = true
			unambiguous = unambiguous || !ambiguousWords[w]
		}
		dir = dir || dirWords[w] || RepoDir(name)
		dest = dest || destWords[w]
	}
	last := ws[len(ws)-1]
	switch {
	case !has:
		return PathNone
	case !pathWords[last] && last != "name" && last != "names":
		return PathNone // "sourceCode", "rootPassword": the path word is not the head
	case !unambiguous && desc != "" && !descPath.MatchString(desc) && format != "uri":
		return PathNone // "target" described as anything but a path
	case dest:
		return PathDest
	}
	if dir || descSaysDir(desc) {
		return PathDir
	}
	return PathFile
}

// descDirOrFile finds the first word of a description that says what a
// path names: a directory (folder) or a file.
var descDirOrFile = regexp.MustCompile(`(?i)\b(directory|directories|folder|folders|dir|file|files|filename)\b`)

// descSaysDir says whether a path property's description names a
// directory before it names a file: "Directory to search for files" is
// a directory, "The file to read, relative to the root directory" and
// "Path to a file or directory" are files (a path of either kind).
func descSaysDir(desc string) bool {
	m := descDirOrFile.FindStringSubmatch(desc)
	if m == nil {
		return false
	}
	w := strings.ToLower(m[1])
	return w != "file" && w != "files" && w != "filename"
}

// RepoDir says whether a path property's name names a repository or
// the project (repo_path, workspaceDir, projectRoot), not a file in it:
// the existing project directory, even for a tool that creates (a
// branch is made in the repository, not the repository).
func RepoDir(name string) bool {
	ws := Words(name)
	return slices.ContainsFunc(ws, func(w string) bool { return repoDirWords[w] }) &&
		!slices.ContainsFunc(ws, func(w string) bool { return fileWords[w] })
}

// revisionValue is given to properties that name a git revision: every
// repository with a commit has it (the canary clone has commits).
const revisionValue = "HEAD"

var (
	// Not "commit", nor "commit reference" in a description: the items of
	// a list of commits to apply (cherry-pick, revert) are named so, and
	// HEAD, already applied, leaves the operation half done (git's
	// CHERRY_PICK_HEAD), failing the calls after it.
	revisionWords = map[string]bool{"revision": true, "rev": true, "sha": true, "ref": true, "treeish": true, "committish": true, "upstream": true, "onto": true}
	revisionDesc  = regexp.MustCompile(`(?i)\b(commit (?:hash|sha|id)|revision|commit-ish|tree-ish|branch or commit|commit or branch)\b`)
)

// RevisionValues are the strings for a property that names a git
// revision to read or move to, by the last word of its name (commitSha,
// revision, upstream) or by its description ("commit hash", "branch or
// commit"): HEAD. None for others (commitMessage, described as a "Commit
// message"), nor for commits to apply (see revisionWords).
func RevisionValues(name, desc string) []string {
	if len(desc) > maxDescription {
		desc = desc[:maxDescription] // the server writes it; a cut word only misses
	}
	ws := Words(name)
	if (len(ws) > 0 && revisionWords[ws[len(ws)-1]]) || revisionDesc.MatchString(desc) {
		return []string{revisionValue}
	}
	return nil
}

// nameValues are strings for properties whose words say what they hold,
// best first.
var nameValues = []struct {
	words  []string
	values []string
}{
	{[]string{"timezone", "tz", "zone"}, []string{"Europe/Paris", "UTC"}},
	{[]string{"datetime", "timestamp"}, []string{"2026-01-01T00:00:00Z", "2026-01-01"}},
	{[]string{"date", "day", "since", "until", "birthday"}, []string{"2026-01-01", "2026-01-01T00:00:00Z"}},
	{[]string{"time"}, []string{"2026-01-01T12:00:00Z", "12:00"}},
	{[]string{"locale"}, []string{"en-US", "en"}},
	{[]string{"lang", "language"}, []string{"en", "en-US"}},
	{[]string{"country"}, []string{"US", "FR"}},
	{[]string{"currency"}, []string{"USD", "EUR"}},
	{[]string{"color", "colour"}, []string{"#336699", "blue"}},
	{[]string{"url", "uri", "link", "href", "endpoint", "website", "homepage", "webhook"}, []string{exampleURL, "https://example.com/"}},
	{[]string{"host", "hostname", "domain"}, []string{"example.com"}},
	{[]string{"email", "mail"}, []string{"alex@example.com"}},
	{[]string{"uuid", "guid"}, []string{"00000000-0000-4000-8000-000000000000"}},
	{[]string{"version", "semver"}, []string{"1.0.0"}},
	{[]string{"branch"}, []string{"main"}},
	{[]string{"tag"}, []string{"v1.0.0"}},
	{[]string{"phone"}, []string{"+15555550100"}},
	{[]string{"ip", "ipv"}, []string{"192.0.2.1"}},
	{[]string{"cidr", "subnet"}, []string{"192.0.2.0/24"}},
	{[]string{"cron", "crontab"}, []string{"0 0 * * *", "*/5 * * * *"}},
	{[]string{"math", "mathematical", "arithmetic", "formula", "equation"}, []string{"1 + 2", "2 * 3"}},
	{[]string{"unit", "units"}, []string{"m", "metric"}},
	{[]string{"number", "digits", "numeric"}, []string{"12345", "1"}},
}

// pageWords mark a token that is a pagination cursor, not a credential.
var pageWords = map[string]bool{"page": true, "next": true, "cursor": true, "continuation": true, "pagination": true}

// NameValues are the strings a property's name suggests, best first
// (none when it suggests nothing): a time zone for "timezone", a date for
// "startDate", a JWT-shaped string only where a word is "token" or "jwt".
func NameValues(name string) []string {
	ws := Words(name)
	if len(ws) >= 2 && ws[len(ws)-1] == "at" { // createdAt, updated_at
		return []string{"2026-01-01T00:00:00Z"}
	}
	var out []string
	for _, nv := range nameValues {
		if slices.ContainsFunc(ws, func(w string) bool { return slices.Contains(nv.words, w) }) {
			out = append(out, nv.values...)
		}
	}
	if slices.ContainsFunc(ws, func(w string) bool { return w == "token" || w == "jwt" }) &&
		!slices.ContainsFunc(ws, func(w string) bool { return pageWords[w] }) {
		out = append(out, exampleJWT)
	}
	return out
}

// descWord splits a description into lower-case words, digits that end
// a word apart ("IPv4" is [ipv 4]).
var descWord = regexp.MustCompile(`[\p{L}\p{N}]+`)

// DescriptionValues are the strings a property's description suggests:
// those of the first word of it that names what a value holds ("Cron
// expression" a cron schedule, "Target IP" an address, "Source unit" a
// unit), as for a name (see NameValues). Bounded: the first
// maxDescription bytes.
func DescriptionValues(desc string) []string {
	desc = clip(desc, maxDescription)
	for _, tok := range descWord.FindAllString(desc, -1) {
		for _, w := range Words(strings.ToLower(tok)) {
			for _, nv := range nameValues {
				if slices.Contains(nv.words, w) {
					return nv.values
				}
			}
		}
	}
	return nil
}

// clip cuts s to at most n bytes, not inside a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// NoPID is the pid given to a pid property when no process the server
// started is known: one past the largest pid_max Linux allows (2^22), so
// no process has it. 1 (the sandbox's init) or the server's own pid
// would have a kill tool end the scan.
const NoPID = 1 << 22

// PIDLike says whether a property holds a process id: "pid", "targetPid",
// "process_id".
func PIDLike(name string) bool {
	ws := Words(name)
	for i, w := range ws {
		if w == "pid" || w == "pids" || (w == "process" && i+1 < len(ws) && (ws[i+1] == "id" || ws[i+1] == "ids")) {
			return true
		}
	}
	return false
}

// NameNumber is the number a numeric property's name suggests: 0 for
// offsets and indexes, the year for years, NoPID for process ids, else 1
// (a count, a limit, a page).
func NameNumber(name string) float64 {
	if PIDLike(name) {
		return NoPID
	}
	for _, w := range Words(name) {
		switch w {
		case "offset", "skip", "index", "idx", "start", "from":
			return 0
		case "year":
			return 2026
		}
	}
	return 1
}

// Bounds on what is read of a description: the server writes it.
const (
	maxDescription = 2000 // bytes of a description mined for examples
	maxExamples    = 8    // examples taken from one description
	maxExample     = 100  // runes of one example
	negationWindow = 40   // bytes before a quoted example read for a negation
)

var (
	exampleAfter = regexp.MustCompile("(?i)(?:\\be\\.g\\.|\\beg\\.|\\bfor example\\b|\\bfor instance\\b|\\bsuch as\\b|\\bexamples?:)\\s*[:,]?\\s*([\"'`]?[^\\s,;)\"'`]+)")
	oneOf        = regexp.MustCompile(`(?i)\b(?:one of|either|values:|options:|(?:supported|allowed|valid|accepted|available)\s+[a-z]+\s*:|allowed:?)\s*:?\s*([^.;\n]+)`)
	quoted       = regexp.MustCompile("`([^`\\n]+)`|\"([^\"\\n]+)\"|'([^'\\n]+)'")
	listSep      = regexp.MustCompile(`\s*(?:,|\bor\b|\band\b|\|)\s*`)
	// negated ends the text before a quoted value that says what a value
	// must not be or hold.
	negated = regexp.MustCompile(`(?i)\b(?:not|no|never|without|avoid|cannot|can't|don't|mustn't|except|forbidden|disallowed)\b[^.;:]*$`)
)

// DescriptionExamples mines a property's description for example values,
// in the order they appear after their markers: what follows "e.g.",
// "for example", "such as"; the items of "one of a, b, c"; quoted and
// backticked values. Bounded: the first maxDescription bytes, at most
// maxExamples examples of at most maxExample runes.
func DescriptionExamples(desc string) []string {
	desc = clip(desc, maxDescription)
	var out []string
	add := func(v string) {
		v = strings.Trim(strings.TrimSpace(v), "\"'`")
		v = strings.TrimRight(v, ".:")
		if !strings.ContainsFunc(v, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			return // "-", "...": punctuation, no value
		}
		if utf8.RuneCountInString(v) > maxExample || len(out) >= maxExamples || slices.Contains(out, v) {
			return
		}
		out = append(out, v)
	}
	for _, m := range exampleAfter.FindAllStringSubmatch(desc, -1) {
		add(m[1])
	}
	for _, item := range listed(desc) {
		add(item)
	}
	for _, m := range quoted.FindAllStringSubmatchIndex(desc, -1) {
		if negated.MatchString(desc[max(0, m[0]-negationWindow):m[0]]) {
			continue // `must not start with "-"`: what the value must not be
		}
		v := desc[m[0]:m[1]]
		add(v[1 : len(v)-1])
	}
	return out
}

// balanced says whether s closes each bracket it opens.
func balanced(s string) bool {
	var open []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	for _, r := range s {
		switch r {
		case '(', '[', '{':
			open = append(open, r)
		case ')', ']', '}':
			if len(open) == 0 || open[len(open)-1] != pairs[r] {
				return false
			}
			open = open[:len(open)-1]
		}
	}
	return len(open) == 0
}

// listed are the items of the lists a text introduces ("one of a, b",
// "Supported units: m, km"), in order, unbounded: the callers bound them.
func listed(text string) []string {
	var out []string
	for _, m := range oneOf.FindAllStringSubmatch(text, -1) {
		for _, item := range listSep.Split(m[1], -1) {
			// "rgb(r" is a piece of "rgb(r,g,b)", a template cut at its commas
			if !strings.Contains(strings.TrimSpace(item), " ") && balanced(item) {
				out = append(out, item)
			}
		}
	}
	return out
}

// ListedValues are the values of the lists a text introduces (see
// DescriptionExamples), bounded as examples are.
func ListedValues(text string) []string {
	text = clip(text, maxDescription)
	var out []string
	for _, v := range listed(text) {
		v = strings.TrimRight(strings.Trim(strings.TrimSpace(v), "\"'`"), ".:")
		if v == "" || utf8.RuneCountInString(v) > maxExample || slices.Contains(out, v) {
			continue
		}
		if out = append(out, v); len(out) >= maxExamples {
			break
		}
	}
	return out
}
