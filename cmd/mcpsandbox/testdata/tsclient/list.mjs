// A client of the official TypeScript SDK, as an MCP host's would be,
// over its own stdin and stdout (a Transport built from the SDK's
// ReadBuffer and serializeMessage, as its StdioClientTransport reads a
// server's stdout). It lists the tools, calls "peek" when told (argv
// "call"), lists them again once told they changed (or after a moment),
// and writes what it saw as one line on stderr:
//
//	TSCLIENT {"lists":[[{"name":...,"annotations":...}]],"call":"...","changed":true,"errors":[...]}
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioPipe } from './pipe.mjs';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const out = { lists: [], errors: [], changed: false };
const done = () => {
  process.stderr.write('TSCLIENT ' + JSON.stringify(out) + '\n');
  process.exit(0);
};
setTimeout(() => { out.errors.push('timed out'); done(); }, 50000).unref();

const client = new Client({ name: 'tsclient', version: '1.0.0' }, { capabilities: {} });
client.onerror = (err) => out.errors.push(String(err));
let changed;
const changedOnce = new Promise((resolve) => { changed = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { out.changed = true; changed(); });

const list = async () => {
  const res = await client.listTools(undefined, { timeout: 15000 });
  out.lists.push(res.tools.map((t) => ({ name: t.name, annotations: t.annotations ?? null })));
};

try {
  await client.connect(new StdioPipe());
  await list();
  if (process.argv.includes('call')) {
    const res = await client.callTool({ name: 'peek', arguments: {} }, undefined, { timeout: 15000 });
    out.call = res.content?.[0]?.text ?? null;
    await Promise.race([changedOnce, new Promise((r) => setTimeout(r, 3000))]);
    await list();
  }
} catch (err) {
  out.errors.push('fatal: ' + String(err));
}
await client.close().catch(() => {});
done();
