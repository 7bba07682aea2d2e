// sdk-stream.mjs: long calls with the official TypeScript SDK client over
// streamable HTTP: a call answered on an event stream, a notification on
// the open stream of a running call, and a stream lost after its first
// event that the SDK resumes with GET and Last-Event-ID. The loss is
// injected in the client (injectedCutFetch): the connection is dropped
// as a proxy or a network would drop it.

import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const { values: opt } = parseArgs({
  options: { url: { type: "string" }, workspace: { type: "string" } },
});
const image = process.env.SANDBOX_MCP_IMAGE || "sandbox-mcp/busybox:test";

let cut = null;		// a POST whose body holds this loses its stream
const gets = [];
async function injectedCutFetch(url, init) {
  const res = await fetch(url, init);
  const method = init?.method ?? "GET";
  if (method === "GET")
    gets.push({ status: res.status,
      lastEventId: new Headers(init.headers).get("last-event-id") });
  if (cut === null || method !== "POST" || typeof init.body !== "string" ||
      !init.body.includes(cut) ||
      res.headers.get("content-type") !== "text/event-stream")
    return res;
  cut = null;
  const reader = res.body.getReader();
  let seen = "";
  const body = new ReadableStream({
    async pull(ctrl) {
      if (seen.includes("id:") && seen.includes("\n\n")) {
        await reader.cancel();
        ctrl.error(new Error("connection lost (injected)"));
        return;
      }
      const { value, done } = await reader.read();
      if (done) {
        ctrl.close();
        return;
      }
      seen += new TextDecoder().decode(value);
      ctrl.enqueue(value);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

function output(res, what) {
  assert.equal(res.isError, false, `${what}: ${JSON.stringify(res)}`);
  return res.structuredContent.output;
}

const client = new Client({ name: "sdk-stream-test", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(opt.url), {
  fetch: injectedCutFetch,
  reconnectionOptions: { initialReconnectionDelay: 200,
    maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5,
    maxRetries: 3 },
});
await client.connect(transport);
const created = await client.callTool({ name: "create_sandbox",
  arguments: { image, workspace_root: opt.workspace } });
assert.equal(created.isError, false, JSON.stringify(created));
const sandbox_id = created.structuredContent.id;
const exec = (cmd, extra = {}) => ({ name: "exec_command",
  arguments: { sandbox_id, cmd, yield_time_ms: 20000, ...extra } });
const long = { timeout: 60000, resetTimeoutOnProgress: false };

// A call that outlives the first second is answered on an event stream.
let tokens = [];
let t0 = Date.now();
let res = await client.callTool(exec("sleep 3; echo long"), undefined,
  { ...long, onresumptiontoken: (t) => tokens.push(t) });
assert.match(output(res, "long call"), /long/);
assert.ok(Date.now() - t0 >= 3000, "the call ran its course");
assert.ok(tokens.length >= 1, "the stream had event ids");
console.log("ok long call on an event stream");

// A notification reaches the open stream of a running call.
const notes = [];
client.setNotificationHandler(LoggingMessageNotificationSchema,
  (n) => notes.push(n.params));
await client.setLoggingLevel("warning");
let opened;
const isOpen = new Promise((r) => { opened = r; });
const running = client.callTool(exec("sleep 4; echo carrier"), undefined,
  { ...long, onresumptiontoken: () => opened() });
await isOpen;
res = await client.callTool(exec("sleep 30", { timeout_ms: 300 }));
assert.equal(res.structuredContent.status, "timed_out", JSON.stringify(res));
assert.match(output(await running, "carrier"), /carrier/);
assert.deepEqual(notes.map((n) => [n.level, n.data.event]),
  [["warning", "command.timeout"]], JSON.stringify(notes));
console.log("ok notification on the open stream");

// A stream lost after its first event: the SDK resumes it.
cut = "echo resumed";
gets.length = 0;
res = await client.callTool(exec("sleep 3; echo resumed"), undefined, long);
assert.match(output(res, "resumed call"), /resumed/);
assert.equal(cut, null, "the stream was cut");
assert.ok(gets.some((g) => g.status === 200 && g.lastEventId),
  `resumed with Last-Event-ID: ${JSON.stringify(gets)}`);
console.log("ok stream lost and resumed with Last-Event-ID");

await client.callTool({ name: "destroy_sandbox", arguments: { sandbox_id } });
await client.close();
