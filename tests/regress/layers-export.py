#!/usr/bin/env python3
# export_changes against the real Docker Engine:
# - after publishes of every kind (files added, changed, deleted, a
#   directory replaced whole, a directory replaced by a file and a file
#   by a directory, symlinks, a sparse file, a set-uid file, a name
#   that is not ASCII), a dir export onto a copy of the original
#   workspace reproduces the published view exactly, and a second run
#   skips every file; set-uid bits do not reach the host (in any
#   format: a tar unpacked as root has none either), the sparse
#   file stays sparse, the sandbox's symlinks are written, never
#   followed;
# - tar and tar-zst list the expected entries and OCI whiteouts (read
#   back with GNU tar, zstd and bsdtar), no whiteout of a path the base
#   lacks, and applied to the workspace with the OCI rules they give
#   the published view; an archive replaces an old one whole, and no
#   temporary file is left beside it;
# - every refusal of layers.md, and dest outside the workspace root and
#   the export roots (/etc/cron.d), a symlink at any component of dest,
#   an export root limited to other tenants: invalid_request, nothing
#   touched; a root of another tenant inside the sandbox's workspace is
#   neither copied into the sandbox nor written by an export back, and
#   an export root of another tenant inside it is no dest in any format,
#   at it or under it;
# - symlinks planted in a dest tree where the delta writes, deletes or
#   descends (dest/keep -> a host directory, ...): nothing outside dest
#   is touched;
# - the workspace root is always a dest, with no export root at all;
# - a live workspace session is named in live_workspace_sessions;
# - an export while a squash runs is right; kill -9 in the middle of an
#   archive export leaves the old archive at dest and nothing beside it,
#   and a restart a usable stack.

import hashlib
import os
import shutil
import signal
import stat
import subprocess
import time

from lib import (BIN, IMAGE, Server, check, check_eq, check_in, cleanup,
                 err_result, http_json, http_session, keygen, main,
                 ok_result, remove_our_containers, tmpdir)

LIST = ("cd /workspace; find . ! -name . | while read p; do"
        " if [ -L \"$p\" ]; then echo \"l|$p|$(readlink \"$p\")\";"
        " elif [ -d \"$p\" ]; then echo \"d|$p|$(stat -c %a \"$p\")\";"
        " else echo \"f|$p|$(stat -c %a \"$p\")|$(stat -c %s \"$p\")|"
        "$(md5sum < \"$p\" | cut -d' ' -f1)\"; fi; done")


def run(s, sid, cmd, ws=None):
    args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 60000}
    if ws is not None:
        args["workspace_session_id"] = ws
    r = ok_result(s.call("exec_command", args, timeout=90), "exec %r"
                  % cmd[:50])
    check_eq(r["status"], "ok", "exec %r ended" % cmd[:50])
    check_eq(r.get("exit_code"), 0, "exec %r: %r" % (cmd[:50],
                                                     r["output"][-300:]))
    return r


def session(s, sid):
    return ok_result(s.call("create_workspace_session",
                            {"sandbox_id": sid}, timeout=60),
                     "session")["workspace_session_id"]


def end(s, sid, ws):
    ok_result(s.call("destroy_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": ws}), "end %s" % ws)


def publish(s, sid, ws):
    return ok_result(s.call("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": ws}, timeout=60),
        "publish %s" % ws)


def write(s, sid, path, content):
    return ok_result(s.call("file_write", {
        "sandbox_id": sid, "path": path, "content": content}, timeout=60),
        "write %s" % path)


def export(s, sid, dest, fmt="dir", timeout=120):
    return ok_result(s.call("export_changes", {
        "sandbox_id": sid, "dest": dest, "format": fmt}, timeout=timeout),
        "export %s to %s" % (fmt, dest))


def view(s, sid):
    """The published view: one line per path (type, mode, size, bytes'
    hash, link target), as a sorted list."""
    ws = session(s, sid)
    out = run(s, sid, LIST, ws)["output"]
    end(s, sid, ws)
    return sorted(l for l in out.splitlines() if l)


def listing(top):
    """The same lines for a host tree."""
    lines = []
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = "./" + os.path.relpath(full, top)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                lines.append("l|%s|%s" % (rel, os.readlink(full)))
            elif stat.S_ISDIR(st.st_mode):
                lines.append("d|%s|%o" % (rel, st.st_mode & 0o7777))
            else:
                with open(full, "rb") as f:
                    md5 = hashlib.md5(f.read()).hexdigest()
                lines.append("f|%s|%o|%d|%s" % (rel, st.st_mode & 0o7777,
                                                st.st_size, md5))
    return sorted(lines)


