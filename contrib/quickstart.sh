#!/bin/bash
# quickstart.sh: set up and start sandbox-mcp on a fresh Debian 12 machine,
# from a source checkout, with one command.
#
# It installs the build and runtime packages, makes sure the Docker daemon is
# running, builds and installs sandbox-mcp, adds a workspace root to
# /etc/sandbox-mcp.conf if none is configured (/srv/workspaces), builds the
# local sandbox image sandbox-mcp/debian:bookworm, makes an API key for
# the examples it prints if none is configured, and finally runs the
# server in the foreground with the management, runtime and observability
# sets on http://127.0.0.1:8080.
#
# It must run as root; started as another user it re-runs itself with sudo.
# Running it again is safe: finished steps are skipped or repeated harmlessly.
#
# usage: contrib/quickstart.sh [--no-run] [--listen ADDR:PORT] [-h]

set -eu
set -o pipefail

prog=quickstart.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/.." && pwd)

conf=/etc/sandbox-mcp.conf
keyfile=/etc/sandbox-mcp.quickstart-key
statedir=/var/lib/sandbox-mcp
sets="--set management --set runtime --set observability"
default_root=/srv/workspaces
listen=127.0.0.1:8080
run=1

packages="build-essential autoconf automake libtool pkg-config libevent-dev
libcjson-dev libarchive-dev libzstd-dev libssl-dev libgit2-dev libseccomp-dev libsqlite3-dev mandoc docker.io
debootstrap busybox-static ca-certificates curl e2fsprogs zstd libarchive-tools"

usage() {
	cat <<EOF
usage: $prog [--no-run] [--listen ADDR:PORT] [-h]

Install, build and start sandbox-mcp on Debian 12 from this source checkout:
  1. apt-get install the build and runtime packages (Docker included)
  2. start the Docker daemon if it is not answering
  3. ./autogen.sh, ./configure, make, make install
  4. add "workspace-root $default_root" to $conf if no workspace root is set,
     and an API key named quickstart (the key in $keyfile) if none is
  5. build the sandbox image sandbox-mcp/debian:bookworm (contrib/build-image.sh)
  6. run: sandbox-mcp $sets --listen $listen --no-stdio

  --no-run             do everything except starting the server
  --listen ADDR:PORT   address for the server (default $listen)
  -h, --help           show this text

Runs as root (re-runs itself with sudo otherwise). Safe to run again.
EOF
}

log() {
	printf '\n==> %s\n' "$*" >&2
}

note() {
	printf '    %s\n' "$*" >&2
}

die() {
	printf '%s: error: %s\n' "$prog" "$*" >&2
	exit 1
}

while [ "$#" -gt 0 ]; do
	case "$1" in
	-h|--help)
		usage
		exit 0
		;;
	--no-run)
		run=0
		;;
	--listen)
		if [ "$#" -lt 2 ] || [ -z "$2" ]; then
			echo "$prog: --listen needs ADDR:PORT" >&2
			exit 2
		fi
		listen=$2
		shift
		;;
	--listen=*)
		listen=${1#*=}
		;;
	*)
		echo "$prog: unknown argument: $1 (see $prog -h)" >&2
		exit 2
		;;
	esac
	shift
done
case "$listen" in
*:*) ;;
*) echo "$prog: --listen needs ADDR:PORT, got: $listen" >&2; exit 2 ;;
esac

# Root, or re-run under sudo.
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 ||
	    die "this script must run as root, and sudo is not installed; run it as root"
	echo "$prog: root is needed; re-running with sudo" >&2
	exec sudo -- bash "$here/quickstart.sh" "$@"
fi

if [ ! -f "$src/configure.ac" ] || [ ! -f "$src/src/sandbox-mcp.c" ]; then
	die "$src does not look like a sandbox-mcp source checkout"
fi

if [ -r /etc/os-release ]; then
	# shellcheck disable=SC1091
	os_id=$(. /etc/os-release && echo "${ID:-}:${VERSION_ID:-}")
	case "$os_id" in
	debian:12) ;;
	*) note "warning: this script is made for Debian 12; this system is $os_id" ;;
	esac
fi
command -v apt-get >/dev/null 2>&1 || die "apt-get not found; this script needs Debian"

# 1. Packages.
log "Installing packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update || die "apt-get update failed; check the network and /etc/apt/sources.list*"

want=
for p in $packages; do
	if [ "$p" = docker.io ] && command -v dockerd >/dev/null 2>&1 &&
	    ! dpkg-query -W -f='${Status}' docker.io 2>/dev/null |
	    grep -q 'install ok installed'; then
		# Docker from another source (docker-ce, say) is already here;
		# installing docker.io would replace it.
		note "Docker is already installed ($(command -v dockerd)); not installing docker.io"
		continue
	fi
	want="$want $p"
done
unknown=
for p in $want; do
	apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || unknown="$unknown $p"
done
[ -z "$unknown" ] ||
    die "these packages are not available from the configured apt sources:$unknown"
# shellcheck disable=SC2086
apt-get install -y $want || die "apt-get install failed (packages:$want)"

# 2. Docker daemon.
log "Checking the Docker daemon"
if docker info >/dev/null 2>&1; then
	note "Docker is running"
else
	if [ "$(ps -p 1 -o comm= 2>/dev/null)" = systemd ]; then
		note "starting it with systemctl start docker"
		systemctl start docker || die "systemctl start docker failed; see: journalctl -u docker"
	else
		# No systemd: start dockerd in its own session so that it is
		# not stopped along with the server by Ctrl-C.
		note "starting dockerd in the background (log: /var/log/dockerd.log)"
		nohup setsid dockerd >>/var/log/dockerd.log 2>&1 </dev/null &
	fi
	i=0
	until docker info >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -le 60 ] ||
		    die "the Docker daemon did not answer within 60 s; see /var/log/dockerd.log or journalctl -u docker"
		sleep 1
	done
	note "Docker is running"
