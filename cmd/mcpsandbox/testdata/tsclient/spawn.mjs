// The official TypeScript SDK's client starting a server the way an MCP
// client starts a configuration's entry: the entry (JSON: command, args,
// env) is its first argument. It lists the tools, calls echo, and writes
// what it saw as one line on stdout:
//
//	TSCLIENT {"tools":[...],"call":"...","errors":[...]}
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const entry = JSON.parse(process.argv[2]);
const out = { tools: [], call: null, errors: [] };
try {
  const transport = new StdioClientTransport({ command: entry.command, args: entry.args ?? [], env: { ...process.env, ...(entry.env ?? {}) } });
  const client = new Client({ name: 'spawn', version: '1.0.0' });
  await client.connect(transport);
  const listed = await client.listTools(undefined, { timeout: 60000 });
  out.tools = listed.tools.map((t) => t.name);
  const res = await client.callTool({ name: 'echo', arguments: { text: 'hi' } }, undefined, { timeout: 30000 });
  out.call = res.content?.[0]?.text ?? null;
  await client.close();
} catch (err) {
  out.errors.push(String(err));
}
process.stdout.write('TSCLIENT ' + JSON.stringify(out) + '\n');
process.exit(0);
