#!/bin/bash
# Benchmarks for sandbox-mcp; see bench/README.  Run by `make bench`, or
# directly as bench/run.sh from anywhere.
#
#   http:  wrk -t2 -c64 -d10s --latency, POST /mcp tools/list on one session
#          over keep-alive, against sandbox-mcp (with an API key, then
#          without) and against a minimal server on the official MCP
#          TypeScript SDK serving the same tool list, and against the
#          floor: Debian's nginx, one worker, serving the same reply bytes;
#          then the keyed server at each other protocol revision it speaks
#          (a session per 2025 revision; 2026-07-28 stateless, no session),
#          each beside an nginx serving that revision's reply bytes.
#   stdio: 10,000 sequential ping round trips over the server's stdio.
#   slowloris: /health and tools/list from 127.0.0.1 while 1,100
#          connections trickle bytes (from one address, then from 20),
#          against the same requests with no attack (bench/slowloris.py;
#          needs python3).
#   lifecycle: create_sandbox (count 1 warm and cold, count 8) and
#          destroy_sandbox against docker run -d / docker rm -f of the
#          same images, on a generated 1,000-file, 16 MiB workspace
#          (bench/lifecycle.py; needs python3 and a Docker Engine).
#   exec:  exec_command "true" in automatic sessions over stdio (500 one
#          at a time, 20 at once), a 4 KiB write published, and the RSS
#          with 64 commands running, against docker exec of the same
#          container and nsenter into its init's namespaces, and the
#          publish beside an fsync'd 4 KiB replace (bench/exec.py; needs
#          python3, nsenter, root and a Docker Engine).
#   files: file_read, file_write, file_edit and file_blame over stdio on a
#          1,000-file workspace with 20 published layers, against docker
#          exec cat of the same container, and a 256 KiB file_read over
#          keep-alive HTTP (REST) against the same over stdio
#          (bench/files.py; needs python3 and a Docker Engine).
#   hostile: a symlink-swap race on publishes, a descriptor passed
#          between sessions, sparse giants, 400 pipelined writes and 600
#          sessions, with their targets, and the publish of 1,000 files
#          (bench/hostile.py; needs python3, a C compiler and a Docker
#          Engine).
#
# Environment (all optional):
#   SANDBOX_MCP_BUILDDIR, SANDBOX_MCP_SRCDIR   default: this script's ../
#   BENCH_DURATION (10s) BENCH_CONNECTIONS (64) BENCH_THREADS (2)
#   BENCH_WARMUP (2s; 0 to skip) BENCH_PINGS (10000) BENCH_SKIP_SDK (unset)
#   BENCH_SKIP_NGINX (unset) BENCH_NGINX (nginx binary) BENCH_HTTP_COMPARE
#   (another sandbox-mcp binary measured in the same http run)
#   BENCH_HTTP_ROUNDS (1; rounds of the http load, medians reported)
#   BENCH_HTTP_PROTOCOL (2025-06-18; the MCP version of the load)
#   BENCH_HTTP_PROTOCOLS ("2025-03-26 2025-06-18 2025-11-25 2026-07-28";
#   the revisions the keyed server and an nginx floor are loaded at)
#   BENCH_HTTP_REV_DURATION (5s; wrk's -d for the revisions other than
#   BENCH_HTTP_PROTOCOL)
#   BENCH_SKIP_SLOWLORIS (unset) BENCH_SLOWLORIS_REQUESTS
#   BENCH_SLOWLORIS_CONNECTIONS (see bench/slowloris.py)
#   BENCH_SKIP_LIFECYCLE (unset) BENCH_LIFECYCLE_IMAGES BENCH_LIFECYCLE_WARM
#   BENCH_LIFECYCLE_COLD BENCH_LIFECYCLE_BATCH BENCH_LIFECYCLE_BASELINE
#   (see bench/lifecycle.py)
#   BENCH_SKIP_EXEC (unset) BENCH_EXEC_IMAGES BENCH_EXEC_RUNS
#   BENCH_EXEC_DOCKER BENCH_EXEC_NSENTER BENCH_EXEC_ROUNDS BENCH_EXEC_WRITES
#   BENCH_EXEC_PAUSE BENCH_EXEC_TMPDIR (see bench/exec.py)
#   BENCH_SKIP_LAYERS (unset; see bench/layers.py)
#   BENCH_SKIP_OBS (unset; see bench/obs.py)
#   BENCH_SKIP_STORE (unset; see bench/store-bench.c)
#   BENCH_SKIP_FILES (unset) BENCH_FILES_IMAGES BENCH_FILES_RUNS
#   BENCH_FILES_DOCKER BENCH_FILES_PAUSE (see bench/files.py)
#   BENCH_SKIP_HOSTILE (unset) BENCH_HOSTILE_COMPARE (another binary
#   to time the publish of 1,000 files against; see bench/hostile.py)
#
# Results: printed, and written to $SANDBOX_MCP_BUILDDIR/bench/results/
# (http.txt, stdio.txt, slowloris.txt and slowloris.json, lifecycle.txt
# and lifecycle.json, exec.txt and exec.json, files.txt and files.json,
# hostile.txt and hostile.json, and the raw wrk output of each run).  Exit status
# 0 when every target is met, 1 when one is missed or a run is broken
# (non-200 responses, socket errors, a server that would not start).

# make runs this with $(SHELL), which may be a plain sh.
if [ -z "${BASH_VERSION:-}" ]; then
	exec bash "$0" "$@"
fi

