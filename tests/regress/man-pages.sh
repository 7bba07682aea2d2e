#!/usr/bin/env bash
#
# Copyright (c) 2026 The sandbox-mcp authors
#
# Permission to use, copy, modify, and distribute this software for any
# purpose with or without fee is hereby granted, provided that the above
# copyright notice and this permission notice appear in all copies.
#
# THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES
# WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF
# MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR
# ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES
# WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN
# ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF
# OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.
#
# The manual pages stay equal to the program:
#   (a) both pages pass "mandoc -Tlint -W warning" with nothing to say;
#   (b) every option of usage() (and of the getopt tables) has an
#       ".It Fl" entry in the OPTIONS list of sandbox-mcp.8, and that list
#       documents no option usage() lacks;
#   (c) the SYNOPSIS names the same options in the same order as usage(),
#       and renders to the same text;
#   (d) every directive of cfg_keywords[], every profile key and every
#       limit of cfg_limit_table[] in src/cfg.c has an ".It Ic" entry in
#       sandbox-mcp.conf.5, nothing stale is documented, and each limit's
#       documented default and range equal the table's;
#   (e) the example configuration in conf/ passes "sandbox-mcp -n";
#   (f) that configuration shows every limit of cfg_limit_table[] exactly
#       once, commented out at its default ("#limit NAME VALUE"), and no
#       limit the table lacks;
#   (g) every tool that tools/list returns with all three sets has an
#       ".It Li NAME" entry under TOOL SETS in sandbox-mcp.8, and that
#       section documents no tool the program lacks.
#
# Environment: SANDBOX_MCP_BIN (the binary), SANDBOX_MCP_SRCDIR,
# SANDBOX_MCP_BUILDDIR, and MAN_DIR (where the .in pages are; default
# $SANDBOX_MCP_SRCDIR/man) so a damaged copy can be checked.
# Exit 0 when everything holds, 1 otherwise; problems go to stderr.

set -u

here=$(cd "$(dirname "$0")" && pwd)
SANDBOX_MCP_SRCDIR=${SANDBOX_MCP_SRCDIR:-$(cd "$here/../.." && pwd)}
SANDBOX_MCP_BUILDDIR=${SANDBOX_MCP_BUILDDIR:-$SANDBOX_MCP_SRCDIR}
SANDBOX_MCP_BIN=${SANDBOX_MCP_BIN:-$SANDBOX_MCP_BUILDDIR/sandbox-mcp}
MAN_DIR=${MAN_DIR:-$SANDBOX_MCP_SRCDIR/man}
CFG_C=${CFG_C:-$SANDBOX_MCP_SRCDIR/src/cfg.c}
MAIN_C=${MAIN_C:-$SANDBOX_MCP_SRCDIR/src/sandbox-mcp.c}
CONF=${CONF:-$SANDBOX_MCP_SRCDIR/conf/sandbox-mcp.conf}

failures=0

fail()
{
	printf 'man-pages: %s\n' "$*" >&2
	failures=$((failures + 1))
}

# Print "expected" and "actual" blocks under a heading.
fail_diff()
{
	fail "$1"
	printf '  expected: %s\n  actual:   %s\n' "$2" "$3" >&2
}

for f in "$MAN_DIR/sandbox-mcp.8.in" "$MAN_DIR/sandbox-mcp.conf.5.in" \
    "$CFG_C" "$MAIN_C" "$CONF"; do
	if [ ! -r "$f" ]; then
		fail "cannot read $f"
	fi
done
if [ ! -x "$SANDBOX_MCP_BIN" ]; then
	fail "no executable at SANDBOX_MCP_BIN=$SANDBOX_MCP_BIN"
fi
if ! command -v mandoc >/dev/null 2>&1; then
	fail "mandoc is not installed (Debian package mandoc)"
fi
if [ "$failures" -ne 0 ]; then
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/man-pages.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# The same substitution the Makefile makes at build time.
for page in sandbox-mcp.8 sandbox-mcp.conf.5; do
	sed -e 's|@SYSCONFDIR@|/etc|g' \
	    -e 's|@STATEDIR@|/var/lib/sandbox-mcp|g' \
	    -e 's|@VERSION@|0.1.0|g' \
	    <"$MAN_DIR/$page.in" >"$tmp/$page"
	if grep -n '@[A-Z_]*@' "$tmp/$page" >"$tmp/left" 2>/dev/null; then
		fail "$page.in: placeholder the build does not substitute:"
		sed 's/^/  /' "$tmp/left" >&2
	fi
