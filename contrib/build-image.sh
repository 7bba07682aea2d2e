#!/bin/bash
# build-image.sh: build a local Docker image for sandbox-mcp sandboxes without
# pulling anything from a registry.
#
# By default it bootstraps a minimal Debian system (bash, coreutils, git,
# python3, ca-certificates) from the apt mirror this machine already uses and
# imports it as sandbox-mcp/debian:bookworm. With --busybox it builds the tiny
# sandbox-mcp/busybox:test image from the host's static busybox instead, which
# takes about a second and is what the test suite uses. With --box it builds
# sandbox-mcp/box:bookworm, the image of boxes (a whole machine for an agent:
# build tools, a virtual display, Chromium, ffmpeg and a rootless container
# engine with compose); that one takes a while and about 2 GB.
#
# An image that already exists is left alone unless --force is given. The
# image tag is printed on standard output; progress goes to standard error.
# Run as root (debootstrap and apt-get need it).

set -eu
set -o pipefail

prog=${0##*/}

usage() {
	cat <<EOF
usage: $prog [-h] [--force] [--busybox | --box] [--tag TAG] [--mirror URL] [--suite NAME]

Build a local sandbox image for sandbox-mcp. Nothing is pulled from a registry:
the root file system is made on this machine and loaded with 'docker import'.

  (default)      Debian image from debootstrap --variant=minbase with bash,
                 coreutils, git, python3, ca-certificates and procps (ps);
                 tag sandbox-mcp/debian:SUITE (sandbox-mcp/debian:bookworm);
                 apt lists, caches, manual pages, documentation and
                 translations are left out to keep it small
  --busybox      tiny image made from the host's static busybox;
                 tag sandbox-mcp/busybox:test
  --box          the box image: the Debian image plus curl, nodejs, npm,
                 golang, build-essential, Xvfb, x11vnc, xdotool, chromium,
                 ffmpeg, fonts, rootless podman (uidmap, slirp4netns;
                 netavark, aardvark-dns and iptables for its networks and
                 service names) with its docker command and
                 docker-compose, and a box user (uid 1000, home
                 /home/box); tag sandbox-mcp/box:SUITE
  --tag TAG      use TAG as the image name instead of the default
  --mirror URL   Debian mirror for debootstrap (default: the mirror named in
                 /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list,
                 else http://deb.debian.org/debian)
  --suite NAME   Debian suite to bootstrap (default: bookworm)
  --force        rebuild even if an image with this tag already exists
                 (an image built from another package list is rebuilt
                 anyway: its recipe is in the label org.sandbox-mcp.recipe)
  -h, --help     show this text

Missing tools (debootstrap, busybox-static) are installed with apt-get.
The Docker daemon must be running. On success the tag is printed on stdout.

Examples:
  $prog                      # sandbox-mcp/debian:bookworm
  $prog --busybox            # sandbox-mcp/busybox:test
  $prog --box                # sandbox-mcp/box:bookworm
  $prog --suite trixie       # sandbox-mcp/debian:trixie
EOF
}

log() {
	printf '%s: %s\n' "$prog" "$*" >&2
}

die() {
	printf '%s: error: %s\n' "$prog" "$*" >&2
	exit 1
}

# Options.
variant=debian
tag=
mirror=
suite=bookworm
force=0

need_arg() {
	if [ "$#" -lt 2 ] || [ -z "$2" ]; then
		printf '%s: option %s needs a value (see %s -h)\n' "$prog" "$1" "$prog" >&2
		exit 2
	fi
}

while [ "$#" -gt 0 ]; do
	case "$1" in
	-h|--help)
		usage
		exit 0
		;;
	--busybox)
		variant=busybox
		;;
	--box)
		variant=box
		;;
	--force)
		force=1
		;;
	--tag)
		need_arg "$@"; tag=$2; shift
		;;
	--tag=*)
		tag=${1#*=}
		;;
	--mirror)
		need_arg "$@"; mirror=$2; shift
		;;
	--mirror=*)
		mirror=${1#*=}
		;;
	--suite)
		need_arg "$@"; suite=$2; shift
		;;
	--suite=*)
		suite=${1#*=}
		;;
	*)
		printf '%s: unknown argument: %s (see %s -h)\n' "$prog" "$1" "$prog" >&2
		exit 2
		;;
	esac
	shift
done

if [ -z "$tag" ]; then
	case $variant in
	busybox) tag=sandbox-mcp/busybox:test ;;
	box) tag=sandbox-mcp/box:$suite ;;
	*) tag=sandbox-mcp/debian:$suite ;;
	esac
