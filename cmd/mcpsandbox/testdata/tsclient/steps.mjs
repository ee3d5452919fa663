// A client of the official TypeScript SDK over its own stdin and stdout,
// as list.mjs, that runs the steps its arguments say, in order, and
// writes what it saw as one line on stderr:
//
//	list                 list the tools
//	call:NAME:JSON       call NAME with the arguments JSON
//	callnew:PREFIX:JSON  call the first tool of the last list whose name
//	                     starts with PREFIX and was not called yet
//	callany:PREFIX:JSON  the same, called or not
//	changed:MS           wait for the next list_changed, at most MS
//	sleep:MS             wait MS
//	answer:VALUE         answer the next elicitations with {"token": VALUE}
//	loglevel:LEVEL       ask for the server's logging messages
//	timeout:MS           the calls after it time out after MS (30000 before)
//
// It records the server's logging messages (logs) and the elicitations
// it was asked (elicited):
//
//	TSCLIENT {"lists":[[{"name":...,"annotations":...}]],"calls":[{"name":...,"text":...,"error":...}],"changed":N,"errors":[...]}
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioPipe } from './pipe.mjs';
import { ToolListChangedNotificationSchema, ElicitRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const out = { lists: [], calls: [], changed: 0, errors: [], logs: [], elicited: 0 };
const done = () => {
  process.stderr.write('TSCLIENT ' + JSON.stringify(out) + '\n');
  process.exit(0);
};
setTimeout(() => { out.errors.push('timed out'); done(); }, 90000).unref();

const client = new Client({ name: 'tsclient', version: '1.0.0' }, { capabilities: { elicitation: {} } });
client.onerror = (err) => out.errors.push(String(err));
let answer = null;
client.setRequestHandler(ElicitRequestSchema, async () => {
  out.elicited++;
  return answer === null ? { action: 'decline' } : { action: 'accept', content: { token: answer } };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => out.logs.push(n.params));
let waiting = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  out.changed++;
  const w = waiting;
  waiting = [];
  w.forEach((r) => r());
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const called = new Set();
let callTimeout = 30000;

const call = async (name, args) => {
  called.add(name);
  try {
    const res = await client.callTool({ name, arguments: JSON.parse(args || '{}') }, undefined, { timeout: callTimeout });
    out.calls.push({ name, text: res.content?.[0]?.text ?? null });
  } catch (err) {
    out.calls.push({ name, error: String(err) });
  }
};

try {
  await client.connect(new StdioPipe());
  for (const step of process.argv.slice(2)) {
    const [op, a, ...rest] = step.split(':');
    const b = rest.join(':');
    switch (op) {
      case 'list': {
        const res = await client.listTools(undefined, { timeout: 15000 });
        out.lists.push(res.tools.map((t) => ({ name: t.name, annotations: t.annotations ?? null })));
        break;
      }
      case 'call':
        await call(a, b);
        break;
      case 'callnew':
      case 'callany': {
        const last = out.lists[out.lists.length - 1] ?? [];
        const t = last.find((t) => t.name.startsWith(a) && (op === 'callany' || !called.has(t.name)));
        if (!t) {
          out.errors.push('no new tool ' + a + '*');
          break;
        }
        await call(t.name, b);
        break;
      }
      case 'changed':
        await Promise.race([new Promise((r) => waiting.push(r)), sleep(Number(a))]);
        break;
      case 'sleep':
        await sleep(Number(a));
        break;
      case 'answer':
        answer = a;
        break;
      case 'loglevel':
        await client.setLoggingLevel(a);
        break;
      case 'timeout':
        callTimeout = Number(a);
        break;
    }
  }
} catch (err) {
  out.errors.push('fatal: ' + String(err));
}
await client.close().catch(() => {});
done();