done
man8=$tmp/sandbox-mcp.8
man5=$tmp/sandbox-mcp.conf.5

# Print the lines of one .Sh section of a page (without the .Sh line).
section()
{
	awk -v want="$2" '
		/^\.Sh / { on = (substr($0, 5) == want); next }
		on { print }' "$1"
}

# ---- (a) mandoc lint ------------------------------------------------------

for page in "$man8" "$man5"; do
	# A stale system mandoc.db is the host's business, not the page's.
	mandoc -Tlint -W warning "$page" 2>&1 | grep -v 'mandoc\.db' \
	    >"$tmp/lint"
	if [ -s "$tmp/lint" ]; then
		fail "mandoc -Tlint -W warning complains about" \
		    "$(basename "$page").in:"
		sed 's/^/  /' "$tmp/lint" >&2
	fi
done

# ---- (b) usage() options against the OPTIONS list -------------------------

"$SANDBOX_MCP_BIN" >/dev/null 2>"$tmp/stderr" </dev/null
status=$?
if [ "$status" -ne 2 ]; then
	fail "$SANDBOX_MCP_BIN with no arguments exited $status, not 2"
fi
sed -n '/^usage:/,$p' "$tmp/stderr" >"$tmp/usage"
if [ ! -s "$tmp/usage" ]; then
	fail "no usage text on stderr from $SANDBOX_MCP_BIN with no arguments"
	cat "$tmp/stderr" >&2
	exit 1
fi

# The option words of a usage text, one a line, in order ("-nv",
# "--listen", ...). A word counts when it starts after a blank or "[".
usage_words()
{
	grep -oE '(^|[[:space:][])--?[A-Za-z][A-Za-z0-9-]*' "$1" |
	    sed -E 's/^[[:space:][]+//'
}

# Split option words into single options: "-nv" gives "-n" and "-v".
split_options()
{
	local w i
	while read -r w; do
		case "$w" in
		--*)	printf '%s\n' "$w" ;;
		-*)	for ((i = 1; i < ${#w}; i++)); do
				printf -- '-%s\n' "${w:i:1}"
			done ;;
		esac
	done
}

usage_words "$tmp/usage" >"$tmp/usage.words"
split_options <"$tmp/usage.words" | sort -u >"$tmp/usage.opts"
if [ ! -s "$tmp/usage.opts" ]; then
	fail "found no options in the usage text"
fi

# Options documented as ".It Fl ..." in the OPTIONS section, one a line.
section "$man8" OPTIONS >"$tmp/options.sec"
grep -E '^\.It .*Fl ' "$tmp/options.sec" |
    grep -oE 'Fl [^ ]+' | sed -E 's/^Fl //; s/^\\-/--/' |
    while read -r w; do
	case "$w" in
	--*)	printf '%s\n' "$w" ;;
	*)	printf -- '-%s\n' "$w" ;;
	esac
    done | split_options | sort -u >"$tmp/page.opts"

while read -r opt; do
	if ! grep -qxF -- "$opt" "$tmp/page.opts"; then
		fail "usage() has $opt but sandbox-mcp.8 OPTIONS has no" \
		    ".It Fl entry for it"
	fi
done <"$tmp/usage.opts"
while read -r opt; do
	if ! grep -qxF -- "$opt" "$tmp/usage.opts"; then
		fail "sandbox-mcp.8 OPTIONS documents $opt, which usage()" \
		    "does not show"
	fi
done <"$tmp/page.opts"

# The getopt tables themselves: the short option string of each
# getopt_long() call and the names of the long option table.
{
	grep -oE 'getopt_long\([^"]*"[^"]*"' "$MAIN_C" |
	    sed -E 's/.*"([^"]*)"$/\1/' | tr -d ':' | grep -oE '[A-Za-z]' |
	    sed 's/^/-/'
	sed -n '/struct option[^=]*=[[:space:]]*{/,/^};/p' "$MAIN_C" |
	    grep -oE '\{[[:space:]]*"[a-z][a-z0-9-]*"' |
	    sed -E 's/.*"([^"]*)"/--\1/'
} | sort -u >"$tmp/getopt.opts"
if [ ! -s "$tmp/getopt.opts" ]; then
	fail "found no getopt options in $MAIN_C"
