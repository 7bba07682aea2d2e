#!/usr/bin/env python3
# Command sessions on a real sandbox: output, statuses and exit codes,
# timeouts, yields and read_command_lines, stdin with Ctrl-C and Ctrl-D,
# automatic sessions publishing their changes as layers before the
# terminal result, and the refusals of bad input.

import os
import time

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,
                 err_result, main, ok_result, remove_our_containers,
                 tmpdir)


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(os.path.join(ws, "src"))
    with open(os.path.join(ws, "src", "a.txt"), "w") as f:
        f.write("one\ntwo\nthree\n")
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]

    def run(cmd, **kw):
        args = {"sandbox_id": sid, "cmd": cmd}
        args.update(kw)
        return ok_result(s.call("exec_command", args, timeout=60),
                         "exec %r" % cmd[:40])

    r = run("echo hello; echo err >&2; cat /workspace/src/a.txt; pwd")
    check_eq(r["status"], "ok", "status")
    check_eq(r["exit_code"], 0, "exit code")
    check_eq(r["output"], "hello\nerr\none\ntwo\nthree\n/workspace\n",
             "output, stdout and stderr in order, cwd /workspace")
    check_eq((r["start_offset"], r["end_offset"], r["total_lines"]),
             (0, 6, 6), "offsets")
    check_eq(r["original_token_count"], 9, "ceil(34 bytes / 4)")
    check(r["command_session_id"].startswith("cmd-"), "command id")
    check(r["workspace_session_id"].startswith("ws-"), "session id")
    check_eq(r["publish"], None, "nothing changed, nothing published")
    check(r["wall_time_seconds"] >= r["command_total_time_seconds"] > 0,
          "times")

    env = run("env | sort")["output"]
    check_in("HOME=/root\n", env, "HOME")
    check_in("LANG=C.UTF-8\n", env, "LANG")
    check_in("TERM=dumb\n", env, "TERM")
    check_in("SANDBOX_ID=%s\n" % sid, env, "SANDBOX_ID")
    check_in("WORKSPACE_SESSION_ID=ws-", env, "WORKSPACE_SESSION_ID")
    check("SANDBOX_MCP" not in env and "SSH_" not in env,
          "nothing of the server's environment")

    # Exit codes and statuses.
    r = run("exit 3")
    check_eq((r["status"], r["exit_code"]), ("error", 3), "exit 3")
    r = run("kill -9 $$")
    check_eq((r["status"], r["exit_code"]), ("error", 137), "signal 9")
    t0 = time.time()
    r = run("echo start; sleep 30", timeout_ms=500, yield_time_ms=20000)
    check_eq((r["status"], r["exit_code"]), ("timed_out", 124), "timeout")
    check_eq(r["output"], "start\n", "output before the timeout")
    check(time.time() - t0 < 5, "ended at the deadline")
    r = run("sleep 100 & echo bg", timeout_ms=800, yield_time_ms=20000)
    check_eq(r["status"], "timed_out", "a background child keeps the"
             " command running until the timeout")

    # An automatic session publishes its changes before the answer.
    r = run("echo new > made.txt; mkdir -p empty/dir; rm src/a.txt")
    pub = r["publish"]
    check(pub is not None and pub["layer_id"].startswith("L000002-"),
          "published as layer L000002: %r" % (pub,))
    check_eq(pub["manifest_version"], 2, "manifest version")
    check_eq(sorted(pub["changed_paths"]),
             ["empty", "empty/dir", "made.txt", "src/a.txt"],
             "changed paths (a deletion and empty directories too)")
    r = run("cat made.txt; ls src; test -d empty/dir && echo dir")
    check_eq(r["output"], "new\ndir\n", "the next session sees it")

    # Yield, read_command_lines, and the cursor.
    r = run("for i in 1 2 3; do echo line$i; sleep 0.3; done",
            yield_time_ms=100)
    check_eq(r["status"], "running", "still running after the yield")
    cid = r["command_session_id"]
    time.sleep(1.5)
    r = ok_result(s.call("read_command_lines", {"sandbox_id": sid,
                                                "command_session_id": cid}),
                  "read")
    check_eq(r["output"], "line1\nline2\nline3\n", "all lines")
    check_eq(r["status"], "ok", "finished by now")
    r = ok_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid, "start_offset": 1,
        "limit": 1}), "read one")
    check_eq((r["output"], r["start_offset"], r["end_offset"]),
             ("line2\n", 1, 2), "window of one line")
    r = ok_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid, "start_offset": 99}),
        "past the end")
    check_eq((r["output"], r["end_offset"]), ("", 99), "past the end")
    r = ok_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid, "limit": 0}),
        "limit 0")
    check_eq(r["end_offset"] - r["start_offset"], 1, "limit 0 reads 1")
    r = ok_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid, "limit": 5000}),
        "limit 5000")
    check_eq(r["end_offset"], 3, "limit 5000 is clamped, reads all 3")
    e = err_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid, "start_offset": -1}),
        "invalid_request", "negative offset")

    # Output the window cuts says so, and the tail can be asked for.
    check_eq((r["truncated"], r["lines_omitted_before"],
              r["lines_omitted_after"]), (False, 0, 0), "a whole window")
    r = run("seq 1 500")
    check_eq((r["truncated"], r["lines_omitted_before"],
              r["lines_omitted_after"], r["end_offset"],
              r["total_lines"]), (True, 0, 300, 200, 500),
             "200 of 500 lines shown: 300 left out at the end")
    cid = r["command_session_id"]
    r = ok_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid, "tail": 3}),
        "the tail")
    check_eq((r["output"], r["start_offset"], r["end_offset"],
              r["truncated"]), ("498\n499\n500\n", 497, 500, False),
             "the last three lines")
    r = ok_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid, "start_offset": 10,
        "limit": 5}), "a middle window")
    check_eq((r["output"].split(), r["truncated"],
              r["lines_omitted_after"]),
             (["11", "12", "13", "14", "15"], True, 485), "a middle window")
    r = run("head -c 200000 /dev/zero | tr '\\0' x; echo")
    check_eq((r["truncated"], r["end_offset"], r["lines_omitted_after"]),
             (True, 1, 0), "one line cut at the byte bound")
    err_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid, "tail": 0}),
        "invalid_request", "tail 0")

    # stdin.
    r = run("read x; echo got $x; read y; echo and $y", yield_time_ms=200)
    cid = r["command_session_id"]
    check_eq(r["status"], "running", "waits for stdin")
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "hi\n",
        "yield_time_ms": 500}), "write")
    check_eq(r["output"], "got hi\n", "the first line answered")
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "there\n",
        "yield_time_ms": 5000}), "write 2")
    check_eq((r["status"], r["output"]), ("ok", "and there\n"), "done")
    e = err_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "x"}),
        "operation_failed", "stdin to a finished command")
    check_in("has already finished", e["message"], "message")
    check_eq(e["details"]["status"], "ok", "details carry the status")
    # Ctrl-C.
    r = run("sleep 100", yield_time_ms=200)
    cid = r["command_session_id"]
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "\u0003",
        "yield_time_ms": 5000}), "ctrl-c")
    check_eq((r["status"], r["exit_code"]), ("cancelled", 130), "Ctrl-C")
    # Ctrl-D.
    r = run("cat; echo eof", yield_time_ms=200)
    cid = r["command_session_id"]
    ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "abc\n",
        "yield_time_ms": 300}), "data")
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "\u0004",
        "yield_time_ms": 5000}), "ctrl-d")
    check_eq((r["status"], r["output"]), ("ok", "eof\n"), "Ctrl-D ends cat")
    # An empty stdin writes nothing and waits: the way to wait on a
    # running command.
    r = run("sleep 0.5; echo a; sleep 60", yield_time_ms=100,
            timeout_ms=60000)
    cid = r["command_session_id"]
    check_eq((r["status"], r["output"]), ("running", ""), "not yet")
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "",
        "yield_time_ms": 5000}, timeout=60), "empty stdin")
    check_eq((r["status"], r["output"]), ("running", "a\n"),
             "waited the yield out, then answered with the output")
    check(r["wall_time_seconds"] >= 5, "the whole yield: %r"
          % r["wall_time_seconds"])
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "\u0003",
        "yield_time_ms": 5000}), "ctrl-c the sleep")
    check_eq(r["status"], "cancelled", "Ctrl-C ends it")
    r = run("read x; echo got $x; sleep 1; echo done", yield_time_ms=100)
    cid = r["command_session_id"]
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "",
        "yield_time_ms": 300}), "empty stdin to a reader")
    check_eq((r["status"], r["output"]), ("running", ""),
             "nothing was written: the read still waits")
    ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "x\n",
        "yield_time_ms": 0}), "the line")
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "",
        "yield_time_ms": 20000}, timeout=60), "wait for the end")
    check_eq((r["status"], r["output"]), ("ok", "got x\ndone\n"),
             "the wait ends when the command does")
    check(r["wall_time_seconds"] < 15, "answered at the end, not at the"
          " end of the yield: %r" % r["wall_time_seconds"])
    e = err_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": ""}),
        "operation_failed", "empty stdin to a finished command")
    check_in("has already finished", e["message"], "message")

    # Bad input.
    for cmd in ("", "   \n\t"):
        e = err_result(s.call("exec_command", {"sandbox_id": sid,
                                               "cmd": cmd}),
                       "invalid_request", "empty command %r" % cmd)
    e = err_result(s.call("exec_command", {
        "sandbox_id": sid, "cmd": "true",
        "workspace_session_id": "ws-000000000000"}), "not_found",
        "unknown session")
    check_eq(e["details"], {"workspace_session_id": "ws-000000000000"},
             "details")
    for tool in ("read_command_lines", "write_command_stdin"):
        args = {"sandbox_id": sid, "command_session_id": "cmd-0"}
        if tool == "write_command_stdin":
            args["stdin"] = "x"
        e = err_result(s.call(tool, args), "not_found", tool)
        check_eq(e["details"], {"command_session_id": "cmd-0"}, "details")
    e = err_result(s.call("exec_command", {"sandbox_id": "sbox-000000000000",
                                           "cmd": "true"}),
                   "not_found", "unknown sandbox")
    # A yield over the cap is clamped, not refused.
    r = run("echo quick", yield_time_ms=10 ** 12)
    check_eq(r["output"], "quick\n", "yield_time_ms clamped")
    # Invalid UTF-8 output stays valid JSON.
    r = run("printf 'a\\377b\\n'")
    check_eq(r["output"], "a\ufffdb\n", "invalid UTF-8 replaced")


main(test)
