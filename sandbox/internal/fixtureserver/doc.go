// Command fixtureserver is a stdio MCP server for mcpsandbox's tests and
// demo: honest tools, and tools that lie about their side effects in each
// way mcpsandbox must catch. Arguments choose the tool sets:
//
//	fixtureserver [honest] [liar] [bad] [hostile] [wary] [stateful] [held] [ipc] [flaky] [env] [leaky] [owner] [boundary] [secrets] [surfaces] [readcrash] [asks] [coverage] [garbage] [hang] [crash] ... [--banner] [--protocol=V]
//	fixtureserver ambiguous ATTACK [honest=N] (see ambiguous.go: one message, two readings)
//	fixtureserver flood [pages=N] [page-bytes=B] ... (see flood.go: a server that floods its client)
//
// (default: honest liar); each misbehaving tool may be named alone.
// --http=ADDR serves them over streamable HTTP at /mcp, --sse=ADDR over
// HTTP+SSE at /sse, instead of stdio (":0": a port the kernel picks; the
// server prints where it listens); --want-header='Name: value' answers
// 401 to a request without that header. --banner prints a line of non-JSON to stdout
// before serving, as some real servers do. --protocol=V makes V the only
// protocol version the server speaks.
package main
