#!/usr/bin/env node
// Edits a client's configuration: never the entry point a scan chooses.
console.error('echo-mcp-setup: this would edit your MCP client configuration');
process.exit(3);