set -eu
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
srcdir=${SANDBOX_MCP_SRCDIR:-$top}
builddir=${SANDBOX_MCP_BUILDDIR:-$top}
bench=$srcdir/bench
server=$builddir/sandbox-mcp
results=$builddir/bench/results

duration=${BENCH_DURATION:-10s}
conns=${BENCH_CONNECTIONS:-64}
threads=${BENCH_THREADS:-2}
warmup=${BENCH_WARMUP:-2s}
pings=${BENCH_PINGS:-10000}
http_rounds=${BENCH_HTTP_ROUNDS:-1}
# The protocol version of the load's session (2025-03-26 lists no
# outputSchema: a list of the same bytes as a server older than it).
http_protocol=${BENCH_HTTP_PROTOCOL:-2025-06-18}
export BENCH_HTTP_PROTOCOL=$http_protocol
# Every revision the server speaks, each loaded on the keyed server beside
# an nginx floor serving that revision's reply: the 2025 ones on a session,
# 2026-07-28 statelessly (no session; MCP-Protocol-Version, Mcp-Method and
# params._meta on every request).  BENCH_HTTP_PROTOCOL's own is the main
# run above; the others run for rev_duration.
http_protocols=${BENCH_HTTP_PROTOCOLS-2025-03-26 2025-06-18 2025-11-25 2026-07-28}
rev_duration=${BENCH_HTTP_REV_DURATION:-5s}

# Targets (sandbox-mcp against the SDK server, same load).
target_tput=5       # ours/SDK requests per second, at least
target_p99=0.2      # ours/SDK p99 latency, at most
target_rss_mib=16   # ours, peak RSS under the load, at most
target_nginx=0.8    # ours/nginx requests per second, at least (each
                    # protocol revision, with an API key)
target_p99_ms=5     # ours, p99 latency in ms, at most (each revision)

say() { printf '%s\n' "$*" >&2; }
die() { say "bench: $*"; exit 1; }

[ -x "$server" ] || die "$server not built (run make first)"

# stateless PROTOCOL: true for a revision served without a session.
stateless() {
	case $1 in
	2025-03-26|2025-06-18|2025-11-25) return 1 ;;
	*) return 0 ;;
	esac
}
stateless "$http_protocol" &&
    die "BENCH_HTTP_PROTOCOL=$http_protocol: the main run needs a session" \
    "revision (the SDK server has no other); the stateless one is loaded" \
    "through BENCH_HTTP_PROTOCOLS"

# ---------------------------------------------------------------- tools
if ! command -v wrk >/dev/null 2>&1; then
	say "bench: wrk missing, installing the Debian package"
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y wrk >/dev/null 2>&1 ||
	    { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; } ||
	    die "cannot install wrk"
fi
nginx=${BENCH_NGINX:-}
if [ -z "${BENCH_SKIP_NGINX:-}" ] && [ -z "$nginx" ]; then
	nginx=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
	if [ ! -x "$nginx" ]; then
		say "bench: nginx missing, installing the Debian package"
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y nginx >/dev/null 2>&1 ||
		    { apt-get update >/dev/null &&
		    apt-get install -y nginx >/dev/null; } ||
		    die "cannot install nginx"
	fi
fi
command -v curl >/dev/null 2>&1 || die "curl is needed"
command -v node >/dev/null 2>&1 || die "node (Node.js 20) is needed"
sdkdir=$bench/sdk-server
if [ -z "${BENCH_SKIP_SDK:-}" ] && [ ! -d "$sdkdir/node_modules" ]; then
	say "bench: npm install in $sdkdir"
	(cd "$sdkdir" && npm install --no-audit --no-fund >&2) ||
	    die "npm install failed in $sdkdir"
fi

mkdir -p "$results"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sandbox-mcp-bench.XXXXXX")
pids=""
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------- helpers

# start NAME LOG COMMAND...: runs COMMAND in the background, waits for its
# "listening on http://127.0.0.1:PORT/mcp" line on stderr; sets srv_pid,
# srv_url.
start() {
	local name=$1 log=$2 i port
	shift 2
	: >"$log"	# there before the child opens it, for the sed below
	"$@" </dev/null >"$log.out" 2>"$log" &
	srv_pid=$!
	pids="$pids $srv_pid"
	for i in $(seq 100); do
		port=$(sed -n 's,.*listening on http://127\.0\.0\.1:\([0-9]*\)/mcp.*,\1,p' \
		    "$log" | head -n 1)
		[ -n "$port" ] && break
		kill -0 "$srv_pid" 2>/dev/null ||
		    { cat "$log" >&2; die "$name exited at start"; }
		sleep 0.1
	done
	[ -n "$port" ] || { cat "$log" >&2; die "$name did not start listening"; }
	srv_url=http://127.0.0.1:$port/mcp
}

stop() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	local p rest=""
	for p in $pids; do
		[ "$p" = "$1" ] || rest="$rest $p"
	done
	pids=$rest
}

# status_kib PID FIELD: a VmXXX figure from /proc/PID/status, in KiB.
status_kib() {
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}

