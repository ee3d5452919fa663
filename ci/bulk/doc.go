// Package bulk scans many MCP server packages on one machine: it reads
// lists of specs, MCP Registry server.json documents and MCP client
// configurations (inputs.go), fetches each package on the host with no
// package code run (npm.go, behind the Installer interface), chooses its
// entry point (entry.go), scans it as `mcpsandbox scan` does (scanner.go)
// with a status per package (status.go), keeps a resumable results
// directory (state.go, run.go) and writes a summary (summary.go). It is
// `mcpsandbox bulk`.
package bulk
