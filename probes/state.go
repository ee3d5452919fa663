package probes

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SetupWords are the verbs of the names of tools that set up state
// others read: set_working_dir, init, open_project, connect,
// create_session, start_server, login, begin_transaction, new_document.
var SetupWords = []string{"set", "init", "initialize", "open", "connect", "create", "start", "login", "begin", "new"}

// placeWords name, in a setup tool's name, the place the other tools work
// in; with a choosing verb (chooseWords) the tool chooses it
// (set_working_dir, open_project) and is called before the other setup
// tools, which may make something there (git_init). create_directory
// makes a place, and chooses none.
var (
	placeWords = map[string]bool{"dir": true, "directory": true, "cwd": true, "folder": true, "root": true, "workdir": true,
		"workspace": true, "project": true, "repo": true, "repository": true, "worktree": true}
	chooseWords = []string{"set", "open"}
)

// IsPlaceSetup says whether a setup tool (see IsSetup) chooses the place
// the others work in: one of its verbs is a choosing one and a word of
// its name a place.
func IsPlaceSetup(tool string, prefix []string) bool {
	return hasVerb(tool, prefix, chooseWords) && slices.ContainsFunc(Words(tool), func(w string) bool { return placeWords[w] })
}

// TeardownWords are the verbs of the names of tools that undo the state
// setup tools made: clear_working_dir, close_session, disconnect, logout.
// Such tools are called last, so that the others find the state there.
var TeardownWords = []string{"clear", "close", "disconnect", "logout", "unset", "end", "stop", "quit", "exit", "shutdown", "terminate"}

// Prefixes of tool names: a namespace most of a server's tools share.
const (
	minPrefixTools  = 2 // tools that must share a prefix for it to be one
	prefixShareNum  = 3 // and at least prefixShareNum/prefixShareDen of
	prefixShareDen  = 4 // the server's tools
	maxPrefixLength = 4 // words of a prefix considered
)

// ServerPrefix is the longest run of leading words that at least three
// quarters of a server's tools (and two) share and go on after: a
// namespace ("git" of git_status, git_set_working_dir), not a verb. Nil
// when there is none. It depends only on the set of names, not on their
// order.
func ServerPrefix(tools []string) []string {
	count := map[string]int{}
	words := map[string][]string{}
	for _, name := range uniqueSorted(tools) {
		ws := Words(name)
		for n := 1; n < len(ws) && n <= maxPrefixLength; n++ {
			k := strings.Join(ws[:n], " ")
			count[k]++
			words[k] = ws[:n]
		}
	}
	n := len(uniqueSorted(tools))
	var best []string
	bestKey := ""
	for k, c := range count {
		if c < minPrefixTools || c*prefixShareDen < n*prefixShareNum {
			continue
		}
		w := words[k]
		if len(w) > len(best) || (len(w) == len(best) && k < bestKey) {
			best, bestKey = w, k
		}
	}
	return best
}

func uniqueSorted(ss []string) []string {
	out := slices.Clone(ss)
	sort.Strings(out)
	return slices.Compact(out)
}

// verbs are the words of a tool's name that may say what it does: its
// first word, and the first word after the server's prefix.
func verbs(tool string, prefix []string) []string {
	ws := Words(tool)
	if len(ws) == 0 {
		return nil
	}
	out := []string{ws[0]}
	if len(prefix) > 0 && len(ws) > len(prefix) && slices.Equal(ws[:len(prefix)], prefix) {
		out = append(out, ws[len(prefix)])
	}
	return out
}

// hasVerb says whether one of the tool's verbs (see verbs) is in list.
func hasVerb(tool string, prefix []string, list []string) bool {
	return slices.ContainsFunc(verbs(tool, prefix), func(v string) bool { return slices.Contains(list, v) })
}

// IsSetup says whether a tool's name makes it a setup tool: its first
// word, or its first word after the server's prefix (see ServerPrefix),
// is one of SetupWords.
func IsSetup(tool string, prefix []string) bool {
	return hasVerb(tool, prefix, SetupWords)
}

// IsTeardown says the same of TeardownWords, for a tool that is not a
// setup tool: the tool undoes state.
func IsTeardown(tool string, prefix []string) bool {
	return !IsSetup(tool, prefix) && hasVerb(tool, prefix, TeardownWords)
}

