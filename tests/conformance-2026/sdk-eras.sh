#!/bin/bash
# sdk-eras.sh: the official TypeScript SDK clients against sandbox-mcp
# over stdio and streamable HTTP with an API key: the 2.x client in
# protocol 2026-07-28, the 1.32.2 client in 2025-03-26 (results readable
# in content) and 2025-06-18 sessions (content empty unless result-text
# yes).

set -u
. "$(dirname "$0")/common.bash"

out=$("$SANDBOX_MCP_BIN" keygen sdk --set management) || exit 1
key=$(echo "$out" | sed -n 1p)
echo "$out" | sed -n 2p >"$work/conf"
{ cat "$work/conf"; echo "result-text yes"; } >"$work/textconf"

start_http_server --set management -f "$work/textconf"
textport=$port
textpid=$server_pid
mv "$work/server.log" "$work/text-server.log"
start_http_server --set management -f "$work/conf"
cd "$confdir" && node sdk-eras.mjs \
    --bin "$SANDBOX_MCP_BIN" --conf "$work/conf" --textconf "$work/textconf" \
    --state "$work/state2" --url "http://127.0.0.1:$port/mcp" \
    --texturl "http://127.0.0.1:$textport/mcp" --key "$key"
rc=$?
kill "$textpid" 2>/dev/null
wait "$textpid" 2>/dev/null
exit $rc
