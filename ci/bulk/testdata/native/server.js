#!/usr/bin/env node
// A minimal MCP server over stdio whose one tool answers from a native
// addon built at install (build/Release/hello.node). Never published;
// packed with npm pack by the tests.
const readline = require('readline');
const addon = require('./build/Release/hello.node');
const tools = [{name: 'hello', description: 'Says hello from C.', annotations: {readOnlyHint: true, openWorldHint: false},
  inputSchema: {type: 'object', properties: {}}}];
function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }
readline.createInterface({input: process.stdin}).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  const ok = (result) => send({jsonrpc: '2.0', id: m.id, result});
  switch (m.method) {
    case 'initialize':
      return ok({protocolVersion: m.params.protocolVersion, capabilities: {tools: {}}, serverInfo: {name: 'fixture-native', version: '1.0.0'}});
    case 'tools/list': return ok({tools});
    case 'tools/call': return ok({content: [{type: 'text', text: addon.hello()}]});
    case 'ping': return ok({});
  }
  send({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'method not found'}});
});
