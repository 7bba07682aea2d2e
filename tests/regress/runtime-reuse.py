#!/usr/bin/env python3
# Clean automatic sessions kept to serve again: a session whose command
# left nothing behind serves the next automatic session under a new id,
# and one that left anything (a file in /tmp, /workspace's attributes
# changed, a file made and removed, a publish of its own or another
# process's) never does.  A reused session is told by its shell's pid:
# the first process of a new PID namespace after its init is pid 2.

import os
import time

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, main,
                 ok_result, remove_our_containers, tmpdir)


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]

    def run(cmd, server=s, **kw):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 20000}
        args.update(kw)
        return ok_result(server.call("exec_command", args, timeout=60),
                         cmd[:40])

    def shell_pid(cmd="true"):
        r = run("echo $$; " + cmd)
        return int(r["output"].split()[0]), r

    # A clean session serves again, under a new id.
    pid, r1 = shell_pid()
    check_eq(pid, 2, "the first session is new")
    pid, r2 = shell_pid()
    check(pid > 2, "the second reuses the first: shell pid %d" % pid)
    check(r2["workspace_session_id"] != r1["workspace_session_id"],
          "a reused session has a new id: %r" % r2["workspace_session_id"])
    check_eq(r2["publish"], None, "nothing published")
    leases = os.listdir(os.path.join(state, "sandboxes", sid, "sessions"))
    check_eq(leases, [r2["workspace_session_id"]], "its directory renamed")
    with open(os.path.join(state, "sandboxes", sid, "sessions",
                           leases[0], "lease.json")) as f:
        check_in('"%s"' % r2["workspace_session_id"], f.read(),
                 "its lease rewritten")

    # A file left in /tmp: that session goes; the next is new and sees
    # no /tmp file.
    shell_pid("echo secret > /tmp/s")
    pid, r = shell_pid("ls -A /tmp")
    check_eq(pid, 2, "after a /tmp file: a new session")
    check_eq(r["output"].split()[1:], [], "an empty /tmp")

    # A process left running is killed with the command's end; the
    # session it leaves serves again with no process of the old one.
    r = run("sleep 1000 >/dev/null 2>&1 & echo started", timeout_ms=1000)
    check_eq(r["status"], "timed_out", "the background sleep timed out")
    pid, r = shell_pid("ps -o args")
    check("sleep 1000" not in r["output"], "no process of the last"
          " session: %r" % r["output"])

    # /workspace's mode changed: that session goes; the next sees 755.
    shell_pid("chmod 700 /workspace")
    pid, r = shell_pid("stat -c %a /workspace")
    check_eq(pid, 2, "after chmod: a new session")
    check_eq(r["output"].split()[1], "755", "/workspace as published")

    # A file made and removed again leaves the upper directory empty but
    # changed: that session goes too.
    shell_pid("touch /workspace/t && rm /workspace/t")
    pid, r = shell_pid()
    check_eq(pid, 2, "after a file made and removed: a new session")

    # A publish of its own: the next session is new, on the new stack.
    shell_pid()
    r = run("echo b > b.txt")
    check(r["publish"] and r["publish"]["changed_paths"] == ["b.txt"],
          "published: %r" % r["publish"])
    pid, r = shell_pid("cat b.txt")
    check_eq(pid, 2, "after a publish: a new session")
    check_eq(r["output"].split()[1], "b", "it sees the publish")

    # Another process publishes: the kept session is stale and goes.
    shell_pid()
    other = Server(sets=("management", "runtime"),
                   config="workspace-root %s\n" % roots, state=state)
    other.initialize()
    ok_result(other.call("file_write", {"sandbox_id": sid,
                                        "path": "c.txt",
                                        "content": "c\n"}), "file_write")
    pid, r = shell_pid("cat c.txt")
    check_eq(pid, 2, "after another process's publish: a new session")
    check_eq(r["output"].split()[1], "c", "it sees the other's write")
    other.close_stdin()
    check_eq(other.wait_exit(), 0, "the other process ends")

    # With limit session-pool 0 nothing is kept.
    s2 = Server(sets=("management", "runtime"),
                config="workspace-root %s\nlimit session-pool 0\n" % roots,
                state=state)
    s2.initialize()
    for i in range(2):
        r = ok_result(s2.call("exec_command", {
            "sandbox_id": sid, "cmd": "echo $$",
            "yield_time_ms": 20000}), "exec without a pool")
        check_eq(r["output"].strip(), "2", "no pool: new session %d" % i)
    s2.close_stdin()
    check_eq(s2.wait_exit(), 0, "the pool-less process ends")

    # Kept sessions count against the sandbox's processes: with profile
    # pids 40 at most 10 are kept.  Twelve at once, twice: the second
    # twelve find exactly ten kept sessions.  (40 leaves room for twelve
    # inits and shells, the zygote and its builders, the container's own
    # two processes and inits of the first round still ending.)
    s3 = Server(sets=("management", "runtime"),
                config="workspace-root %s\nprofile pids 40\n" % roots)
    cleanup(lambda: remove_our_containers(s3.state))
    s3.initialize()
    small = ok_result(s3.call("create_sandbox", {"image": IMAGE,
                                                 "workspace_root": ws}),
                      "create with pids 40")["id"]

    def twelve(n):
        ids = []
        for i in range(12):
            rid = 9000 + n * 100 + i
            s3.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                     "params": {"name": "exec_command", "arguments": {
                         "sandbox_id": small, "cmd": "echo $$",
                         "yield_time_ms": 20000}}})
            ids.append(rid)
        pids = []
        while ids:
            m = s3.recv(timeout=60)
            check(m["id"] in ids, "an answer of the round: %r" % m)
            ids.remove(m["id"])
            r = m["result"]
            check(not r["isError"], "exec: %r" % r)
            pids.append(int(r["structuredContent"]["output"]))
        return sorted(pids)
    check_eq(twelve(0), [2] * 12, "the first twelve are new")
    pids = twelve(1)
    check_eq(len([p for p in pids if p > 2]), 10, "ten kept, reused: %r"
             % pids)
    ok_result(s3.call("destroy_sandbox", {"sandbox_id": small}), "destroy")

    # Destroying the sandbox ends the kept sessions with it.
    shell_pid()
    ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}), "destroy")
    check(not os.path.exists(os.path.join(state, "sandboxes",
                                          sid + ".json")),
          "the sandbox's record is gone")
    # Its disk and directory go right after, in the trash's child.
    end = time.time() + 20
    while (os.path.exists(os.path.join(state, "sandboxes", sid)) and
           time.time() < end):
        time.sleep(0.1)
    check(not os.path.exists(os.path.join(state, "sandboxes", sid)),
          "the sandbox's state is gone")


if __name__ == "__main__":
    main(test)
