// Package wire reads a server's JSON-RPC bytes once, as the judge, and
// says where the mainstream client readers would read them otherwise.
//
// The same line means different things to different clients: JavaScript's
// JSON.parse (the TypeScript SDK) is case-sensitive and keeps the last of
// duplicate keys; Go's encoding/json (mcp-go, older go-sdk) fills a struct
// field from any key equal to its name under Unicode case folding, the
// last match winning; Python's json accepts NaN and Infinity. A server
// that knows this shows the judge one tool and the client another. Read
// parses a line strictly (case-sensitive, RFC 8259), lists every place
// where two readers part (an Ambiguity), and re-encodes the line from its
// own reading, so that what is forwarded reads the same to every reader:
// duplicates and case variants of protocol fields dropped (the last exact
// key kept, as JavaScript and Python keep it), `__proto__` dropped, lone
// surrogates and invalid UTF-8 as U+FFFD, integers past 2^53 as the double
// every reader then agrees on. A line that no strict reader takes whole
// (NaN, trailing data, a byte-order mark) is refused: no canonical form.
//
// The table of cases × readers this follows is docs/readers.md.
package wire