// Bounds on the values kept from results: the server writes them.
const (
	maxValueBytes   = 256 // a longer value is not kept
	maxPerResult    = 16  // values taken from one result
	maxStateValues  = 64  // values kept per session (the first ones)
	maxResultScan   = 64 << 10
	maxJSONNodes    = 2000
	maxJSONDepth    = 8
	scoreExact      = 3 // the value's key is the property's name
	scoreNamed      = 2 // the property's words name the value's tool or key
	scoreGenericID  = 1 // a plain "id" property takes any id
	minScoreGeneric = scoreGenericID
)

// Value is one id, name or path an earlier result returned.
type Value struct {
	Key   []string // the words of its key ("session id"), ["id"] for a bare UUID
	Value any      // a string or a number (float64)
	From  int      // the seq of the call whose result held it
	Tool  string   // that call's tool
}

// State holds the values earlier results returned, in a session, for
// later calls' id-like properties. Its zero value is empty and ready.
type State struct {
	values []Value
	seen   map[string]bool
}

// Values are the values kept, in the order found.
func (st *State) Values() []Value { return st.values }

var (
	// "id: X", "Session ID = X", "sessionId is X", "pid 42" is not
	// enough: a separator or "is" is needed.
	keyedText = regexp.MustCompile(`\b((?:[A-Za-z][A-Za-z0-9]*[ _-])?(?i:id|pid|uuid|handle)|[a-z][a-zA-Z0-9]*(?:Id|ID|Pid|PID|Uuid|UUID|Handle))\b\s*(?:is\s+|[:=]\s*)["'` + "`" + `]?([A-Za-z0-9][A-Za-z0-9_.:/\-]*)`)
	uuidText  = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)
	pathText  = regexp.MustCompile("[\"'`](/[^\"'`\\s]{1,255})[\"'`]")
)

// Harvest keeps the ids, names and paths in call seq's result (to tool):
// its structured content (any JSON value, nil for none) and its text,
// read as JSON when it is, else for "id: X" and the like, UUIDs and
// quoted absolute paths. Bounded: maxPerResult per result, maxStateValues
// per session, maxValueBytes per value.
func (st *State) Harvest(seq int, tool string, text string, structured any) {
	n := 0
	add := func(key []string, v any) {
		if n >= maxPerResult || len(st.values) >= maxStateValues || len(key) == 0 {
			return
		}
		switch x := v.(type) {
		case string:
			if x == "" || len(x) > maxValueBytes || !utf8.ValidString(x) {
				return
			}
		case float64:
		default:
			return
		}
		k := strings.Join(key, " ") + "\x00" + strconv.Itoa(seq) + "\x00" + toString(v)
		if st.seen == nil {
			st.seen = map[string]bool{}
		}
		if st.seen[k] {
			return
		}
		st.seen[k] = true
		st.values = append(st.values, Value{Key: key, Value: v, From: seq, Tool: tool})
		n++
	}
	nodes := 0
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		nodes++
		if depth > maxJSONDepth || nodes > maxJSONNodes {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys) // a map's order is random: the values' is not
			for _, k := range keys {
				ws := Words(k)
				switch c := x[k].(type) {
				case string, float64:
					if isIDWords(ws) || (len(ws) > 0 && (ws[len(ws)-1] == "name" || ws[len(ws)-1] == "path")) {
						add(ws, c)
					}
				default:
					walk(c, depth+1)
				}
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		}
	}
	if structured != nil {
		walk(structured, 0)
	}
	if len(text) > maxResultScan {
		text = text[:maxResultScan]
	}
	if t := bytes.TrimSpace([]byte(text)); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		var v any
		if json.Unmarshal(t, &v) == nil {
			walk(v, 0)
			return
		}
	}
	for _, m := range keyedText.FindAllStringSubmatch(text, -1) {
		add(Words(m[1]), strings.TrimRight(m[2], ".:,"))
	}
	for _, u := range uuidText.FindAllString(text, -1) {
		add([]string{"id"}, u)
	}
	for _, m := range pathText.FindAllStringSubmatch(text, -1) {
		add([]string{"path"}, m[1])
	}
}

