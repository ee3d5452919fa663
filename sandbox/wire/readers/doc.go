// Package readers is the table of docs/readers.md: the cases (one line a
// server writes each) and what mcpsandbox's transports make of them
// (testdata/judged.json). Its test feeds each line, and each line the
// scan and run forward of it, to the readers MCP clients use
// (JavaScript's JSON.parse and the TypeScript SDK, Python's json, Go's
// encoding/json and the Go SDK) and to mcpsandbox's own (package wire),
// and holds each reader to the table: where they part, the scan must
// record an ambiguity, and what is forwarded must read alike to all.
//
// Run it with `go test ./sandbox/wire/readers/` (a Docker engine, the
// node and python images and npm on the host); rewrite the table from
// what the readers do with `-update`. sandbox's TestReaderCasesThrough...
// tests hold judged.json to the code (`go test ./sandbox/ -run
// ReaderCases -update-judged` rewrites it).
package readers
