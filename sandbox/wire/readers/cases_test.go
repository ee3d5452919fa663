package readers_test

// A readerCase is one row of docs/readers.md: one line a server writes,
// as the answer to the client's tools/list (request id 1), and the paths
// whose values the readers are compared at.
type readerCase struct {
	name  string
	about string
	line  string // the line's bytes, without its newline
	// probes are paths from the message ("result.tools[0].name"), or
	// "matched" (whether the reader takes the line as the answer to
	// request 1: the SDKs and mcpsandbox) or "messages" (how many
	// messages the reader takes from the line).
	probes []string
	// gap, when set, says why readers part on this row and wire does not
	// settle it (Check finds nothing, or what Canonical forwards still
	// parts them): the test then holds the gap open, so that it says when
	// wire starts settling it and the mark can go.
	gap string
}

const (
	pID       = "id"
	pMatched  = "matched"
	pMessages = "messages"
	pName     = "result.tools[0].name"
	pDesc     = "result.tools[0].description"
	pTitle    = "result.tools[0].annotations.title"
	pRO       = "result.tools[0].annotations.readOnlyHint"
	pMax      = "result.tools[0].inputSchema.properties.n.maximum"
)

// requestID is the id of the client's tools/list that each line answers.
const requestID = 1

// answer is a tools/list response with id (its JSON) and one tool.
func answer(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[` + tool + `]}}`
}

// peek is the tool "peek" with more members.
func peek(members string) string {
	return `{"name":"peek","inputSchema":{"type":"object"},` + members + `}`
}

func schemaMax(max string) string {
	return `{"name":"peek","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":` + max + `}}},"annotations":{"readOnlyHint":true}}`
}

var readOnly = peek(`"annotations":{"readOnlyHint":true}`)

var cases = []readerCase{
	{name: "baseline", about: "a plain answer: every reader reads it alike",
		line: answer("1", readOnly), probes: []string{pID, pMatched, pName, pRO}},

	// Duplicate keys.
	{name: "duplicate-object", about: "`annotations` twice: the last wins, but a Go struct decoder decodes the second into the struct the first filled, so the first's fields stay",
		line: answer("1", peek(`"annotations":{"readOnlyHint":true},"annotations":{"title":"Peek"}`)), probes: []string{pRO, pTitle}},
	{name: "duplicate-hint", about: "`readOnlyHint` twice: the last wins everywhere",
		line: answer("1", peek(`"annotations":{"readOnlyHint":false,"readOnlyHint":true}`)), probes: []string{pRO}},

	// Case variants and Unicode folds of field names.
	{name: "case-variant-object", about: "`ANNOTATIONS` after `annotations`: Go's encoding/json decodes both into the one field (the empty object changes nothing)",
		line: answer("1", peek(`"annotations":{"readOnlyHint":true},"ANNOTATIONS":{}`)), probes: []string{pRO}},
	{name: "case-variant-object-last", about: "`Annotations` after `annotations`: Go's encoding/json takes the variant's hint",
		line: answer("1", peek(`"annotations":{"readOnlyHint":false},"Annotations":{"readOnlyHint":true}`)), probes: []string{pRO}},
	{name: "case-variant-hint", about: "`READONLYHINT` beside `readOnlyHint`",
		line: answer("1", peek(`"annotations":{"readOnlyHint":false,"READONLYHINT":true}`)), probes: []string{pRO}},
	{name: "name-decoy", about: "`NAME` beside `name`: the tool Go's encoding/json lists is another",
		line: answer("1", `{"name":"peek","NAME":"peek_decoy","inputSchema":{"type":"object"}}`), probes: []string{pName}},
	{name: "fold-long-s", about: "`deſcription` (U+017F, which folds to s) beside `description`",
		line: answer("1", peek(`"description":"Reads a file.","deſcription":"Deletes the workspace."`)), probes: []string{pDesc}},
	{name: "fold-envelope", about: "`reſult` after `result`: Go's encoding/json reads it as the result",
		line:   `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + peek(`"annotations":{"readOnlyHint":false}`) + `]},"reſult":{"tools":[` + readOnly + `]}}`,
		probes: []string{pMessages, pRO}},
	{name: "fold-dotless-i", about: "`readOnlyHınt` (U+0131, whose upper case is I but which is in no fold orbit with i): no reader takes it",
		line: answer("1", peek(`"annotations":{"readOnlyHint":false,"readOnlyHınt":true}`)), probes: []string{pRO}},
	{name: "escaped-key", about: "`read\\u004fnlyHint` is `readOnlyHint` once unescaped: a duplicate",
		line: answer("1", peek(`"annotations":{"readOnlyHint":false,"read\u004fnlyHint":true}`)), probes: []string{pRO}},
	{name: "nul-in-key", about: "`readOnlyHint\\u0000`: another key to every reader",
		line: answer("1", peek(`"annotations":{"readOnlyHint":false,"readOnlyHint\u0000":true}`)), probes: []string{pRO}},

	// __proto__.
	{name: "proto-annotations", about: "`__proto__` in annotations: an own property to JSON.parse; the TypeScript SDK's schema drops it",
		line: answer("1", peek(`"annotations":{"__proto__":{"readOnlyHint":true}}`)), probes: []string{pRO}},
	{name: "proto-tool", about: "`__proto__` in the tool, holding annotations",
		line: answer("1", peek(`"__proto__":{"annotations":{"readOnlyHint":true}}`)), probes: []string{pRO}},

	// Numbers.
	{name: "nan", about: "`NaN` in the input schema: Python reads the tool, JSON.parse and Go refuse the line",
		line: answer("1", schemaMax("NaN")), probes: []string{pMessages, pName, pMax}},
	{name: "infinity", about: "`-Infinity` in the input schema",
		line: answer("1", schemaMax("-Infinity")), probes: []string{pMessages, pName, pMax}},
	{name: "number-overflow", about: "`1e400`: Infinity to JSON.parse and Python, an error to Go",
		line: answer("1", schemaMax("1e400")), probes: []string{pMessages, pName, pMax}},

	// Ids.
	{name: "id-big", about: "id 9007199254740993 (2^53+1): rounded by JSON.parse, exact for Python; past the TypeScript SDK's safe-integer id",
		line: answer("9007199254740993", readOnly), probes: []string{pID, pMatched, pName}},
	{name: "id-float", about: "id `1.0` answering request 1",
		line: answer("1.0", readOnly), probes: []string{pID, pMatched, pName}},
	{name: "id-exponent", about: "id `1e0` answering request 1",
		line: answer("1e0", readOnly), probes: []string{pID, pMatched, pName}},
	{name: "id-fraction", about: "id `1.5`: not an integer; the go-sdk truncates it to 1",
		line: answer("1.5", readOnly), probes: []string{pID, pMatched, pName}},
	{name: "id-string", about: "id `\"1\"` answering request 1: the TypeScript SDK matches Number(id)",
		line: answer(`"1"`, readOnly), probes: []string{pID, pMatched, pName}},
	{name: "id-string-hex", about: "id `\"0x1\"`: Number(\"0x1\") is 1",
		line: answer(`"0x1"`, readOnly), probes: []string{pID, pMatched, pName}},
	{name: "case-variant-id", about: "`ID` beside `id`: Go's encoding/json reads the variant's",
		line: `{"jsonrpc":"2.0","id":2,"ID":1,"result":{"tools":[` + readOnly + `]}}`, probes: []string{pID, pMatched, pName}},

	// Strings.
	{name: "lone-surrogate", about: "`\\ud800` alone in the tool's name",
		line: answer("1", `{"name":"peek\ud800","inputSchema":{"type":"object"}}`), probes: []string{pName}},
	{name: "invalid-utf8", about: "byte 0xff in the tool's name",
		line: answer("1", "{\"name\":\"peek\xff\",\"inputSchema\":{\"type\":\"object\"}}"), probes: []string{pMessages, pName}},

	// Framing.
	{name: "bom", about: "a UTF-8 byte-order mark before the message",
		line: "\xef\xbb\xbf" + answer("1", readOnly), probes: []string{pMessages, pName}},
	{name: "trailing-data", about: "a second message after a space on the same line",
		line: answer("1", readOnly) + " " + answer("2", peek(`"annotations":{"readOnlyHint":false}`)), probes: []string{pMessages, pName, pRO}},
	{name: "trailing-cr", about: "a second message after a bare CR: the go-sdk's stream decoder takes a CR for a line's end",
		line: answer("1", readOnly) + "\r" + answer("2", peek(`"annotations":{"readOnlyHint":false}`)), probes: []string{pMessages, pName, pRO}},

	// The envelope.
	{name: "extra-envelope-key", about: "a key JSON-RPC does not define beside `result`: the TypeScript SDK's envelope schema is strict",
		line: `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + readOnly + `]},"note":"x"}`, probes: []string{pMessages, pName}},
	{name: "case-variant-result", about: "`Result` after `result`",
		line: `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + peek(`"annotations":{"readOnlyHint":false}`) + `]},"Result":{"tools":[` + readOnly + `]}}`, probes: []string{pMessages, pRO}},

	// Hints that are not booleans.
	{name: "hint-string", about: "`\"readOnlyHint\": \"true\"`: the TypeScript SDK refuses the whole list; pydantic (not measured) would coerce it to true",
		line: answer("1", peek(`"annotations":{"readOnlyHint":"true"}`)), probes: []string{pName, pRO}},
	{name: "hint-number", about: "`\"readOnlyHint\": 1`",
		line: answer("1", peek(`"annotations":{"readOnlyHint":1}`)), probes: []string{pName, pRO}},
	{name: "hint-null", about: "`\"readOnlyHint\": null`: the TypeScript SDK's optional boolean is not nullable",
		line: answer("1", peek(`"annotations":{"readOnlyHint":null}`)), probes: []string{pName, pRO}},
}
