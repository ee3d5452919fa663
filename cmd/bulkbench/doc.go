// Command bulkbench measures `mcpsandbox bulk` in packages per hour: the
// servers of a list (cmd/bulkbench/servers.txt: 20 small npm servers)
// fetched into a cache first (the warm-up, timed apart), then scanned by
// the real command from that warm cache at each -j given, one fresh
// results directory each, side by side in one run. It prints a Markdown
// table per -j, the packages' seconds at each, and where the seconds of
// one package go (from the -v log of the first -j). See `make bench`.
package main
