#!/usr/bin/env node
// A minimal MCP server over stdio, with no dependencies: one read-only
// tool. Never published; packed with npm pack by the tests.
const readline = require('readline');
const tools = [{name: 'echo', description: 'Echoes its text.', annotations: {readOnlyHint: true, openWorldHint: false},
  inputSchema: {type: 'object', properties: {text: {type: 'string'}}, required: ['text']}}];
function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }
readline.createInterface({input: process.stdin}).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  const ok = (result) => send({jsonrpc: '2.0', id: m.id, result});
  switch (m.method) {
    case 'initialize':
      return ok({protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'fixture-postinstall', version: '1.0.0'}});
    case 'tools/list': return ok({tools});
    case 'tools/call': return ok({content: [{type: 'text', text: String((m.params.arguments || {}).text)}]});
    case 'ping': return ok({});
  }
  send({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'method not found'}});
});