# load LABEL PID URL KEY SESSION PROTOCOL DURATION [ROUND]: runs wrk on
# an open session, or with none for a stateless revision (the warm-up, in
# the first round only, then the measured run) and reads the peak RSS.
# Leaves the figures in r_* variables.
load() {
	local label=$1 pid=$2 url=$3 key=$4 sid=$5 proto=$6 dur=$7
	local round=${8:-1} out line
	r_idle_kib=$(status_kib "$pid" VmRSS)
	if [ "$warmup" != 0 ] && [ "$round" = 1 ]; then
		MCP_SESSION_ID=$sid MCP_API_KEY=$key MCP_PROTOCOL=$proto \
		    wrk -t"$threads" -c"$conns" -d"$warmup" -s "$bench/http.lua" \
		    "$url" >"$results/wrk-$label-warmup.txt" 2>&1 ||
		    die "$label: wrk warm-up failed"
	fi
	out=$results/wrk-$label.txt
	[ "$round" = 1 ] || out=$results/wrk-$label-round$round.txt
	MCP_SESSION_ID=$sid MCP_API_KEY=$key MCP_PROTOCOL=$proto \
	    wrk -t"$threads" -c"$conns" -d"$dur" --latency \
	    -s "$bench/http.lua" "$url" >"$out" 2>&1 ||
	    { cat "$out" >&2; die "$label: wrk failed"; }
	kill -0 "$pid" 2>/dev/null || die "$label: the server died under load"
	r_hwm_kib=$(status_kib "$pid" VmHWM)
	line=$(grep '^bench: ' "$out") || { cat "$out" >&2; die "$label: no summary"; }
	# bench: requests=N duration_us=D rps=R p50_us=A p90_us=B p99_us=C ...
	r_requests=$(field requests "$line")
	r_rps=$(field rps "$line")
	r_p50=$(field p50_us "$line")
	r_p99=$(field p99_us "$line")
	r_bad=$(( $(field non200 "$line") + $(field badbody "$line") ))
	r_err=$(field errors "$line")
}

# open_session URL KEY PROTOCOL: prints a new MCP session's id, or "-"
# for a stateless revision (no session).
open_session() {
	if stateless "$3"; then
		echo -
		return
	fi
	BENCH_HTTP_PROTOCOL=$3 node "$bench/mcp-session.mjs" "$1" \
	    ${2:+--key "$2"}
}

# fetch_reply URL KEY PROTOCOL FILE: the whole reply to one tools/list
# with a 10-digit id, as the load's requests have, at that revision (on
# a session of its own, or statelessly): what nginx serves as its floor.
fetch_reply() {
	local url=$1 key=$2 proto=$3 out=$4 sid params
	local -a hdr=()
	sid=$(open_session "$url" "$key" "$proto") || return 1
	if [ "$sid" = - ]; then
		hdr=(-H "Mcp-Method: tools/list")
		params='{"_meta":{"io.modelcontextprotocol/protocolVersion":"'$proto'","io.modelcontextprotocol/clientCapabilities":{}}}'
	else
		hdr=(-H "Mcp-Session-Id: $sid")
		params='{}'
	fi
	curl -sS --fail -o "$out" ${key:+-H "Authorization: Bearer $key"} \
	    -H 'Content-Type: application/json' \
	    -H 'Accept: application/json, text/event-stream' \
	    -H "MCP-Protocol-Version: $proto" "${hdr[@]}" \
	    --data '{"jsonrpc":"2.0","id":1000000000,"method":"tools/list","params":'"$params"'}' \
	    "$url" || return 1
	grep -q '"tools":\[' "$out"
}

# enlist LABEL PID URL [KEY [SESSION [PROTOCOL [DURATION]]]]: a running
# server that every round loads; opens its session unless given one
# (nginx takes any; "-" for a stateless revision) and notes its RSS
# before any load.
enlisted=""
enlist() {
	local label=$1 pid=$2 url=$3 key=${4:-} sid=${5:-}
	local proto=${6:-$http_protocol} dur=${7:-$duration}
	if [ -z "$sid" ]; then
		sid=$(open_session "$url" "$key" "$proto") ||
		    die "$label: cannot open an MCP session"
	fi
	printf '%s %s %s %s %s %s\n' "$pid" "$url" "${key:--}" "$sid" \
	    "$proto" "$dur" >"$tmp/srv-$label"
	status_kib "$pid" VmRSS >"$tmp/idle-$label"
	: >"$tmp/fig-$label"
	enlisted="$enlisted $label"
}

# run_rounds: each round loads every enlisted server once, one after the
# other (with a warm-up before its first run), so that a change of load
# on the machine falls on all of them alike; each run's figures are kept.
run_rounds() {
	local r label pid url key sid proto dur
	for r in $(seq "$http_rounds"); do
		for label in $enlisted; do
			read -r pid url key sid proto dur <"$tmp/srv-$label"
			[ "$key" != - ] || key=""
			[ "$sid" != - ] || sid=""
			[ "$http_rounds" = 1 ] ||
			    say "bench:   round $r/$http_rounds: $label"
			load "$label" "$pid" "$url" "$key" "$sid" "$proto" \
			    "$dur" "$r"
			printf '%s %s %s %s %s %s\n' "$r_rps" "$r_p50" "$r_p99" \
			    "$r_requests" "$r_bad" "$r_err" >>"$tmp/fig-$label"
		done
	done
}

