#!/usr/bin/env python3
# Background processes of commands on a real sandbox: a command is
# finished when its shell has exited and its output is closed. A process
# left in the background with its output sent elsewhere (redirected, or
# under setsid) does not keep it running: in a managed session it runs on
# (a server answers the session's next command) until the session ends,
# and publish and destroy of the session are not refused for it; an
# automatic session's publish ends it. A background process that keeps
# the output open keeps the command running.

import os
import random
import time

from lib import (IMAGE, Server, check, check_eq, cleanup, err_result,
                 main, ok_result, remove_our_containers, tmpdir)


def host_procs(argv):
    """Pids of the processes, anywhere on this machine, whose command
    line is exactly argv (the sandboxes' processes are visible here)."""
    want = ("\0".join(argv) + "\0").encode()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if f.read() == want:
                    found.append(int(pid))
        except OSError:
            pass
    return found


def gone(argv, what, within=10):
    """Wait for the processes to go (a kill is asynchronous to the
    answer only for a managed session's end)."""
    end = time.time() + within
    while host_procs(argv) and time.time() < end:
        time.sleep(0.05)
    check_eq(host_procs(argv), [], what)


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]
    # Numbers of our own, so that the processes are ours alone.
    n = random.randint(100000, 999999)
    port = random.randint(20000, 40000)

    def run(cmd, what, **kw):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 10000}
        args.update(kw)
        return ok_result(s.call("exec_command", args, timeout=60), what)

    # Automatic sessions: the command ends with its shell; the publish
    # ends what it left running, and publishes what it wrote first.
    sleeper = ["sleep", str(n)]
    r = run("sleep %d >/dev/null 2>&1 & echo started > out.txt;"
            " echo started" % n, "redirected background")
    check_eq((r["status"], r["exit_code"], r["output"]),
             ("ok", 0, "started\n"),
             "a redirected background process does not keep the command"
             " running")
    check_eq(r["publish"]["changed_paths"], ["out.txt"], "published")
    check_eq(host_procs(sleeper), [], "the automatic session's publish"
             " ended the background process")

    setsider = ["sleep", str(n + 1)]
    r = run("setsid sleep %d >/dev/null 2>&1 < /dev/null & echo started"
            % (n + 1), "setsid")
    check_eq((r["status"], r["output"]), ("ok", "started\n"),
             "setsid with its output elsewhere")
    check_eq(host_procs(setsider), [], "the publish ended it too")

    # A background process that keeps the output keeps the command
    # running until it ends.
    r = run("sleep 2 & echo bg", "background holding the output",
            yield_time_ms=500)
    check_eq(r["status"], "running", "the background sleep holds the"
             " output: still running")
    cid = r["command_session_id"]
    r = ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": cid, "stdin": "\u0004",
        "yield_time_ms": 20000}, timeout=60), "wait for the end")
    check_eq(r["status"], "ok", "finished once the sleep ended")
    check(r["command_total_time_seconds"] >= 1.5,
          "not before the background sleep ended: %r"
          % r["command_total_time_seconds"])

    # A managed session: the server started in the background answers
    # the session's next command, publish and destroy go through.
    m = ok_result(s.call("create_workspace_session", {"sandbox_id": sid}),
                  "create session")["workspace_session_id"]
    httpd = ["httpd", "-f", "-p", str(port), "-h", "/tmp/www"]
    r = run("mkdir -p /tmp/www; echo hi > /tmp/www/index.html;"
            " %s >/dev/null 2>&1 & echo started" % " ".join(httpd),
            "server in a managed session", workspace_session_id=m)
    check_eq((r["status"], r["output"]), ("ok", "started\n"),
             "the server does not keep the command running")
    check_eq(len(host_procs(httpd)), 1, "the server runs on")
    r = run("wget -q -O - http://127.0.0.1:%d/" % port, "ask the server",
            workspace_session_id=m)
    check_eq((r["status"], r["output"]), ("ok", "hi\n"),
             "the server answers the session's next command")
    r = run("echo data > kept.txt; nc -l -p %d >/dev/null 2>&1 &"
            " echo listening" % (port + 1), "nc", workspace_session_id=m)
    check_eq(r["status"], "ok", "nc in the background")
    r = ok_result(s.call("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": m}), "publish")
    check_eq(r["publish"]["changed_paths"], ["kept.txt"],
             "the managed session published, not refused")
    check_eq(r["destroyed"], True, "and destroyed")
    gone(httpd, "the session's end ended its server")
    gone(["nc", "-l", "-p", str(port + 1)], "and its nc")

    m = ok_result(s.call("create_workspace_session", {"sandbox_id": sid}),
                  "create session 2")["workspace_session_id"]
    r = run("%s >/dev/null 2>&1 & echo started" % " ".join(httpd),
            "server 2", workspace_session_id=m)
    check_eq(r["status"], "ok", "server 2 started")
    r = ok_result(s.call("destroy_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": m}), "destroy")
    check_eq(r["destroyed"], True, "destroy is not refused")
    gone(httpd, "destroying the session ended its server")
    e = err_result(s.call("exec_command", {
        "sandbox_id": sid, "cmd": "true", "workspace_session_id": m}),
        "not_found", "the session is gone")

    r = run("cat out.txt kept.txt", "the published files")
    check_eq(r["output"], "started\ndata\n", "both publishes are seen")


main(test)
