// Package readers holds no code: only its test, which feeds the same
// JSON-RPC bytes to the readers MCP clients use (JavaScript's JSON.parse
// and the TypeScript SDK, Python's json, Go's encoding/json and the Go
// SDK) and to mcpsandbox's own (package wire), and holds each reader to
// the table of docs/readers.md: where they part, wire.Check must say so,
// and what wire.Canonical forwards must read alike to all of them.
//
// Run it with `go test ./sandbox/wire/readers/` (a Docker engine, the
// node and python images and npm on the host); rewrite the table from
// what the readers do with `go test ./sandbox/wire/readers/ -update`.
package readers
