#!/bin/sh
# run.sh: the whole test suite. Runs every unit case of tests/unit/unit,
# every regress script under tests/regress (against the real Docker
# Engine) and the MCP conformance scenarios, each under a timeout, and
# ends with the line "N passed, N failed". Arguments, when given, are
# substrings: only tests whose names contain one of them run.
#
# SANDBOX_MCP_TEST_BIN points the suite at another binary (e.g. one
# running under a debugger wrapper); logs of failed tests are printed and
# all logs are kept under $SANDBOX_MCP_BUILDDIR/tests/logs.

set -u

srcdir=${SANDBOX_MCP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${SANDBOX_MCP_BUILDDIR:-$srcdir}
SANDBOX_MCP_BIN=${SANDBOX_MCP_TEST_BIN:-$builddir/sandbox-mcp}
SANDBOX_MCP_IMAGE=sandbox-mcp/busybox:test
# Under AddressSanitizer, freed memory waits in a quarantine that would
# make the memory-bound checks meaningless; keep it small.
ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=1}
export ASAN_OPTIONS SANDBOX_MCP_BIN SANDBOX_MCP_SRCDIR="$srcdir" \
    SANDBOX_MCP_BUILDDIR="$builddir" SANDBOX_MCP_IMAGE
logdir=$builddir/tests/logs
unit=$builddir/tests/unit/unit
passed=0
failed=0
failures=

mkdir -p "$logdir"

# Every test's temporary directories go under one directory of this run,
# so what the run leaves behind (a mount, a loop device: the sandboxes'
# disks) is found and counted as a failure, without looking at other runs
# on the same machine.
rundir=$(mktemp -d "${TMPDIR:-/tmp}/smcp-run.XXXXXX") || exit 1
TMPDIR=$rundir
export TMPDIR

# leftovers: mounts under the run's directory, loop devices whose
# backing file is there, and tenants' networks of its state directories
# (a lazily unmounted disk goes with the last process holding it: wait a
# little for that).
leftovers() {
	tries=0
	while :; do
		left=$(awk -v top="$rundir" \
		    '$5 == top || index($5, top "/") == 1 { print $5 }' \
		    /proc/self/mountinfo)
		for f in /sys/block/loop*/loop/backing_file; do
			[ -r "$f" ] || continue
			case $(cat "$f") in
			"$rundir"/*) left="$left $f: $(cat "$f")" ;;
			esac
		done
		# A tenant's network of a state directory of this run (each
		# bridge holds one of Docker's few address pools).
		nets=$(docker network ls --filter label=io.sandbox-mcp.state-dir \
		    --format '{{.Name}} {{.Label "io.sandbox-mcp.state-dir"}}' \
		    2>/dev/null | awk -v top="$rundir" \
		    'index($2, top "/") == 1 { print $1 }')
		[ -n "$nets" ] && left="$left networks: $nets"
		[ -z "$left" ] && return 0
		tries=$((tries + 1))
		if [ $tries -ge 100 ]; then
			echo "left behind by the suite: $left"
			[ -n "$nets" ] && docker network rm $nets >/dev/null 2>&1
			return 1
		fi
		sleep 0.1
	done
}

# selected NAME: whether a test runs (every one when no pattern is given).
patterns="$*"
selected() {
	[ -z "$patterns" ] && return 0
	for pat in $patterns; do
		case $1 in *"$pat"*) return 0 ;; esac
	done
	return 1
}

# run NAME TIMEOUT COMMAND...: one test, logged, counted.
run() {
	name=$1
	limit=$2
	shift 2
	selected "$name" || return 0
	log=$logdir/$(echo "$name" | tr '/' '_').log
	start=$(date +%s)
	timeout -k 10 "$limit" "$@" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	if [ $rc -eq 0 ]; then
		passed=$((passed + 1))
		echo "ok   $name (${secs}s)"
	else
		failed=$((failed + 1))
		failures="$failures $name"
		if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
			echo "FAIL $name (timed out after ${limit}s)"
		else
			echo "FAIL $name (exit $rc, ${secs}s)"
		fi
		sed 's/^/    | /' "$log" | tail -n 40
	fi
}

if [ ! -x "$SANDBOX_MCP_BIN" ]; then
	echo "no binary at $SANDBOX_MCP_BIN: build first" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

# The unit cases need nothing but the binary's sources: they run first,
# even where there is no Docker Engine.
if [ -x "$unit" ]; then
	for case in $("$unit" -l); do
		run "unit/$case" 60 "$unit" "$case"
	done
else
	run unit/build 10 false
fi

# engine_wanted: whether a selected test needs the Docker Engine (any but
# the unit cases).
engine_wanted() {
	[ -z "$patterns" ] && return 0
	for pat in $patterns; do
		case $pat in unit|unit/*) ;; *) return 0 ;; esac
	done
	return 1
}

# The rest needs the Docker Engine and the small test image; without
# them it does not run, and that counts as one failure.
engine=1
if ! engine_wanted; then
	engine=0
elif ! docker info >/dev/null 2>&1; then
	echo "the Docker Engine does not answer at /var/run/docker.sock:" \
	    "start dockerd first; only the unit cases ran" >&2
	failed=$((failed + 1))
	failures="$failures docker-engine"
	engine=0
elif ! bash "$srcdir/contrib/build-image.sh" --busybox \
    >"$logdir/image.log" 2>&1; then
	cat "$logdir/image.log" >&2
	failed=$((failed + 1))
	failures="$failures test-image"
	engine=0
fi
# The box image: built once (a few minutes, with no time limit of a
# test), then found; a build that fails is one failure.
if [ $engine -eq 1 ] && ! bash "$srcdir/contrib/build-image.sh" --box \
    >"$logdir/box-image.log" 2>&1; then
	tail -n 40 "$logdir/box-image.log" >&2
	failed=$((failed + 1))
	failures="$failures box-image"
fi

if [ $engine -eq 1 ]; then
	for t in "$srcdir"/tests/regress/*.py "$srcdir"/tests/regress/*.sh; do
		[ -e "$t" ] || continue
		name=regress/$(basename "$t" | sed 's/\.[a-z]*$//')
		case $t in
		*/lib.py) continue ;;
		*.py) run "$name" 300 python3 -u "$t" ;;
		*.sh) run "$name" 300 bash "$t" ;;
		esac
	done

	for t in "$srcdir"/tests/conformance/*.sh \
	    "$srcdir"/tests/conformance-2026/*.sh; do
		[ -e "$t" ] || continue
		name=$(basename "$(dirname "$t")")/$(basename "$t" .sh)
		run "$name" 600 bash "$t"
	done
fi

log=$logdir/suite_leftovers.log
if leftovers >"$log" 2>&1; then
	passed=$((passed + 1))
	echo "ok   suite/leftovers"
else
	failed=$((failed + 1))
	failures="$failures suite/leftovers"
	echo "FAIL suite/leftovers"
	sed 's/^/    | /' "$log"
fi
for mp in $(awk -v top="$rundir" \
    '$5 == top || index($5, top "/") == 1 { print $5 }' /proc/self/mountinfo |
    sort -r); do
	umount -l "$mp"
done
rm -rf "$rundir"

if [ -n "$failures" ]; then
	echo "failed:$failures"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
