// Package sandbox runs one untrusted MCP server in a disposable, hardened
// Docker container and speaks MCP to it: the container's lifecycle, the
// MCP session over the attach stream (or HTTP in the container's own
// network namespace), the phases and marks that attribute each side
// effect to the call or phase that caused it, and the evidence
// (transcript, stderr) they leave. It observes; it does not judge.
//
// The drivers build on a Session: the batch scan (sandbox/scan), run's
// proxy (sandbox/proxy), the client test (sandbox/clientrun), bulk's
// install (sandbox/phase); named runs and server states are sandbox/runs.
// See docs/architecture.md.
package sandbox
