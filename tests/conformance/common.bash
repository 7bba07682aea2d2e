# common.bash: sourced by the conformance tests. Installs the pinned npm
# packages on first use and gives helpers to start sandbox-mcp on a free
# loopback port.

# The packages go into the build tree (the source tree may be read-only,
# as under make distcheck), with the scripts that import them.
srcconf=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${SANDBOX_MCP_BIN:?SANDBOX_MCP_BIN is not set}"
confdir=${SANDBOX_MCP_BUILDDIR:-$srcconf/../..}/tests/conformance
mkdir -p "$confdir"
for f in package.json package-lock.json sdk-client.mjs conformance-check.mjs; do
	[ "$srcconf/$f" -ef "$confdir/$f" ] || cp "$srcconf/$f" "$confdir/$f"
done
if [ ! -d "$confdir/node_modules/@modelcontextprotocol/sdk" ] ||
    [ ! -d "$confdir/node_modules/@modelcontextprotocol/conformance" ] ||
    [ ! -d "$confdir/node_modules/@modelcontextprotocol/inspector" ]; then
	(cd "$confdir" && npm ci --no-audit --no-fund --loglevel=error) ||
	    { echo "npm ci failed in $confdir" >&2; exit 1; }
fi

work=$(mktemp -d /tmp/smcp-conf-XXXXXX)
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