fi
while read -r opt; do
	if ! grep -qxF -- "$opt" "$tmp/page.opts"; then
		fail "$(basename "$MAIN_C") accepts $opt but sandbox-mcp.8" \
		    "OPTIONS has no .It Fl entry for it"
	fi
	if ! grep -qxF -- "$opt" "$tmp/usage.opts"; then
		fail "$(basename "$MAIN_C") accepts $opt but usage() does" \
		    "not show it"
	fi
done <"$tmp/getopt.opts"

# ---- (c) SYNOPSIS against usage() -----------------------------------------

section "$man8" SYNOPSIS | grep -oE 'Fl [^ ]+' |
    sed -E 's/^Fl //; s/^\\-/--/; /^--/!s/^/-/' >"$tmp/synopsis.words"
if [ ! -s "$tmp/synopsis.words" ]; then
	fail "found no .Fl in the SYNOPSIS of sandbox-mcp.8"
elif ! cmp -s "$tmp/usage.words" "$tmp/synopsis.words"; then
	fail_diff "the SYNOPSIS options differ from usage() (in order)" \
	    "$(tr '\n' ' ' <"$tmp/usage.words")" \
	    "$(tr '\n' ' ' <"$tmp/synopsis.words")"
fi

# The rendered SYNOPSIS must read as usage() does, blanks aside.
usage_text=$(sed '1s/^usage:[[:space:]]*//' "$tmp/usage" | tr -s ' \t\n' '   ' |
    sed -E 's/^ +//; s/ +$//')
synopsis_text=$(mandoc -Tascii -O width=250 "$man8" 2>/dev/null |
    sed 's/.\x08//g' | awk '
	/^SYNOPSIS$/ { on = 1; next }
	/^[A-Z]/ { on = 0 }
	on { print }' | tr -s ' \t\n' '   ' | sed -E 's/^ +//; s/ +$//')
if [ "$usage_text" != "$synopsis_text" ]; then
	fail_diff "the rendered SYNOPSIS differs from usage()" \
	    "$usage_text" "$synopsis_text"
fi

# ---- (d) directives, profile keys and limits ------------------------------

# Directive names from cfg_keywords[].
sed -n '/cfg_keywords\[\][[:space:]]*=[[:space:]]*{/,/^};/p' "$CFG_C" |
    grep -oE '\{[[:space:]]*"[a-z][a-z0-9-]*"' |
    sed -E 's/.*"([^"]*)"/\1/' >"$tmp/directives"
# Profile keys: the names cfg_kw_profile() compares against.
sed -n '/^cfg_kw_profile(/,/^}/p' "$CFG_C" |
    grep -oE 'strcmp\(argv\[i\], "[a-z][a-z0-9-]*"\)' |
    sed -E 's/.*"([^"]*)".*/\1/' | sort -u >"$tmp/profile"
# Limits from cfg_limit_table[]: "name type min max default" a line, the
# numbers still C expressions with blanks removed.
limit_re='^,?\[[A-Z_]+\]=\{"([a-z0-9-]+)",CFG_LIMIT_([A-Z]+),'
limit_re="$limit_re"'([^,]+),([^,]+),([^,]+)$'
sed -n '/cfg_limit_table\[[A-Z_]*\][[:space:]]*=[[:space:]]*{/,/^};/p' \
    "$CFG_C" | sed '1d' | tr -d '\n\t ' | tr '}' '\n' |
    sed -nE "s/$limit_re/\\1 \\2 \\3 \\4 \\5/p" >"$tmp/limits"
limit_entries=$(grep -c '^[[:space:]]*\[LIMIT_[A-Z_]*\][[:space:]]*=' "$CFG_C")

if [ ! -s "$tmp/directives" ]; then
	fail "found no directive names in cfg_keywords[] of $CFG_C"
fi
if [ ! -s "$tmp/profile" ]; then
	fail "found no profile keys in cfg_kw_profile() of $CFG_C"
fi
if [ ! -s "$tmp/limits" ] ||
    [ "$(wc -l <"$tmp/limits")" -ne "$limit_entries" ]; then
	fail "read $(wc -l <"$tmp/limits") of $limit_entries entries of" \
	    "cfg_limit_table[] in $CFG_C; the test cannot parse the table"
fi

# Names with an ".It Ic NAME" entry in a section of the conf page.
ic_names()
{
	section "$man5" "$1" | grep -E '^\.It Ic ' | awk '{ print $3 }'
}
ic_names DIRECTIVES | sort -u >"$tmp/page.directives"
ic_names LIMITS | sort -u >"$tmp/page.limits"

while read -r name; do
	if ! grep -qxF -- "$name" "$tmp/page.directives"; then
		fail "directive $name (cfg_keywords[]) has no .It Ic entry" \
		    "under DIRECTIVES in sandbox-mcp.conf.5"
	fi
done <"$tmp/directives"
while read -r name; do
	if ! grep -qxF -- "$name" "$tmp/page.directives"; then
		fail "profile key $name has no .It Ic entry in" \
		    "sandbox-mcp.conf.5"
	fi
done <"$tmp/profile"
while read -r name; do
	if ! grep -qxF -- "$name" "$tmp/directives" &&
	    ! grep -qxF -- "$name" "$tmp/profile"; then
		fail "sandbox-mcp.conf.5 documents directive $name, which" \
		    "cfg.c does not know"
	fi
done <"$tmp/page.directives"
while read -r name; do
	if ! awk '{ print $1 }' "$tmp/limits" | grep -qxF -- "$name"; then
		fail "sandbox-mcp.conf.5 documents limit $name, which" \
		    "cfg_limit_table[] does not have"
	fi
done <"$tmp/page.limits"

# A documented number (with an optional K, M or G) in bytes or units.
doc_number()
{
	local v=$1
	case "$v" in
	*K)	echo $(( ${v%K} * 1024 )) ;;
	*M)	echo $(( ${v%M} * 1024 * 1024 )) ;;
	*G)	echo $(( ${v%G} * 1024 * 1024 * 1024 )) ;;
	*)	echo $(( v )) ;;
	esac
}

