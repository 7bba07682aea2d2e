// Opens an MCP session over streamable HTTP for bench/run.sh and prints its
// Mcp-Session-Id on stdout.  No dependencies (Node's built-in fetch).
//
//   node mcp-session.mjs URL [--key KEY] [--tools-out FILE]
//
// Sends initialize and notifications/initialized; with --tools-out it also
// calls tools/list once and writes the result object ({"tools": [...]})
// to FILE, exactly as the server sent it.  Exits 1 with a message on any
// unexpected answer.

import { writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
let url, key, toolsOut;
for (let i = 0; i < args.length; i++) {
    if (args[i] === '--key') key = args[++i];
    else if (args[i] === '--tools-out') toolsOut = args[++i];
    else url = args[i];
}
if (!url) {
    console.error('usage: node mcp-session.mjs URL [--key KEY] [--tools-out FILE]');
    process.exit(2);
}
const PROTOCOL = process.env.BENCH_HTTP_PROTOCOL || '2025-06-18';

function fail(msg) {
    console.error(`mcp-session: ${url}: ${msg}`);
    process.exit(1);
}

async function post(body, sid) {
    const headers = {
        'Content-Type': 'application/json',
        'Accept': 'application/json, text/event-stream'
    };
    if (key) headers['Authorization'] = `Bearer ${key}`;
    if (sid) {
        headers['Mcp-Session-Id'] = sid;
        headers['MCP-Protocol-Version'] = PROTOCOL;
    }
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    const text = await res.text();
    return { res, text };
}

const init = await post({
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: {
        protocolVersion: PROTOCOL,
        capabilities: {},
        clientInfo: { name: 'sandbox-mcp-bench', version: '1' }
    }
});
if (init.res.status !== 200) fail(`initialize: HTTP ${init.res.status}: ${init.text}`);
const sid = init.res.headers.get('mcp-session-id');
if (!sid) fail('initialize: no Mcp-Session-Id header');
if (!JSON.parse(init.text).result) fail(`initialize: ${init.text}`);

const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid);
if (note.res.status !== 202 && note.res.status !== 200)
    fail(`notifications/initialized: HTTP ${note.res.status}: ${note.text}`);

if (toolsOut) {
    const tl = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, sid);
    if (tl.res.status !== 200) fail(`tools/list: HTTP ${tl.res.status}: ${tl.text}`);
    const result = JSON.parse(tl.text).result;
    if (!result || !Array.isArray(result.tools)) fail(`tools/list: ${tl.text}`);
    writeFileSync(toolsOut, JSON.stringify(result) + '\n');
}

process.stdout.write(sid + '\n');
