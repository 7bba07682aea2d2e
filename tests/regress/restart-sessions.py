#!/usr/bin/env python3
# A restart loses no work, against the real Docker Engine:
# - a server is killed (-9) with 5 managed workspace sessions holding
#   unpublished files (one with a file of 1 MiB, one with a deletion of
#   a published file, one in a new directory) and 2 commands running in
#   two of them;
# - a new server on the same state directory takes each session up again
#   under its id at the first call on the sandbox: its files read in the
#   session as they were, it runs commands, and publishing each of the 5
#   puts every change in the published view, nothing lost; a sixth is
#   destroyed and its changes never appear;
# - the 2 commands that were running read back as ended, status "lost",
#   their output as far as it got (300 lines in one), by tail or window;
#   write_command_stdin to one says it has finished;
# - an automatic session cut short (its command was running) is not
#   taken up: its change is not published;
# - a squash before the first call keeps the layers the orphans stand
#   on (they count as live);
# - a clean stop (SIGTERM) leaves a managed session to take up too;
# - a second process on the state directory does not take up a session
#   the first has (each is claimed); one that cannot be built again (its
#   upper directory gone) is not found, and destroy_workspace_session
#   removes it.

import json
import os
import signal

from lib import (IMAGE, Server, check, check_eq, cleanup, err_result, main,
                 ok_result, remove_our_containers, tmpdir)


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "base.txt"), "w") as f:
        f.write("base\n")
    with open(os.path.join(ws, "gone.txt"), "w") as f:
        f.write("to be deleted\n")
    state = os.path.join(top, "state")
    conf = "workspace-root %s\n" % top
    s = Server(sets=("management", "runtime"), state=state, config=conf)
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]

    def call(srv, tool, args, what, timeout=60):
        return ok_result(srv.call(tool, dict(args, sandbox_id=sid),
                                  timeout=timeout), what)

    cmds = [
        "echo one > one.txt",
        "head -c 1048576 /dev/urandom > big.bin",
        "rm gone.txt",
        "mkdir -p deep/er && echo four > deep/er/four.txt",
        "echo five > five.txt && echo more >> base.txt",
    ]
    sessions = []
    for c in cmds:
        w = call(s, "create_workspace_session", {}, "session")[
            "workspace_session_id"]
        call(s, "exec_command", {"workspace_session_id": w, "cmd": c}, c)
        sessions.append(w)
    big = call(s, "exec_command", {"workspace_session_id": sessions[1],
                                   "cmd": "md5sum big.bin"},
               "md5")["output"].split()[0]
    doomed = call(s, "create_workspace_session", {}, "sixth")[
        "workspace_session_id"]
    call(s, "exec_command", {"workspace_session_id": doomed,
                             "cmd": "echo never > never.txt"}, "never")
    running = []
    for i, w in enumerate(sessions[:2]):
        r = call(s, "exec_command", {
            "workspace_session_id": w,
            "cmd": "seq 1 %d; echo started-%d; sleep 300" % (300 * i, i),
            "yield_time_ms": 1000}, "sleep")
        check_eq(r["status"], "running", "a command left running")
        running.append((r["command_session_id"], w, 300 * i + 1))
    r = call(s, "exec_command", {"cmd": "echo cut > cut.txt; sleep 300",
                                 "yield_time_ms": 300}, "automatic")
    check_eq(r["status"], "running", "an automatic session's command")
    broken = call(s, "create_workspace_session", {}, "broken")[
        "workspace_session_id"]
    before = json.load(open(os.path.join(state, "sandboxes", sid, "stack",
                                         "manifest.json")))

    s.proc.kill()
    s.proc.wait()
    os.rename(os.path.join(state, "sandboxes", sid, "sessions", broken,
                           "upper"),
              os.path.join(state, "sandboxes", sid, "sessions", broken,
                           "gone"))

    # One more left behind, whose upper directory is then taken away:
    # it cannot be built again, and it can still be destroyed.
    s2 = Server(sets=("management", "runtime"), state=state, config=conf)
    s2.initialize()
    # A squash first (nothing to fold yet, but the orphans' leases are
    # read): it must not count them as gone.
    r = call(s2, "squash_layerstacks", {}, "squash")
    swept = {x["session_id"] for x in r["swept_sessions"]}
    check(set(sessions) <= swept, "the orphans are leases of the stack:"
          " %r" % r)

    # The commands that were running: ended, "lost", their output as far
    # as it got readable.
    for i, (cid, w, lines) in enumerate(running):
        r = call(s2, "read_command_lines", {"command_session_id": cid,
                                            "tail": 1}, "a lost command")
        check_eq((r["status"], r["exit_code"], r["workspace_session_id"],
                  r["output"], r["total_lines"]),
                 ("lost", None, w, "started-%d\n" % i, lines),
                 "a command cut short by the restart")
        check(0 <= r["command_total_time_seconds"] <= 120 and
              r["command_total_time_seconds"] <= r["wall_time_seconds"],
              "its run time, from its start to its last output: %r" % r)
        if lines > 1:
            r = call(s2, "read_command_lines", {"command_session_id": cid,
                                                "start_offset": 100,
                                                "limit": 2}, "a window")
            check_eq(r["output"], "101\n102\n", "any window of it")
        e = err_result(s2.call("write_command_stdin", {
            "sandbox_id": sid, "command_session_id": cid, "stdin": "x"}),
            "operation_failed", "stdin to a lost command")
        check_eq(e["details"]["status"], "lost", "its status")
    r = call(s2, "file_read", {"workspace_session_id": sessions[0],
                               "path": "one.txt"}, "read one")
    check_eq(r["content"], "one\n", "the first session's file, as it was")
    r = call(s2, "exec_command", {"workspace_session_id": sessions[1],
                                  "cmd": "md5sum big.bin"}, "md5 again")
    check_eq(r["output"].split()[0], big, "1 MiB, byte for byte")
    r = call(s2, "exec_command", {"workspace_session_id": sessions[2],
                                  "cmd": "ls gone.txt 2>&1 || echo absent"},
             "deletion")
    check(r["output"].endswith("absent\n"), "the deletion is kept: %r"
          % r["output"])
    r = call(s2, "destroy_workspace_session",
             {"workspace_session_id": doomed}, "destroy the sixth")
    # A second process on the state directory: the sessions the first
    # took up are its own, never built twice over one upper directory.
    s2b = Server(sets=("runtime",), state=state, config=conf)
    s2b.initialize()
    e = err_result(s2b.call("file_read", {
        "sandbox_id": sid, "workspace_session_id": sessions[0],
        "path": "one.txt"}), "not_found", "owned by the other process")
    s2b.kill()
    # The one that could not be built again: destroyed, its directory
    # gone.
    e = err_result(s2.call("file_read", {
        "sandbox_id": sid, "workspace_session_id": broken,
        "path": "x"}), "not_found", "a session not taken up")
    r = call(s2, "destroy_workspace_session",
             {"workspace_session_id": broken}, "destroy the broken one")
    check_eq((r["destroyed"], r["discarded_bytes"]), (True, None),
             "destroyed unmeasured")
    check(not os.path.exists(os.path.join(state, "sandboxes", sid,
                                          "sessions", broken)),
          "its directory is gone")
    for w in sessions:
        r = call(s2, "publish_workspace_session",
                 {"workspace_session_id": w}, "publish %s" % w)
        check(r["publish"]["layer_id"].startswith("L"), "published: %r"
              % r)

    # Everything in the published view; nothing of the sixth or of the
    # automatic session cut short.
    r = call(s2, "exec_command", {
        "cmd": "cat one.txt deep/er/four.txt five.txt base.txt;"
               " md5sum big.bin; ls gone.txt never.txt cut.txt 2>&1 |"
               " sed 's/.*: //'"}, "the published view")
    lines = r["output"].splitlines()
    check_eq(lines[:5], ["one", "four", "five", "base", "more"],
             "every session's files")
    check_eq(lines[5].split()[0], big, "the big file")
    check_eq(lines[6:], ["No such file or directory"] * 3,
             "no deleted, destroyed or cut-short file")
    after = json.load(open(os.path.join(state, "sandboxes", sid, "stack",
                                        "manifest.json")))
    check_eq(len(after["layers"]) - len(before["layers"]), 5,
             "five publishes: %r" % after)
    check("taking up 7 workspace sessions" in s2.log(),
          "the log names the orphans taken up")

    # A clean stop (SIGTERM) leaves a managed session the same way.
    w = call(s2, "create_workspace_session", {}, "session before stop")[
        "workspace_session_id"]
    call(s2, "file_write", {"workspace_session_id": w, "path": "kept.txt",
                            "content": "kept\n"}, "write before stop")
    s2.proc.send_signal(signal.SIGTERM)
    check_eq(s2.proc.wait(30), 0, "a clean stop")
    s3 = Server(sets=("management", "runtime"), state=state, config=conf)
    s3.initialize()
    r = call(s3, "file_read", {"workspace_session_id": w,
                               "path": "kept.txt"}, "read after stop")
    check_eq(r["content"], "kept\n", "the session's file after a clean stop")


main(test)
