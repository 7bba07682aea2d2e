#!/usr/bin/env python3
# A directory that both sides created merges entry by entry:
# - a managed session writes dm/mine.txt while three sessionless writes
#   publish dm/f0.txt..dm/f2.txt: the session publishes, with and
#   without a squash before it;
# - 2 and then 10 managed sessions, begun together, each add their own
#   files under one new tree three levels deep (t/a/b/c/) and publish at
#   once: every one lands;
# - a directory the session made, removed and made again merges too;
# - every file is there afterwards with its bytes and its owner in
#   file_blame;
# - still conflicts, with their reasons: a file both sides created with
#   other bytes; a directory where the other side made a file or a
#   symlink of that name; a directory the other side deleted while the
#   session wrote inside it.

import os

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, main,
                 ok_result, remove_our_containers, tmpdir)


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(os.path.join(ws, "old"))
    with open(os.path.join(ws, "old", "keep.txt"), "w") as f:
        f.write("base\n")
    state = os.path.join(top, "state")
    s = Server(sets=("management", "runtime"), state=state,
               config="workspace-root %s\n" % top)
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws},
                           timeout=120), "create")["id"]

    def call(tool, what, **args):
        args["sandbox_id"] = sid
        return ok_result(s.call(tool, args, timeout=120), what)

    def session():
        return call("create_workspace_session",
                    "session")["workspace_session_id"]

    def run(cmd, ws_id=None):
        args = {"cmd": cmd, "yield_time_ms": 60000}
        if ws_id is not None:
            args["workspace_session_id"] = ws_id
        r = call("exec_command", "exec %r" % cmd[:40], **args)
        check_eq(r["exit_code"], 0, "exit of %r: %r" % (cmd, r["output"]))
        return r

    def write(path, content):
        call("file_write", "write " + path, path=path, content=content)

    def publish_many(ids):
        rids = []
        for w in ids:
            s._next_id += 1
            rids.append(s._next_id)
            s.send({"jsonrpc": "2.0", "id": s._next_id,
                    "method": "tools/call", "params": {
                        "name": "publish_workspace_session", "arguments": {
                            "sandbox_id": sid, "workspace_session_id": w}}})
        out = []
        for rid, w in zip(rids, ids):
            r = s.wait(rid, 120)
            check("result" in r, "publish answered %r" % r)
            out.append(r["result"])
        return out

    def rejected(w, reason, path):
        r = s.call("publish_workspace_session", {
            "sandbox_id": sid, "workspace_session_id": w}, timeout=120)
        check(r.get("isError") is True, "publish of %s refused: %r" %
              (path, r))
        err = r["structuredContent"]["error"]
        check_eq(err["details"].get("publish_reject_class"),
                 "source_conflict", "reject class for " + path)
        text = repr(err)
        check_in(reason, text, "the reason for " + path)
        check_in(path, text, "the path named")
        call("destroy_workspace_session", "discard", workspace_session_id=w)

    def read(path):
        return call("file_read", "read " + path, path=path)["content"]

    def owner(path):
        r = call("file_blame", "blame " + path, path=path)
        owners = {x["owner"] for x in r["ranges"]}
        check_eq(len(owners), 1, "one owner of %s: %r" % (path, owners))
        return owners.pop()

    # The reproduction, without and then with a squash before the
    # publish.
    for name, squash in (("dm", False), ("dq", True)):
        w = session()
        run("mkdir %s && echo mine > %s/mine.txt" % (name, name), w)
        for i in range(3):
            write("%s/f%d.txt" % (name, i), "f%d\n" % i)
        if squash:
            call("squash_layerstacks", "squash")
        r = call("publish_workspace_session", "publish " + name,
                 workspace_session_id=w)
        check(r["publish"] is not None, "%s: the session published" % name)
        check_eq(read(name + "/mine.txt"), "mine\n", name + ": its file")
        for i in range(3):
            check_eq(read("%s/f%d.txt" % (name, i)), "f%d\n" % i,
                     "%s: the others' files" % name)
            check(owner("%s/f%d.txt" % (name, i)) != owner(name +
                  "/mine.txt"), "%s: owners apart" % name)
        check_eq(owner(name + "/mine.txt"), "workspace_session:" + w,
                 name + ": its owner")

    # 2, then 10 sessions at once under one new tree three levels deep.
    for n, tree in ((2, "t2"), (10, "t10")):
        ids = [session() for _ in range(n)]
        for k, w in enumerate(ids):
            run("mkdir -p %s/a/b/c && echo s%d > %s/a/b/c/s%d.txt && echo"
                " top%d > %s/a/top%d.txt" % (tree, k, tree, k, k, tree, k),
                w)
        for k, r in enumerate(publish_many(ids)):
            check(r.get("isError") is False, "%s: session %d published: %r"
                  % (tree, k, r))
        for k, w in enumerate(ids):
            check_eq(read("%s/a/b/c/s%d.txt" % (tree, k)), "s%d\n" % k,
                     "%s: file %d" % (tree, k))
            check_eq(read("%s/a/top%d.txt" % (tree, k)), "top%d\n" % k,
                     "%s: upper file %d" % (tree, k))
            check_eq(owner("%s/a/b/c/s%d.txt" % (tree, k)),
                     "workspace_session:" + w, "%s: owner %d" % (tree, k))
        out = run("ls %s/a/b/c | wc -l" % tree)["output"]
        check_eq(out.strip(), str(n), tree + ": every file, nothing else")

    # Made, removed and made again (opaque in the session's upper).
    w = session()
    run("mkdir dz && echo x > dz/x && rm -r dz && mkdir dz &&"
        " echo mine > dz/mine.txt", w)
    write("dz/other.txt", "other\n")
    call("publish_workspace_session", "publish dz", workspace_session_id=w)
    check_eq(read("dz/other.txt"), "other\n", "dz: the other's file stays")
    check_eq(read("dz/mine.txt"), "mine\n", "dz: the session's lands")

    # Still conflicts.
    w = session()
    run("mkdir -p cf && echo mine > cf/same.txt", w)
    write("cf/same.txt", "theirs\n")
    rejected(w, "changed on both sides", "cf/same.txt")

    w = session()
    run("mkdir -p pf/sub && echo mine > pf/sub/x.txt", w)
    write("pf", "a file\n")
    rejected(w, "a parent directory changed", "pf/sub/x.txt")

    w = session()
    run("mkdir -p ps && echo mine > ps/x.txt", w)
    w2 = session()
    run("ln -s old ps", w2)
    call("publish_workspace_session", "publish the symlink",
         workspace_session_id=w2)
    rejected(w, "a parent directory changed", "ps/x.txt")

    w = session()
    run("echo mine > old/new.txt", w)
    run("rm -r old")
    rejected(w, "a parent directory changed", "old/new.txt")


if __name__ == "__main__":
    main(test)
