#!/bin/bash
# contrib-image.sh: contrib/build-image.sh builds the user image
# sandbox-mcp/debian:bookworm (bash, coreutils, git, python3, ps from
# procps) with no registry, and a second run finds it and skips the
# build.

set -u
src=${SANDBOX_MCP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
image=sandbox-mcp/debian:bookworm

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

out=$(bash "$src/contrib/build-image.sh" 2>/tmp/contrib-image.$$.log) ||
    { cat /tmp/contrib-image.$$.log >&2; rm -f /tmp/contrib-image.$$.log;
      fail "build-image.sh failed"; }
rm -f /tmp/contrib-image.$$.log
[ "$out" = "$image" ] || fail "build-image.sh printed '$out', not $image"

versions=$(docker run --rm --network none "$image" \
    bash -c 'git --version && python3 --version && ls --version | head -1 &&
    ps --version && test -x /bin/sh && echo sh-ok') ||
    fail "the image does not run"
for want in "git version" "Python 3" "coreutils" "procps" "sh-ok"; do
	case $versions in
	*"$want"*) ;;
	*) fail "the image lacks $want: $versions" ;;
	esac
done

start=$(date +%s)
out=$(bash "$src/contrib/build-image.sh" 2>&1) || fail "second run failed"
took=$(( $(date +%s) - start ))
[ "$took" -le 5 ] || fail "second run took ${took}s: it did not skip"
case $out in
*exists*) ;;
*) fail "second run did not say the image exists: $out" ;;
esac
echo "ok: $image has git, python3, coreutils, ps; the second run skipped"
