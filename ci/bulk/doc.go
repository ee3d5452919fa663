// Package bulk scans many MCP server packages on one machine: it reads
// lists of specs, MCP Registry server.json documents and MCP client
// configurations (inputs.go), fetches each package on the host with no
// package code run (npm.go, behind the Installer interface), runs its
// install scripts, where it has any, in a sandbox (install_sandbox.go),
// chooses its entry point (entry.go), scans it as `mcpsandbox scan` does
// (scanner.go) with a status per package (status.go), keeps a resumable
// results directory (run.go), shares a batch between machines and merges
// their results (shard.go, merge.go) and writes a summary (summary.go).
// It is `mcpsandbox bulk`.
package bulk