# median COLUMN FILE
median() {
	sort -g -k"$1,$1" "$2" | awk -v c="$1" '{ v[NR] = $c } END {
		if (NR % 2) print v[(NR + 1) / 2];
		else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# figures LABEL: r_* from its runs (the median throughput, p50 and p99,
# the fewest requests of a run, bad responses and errors of all runs, the
# peak RSS over all of them); then stops it.
figures() {
	local label=$1 pid rest
	read -r pid rest <"$tmp/srv-$label"
	r_hwm_kib=$(status_kib "$pid" VmHWM)
	r_idle_kib=$(cat "$tmp/idle-$label")
	kill -0 "$pid" 2>/dev/null || die "$label: the server died"
	stop "$pid"
	r_rps=$(median 1 "$tmp/fig-$label")
	r_p50=$(median 2 "$tmp/fig-$label")
	r_p99=$(median 3 "$tmp/fig-$label")
	r_requests=$(sort -n -k4,4 "$tmp/fig-$label" | awk 'NR == 1 { print $4 }')
	r_bad=$(awk '{ n += $5 } END { print n + 0 }' "$tmp/fig-$label")
	r_err=$(awk '{ n += $6 } END { print n + 0 }' "$tmp/fig-$label")
}

field() {
	printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# row LABEL: one table line from the r_* figures.
row() {
	awk -v l="$1" -v rps="$r_rps" -v p50="$r_p50" -v p99="$r_p99" \
	    -v hwm="$r_hwm_kib" -v idle="$r_idle_kib" -v bad="$r_bad" \
	    -v err="$r_err" 'BEGIN {
		printf "%-28s %10.0f %9.3f %9.3f %10.1f %9.1f %8d\n", l, rps,
		    p50 / 1000, p99 / 1000, hwm / 1024, idle / 1024, bad + err
	}'
}

# verdict DESCRIPTION VALUE OP LIMIT: prints a PASS/FAIL line.
failed=0
verdict() {
	if awk -v v="$2" -v l="$4" -v op="$3" 'BEGIN {
		exit !((op == ">=") ? v >= l : v <= l) }'; then
		printf '  PASS  %s\n' "$1"
	else
		printf '  FAIL  %s\n' "$1"
		failed=1
	fi
}

# ratio A B: A/B to 3 decimals (the verdicts compare these same figures).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

broken=0
check_clean() {
	if [ "$r_bad" != 0 ] || [ "$r_err" != 0 ]; then
		say "bench: $1: $r_bad bad responses, $r_err socket errors (see $results/wrk-$1.txt)"
		broken=1
	fi
	if [ "$r_requests" -lt 1000 ]; then
		say "bench: $1: only $r_requests requests completed"
		broken=1
	fi
}

version=$("$server" --version 2>&1 | head -n 1)
sdkver=$(cd "$sdkdir" && node -p \
    'require("./node_modules/@modelcontextprotocol/sdk/package.json").version' \
    2>/dev/null || echo '?')
ncpu=$(getconf _NPROCESSORS_ONLN)
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)

# ---------------------------------------------------------------- http
say "bench: http: wrk -t$threads -c$conns -d$duration --latency (warm-up $warmup)"

"$server" keygen bench --set management >"$tmp/keygen" 2>/dev/null ||
    die "keygen failed"
key=$(sed -n 1p "$tmp/keygen")
sed -n 2p "$tmp/keygen" >"$tmp/keyed.conf"
: >"$tmp/open.conf"
mkdir "$tmp/state-keyed" "$tmp/state-open" "$tmp/state-stdio"

# 1. sandbox-mcp as hosted: API key required on every request.
start sandbox-mcp "$tmp/keyed.log" "$server" --set management \
    --listen 127.0.0.1:0 --no-stdio -f "$tmp/keyed.conf" \
    --state-dir "$tmp/state-keyed"
node "$bench/mcp-session.mjs" "$srv_url" --key "$key" \
    --tools-out "$tmp/tools.json" >/dev/null ||
    die "cannot fetch the tool list"
# The whole reply to one tools/list with a 10-digit id, as the load's
# requests have: nginx serves these bytes.
fetch_reply "$srv_url" "$key" "$http_protocol" "$tmp/reply.json" ||
    die "cannot fetch one tools/list reply"
say "bench:   sandbox-mcp (api key) at $srv_url"
enlist keyed "$srv_pid" "$srv_url" "$key"

# 2. sandbox-mcp without keys (loopback only).
start sandbox-mcp "$tmp/open.log" "$server" --set management \
    --listen 127.0.0.1:0 --no-stdio -f "$tmp/open.conf" \
    --state-dir "$tmp/state-open"
say "bench:   sandbox-mcp (no key) at $srv_url"
enlist open "$srv_pid" "$srv_url"

# 2b. The same two with another binary (BENCH_HTTP_COMPARE), in this run.
c_key="" c_open=""
if [ -n "${BENCH_HTTP_COMPARE:-}" ]; then
	[ -x "$BENCH_HTTP_COMPARE" ] || die "$BENCH_HTTP_COMPARE: not executable"
	mkdir "$tmp/state-ckeyed" "$tmp/state-copen"
	start compare "$tmp/ckeyed.log" "$BENCH_HTTP_COMPARE" --set management \
	    --listen 127.0.0.1:0 --no-stdio -f "$tmp/keyed.conf" \
	    --state-dir "$tmp/state-ckeyed"
	say "bench:   $BENCH_HTTP_COMPARE (api key) at $srv_url"
	enlist compare-keyed "$srv_pid" "$srv_url" "$key"
	start compare "$tmp/copen.log" "$BENCH_HTTP_COMPARE" --set management \
	    --listen 127.0.0.1:0 --no-stdio -f "$tmp/open.conf" \
	    --state-dir "$tmp/state-copen"
	say "bench:   $BENCH_HTTP_COMPARE (no key) at $srv_url"
	enlist compare-open "$srv_pid" "$srv_url"
fi

