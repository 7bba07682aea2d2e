#!/usr/bin/env python3
# Hostile and heavy commands: namespace and mount escapes refused, the
# host's processes and the state directory out of sight, a fork bomb and
# a memory bomb held by the sandbox's limits while the server and other
# sandboxes go on, 200 MiB of output kept within the transcript cap with
# the server's memory flat, a line that never ends, 10 MiB of stdin, and
# a wait ended early by notifications/cancelled.

import os
import time

from lib import (IMAGE, check, check_eq, check_in, cleanup, docker, err_result,
                 main, ok_result, remove_our_containers, rss_kib, Server,
                 tmpdir)


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n"
               "profile cpus 1 memory-high 48M memory-max 64M pids 64\n"
               "limit transcript-max 16M\n" % roots)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]
    other = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                                "workspace_root": ws}),
                      "create another")["id"]

    def run(cmd, box=sid, **kw):
        args = {"sandbox_id": box, "cmd": cmd, "yield_time_ms": 60000}
        args.update(kw)
        return ok_result(s.call("exec_command", args, timeout=90),
                         "exec %r" % cmd[:40])

    # Escapes.
    r = run("mount -t tmpfs none /mnt 2>&1; echo rc=$?")
    check_in("rc=", r["output"], "mount ran")
    check("rc=0" not in r["output"], "mount refused: %r" % r["output"])
    r = run("unshare -m true 2>&1; echo rc=$?")
    check("rc=0" not in r["output"], "unshare refused: %r" % r["output"])
    r = run("nsenter -t 1 -m true 2>&1; echo rc=$?")
    check("rc=0" not in r["output"], "nsenter refused: %r" % r["output"])
    r = run("cat /proc/1/environ 2>&1 | tr '\\0' '\\n' | grep -c = ;"
            " cat /proc/1/cmdline | tr '\\0' ' '")
    check("PATH=" not in r["output"] and "SANDBOX_MCP" not in r["output"],
          "no host environment: %r" % r["output"])
    check_in("session init", r["output"], "pid 1 is the session's init")
    r = run("ls -d %s 2>&1 || echo hidden" % state)
    check_in("hidden", r["output"], "the state directory is not visible")
    r = run("ps -o pid,args 2>/dev/null")
    lines = r["output"].splitlines()[1:]
    check(lines[0].split()[:2] == ["1", "sandbox-mcp:"], "pid 1 is the"
          " session's init: %r" % lines)
    check(len(lines) <= 3 and "docker-init" not in r["output"] and
          "sleep 3600" not in r["output"], "only the session's processes:"
          " %r" % lines)

    # The session's /proc hides what the container's hides: /proc/sys
    # stays read-only (core_pattern would run a program on the host), and
    # every mount Docker put under /proc is there on the session's own.
    r = run("(cat /proc/sys/kernel/core_pattern >"
            " /proc/sys/kernel/core_pattern) 2>&1; echo rc=$?")
    check_in("rc=", r["output"], "the write ran")
    check("rc=0" not in r["output"] and "Read-only" in r["output"],
          "/proc/sys is read-only: %r" % r["output"])
    cid = ok_result(s.call("inspect_sandbox", {"sandbox_id": sid}),
                    "inspect")["container_id"]
    probe = ("for p in $(awk '$2 ~ \"^/proc/\" {print $2}' /proc/mounts |"
             " sort -u); do echo $p $(stat -f -c %T $p 2>&1)"
             " $(touch $p 2>/dev/null && echo rw || echo ro); done")
    want = docker("exec", cid, "sh", "-c", probe)
    check(want.count("/proc/") >= 4 and "/proc/sys proc ro" in want,
          "the container masks /proc: %r" % want)
    check_eq(run(probe)["output"].strip(), want,
             "the session's /proc masks")

    # Fork bomb: held by the pids limit, ended at the timeout.
    t0 = time.time()
    s.send({"jsonrpc": "2.0", "id": 700, "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {
                "sandbox_id": sid, "cmd": ":(){ :|:& };:",
                "timeout_ms": 3000, "yield_time_ms": 60000}}})
    time.sleep(1)
    t1 = time.time()
    check_eq(s.request("ping").get("result"), {}, "the server answers")
    check(time.time() - t1 < 0.5, "promptly")
    r = run("echo fine", box=other)
    check_eq(r["output"], "fine\n", "another sandbox works meanwhile")
    r = s.wait(700, timeout=60)["result"]["structuredContent"]
    check_in(r["status"], ("timed_out", "error"), "the bomb ended: %r"
             % r["status"])
    check(time.time() - t0 < 30, "within bounds")
    r = run("echo after")
    check_eq(r["output"], "after\n", "the sandbox recovers")

    # Memory bomb: killed by the memory limit.
    r = run("awk 'BEGIN { s = \"xxxxxxxxxxxxxxxx\"; while (1) s = s s }'",
            timeout_ms=20000)
    check_in(r["status"], ("error", "timed_out"), "memory bomb: %r"
             % r["status"])
    r = run("echo still")
    check_eq(r["output"], "still\n", "the sandbox goes on")

    # 200 MiB of output: capped transcript, flat memory, a live server.
    before = rss_kib(s.proc.pid)
    r = run("head -c 209715200 /dev/zero | tr '\\0' 'a' | fold -w 100;"
            " echo; echo END")
    check_eq(r["status"], "ok", "finished")
    check(r.get("dropped_lines", 0) > 0, "old lines dropped: %r"
          % r.get("dropped_lines"))
    check_eq(r["total_lines"], 209715200 // 100 + 1, "every line counted")
    grown = rss_kib(s.proc.pid) - before
    check(grown < 24 * 1024, "server memory grew by %d KiB" % grown)
    cid = r["command_session_id"]
    r = ok_result(s.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid,
        "start_offset": r["total_lines"] - 1}), "the last line")
    check_eq(r["output"], "END\n", "the end is kept")
    usage = 0
    import glob
    tdir = glob.glob(os.path.join(state, "sandboxes", sid, "commands", "*",
                                  cid))
    check_eq(len(tdir), 1, "the transcript's directory")
    for dp, dn, fn in os.walk(tdir[0]):
        usage += sum(os.path.getsize(os.path.join(dp, f)) for f in fn)
    check(usage <= 16 * 1024 * 1024 + 4 * 1024 * 1024,
          "transcript on disk within the cap: %d" % usage)

    # A line that never ends, for 10 s.
    r = run("yes | tr -d '\\n'", timeout_ms=10000)
    check_eq(r["status"], "timed_out", "timed out")
    check(len(r["output"].encode()) <= 64 * 1024, "the window is bounded")
    check(rss_kib(s.proc.pid) - before < 24 * 1024, "memory still flat")

    # 10 MiB of stdin: taken by a reader, refused by a sleeper.
    big = "x" * (10 * 1024 * 1024 - 1) + "\n"
    r = run("wc -c", yield_time_ms=100)
    cid = r["command_session_id"]
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": big,
        "yield_time_ms": 100}, timeout=60), "10 MiB to wc")
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "\u0004",
        "yield_time_ms": 10000}), "EOF")
    check_eq(r["output"].strip(), str(len(big)), "every byte arrived")
    r = run("sleep 30", yield_time_ms=100)
    cid = r["command_session_id"]
    t0 = time.time()
    e = err_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": big},
        timeout=60), "operation_failed", "a command that does not read")
    check_in("not reading its stdin", e["message"], "message")
    check(1.5 < time.time() - t0 < 5, "after about 2 s")
    s.call("write_command_stdin", {"sandbox_id": sid,
                                   "command_session_id": cid,
                                   "stdin": "\u0003"})

    # notifications/cancelled ends a wait; the command goes on.
    s.send({"jsonrpc": "2.0", "id": 800, "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {
                "sandbox_id": sid, "cmd": "sleep 3; echo late",
                "yield_time_ms": 600000000}}})
    time.sleep(0.5)
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 800}})
    s.no_message(wait=1)
    check_eq(s.request("ping").get("result"), {}, "serving")


main(test)
