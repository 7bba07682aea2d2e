// sdk-client.mjs: drive sandbox-mcp with the official TypeScript SDK
// client over both transports; exit non-zero on any mismatch.

import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import Ajv from "ajv";

const { values: opt } = parseArgs({
  options: {
    bin: { type: "string" }, conf: { type: "string" },
    state: { type: "string" }, url: { type: "string" },
    key: { type: "string" }, workspace: { type: "string" },
  },
});

async function exercise(transport, name) {
  const client = new Client({ name: "sdk-client-test", version: "1.0.0" });
  await client.connect(transport);
  const info = client.getServerVersion();
  assert.equal(info.name, "sandbox-mcp", `${name}: server name`);
  assert.ok(client.getServerCapabilities().tools, `${name}: tools capability`);
  assert.ok(client.getInstructions().length > 0, `${name}: instructions`);

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name),
    ["list_docker_images", "list_workspace_directories", "create_sandbox",
      "list_sandboxes", "inspect_sandbox", "destroy_sandbox",
      "squash_layerstacks", "export_changes"], `${name}: tools`);
  for (const t of tools)
    assert.equal(t.inputSchema.type, "object");

  const images = await client.callTool({ name: "list_docker_images", arguments: {} });
  assert.equal(images.isError, false, `${name}: list_docker_images ok`);
  assert.ok(Array.isArray(images.structuredContent.images), `${name}: images array`);
  assert.ok(images.structuredContent.images.includes(
    process.env.SANDBOX_MCP_IMAGE || "sandbox-mcp/busybox:test"), `${name}: test image listed`);

  const roots = await client.callTool({ name: "list_workspace_directories", arguments: {} });
  assert.equal(roots.isError, false, `${name}: roots ok`);
  assert.equal(roots.structuredContent.directories.length, 1, `${name}: one root`);
  const sub = await client.callTool({
    name: "list_workspace_directories",
    arguments: { path: roots.structuredContent.directories[0].path },
  });
  assert.deepEqual(sub.structuredContent.directories.map((d) => d.name),
    ["project"], `${name}: subdirectories`);

  const bad = await client.callTool({ name: "list_workspace_directories", arguments: { path: "rel" } });
  assert.equal(bad.isError, true, `${name}: error result`);
  assert.equal(bad.structuredContent.error.kind, "invalid_request");

  await client.ping();
  await client.close();
  console.log(`ok ${name}: initialize, tools/list, tools/call, ping`);
}

await exercise(new StdioClientTransport({
  command: opt.bin,
  args: ["--set", "management", "-f", opt.conf, "--state-dir", opt.state],
  stderr: "inherit",
}), "stdio");

await exercise(new StreamableHTTPClientTransport(new URL(opt.url), {
  requestInit: { headers: { Authorization: `Bearer ${opt.key}` } },
}), "http");

// Every tool's input and output schema compiles under Ajv's strict mode
// (no unknown keyword, no ambiguous type), each default is valid for its
// own property, and the limits the manual states are in the schemas.
{
  const all = new Client({ name: "schemas", version: "1.0.0" });
  await all.connect(new StdioClientTransport({
    command: opt.bin,
    args: ["--set", "management,runtime,observability", "-f", opt.conf,
      "--state-dir", opt.state],
    stderr: "inherit",
  }));
  const { tools } = await all.listTools();
  const ajv = new Ajv({ strict: true, allowUnionTypes: true });
  const props = {};
  for (const t of tools) {
    ajv.compile(t.inputSchema);
    if (t.outputSchema)
      ajv.compile(t.outputSchema);
    for (const [name, p] of Object.entries(t.inputSchema.properties)) {
      if ("default" in p)
        assert.ok(ajv.validate(p, p.default),
          `${t.name}.${name}: its default ${p.default} fits its schema`);
      props[`${t.name}.${name}`] = p;
    }
  }
  const want = {
    "create_sandbox.count": { minimum: 1, maximum: 32, default: 1 },
    "exec_command.yield_time_ms": { maximum: 600000, default: 1000 },
    "exec_command.timeout_ms": { minimum: 0, default: 0 },
    "write_command_stdin.yield_time_ms": { maximum: 600000, default: 1000 },
    "read_command_lines.limit": { maximum: 1000, default: 200 },
    "read_command_lines.tail": { minimum: 1, maximum: 1000 },
    "file_read.limit": { maximum: 2000, default: 2000 },
    "cgroup.window_ms": { maximum: 600000, default: 60000 },
  };
  for (const [key, fields] of Object.entries(want))
    for (const [k, v] of Object.entries(fields))
      assert.equal(props[key]?.[k], v, `${key}: ${k}`);
  assert.match(props["exec_command.cmd"].description, /\/bin\/sh -c/,
    "the shell is named");
  await all.close();
  console.log(`ok schemas: ${tools.length} tools strict, limits stated`);
}

// A request over max-body (16 MiB): the SDK client, which sends the whole
// body before it reads, gets the 413 and its message, not a reset.
{
  const big = new Client({ name: "big", version: "1.0.0" });
  await big.connect(new StreamableHTTPClientTransport(new URL(opt.url), {
    requestInit: { headers: { Authorization: `Bearer ${opt.key}` } },
  }));
  await assert.rejects(big.callTool({ name: "list_workspace_directories",
    arguments: { path: "x".repeat(17 * 1024 * 1024) } }),
  (e) => e.code === 413 && /larger than the limit/.test(String(e)),
  "an oversized request is answered 413");
  await big.close();
  console.log("ok http: 413 read by the SDK client");
}

// Without the key the SDK client is refused with 401.
const anon = new Client({ name: "anon", version: "1.0.0" });
await assert.rejects(anon.connect(new StreamableHTTPClientTransport(new URL(opt.url))),
  (e) => /401|Unauthorized/i.test(String(e)), "http without a key is refused");
console.log("ok http: refused without a key");
