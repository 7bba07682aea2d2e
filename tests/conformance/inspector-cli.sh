#!/bin/bash
# inspector-cli.sh: the MCP Inspector CLI (@modelcontextprotocol/inspector
# --cli) lists sandbox-mcp's tools and calls one, over stdio and over
# streamable HTTP with an API key; without a key, or with a wrong one, it
# gets no tools.

set -u
. "$(dirname "$0")/common.bash"

mkdir -p "$work/ws/project" "$work/home"
out=$("$SANDBOX_MCP_BIN" keygen inspector --set management) || exit 1
key=$(echo "$out" | sed -n 1p)
printf '%s\nworkspace-root %s\n' "$(echo "$out" | sed -n 2p)" \
    "$work/ws" >"$work/conf"
failed=0

# inspector ARGS...: the CLI, its output in $work/out; its own files (the
# server catalogue, stored credentials) under $work/home.
inspector() {
	(cd "$confdir" && HOME=$work/home timeout 120 \
	    npx --no-install inspector --cli "$@") </dev/null >"$work/out" \
	    2>"$work/err"
}

# check LABEL EXPR: EXPR, a JavaScript expression of r (the CLI's output,
# parsed), must be true.
check() {
	if node -e '
		const fs = require("fs");
		const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
		process.exit(eval(process.argv[2]) ? 0 : 1);' \
	    "$work/out" "$2" 2>>"$work/err"; then
		echo "ok $1"
	else
		echo "FAIL $1: $2 does not hold"
		sed 's/^/  out: /' "$work/out" | head -40
		sed 's/^/  err: /' "$work/err" | head -20
		failed=1
	fi
}

tools='JSON.stringify(r.tools.map((t) => t.name).sort()) === JSON.stringify([
    "create_sandbox", "destroy_sandbox", "export_changes", "inspect_sandbox",
    "list_docker_images", "list_sandboxes", "list_workspace_directories",
    "squash_layerstacks"])'
roots='r.isError === false && r.structuredContent.path === null &&
    JSON.stringify(r.structuredContent.directories) ===
    JSON.stringify([{ name: "ws", path: process.env.WS }])'
project='r.isError === false && r.structuredContent.path === process.env.WS &&
    JSON.stringify(r.structuredContent.directories) ===
    JSON.stringify([{ name: "project", path: process.env.WS + "/project" }])'
export WS=$work/ws

server=("$SANDBOX_MCP_BIN" --set management -f "$work/conf" --state-dir
    "$work/state-stdio")
inspector --method tools/list -- "${server[@]}"
check "stdio tools/list" "$tools"
inspector --method tools/call --tool-name list_workspace_directories -- \
    "${server[@]}"
check "stdio tools/call" "$roots"

start_http_server --set management -f "$work/conf"
url=http://127.0.0.1:$port/mcp
inspector "$url" --header "Authorization: Bearer $key" --method tools/list
check "http tools/list" "$tools"
inspector "$url" --header "Authorization: Bearer $key" \
    --method tools/call --tool-name list_workspace_directories \
    --tool-arg "path=$work/ws"
check "http tools/call" "$project"

# Refused: the CLI ends with an error and lists nothing.
for h in "" "Authorization: Bearer smcp_not_a_key"; do
	if inspector "$url" ${h:+--header "$h"} --method tools/list ||
	    grep -q list_sandboxes "$work/out"; then
		echo "FAIL http ${h:-without a key}: listed the tools"
		sed 's/^/  /' "$work/out" "$work/err" | head -20
		failed=1
	else
		echo "ok http ${h:-without a key}: refused"
	fi
done
grep -q 'unknown API key' "$work/server.log" ||
    { echo "FAIL the wrong key is not in the log as refused"; failed=1; }
exit $failed
