#!/bin/bash
# sdk-client.sh: the official TypeScript SDK client completes initialize,
# tools/list and tools/call against sandbox-mcp over stdio and over
# streamable HTTP with an API key, and reads the 413 of a body over
# max-body.

set -u
. "$(dirname "$0")/common.bash"

mkdir -p "$work/ws/project"
out=$("$SANDBOX_MCP_BIN" keygen sdk --set management) || exit 1
key=$(echo "$out" | sed -n 1p)
printf '%s\nworkspace-root %s\n' "$(echo "$out" | sed -n 2p)" \
    "$work/ws" >"$work/conf"

start_http_server --set management -f "$work/conf"
cd "$confdir" && node sdk-client.mjs \
    --bin "$SANDBOX_MCP_BIN" --conf "$work/conf" --state "$work/state2" \
    --url "http://127.0.0.1:$port/mcp" --key "$key" --workspace "$work/ws"