def snapshot(top):
    """Everything of a host tree, to show it was not touched."""
    if not os.path.lexists(top):
        return None
    if os.path.islink(top) or not os.path.isdir(top):
        st = os.lstat(top)
        return ("leaf", st.st_mode, st.st_size, st.st_mtime_ns)
    return [(l, os.lstat(os.path.join(top, l.split("|")[1])).st_mtime_ns)
            for l in listing(top)]


def unsuid(lines):
    """The view as the host gets it: set-id bits dropped."""
    out = []
    for l in lines:
        p = l.split("|")
        if p[0] == "f":
            p[2] = "%o" % (int(p[2], 8) & 0o777)
        out.append("|".join(p))
    return out


def oci_apply(archive_dir, target):
    """Apply an extracted OCI layer to target: opaque markers and
    whiteouts first, then the rest copied over."""
    for dirpath, dirnames, filenames in os.walk(archive_dir):
        rel = os.path.relpath(dirpath, archive_dir)
        tdir = os.path.normpath(os.path.join(target, rel))
        if ".wh..wh..opq" in filenames and os.path.isdir(tdir):
            keep = set(dirnames) | set(filenames)
            for n in os.listdir(tdir):
                if n not in keep:
                    remove(os.path.join(tdir, n))
        for n in filenames:
            if n.startswith(".wh.") and n != ".wh..wh..opq":
                remove(os.path.join(tdir, n[4:]))
    for dirpath, dirnames, filenames in os.walk(archive_dir):
        rel = os.path.relpath(dirpath, archive_dir)
        tdir = os.path.normpath(os.path.join(target, rel))
        links = [n for n in dirnames if
                 os.path.islink(os.path.join(dirpath, n))]
        dirnames[:] = [n for n in dirnames if n not in links]
        filenames = filenames + links
        for n in dirnames:
            t = os.path.join(tdir, n)
            if os.path.lexists(t) and (os.path.islink(t) or
                                       not os.path.isdir(t)):
                os.unlink(t)
            if not os.path.lexists(t):
                os.mkdir(t)
            os.chmod(t, os.lstat(os.path.join(dirpath, n)).st_mode &
                     0o7777)
        for n in filenames:
            if n.startswith(".wh."):
                continue
            src, t = os.path.join(dirpath, n), os.path.join(tdir, n)
            if os.path.lexists(t):
                remove(t)
            if os.path.islink(src):
                os.symlink(os.readlink(src), t)
            else:
                shutil.copy2(src, t)


def remove(p):
    if os.path.islink(p) or (os.path.lexists(p) and not os.path.isdir(p)):
        os.unlink(p)
    elif os.path.isdir(p):
        shutil.rmtree(p)


def members(cmd):
    r = subprocess.run(cmd, shell=True, capture_output=True, check=True)
    return sorted(n.rstrip("/") for n in r.stdout.decode().splitlines())


def helper_holds(root_pid, prefix):
    """Whether a process under root_pid has a file under prefix open
    (an unnamed one: "<dir>/#ino (deleted)")."""
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == root_pid:
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != root_pid:
                continue
            for fd in os.listdir("/proc/%s/fd" % d):
                t = os.readlink("/proc/%s/fd/%s" % (d, fd))
                if t.startswith(prefix + "/#"):
                    return int(d)
        except (OSError, ValueError, IndexError):
            continue
    return None


def config_refusals():
    """export-root lines that would open the whole host, or escape."""
    d = tmpdir()
    conf = os.path.join(d, "conf")
    for root, says in (("/", "cannot be /"), ("//", "cannot be /"),
                       ("/.", "cannot be /"), ("/./", "cannot be /"),
                       ("/tmp/../etc", '".."'), ("relative", "absolute"),
                       ("%s tenants" % d, "tenants")):
        with open(conf, "w") as f:
            f.write("export-root %s\n" % root)
        r = subprocess.run([BIN, "-n", "-f", conf], capture_output=True,
                           text=True)
        check(r.returncode != 0, "export-root %s is refused" % root)
        check_in(says, r.stderr, "export-root %s: says why" % root)
    with open(conf, "w") as f:
        f.write("export-root %s\nexport-root %s/ tenants a,b\n" % (d, d))
    r = subprocess.run([BIN, "-n", "-f", conf], capture_output=True,
                       text=True)
    check_in("given twice", r.stderr, "an export root given twice")


RACER = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
/* racer DIR N TARGET: swap .sNNNN (a symlink to TARGET) with rNNNN the
   moment the export makes rNNNN, one name after the other (the export
   makes them in order), until the file STOP appears. */
