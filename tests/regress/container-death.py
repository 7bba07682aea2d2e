#!/usr/bin/env python3
# A sandbox's container stopped, killed or removed outside sandbox-mcp
# (docker stop, docker kill, docker rm -f) while commands run in it:
# within 2 s every command has ended (exit code 137, the reason in its
# output), no process of the sandbox is left on the host (a background
# process left behind in a managed session included), the record is
# failed with the reason, and later calls say so. Three processes share
# the state directory: each ends its own commands, and exactly one makes
# the record failed. destroy_sandbox still ends in stopped: the events
# its own stop causes never make the record failed, and a command that
# another process runs there ends.

import glob
import json
import os
import time

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, docker,
                 err_result, fail, main, ok_result, remove_our_containers,
                 tmpdir)

BOUND = 2.0


def cgroup_dirs(cid):
    """The cgroup directories of a container, every hierarchy."""
    pid = int(docker("inspect", "-f", "{{.State.Pid}}", cid))
    rels = set()
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            rels.add(line.rstrip("\n").split(":", 2)[2])
    dirs = []
    for top in glob.glob("/sys/fs/cgroup/*") + ["/sys/fs/cgroup"]:
        for rel in rels:
            d = top + rel
            if cid in d and os.path.exists(os.path.join(d,
                                                        "cgroup.procs")):
                dirs.append(d)
    check(dirs, "the cgroups of %s" % cid)
    return sorted(set(dirs))


