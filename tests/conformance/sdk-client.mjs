// sdk-client.mjs: drive sandbox-mcp with the official TypeScript SDK
// client over both transports; exit non-zero on any mismatch.

import assert from "node:assert/strict";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

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
