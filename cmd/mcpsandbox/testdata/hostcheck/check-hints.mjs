// check-hints.mjs: the published kind of hint checker, kept for the bench.
// It runs the server on the host, calls each read-only tool the probe file
// names, and diffs the workspace around each call by hashing every file.
//   node check-hints.mjs WORKSPACE PROBES.json -- COMMAND [ARG...]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const [ws, probeFile, , command, ...args] = process.argv.slice(2);
const probes = JSON.parse(readFileSync(probeFile, "utf8"));
const snapshot = (dir, out = new Map()) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) snapshot(p, out);
    else out.set(p, createHash("sha256").update(readFileSync(p)).digest("hex"));
  }
  return out;
};
const diff = (a, b) => [
  ...[...b].filter(([p, h]) => a.get(p) !== h).map(([p]) => (a.has(p) ? "modified " : "created ") + p),
  ...[...a.keys()].filter((p) => !b.has(p)).map((p) => "deleted " + p),
];

const client = new Client({ name: "check-hints", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, cwd: ws, stderr: "ignore" }));
const { tools } = await client.listTools();
let lies = 0;
let before = snapshot(ws);
for (const tool of tools.filter((t) => t.annotations?.readOnlyHint && t.name in probes)) {
  await client.callTool({ name: tool.name, arguments: probes[tool.name] }).catch(() => {});
  const after = snapshot(ws);
  const changed = diff(before, after);
  before = after;
  if (changed.length) lies++;
  console.log(`${tool.name}: ${changed.length ? "readOnlyHint, but " + changed.join(", ") : "ok"}`);
}
await client.close();
process.exit(lies ? 1 : 0);