# 3. The floor: nginx, one worker process, answering POST /mcp with the
# reply above as a static file (the static module answers POST with 405;
# error_page turns that into the file itself, with status 200).  Keep-alive
# connections are never closed after a count, as sandbox-mcp's are not.
# start_nginx NAME REPLY: one such nginx serving the file REPLY; sets
# srv_pid, srv_url.
start_nginx() {
	local ng=$tmp/$1 port i
	mkdir "$ng" "$ng/root"
	cp "$2" "$ng/root/reply.json"
	port=$(node -e 'const s = require("net").createServer();
	    s.listen(0, "127.0.0.1", () => { console.log(s.address().port);
	    s.close(); });') || die "no free port for nginx"
	cat >"$ng/nginx.conf" <<-EOF
	worker_processes 1;
	daemon off;
	master_process off;
	pid $ng/nginx.pid;
	error_log $ng/error.log notice;
	events { worker_connections 1024; }
	http {
		access_log off;
		client_body_temp_path $ng/body;
		proxy_temp_path $ng/proxy;
		fastcgi_temp_path $ng/fastcgi;
		uwsgi_temp_path $ng/uwsgi;
		scgi_temp_path $ng/scgi;
		keepalive_requests 1000000000;
		open_file_cache max=16;
		sendfile on;
		server {
			listen 127.0.0.1:$port;
			root $ng/root;
			default_type application/json;
			add_header Cache-Control no-store;
			location = /mcp {
				try_files /reply.json =404;
				error_page 405 =200 /reply.json;
			}
		}
	}
	EOF
	"$nginx" -c "$ng/nginx.conf" </dev/null >"$ng/out" 2>&1 &
	srv_pid=$!
	pids="$pids $srv_pid"
	srv_url=http://127.0.0.1:$port/mcp
	for i in $(seq 100); do
		curl -s -o "$ng/check.json" -X POST --data '{}' "$srv_url" &&
		    break
		kill -0 "$srv_pid" 2>/dev/null ||
		    { cat "$ng/out" "$ng/error.log" >&2; die "nginx exited at start"; }
		sleep 0.1
	done
	cmp -s "$ng/check.json" "$2" ||
	    { cat "$ng/error.log" >&2; die "nginx: not serving the reply"; }
}

nginx_row="" n_rps=0 n_p99=0
if [ -z "${BENCH_SKIP_NGINX:-}" ]; then
	start_nginx nginx "$tmp/reply.json"
	say "bench:   nginx $("$nginx" -v 2>&1 | sed 's,.*/,,') at $srv_url"
	enlist nginx "$srv_pid" "$srv_url" "" static
fi

# 4. The SDK server, same tool list.
sdk_row="" s_rps=0 s_p99=0
if [ -z "${BENCH_SKIP_SDK:-}" ]; then
	start sdk-server "$tmp/sdk.log" node "$sdkdir/server.mjs" 0 \
	    "$tmp/tools.json"
	say "bench:   SDK server at $srv_url"
	# The same list must come back.
	node "$bench/mcp-session.mjs" "$srv_url" --tools-out "$tmp/sdk-tools.json" \
	    >/dev/null || die "SDK server: cannot fetch its tool list"
	cmp -s "$tmp/tools.json" "$tmp/sdk-tools.json" ||
	    die "SDK server: its tool list differs from sandbox-mcp's"
	enlist sdk "$srv_pid" "$srv_url"
fi

# 5. The keyed server at each other revision it speaks, each on a process
# of its own (so that each one's figures, RSS included, are its own),
# beside an nginx serving the reply bytes of that revision (their sizes
# differ: 2025-03-26 lists no outputSchema, 2026-07-28 adds x-mcp-header
# to the schemas and resultType, ttlMs, cacheScope and _meta to the
# result).  BENCH_HTTP_PROTOCOL's own is the keyed and nginx runs above.
revs=$(printf '%s\n' "$http_protocol" $http_protocols | sort -u |
    tr '\n' ' ')
for rev in $revs; do
	[ "$rev" != "$http_protocol" ] || continue
	mkdir "$tmp/state-keyed-$rev"
	start sandbox-mcp "$tmp/keyed-$rev.log" "$server" --set management \
	    --listen 127.0.0.1:0 --no-stdio -f "$tmp/keyed.conf" \
	    --state-dir "$tmp/state-keyed-$rev"
	fetch_reply "$srv_url" "$key" "$rev" "$tmp/reply-$rev.json" ||
	    die "cannot fetch one tools/list reply at $rev"
	say "bench:   sandbox-mcp (api key) at $srv_url, protocol $rev" \
	    "$(stateless "$rev" && echo '(stateless) ')for $rev_duration"
	enlist "keyed-$rev" "$srv_pid" "$srv_url" "$key" "" "$rev" \
	    "$rev_duration"
	if [ -z "${BENCH_SKIP_NGINX:-}" ]; then
		start_nginx "nginx-$rev" "$tmp/reply-$rev.json"
		enlist "nginx-$rev" "$srv_pid" "$srv_url" "" \
		    "$(stateless "$rev" && echo - || echo static)" "$rev" \
		    "$rev_duration"
	fi
done

run_rounds
figures keyed
check_clean keyed
ours_key=$(row "sandbox-mcp (api key)")
k_rps=$r_rps k_p50=$r_p50 k_p99=$r_p99 k_hwm=$r_hwm_kib
figures open
check_clean open
ours_open=$(row "sandbox-mcp (no key)")
o_rps=$r_rps o_p99=$r_p99 o_hwm=$r_hwm_kib
if [ -n "${BENCH_HTTP_COMPARE:-}" ]; then
	figures compare-keyed
	check_clean compare-keyed
	c_key=$(row "compared (api key)")
	ck_rps=$r_rps ck_p99=$r_p99
	figures compare-open
	check_clean compare-open
	c_open=$(row "compared (no key)")
	co_rps=$r_rps co_p99=$r_p99
fi
if [ -z "${BENCH_SKIP_NGINX:-}" ]; then
	figures nginx
	check_clean nginx
	nginx_row=$(row "nginx, one worker (floor)")
	n_rps=$r_rps n_p99=$r_p99
fi
if [ -z "${BENCH_SKIP_SDK:-}" ]; then
	figures sdk
	check_clean sdk
	sdk_row=$(row "TypeScript SDK $sdkver")
	s_rps=$r_rps s_p99=$r_p99
fi

# Per revision: the keyed server's and its nginx floor's figures.
declare -A rv_row rv_rps rv_p50 rv_p99 rv_n_rps rv_n_p99 rv_bytes rv_dur
for rev in $revs; do
	if [ "$rev" = "$http_protocol" ]; then
		rv_rps[$rev]=$k_rps rv_p50[$rev]=$k_p50 rv_p99[$rev]=$k_p99
		rv_n_rps[$rev]=$n_rps rv_n_p99[$rev]=$n_p99
		rv_bytes[$rev]=$(wc -c <"$tmp/reply.json")
		rv_dur[$rev]=$duration
		continue
	fi
	figures "keyed-$rev"
	check_clean "keyed-$rev"
	rv_rps[$rev]=$r_rps rv_p50[$rev]=$r_p50 rv_p99[$rev]=$r_p99
	rv_bytes[$rev]=$(wc -c <"$tmp/reply-$rev.json")
	rv_dur[$rev]=$rev_duration
	rv_n_rps[$rev]=0 rv_n_p99[$rev]=0
	if [ -z "${BENCH_SKIP_NGINX:-}" ]; then
		figures "nginx-$rev"
		check_clean "nginx-$rev"
		rv_n_rps[$rev]=$r_rps rv_n_p99[$rev]=$r_p99
	fi
done

ntools=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1])).tools.length' \
    "$tmp/tools.json")
