// Package rules turns a report's observations into findings: each rule
// compares what a tool's annotations claim (quoting the MCP specification)
// with what its calls did, and raises findings at its default severity. A
// Policy then changes severities, turns rules off and ignores tools and
// paths, counting every drop; package verdict puts the two together.
package rules
