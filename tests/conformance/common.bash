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

conf_tag=conf
. "$srcconf/server.bash"
