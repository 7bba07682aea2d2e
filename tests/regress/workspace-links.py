#!/usr/bin/env python3
# Links put in a workspace's way, as a tenant can put them there (an
# export_changes into its own directory replaces a directory by a link
# there), against the real Docker Engine:
# - create_sandbox judges the workspace's path once; a directory inside
#   it that becomes a link to a tree outside every root while the base
#   copy reads the workspace (here: while it hashes a 1 GiB file that
#   sorts first) leads the copy nowhere: the create fails naming the
#   link, and no sandbox holds a byte of the tree outside;
# - an export root of tenant ta written through a link to the shared
#   workspace root, and not made yet, is ta's before anyone makes it:
#   tb's export into the shared root leaves that name alone, so tb cannot
#   plant files in what becomes ta's root;
# - odd trees: 1,990 nested directories copy, a fifo named in invalid
#   UTF-8 is refused in valid JSON, a file that grows during the copy is
#   refused rather than copied past the size the room was judged on.

import json
import os
import time

from lib import (IMAGE, check, check_eq, check_in, cleanup, http_json,
                 http_session, keygen, main, ok_result, readers_of,
                 remove_our_containers, Server, tmpdir)

SECRET = "outside every root\n"


def swap_during_copy(top):
    roots = os.path.join(top, "roots")
    ws = os.path.join(roots, "ws")
    outside = os.path.join(top, "outside")
    os.makedirs(os.path.join(ws, "zzz"))
    os.makedirs(outside)
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write(SECRET)
    with open(os.path.join(ws, "zzz", "secret.txt"), "w") as f:
        f.write("the workspace's own\n")
    big = os.path.join(ws, "a-big")
    with open(big, "wb") as f:
        f.truncate(1 << 30)         # hashed first, for a second or so
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nprofile disk 64M\n"
               "limit disk-reserve 16M\n" % roots)
    cleanup(lambda: remove_our_containers(s.state))
    s.initialize()

    s._next_id += 1
    rid = s._next_id
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "create_sandbox",
                       "arguments": {"image": IMAGE,
                                     "workspace_root": ws}}})
    end = time.time() + 60
    while not readers_of(big) and time.time() < end:
        time.sleep(0.005)
    check(readers_of(big), "the base copy reads the big file")
    # What a tenant's export does to a directory of its own: a link in
    # its place, here to a tree outside every root.
    os.rename(os.path.join(ws, "zzz"), os.path.join(top, "zzz.old"))
    os.symlink(outside, os.path.join(ws, "zzz"))
    r = s.wait(rid, 300)["result"]
    if not r.get("isError"):
        sid = r["structuredContent"]["id"]
        out = ok_result(s.call("exec_command", {
            "sandbox_id": sid, "cmd": "cat /workspace/zzz/secret.txt"}),
            "cat")["output"]
        check(SECRET not in out, "the sandbox holds the tree outside: %r"
              % out)
    else:
        err = r["structuredContent"]["error"]
        check_in("symbolic link", err["message"], "the refusal names the"
                 " link: %r" % err)
    base = os.path.join(s.state, "base-cache")
    for dirpath, dirs, files in os.walk(base):
        for name in files:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                continue
            with open(p, "rb") as f:
                head = f.read(64)
            check(SECRET.encode() not in head, "a base holds the tree"
                  " outside: %s" % p)
    s.kill()