tlbytes=$(wc -c <"$tmp/tools.json")

{
	echo "HTTP: POST /mcp tools/list, one session, keep-alive"
	echo "load: wrk -t$threads -c$conns -d$duration --latency" \
	    "(after a $warmup warm-up per server), bench/http.lua;" \
	    "$http_rounds round(s), each server once a round in turn;" \
	    "medians of the rounds"
	echo "tool list: $ntools tools ($tlbytes bytes of result, protocol" \
	    "$http_protocol), identical on both servers"
	echo "machine: $ncpu CPUs ($cpu), $(uname -sr); $version;" \
	    "node $(node --version); wrk $(wrk -v 2>&1 | sed -n 's/^wrk \([^ ]*\).*/\1/p')"
	echo "note: wrk and the server under test share these $ncpu CPUs;" \
	    "both servers get the same -t$threads load, so the comparison is fair," \
	    "but absolute figures are lower than on a machine with a separate client."
	echo
	printf '%-28s %10s %9s %9s %10s %9s %8s\n' server "req/s" "p50 ms" \
	    "p99 ms" "peak MiB" "idle MiB" "errors"
	echo "$ours_key"
	echo "$ours_open"
	[ -z "$c_key" ] || echo "$c_key"
	[ -z "$c_open" ] || echo "$c_open"
	[ -z "$nginx_row" ] || echo "$nginx_row"
	[ -z "$sdk_row" ] || echo "$sdk_row"
	echo
	[ -z "$c_key" ] ||
	    echo "compared: $BENCH_HTTP_COMPARE ($("$BENCH_HTTP_COMPARE" --version 2>&1 | head -n 1))"
	if [ -n "$nginx_row" ]; then
		echo "ratios to the nginx floor (throughput, p99 over nginx's p99):"
		echo "  sandbox-mcp (api key): throughput $(ratio "$k_rps" "$n_rps")x," \
		    "p99 $(ratio "$k_p99" "$n_p99")x"
		echo "  sandbox-mcp (no key):  throughput $(ratio "$o_rps" "$n_rps")x," \
		    "p99 $(ratio "$o_p99" "$n_p99")x"
		if [ -n "$c_key" ]; then
			echo "  compared (api key):    throughput $(ratio "$ck_rps" "$n_rps")x," \
			    "p99 $(ratio "$ck_p99" "$n_p99")x"
			echo "  compared (no key):     throughput $(ratio "$co_rps" "$n_rps")x," \
			    "p99 $(ratio "$co_p99" "$n_p99")x"
		fi
		[ -z "$sdk_row" ] ||
		    echo "  TypeScript SDK:        throughput $(ratio "$s_rps" "$n_rps")x," \
		    "p99 $(ratio "$s_p99" "$n_p99")x"
	fi
	if [ -n "$c_key" ]; then
		echo "ratios to the compared binary: api key throughput" \
		    "$(ratio "$k_rps" "$ck_rps")x, p99 $(ratio "$k_p99" "$ck_p99")x;" \
		    "no key throughput $(ratio "$o_rps" "$co_rps")x," \
		    "p99 $(ratio "$o_p99" "$co_p99")x"
	fi
	echo
	echo "tools/list at each protocol revision, sandbox-mcp with an api key"
	echo "(2025 revisions on a session; 2026-07-28 stateless: no session,"
	echo "MCP-Protocol-Version, Mcp-Method and params._meta on every"
	echo "request), against nginx, one worker, serving that revision's reply:"
	printf '  %-21s %7s %5s %10s %8s %8s %11s %8s %7s\n' revision \
	    "bytes" "run" "req/s" "p50 ms" "p99 ms" "nginx req/s" \
	    "p99 ms" "ratio"
	for rev in $revs; do
		awk -v r="$rev$(stateless "$rev" && echo ' stateless')" \
		    -v b="${rv_bytes[$rev]}" -v d="${rv_dur[$rev]}" \
		    -v rps="${rv_rps[$rev]}" -v p50="${rv_p50[$rev]}" \
		    -v p99="${rv_p99[$rev]}" -v nrps="${rv_n_rps[$rev]}" \
		    -v np99="${rv_n_p99[$rev]}" 'BEGIN {
			printf "  %-21s %7d %5s %10.0f %8.3f %8.3f %11.0f %8.3f %7.3f\n",
			    r, b, d, rps, p50 / 1000, p99 / 1000, nrps,
			    np99 / 1000, (nrps > 0 ? rps / nrps : 0) }'
	done
	echo "targets at each revision (sandbox-mcp with an api key):"
	for rev in $revs; do
		if [ "${rv_n_rps[$rev]}" != 0 ]; then
			verdict "$rev: throughput >= ${target_nginx}x nginx's ($(ratio "${rv_rps[$rev]}" "${rv_n_rps[$rev]}")x)" \
			    "$(ratio "${rv_rps[$rev]}" "${rv_n_rps[$rev]}")" ">=" "$target_nginx"
		fi
		verdict "$rev: p99 <= $target_p99_ms ms ($(awk -v p="${rv_p99[$rev]}" 'BEGIN { printf "%.2f", p / 1000 }') ms)" \
		    "$(awk -v p="${rv_p99[$rev]}" 'BEGIN { printf "%.3f", p / 1000 }')" "<=" "$target_p99_ms"
	done
	[ -z "${BENCH_SKIP_NGINX:-}" ] ||
	    echo "  (nginx skipped: no throughput target)"
	if [ -n "$sdk_row" ]; then
		echo "ratios, sandbox-mcp (api key) / SDK:" \
		    "throughput $(ratio "$k_rps" "$s_rps")x," \
		    "p99 $(ratio "$k_p99" "$s_p99")"
		echo "ratios, sandbox-mcp (no key) / SDK:" \
		    "throughput $(ratio "$o_rps" "$s_rps")x," \
		    "p99 $(ratio "$o_p99" "$s_p99")"
		echo "targets (sandbox-mcp with an api key, the hosted setup):"
		verdict "throughput >= ${target_tput}x the SDK's ($(ratio "$k_rps" "$s_rps")x)" \
		    "$(ratio "$k_rps" "$s_rps")" ">=" "$target_tput"
		verdict "p99 <= 1/5 of the SDK's ($(ratio "$k_p99" "$s_p99"))" \
		    "$(ratio "$k_p99" "$s_p99")" "<=" "$target_p99"
	else
		echo "targets (SDK server skipped: no ratios):"
	fi
	verdict "peak RSS <= $target_rss_mib MiB ($(mib "$k_hwm") MiB)" \
	    "$(mib "$k_hwm")" "<=" "$target_rss_mib"
	if [ -n "$sdk_row" ]; then
		echo "same targets without keys:"
		verdict "throughput >= ${target_tput}x ($(ratio "$o_rps" "$s_rps")x)" \
		    "$(ratio "$o_rps" "$s_rps")" ">=" "$target_tput"
		verdict "p99 <= 1/5 ($(ratio "$o_p99" "$s_p99"))" \
		    "$(ratio "$o_p99" "$s_p99")" "<=" "$target_p99"
		verdict "peak RSS <= $target_rss_mib MiB ($(mib "$o_hwm") MiB)" \
		    "$(mib "$o_hwm")" "<=" "$target_rss_mib"
	fi
	[ "$broken" = 0 ] || echo "BROKEN RUN: non-200 responses or socket errors (see wrk-*.txt)"
} >"$results/http.txt"
cat "$results/http.txt"