# Each limit: an entry, its argument kind, and "Default D, from A to B."
# where D may be followed by a remark in parentheses.
num='([0-9]+[KMG]?)'
range_re="Default $num( \\([^)]*\\))?, from $num to $num"
while read -r name type min max dflt; do
	if ! grep -qxF -- "$name" "$tmp/page.limits"; then
		fail "limit $name (cfg_limit_table[]) has no .It Ic entry" \
		    "under LIMITS in sandbox-mcp.conf.5"
		continue
	fi
	min=$(( ${min//LL/} )) max=$(( ${max//LL/} )) dflt=$(( ${dflt//LL/} ))
	case "$type" in
	SIZE)	kind=size ;;
	SECONDS) kind=seconds ;;
	*)	kind=count ;;
	esac
	entry=$(section "$man5" LIMITS | awk -v n="$name" '
		/^\.It / { on = ($3 == n) }
		/^\.El/ { on = 0 }
		on { print }')
	if ! printf '%s\n' "$entry" | head -n 1 |
	    grep -qE "^\.It Ic $name Ar $kind\$"; then
		fail "limit $name: expected \".It Ic $name Ar $kind\" in" \
		    "sandbox-mcp.conf.5"
	fi
	if ! [[ "$(printf '%s\n' "$entry" | tr '\n' ' ')" =~ $range_re ]]; then
		fail "limit $name: no \"Default D, from A to B.\" sentence" \
		    "in sandbox-mcp.conf.5"
		continue
	fi
	range=${BASH_REMATCH[0]}
	d=$(doc_number "${BASH_REMATCH[1]}")
	lo=$(doc_number "${BASH_REMATCH[3]}")
	hi=$(doc_number "${BASH_REMATCH[4]}")
	if [ "$d" != "$dflt" ] || [ "$lo" != "$min" ] || [ "$hi" != "$max" ]
	then
		actual="default $d, from $lo to $hi (\"$range\")"
		fail_diff "limit $name: documented default and range differ" \
		    "default $dflt, from $min to $max" "$actual"
	fi
done <"$tmp/limits"

# ---- (e) the example configuration ----------------------------------------

if ! "$SANDBOX_MCP_BIN" -n -f "$CONF" >"$tmp/n.out" 2>&1 </dev/null; then
	fail "$SANDBOX_MCP_BIN -n -f $CONF failed:"
	sed 's/^/  /' "$tmp/n.out" >&2
fi

# ---- (f) the limits of the example configuration -------------------------

# A value of the example configuration (with an optional K, M or G, or
# s, m or h suffix) in bytes, seconds or units.
conf_number()
{
	local v=$1
	case "$v" in
	*[0-9]K)	echo $(( ${v%K} * 1024 )) ;;
	*[0-9]M)	echo $(( ${v%M} * 1024 * 1024 )) ;;
	*[0-9]G)	echo $(( ${v%G} * 1024 * 1024 * 1024 )) ;;
	*[0-9]s)	echo $(( ${v%s} )) ;;
	*[0-9]m)	echo $(( ${v%m} * 60 )) ;;
	*[0-9]h)	echo $(( ${v%h} * 3600 )) ;;
	*[0-9])		echo $(( v )) ;;
	*)		echo "?" ;;
	esac
}

