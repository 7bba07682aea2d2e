#!/bin/bash
# conformance.sh: the official MCP conformance suite
# (@modelcontextprotocol/conformance 0.2.0-alpha.12, on Node 22) against
# sandbox-mcp over streamable HTTP, every scenario that protocol revision
# 2026-07-28 requires (and those it runs unscored). The checks that need
# fixture tools, resources, prompts, completions, elicitation, sampling or
# tasks the server does not have are listed in expected.py with the
# reason; each must fail exactly that way, and every other check pass.

set -u
. "$(dirname "$0")/common.bash"

start_http_server --set management -f /dev/null
(cd "$confdir" && "$node22" node_modules/.bin/conformance server \
    --url "http://127.0.0.1:$port/mcp" --requirements 2026-07-28 \
    -o "$work/out") >"$work/suite.txt" 2>&1
rc=$?
grep -E '^(Total|Running requirements)' "$work/suite.txt"
python3 "$confdir/expected.py" "$work/out" || {
	echo "suite exit status $rc; its output:"
	sed 's/^/  /' "$work/suite.txt"
	exit 1
}
