// sdk-eras.mjs: the official TypeScript SDK clients of both protocol eras
// against sandbox-mcp: the 2.x client (@modelcontextprotocol/client) in
// protocol 2026-07-28 over stdio and streamable HTTP, and the 1.32.2
// client (@modelcontextprotocol/sdk) in 2025-03-26 and 2025-06-18
// sessions. Exits non-zero on any mismatch.

import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/client";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as Stdio1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as Http1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const { values: opt } = parseArgs({
  options: {
    bin: { type: "string" }, conf: { type: "string" },
    textconf: { type: "string" }, state: { type: "string" },
    url: { type: "string" }, texturl: { type: "string" },
    key: { type: "string" },
  },
});
const auth = { Authorization: `Bearer ${opt.key}` };
const stdioArgs = (conf) => ["--set", "management", "-f", conf,
  "--state-dir", opt.state];

// The 2.x client pinned to 2026-07-28: server/discover, then stateless
// requests carrying _meta and the mirrored headers (Mcp-Param-Sandbox-Id
// among them, from the x-mcp-header the list declares).
async function modern(transport, name) {
  const client = new Client({ name: "sdk2-test", version: "1.0.0" },
    { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(transport);
  assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28",
    `${name}: negotiated 2026-07-28`);
  assert.equal(client.getServerVersion()?.name, "sandbox-mcp",
    `${name}: serverInfo from server/discover`);
  assert.ok(client.getServerCapabilities()?.tools, `${name}: tools capability`);

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name),
    ["list_docker_images", "list_workspace_directories", "create_sandbox",
      "list_sandboxes", "inspect_sandbox", "destroy_sandbox",
      "squash_layerstacks", "export_changes"], `${name}: tools`);
  const inspect = tools.find((t) => t.name === "inspect_sandbox");
  assert.equal(inspect.inputSchema.properties.sandbox_id["x-mcp-header"],
    "Sandbox-Id", `${name}: sandbox_id declared as a routing header`);
  const exp = tools.find((t) => t.name === "export_changes");
  assert.equal(exp.inputSchema.properties.sandbox_id["x-mcp-header"],
    "Sandbox-Id", `${name}: export_changes declares the routing header`);
  assert.deepEqual(exp.annotations && [exp.annotations.readOnlyHint,
    exp.annotations.destructiveHint, exp.annotations.idempotentHint,
    exp.annotations.openWorldHint], [false, true, true, false],
    `${name}: export_changes annotations`);

  const list = await client.callTool({ name: "list_sandboxes", arguments: {} });
  assert.equal(list.isError, false, `${name}: list_sandboxes ok`);
  assert.ok(Array.isArray(list.structuredContent.sandboxes),
    `${name}: sandboxes array`);
  assert.deepEqual(list.content, [], `${name}: content stays empty`);

  const gone = await client.callTool({ name: "inspect_sandbox",
    arguments: { sandbox_id: "no-such-sandbox" } });
  assert.equal(gone.isError, true, `${name}: inspect of an unknown id`);
  assert.equal(gone.structuredContent.error.kind, "not_found",
    `${name}: not_found (the Mcp-Param header matched)`);
  const unexported = await client.callTool({ name: "export_changes",
    arguments: { sandbox_id: "sbox-0123456789ab", dest: "/nowhere/x" } });
  assert.equal(unexported.isError, true, `${name}: export of an unknown id`);
  assert.equal(unexported.structuredContent.error.kind, "not_found",
    `${name}: export_changes not_found (the Mcp-Param header matched)`);

  await assert.rejects(client.callTool({ name: "make_coffee", arguments: {} }),
    (e) => /unknown tool: make_coffee/.test(String(e)),
    `${name}: an unknown tool is a protocol error`);
  await client.close();
  console.log(`ok ${name}: 2.x client in 2026-07-28: discover, tools/list,`
    + " tools/call");
}

// A 1.32.2 client's transport whose initialize asks for version: the
// client offers only its newest revision, so the request is rewritten
// on its way out (the server then answers with that version).
function pinned(transport, version) {
  const send = transport.send.bind(transport);
  transport.send = (msg, o) => {
    if (msg.method === "initialize")
      msg = { ...msg, params: { ...msg.params, protocolVersion: version } };
    return send(msg, o);
  };
  return transport;
}

async function legacy(transport, name, version, text) {
  const client = new Client1({ name: "sdk1-test", version: "1.0.0" });
  await client.connect(pinned(transport, version));
  const { tools } = await client.listTools();
  const inspect = tools.find((t) => t.name === "inspect_sandbox");
  assert.equal(inspect.inputSchema.properties.sandbox_id["x-mcp-header"],
    undefined, `${name}: the 2025 list keeps the published schema`);
  const r = await client.callTool({ name: "inspect_sandbox",
    arguments: { sandbox_id: "no-such-sandbox" } });
  assert.equal(r.isError, true, `${name}: error result`);
  if (text) {
    assert.equal(r.content.length, 1, `${name}: one content item`);
    assert.equal(r.content[0].type, "text", `${name}: a text item`);
    const body = JSON.parse(r.content[0].text);
    assert.equal(body.error.kind, "not_found", `${name}: the text is the result`);
    assert.deepEqual(body, r.structuredContent, `${name}: same JSON`);
  } else
    assert.deepEqual(r.content, [], `${name}: content stays empty`);
  await client.close();
  console.log(`ok ${name}: 1.32.2 client in ${version}:`
    + ` content ${text ? "holds the text" : "empty"}`);
}

await modern(new StdioClientTransport({ command: opt.bin,
  args: stdioArgs(opt.conf), stderr: "inherit" }), "stdio");
await modern(new StreamableHTTPClientTransport(new URL(opt.url),
  { requestInit: { headers: auth } }), "http");

await legacy(new Stdio1({ command: opt.bin, args: stdioArgs(opt.conf),
  stderr: "inherit" }), "stdio 2025-03-26", "2025-03-26", true);
await legacy(new Http1(new URL(opt.url), { requestInit: { headers: auth } }),
  "http 2025-03-26", "2025-03-26", true);
await legacy(new Stdio1({ command: opt.bin, args: stdioArgs(opt.conf),
  stderr: "inherit" }), "stdio 2025-06-18", "2025-06-18", false);
await legacy(new Http1(new URL(opt.url), { requestInit: { headers: auth } }),
  "http 2025-06-18", "2025-06-18", false);
await legacy(new Stdio1({ command: opt.bin, args: stdioArgs(opt.textconf),
  stderr: "inherit" }), "stdio 2025-06-18 result-text", "2025-06-18", true);
await legacy(new Http1(new URL(opt.texturl), { requestInit: { headers: auth } }),
  "http 2025-06-18 result-text", "2025-06-18", true);
