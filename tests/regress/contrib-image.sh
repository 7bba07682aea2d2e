#!/bin/bash
# contrib-image.sh: contrib/build-image.sh builds the user image
# sandbox-mcp/debian:bookworm (bash, coreutils, git, python3, ps from
# procps) with no registry, and a second run finds it and skips the
# build; --box builds the box image sandbox-mcp/box:bookworm (once: a
# few minutes, about 2 GB), with the box's tools, a box user, and
# nothing setuid.

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
# The box image (--box): a whole machine's tools, a box user, rootless
# podman's id maps with file capabilities and nothing setuid.
box=sandbox-mcp/box:bookworm
out=$(bash "$src/contrib/build-image.sh" --box 2>/tmp/contrib-image.$$.log) ||
    { tail -30 /tmp/contrib-image.$$.log >&2; rm -f /tmp/contrib-image.$$.log;
      fail "build-image.sh --box failed"; }
rm -f /tmp/contrib-image.$$.log
[ "$out" = "$box" ] || fail "build-image.sh --box printed '$out', not $box"
facts=$(docker run --rm --network none "$box" bash -c '
    id box; chromium --version; ffmpeg -version | head -1; podman --version
    docker --version; docker-compose --version; go version; node --version
    npm --version; gcc --version | head -1
    for c in Xvfb x11vnc xdotool curl git python3 make iptables; do
        command -v $c >/dev/null && echo "have $c"
    done
    getcap /usr/bin/newuidmap /usr/bin/newgidmap; grep ^box: /etc/subuid
    command -v /usr/lib/podman/netavark /usr/lib/podman/aardvark-dns
    grep -h network_backend /etc/containers/containers.conf
    echo "setuid: $(find / -xdev -perm /6000 -type f 2>/dev/null | wc -l)"') ||
    fail "the box image does not run"
for want in "uid=1000(box)" "Chromium" "ffmpeg version" "podman version" \
    "docker-compose version" "go version" "gcc" "have Xvfb" "have x11vnc" \
    "have xdotool" "have curl" "have git" "have python3" "have make" \
    "have iptables" \
    "newuidmap cap_setuid=ep" "newgidmap cap_setgid=ep" "box:100000:65536" \
    "setuid: 0" "/usr/lib/podman/netavark" "/usr/lib/podman/aardvark-dns" \
    'network_backend = "netavark"'; do
	case $facts in
	*"$want"*) ;;
	*) fail "the box image lacks $want: $facts" ;;
	esac
done
case $facts in
*"Emulate Docker CLI"*) fail "podman's docker command prints its notice" ;;
esac
echo "ok: $image has git, python3, coreutils, ps; the second run skipped;" \
    "$box has the box's tools and nothing setuid"
