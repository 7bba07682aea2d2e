#!/bin/bash
# conformance.sh: the official MCP conformance suite
# (@modelcontextprotocol/conformance) against sandbox-mcp over streamable
# HTTP, for the scenarios that need no fixture tools.

set -u
. "$(dirname "$0")/common.bash"

start_http_server --set management -f /dev/null
failed=0
for scenario in server-initialize ping tools-list logging-set-level \
    dns-rebinding-protection; do
	out=$work/$scenario.txt
	(cd "$confdir" && npx --no-install conformance server \
	    --url "http://127.0.0.1:$port/mcp" --scenario "$scenario") \
	    >"$out" 2>&1
	rc=$?
	summary=$(grep -E '^Passed: [0-9]+/[0-9]+, 0 failed' "$out")
	if [ $rc -eq 0 ] && [ -n "$summary" ]; then
		echo "ok $scenario: $summary"
	else
		echo "FAIL $scenario (exit $rc)"
		sed 's/^/  /' "$out"
		failed=1
	fi
done
exit $failed
