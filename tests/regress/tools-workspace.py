#!/usr/bin/env python3
# list_workspace_directories: the roots, one level of subdirectories
# sorted by name, the 500 cap with truncated, symlinks that leave every
# root hidden, canonical paths, parent, and the refusals.

import os

from lib import (Server, check, check_eq, check_in, err_result, main,
                 ok_result, tmpdir)


def listing(s, path=None):
    args = {} if path is None else {"path": path}
    return ok_result(s.call("list_workspace_directories", args),
                     "list %s" % path)


def test():
    base = tmpdir()
    root = os.path.join(base, "roots", "main")
    other = os.path.join(base, "roots", "second")
    outside = os.path.join(base, "outside")
    for p in (root, other, outside):
        os.makedirs(p)
    for name in ["zeta", "alpha", "Beta", "mid dle", "ünï"]:
        os.makedirs(os.path.join(root, name))
    os.makedirs(os.path.join(root, "alpha", "deep", "deeper"))
    open(os.path.join(root, "a-file"), "w").close()
    os.mkfifo(os.path.join(root, "a-fifo"))
    os.symlink(outside, os.path.join(root, "escape"))
    os.symlink(os.path.join(other), os.path.join(root, "to-second"))
    os.symlink("alpha/deep", os.path.join(root, "shortcut"))
    os.symlink("/nonexistent", os.path.join(root, "dangling"))
    big = os.path.join(root, "big")
    for i in range(600):
        os.makedirs(os.path.join(big, "d%04d" % i))
    # A root given through a symlink and with a trailing slash.
    os.symlink(other, os.path.join(base, "second-link"))

    s = Server(config="workspace-root %s\nworkspace-root %s/\n"
               "workspace-root %s/missing-root\n"
               % (root, os.path.join(base, "second-link"), base))
    s.initialize()

    r = listing(s)
    check_eq((r["path"], r["parent"], r["truncated"]), (None, None, False),
             "roots listing header")
    check_eq(r["directories"], [{"name": "main", "path": root},
                                {"name": "second", "path": other}],
             "roots in configuration order, canonical, missing one left out")

    r = listing(s, root)
    check_eq(r["path"], root, "path")
    check_eq(r["parent"], None, "parent of a root")
    check_eq(r["truncated"], False, "truncated")
    names = [d["name"] for d in r["directories"]]
    check_eq(names, ["Beta", "alpha", "big", "mid dle", "shortcut",
                     "to-second", "zeta", "ünï"],
             "sorted by name; files, fifos, dangling and escaping links"
             " left out")
    paths = {d["name"]: d["path"] for d in r["directories"]}
    check_eq(paths["shortcut"], os.path.join(root, "alpha", "deep"),
             "a link inside the roots is shown by its real path")
    check_eq(paths["to-second"], other, "a link into another root")
    check_eq(paths["mid dle"], os.path.join(root, "mid dle"), "blanks")

    r = listing(s, os.path.join(root, "alpha", "deep"))
    check_eq(r["parent"], os.path.join(root, "alpha"), "parent")
    check_eq([d["name"] for d in r["directories"]], ["deeper"], "deeper")
    # The path is canonicalized: dots, slashes and links resolve.
    r = listing(s, root + "//alpha/./deep/../deep/")
    check_eq(r["path"], os.path.join(root, "alpha", "deep"), "canonical")
    r = listing(s, os.path.join(root, "shortcut"))
    check_eq(r["path"], os.path.join(root, "alpha", "deep"),
             "through a link")

    r = listing(s, big)
    check_eq(len(r["directories"]), 500, "capped at 500")
    check_eq(r["truncated"], True, "truncated past 500")
    check_eq(r["directories"][0]["name"], "d0000", "first by name")
    check_eq(r["directories"][-1]["name"], "d0499", "500th by name")

    # Refusals.
    for path, kind, text in [
            ("relative/path", "invalid_request",
             "path must be an absolute path"),
            (outside, "invalid_request", "outside the workspace roots"),
            (os.path.join(root, "escape"), "invalid_request",
             "outside the workspace roots"),
            (os.path.join(root, ".."), "invalid_request",
             "outside the workspace roots"),
            ("/etc", "invalid_request", "outside the workspace roots"),
            ("/etc/nonexistent-dir", "invalid_request", "outside"),
            (os.path.join(root, "no-such"), "not_found",
             "no such directory"),
            (os.path.join(root, "a-file"), "invalid_request",
             "is not a directory"),
            ("/" + "x" * 5000, "invalid_request", "longer than")]:
        e = err_result(s.call("list_workspace_directories", {"path": path}),
                       kind, "path %s" % path[:60])
        check_in(text, e["message"], "message for %s" % path[:60])
        check_eq(e["details"], {"path": path}, "details name the path")
    e = err_result(s.call("list_workspace_directories", {"path": ""}),
                   "invalid_request", "empty path")

    # No roots configured.
    s2 = Server()
    s2.initialize()
    e = err_result(s2.call("list_workspace_directories"),
                   "operation_failed", "no roots")
    check_in("no workspace roots are configured", e["message"], "message")
    e = err_result(s2.call("list_workspace_directories", {"path": "/tmp"}),
                   "operation_failed", "no roots, with a path")


main(test)
