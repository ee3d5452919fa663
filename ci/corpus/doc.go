// Package corpus scans a list of real stdio MCP servers from npm, as a
// new user would (no probe files, default flags), through `mcpsandbox
// bulk` (one installer: bulk's), and summarizes how much of each the
// scan exercised: `make corpus`.
package corpus
