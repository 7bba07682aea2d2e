#!/usr/bin/env python3
# create_sandbox, inspect_sandbox and destroy_sandbox refuse bad input with
# a clear error before anything is made: a missing image, workspace roots
# that are relative, missing, a file, outside the roots or escaping them
# through a symlink, counts out of range or of the wrong type, workspaces
# holding fifos or sockets, and ids that are unknown or not ids at all.

import os
import re
import socket

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,
                 err_result, main, our_containers, tmpdir)


def nothing_made(s, what):
    check_eq(our_containers(s.state), {}, what + ": no container")
    sb = os.path.join(s.state, "sandboxes")
    left = [e for e in os.listdir(sb) if not e.startswith(".")]
    check_eq(left, [], what + ": no record")


def test():
    base = tmpdir()
    roots = os.path.join(base, "roots")
    ws = os.path.join(roots, "ok")
    os.makedirs(ws)
    with open(os.path.join(roots, "a-file"), "w") as f:
        f.write("x")
    outside = os.path.join(base, "outside")
    os.makedirs(outside)
    os.symlink(outside, os.path.join(roots, "escape"))
    fifo_ws = os.path.join(roots, "with-fifo")
    os.makedirs(os.path.join(fifo_ws, "d"))
    os.mkfifo(os.path.join(fifo_ws, "d", "pipe"))
    sock_ws = os.path.join(roots, "with-socket")
    os.makedirs(sock_ws)
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(os.path.join(sock_ws, "app.sock"))
    cleanup(srv.close)
    many_ws = os.path.join(roots, "many-fifos")
    os.makedirs(many_ws)
    for i in range(7):
        os.mkfifo(os.path.join(many_ws, "f%d" % i))

    s = Server(config="workspace-root %s\n" % roots)
    s.initialize()

    def create(args, kind, text, what, details=None):
        e = err_result(s.call("create_sandbox", args), kind, what)
        check_in(text, e["message"], what + ": message")
        if details is not None:
            check_eq(e["details"], details, what + ": details")
        nothing_made(s, what)
        return e

    create({"image": "sandbox-mcp/no-such:image", "workspace_root": ws},
           "invalid_request", "does not exist locally", "missing image",
           {"image": "sandbox-mcp/no-such:image"})
    create({"image": "bad image", "workspace_root": ws},
           "invalid_request", "no blanks", "image with a blank")
    create({"image": IMAGE, "workspace_root": "relative/dir"},
           "invalid_request", "workspace_root must be an absolute path",
           "relative root",
           {"workspace_root": "relative/dir"})
    create({"image": IMAGE, "workspace_root": os.path.join(roots, "nope")},
           "not_found", "no such directory", "missing root")
    create({"image": IMAGE, "workspace_root": os.path.join(roots,
                                                          "a-file")},
           "invalid_request", "is not a directory", "a file")
    create({"image": IMAGE, "workspace_root": outside},
           "invalid_request", "outside the workspace roots", "outside")
    create({"image": IMAGE, "workspace_root": os.path.join(roots,
                                                          "escape")},
           "invalid_request", "outside the workspace roots",
           "symlink out of the roots")
    for count, text in [(0, "count must be an integer \u2265 1"),
                        (33, "count must be from 1 to 32"),
                        ("2", "count must be an integer"),
                        (-1, "count must be an integer"),
                        (1.5, "count must be an integer")]:
        create({"image": IMAGE, "workspace_root": ws, "count": count},
               "invalid_request", text, "count %r" % (count,),
               {"argument": "count"})
    create({"image": IMAGE}, "invalid_request",
           "workspace_root is required for create_sandbox",
           "missing workspace_root")
    create({"image": "", "workspace_root": ws}, "invalid_request",
           "image must be non-empty", "empty image")
    e = create({"image": IMAGE, "workspace_root": fifo_ws},
               "invalid_request", "d/pipe", "workspace with a fifo")
    check_in("special files", e["message"], "says why")
    create({"image": IMAGE, "workspace_root": sock_ws},
           "invalid_request", "app.sock", "workspace with a socket")
    e = create({"image": IMAGE, "workspace_root": many_ws},
               "invalid_request", "and 2 more", "seven fifos")
    # (Whole names: the random temporary path may hold "f4" too.)
    check_eq(sum(re.search(r"\bf%d\b" % i, e["message"]) is not None
                 for i in range(7)), 5, "names five of them")

    # Ids.
    for tool in ("inspect_sandbox", "destroy_sandbox"):
        e = err_result(s.call(tool, {"sandbox_id": "sbox-000000000000"}),
                       "not_found", tool + " unknown id")
        check_eq(e["details"], {"sandbox_id": "sbox-000000000000"},
                 "details")
        for bad in ("../../etc", "x" * 300, "SBOX-UPPER", "a/b", ".."):
            e = err_result(s.call(tool, {"sandbox_id": bad}),
                           "invalid_request", "%s id %r" % (tool, bad[:20]))
            check_in("invalid sandbox id", e["message"], "message")
            check(len(e["message"]) < 300, "message stays short")
        e = err_result(s.call(tool, {}), "invalid_request", tool +
                       " without an id")
        check_eq(e["message"], "sandbox_id is required for " + tool,
                 "message")
    check(not os.path.exists(os.path.join(s.state, "..", "etc")),
          "nothing made outside the state directory")
    nothing_made(s, "after the id checks")


main(test)