fi
if [ "$variant" = busybox ] && { [ -n "$mirror" ] || [ "$suite" != bookworm ]; }; then
	log "note: --mirror and --suite apply to the Debian image only; ignored with --busybox"
fi

# Temporary directory, removed on exit whatever happens. debootstrap mounts
# /proc and /sys inside the new root while it works; if it fails half way
# those mounts can still be there, so unmount everything below the directory
# before deleting it, and never cross into another file system.
workdir=
cleanup() {
	local rc=$? m
	if [ -n "$workdir" ] && [ -d "$workdir" ]; then
		# Deepest mounts first.
		awk -v d="$workdir/" 'index($2 "/", d) == 1 { print $2 }' /proc/self/mounts |
		    sort -r | while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done
		rm -rf --one-file-system "$workdir" ||
		    log "warning: could not remove $workdir; remove it by hand"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

# Docker must be installed and its daemon reachable.
check_docker() {
	command -v docker >/dev/null 2>&1 ||
	    die "the docker command is not installed (apt-get install docker.io)"
	if ! docker info >/dev/null 2>&1; then
		die "cannot reach the Docker daemon (is it running, and may this user use /var/run/docker.sock?).
Start it with:   systemctl start docker
or, without systemd:   nohup dockerd >/var/log/dockerd.log 2>&1 &
then run $prog again."
	fi
}

is_root() {
	[ "$(id -u)" -eq 0 ]
}

apt_updated=0
# apt_install PACKAGE...: install Debian packages that are not installed yet.
apt_install() {
	local p missing=
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q 'install ok installed' || missing="$missing $p"
	done
	[ -n "$missing" ] || return 0
	is_root || die "package(s)$missing are needed; run as root or install them first"
	command -v apt-get >/dev/null 2>&1 ||
	    die "package(s)$missing are needed and apt-get is not available"
	if [ "$apt_updated" -eq 0 ]; then
		log "running apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update >&2 ||
		    die "apt-get update failed"
		apt_updated=1
	fi
	log "installing$missing"
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	    $missing >&2 || die "apt-get install$missing failed"
}

# The Debian mirror this machine's apt uses: the first URI of a "deb" source
# that is not the security archive, from the deb822 file or the classic list.
detect_mirror() {
	local f uri
	f=/etc/apt/sources.list.d/debian.sources
	if [ -r "$f" ]; then
		uri=$(awk '
			/^[[:space:]]*$/ { if (u != "" && deb && u !~ /security/) { print u; u = ""; exit } u = ""; deb = 1; next }
			tolower($1) == "types:" { deb = 0; for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
			tolower($1) == "uris:" { u = $2 }
			END { if (u != "" && deb && u !~ /security/) print u }
		' "$f" | head -n 1)
		if [ -n "$uri" ]; then
			printf '%s\n' "$uri"
			return
		fi
	fi
	f=/etc/apt/sources.list
	if [ -r "$f" ]; then
		uri=$(awk '
			$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($i !~ /security/) { print $i; exit }
			}
		' "$f")
		if [ -n "$uri" ]; then
			printf '%s\n' "$uri"
			return
		fi
	fi
	printf '%s\n' http://deb.debian.org/debian
}

# import_rootfs DIR: load DIR as the image $tag.
import_rootfs() {
	local dir=$1 old new
	old=$(docker image inspect -f '{{.Id}}' "$tag" 2>/dev/null || true)
	log "importing the root file system as $tag"
	new=$(tar -C "$dir" --numeric-owner --xattrs --xattrs-include='security.capability' \
	    -c . |
	    docker import \
	        --change 'CMD ["/bin/sh"]' \
	        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	        --change "LABEL org.sandbox-mcp.recipe=$recipe" \
	        --message "built by contrib/build-image.sh" \
	        - "$tag") || die "docker import of $tag failed"
	# A rebuild leaves the previous image untagged; drop it unless a
	# container still uses it.
	if [ -n "$old" ] && [ "$old" != "$new" ]; then
		docker image rm "$old" >/dev/null 2>&1 || true
	fi
	log "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" |
	    awk '{ printf "%.1f MB", $1 / 1000000 }'))"
}

build_busybox() {
	local bb root a n=0

	apt_install busybox-static
	bb=$(dpkg -L busybox-static 2>/dev/null | grep -m1 '/bin/busybox$' || true)
	if [ -z "$bb" ] || [ ! -x "$bb" ]; then
		die "busybox-static is installed but its /bin/busybox was not found"
	fi
	if command -v ldd >/dev/null 2>&1 && ldd "$bb" 2>/dev/null | grep -q '=>'; then
		die "$bb is not statically linked; install the busybox-static package"
	fi

	workdir=$(mktemp -d "${TMPDIR:-/var/tmp}/sandbox-mcp-image.XXXXXX")
	root=$workdir/rootfs
	log "making a busybox root file system in $root"
	mkdir -p "$root"
	(
		cd "$root"
		mkdir -p bin sbin usr/bin usr/sbin etc tmp root proc sys dev workspace
		chmod 1777 tmp
		chmod 0700 root
	)
	cp "$bb" "${root:?}/bin/busybox"
	chmod 0755 "${root:?}/bin/busybox"
	# What "busybox --install -s" would do, but on the host side: one symbolic
	# link per applet, all in /bin.
	for a in $("$bb" --list); do
		case "$a" in
		busybox|*/*|'') continue ;;
		esac
		ln -sf /bin/busybox "${root:?}/bin/$a"
		n=$((n + 1))
	done
	[ -e "${root:?}/bin/sh" ] || die "busybox has no sh applet"
	# Scripts that start with #!/usr/bin/env should work too.
	[ -e "${root:?}/bin/env" ] && ln -sf /bin/busybox "${root:?}/usr/bin/env"
	log "linked $n applets"

	cat >"${root:?}/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
	cat >"${root:?}/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
	chmod 0644 "${root:?}/etc/passwd" "${root:?}/etc/group"
	chown -R 0:0 "$root"

	import_rootfs "$root"
}

# box_install ROOT: the box's packages, installed with apt-get inside the
# new root (debootstrap's own resolver is not made for a list this long),
# with no service started, and the box user.
box_install() {
	local root=$1 m

	printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
	chmod 0755 "$root/usr/sbin/policy-rc.d"
	for m in proc sys dev; do
		mount --bind "/$m" "$root/$m" || die "cannot bind /$m into the new root"
	done
	printf 'deb %s %s main\n' "$mirror" "$suite" >"$root/etc/apt/sources.list"
	log "installing the box's packages (several minutes)"
	if ! chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
	    sh -c "apt-get update && apt-get install -y --no-install-recommends $box_packages" >&2; then
		die "installing the box's packages failed (see the messages above)"
	fi
	chroot "$root" /usr/sbin/useradd -m -u 1000 -U -s /bin/bash box ||
	    die "cannot make the box user"
	printf 'box:100000:65536\n' >"$root/etc/subuid"
	printf 'box:100000:65536\n' >"$root/etc/subgid"
	# newuidmap and newgidmap with file capabilities, not setuid root: a
	# setuid map write is refused without CAP_SYS_ADMIN, and nothing in a
	# box is setuid.
	chmod 0755 "$root/usr/bin/newuidmap" "$root/usr/bin/newgidmap"
	chroot "$root" /sbin/setcap cap_setuid+ep /usr/bin/newuidmap ||
	    die "setcap newuidmap"
	chroot "$root" /sbin/setcap cap_setgid+ep /usr/bin/newgidmap ||
	    die "setcap newgidmap"
	find "$root" -xdev -perm /6000 -type f -exec chmod ug-s {} +
	# podman's docker command, without its notice on every call; its
	# networks by netavark, whose aardvark-dns resolves service names.
	mkdir -p "$root/etc/containers"
	: >"$root/etc/containers/nodocker"
	printf '[network]\nnetwork_backend = "netavark"\n' \
	    >"$root/etc/containers/containers.conf"
	for m in dev sys proc; do
		umount -l "$root/$m" 2>/dev/null || true
	done
	rm -f "$root/usr/sbin/policy-rc.d"
	mkdir -p "$root/home/box/work"
	chroot "$root" /bin/chown -R box:box /home/box
}

build_debian() {
	local root include=$debian_packages

	is_root || die "building the Debian image needs root (debootstrap); run it with sudo"
	apt_install debootstrap
	if [ -z "$mirror" ]; then
		mirror=$(detect_mirror)
	fi
	# debootstrap checks the Release signature with this keyring when it is
	# present; a missing keyring would silently skip that check.
	if [ ! -r /usr/share/keyrings/debian-archive-keyring.gpg ]; then
		apt_install debian-archive-keyring
	fi

	workdir=$(mktemp -d "${TMPDIR:-/var/tmp}/sandbox-mcp-image.XXXXXX")
	root=$workdir/rootfs
	log "bootstrapping Debian $suite from $mirror into $root (a few minutes)"
	if ! debootstrap --variant=minbase --include="$include" \
	    "$suite" "$root" "$mirror" >&2; then
		[ -r "${root:?}/debootstrap/debootstrap.log" ] &&
		    tail -n 20 "${root:?}/debootstrap/debootstrap.log" >&2
		die "debootstrap of $suite from $mirror failed (see the messages above)"
	fi

	if [ "$variant" = box ]; then
		box_install "$root"
	fi

	log "cleaning the root file system"
	# Package lists and caches: apt-get update inside a sandbox fetches them
	# again when needed.
	rm -rf "${root:?}"/var/lib/apt/lists/* \
	    "${root:?}"/var/cache/apt/*.bin \
	    "${root:?}"/var/cache/apt/archives/*.deb \
	    "${root:?}"/var/cache/apt/archives/partial/* \
	    "${root:?}"/var/cache/debconf/*-old \
	    "${root:?}"/var/lib/dpkg/*-old \
	    "${root:?}"/var/tmp/* \
	    "${root:?}"/tmp/* \
	    "${root:?}"/root/.cache
	find "${root:?}/var/log" -type f -exec truncate -s 0 {} +
	# Manual pages, documentation and message translations are about a
	# quarter of the image and nobody reads them in a sandbox. Keep the
	# copyright files and the locale alias list, and tell dpkg not to
	# install such files later either (as Debian's "slim" images do).
	find "${root:?}/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
	find "${root:?}/usr/share/doc" -mindepth 1 -depth -type d -empty -delete
	rm -rf "${root:?}"/usr/share/man/* "${root:?}"/usr/share/info/* \
	    "${root:?}"/usr/share/groff/* "${root:?}"/usr/share/linda/* \
	    "${root:?}"/usr/share/lintian/*
	find "${root:?}/usr/share/locale" -mindepth 1 -maxdepth 1 \
	    ! -name locale.alias -exec rm -rf {} +
	mkdir -p "${root:?}/etc/dpkg/dpkg.cfg.d"
	cat >"${root:?}/etc/dpkg/dpkg.cfg.d/sandbox-mcp-slim" <<'EOF'
# Written by sandbox-mcp's build-image.sh: keep the sandbox image small.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
	# Docker provides /dev, /proc, /sys, resolv.conf, hostname and hosts at
	# run time; do not ship the host's copies.
	rm -rf "${root:?}"/dev/* "${root:?}"/proc/* "${root:?}"/sys/*
	: >"${root:?}/etc/resolv.conf"
	echo localhost >"${root:?}/etc/hostname"
	printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' \
	    >"${root:?}/etc/hosts"
	: >"${root:?}/etc/machine-id"
	mkdir -p "${root:?}/workspace"

	import_rootfs "$root"
}

check_docker

# What an image is built from, as a label: an image of an older recipe
# (fewer packages) is built again rather than kept.
debian_packages=bash,coreutils,git,python3,ca-certificates,procps
box_packages="curl nodejs npm golang-go build-essential xvfb x11vnc xdotool
    chromium ffmpeg fonts-dejavu-core fonts-liberation podman podman-docker
    docker-compose uidmap slirp4netns netavark aardvark-dns iptables libcap2-bin
    iproute2 xz-utils"
box_packages=$(echo $box_packages)
case $variant in
busybox) recipe=busybox-1 ;;
box) recipe="box-4:$debian_packages,${box_packages// /,}" ;;
*) recipe=debian-2:$debian_packages ;;
esac

if [ "$force" -eq 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
	have=$(docker image inspect \
	    -f '{{index .Config.Labels "org.sandbox-mcp.recipe"}}' "$tag" \
	    2>/dev/null || true)
	if [ "$have" = "$recipe" ]; then
		log "image $tag already exists; nothing to do (use --force to rebuild)"
		printf '%s\n' "$tag"
		exit 0
	fi
	log "image $tag was built from another recipe (${have:-none}); building it again"
fi

start=$(date +%s)
if [ "$variant" = busybox ]; then
	build_busybox
else
	[ "$variant" = box ] && debian_packages=$debian_packages,libcap2-bin
	build_debian
fi
log "done in $(($(date +%s) - start)) s"
printf '%s\n' "$tag"
