#!/usr/bin/env python3
# Spare sessions: automatic sessions are served by sessions built ahead
# that no user process has entered; a session a command ran in never
# serves another (a process elsewhere may hold a descriptor into it).
#
# A spare is seen on disk as a session directory that no call has been
# told about; the next automatic session takes one of them, by id.

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
    sessions = os.path.join(state, "sandboxes", sid, "sessions")

    def on_disk():
        return set(os.listdir(sessions)) if os.path.isdir(sessions) \
            else set()

    used = set()

    def spares(want, what):
        """Wait until at least want spares are there, and the sessions
        commands ran in are gone."""
        end = time.time() + 10
        while time.time() < end:
            d = on_disk()
            if len(d) >= want and not d & used:
                return d
            time.sleep(0.02)
        check(False, "%s: %d spares expected and no used session, on"
              " disk: %r (used: %r)" % (what, want, on_disk(), used))

    def run(cmd, server=s, **kw):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 20000}
        args.update(kw)
        r = ok_result(server.call("exec_command", args, timeout=60),
                      cmd[:40])
        used.add(r["workspace_session_id"])
        return r

    # A sandbox whose commands all write: after each publish a spare on
    # the stack it left is built at once, and the next command takes it
    # (a spare of the stack before, gone stale, must not leave the
    # sandbox wanting none), so an agent writing file after file never
    # waits for a build.
    r = run("echo 0 > w0.txt")
    check(r["publish"] and r["publish"]["changed_paths"] == ["w0.txt"],
          "published: %r" % r["publish"])
    for i in range(1, 6):
        ready = spares(1, "after a publish of its own (%d)" % i)
        r = run("cat w%d.txt; echo %d > w%d.txt" % (i - 1, i, i))
        check_in(r["workspace_session_id"], ready,
                 "the session after a publish (%d) was a spare" % i)
        check_eq(r["output"], "%d\n" % (i - 1),
                 "the next session sees the publish")
        check(r["publish"] and
              r["publish"]["changed_paths"] == ["w%d.txt" % i],
              "published: %r" % r["publish"])

    # An automatic session has no freezer group (only a managed one is
    # ever frozen): its builder is not moved between control groups.
    r0 = ok_result(s.call("exec_command", {"sandbox_id": sid,
                                           "cmd": "sleep 30",
                                           "yield_time_ms": 100}),
                   "a command left running")
    check_eq(r0["status"], "running", "the sleep runs")
    used.add(r0["workspace_session_id"])
    groups = [d for top in ("/sys/fs/cgroup/freezer", "/sys/fs/cgroup")
              if os.path.isdir(top)
              for d, _, _ in os.walk(top)
              if os.path.basename(d) == "smcp-" + r0["workspace_session_id"]]
    check_eq(groups, [], "an automatic session's freezer groups")
    ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": r0["command_session_id"],
        "stdin": "\u0003", "yield_time_ms": 10000}), "Ctrl-C")

    # The first automatic session is built on demand; from then on one is
    # built ahead, and the next takes it.
    r1 = run("echo first")
    ready = spares(1, "after the first")
    r2 = run("echo $$ > /dev/null; ls -A /tmp; echo secret > /tmp/s;"
             " chmod 700 /workspace; (sleep 1000 >/dev/null 2>&1 &)"
             " ; echo ok", timeout_ms=2000)
    check_in(r2["workspace_session_id"], ready,
             "the second session was a spare")
    # Nothing of a used session reaches the next one: /tmp, /workspace's
    # attributes, processes.
    ready = spares(1, "after the second")
    r3 = run("ls -A /tmp; stat -c %a /workspace; ps -o args")
    check_in(r3["workspace_session_id"], ready, "the third was a spare")
    check("secret" not in r3["output"] and " s\n" not in r3["output"],
          "the last session's /tmp is not seen: %r" % r3["output"])
    check_in("755", r3["output"], "/workspace as published")
    check("sleep 1000" not in r3["output"],
          "no process of the last session: %r" % r3["output"])
    spares(1, "after the third")

    # A publish of its own: spares on the old stack go; the next session
    # is on the new one.
    r = run("echo b > b.txt")
    check(r["publish"] and r["publish"]["changed_paths"] == ["b.txt"],
          "published: %r" % r["publish"])
    # Another process publishes: the spares are stale and are not used.
    spares(1, "before another's publish")
    other = Server(sets=("management", "runtime"),
                   config="workspace-root %s\n" % roots, state=state)
    other.initialize()
    ok_result(other.call("file_write", {"sandbox_id": sid,
                                        "path": "c.txt",
                                        "content": "c\n"}), "file_write")
    r = run("cat c.txt")
    check_eq(r["output"], "c\n", "it sees the other's write")
    other.close_stdin()
    check_eq(other.wait_exit(), 0, "the other process ends")

    # With limit session-pool 0 nothing is built ahead.
    s.close_stdin()
    check_eq(s.wait_exit(), 0, "the first process ends")
    s2 = Server(sets=("management", "runtime"),
                config="workspace-root %s\nlimit session-pool 0\n" % roots,
                state=state)
    s2.initialize()
    for i in range(3):
        r = run("echo $$", server=s2)
        check_eq(r["output"].strip(), "2", "no pool: new session %d" % i)
    time.sleep(0.3)
    check_eq(on_disk(), set(), "no spare without a pool")
    s2.close_stdin()
    check_eq(s2.wait_exit(), 0, "the pool-less process ends")

    # Spares count against the sandbox's processes: with profile pids 40
    # at most 10 are kept, however many sessions were needed at once.
    s3 = Server(sets=("management", "runtime"),
                config="workspace-root %s\nprofile pids 40\n" % roots)
    cleanup(lambda: remove_our_containers(s3.state))
    s3.initialize()
    small = ok_result(s3.call("create_sandbox", {"image": IMAGE,
                                                 "workspace_root": ws}),
                      "create with pids 40")["id"]
    small_sessions = os.path.join(s3.state, "sandboxes", small, "sessions")
    # The sessions commands ran in: on disk until their init is reaped
    # (later on a loaded machine), and not spares.
    ran = set()

    def twelve(n):
        ids = []
        for i in range(12):
            rid = 9000 + n * 100 + i
            s3.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                     "params": {"name": "exec_command", "arguments": {
                         "sandbox_id": small, "cmd": "echo $$",
                         "yield_time_ms": 20000}}})
            ids.append(rid)
        while ids:
            m = s3.recv(timeout=60)
            check(m["id"] in ids, "an answer of the round: %r" % m)
            ids.remove(m["id"])
            r = m["result"]
            check(not r["isError"], "exec: %r" % r)
            check_eq(r["structuredContent"]["output"], "2\n",
                     "every session is new to its command")
            ran.add(r["structuredContent"]["workspace_session_id"])
    most = 0
    for n in range(3):
        twelve(n)
        for _ in range(20):
            most = max(most, len(set(os.listdir(small_sessions)) - ran))
            time.sleep(0.02)
    check(0 < most <= 10, "spares built, at most ten: %d" % most)
    ok_result(s3.call("destroy_sandbox", {"sandbox_id": small}), "destroy")

    # Destroying the sandbox ends the spares with it.
    s4 = Server(sets=("management", "runtime"),
                config="workspace-root %s\n" % roots, state=state)
    s4.initialize()
    run("true", server=s4)
    spares(1, "before the destroy")
    ok_result(s4.call("destroy_sandbox", {"sandbox_id": sid}), "destroy")
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