int
main(int argc, char **argv)
{
	char a[64], b[64];
	int d = open(argv[1], O_RDONLY | O_DIRECTORY), n = atoi(argv[2]), i;
	struct stat st;
	long spins = 0;

	for (i = 0; i < n; i++) {
		snprintf(a, sizeof a, ".s%05d", i);
		symlinkat(argv[3], d, a);
	}
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < n; i++) {
		snprintf(a, sizeof a, ".s%05d", i);
		snprintf(b, sizeof b, "r%05d", i);
		while (renameat2(d, a, d, b, RENAME_EXCHANGE) != 0) {
			if (++spins % 4096 == 0 &&
			    fstatat(d, "STOP", &st, 0) == 0)
				return 0;
		}
	}
	return 0;
}
"""


def race(s, sid, out, victim):
    """A host process swaps symlinks to victim in for the directories a
    dir export makes: the export sets modes on what it made, never on
    what a link names."""
    n = 3000
    w = session(s, sid)
    run(s, sid, "mkdir race; cd race; i=0; while [ $i -lt %d ]; do"
        " mkdir $(printf r%%05d $i); i=$((i+1)); done; chmod 0777 r*" % n, w)
    publish(s, sid, w)
    d = tmpdir()
    src, binary = os.path.join(d, "racer.c"), os.path.join(d, "racer")
    with open(src, "w") as f:
        f.write(RACER)
    subprocess.run(["cc", "-O2", "-o", binary, src], check=True)
    before = os.lstat(victim).st_mode
    target = "../" * 40 + victim.lstrip("/")
    for k in range(3):
        dest = os.path.join(out, "race%d" % k)
        os.makedirs(os.path.join(dest, "race"))
        p = subprocess.Popen([binary, os.path.join(dest, "race"), str(n),
                              target], stdout=subprocess.PIPE)
        check_eq(p.stdout.readline(), b"ready\n", "the racer is ready")
        s.call("export_changes", {"sandbox_id": sid, "dest": dest},
               timeout=120)
        open(os.path.join(dest, "race", "STOP"), "w").close()
        p.wait(timeout=30)
        check_eq(os.lstat(victim).st_mode, before, "round %d: the mode of"
                 " a host directory outside dest is untouched" % k)
        shutil.rmtree(dest)
    w = session(s, sid)
    run(s, sid, "rm -rf race", w)
    publish(s, sid, w)


def test():
    config_refusals()
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(os.path.join(ws, "keep", "sub"))
    for i in range(5):
        with open(os.path.join(ws, "keep", "sub", "f%d" % i), "w") as f:
            f.write("base %d\n" % i)
    os.makedirs(os.path.join(ws, "rep"))
    for n, text in (("gone.txt", "to delete\n"), ("rep/a", "a\n"),
                    ("rep/b", "b\n"), ("file2dir.txt", "file\n"),
                    ("unchanged.txt", "same\n"), ("mode.sh", "#!/bin/sh\n")):
        with open(os.path.join(ws, n), "w") as f:
            f.write(text)
    out = tmpdir()
    victim = tmpdir()
    for n in ("gone.txt", "f0", "only", "x"):
        with open(os.path.join(victim, n), "w") as f:
            f.write("victim %s\n" % n)
    os.makedirs(os.path.join(victim, "sub"))
    with open(os.path.join(victim, "hl"), "w") as f:
        f.write("#!/bin/sh\n")
    os.chmod(os.path.join(victim, "hl"), 0o644)
    victim_before = snapshot(victim)
    limited = tmpdir()
    config = ("workspace-root %s\nexport-root %s\nexport-root %s tenants"
              " nobody\n" % (roots, out, limited))
    s = Server(sets=("management", "runtime"), config=config)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}, timeout=120), "create")["id"]

    # Nothing published yet: an empty delta.
    r = export(s, sid, os.path.join(out, "empty"))
    check_eq((r["layers_exported"], r["files_written"]), (0, 0),
             "nothing to export")
    check_eq(os.listdir(os.path.join(out, "empty")), [], "an empty dir")
    os.rmdir(os.path.join(out, "empty"))

    for i in range(10):
        write(s, sid, "w/file%d.txt" % i, "write %d\n" % i)
    a = session(s, sid)
    run(s, sid, "rm gone.txt; rm -rf keep/sub; mkdir keep/sub;"
        " echo new > keep/sub/only; ln -s w/file1.txt link;"
        " ln -s /etc esc; ln -s %s hostlink; rm -rf rep; echo r > rep;"
        " rm file2dir.txt; mkdir file2dir.txt; echo in > file2dir.txt/x;"
        " echo s > suid; chmod 4755 suid; chmod 755 mode.sh;"
        " dd if=/dev/zero of=sparse bs=1 count=0 seek=67108864"
        " 2>/dev/null; echo tail >> sparse; echo u > \"$(printf"
        " 'caf\\303\\251.txt')\"; echo t > w/tmp.txt" % victim, a)
    publish(s, sid, a)
    for i in range(5):
        b = session(s, sid)
        run(s, sid, "echo %d >> w/log.txt; rm -f w/file%d.txt" % (i, i), b)
        publish(s, sid, b)
    b = session(s, sid)
    run(s, sid, "rm w/tmp.txt", b)
    publish(s, sid, b)
    write(s, sid, "w/file7.txt", "again 7\n")
    published = view(s, sid)
    check_in("f|./suid|4755|2|" + hashlib.md5(b"s\n").hexdigest(),
             published, "the set-uid file is published as such")
    host_view = unsuid(published)

    # ---- refusals: invalid_request, nothing touched ----
    os.makedirs(os.path.join(out, "adir"))
    with open(os.path.join(out, "afile"), "w") as f:
        f.write("a file\n")
    os.symlink(victim, os.path.join(out, "lnk"))
    os.symlink(os.path.join(victim, "f0"), os.path.join(out, "lnk.tar"))
    cron = "/etc/cron.d"
    cron_before = snapshot(cron)
    out_before = snapshot(out)
    home = os.path.expanduser("~")
    refusals = [
        ("relative", "out/x", "dir", "absolute"),
        ("root", "/", "dir", "root directory"),
        ("home", home, "dir", "home directory"),
        ("state", os.path.join(state, "x"), "dir", "state directory"),
        ("holds state", os.path.dirname(state), "dir", "state directory"),
        ("dotdot", out + "/adir/../x", "dir", ".."),
        ("cron", cron, "dir", "export root"),
        ("cron tar", cron + "/x.tar", "tar", "export root"),
        ("tmp", "/tmp/smcp-export-elsewhere", "dir", "export root"),
        ("dir onto a file", os.path.join(out, "afile"), "dir",
         "not a directory"),
        ("archive onto a dir", os.path.join(out, "adir"), "tar",
         "a directory"),
        ("archive into a missing parent", os.path.join(out, "no", "x.tar"),
         "tar-zst", "does not exist"),
        ("symlink component", os.path.join(out, "lnk", "sub"), "dir",
         "symlink"),
        ("symlink component, archive", os.path.join(out, "lnk", "y.tar"),
         "tar", "symlink"),
        ("symlink dest", os.path.join(out, "lnk"), "dir", "symlink"),
        ("symlink archive", os.path.join(out, "lnk.tar"), "tar",
         "symlink"),
    ]
    for what, dest, fmt, says in refusals:
        e = err_result(s.call("export_changes", {
            "sandbox_id": sid, "dest": dest, "format": fmt}, timeout=60),
            "invalid_request", "refused: %s" % what)
        check_in(says, e["message"], "%s: the message says why" % what)
        check_in("dest", e.get("details", {}), "%s: names dest" % what)
    e = err_result(s.call("export_changes", {
        "sandbox_id": sid, "dest": os.path.join(out, "z"), "format": "zip"},
        timeout=60), "invalid_request", "an unknown format")
    check_in("format", e["message"], "the message names format")
    check_eq(snapshot(out), out_before, "refusals touched nothing in the"
             " export root")
    check_eq(snapshot(cron), cron_before, "/etc/cron.d untouched")
    check_eq(snapshot(victim), victim_before, "the victim is untouched")
    check(not os.path.lexists(os.path.join(limited, "x")),
          "nothing in another tenant's root")
    check(not os.path.lexists("/tmp/smcp-export-elsewhere"),
          "nothing outside the roots")

    # ---- dir onto a copy of the workspace: the published view ----
    copy = os.path.join(out, "copy")
    shutil.copytree(ws, copy, symlinks=True)
    r = export(s, sid, copy)
    check_eq(r["format"], "dir", "format")
    check(r["layers_exported"] >= 8, "every layer above the base (%d)"
          % r["layers_exported"])
    check(r["files_written"] >= 10 and r["symlinks_written"] == 3,
          "files and symlinks written: %r" % r)
    check(r["deletes_applied"] >= 1 and r["opaque_clears"] >= 1,
          "deletions and a cleared directory: %r" % r)
    check_eq(listing(copy), host_view, "the dir export gives the"
             " published view on the workspace")
    check_eq(os.readlink(os.path.join(copy, "esc")), "/etc",
             "the sandbox's link is written as a link")
    check_eq(os.lstat(os.path.join(copy, "suid")).st_mode & 0o7777, 0o755,
             "no set-uid bit reaches the host")
    st = os.lstat(os.path.join(copy, "sparse"))
    check_eq(st.st_size, 67108864 + 5, "the sparse file's size")
    check(st.st_blocks * 512 < 1024 * 1024, "the sparse file stays sparse"
          " (%d blocks)" % st.st_blocks)
    check_eq(snapshot(victim), victim_before, "the sandbox's link to a"
             " host directory was not followed")
    check_eq([n for n in os.listdir(copy) if n.startswith(".sandbox-mcp")],
             [], "no temporary file left")
    again = export(s, sid, copy)
    check_eq((again["files_written"], again["symlinks_written"],
              again["deletes_applied"], again["opaque_clears"],
              again["bytes_written"]), (0, 0, 0, 0, 0),
             "a second run writes nothing: %r" % again)
    check_eq(again["skipped_unchanged"], r["files_written"] +
             r["symlinks_written"] + r["skipped_unchanged"],
             "a second run skips every file")
    check_eq(r["skipped_unchanged"], 1, "mode.sh (bytes equal, mode"
             " changed) was skipped the first time, its mode set")
    check_eq(listing(copy), host_view, "and leaves the view")

    # ---- symlinks planted in dest where the delta writes ----
    planted = os.path.join(out, "planted")
    shutil.copytree(ws, planted, symlinks=True)
    shutil.rmtree(os.path.join(planted, "keep"))
    os.symlink(victim, os.path.join(planted, "keep"))     # descends
    os.symlink(victim, os.path.join(planted, "w"))        # descends
    os.unlink(os.path.join(planted, "gone.txt"))
    os.symlink(os.path.join(victim, "gone.txt"),
               os.path.join(planted, "gone.txt"))         # deletes
    os.unlink(os.path.join(planted, "file2dir.txt"))
    os.symlink(os.path.join(victim, "sub"),
               os.path.join(planted, "file2dir.txt"))     # makes a dir
    os.symlink(os.path.join(victim, "only"),
               os.path.join(planted, "suid"))             # writes a file
    os.symlink(os.path.join(victim, "x"),
               os.path.join(planted, "link"))             # writes a link
    shutil.rmtree(os.path.join(planted, "rep"))
    os.symlink(victim, os.path.join(planted, "rep"))      # file over dir
    os.unlink(os.path.join(planted, "mode.sh"))           # same bytes,
    os.link(os.path.join(victim, "hl"),                   # new mode:
            os.path.join(planted, "mode.sh"))             # a hard link
    export(s, sid, planted)
    check_eq(snapshot(victim), victim_before, "planted links: nothing"
             " outside dest touched")
    check_eq(listing(planted), host_view, "planted links: replaced by"
             " the delta")
    check_eq(os.lstat(os.path.join(planted, "mode.sh")).st_nlink, 1,
             "a hard-linked file whose mode changes gets an inode of its"
             " own")

    race_victim = tmpdir()
    os.chmod(race_victim, 0o755)
    race(s, sid, out, race_victim)
    published = view(s, sid)
    host_view = unsuid(published)

    # ---- archives ----
    tar = os.path.join(out, "x.tar")
    with open(tar, "w") as f:
        f.write("an old archive\n")
    r = export(s, sid, tar, "tar")
    check_eq(r["format"], "tar", "format tar")
    check_eq(r["bytes_written"], os.path.getsize(tar), "bytes_written is"
             " the archive's size")
    check(r["bytes_written"] < 1024 * 1024, "the sparse file is stored"
          " sparse (%d bytes)" % r["bytes_written"])
    names = members("tar -tf %s" % tar)
    for n in (".wh.gone.txt", "keep/sub/.wh..wh..opq", "keep/sub/only",
              "rep", "file2dir.txt/x", "esc", "link", "sparse",
              "caf\u00e9.txt", "w/file7.txt"):
        check_in(n, names, "tar lists %s" % n)
    check(not any("tmp.txt" in n or n.startswith("w/.wh.") for n in
                  names),
          "no whiteout of a path the base lacks: %r" % names)
    check(not any(n.startswith("keep/sub/f") for n in names),
          "the replaced directory's old files are not there")
    check_eq(r["whiteouts_emitted"], len([n for n in names if
                                          os.path.basename(n).startswith(
                                              ".wh.")]),
             "whiteouts_emitted counts the .wh. entries")
    check_eq(members("bsdtar -tf %s" % tar), names, "bsdtar reads the"
             " same entries")
    ext = os.path.join(tmpdir(), "x")
    os.makedirs(ext)
    subprocess.run(["tar", "-xpf", tar, "-C", ext], check=True)
    applied = os.path.join(tmpdir(), "applied")
    shutil.copytree(ws, applied, symlinks=True)
    oci_apply(ext, applied)
    check_eq(listing(applied), host_view, "the tar applied with the OCI"
             " rules gives the published view")

    zst = os.path.join(out, "x.tar.zst")
    r = export(s, sid, zst, "tar-zst")
    check_eq(r["format"], "tar-zst", "format tar-zst")
    check_eq(r["bytes_written"], os.path.getsize(zst), "its size")
    subprocess.run(["zstd", "-t", "-q", zst], check=True)
    check_eq(members("zstd -dc %s | tar -tf -" % zst), names,
             "tar-zst holds the tar's entries (zstd | tar)")
    check_eq(members("bsdtar -tf %s" % zst), names, "bsdtar reads it")
    left = sorted(n for n in os.listdir(out) if n.startswith("."))
    check_eq(left, [], "nothing left beside the archives")

    # ---- the workspace root needs no export root ----
    s.kill()
    s = Server(sets=("management", "runtime"), state=state,
               config="workspace-root %s\n" % roots)
    s.initialize()
    e = err_result(s.call("export_changes", {
        "sandbox_id": sid, "dest": os.path.join(out, "y")}, timeout=60),
        "invalid_request", "no export root: only the workspace root")
    live = session(s, sid)
    run(s, sid, "echo unpublished > mine.txt", live)
    r = export(s, sid, ws)
    check_eq(listing(ws), host_view, "written back to the workspace root")
    check_eq(r.get("live_workspace_sessions"), [live], "the live session"
             " is named")
    end(s, sid, live)

    # ---- the tenant rule over HTTP ----
    s.kill()
    key_a, line_a = keygen("alice", "management", "runtime")
    troot = tmpdir()
    hid = os.path.join(ws, "hid")
    os.makedirs(hid, exist_ok=True)
    with open(os.path.join(hid, "secret.txt"), "w") as f:
        f.write("not alice's\n")
    hid_before = snapshot(hid)
    # An export root of bob's inside alice's workspace (which serves
    # everyone): no dest for alice, whichever rule would admit it.
    bobout = os.path.join(ws, "bobout")
    os.makedirs(os.path.join(bobout, "sub"), exist_ok=True)
    with open(os.path.join(bobout, "bob.txt"), "w") as f:
        f.write("bob's\n")
    bobout_before = snapshot(bobout)
    s = Server(sets=("management", "runtime"), state=state,
               listen="127.0.0.1:0",
               config="workspace-root %s\nworkspace-root %s tenants bob\n"
               "export-root %s tenants bob\nexport-root %s\n"
               "workspace-root %s/wsb tenants bob\n"
               "export-root %s tenants bob\n%s\n"
               % (roots, hid, troot, out, out, bobout, line_a))
    s.initialize()
    conn, hdr = http_session(s.port, key=key_a)
    hdr["Authorization"] = "Bearer " + key_a
    st, h, b = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, hdr)
    sid_a = http_json(b)["result"]["structuredContent"]["id"]
    st, h, b = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "export_changes", "arguments": {
            "sandbox_id": sid_a, "dest": os.path.join(troot, "a.tar"),
            "format": "tar"}}}, hdr)
    r = http_json(b)["result"]
    check(r["isError"], "an export root of another tenant is refused")
    check_eq(r["structuredContent"]["error"]["kind"], "invalid_request",
             "as invalid_request")
    check_eq(os.listdir(troot), [], "and nothing is written there")
    os.makedirs(os.path.join(out, "wsb"))
    for k, dest in enumerate((os.path.join(out, "wsb"),
                              os.path.join(out, "wsb", "p"))):
        st, h, b = conn.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 20 + k, "method": "tools/call",
            "params": {"name": "export_changes", "arguments": {
                "sandbox_id": sid_a, "dest": dest}}}, hdr)
        r = http_json(b)["result"]
        check(r["isError"] and r["structuredContent"]["error"]["kind"] ==
              "invalid_request", "another tenant's workspace root inside an"
              " export root is no dest (%s): %r" % (dest, r))
    check_eq(os.listdir(os.path.join(out, "wsb")), [], "nothing written in"
             " another tenant's workspace root")
    os.rmdir(os.path.join(out, "wsb"))

    # A root of another tenant's inside alice's workspace: her export
    # back into the workspace leaves it alone, and it is no dest.
    def alice(rid, tool, args):
        st, h, b = conn.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}, hdr)
        return http_json(b)["result"]
    ws_a = alice(7, "create_workspace_session", {
        "sandbox_id": sid_a})["structuredContent"]["workspace_session_id"]
    r = alice(12, "exec_command", {
        "sandbox_id": sid_a, "workspace_session_id": ws_a,
        "yield_time_ms": 30000, "cmd": "test ! -e hid && test -e"
        " unchanged.txt && echo not-copied"})
    check_eq(r["structuredContent"].get("output"), "not-copied\n",
             "another tenant's root is not copied into alice's sandbox")
    r = alice(8, "exec_command", {
        "sandbox_id": sid_a, "workspace_session_id": ws_a,
        "yield_time_ms": 30000, "cmd": "mkdir -p hid bobout; echo mine >"
        " hid/secret.txt; echo new > hid/new.txt; echo a > alice.txt;"
        " echo alice > bobout/bob.txt"})
    check(not r["isError"], "alice's command: %r" % r)
    r = alice(9, "publish_workspace_session", {
        "sandbox_id": sid_a, "workspace_session_id": ws_a})
    check(not r["isError"], "alice's publish: %r" % r)
    r = alice(10, "export_changes", {"sandbox_id": sid_a, "dest": ws})
    check(not r["isError"], "alice exports to her workspace: %r" % r)
    check_eq(snapshot(hid), hid_before, "another tenant's root inside"
             " alice's workspace is untouched")
    with open(os.path.join(ws, "alice.txt")) as f:
        check_eq(f.read(), "a\n", "the rest of alice's changes are"
                 " written back")
    r = alice(11, "export_changes", {"sandbox_id": sid_a, "dest": hid,
                                      "format": "dir"})
    check(r["isError"] and r["structuredContent"]["error"]["kind"] ==
          "invalid_request", "another tenant's root is no dest: %r" % r)
    check_eq(snapshot(hid), hid_before, "and stays untouched")
    for k, (dest, fmt) in enumerate(((bobout, "dir"),
                                     (os.path.join(bobout, "sub"), "dir"),
                                     (os.path.join(bobout, "new"), "dir"),
                                     (os.path.join(bobout, "x.tar"), "tar"),
                                     (os.path.join(bobout, "bob.txt"),
                                      "tar-zst"))):
        r = alice(30 + k, "export_changes", {"sandbox_id": sid_a,
                                             "dest": dest, "format": fmt})
        check(r["isError"] and r["structuredContent"]["error"]["kind"] ==
              "invalid_request", "an export root of another tenant inside"
              " the workspace is no dest (%s %s): %r" % (fmt, dest, r))
        check_in("export root", r["structuredContent"]["error"]["message"],
                 "the message says which root")
    check_eq(snapshot(bobout), bobout_before, "another tenant's export"
             " root inside the workspace stays untouched")
    s.kill()
    shutil.rmtree(hid)
    shutil.rmtree(bobout)
    os.unlink(os.path.join(ws, "alice.txt"))

    # ---- an export while a squash runs ----
    s = Server(sets=("management", "runtime"), state=state,
               config=config)
    s.initialize()
    for i in range(30):
        write(s, sid, "q/%d.txt" % i, "%d\n" % i)
    published = view(s, sid)
    s.send({"jsonrpc": "2.0", "id": 901, "method": "tools/call",
            "params": {"name": "squash_layerstacks",
                       "arguments": {"sandbox_id": sid}}})
    during = os.path.join(out, "during.tar")
    r = export(s, sid, during, "tar")
    ok_result(s.wait(901, timeout=120)["result"], "the squash")
    ext = os.path.join(tmpdir(), "d")
    os.makedirs(ext)
    subprocess.run(["tar", "-xpf", during, "-C", ext], check=True)
    applied = os.path.join(tmpdir(), "applied2")
    shutil.copytree(os.path.join(out, "copy"), applied, symlinks=True)
    # copy holds the earlier view with set-id bits dropped, and so does
    # the archive.
    oci_apply(ext, applied)
    check_eq(listing(applied), unsuid(published), "an export during a"
             " squash is"
             " the published view")

    # ---- kill -9 in the middle of an archive export ----
    big = session(s, sid)
    run(s, sid, "mkdir big; for i in 1 2 3 4 5 6; do dd if=/dev/urandom"
        " of=big/$i bs=1048576 count=40 2>/dev/null; done", big)
    publish(s, sid, big)
    published = view(s, sid)
    kd = os.path.join(out, "kd")
    s.send({"jsonrpc": "2.0", "id": 903, "method": "tools/call",
            "params": {"name": "export_changes", "arguments": {
                "sandbox_id": sid, "dest": kd}}})
    end_at = time.time() + 60
    pid = None
    while pid is None and time.time() < end_at:
        pid = helper_holds(s.proc.pid, os.path.join(kd, "big"))
    check(pid is not None, "the dir export is writing a file")
    os.kill(pid, signal.SIGSTOP)
    for n in os.listdir(os.path.join(kd, "big")):
        check_eq(os.path.getsize(os.path.join(kd, "big", n)), 40 << 20,
                 "a file at its name in dest is whole (%s)" % n)
    os.kill(pid, signal.SIGKILL)
    r = s.wait(903, timeout=60)["result"]
    check(r["isError"], "the killed export answers an error")
    victim_tar = os.path.join(out, "k.tar.zst")
    with open(victim_tar, "wb") as f:
        f.write(b"the old archive\n")
    s.send({"jsonrpc": "2.0", "id": 902, "method": "tools/call",
            "params": {"name": "export_changes", "arguments": {
                "sandbox_id": sid, "dest": victim_tar,
                "format": "tar-zst"}}})
    end_at = time.time() + 60
    pid = None
    while pid is None and time.time() < end_at:
        pid = helper_holds(s.proc.pid, out)
    check(pid is not None, "the export is writing its archive")
    os.kill(pid, signal.SIGSTOP)
    with open(victim_tar, "rb") as f:
        check_eq(f.read(), b"the old archive\n", "dest is the old archive"
                 " while the export writes")
    os.kill(pid, signal.SIGKILL)
    s.proc.kill()
    s.kill()
    with open(victim_tar, "rb") as f:
        check_eq(f.read(), b"the old archive\n", "after kill -9 dest is"
                 " the old archive")
    check_eq(sorted(n for n in os.listdir(out) if n.startswith(".")), [],
             "after kill -9 nothing is left beside it")
    s = Server(sets=("management", "runtime"), state=state, config=config)
    s.initialize()
    check_eq(view(s, sid), published, "the view after kill -9")
    staging = os.path.join(state, "sandboxes", sid, "stack", "staging")
    check_eq(os.listdir(staging), [], "staging is empty after the restart")
    r = export(s, sid, victim_tar, "tar-zst")
    check_in("big/6", members("zstd -dc %s | tar -tf -" % victim_tar),
             "the export after the restart")

    # A chain of 1,900 directories (about as deep as a path may go):
    # published, squashed and exported whole.
    h = session(s, sid)
    run(s, sid, "i=0; while [ $i -lt 1900 ]; do mkdir d && cd d;"
        " i=$((i+1)); done; echo deep > f", h)
    publish(s, sid, h)
    deep = "/".join(["d"] * 1900) + "/f"
    r = ok_result(s.call("file_read", {"sandbox_id": sid, "path": deep}),
                  "read the deepest file")
    check_eq(r["content"], "deep\n", "the deep chain is published")
    ok_result(s.call("squash_layerstacks", {"sandbox_id": sid},
                     timeout=120), "squash the deep chain")
    dz = os.path.join(out, "deep.tar")
    export(s, sid, dz, "tar")
    check_in(deep, members("tar -tf %s" % dz), "the deep file is archived")
    os.unlink(dz)

    # A huge sparse file: a second dir export compares its data regions,
    # not its holes.
    h = session(s, sid)
    run(s, sid, "dd if=/dev/zero of=huge bs=1 count=0 seek=1099511627776"
        " 2>/dev/null; echo end >> huge", h)
    publish(s, sid, h)
    hd = os.path.join(out, "huge")
    export(s, sid, hd)
    t0 = time.time()
    r = export(s, sid, hd, timeout=60)
    check(r["files_written"] == 0 and time.time() - t0 < 30,
          "a second export skips a 1 TiB sparse file at once (%r, %.1f s)"
          % (r, time.time() - t0))
    ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}, timeout=120),
              "destroy")
    s.kill()

    # The state directory reached through a symlink is still refused.
    real = os.path.join(out, "realstate")
    os.makedirs(real)
    link = os.path.join(tmpdir(), "state-link")
    os.symlink(real, link)
    s = Server(sets=("management", "runtime"), state=link,
               config="workspace-root %s\nexport-root %s\n" % (roots, out))
    cleanup(lambda: remove_our_containers(link))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}, timeout=120), "create")["id"]
    e = err_result(s.call("export_changes", {
        "sandbox_id": sid, "dest": out}, timeout=60), "invalid_request",
        "dest holding the state directory through a symlink")
    check_in("state directory", e["message"], "says why")
    check(os.path.isdir(os.path.join(real, "sandboxes")), "the state is"
          " there")
    ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}, timeout=120),
              "destroy")


if __name__ == "__main__":
    main(test)
