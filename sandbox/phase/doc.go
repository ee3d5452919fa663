// Package phase runs a command that is not an MCP server (bulk's npm
// install, a build) to its end in a sandbox set up as a server's, and
// records what it did as one phase of a report, judged as a server's
// phases are.
package phase
