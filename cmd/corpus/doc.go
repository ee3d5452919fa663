// Command corpus scans the real MCP servers of ci/corpus/servers.txt with
// `mcpsandbox bulk` (fetched and installed by bulk, none of their code run
// on the host; no probe files) and prints how much of each the scan
// exercised. See `make corpus`.
package main
