# server.bash: sourced by the conformance tests' common.bash (both
# folders): a work directory removed at exit, and helpers to start
# sandbox-mcp on a free loopback port. Needs $SANDBOX_MCP_BIN and
# $conf_tag (the work directory's name).

work=$(mktemp -d "/tmp/smcp-$conf_tag-XXXXXX")
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
