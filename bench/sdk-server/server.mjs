// Reference server for bench/run.sh: the smallest streamable-HTTP MCP server
// the official TypeScript SDK supports, serving the very tool list that
// sandbox-mcp returns, so the HTTP benchmark compares like with like.
//
//   node server.mjs [PORT] [TOOLS_JSON]
//
// PORT (argv or env PORT, default 0 = any free port) is bound on 127.0.0.1;
// TOOLS_JSON (argv or env TOOLS_JSON) is a file holding either the
// tools/list result object ({"tools": [...]}) or the bare array.  Once
// listening it prints "listening on http://127.0.0.1:PORT/mcp" on stderr.
//
// It follows the SDK's own jsonResponseStreamableHttp example: Express via
// createMcpExpressApp (Host-header guard + JSON body parser), one transport
// per session (sessionIdGenerator: randomUUID, enableJsonResponse: true), and
// the low-level Server class so the tool schemas go out verbatim.

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import {
    ListToolsRequestSchema,
    isInitializeRequest
} from '@modelcontextprotocol/sdk/types.js';

const port = Number(process.argv[2] ?? process.env.PORT ?? 0);
const toolsPath = process.argv[3] ?? process.env.TOOLS_JSON;
if (!toolsPath) {
    console.error('usage: node server.mjs PORT TOOLS_JSON');
    process.exit(2);
}
const loaded = JSON.parse(readFileSync(toolsPath, 'utf8'));
const tools = Array.isArray(loaded) ? loaded : loaded.tools;
if (!Array.isArray(tools)) {
    console.error(`${toolsPath}: no "tools" array`);
    process.exit(2);
}

function newServer() {
    const server = new Server(
        { name: 'sdk-bench-server', version: '1.0.0' },
        { capabilities: { tools: { listChanged: false }, logging: {} } }
    );
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
    return server;
}

const app = createMcpExpressApp({ host: '127.0.0.1' });
const sessions = new Map(); // session id -> transport

app.post('/mcp', async (req, res) => {
    try {
        const sid = req.headers['mcp-session-id'];
        const known = sid ? sessions.get(sid) : undefined;
        if (known) {
            await known.handleRequest(req, res, req.body);
            return;
        }
        if (!sid && isInitializeRequest(req.body)) {
            const transport = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                enableJsonResponse: true,
                onsessioninitialized: (id) => sessions.set(id, transport)
            });
            transport.onclose = () => {
                if (transport.sessionId)
                    sessions.delete(transport.sessionId);
            };
            await newServer().connect(transport);
            await transport.handleRequest(req, res, req.body);
            return;
        }
        res.status(sid ? 404 : 400).json({
            jsonrpc: '2.0',
            error: { code: sid ? -32001 : -32000,
                     message: sid ? 'Session not found' : 'Bad Request: No valid session ID provided' },
            id: null
        });
    } catch (err) {
        console.error('error handling request:', err);
        if (!res.headersSent)
            res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
    }
});

app.get('/mcp', (req, res) => {
    res.status(405).set('Allow', 'POST').send('Method Not Allowed');
});

const httpServer = app.listen(port, '127.0.0.1', (err) => {
    if (err) {
        console.error('listen:', err);
        process.exit(1);
    }
    console.error(`listening on http://127.0.0.1:${httpServer.address().port}/mcp tools=${tools.length}`);
});

for (const sig of ['SIGINT', 'SIGTERM'])
    process.on(sig, () => process.exit(0));
