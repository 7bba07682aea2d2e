#!/bin/bash
# quickstart.sh: the README's first command, from a fresh clone of this
# tree, on this machine: contrib/quickstart.sh installs what it needs,
# builds, installs, makes a key if none is configured, builds the image
# and runs the server on loopback (here on a free port). Then each call
# it prints works as printed: MCP over HTTP, REST, stdio; the server
# serves the management, runtime and observability sets to the key; and
# Ctrl-C (SIGINT) stops it.

set -u
src=${SANDBOX_MCP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
work=$(mktemp -d /tmp/smcp-quickstart.XXXXXX)
pid=

fail() {
	echo "FAIL: $*" >&2
	[ -f "$work/err" ] && tail -n 30 "$work/err" | sed 's/^/    | /' >&2
	exit 1
}

cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

[ -d "$src/.git" ] || fail "$src is not a git checkout: nothing to clone"
git clone -q "$src" "$work/tree" || fail "git clone"

bash "$work/tree/contrib/quickstart.sh" --listen 127.0.0.1:0 \
    >"$work/out" 2>"$work/err" &
pid=$!

port=
for _ in $(seq 1 1200); do
	port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/mcp.*|\1|p' \
	    "$work/err" | head -n 1)
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || fail "quickstart.sh ended before serving"
	sleep 0.5
done
[ -n "$port" ] || fail "the server did not start listening within 600 s"

grep -q "management, runtime and" "$work/out" ||
    fail "the quickstart does not say it serves every set"
grep -q "Ctrl-C in this terminal stops the server" "$work/out" ||
    fail "the quickstart does not say how to stop it"

# The printed calls, with the port the server took. Each example block
# runs from its first line to its last (continued with backslashes).
example() {
	awk -v want="$1" '
	    index($0, want) { on = 1; next }
	    on && /^$/ { exit }
	    on { print }' "$work/out" | sed "s|127\.0\.0\.1:0/|127.0.0.1:$port/|g"
}
mcp=$(example "# HTTP, MCP")
[ -n "$mcp" ] || fail "no MCP over HTTP example"
got=$(bash -c "$mcp") || fail "the MCP example failed"
case $got in
*'"structuredContent":{"images":'*) ;;
*) fail "the MCP example did not list images: $got" ;;
esac
rest=$(example "# HTTP, REST")
[ -n "$rest" ] || fail "no REST example"
got=$(bash -c "$rest") || fail "the REST example failed"
case $got in
*'"images":'*'"directories":'*) ;;
*) fail "the REST example did not answer both tools: $got" ;;
esac
stdio=$(example "# stdio")
[ -n "$stdio" ] || fail "no stdio example"
got=$(bash -c "$stdio" 2>/dev/null) || fail "the stdio example failed"
case $got in
*'"id":1,"result"'*'"id":2,"result"'*'"images":'*) ;;
*) fail "the stdio example did not answer: $got" ;;
esac

# The key it made (or found) sees every set over HTTP.
key=$(cat /etc/sandbox-mcp.quickstart-key) || fail "no quickstart key"
list=$(curl -s "http://127.0.0.1:$port/mcp" \
    -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}')
for tool in create_sandbox exec_command snapshot; do
	case $list in
	*"\"name\":\"$tool\""*) ;;
	*) fail "tools/list lacks $tool (a set is not served): $list" ;;
	esac
done

# Ctrl-C stops it.
kill -INT "$pid"
for _ in $(seq 1 100); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "SIGINT did not stop the server"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] || fail "the server exited $rc on SIGINT"
echo "ok: quickstart from a fresh clone serves every set; its examples work"
