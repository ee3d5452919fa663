package readers

// A Case is one row of docs/readers.md: one line a server writes, as the
// answer to the client's tools/list (request id 1), and the paths whose
// values the readers are compared at.
type Case struct {
	Name  string
	About string
	Line  string // the line's bytes, without its newline
	// probes are paths from the message ("result.tools[0].name"), or
	// "matched" (whether the reader takes the line as the answer to
	// request 1: the SDKs and mcpsandbox) or "messages" (how many
	// messages the reader takes from the line).
	Probes []string
	// gap, when set, says why readers part on this row and wire does not
	// settle it (Check finds nothing, or what Canonical forwards still
	// parts them): the test then holds the gap open, so that it says when
	// wire starts settling it and the mark can go.
	Gap string
}

// The probes the readers' scripts know beside paths.
const (
	pID       = "id"
	PMatched  = "matched"
	PMessages = "messages"
	pName     = "result.tools[0].name"
	pDesc     = "result.tools[0].description"
	pTitle    = "result.tools[0].annotations.title"
	pRO       = "result.tools[0].annotations.readOnlyHint"
	pMax      = "result.tools[0].inputSchema.properties.n.maximum"
)

// RequestID is the id of the client's tools/list that each line answers.
const RequestID = 1

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

// Cases are the table's rows.
var Cases = []Case{
	{Name: "baseline", About: "a plain answer: every reader reads it alike",
		Line: answer("1", readOnly), Probes: []string{pID, PMatched, pName, pRO}},

	// Duplicate keys.
	{Name: "duplicate-object", About: "`annotations` twice: the last wins, but a Go struct decoder decodes the second into the struct the first filled, so the first's fields stay",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":true},"annotations":{"title":"Peek"}`)), Probes: []string{pRO, pTitle}},
	{Name: "duplicate-hint", About: "`readOnlyHint` twice: the last wins everywhere",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":false,"readOnlyHint":true}`)), Probes: []string{pRO}},

	// Case variants and Unicode folds of field names.
	{Name: "case-variant-object", About: "`ANNOTATIONS` after `annotations`: Go's encoding/json decodes both into the one field (the empty object changes nothing)",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":true},"ANNOTATIONS":{}`)), Probes: []string{pRO}},
	{Name: "case-variant-object-last", About: "`Annotations` after `annotations`: Go's encoding/json takes the variant's hint",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":false},"Annotations":{"readOnlyHint":true}`)), Probes: []string{pRO}},
	{Name: "case-variant-hint", About: "`READONLYHINT` beside `readOnlyHint`",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":false,"READONLYHINT":true}`)), Probes: []string{pRO}},
	{Name: "name-decoy", About: "`NAME` beside `name`: the tool Go's encoding/json lists is another",
		Line: answer("1", `{"name":"peek","NAME":"peek_decoy","inputSchema":{"type":"object"}}`), Probes: []string{pName}},
	{Name: "fold-long-s", About: "`deſcription` (U+017F, which folds to s) beside `description`",
		Line: answer("1", peek(`"description":"Reads a file.","deſcription":"Deletes the workspace."`)), Probes: []string{pDesc}},
	{Name: "fold-envelope", About: "`reſult` after `result`: Go's encoding/json reads it as the result",
		Line:   `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + peek(`"annotations":{"readOnlyHint":false}`) + `]},"reſult":{"tools":[` + readOnly + `]}}`,
		Probes: []string{PMessages, pRO}},
	{Name: "fold-dotless-i", About: "`readOnlyHınt` (U+0131, whose upper case is I but which is in no fold orbit with i): no reader takes it",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":false,"readOnlyHınt":true}`)), Probes: []string{pRO}},
	{Name: "escaped-key", About: "`read\\u004fnlyHint` is `readOnlyHint` once unescaped: a duplicate",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":false,"read\u004fnlyHint":true}`)), Probes: []string{pRO}},
	{Name: "nul-in-key", About: "`readOnlyHint\\u0000`: another key to every reader",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":false,"readOnlyHint\u0000":true}`)), Probes: []string{pRO}},

	// __proto__.
	{Name: "proto-annotations", About: "`__proto__` in annotations: an own property to JSON.parse; the TypeScript SDK's schema drops it",
		Line: answer("1", peek(`"annotations":{"__proto__":{"readOnlyHint":true}}`)), Probes: []string{pRO}},
	{Name: "proto-tool", About: "`__proto__` in the tool, holding annotations",
		Line: answer("1", peek(`"__proto__":{"annotations":{"readOnlyHint":true}}`)), Probes: []string{pRO}},

	// Numbers.
	{Name: "nan", About: "`NaN` in the input schema: Python reads the tool, JSON.parse and Go refuse the line",
		Line: answer("1", schemaMax("NaN")), Probes: []string{PMessages, pName, pMax}},
	{Name: "infinity", About: "`-Infinity` in the input schema",
		Line: answer("1", schemaMax("-Infinity")), Probes: []string{PMessages, pName, pMax}},
	{Name: "number-overflow", About: "`1e400`: Infinity to JSON.parse and Python, an error to Go",
		Line: answer("1", schemaMax("1e400")), Probes: []string{PMessages, pName, pMax}},

	// Ids.
	{Name: "id-big", About: "id 9007199254740993 (2^53+1): rounded by JSON.parse, exact for Python; past the TypeScript SDK's safe-integer id",
		Line: answer("9007199254740993", readOnly), Probes: []string{pID, PMatched, pName}},
	{Name: "id-float", About: "id `1.0` answering request 1",
		Line: answer("1.0", readOnly), Probes: []string{pID, PMatched, pName}},
	{Name: "id-exponent", About: "id `1e0` answering request 1",
		Line: answer("1e0", readOnly), Probes: []string{pID, PMatched, pName}},
	{Name: "id-fraction", About: "id `1.5`: not an integer; the go-sdk truncates it to 1",
		Line: answer("1.5", readOnly), Probes: []string{pID, PMatched, pName}},
	{Name: "id-string", About: "id `\"1\"` answering request 1: the TypeScript SDK matches Number(id)",
		Line: answer(`"1"`, readOnly), Probes: []string{pID, PMatched, pName}},
	{Name: "id-string-hex", About: "id `\"0x1\"`: Number(\"0x1\") is 1",
		Line: answer(`"0x1"`, readOnly), Probes: []string{pID, PMatched, pName}},
	{Name: "case-variant-id", About: "`ID` beside `id`: Go's encoding/json reads the variant's",
		Line: `{"jsonrpc":"2.0","id":2,"ID":1,"result":{"tools":[` + readOnly + `]}}`, Probes: []string{pID, PMatched, pName}},

	// Strings.
	{Name: "lone-surrogate", About: "`\\ud800` alone in the tool's name",
		Line: answer("1", `{"name":"peek\ud800","inputSchema":{"type":"object"}}`), Probes: []string{pName}},
	{Name: "invalid-utf8", About: "byte 0xff in the tool's name",
		Line: answer("1", "{\"name\":\"peek\xff\",\"inputSchema\":{\"type\":\"object\"}}"), Probes: []string{PMessages, pName}},

	// Framing.
	{Name: "bom", About: "a UTF-8 byte-order mark before the message",
		Line: "\xef\xbb\xbf" + answer("1", readOnly), Probes: []string{PMessages, pName}},
	{Name: "trailing-data", About: "a second message after a space on the same line",
		Line: answer("1", readOnly) + " " + answer("2", peek(`"annotations":{"readOnlyHint":false}`)), Probes: []string{PMessages, pName, pRO}},
	{Name: "trailing-cr", About: "a second message after a bare CR: the go-sdk's stream decoder takes a CR for a line's end",
		Line: answer("1", readOnly) + "\r" + answer("2", peek(`"annotations":{"readOnlyHint":false}`)), Probes: []string{PMessages, pName, pRO}},

	// The envelope.
	{Name: "extra-envelope-key", About: "a key JSON-RPC does not define beside `result`: the TypeScript SDK's envelope schema is strict",
		Line: `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + readOnly + `]},"note":"x"}`, Probes: []string{PMessages, pName}},
	{Name: "case-variant-result", About: "`Result` after `result`",
		Line: `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + peek(`"annotations":{"readOnlyHint":false}`) + `]},"Result":{"tools":[` + readOnly + `]}}`, Probes: []string{PMessages, pRO}},

	// Hints that are not booleans.
	{Name: "hint-string", About: "`\"readOnlyHint\": \"true\"`: the TypeScript SDK refuses the whole list; pydantic (not measured) would coerce it to true",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":"true"}`)), Probes: []string{pName, pRO}},
	{Name: "hint-number", About: "`\"readOnlyHint\": 1`",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":1}`)), Probes: []string{pName, pRO}},
	{Name: "hint-null", About: "`\"readOnlyHint\": null`: the TypeScript SDK's optional boolean is not nullable",
		Line: answer("1", peek(`"annotations":{"readOnlyHint":null}`)), Probes: []string{pName, pRO}},
}

// Judged is what mcpsandbox's transports make of a case's line
// (testdata/judged.json, written by sandbox's TestReaderCases... tests):
// the kinds of the ambiguities the scan records, and the lines the scan
// gives its SDK and run gives its client (none: not forwarded).
type Judged struct {
	ScanFound []string `json:"scanFound"`
	Scan      []string `json:"scan"`
	RunFound  []string `json:"runFound,omitempty"`
	Run       []string `json:"run"`
}
