#!/bin/bash
# sdk-stream.sh: long calls over streamable HTTP with the official
# TypeScript SDK client (sdk-stream.mjs): an event stream with
# keep-alives, a notification on it, and a lost stream resumed.

set -u
. "$(dirname "$0")/common.bash"
[ "$srcconf/sdk-stream.mjs" -ef "$confdir/sdk-stream.mjs" ] ||
    cp "$srcconf/sdk-stream.mjs" "$confdir/sdk-stream.mjs"

mkdir -p "$work/ws/project"
printf 'workspace-root %s\nlimit sse-keepalive 1\n' "$work/ws" >"$work/conf"
start_http_server --set management --set runtime -f "$work/conf"
trap 'cleanup; docker ps -aq --filter "label=io.sandbox-mcp.state-dir=$work/state" | xargs -r docker rm -f >/dev/null' EXIT
cd "$confdir" && node sdk-stream.mjs \
    --url "http://127.0.0.1:$port/mcp" --workspace "$work/ws/project"
