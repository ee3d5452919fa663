// read.mjs reads each case's line as two JavaScript readers do, and prints
// what each sees at the case's probe paths (docs/readers.md):
//
//   json-parse  JSON.parse of the line decoded as UTF-8 (Buffer.toString,
//               invalid bytes as U+FFFD), the probes read by plain member
//               access;
//   ts-sdk      the official TypeScript SDK's Client, over a transport
//               that feeds the line to the SDK's own ReadBuffer (stdio
//               framing, deserializeMessage: JSON.parse then
//               JSONRPCMessageSchema) as the answer to the client's
//               tools/list, request id 1: the SDK's Protocol matches it by
//               Number(response.id) and parses the result with
//               ListToolsResultSchema; the probes read the value
//               listTools() resolves to.
//
// Input on stdin: {"requestId":1,"cases":[{"key","line" (base64),
// "probes":[path...]}]}. Output on stdout: {"versions":{...},"results":
// {key:{reader:{probe:cell,"_detail":text}}}}. A cell is a JSON value
// written with ASCII escapes, "absent", "error: STAGE", "unmatched", or
// for the probes "matched" and "messages" yes/no (n/a to a reader that
// matches no request) and a count.
//
// It runs in mcpsandbox/node with the SDK mounted at
// /opt/tsclient/node_modules and this file at /opt/tsclient/read.mjs.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ReadBuffer } from '@modelcontextprotocol/sdk/shared/stdio.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const ABSENT = Symbol('absent');

function parsePath(p) {
  const out = [];
  for (const part of p.split('.')) {
    const m = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (m[1] !== '') out.push(m[1]);
    for (const i of m[2].matchAll(/\[(\d+)\]/g)) out.push(Number(i[1]));
  }
  return out;
}

// walk reads path as client code would: obj[key], which follows the
// prototype chain.
function walk(v, path) {
  for (const k of path) {
    if (v === null || typeof v !== 'object') return ABSENT;
    if (typeof k === 'number') {
      if (!Array.isArray(v) || k >= v.length) return ABSENT;
    } else if (Array.isArray(v)) {
      return ABSENT;
    }
    v = v[k];
    if (v === undefined) return ABSENT;
  }
  return v;
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === 'object') {
    const o = {};
    for (const k of Object.keys(v).sort()) Object.defineProperty(o, k, { value: sortKeys(v[k]), enumerable: true });
    return o;
  }
  return v;
}

function render(v) {
  if (v === ABSENT || v === undefined) return 'absent';
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (v === Infinity) return 'Infinity';
    if (v === -Infinity) return '-Infinity';
  }
  if (typeof v === 'bigint') return v.toString();
  const s = JSON.stringify(sortKeys(v));
  return s.replace(/[\u0080-\uffff]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function short(e) {
  return String(e && e.message ? e.message : e).replace(/\s+/g, ' ').slice(0, 300);
}

function readJSONParse(line, probes) {
  const out = {};
  let msg;
  try {
    msg = JSON.parse(line.toString('utf8'));
  } catch (e) {
    for (const p of probes) out[p] = p === 'messages' ? '0' : 'error: parse';
    out._detail = short(e);
    return out;
  }
  for (const p of probes) {
    if (p === 'messages') out[p] = '1';
    else if (p === 'matched') out[p] = 'n/a';
    else out[p] = render(walk(msg, parsePath(p)));
  }
  return out;
}

// A transport that answers initialize itself and tools/list with the
// case's line, read through the SDK's ReadBuffer.
async function readTSSDK(line, probes, requestId) {
  const out = {};
  const events = [];
  let readMessages = 0;
  let readError; // the stage at which the line failed to read
  let delivered;
  let wake;
  const woken = new Promise(r => { wake = r; });
  const transport = {
    async start() {},
    async close() { this.onclose?.(); },
    async send(message) {
      if (message.method === 'initialize') {
        queueMicrotask(() => this.onmessage?.({
          jsonrpc: '2.0', id: message.id,
          result: { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'readers', version: '0' } },
        }));
        return;
      }
      if (message.method !== 'tools/list') return;
      if (message.id !== requestId) {
        events.push(`tools/list went out with id ${message.id}, not ${requestId}`);
        wake();
        return;
      }
      // As StdioClientTransport does: append the chunk, take messages
      // until none is left; a line that does not read is an error, and
      // the next line is read all the same.
      const rb = new ReadBuffer();
      rb.append(Buffer.concat([line, Buffer.from('\n')]));
      queueMicrotask(() => {
        for (;;) {
          let m;
          try {
            m = rb.readMessage();
          } catch (e) {
            readError ??= e instanceof SyntaxError ? 'parse' : 'envelope';
            events.push('read: ' + short(e));
            continue;
          }
          if (m === null) break;
          readMessages++;
          if (delivered === undefined) delivered = m;
          this.onmessage?.(m);
        }
        wake();
      });
    },
  };
  const client = new Client({ name: 'readers', version: '0' });
  client.onerror = e => { events.push('onerror: ' + short(e)); };
  await client.connect(transport);
  let settled;
  const listing = client.listTools(undefined, { timeout: 10000 }).then(
    r => { settled = { ok: r }; },
    e => { settled = { err: e }; });
  await woken;
  // A line that did not read, or that answers no request, leaves the
  // request waiting: closing ends it. One that answers it has been
  // handed to the request's handler already (Protocol._onresponse runs
  // it in onmessage), which settles it.
  const unmatched = events.some(e => e.includes('unknown message ID'));
  if (delivered === undefined || unmatched) {
    await client.close();
  }
  await listing;
  const matched = delivered !== undefined && !unmatched && !(settled.err && /Connection closed/.test(short(settled.err)));
  for (const p of probes) {
    if (p === 'messages') { out[p] = String(readMessages); continue; }
    if (delivered === undefined) { out[p] = 'error: ' + (readError ?? 'unread'); continue; }
    if (p === 'matched') { out[p] = matched ? 'yes' : 'no'; continue; }
    const path = parsePath(p);
    if (path[0] === 'id') { out[p] = render(walk(delivered, path)); continue; }
    if (path[0] !== 'result') { out[p] = render(walk(delivered, path)); continue; }
    if (!matched) { out[p] = 'unmatched'; continue; }
    if (settled.err) { out[p] = 'error: result'; continue; }
    out[p] = render(walk(settled.ok, path.slice(1)));
  }
  const detail = [...events];
  if (settled?.err && matched) detail.push('listTools: ' + short(settled.err));
  if (detail.length) out._detail = detail.join('; ').slice(0, 600);
  return out;
}

function version(pkg) {
  return JSON.parse(readFileSync(new URL(`./node_modules/${pkg}/package.json`, import.meta.url))).version;
}

const input = JSON.parse(readFileSync(0, 'utf8'));
const results = {};
for (const c of input.cases) {
  const line = Buffer.from(c.line, 'base64');
  results[c.key] = {
    'json-parse': readJSONParse(line, c.probes),
    'ts-sdk': await readTSSDK(line, c.probes, input.requestId),
  };
}
const versions = { node: process.version, '@modelcontextprotocol/sdk': version('@modelcontextprotocol/sdk'), zod: version('zod') };
process.stdout.write(JSON.stringify({ versions, results }) + '\n');