# --------------------------------------------------------------- stdio
# The headline figure lets the scheduler place client and server as it
# likes.  On a VM the round trip depends on whether the two end up on one
# CPU (a wake-up on the same CPU) or on two (a cross-CPU wake-up of an idle
# vCPU costs tens of microseconds), so both placements are measured as well
# when taskset is there; they bracket the headline figure.
echo
say "bench: stdio: $pings sequential pings"
cc -O2 -o "$builddir/bench/stdio-ping" "$bench/stdio-ping.c" ||
    die "cannot build stdio-ping"

# ping LABEL [CLIENT-CPU SERVER-CPU]: one stdio-ping run, one table row.
ping_row() {
	local label=$1 out=$tmp/stdio-$1.out
	local -a client=() srv=()
	if [ $# -eq 3 ]; then
		client=(taskset -c "$2")
		srv=(taskset -c "$3")
	fi
	"${client[@]}" "$builddir/bench/stdio-ping" -n "$pings" \
	    "${srv[@]}" "$server" --set management -f /dev/null \
	    --state-dir "$tmp/state-stdio" >"$out" 2>"$tmp/stdio.log" ||
	    { cat "$out" "$tmp/stdio.log" >&2; die "stdio ping run failed"; }
	awk -v l="$label" -F': ' '{ v[$1] = $2 } END {
		printf "%-26s %10s %8s %8s %8s\n", l, v["median_us"],
		    v["p95_us"], v["p99_us"], v["mean_us"] }' "$out"
}

