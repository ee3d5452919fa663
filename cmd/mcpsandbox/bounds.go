package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/mcpsandbox/mcpsandbox/ci/verdict"
	"github.com/mcpsandbox/mcpsandbox/sandbox"
)

// boundFlags adds the flags of the bounds on what the server sends and
// returns what reads them after parsing.
func boundFlags(fs *pflag.FlagSet) func() (sandbox.Bounds, error) {
	d := sandbox.DefaultBounds()
	msg := fs.Int("max-message", d.MaxMessage>>20, "MiB of one JSON-RPC message from the server; a larger one is refused (its request answered with an error), a protocol-bound problem")
	depth := fs.Int("max-depth", d.MaxDepth, "nesting of one message from the server (under the MCP SDK's 1,000); a deeper one is refused, a protocol-bound problem")
	pages := fs.Int("max-tool-pages", d.MaxToolPages, "pages of tools/list; past it the list is cut, a problem and a tool-list-truncated finding")
	list := fs.Int("max-tool-list", d.MaxToolListBytes>>20, "MiB of all tools/list results; past it the list is cut, a problem and a tool-list-truncated finding")
	tools := fs.Int("max-tools", d.MaxTools, "tools kept from tools/list; past it the list is cut, a problem and a tool-list-truncated finding")
	schema := fs.Int("max-schema", d.MaxSchema>>10, "KiB of one tool's description, title, annotations, inputSchema or outputSchema; past it cut or replaced, a problem (a replaced inputSchema: the tool is not called, a tool-list-truncated finding)")
	result := fs.Int("max-result", d.MaxResultText>>10, "KiB of each call's result text kept in the report; the whole result is counted and hashed (resultBytes, resultSha256)")
	return func() (sandbox.Bounds, error) {
		for _, f := range []struct {
			name string
			v    int
			max  int
		}{{"max-message", *msg, 1 << 10}, {"max-depth", *depth, 999}, {"max-tool-pages", *pages, 1 << 20}, {"max-tool-list", *list, 1 << 10},
			{"max-tools", *tools, 1 << 20}, {"max-schema", *schema, 1 << 20}, {"max-result", *result, 1 << 20}} {
			if f.v <= 0 || f.v > f.max {
				return sandbox.Bounds{}, usageError{fmt.Sprintf("--%s %d: want 1 to %d", f.name, f.v, f.max)}
			}
		}
		return sandbox.Bounds{MaxMessage: *msg << 20, MaxDepth: *depth, MaxToolPages: *pages, MaxToolListBytes: *list << 20,
			MaxTools: *tools, MaxSchema: *schema << 10, MaxResultText: *result << 10}, nil
	}
}

// reportBoundFlag adds --max-report, the bound on the JSON report's bytes
// outside timing, and returns what reads it.
func reportBoundFlag(fs *pflag.FlagSet) func() int64 {
	b := byteSize{n: verdict.DefaultMaxReport, bareWasMiB: true}
	fs.Var(&b, "max-report", "bound on the JSON report's bytes (outside timing); past it the report sheds result texts, then arguments, texts, effect lists: a report-bound problem and a report-truncated finding that fails the gate: "+sizeHelp)
	return func() int64 { return b.n }
}

// runnerMemoryLimit is the runner's soft memory limit: the garbage
// collector works harder as the heap nears it, so that the copies of a
// large message a JSON decoder makes are collected before they pile up.
// GOMEMLIMIT, when set, wins.
const runnerMemoryLimit = 192 << 20

func limitMemory(getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(runnerMemoryLimit)
	}
}
