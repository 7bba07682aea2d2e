#!/usr/bin/env python3
# A sandbox's helper control groups (cgroup.c) are the machine's, not
# the state directory's: each one the server makes is marked in
# <state>/helper-groups/, and a group left behind is removed at the next
# start when its sandbox is gone, while another sandbox's stays.
#
#   - a publish makes the sandbox's helper groups and their mark;
#   - destroying a sandbox whose group is still busy (a process the test
#     put in it), then kill -9 of the server: the group and its mark are
#     left;
#   - the next start removes that group and its mark, and keeps the
#     group of a sandbox that still exists, which works on as before;
#   - a start on another state directory whose mark names that group
#     (empty, or with inodes that are not the group's) drops the mark
#     and leaves the group.

import os
import signal
import subprocess

from lib import (IMAGE, Server, check, check_eq, cleanup, helper_groups,
                 main, ok_result, remove_our_containers, tmpdir, wait_for,
                 workspace_root)


def test():
    roots, ws = workspace_root()
    conf = "workspace-root %s\n" % roots
    s = Server(sets=("management", "runtime"), config=conf)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    marks = os.path.join(state, "helper-groups")

    def made(srv, what):
        sid = ok_result(srv.call("create_sandbox", {
            "image": IMAGE, "workspace_root": ws}), "create " + what)["id"]
        r = ok_result(srv.call("exec_command", {
            "sandbox_id": sid, "cmd": "echo %s > %s.txt" % (what, what),
            "yield_time_ms": 30000}, timeout=60), "publish in " + what)
        check(r["publish"], "%s published: %r" % (what, r))
        check(helper_groups(sid) != [], "%s has helper groups" % what)
        check(os.path.exists(os.path.join(marks, sid)),
              "%s's groups are marked as ours" % what)
        return sid

    gone = made(s, "gone")
    kept = made(s, "kept")

    # A process the server does not know of keeps the groups busy.
    sleeper = subprocess.Popen(["sleep", "600"])
    cleanup(lambda: sleeper.kill())
    for d in helper_groups(gone):
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write("%d\n" % sleeper.pid)
    ok_result(s.call("destroy_sandbox", {"sandbox_id": gone}), "destroy")
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait()
    sleeper.kill()
    sleeper.wait()
    check(helper_groups(gone) != [], "a busy group outlives the kill")
    check(os.path.exists(os.path.join(marks, gone)), "and so does its mark")

    # The next start: the gone sandbox's group goes, the other's stays.
    s2 = Server(sets=("management", "runtime"), config=conf, state=state)
    s2.initialize()
    wait_for("the gone sandbox's groups removed",
             lambda: helper_groups(gone) == [])
    check(not os.path.exists(os.path.join(marks, gone)),
          "its mark is removed with it")
    check(helper_groups(kept) != [], "the kept sandbox's groups stay")
    check(os.path.exists(os.path.join(marks, kept)), "with their mark")
    # A mark in another state directory naming the kept sandbox's group
    # (made there by hand, or copied from here): that start leaves the
    # group alone and drops the mark.
    s2.kill()		# its forker goes with it: the group is empty
    other = os.path.join(tmpdir(), "state")
    os.makedirs(os.path.join(other, "helper-groups"))
    for forged in ("", open(os.path.join(marks, kept)).read().replace(
            " ", " 1")):
        with open(os.path.join(other, "helper-groups", kept), "w") as f:
            f.write(forged)
        s3 = Server(sets=("management", "runtime"), config=conf,
                    state=other)
        s3.initialize()
        ok_result(s3.call("list_sandboxes", {}), "the other server runs")
        check(not os.path.exists(os.path.join(other, "helper-groups",
                                              kept)),
              "a mark that does not match is dropped (%r)" % forged[:40])
        s3.kill()
        check(helper_groups(kept) != [], "the kept sandbox's groups stay"
              " when another state directory starts")
    s2 = Server(sets=("management", "runtime"), config=conf, state=state)
    s2.initialize()
    r = ok_result(s2.call("exec_command", {
        "sandbox_id": kept, "cmd": "echo again > again.txt",
        "yield_time_ms": 30000}, timeout=60), "publish after the start")
    check(r["publish"], "published after the start: %r" % r)
    ok_result(s2.call("destroy_sandbox", {"sandbox_id": kept}),
              "destroy the kept one")
    wait_for("the kept sandbox's groups removed once it is destroyed",
             lambda: helper_groups(kept) == [])
    check_eq(os.listdir(marks), [], "no mark is left")


main(test)
