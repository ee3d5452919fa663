// Package depguard holds no code, only tests that keep the package graph
// as designed (docs/architecture.md, which they hold to the graph too):
// the parts that need no engine (overlay, probes) import neither Docker,
// the MCP SDK nor package sandbox; the report types (ci/report/...)
// import nothing of the module but themselves; and what runs servers and
// clients (sandbox/...) imports of ci/ only the report types, but for the
// proxy, whose job is to judge at the boundary.
package depguard
