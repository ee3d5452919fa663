#!/usr/bin/env node
// The package's CLI, named like the package: it prints its usage and
// exits 0. Its MCP server is the other bin, as the README says.
console.log("usage: cli-only-mcp <command>\n  the MCP server is cli-only-server");