func toString(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s, _ := v.(string)
	return s
}

// idWords end the names of id-like properties.
var idWords = map[string]bool{"id": true, "ids": true, "uuid": true, "pid": true, "handle": true}

func isIDWords(ws []string) bool { return len(ws) > 0 && idWords[ws[len(ws)-1]] }

// IDLike says whether a property holds an id (id, sessionId, session_id,
// pid, uuid, handle) or a name (name, sessionName): the properties that
// are offered values earlier results returned.
func IDLike(name string) bool {
	ws := Words(name)
	return isIDWords(ws) || (len(ws) > 0 && ws[len(ws)-1] == "name")
}

// score says how well value v fits property words pw: scoreExact when
// its key is the property's name, scoreNamed when the property's other
// words name its key or its tool (sessionId and the id create_session
// returned), scoreGenericID when both are plain ids; 0 when it does not
// fit (a name is given only a name of the same thing).
func score(pw []string, v Value) int {
	if slices.Equal(pw, v.Key) {
		return scoreExact
	}
	head := pw[len(pw)-1]
	kh := v.Key[len(v.Key)-1]
	sameKind := head == kh || (idWords[head] && idWords[kh] && head != "pid" && kh != "pid")
	if !sameKind {
		return 0
	}
	qual := pw[:len(pw)-1] // "session" of sessionId
	if len(qual) == 0 {
		if head == "name" {
			return 0
		}
		return scoreGenericID
	}
	tw := Words(v.Tool)
	for _, q := range qual {
		if !slices.Contains(v.Key, q) && !slices.Contains(tw, q) && !slices.Contains(tw, q+"s") {
			return 0
		}
	}
	return scoreNamed
}

