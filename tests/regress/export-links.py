#!/usr/bin/env python3
# Hard links and the limits of an export, against the real Docker Engine:
# - 16 MiB on a sandbox's disk (one file with 100 names, one empty file
#   with 20,000) is 16 MiB and two inodes on the host again: a dir
#   export writes the other names as links inside dest, a tar or tar-zst
#   as hardlink entries (the archive stays 16 MiB and a header a name,
#   and GNU tar
#   unpacks them as links); a second dir export writes nothing;
# - max_bytes and max_entries refuse an export past them with
#   invalid_request naming the argument, and nothing is written: a new
#   dir dest is not left behind, an old archive stays whole and nothing
#   lies beside it; the defaults (the sandbox disk's size and inodes)
#   pass what the disk holds; names that cannot be linked (another file
#   system mounted in dest) are copies and count against max_bytes.

import os
import subprocess

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, main,
                 ok_result, remove_our_containers, tmpdir)

MKLINKS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* mklinks TARGET PREFIX N: N more names for TARGET, PREFIX1..PREFIXN. */
int
main(int argc, char **argv)
{
	char	name[4096];
	long	i, n;

	if (argc != 4)
		return (2);
	n = atol(argv[3]);
	for (i = 1; i <= n; i++) {
		snprintf(name, sizeof name, "%s%ld", argv[2], i);
		if (link(argv[1], name) != 0) {
			perror(name);
			return (1);
		}
	}
	return (0);
}
"""


def tree_usage(top):
    """(distinct inodes, their allocated bytes, names) under top, the
    archives' whiteouts (of the helper, in the base) aside."""
    inodes = {}
    names = 0
    for d, dirs, files in os.walk(top):
        for n in files:
            if n.startswith(".wh."):
                continue
            st = os.lstat(os.path.join(d, n))
            inodes[(st.st_dev, st.st_ino)] = st.st_blocks * 512
            names += 1
    return len(inodes), sum(inodes.values()), names


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    src = os.path.join(roots, "mklinks.c")
    with open(src, "w") as f:
        f.write(MKLINKS)
    r = subprocess.run(["cc", "-static", "-O2", "-o",
                        os.path.join(ws, "mklinks"), src],
                       capture_output=True, text=True)
    check(r.returncode == 0, "cc -static: %s" % r.stderr)
    out = tmpdir()
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nexport-root %s\n" % (roots, out))
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}, timeout=120), "create")["id"]
    r = ok_result(s.call("exec_command", {
        "sandbox_id": sid, "yield_time_ms": 120000,
        "cmd": "cd /workspace && rm mklinks.c 2>/dev/null;"
               " dd if=/dev/urandom of=big bs=1M count=16 2>/dev/null &&"
               " ./mklinks big big. 99 && : > empty && mkdir l &&"
               " ./mklinks empty l/ 19999 && rm mklinks && echo made"},
        timeout=180), "the links")
    check_eq((r.get("exit_code"), r["output"]), (0, "made\n"),
             "links made in the sandbox")

    # ---- dir ----
    d = os.path.join(out, "d")
    r = ok_result(s.call("export_changes", {"sandbox_id": sid, "dest": d},
                         timeout=300), "dir export")
    inodes, used, names = tree_usage(d)
    check_eq(names, 100 + 20000, "every name is there")
    check_eq(inodes, 2, "two inodes, as in the sandbox")
    check(used < 17 * 1024 * 1024, "16 MiB on the host, not %d" % used)
    check_eq(r.get("hardlinks_written"), 99 + 19999, "hardlinks_written")
    check_eq(r["files_written"], 2, "two files written")
    check(r["bytes_written"] <= 16 * 1024 * 1024 + 4096,
          "bytes_written %d" % r["bytes_written"])
    st = os.lstat(os.path.join(d, "big.42"))
    check_eq((st.st_ino, st.st_nlink),
             (os.lstat(os.path.join(d, "big")).st_ino, 100),
             "big.42 is a link to big")
    r = ok_result(s.call("export_changes", {"sandbox_id": sid, "dest": d},
                         timeout=300), "dir export again")
    check_eq((r["files_written"], r.get("hardlinks_written", 0)), (0, 0),
             "a second export writes nothing")

    # ---- archives ----
    for fmt, name in (("tar", "x.tar"), ("tar-zst", "x.tar.zst")):
        dest = os.path.join(out, name)
        r = ok_result(s.call("export_changes", {
            "sandbox_id": sid, "dest": dest, "format": fmt}, timeout=300),
            fmt)
        size = os.path.getsize(dest)
        # 16 MiB and a header a name (20,100 of 512 bytes and more).
        check(size < 32 * 1024 * 1024, "%s is %d bytes, not 1.6 GiB"
              % (fmt, size))
        check_eq(r.get("hardlinks_written"), 99 + 19999, fmt + " links")
        ext = tmpdir()
        subprocess.run(["tar", "-xf", dest, "-C", ext], check=True)
        inodes, used, names = tree_usage(ext)
        check_eq((inodes, names), (2, 20100), fmt + " unpacks as links")
        check(used < 17 * 1024 * 1024, fmt + " unpacked: %d bytes" % used)

    # ---- the limits ----
    old = os.path.join(out, "x.tar")
    with open(old, "rb") as f:
        before = f.read()
    for args, arg in (({"max_bytes": 8 * 1024 * 1024}, "max_bytes"),
                      ({"max_entries": 5000}, "max_entries")):
        for fmt, dest in (("dir", os.path.join(out, "new")),
                          ("tar", old), ("tar-zst",
                                         os.path.join(out, "new.tar.zst"))):
            a = {"sandbox_id": sid, "dest": dest, "format": fmt}
            a.update(args)
            r = s.call("export_changes", a, timeout=300)
            check(r.get("isError"), "%s %s past %s: refused" % (fmt, dest,
                                                                arg))
            err = r["structuredContent"]["error"]
            check_eq(err["kind"], "invalid_request", "%s: kind" % arg)
            check_in(arg, err["message"], "%s: message names it" % arg)
            check_in(arg, err.get("details", {}), "%s: details" % arg)
        check(not os.path.exists(os.path.join(out, "new")),
              "no dir dest is left behind (%s)" % arg)
        check(not os.path.exists(os.path.join(out, "new.tar.zst")),
              "no archive is made (%s)" % arg)
        with open(old, "rb") as f:
            check(f.read() == before, "the old archive stays whole (%s)"
                  % arg)
        check_eq(sorted(n for n in os.listdir(out) if n.startswith(".")),
                 [], "nothing beside the archives (%s)" % arg)
    # Limits the export fits in pass.
    r = ok_result(s.call("export_changes", {
        "sandbox_id": sid, "dest": os.path.join(out, "fits"),
        "max_bytes": 17 * 1024 * 1024, "max_entries": 20200}, timeout=300),
        "within the limits")
    check_eq(r.get("hardlinks_written"), 99 + 19999, "within: links")

    # A dest with another file system mounted inside: names that cannot
    # be linked there are copies, and count as such against max_bytes.
    r = ok_result(s.call("exec_command", {
        "sandbox_id": sid, "yield_time_ms": 60000,
        "cmd": "cd /workspace && mkdir -p mnt/a mnt/b &&"
               " dd if=/dev/urandom of=mnt/a/f bs=1M count=1 2>/dev/null &&"
               " for i in $(seq 1 50); do ln mnt/a/f mnt/b/$i; done &&"
               " echo made"}, timeout=90), "links in mnt")
    check_eq(r["output"], "made\n", "mnt made")
    m = os.path.join(out, "m")
    os.makedirs(os.path.join(m, "mnt"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "smcp-test",
                    os.path.join(m, "mnt")], check=True)
    cleanup(lambda: subprocess.run(["umount", "-l", os.path.join(m, "mnt")],
                                   capture_output=True))
    r = s.call("export_changes", {"sandbox_id": sid, "dest": m,
                                  "max_bytes": 20 * 1024 * 1024},
               timeout=300)
    check(r.get("isError"), "copies past max_bytes: refused: %r"
          % r.get("structuredContent"))
    check_in("max_bytes", r["structuredContent"]["error"]["message"],
             "names max_bytes")
    st = os.statvfs(os.path.join(m, "mnt"))
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    check(used < 24 * 1024 * 1024, "the mount holds %d bytes, not 51 MiB"
          % used)


main(test)