def root_behind_link(top):
    shared = os.path.join(top, "shared")
    link = os.path.join(top, "shared-link")
    os.makedirs(os.path.join(shared, "proj"))
    os.symlink(shared, link)
    ta_exp = os.path.join(link, "ta-new")      # not made yet
    key_a, line_a = keygen("ta", "management", "runtime")
    key_b, line_b = keygen("tb", "management", "runtime")
    conf = ("workspace-root %s\nexport-root %s tenants ta\n%s\n%s\n"
            "profile disk 64M\nlimit disk-reserve 16M\n"
            % (shared, ta_exp, line_a, line_b))
    s = Server(sets=("management", "runtime"), config=conf,
               listen="127.0.0.1:0")
    cleanup(lambda: remove_our_containers(s.state))
    s.initialize()
    conn, hdr = http_session(s.port, key=key_b)
    rid = [10]

    def call(tool, args):
        rid[0] += 1
        st, h, body = conn.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
            "params": {"name": tool, "arguments": args}}, hdr)
        check_eq(st, 200, "%s status" % tool)
        return http_json(body)["result"]

    sb = ok_result(call("create_sandbox", {"image": IMAGE,
                                           "workspace_root": shared}),
                   "tb creates from the shared root")["id"]
    ok_result(call("exec_command", {
        "sandbox_id": sb, "cmd": "mkdir -p /workspace/ta-new &&"
        " echo planted > /workspace/ta-new/hook && echo mine >"
        " /workspace/proj/mine.txt"}), "tb writes")
    ok_result(call("export_changes", {"sandbox_id": sb, "dest": shared}),
              "tb exports into the shared root")
    with open(os.path.join(shared, "proj", "mine.txt")) as f:
        check_eq(f.read(), "mine\n", "tb's own change is exported")
    check(not os.path.exists(os.path.join(shared, "ta-new")),
          "tb made ta's export root (through the link it is written"
          " behind): %r" % os.listdir(shared))
    s.kill()


def odd_trees(top):
    """Trees a tenant can export into its own directory: 1,990 nested
    directories (the copy once ran out of stack), a fifo whose name is
    not UTF-8 (the refusal names it, and stays JSON), and a file that
    grows while the copy reads another (refused, not copied past the
    size the room was judged on)."""
    roots = os.path.join(top, "roots")
    deep = os.path.join(roots, "deep")
    os.makedirs(deep)
    d = deep
    for _ in range(1990):
        os.mkdir(os.path.join(d, "q"))
        d = os.path.join(d, "q")
    with open(os.path.join(d, "leaf"), "w") as f:
        f.write("deep leaf\n")
    names = os.path.join(roots, "names")
    os.makedirs(names)
    os.mkfifo(os.path.join(names.encode(), b"f\xff\nx\"\\u0000"))
    grow = os.path.join(roots, "grow")
    os.makedirs(grow)
    big = os.path.join(grow, "a-big")
    with open(big, "wb") as f:
        f.truncate(1 << 30)         # hashed first, for a second or so
    with open(os.path.join(grow, "z.txt"), "w") as f:
        f.write("small\n")
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nprofile disk 64M\n"
               "limit disk-reserve 16M\n" % roots)
    cleanup(lambda: remove_our_containers(s.state))
    s.initialize()

    r = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": deep}, timeout=300), "deep")
    out = ok_result(s.call("exec_command", {
        "sandbox_id": r["id"], "cmd": "cat " + "/".join(["q"] * 1990) +
        "/leaf"}), "cat the leaf")["output"]
    check_eq(out, "deep leaf\n", "the deepest file is copied")

    r = s.call("create_sandbox", {"image": IMAGE, "workspace_root": names})
    err = r["structuredContent"]["error"]
    check_eq(err["kind"], "invalid_request", "a fifo is refused")
    check_in("f?", err["message"], "named, scrubbed to UTF-8: %r" % err)

    s._next_id += 1
    rid = s._next_id
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "create_sandbox",
                       "arguments": {"image": IMAGE,
                                     "workspace_root": grow}}})
    end = time.time() + 60
    while not readers_of(big) and time.time() < end:
        time.sleep(0.005)
    check(readers_of(big), "the base copy reads the big file")
    with open(os.path.join(grow, "z.txt"), "ab") as f:
        f.truncate(2 << 30)         # what an export could put there
    r = s.wait(rid, 300)["result"]
    check(r.get("isError"), "a file that grew is not copied: %r" % r)
    check_in("grew past its 6 bytes", r["structuredContent"]["error"][
        "message"], "the refusal says so")
    s.kill()


def test():
    top = tmpdir()
    swap_during_copy(os.path.join(top, "a"))
    root_behind_link(os.path.join(top, "b"))
    odd_trees(os.path.join(top, "c"))


main(test)