// Offer rewrites call arguments: each id-like property present in args
// takes the best-fitting value earlier results returned (see score; the
// latest of equals), where the schema still accepts it; an optional one
// not present is added when a value fits it by name (scoreNamed or
// better). It returns the
// arguments and the seqs of the calls whose values they took (none: args
// unchanged). Paths are left alone: path properties keep the canaries.
func (st *State) Offer(schema, args json.RawMessage) (json.RawMessage, []int) {
	if len(st.values) == 0 {
		return args, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args, nil
	}
	root, err := decodeSchema(schema)
	if err != nil {
		return args, nil
	}
	props, _ := root["properties"].(map[string]any)
	v, err := compile(schema)
	if err != nil {
		return args, nil
	}
	// The properties present, and the optional ones a value fits well
	// (sessionId, where a session's id was returned).
	names := make([]string, 0, len(m)+len(props))
	for k := range m {
		names = append(names, k)
	}
	for k := range props {
		if _, ok := m[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var from []int
	for _, name := range names {
		if !IDLike(name) {
			continue
		}
		pw := Words(name)
		best, bestScore := -1, 0
		for i, val := range st.values {
			if s := score(pw, val); s >= minScoreGeneric && s >= bestScore {
				best, bestScore = i, s
			}
		}
		if _, present := m[name]; best < 0 || (!present && bestScore < scoreNamed) {
			continue
		}
		val := st.values[best]
		ps, _ := props[name].(map[string]any)
		enc, ok := encodeFor(ps, val.Value)
		if !ok || bytes.Equal(enc, m[name]) {
			continue
		}
		old, present := m[name]
		m[name] = enc
		b, _ := json.Marshal(m)
		if validate(v, b) != nil {
			if present {
				m[name] = old
			} else {
				delete(m, name)
			}
			continue
		}
		if !slices.Contains(from, val.From) {
			from = append(from, val.From)
		}
	}
	if len(from) == 0 {
		return args, nil
	}
	sort.Ints(from)
	b, err := json.Marshal(m)
	if err != nil {
		return args, nil
	}
	return b, from
}

// encodeFor encodes v as the property's type wants it: a number for a
// numeric property (from a numeric string too), else a string.
func encodeFor(ps map[string]any, v any) (json.RawMessage, bool) {
	t := typeOf(ps)
	if ts, ok := ps["type"].([]any); ok && slices.Contains(ts, any("string")) {
		t = "string"
	}
	var out any
	switch t {
	case "integer", "number":
		switch x := v.(type) {
		case float64:
			out = x
		case string:
			f, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return nil, false
			}
			out = f
		}
	case "string", "":
		out = toString(v)
	default:
		return nil, false
	}
	b, err := json.Marshal(out)
	return b, err == nil
}

// validation reads a tool's error text as a refusal of its arguments
// (zod, pydantic, ajv and hand-written messages).
var validation = regexp.MustCompile(`(?i)\b(invalid|expected|required|must be|must have|must not|validation|not valid|not allowed|unrecognized|missing|unknown (?:argument|parameter|property|field)|too (?:small|big|long|short))\b`)

// Errors that no other argument fixes: the server's credentials, its
// network, or the state it acts on. A message that reads as one of these
// is not retried as a refusal of the arguments, even when it also says
// "invalid" ("Invalid API key format").
var (
	authError    = regexp.MustCompile(`(?i)(\bapi[ _-]?key\b|\b(?:access|auth|bearer|secret) ?token\b|\bunauthori[sz]ed\b|\bforbidden\b|\bauthenticat|\bcredential|\bpermission denied\b|\baccess denied\b|\b40[13]\b)`)
	networkError = regexp.MustCompile(`(?i)(\bECONNREFUSED\b|\bENOTFOUND\b|\bEAI_AGAIN\b|\bECONNRESET\b|\bETIMEDOUT\b|\bgetaddrinfo\b|\bfetch failed\b|\bnetwork (?:error|is unreachable)\b|\bconnection (?:refused|reset|timed out)\b|\bcould not resolve\b|\brate limit|\bquota\b)`)
	stateError   = regexp.MustCompile(`(?i)(\bnot found\b|\bdoes not exist\b|\bno such (?:file|directory|entity|item|record|table)\b|\bENOENT\b|\balready exists\b|\bEEXIST\b)`)
)

// Error classes, as ErrorClass names them.
const (
	ErrorArgument = "argument"
	ErrorAuth     = "auth"
	ErrorNetwork  = "network"
	ErrorState    = "state"
)

// ErrorClass reads a failed call's message: an auth, network or state
// error (which no other argument fixes), an argument error (a validation
// message), or "" for neither.
func ErrorClass(text string) string {
	if len(text) > maxResultScan {
		text = text[:maxResultScan]
	}
	switch {
	case authError.MatchString(text):
		return ErrorAuth
	case networkError.MatchString(text):
		return ErrorNetwork
	case stateError.MatchString(text) && !validation.MatchString(text):
		return ErrorState
	case validation.MatchString(text):
		return ErrorArgument
	}
	return ""
}

// mcpError is how the TypeScript SDK words an error in an isError result.
var mcpError = regexp.MustCompile(`^\s*MCP error (-3[0-9]{4}):`)

// CodeInvalidParams is JSON-RPC's code for invalid method parameters.
const CodeInvalidParams = -32602

// Refused says whether a call's outcome is a refusal of its arguments,
// worth a retry with the next candidate: a JSON-RPC error -32602; an
// internal or server error (-32603, -32000 to -32099) or an isError
// result whose text reads as a validation message. Pass rpcCode 0 for
// a result.
func Refused(rpcCode int, isError bool, text string) bool {
	if len(text) > maxResultScan {
		text = text[:maxResultScan]
	}
	if m := mcpError.FindStringSubmatch(text); rpcCode == 0 && isError && m != nil {
		// The TypeScript SDK turns what a handler throws into an isError
		// result that names the JSON-RPC code: judged as that code.
		rpcCode, _ = strconv.Atoi(m[1])
	}
	switch {
	case rpcCode == CodeInvalidParams:
		return true
	case rpcCode == codeInternalError || (rpcCode <= codeServerErrorMax && rpcCode >= codeServerErrorMin):
		// A handler that threw on its arguments.
		return ErrorClass(text) == ErrorArgument
	case rpcCode != 0:
		return false // method not found, a bad request: no argument fixes it
	}
	return isError && ErrorClass(text) == ErrorArgument
}

// JSON-RPC's internal error and its range of server errors.
const (
	codeInternalError  = -32603
	codeServerErrorMax = -32000
	codeServerErrorMin = -32099
)
