#!/usr/bin/env python3
# Line-granular merges of a shared text file, against the real Docker
# Engine:
# - five managed sessions, begun together, each edit one of lines 1-5 of
#   a 10-line file (neighbours) and publish at once: all five land, and
#   the file holds every edit;
# - five automatic sessions (exec_command without a session) each
#   append to their own line of a list at once: all land;
# - an insertion right after a line another session edited lands too;
# - two sessions that change the same line differently: the second is
#   rejected whole, source_conflict, naming the file and the line.

import os

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, main,
                 ok_result, remove_our_containers, tmpdir)

TEN = "".join("line %d\n" % i for i in range(1, 11))


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "shared.txt"), "w") as f:
        f.write(TEN)
    with open(os.path.join(ws, "list.txt"), "w") as f:
        f.write("".join("item %d:\n" % i for i in range(1, 6)))
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

    def send_all(calls):
        rids = []
        for name, args in calls:
            args = dict(args, sandbox_id=sid)
            s._next_id += 1
            rids.append(s._next_id)
            s.send({"jsonrpc": "2.0", "id": s._next_id,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": args}})
        return [s.wait(rid, 120)["result"] for rid in rids]

    def read(path):
        return call("file_read", "read " + path, path=path)["content"]

    # Five neighbours, managed sessions.
    ids = [call("create_workspace_session", "session")[
        "workspace_session_id"] for _ in range(5)]
    for i, w in enumerate(ids, 1):
        r = call("exec_command", "edit line %d" % i, workspace_session_id=w,
                 cmd="sed -i '%ds/.*/edited by %d/' /workspace/shared.txt"
                 % (i, i), yield_time_ms=60000)
        check_eq(r["exit_code"], 0, "sed %d: %r" % (i, r["output"]))
    answers = send_all([("publish_workspace_session",
                         {"workspace_session_id": w}) for w in ids])
    for i, a in enumerate(answers, 1):
        check(not a.get("isError"), "the edit of line %d lands: %r"
              % (i, a))
    want = "".join("edited by %d\n" % i for i in range(1, 6)) + \
        "".join("line %d\n" % i for i in range(6, 11))
    check_eq(read("shared.txt"), want, "every neighbour's edit is in")

    # Five automatic sessions, each its own line of a list, at once.
    answers = send_all([("exec_command", {
        "cmd": "sed -i 's/^item %d:$/item %d: done/' /workspace/list.txt"
        % (i, i), "yield_time_ms": 60000}) for i in range(1, 6)])
    for i, a in enumerate(answers, 1):
        check(not a.get("isError") and
              a["structuredContent"]["exit_code"] == 0,
              "item %d's command: %r" % (i, a))
        check(a["structuredContent"].get("publish") is not None,
              "item %d's edit is published: %r" % (i, a["structuredContent"]))
    check_eq(read("list.txt"), "".join("item %d: done\n" % i
                                       for i in range(1, 6)),
             "every item's edit is in")

    # An insertion right after a line the other side edited.
    a, b = [call("create_workspace_session", "session")[
        "workspace_session_id"] for _ in range(2)]
    call("exec_command", "edit 7", workspace_session_id=a,
         cmd="sed -i '7s/.*/seven/' /workspace/shared.txt")
    call("exec_command", "insert after 7", workspace_session_id=b,
         cmd="sed -i '7a inserted' /workspace/shared.txt")
    for w in (a, b):
        call("publish_workspace_session", "publish", workspace_session_id=w)
    check_in("seven\ninserted\nline 8\n", read("shared.txt"),
             "the edit and the insertion after it")

    # The same line, differently: a conflict naming the line.
    a, b = [call("create_workspace_session", "session")[
        "workspace_session_id"] for _ in range(2)]
    call("exec_command", "edit 9 (a)", workspace_session_id=a,
         cmd="sed -i '9s/.*/nine by a/' /workspace/shared.txt")
    call("exec_command", "edit 9 (b)", workspace_session_id=b,
         cmd="sed -i '9s/.*/nine by b/' /workspace/shared.txt")
    call("publish_workspace_session", "publish a", workspace_session_id=a)
    r = s.call("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": b}, timeout=120)
    check(r.get("isError") is True, "b is refused: %r" % r)
    err = r["structuredContent"]["error"]
    check_eq(err["details"].get("publish_reject_class"), "source_conflict",
             "the reject class")
    text = repr(err)
    check_in("shared.txt", text, "the file is named")
    check_in("line 9 of the base", text, "the line is named: %s" % text)
    check_in("nine by a\n", read("shared.txt"), "a's edit stands")


main(test)
