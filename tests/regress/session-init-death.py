#!/usr/bin/env python3
# An automatic session whose init dies right after it reports its
# command's exit, under AddressSanitizer. The server (the ASan build,
# tests/asan/sandbox-mcp) is stopped while the command's shell exits and
# its init writes the exit; the init is then killed and left unreaped,
# and the server goes on: it meets the output's end, the exit and the
# init's death in one turn of its loop, and reaps the init before it
# acts on the exit. That exit ends the command, which publishes the
# session and ends it from inside the session's own control callback
# (session_ctl_cb -> command_finish -> session_publish -> session_end):
# the session must not be freed under that callback. (The server runs
# with -vv: the test reads from its log when it has taken the command's
# pid.) Each round checks
# that the command answers with its own exit status and that the server
# is alive with no sanitizer report.

import os
import re
import signal
import subprocess
import time

import lib
from lib import (IMAGE, Server, check, check_eq, cleanup, fail, main,
                 ok_result, remove_our_containers, tmpdir)

ROUNDS = 5


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def comm(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children(p):
            out.append(c)
            todo.append(c)
    return out


def until(cond, what, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.01)
    fail("timed out waiting for " + what)


def init_of_sleep(server):
    """The session init (a child of the server) running our sleep."""
    for c in children(server):
        if "session init" not in comm(c):
            continue
        if any(comm(d).startswith("sleep") for d in descendants(c)):
            return c
    return None


def socket_inode(pid, fd):
    link = os.readlink("/proc/%d/fd/%d" % (pid, fd))
    m = re.match(r"socket:\[(\d+)\]", link)
    return m.group(1) if m else None


def peer_queue(inode):
    """Bytes waiting at the other end of a unix socket (ss -x)."""
    out = subprocess.run(["ss", "-x", "-a", "-n"], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        f = line.split()
        # Netid State Recv-Q Send-Q Local Port Peer Port
        if len(f) >= 8 and f[7] == inode:
            return int(f[2])
    return 0


def test():
    lib.BIN = lib.asan_bin()
    d = tmpdir()
    ws = os.path.join(d, "ws")
    os.makedirs(ws)
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "halt_on_error=1:detect_leaks=0"
    env["UBSAN_OPTIONS"] = "halt_on_error=1"
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nlimit session-pool 0\n" % ws,
               env=env, args=("-vv",))
    cleanup(lambda: remove_our_containers(s.state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}, timeout=60),
        "create")["id"]
    server = s.proc.pid

    for rnd in range(ROUNDS):
        r = ok_result(s.call("exec_command", {
            "sandbox_id": sid, "cmd": "sleep 0.3; exit %d" % (3 + rnd),
            "yield_time_ms": 0}), "exec %d" % rnd)
        check_eq(r["status"], "running", "round %d: running" % rnd)
        cmd = r["command_session_id"]
        init = until(lambda: init_of_sleep(server), "the session init")
        ino = socket_inode(init, 3)
        check(ino is not None, "round %d: the init's control socket" % rnd)
        # The server has read the command's pid: what the init writes
        # next is the exit.
        until(lambda: ("command %s runs as pid" % cmd) in s.log(),
              "the command's pid read")

        os.kill(server, signal.SIGSTOP)
        try:
            # The shell exits and the init writes its exit...
            until(lambda: not any(comm(x).startswith("sleep")
                                  for x in descendants(init)),
                  "the command's end")
            until(lambda: peer_queue(ino) > 0, "the init's exit report")
            # ...and the init dies before the server has read it.
            os.kill(init, signal.SIGKILL)
            until(lambda: proc_state(init) == "Z", "the init's death")
        finally:
            os.kill(server, signal.SIGCONT)

        def finished():
            g = ok_result(s.call("read_command_lines", {
                "sandbox_id": sid, "command_session_id": cmd}),
                "round %d: the result" % rnd)
            return g if g["status"] != "running" else None
        got = until(finished, "round %d: the command's end" % rnd)
        check_eq(got["status"], "error", "round %d: status" % rnd)
        check_eq(got["exit_code"], 3 + rnd, "round %d: its own exit" % rnd)
        check(got.get("publish", "absent") is None,
              "round %d: nothing to publish: %r" % (rnd, got))
        check(s.proc.poll() is None, "round %d: the server is alive" % rnd)
        check("Sanitizer" not in s.log(), "round %d: no sanitizer"
              " report:\n%s" % (rnd, s.log()[-3000:]))

    ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}, timeout=60),
              "destroy")
    check("Sanitizer" not in s.log(), "no sanitizer report")


main(test)