def start_time(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in ("Z", "X"):
        return None               # ended, not yet reaped
    return fields[19]


def processes(dirs):
    """{pid: start time} of every process in these cgroups."""
    out = {}
    for d in dirs:
        try:
            with open(os.path.join(d, "cgroup.procs")) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            continue
        for p in pids:
            st = start_time(p)
            if st is not None:
                out[p] = st
    return out


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def left(before):
    return {p: cmdline(p) for p, st in before.items()
            if start_time(p) == st}


def failed_events(state, sid):
    path = os.path.join(state, "sandboxes", sid, "telemetry",
                        "events.ndjson")
    n = 0
    with open(path) as f:
        for line in f:
            if json.loads(line).get("name") == "sandbox.failed":
                n += 1
    return n


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    conf = "workspace-root %s\n" % roots
    a = Server(sets=("management", "runtime"), config=conf, args=["-v"])
    b = Server(sets=("management", "runtime"), config=conf, args=["-v"],
               state=a.state)
    c = Server(sets=("management",), config=conf, args=["-v"],
               state=a.state)
    state = a.state
    cleanup(lambda: remove_our_containers(state))
    for s in (a, b, c):
        s.initialize()
    rid = [1000]

    def send(s, name, args):
        rid[0] += 1
        s.send({"jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
                "params": {"name": name, "arguments": args}})
        return rid[0]

    def answer(s, r, deadline, what):
        left_s = deadline - time.time()
        check(left_s > 0, "%s: no time left" % what)
        return s.wait(r, timeout=left_s)["result"]

    for how in (["stop"], ["kill"], ["rm", "-f"]):
        what = "docker " + " ".join(how)
        sid = ok_result(c.call("create_sandbox", {
            "image": IMAGE, "workspace_root": ws}), "create")["id"]
        cid = ok_result(c.call("inspect_sandbox", {"sandbox_id": sid}),
                        "inspect")["container_id"]
        dirs = cgroup_dirs(cid)

        # A managed session of a leaves a process behind, out of its
        # command's process group; a and b each run a command.
        wsid = ok_result(a.call("create_workspace_session",
                                {"sandbox_id": sid}),
                         "session")["workspace_session_id"]
        ok_result(a.call("exec_command", {
            "sandbox_id": sid, "workspace_session_id": wsid,
            "cmd": "(setsid sleep 1000 </dev/null >/dev/null 2>&1 &);"
                   " echo left", "yield_time_ms": 1000}), "background")
        ra = send(a, "exec_command", {"sandbox_id": sid,
                                      "cmd": "sleep 1001",
                                      "yield_time_ms": 120000})
        rb = send(b, "exec_command", {"sandbox_id": sid,
                                      "cmd": "sleep 1002",
                                      "yield_time_ms": 120000})
        end = time.time() + 20
        while True:
            before = processes(dirs)
            names = " ".join(cmdline(p) for p in before)
            if all(n in names for n in ("sleep 1000", "sleep 1001",
                                        "sleep 1002")):
                break
            if time.time() > end:
                fail("the sleeps never ran: %r" % names)
            time.sleep(0.05)

        docker(*how, sid)
        deadline = time.time() + BOUND

        for s, r, n in ((a, ra, "a"), (b, rb, "b")):
            res = ok_result(answer(s, r, deadline, what),
                            "%s: the command of %s" % (what, n))
            check_eq((res["status"], res["exit_code"]), ("error", 137),
                     "%s: the command of %s ended as killed" % (what, n))
            check_in("sandbox %s failed: the container" % sid,
                     res["output"], "%s: the reason in the output" % what)
        while left(before) and time.time() < deadline:
            time.sleep(0.02)
        check_eq(left(before), {}, "%s: processes of the sandbox left on"
                 " the host" % what)
        for d in dirs:
            check(processes([d]) == {}, "%s: %s is empty" % (what, d))

        rec = ok_result(c.call("inspect_sandbox", {"sandbox_id": sid}),
                        "inspect after")
        check_eq(rec["state"], "failed", what + ": the record")
        check_in("outside sandbox-mcp", rec["error"], what + ": reason")
        listed = [x for x in ok_result(b.call("list_sandboxes"),
                                       "list")["sandboxes"]
                  if x["id"] == sid]
        check_eq(listed[0]["state"], "failed", what + ": listed")
        check_eq(listed[0]["error"], rec["error"], what + ": listed reason")
        for s in (a, b):
            e = err_result(s.call("exec_command", {
                "sandbox_id": sid, "cmd": "true"}), "operation_failed",
                "%s: exec after" % what)
            check_in("is failed", e["message"], what + ": names the state")

        # Every process has seen the event; one made the change.
        end = time.time() + 10
        while ("sandbox %s: its container" % sid) not in c.log():
            check(time.time() < end, "%s: c saw the event" % what)
            time.sleep(0.05)
        check_eq(failed_events(state, sid), 1, what + ": sandbox.failed"
                 " events")

        r = ok_result(c.call("destroy_sandbox", {"sandbox_id": sid}),
                      "destroy after " + what)
        check_eq(r["state"], "stopped", what + ": destroyed")

    # destroy_sandbox with a command running (in b): stopped, never
    # failed, and b's command ends.
    sid = ok_result(c.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}), "create")["id"]
    rb = send(b, "exec_command", {"sandbox_id": sid, "cmd": "sleep 1003",
                                  "yield_time_ms": 120000})
    r = ok_result(b.call("exec_command", {"sandbox_id": sid,
                                          "cmd": "echo up"}), "second")
    check_eq(r["output"], "up\n", "b runs commands")
    rd = send(a, "destroy_sandbox", {"sandbox_id": sid})
    seen = set()
    while True:
        res = c.call("inspect_sandbox", {"sandbox_id": sid})
        if res["isError"]:
            err_result(res, "not_found", "after destroy")
            break
        seen.add(res["structuredContent"]["state"])
    check("failed" not in seen, "states seen during destroy: %r" % seen)
    r = ok_result(a.wait(rd, timeout=30)["result"], "destroy")
    check_eq(r["state"], "stopped", "destroy_sandbox ends in stopped")
    res = ok_result(b.wait(rb, timeout=10)["result"], "b's command")
    check_eq((res["status"], res["exit_code"]), ("error", 137),
             "b's command ended")
    # Its transcript may be gone with the sandbox already; if not, it
    # says why.
    check("failed" not in res["output"], "not a failure: %r"
          % res["output"])
    for s in (a, b, c):
        check("sandbox %s failed" % sid not in s.log(),
              "no process took the destroy for a failure")


main(test)
