// conformance-check.mjs: judges one run of the whole server suite of
// @modelcontextprotocol/conformance (its -o directory) against the
// expectations of conformance.sh.
//
//   node conformance-check.mjs --url URL --results DIR --expect FILE \
//       --scenarios FILE
//
// --scenarios: the suite's own list of server scenarios, one a line; every
// one must have an expectation and a result, and every expectation must
// name one of them. --expect: lines "scenario|expectation|message|reason":
//
//   pass                  no check fails or warns, at least one succeeds
//   vacuous               no check succeeds, fails or warns, and one INFO
//                         check's details.message is the message: the
//                         scenario has nothing to test here (the reason)
//   tool:NAME             the scenario needs a fixture tool NAME: NAME is
//                         not in the server's tools/list, and every failing
//                         check fails with the message (a prefix when it
//                         ends in "..."), or as a call of an unknown tool
//                         (-32602 naming NAME)
//   method:NAME           the scenario needs a method the server does not
//                         have: it fails with the message, which must be
//                         the -32601 answer naming NAME
//
// Prints "ok" or "FAIL" per scenario, with what differs; exits 1 on any
// FAIL.

import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const args = {};
for (let i = 2; i < process.argv.length; i += 2)
	args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
for (const k of ['url', 'results', 'expect', 'scenarios'])
	if (args[k] === undefined) {
		console.error(`conformance-check: --${k} is missing`);
		process.exit(2);
	}

// The server's tools, through a session of its own.
async function serverTools(url) {
	const headers = {
		'Content-Type': 'application/json',
		Accept: 'application/json, text/event-stream',
	};
	let r = await fetch(url, {
		method: 'POST', headers, body: JSON.stringify({
			jsonrpc: '2.0', id: 1, method: 'initialize', params: {
				protocolVersion: '2025-06-18', capabilities: {},
				clientInfo: { name: 'conformance-check', version: '1' },
			},
		}),
	});
	if (r.status !== 200)
		throw new Error(`initialize: HTTP ${r.status}`);
	await r.json();
	headers['Mcp-Session-Id'] = r.headers.get('mcp-session-id');
	headers['MCP-Protocol-Version'] = '2025-06-18';
	r = await fetch(url, {
		method: 'POST', headers, body: JSON.stringify({
			jsonrpc: '2.0', method: 'notifications/initialized',
		}),
	});
	r = await fetch(url, {
		method: 'POST', headers, body: JSON.stringify({
			jsonrpc: '2.0', id: 2, method: 'tools/list',
		}),
	});
	const body = await r.json();
	if (!Array.isArray(body?.result?.tools))
		throw new Error(`tools/list: ${JSON.stringify(body)}`);
	return body.result.tools.map((t) => t.name);
}

const lines = (f) => readFileSync(f, 'utf8').split('\n')
    .map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
const suite = lines(args.scenarios);
const expect = new Map();
let failed = 0;
function fail(name, why) {
	console.log(`FAIL ${name}: ${why}`);
	failed = 1;
}

for (const l of lines(args.expect)) {
	const [name, kind, message, reason] = l.split('|').map((s) => s.trim());
	if (expect.has(name) || !reason)
		fail(name, `malformed or repeated expectation: ${l}`);
	expect.set(name, { kind, message, reason });
}
for (const name of suite)
	if (!expect.has(name))
		fail(name, 'a scenario of the suite with no expectation here');
for (const name of expect.keys())
	if (!suite.includes(name))
		fail(name, 'expected here but not in the suite');

const dirs = readdirSync(args.results);
const tools = await serverTools(args.url);

for (const name of suite) {
	const e = expect.get(name);
	if (e === undefined)
		continue;
	// The directory is server-NAME-<ISO timestamp>.
	const re = new RegExp(`^server-${name}-\\d{4}-\\d\\d-\\d\\dT`);
	const found = dirs.filter((d) => re.test(d));
	if (found.length !== 1) {
		fail(name, `${found.length} result directories`);
		continue;
	}
	const checks = JSON.parse(readFileSync(join(args.results, found[0],
	    'checks.json'), 'utf8'));
	const by = (s) => checks.filter((c) => c.status === s);
	const bad = [...by('FAILURE'), ...by('WARNING')];
	const show = (cs) => cs.map((c) =>
	    `${c.id} ${c.status}: ${c.errorMessage ?? ''}`).join('; ');
	const note = `(${e.reason})`;

	if (e.kind === 'pass') {
		if (bad.length > 0 || by('SUCCESS').length === 0)
			fail(name, `expected to pass: ${show(bad) ||
			    'no check succeeded'}`);
		else
			console.log(`ok ${name}: ${by('SUCCESS').length} passed`);
		continue;
	}
	if (e.kind === 'vacuous') {
		const info = checks.find((c) => c.status === 'INFO' &&
		    c.details?.message === e.message);
		if (bad.length > 0 || by('SUCCESS').length > 0 || !info)
			fail(name, `expected to check nothing ${note}, got ` +
			    `${show(checks.filter((c) => c.status !== 'INFO')) ||
			    'no such INFO check'}`);
		else
			console.log(`ok ${name}: nothing to check ${note}`);
		continue;
	}
	const m = /^(tool|method):(.+)$/.exec(e.kind);
	if (!m) {
		fail(name, `unknown expectation ${e.kind}`);
		continue;
	}
	const [, what, fixture] = m;
	if (what === 'tool' && tools.includes(fixture)) {
		fail(name, `the fixture tool ${fixture} is listed now: ` +
		    'this scenario may pass; update the expectation');
		continue;
	}
	if (what === 'method' && e.message !==
	    `Failed: MCP error -32601: method not found: ${fixture}`) {
		fail(name, `malformed expectation for ${fixture}`);
		continue;
	}
	const unknownTool = new RegExp(
	    `^Failed: MCP error -32602: .*\\b${fixture}\\b`);
	// A message ending in "..." is a prefix.
	const same = (m) => e.message.endsWith('...') ?
	    m.startsWith(e.message.slice(0, -3)) : m === e.message;
	const odd = bad.filter((c) => c.status !== 'FAILURE' ||
	    !(same(c.errorMessage ?? '') ||
	    (what === 'tool' && unknownTool.test(c.errorMessage ?? ''))));
	if (by('FAILURE').length === 0)
		fail(name, `expected to fail ${note}, but no check failed`);
	else if (odd.length > 0)
		fail(name, `expected to fail with "${e.message}" ${note}, ` +
		    `got ${show(odd)}`);
	else
		console.log(`ok ${name}: fails as expected ${note}`);
}
process.exit(failed);