{
	echo "stdio: $pings sequential ping round trips (after 100 untimed)," \
	    "one JSON-RPC line each way, bench/stdio-ping"
	echo "machine: $ncpu CPUs ($cpu), $(uname -sr); $version"
	echo
	printf '%-26s %10s %8s %8s %8s\n' placement "median us" "p95 us" \
	    "p99 us" "mean us"
	ping_row "scheduler's choice"
	if command -v taskset >/dev/null 2>&1 && [ "$ncpu" -ge 2 ]; then
		ping_row "same CPU (pinned)" 0 0
		ping_row "two CPUs (pinned)" 0 1
	fi
} >"$results/stdio.txt"
cat "$results/stdio.txt"

# ----------------------------------------------------------- slowloris
# bench/slowloris.py prints its table, writes slowloris.txt and
# slowloris.json, and exits 1 when the target is missed or the run is
# broken.
if [ -z "${BENCH_SKIP_SLOWLORIS:-}" ]; then
	echo
	say "bench: slowloris: legitimate requests under 1,100 slow connections"
	command -v python3 >/dev/null 2>&1 || die "python3 is needed"
	if ! SANDBOX_MCP_BUILDDIR=$builddir python3 "$bench/slowloris.py"; then
		say "bench: slowloris: the target missed or the run broken"
		failed=1
	fi
fi

# ----------------------------------------------------------- lifecycle
# bench/lifecycle.py prints its table, writes lifecycle.txt and
# lifecycle.json, removes every container it made, and exits 1 when a
# target is missed or the run is broken.
if [ -z "${BENCH_SKIP_LIFECYCLE:-}" ]; then
	echo
	say "bench: lifecycle: create_sandbox/destroy_sandbox against docker run"
	command -v python3 >/dev/null 2>&1 || die "python3 is needed"
	if ! SANDBOX_MCP_BUILDDIR=$builddir python3 "$bench/lifecycle.py"; then
		say "bench: lifecycle: a target missed or the run broken"
		failed=1
	fi
fi

# ---------------------------------------------------------------- exec
# bench/exec.py prints its table, writes exec.txt and exec.json, removes
# every container it made, and exits 1 when a target is missed or the
# run is broken.
if [ -z "${BENCH_SKIP_EXEC:-}" ]; then
	echo
	say "bench: exec: exec_command against docker exec and nsenter"
	command -v python3 >/dev/null 2>&1 || die "python3 is needed"
	if ! SANDBOX_MCP_BUILDDIR=$builddir python3 "$bench/exec.py"; then
		say "bench: exec: a target missed or the run broken"
		failed=1
	fi
fi

# --------------------------------------------------------------- files
# bench/files.py prints its table, writes files.txt and files.json,
# removes every container it made, and exits 1 when a target is missed
# or the run is broken.
if [ -z "${BENCH_SKIP_FILES:-}" ]; then
	echo
	say "bench: files: file tools against docker exec cat"
	command -v python3 >/dev/null 2>&1 || die "python3 is needed"
	if ! SANDBOX_MCP_BUILDDIR=$builddir python3 "$bench/files.py"; then
		say "bench: files: a target missed or the run broken"
		failed=1
	fi
fi

# -------------------------------------------------------------- layers
# bench/layers.py prints its table, writes layers.txt and layers.json,
# destroys the sandboxes it made, and exits 1 when a target is missed or
# the run is broken.
if [ -z "${BENCH_SKIP_LAYERS:-}" ]; then
	echo
	say "bench: layers: stack depth and squash"
	command -v python3 >/dev/null 2>&1 || die "python3 is needed"
	if ! SANDBOX_MCP_BUILDDIR=$builddir python3 "$bench/layers.py"; then
		say "bench: layers: a target missed or the run broken"
		failed=1
	fi
fi

# --------------------------------------------------------------- store
# bench/store-bench: each statement the loop runs on the store at
# 100,000 usage rows; exits 1 when one takes over 5 ms.
if [ -z "${BENCH_SKIP_STORE:-}" ]; then
	echo
	say "bench: store: statements at 100,000 usage rows"
	if ! "$builddir/bench/store-bench"; then
		say "bench: store: a statement took over 5 ms"
		failed=1
	fi
fi

# ----------------------------------------------------------------- obs
# bench/obs.py prints its table, writes obs.txt and obs.json, removes
# every container it made, and exits 1 when a target is missed or the
# run is broken.
if [ -z "${BENCH_SKIP_OBS:-}" ]; then
	echo
	say "bench: obs: snapshot, trace and events against their floors"
	command -v python3 >/dev/null 2>&1 || die "python3 is needed"
	if ! SANDBOX_MCP_BUILDDIR=$builddir python3 "$bench/obs.py"; then
		say "bench: obs: a target missed or the run broken"
		failed=1
	fi
fi

# ------------------------------------------------------------- hostile
# bench/hostile.py prints its table, writes hostile.txt and hostile.json,
# removes every container it made, and exits 1 when a target is missed
# or the run is broken.
if [ -z "${BENCH_SKIP_HOSTILE:-}" ]; then
	echo
	say "bench: hostile: the sandbox boundary under attack"
	command -v python3 >/dev/null 2>&1 || die "python3 is needed"
	if ! SANDBOX_MCP_BUILDDIR=$builddir python3 "$bench/hostile.py" \
	    ${BENCH_HOSTILE_COMPARE:+--compare "$BENCH_HOSTILE_COMPARE"}; then
		say "bench: hostile: a target missed or the run broken"
		failed=1
	fi
fi

echo
echo "results in $results/"
if [ "$broken" != 0 ]; then
	say "bench: BROKEN RUN"
	exit 1
fi
exit "$failed"
