#!/usr/bin/env python3
# What an export hands the host, against the real Docker Engine:
# - a sandbox appends core.fsmonitor to .git/config, adds an executable
#   .git/hooks/post-checkout, points a nested .git file at a git
#   directory of its own (sub/.git -> evil.git, with its own config and
#   hooks) and changes .git/info/attributes; a dir export into the
#   workspace it came from writes none of them (left_out lists them),
#   and the operator's git status, checkout and a status in sub/ run
#   nothing; work-tree files (.gitattributes included) are exported;
#   tar and tar-zst hold none of them either;
# - include_git_config exports them, as asked;
# - a file the sandbox made as root with mode 4755 (and a 2755
#   directory) unpacks from a tar or tar-zst, as root, with no set-id
#   bit; keep_setid keeps them in the archive.

import hashlib
import os
import shutil
import subprocess

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, main,
                 ok_result, remove_our_containers, tmpdir)


def git(cwd, *args, home):
    env = {"PATH": os.environ["PATH"], "HOME": home,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}
    return subprocess.run(["git"] + list(args), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def sandbox(s, ws, what):
    return ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}, timeout=120), what)["id"]


def run(s, sid, cmd, what):
    """A sessionless command (its changes published), which must end 0."""
    r = ok_result(s.call("exec_command", {
        "sandbox_id": sid, "cmd": cmd, "yield_time_ms": 60000}, timeout=90),
        what)
    check_eq(r.get("exit_code"), 0, "%s: %r" % (what, r["output"]))
    return r


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    home = tmpdir()
    mark = tmpdir()
    os.makedirs(os.path.join(ws, "src"))
    with open(os.path.join(ws, "src", "a.txt"), "w") as f:
        f.write("base\n")
    r = git(ws, "init", "-q", "-b", "main", home=home)
    check_eq(r.returncode, 0, "git init: %s" % r.stderr)
    git(ws, "add", "-A", home=home)
    r = git(ws, "commit", "-q", "-m", "base", home=home)
    check_eq(r.returncode, 0, "git commit: %s" % r.stderr)
    git(ws, "branch", "other", home=home)
    # A submodule whose name holds a slash: its git directory is
    # .git/modules/libs/foo.
    sub = os.path.join(roots, "subrepo")
    os.makedirs(sub)
    git(sub, "init", "-q", "-b", "main", home=home)
    with open(os.path.join(sub, "s.txt"), "w") as f:
        f.write("sub\n")
    git(sub, "add", "-A", home=home)
    git(sub, "commit", "-q", "-m", "sub", home=home)
    r = git(ws, "-c", "protocol.file.allow=always", "submodule", "add",
            "-q", sub, "libs/foo", home=home)
    check_eq(r.returncode, 0, "git submodule add: %s" % r.stderr)
    git(ws, "commit", "-q", "-m", "submodule", home=home)
    check(os.path.isfile(os.path.join(ws, ".git", "modules", "libs", "foo",
                                      "config")), "the nested git dir")
    config_before = sha(os.path.join(ws, ".git", "config"))
    hooks_before = sorted(os.listdir(os.path.join(ws, ".git", "hooks")))

    out = tmpdir()
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nexport-root %s\n" % (roots, out))
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = sandbox(s, ws, "create")

    # The hostile changes, published as a sessionless command would.
    ran = os.path.join(mark, "RAN")
    hook = "#!/bin/sh\ntouch %s\n" % ran
    cmd = ("cd /workspace &&"
           " printf '[core]\\n\\tfsmonitor = \"touch %s; false\"\\n'"
           " >> .git/config &&"
           " printf '%s' > .git/hooks/post-checkout &&"
           " chmod 755 .git/hooks/post-checkout &&"
           " printf '* filter=evil\\n' > .git/info/attributes &&"
           " mkdir -p sub evil.git/hooks evil.git/objects evil.git/refs &&"
           " printf 'gitdir: ../evil.git\\n' > sub/.git &&"
           " printf 'ref: refs/heads/main\\n' > evil.git/HEAD &&"
           " printf '[core]\\n\\tfsmonitor = \"touch %s; false\"\\n'"
           " > evil.git/config &&"
           " printf '%s' > evil.git/hooks/pre-commit &&"
           " printf '[core]\\n\\tfsmonitor = \"touch %s; false\"\\n'"
           " >> .git/modules/libs/foo/config &&"
           " printf '%s' > .git/modules/libs/foo/hooks/post-checkout &&"
           " chmod 755 .git/modules/libs/foo/hooks/post-checkout &&"
           " mkdir -p src/objects src/refs &&"
           " echo 'ref: refs/heads/main' > src/HEAD &&"
           " printf '[core]\\n\\tfsmonitor = \"touch %s; false\"\\n'"
           " > src/config &&"
           " echo agent > src/a.txt && echo '*.c diff' > .gitattributes &&"
           " echo s > suid && chmod 4755 suid &&"
           " mkdir sgid && chmod 2755 sgid && echo x > sgid/f"
           % (ran, hook.replace("\n", "\\n"), ran,
              hook.replace("\n", "\\n"), ran, hook.replace("\n", "\\n"),
              ran))
    run(s, sid, cmd, "the hostile changes")

    # ---- dir, back into the workspace it came from ----
    r = ok_result(s.call("export_changes", {
        "sandbox_id": sid, "dest": ws}, timeout=120), "dir export")
    left = r.get("left_out", [])
    for p in (".git/config", ".git/hooks", ".git/info/attributes",
              "sub/.git", "evil.git/config", "evil.git/hooks",
              ".git/modules/libs/foo/config",
              ".git/modules/libs/foo/hooks", "src/config"):
        check_in(p, left, "left_out names %s" % p)
    check_eq(r.get("left_out_count"), len(left), "left_out_count")
    check_eq(sha(os.path.join(ws, ".git", "config")), config_before,
             ".git/config untouched")
    check_eq(sorted(os.listdir(os.path.join(ws, ".git", "hooks"))),
             hooks_before, ".git/hooks untouched")
    check(not os.path.exists(os.path.join(ws, "sub", ".git")),
          "no .git file naming the sandbox's git directory")
    check(not os.path.exists(os.path.join(ws, "evil.git", "config")),
          "no config in a bare repository's directory")
    with open(os.path.join(ws, "src", "a.txt")) as f:
        check_eq(f.read(), "agent\n", "the work tree is exported")
    check(os.path.exists(os.path.join(ws, ".gitattributes")),
          "work-tree .gitattributes exported")
    for args, where in ((["status"], ws), (["checkout", "-q", "other"], ws),
                        (["checkout", "-q", "main"], ws),
                        (["status"], os.path.join(ws, "sub")),
                        (["status"], os.path.join(ws, "src")),
                        (["status"], os.path.join(ws, "libs", "foo")),
                        (["checkout", "-q", "-b", "zz"],
                         os.path.join(ws, "libs", "foo"))):
        git(where, *args, home=home)
    check(not os.path.exists(ran), "git on the host ran nothing the"
          " sandbox wrote")

    # ---- a sandbox that deletes .git and makes its top a bare repository
    copy2 = os.path.join(out, "copy2")
    shutil.copytree(ws, copy2, symlinks=True)
    git_before = sorted(os.listdir(os.path.join(copy2, ".git")))
    sid2 = sandbox(s, ws, "create 2")
    run(s, sid2, "cd /workspace && rm -rf .git && mkdir objects refs &&"
        " echo 'ref: refs/heads/main' > HEAD &&"
        " printf '[core]\\n\\tbare = false\\n\\tworktree = .\\n"
        "\\tfsmonitor = \"touch %s; false\"\\n' > config" % ran,
        "the bare top")
    r = ok_result(s.call("export_changes", {
        "sandbox_id": sid2, "dest": copy2}, timeout=120), "export 2")
    check_in(".git", r.get("left_out", []), "the deletion of .git is left"
             " out")
    check_in("config", r.get("left_out", []), "a bare top's config too")
    check_eq(sorted(os.listdir(os.path.join(copy2, ".git"))), git_before,
             "the host's .git stays whole")
    check(not os.path.exists(os.path.join(copy2, "config")),
          "no config at the top")
    check(not os.path.exists(os.path.join(copy2, "HEAD")),
          "no HEAD outside a git directory")
    git(copy2, "status", home=home)
    check(not os.path.exists(ran), "git status in the copy ran nothing")

    # ---- config first, HEAD and a broken .git in a second export ----
    copy3 = os.path.join(out, "copy3")
    shutil.copytree(ws, copy3, symlinks=True)
    objects_before = sorted(os.listdir(os.path.join(copy3, ".git",
                                                    "objects")))
    sid3 = sandbox(s, ws, "create 3")
    run(s, sid3, "cd /workspace && printf '[core]\\n\\tbare = false\\n"
        "\\tworktree = .\\n\\tfsmonitor = \"touch %s; false\"\\n'"
        " > config && mkdir -p hooks && printf '%s' >"
        " hooks/post-checkout && chmod 755 hooks/post-checkout"
        % (ran, hook.replace("\n", "\\n")), "config first")
    ok_result(s.call("export_changes", {"sandbox_id": sid3, "dest": copy3},
                     timeout=120), "export 3a")
    run(s, sid3, "cd /workspace && echo 'ref: refs/heads/main' > HEAD &&"
        " mkdir -p objects refs && rm -rf .git/HEAD .git/objects"
        " .git/refs .git/index", "HEAD after")
    r = ok_result(s.call("export_changes", {"sandbox_id": sid3,
                                            "dest": copy3}, timeout=120),
                  "export 3b")
    for p in ("HEAD", ".git/HEAD", ".git/objects", ".git/refs"):
        check_in(p, r.get("left_out", []), "left out: %s" % p)
    check(not os.path.exists(os.path.join(copy3, "HEAD")),
          "no HEAD at the top")
    check_eq(sorted(os.listdir(os.path.join(copy3, ".git", "objects"))),
             objects_before, "the host's history stays")
    for args in (["status"], ["log", "-1"], ["diff"]):
        git(copy3, *args, home=home)
    check(not os.path.exists(ran), "git in the twice-exported copy ran"
          " nothing")

    # ---- archives: none of it, and no set-id bits ----
    for fmt, name in (("tar", "x.tar"), ("tar-zst", "x.tar.zst")):
        dest = os.path.join(out, name)
        r = ok_result(s.call("export_changes", {
            "sandbox_id": sid, "dest": dest, "format": fmt}, timeout=120),
            fmt)
        check_in(".git/config", r.get("left_out", []), fmt + " left_out")
        names = subprocess.run(["bsdtar", "-tf", dest], check=True,
                               capture_output=True,
                               text=True).stdout.split("\n")
        for n in (".git/config", ".git/hooks/post-checkout", "sub/.git",
                  "evil.git/config", ".git/info/attributes"):
            check(n not in names, "%s not in the %s" % (n, fmt))
        check_in("src/a.txt", names, "work tree in the " + fmt)
        ext = tmpdir()
        subprocess.run(["tar", "-xpf", dest, "-C", ext], check=True)
        check_eq(os.lstat(os.path.join(ext, "suid")).st_mode & 0o7777,
                 0o755, fmt + ": no set-uid bit once unpacked as root")
        check_eq(os.lstat(os.path.join(ext, "sgid")).st_mode & 0o7777,
                 0o755, fmt + ": no set-gid bit on the directory")

    # ---- asked for: include_git_config, keep_setid ----
    dest = os.path.join(out, "keep.tar")
    r = ok_result(s.call("export_changes", {
        "sandbox_id": sid, "dest": dest, "format": "tar",
        "keep_setid": True, "include_git_config": True}, timeout=120),
        "tar, kept")
    check("left_out" not in r, "nothing left out when asked: %r" % r)
    ext = tmpdir()
    subprocess.run(["tar", "-xpf", dest, "-C", ext], check=True)
    check_eq(os.lstat(os.path.join(ext, "suid")).st_mode & 0o7777, 0o4755,
             "keep_setid keeps the set-uid bit")
    check(os.path.exists(os.path.join(ext, ".git", "hooks",
                                      "post-checkout")),
          "include_git_config brings the hook")
    copy = os.path.join(out, "copy")
    shutil.copytree(ws, copy, symlinks=True)
    r = ok_result(s.call("export_changes", {
        "sandbox_id": sid, "dest": copy, "include_git_config": True},
        timeout=120), "dir, with git's configuration")
    with open(os.path.join(copy, ".git", "config")) as f:
        check_in("fsmonitor", f.read(), "the sandbox's .git/config, asked")
    check_eq(os.lstat(os.path.join(copy, "suid")).st_mode & 0o7777, 0o755,
             "a dir export never keeps set-id bits")


main(test)