grep -E '^#limit[[:space:]]' "$CONF" | awk '{ print $2, $3 }' \
    >"$tmp/conf.limits"
while read -r name type min max dflt; do
	dflt=$(( ${dflt//LL/} ))
	n=$(awk -v n="$name" '$1 == n' "$tmp/conf.limits" | wc -l)
	if [ "$n" -ne 1 ]; then
		fail "$(basename "$CONF") has $n \"#limit $name\" lines," \
		    "not 1"
		continue
	fi
	v=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/conf.limits")
	if [ "$(conf_number "$v")" != "$dflt" ]; then
		fail_diff "$(basename "$CONF"): #limit $name is not the default" \
		    "$dflt" "$v"
	fi
done <"$tmp/limits"
while read -r name v; do
	if ! awk '{ print $1 }' "$tmp/limits" | grep -qxF -- "$name"; then
		fail "$(basename "$CONF") shows limit $name, which" \
		    "cfg_limit_table[] does not have"
	fi
done <"$tmp/conf.limits"

# ---- (g) the tools against the TOOL SETS section --------------------------

if ! command -v python3 >/dev/null 2>&1; then
	fail "python3 is needed to read the tools/list answer"
else
	mkdir "$tmp/state"
	init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
	init=$init'{"protocolVersion":"2025-11-25","capabilities":{},'
	init=$init'"clientInfo":{"name":"man-pages","version":"1"}}}'
	printf '%s\n' "$init" \
	    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' |
	    "$SANDBOX_MCP_BIN" -f /dev/null --state-dir "$tmp/state" \
	    --docker-host "unix://$tmp/no-docker.sock" \
	    --set management,runtime,observability,boxes \
	    >"$tmp/tools.out" \
	    2>"$tmp/tools.err"
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    msg = json.loads(line)
    if msg.get("id") == 2:
        for tool in msg["result"]["tools"]:
            print(tool["name"])
' "$tmp/tools.out" 2>>"$tmp/tools.err" | sort -u >"$tmp/tools"
	if [ ! -s "$tmp/tools" ]; then
		fail "no tools from tools/list on $SANDBOX_MCP_BIN:"
		sed 's/^/  /' "$tmp/tools.err" >&2
	fi
	section "$man8" "TOOL SETS" | grep -E '^\.It Li [a-z_]+' |
	    awk '{ print $3 }' | sort -u >"$tmp/page.tools"
	while read -r name; do
		if ! grep -qxF -- "$name" "$tmp/page.tools"; then
			fail "tool $name (tools/list) has no .It Li entry" \
			    "under TOOL SETS in sandbox-mcp.8"
		fi
	done <"$tmp/tools"
	while read -r name; do
		if ! grep -qxF -- "$name" "$tmp/tools"; then
			fail "sandbox-mcp.8 TOOL SETS documents tool $name," \
			    "which tools/list does not return"
		fi
	done <"$tmp/page.tools"
fi

if [ "$failures" -ne 0 ]; then
	printf 'man-pages: %d problem(s)\n' "$failures" >&2
	exit 1
fi
exit 0