fi

# 3. Build and install. When started through sudo by the owner of the
# checkout, build as that user so the tree does not fill with root-owned files.
log "Building sandbox-mcp in $src"
as_user=()
if [ -n "${SUDO_USER:-}" ] && [ "$SUDO_USER" != root ] &&
    [ "$(stat -c %U "$src")" = "$SUDO_USER" ]; then
	as_user=(runuser -u "$SUDO_USER" --)
	note "building as $SUDO_USER"
fi
cd "$src"
if [ ! -x configure ]; then
	"${as_user[@]}" ./autogen.sh || die "./autogen.sh failed"
fi
if [ ! -f Makefile ] || [ ! -f config.status ] || [ configure -nt config.status ]; then
	"${as_user[@]}" ./configure || die "./configure failed; see config.log"
fi
"${as_user[@]}" make -j"$(nproc)" || die "make failed"
log "Installing"
make install || die "make install failed"
if [ ! -d "$statedir" ]; then
	install -d -m 0700 "$statedir"
fi
bin=/usr/local/bin/sandbox-mcp
[ -x "$bin" ] || bin=$(command -v sandbox-mcp) ||
    die "sandbox-mcp was not found after make install"
note "installed $bin"

# 4. Configuration: make sure there is at least one workspace root.
log "Checking $conf"
if [ ! -f "$conf" ]; then
	printf '# sandbox-mcp configuration; see sandbox-mcp.conf(5).\n' >"$conf"
	chmod 0644 "$conf"
	note "created $conf"
fi
if grep -Eq '^[[:space:]]*workspace-root([[:space:]]|$)' "$conf"; then
	note "a workspace root is already configured:"
	grep -E '^[[:space:]]*workspace-root([[:space:]]|$)' "$conf" | sed 's/^/      /' >&2
else
	mkdir -p "$default_root"
	# Start the addition on a line of its own even if the file lacks a
	# final newline.
	[ ! -s "$conf" ] || [ -z "$(tail -c 1 "$conf")" ] || echo >>"$conf"
	printf '\n# Added by contrib/quickstart.sh: host directories under here can\n# be copied into sandboxes.\nworkspace-root %s\n' \
	    "$default_root" >>"$conf"
	note "no workspace root was configured: added 'workspace-root $default_root' to $conf"
	note "put the projects you want to hand to sandboxes under $default_root"
fi
# An API key for the examples below, made once (its hash goes to the
# configuration, the key itself to $keyfile, readable by root only).
if ! grep -Eq '^[[:space:]]*api-key[[:space:]]' "$conf"; then
	made=$("$bin" keygen quickstart --set management --set runtime \
	    --set observability) || die "sandbox-mcp keygen failed"
	(umask 077 && printf '%s\n' "$made" | sed -n 1p >"$keyfile")
	[ -z "$(tail -c 1 "$conf")" ] || echo >>"$conf"
	printf '\n# Added by contrib/quickstart.sh: the key is in %s.\n%s\n' \
	    "$keyfile" "$(printf '%s\n' "$made" | sed -n 2p)" >>"$conf"
	note "added an API key named quickstart to $conf; the key is in $keyfile"
fi
"$bin" -n -f "$conf" --set management >&2 ||
    die "$conf has errors (see above); fix them and run $prog again"

# 5. The sandbox image.
log "Building the sandbox image"
"$here/build-image.sh" >/dev/null || die "building the sandbox image failed"

# 6. Run.
host=${listen%:*}
port=${listen##*:}
host=${host#[}
host=${host%]}
case "$host" in
*:*) url_host="[$host]" ;;
*) url_host=$host ;;
esac
base="http://$url_host:$port"
key='YOUR_KEY'
if [ -r "$keyfile" ] && grep -Eq '^[[:space:]]*api-key[[:space:]]+quickstart[[:space:]]' "$conf"; then
	key=$(cat "$keyfile")
fi
auth=" -H 'Authorization: Bearer $key'"

cat <<EOF

sandbox-mcp is installed. It serves the management, runtime and
observability tool sets. Try it from another terminal:

  # HTTP, MCP (streamable HTTP): one stateless call at protocol 2026-07-28
  curl -s $base/mcp$auth \\
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \\
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: list_docker_images' \\
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_docker_images","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"curl","version":"1"}}}}'

  # HTTP, REST: the same tools as plain requests
  curl -s $base/v1/docker-images$auth
  curl -s $base/v1/workspace-directories$auth

  # stdio: what an agent host starts (one JSON-RPC message a line)
  printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \\
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \\
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_docker_images"}}' |
    $bin $sets

The key is in $keyfile (its hash in $conf); make one per
user with "sandbox-mcp keygen NAME --set ...". Agent hosts (Claude Code,
Codex, VS Code) register the stdio server as in contrib/clients/README.
To keep the HTTP server running as a service: contrib/sandbox-mcp.service.
Manual: man sandbox-mcp. Ctrl-C in this terminal stops the server.
EOF

if [ "$run" -eq 0 ]; then
	echo
	echo "Not starting the server (--no-run). Start it with:"
	echo "  $bin $sets --listen $listen --no-stdio"
	exit 0
fi

# Something already listening there (a previous run, or the service)?
if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
	echo
	echo "Something is already listening on $listen (a sandbox-mcp service started"
	echo "earlier?), so not starting another server. Use --listen to pick another port."
	exit 0
fi

echo
echo "Starting: $bin $sets --listen $listen --no-stdio  (Ctrl-C stops it)"
echo
# shellcheck disable=SC2086
exec "$bin" $sets --listen "$listen" --no-stdio
