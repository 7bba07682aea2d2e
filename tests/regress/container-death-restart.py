#!/usr/bin/env python3
# The Docker Engine goes away while a command runs in a sandbox. A
# private dockerd (lib.Dockerd) plays the Engine, so the machine's own is
# never disturbed.
#
# 1. The Engine restarts (SIGTERM, as an operator does: it stops the
#    containers on its way out): once it is back the command has ended,
#    no process of the sandbox is left and the record is failed.
# 2. The Engine is killed (SIGKILL) and the container's init dies while
#    no Engine is there to tell: the server keeps answering meanwhile,
#    tries the event stream again with a growing delay, and once the
#    Engine is back it looks at the containers and ends the sandbox the
#    same way.

import os
import re
import signal
import time

from lib import (IMAGE, Dockerd, Server, check, check_eq, check_in, fail,
                 main, ok_result, err_result, tmpdir)

# An outcome follows the stream's return within 2 s; the stream returns
# at its next attempt, at most 2 s after the Engine does.
BOUND = 4.0


def start_time(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in ("Z", "X"):
        return None
    return fields[19]


def cgroup_processes(pid, cid):
    """{pid: start time} of the processes in the cgroups of a container
    whose init is pid."""
    rels = set()
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            rels.add(line.rstrip("\n").split(":", 2)[2])
    out = {}
    for top in os.listdir("/sys/fs/cgroup"):
        for rel in rels:
            path = "/sys/fs/cgroup/%s%s/cgroup.procs" % (top, rel)
            if cid not in path or not os.path.exists(path):
                continue
            with open(path) as f:
                for p in f.read().split():
                    st = start_time(int(p))
                    if st is not None:
                        out[int(p)] = st
    return out


def test():
    d = Dockerd(images=[IMAGE])
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots, docker_host=d.host,
               args=["-v"])
    s.initialize()
    rid = [2000]

    def start(what):
        sid = ok_result(s.call("create_sandbox", {
            "image": IMAGE, "workspace_root": ws}), what)["id"]
        cid = ok_result(s.call("inspect_sandbox", {"sandbox_id": sid}),
                        what)["container_id"]
        wsid = ok_result(s.call("create_workspace_session",
                                {"sandbox_id": sid}),
                         what)["workspace_session_id"]
        ok_result(s.call("exec_command", {
            "sandbox_id": sid, "workspace_session_id": wsid,
            "cmd": "(setsid sleep 1000 </dev/null >/dev/null 2>&1 &);"
                   " echo left", "yield_time_ms": 1000}), what)
        rid[0] += 1
        s.send({"jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
                "params": {"name": "exec_command", "arguments": {
                    "sandbox_id": sid, "cmd": "sleep 1001",
                    "yield_time_ms": 120000}}})
        pid = int(d.docker("inspect", "-f", "{{.State.Pid}}", sid))
        end = time.time() + 20
        while True:
            before = cgroup_processes(pid, cid)
            names = []
            for p in before:
                try:
                    with open("/proc/%d/cmdline" % p, "rb") as f:
                        names.append(f.read().replace(b"\0", b" "))
                except OSError:
                    pass
            if (any(b"sleep 1000" in n for n in names) and
                    any(b"sleep 1001" in n for n in names)):
                break
            if time.time() > end:
                fail("%s: the sleeps never ran: %r" % (what, names))
            time.sleep(0.05)
        return sid, pid, rid[0], before

    def outcome(what, sid, r, before, deadline):
        left = deadline - time.time()
        check(left > 0, what + ": no time left")
        res = ok_result(s.wait(r, timeout=left)["result"], what)
        check_eq((res["status"], res["exit_code"]), ("error", 137),
                 what + ": the command ended as killed")
        check_in("sandbox %s failed: the container" % sid, res["output"],
                 what + ": the reason in its output")
        while time.time() < deadline and any(
                start_time(p) == st for p, st in before.items()):
            time.sleep(0.02)
        check_eq([p for p, st in before.items() if start_time(p) == st],
                 [], what + ": processes of the sandbox left on the host")
        rec = ok_result(s.call("inspect_sandbox", {"sandbox_id": sid}),
                        what)
        check_eq(rec["state"], "failed", what + ": the record")
        check_in("the container", rec["error"], what + ": the reason")
        e = err_result(s.call("exec_command", {"sandbox_id": sid,
                                               "cmd": "true"}),
                       "operation_failed", what + ": exec after")
        check_in("is failed", e["message"], what + ": names the state")

    # 1. A restart.
    sid, pid, r, before = start("restart")
    d.stop()
    d.start()
    outcome("restart", sid, r, before, time.time() + BOUND)

    # 2. The Engine killed, the container dying while it is away.
    sid, pid, r, before = start("away")
    mark = len(s.log())
    d.proc.kill()
    d.proc.wait()
    d.proc = None
    os.kill(pid, signal.SIGKILL)
    t0 = time.time()
    while time.time() - t0 < 4:
        t1 = time.time()
        check_eq(s.request("ping").get("result"), {}, "ping while the"
                 " Engine is away")
        check(time.time() - t1 < 0.5, "ping answered promptly")
        time.sleep(0.1)
    d.start()
    outcome("away", sid, r, before, time.time() + BOUND)

    log = s.log()[mark:]
    delays = [int(x) for x in re.findall(
        r"events at \S+: [^;]*; trying again in (\d+) ms", log)]
    check(len(delays) >= 3, "the stream was tried again: %r" % delays)
    check(len(delays) <= 12, "with a growing delay, not in a loop: %d"
          " attempts" % len(delays))
    check(delays == sorted(delays) and delays[-1] > delays[0] and
          max(delays) <= 2000, "delays grow to 2 s: %r" % delays)
    check_in("following the Docker Engine's events at %s again" % d.sock,
             log, "the stream came back")


main(test)
