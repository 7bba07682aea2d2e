#!/usr/bin/env python3
# Work the host does for a sandbox is charged to it and bounded.
#
# 1. A publish of a 1 TiB sparse file and of an 8 GiB one with a few
#    bytes at its end finishes quickly (it costs what the files hold, not
#    what they claim), and a sessionless write meanwhile is not kept
#    waiting.
# 2. Four session reads of a 32 GiB sparse file at once answer at once.
# 3. 400 pipelined sessionless writes never run more than helper-processes
#    helpers at once; past the queue the server answers server_busy.
# 4. The publishing process runs in the sandbox's helper control group,
#    confined (its root is an empty file system holding only the
#    sandbox's state; no_new_privs; a seccomp filter); killed with the
#    server (kill -9), it commits nothing, and a restart finds the
#    sandbox usable.
# 5. 600 managed sessions in one sandbox: past sessions-per-sandbox the
#    server answers server_busy, and another sandbox still runs commands.
# 6. The sandboxes of one tenant share sessions-per-tenant and
#    commands-per-tenant.
# 7. A destroyed session's scratch and freezer group go.
# 8. One file_edit takes at most 100 edits.
# 9. sandboxes-per-tenant; a destroyed sandbox's helper groups go.

import json
import os
import signal
import time

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, err_result,
                 forkers_of, http_json, http_session, keygen, main, ok_result,
                 remove_our_containers, tmpdir)

HELPERS = 6


def children(pid):
    out = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                out += f.read().split()
    except OSError:
        pass
    return out


def helpers(pid):
    """The helpers of server pid: its children and its forkers' (job.c),
    the forkers aside."""
    fk = forkers_of(pid)
    out = [int(k) for k in children(pid) if int(k) not in fk]
    for f in fk:
        out += [int(k) for k in children(f)]
    return out


def helper_pids(sid):
    """Processes in the sandbox's helper group (pids hierarchy), but its
    forker."""
    for base in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup"):
        path = os.path.join(base, "sandbox-mcp", sid, "cgroup.procs")
        try:
            with open(path) as f:
                pids = [int(p) for p in f.read().split()]
        except OSError:
            continue
        return [p for p in pids if comm(p) != "smcp-forker"]
    return []


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def manifest_version(state, sid):
    with open(os.path.join(state, "sandboxes", sid, "stack",
                           "manifest.json")) as f:
        return json.load(f)["version"]


def test():
    top = tmpdir()
    roots = os.path.join(top, "roots")
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    state = os.path.join(top, "state")
    conf = ("workspace-root %s\nlimit helper-processes %d\n"
            "limit helper-queue 256\n" % (roots, HELPERS))
    s = Server(sets=("management", "runtime"), config=conf, state=state)
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

    def session():
        return ok_result(s.call("create_workspace_session", {
            "sandbox_id": sid}), "session")["workspace_session_id"]

    # 1. Sparse giants.
    w = session()
    r = run("truncate -s %d huge && truncate -s %d big && echo end >> big"
            " && truncate -s %d sparse32 && echo made" % (1 << 40, 8 << 30,
                                                          32 << 30),
            workspace_session_id=w)
    check_eq(r["output"], "made\n", "the sparse files")
    rid = 500
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "publish_workspace_session", "arguments": {
                "sandbox_id": sid, "workspace_session_id": w}}})
    t0 = time.time()
    r = ok_result(s.call("file_write", {"sandbox_id": sid,
                                        "path": "meanwhile.txt",
                                        "content": "x\n"}), "write")
    waited = time.time() - t0
    check(waited < 5, "a write waited %.1f s behind a publish" % waited)
    m = s.wait(rid, timeout=60)
    took = time.time() - t0
    p = ok_result(m["result"], "publish of sparse files")
    check(sorted(p["publish"]["changed_paths"]) ==
          ["big", "huge", "sparse32"], "published: %r" % p["publish"])
    check(took < 30, "the publish took %.1f s" % took)
    b = ok_result(s.call("file_blame", {"sandbox_id": sid, "path": "big"}),
                  "blame of big")
    check_eq(b["ranges"], [{"start_line": 1, "line_count": 1,
                            "owner": "workspace_session:" + w}],
             "whole-file ownership of a large file")

    # 2. Four reads of a 32 GiB sparse file at once, in a session.
    w = session()
    t0 = time.time()
    ids = []
    for i in range(4):
        rid += 1
        ids.append(rid)
        s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "file_read", "arguments": {
                    "sandbox_id": sid, "workspace_session_id": w,
                    "path": "sparse32"}}})
    for i in ids:
        m = s.wait(i, timeout=60)
        e = err_result(m["result"], "invalid_request", "read of a hole")
        check_in("not UTF-8 text", e["message"], "why")
    took = time.time() - t0
    check(took < 10, "four reads of a sparse file took %.1f s" % took)
    ok_result(s.call("destroy_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": w}), "destroy")

    # 3. 400 pipelined sessionless writes (every one is a helper).
    body = "y\n"
    ids = []
    for i in range(400):
        rid += 1
        ids.append(rid)
        s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "file_write", "arguments": {
                    "sandbox_id": sid, "path": "burst/f%03d" % i,
                    "content": body}}})
    peak = 0
    pending = set(ids)
    written = []
    busy = 0
    while pending:
        peak = max(peak, len(helpers(s.proc.pid)))
        m = s.recv(timeout=120)
        if m.get("id") not in pending:
            continue
        pending.discard(m["id"])
        res = m["result"]
        if res["isError"]:
            e = res["structuredContent"]["error"]
            check_eq(e["kind"], "server_busy", "a refused write")
            check_eq(e["details"].get("limit"), "helper-queue",
                     "the limit named")
            busy += 1
        else:
            written.append(res["structuredContent"]["path"])
    # The sandbox's zygote and a session's init may be children too.
    check(peak <= HELPERS + 3, "%d children at once (cap %d)"
          % (peak, HELPERS))
    check(len(written) >= 256, "%d writes done, %d refused"
          % (len(written), busy))
    r = run("ls burst | wc -l")
    check_eq(r["output"].strip(), str(len(written)), "every write there")

    # 4. The publishing process: charged, confined, and dies with us.
    w = session()
    run("dd if=/dev/zero of=zeros bs=1M count=1536 2>/dev/null; echo ok",
        workspace_session_id=w)
    zeros = run("wc -c < zeros", workspace_session_id=w)["output"].strip()
    before = manifest_version(state, sid)
    rid += 1
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "publish_workspace_session", "arguments": {
                "sandbox_id": sid, "workspace_session_id": w}}})
    helper = None
    end = time.time() + 20
    while time.time() < end and helper is None:
        pids = helper_pids(sid)
        if pids:
            helper = pids[0]
        time.sleep(0.002)
    check(helper is not None, "a helper in the sandbox's group")
    # The helper joins the group when it is forked and confines itself
    # next, the seccomp filter last: look at it once that is done (a
    # helper that never gets there ends with its publish, and the test
    # fails below).
    try:
        while True:
            with open("/proc/%d/status" % helper) as f:
                status = f.read()
            if "Seccomp:\t2" in status:
                break
            time.sleep(0.002)
        root = os.listdir("/proc/%d/root" % helper)
        with open("/proc/%d/mountinfo" % helper) as f:
            mounts = f.read().splitlines()
    except OSError as e:
        check(False, "the helper ended too soon to be looked at: %r" % e)
    first = state.strip("/").split("/")[0]
    check_eq(sorted(root), [first], "the helper's root holds only the"
             " way to its sandbox")
    check_in("NoNewPrivs:\t1", status, "no_new_privs")
    check_in("Seccomp:\t2", status, "a seccomp filter")
    check(len(mounts) <= 4, "the helper's mounts: %r" % mounts)
    os.kill(s.proc.pid, signal.SIGKILL)
    s.proc.wait()
    end = time.time() + 10
    while time.time() < end and os.path.exists("/proc/%d" % helper):
        time.sleep(0.01)
    check(not os.path.exists("/proc/%d" % helper),
          "the helper died with the server")
    check_eq(manifest_version(state, sid), before,
             "nothing committed after the server died")
    s2 = Server(sets=("management", "runtime"), config=conf, state=state)
    s2.initialize()
    r = ok_result(s2.call("exec_command", {"sandbox_id": sid,
                                           "cmd": "ls zeros 2>&1; echo ok",
                                           "yield_time_ms": 60000},
                          timeout=90), "after the restart")
    check_in("No such file", r["output"], "the killed publish left nothing")
    # The session whose publish was killed is taken up again with its
    # changes (a restart loses no work); destroyed, its disk comes back.
    r = ok_result(s2.call("exec_command", {
        "sandbox_id": sid, "workspace_session_id": w,
        "cmd": "wc -c < zeros", "yield_time_ms": 60000}, timeout=90),
        "the session after the restart")
    check_eq(r["output"].strip(), zeros, "its unpublished file")
    ok_result(s2.call("destroy_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": w}, timeout=90),
        "destroy it")
    s = s2

    # 5. 600 managed sessions.
    made = 0
    refused = None
    for i in range(600):
        res = s.call("create_workspace_session", {"sandbox_id": sid},
                     timeout=60)
        if res["isError"]:
            refused = res["structuredContent"]["error"]
            break
        made += 1
    check(refused is not None, "%d sessions made, none refused" % made)
    check_eq(refused["kind"], "server_busy", "the refusal")
    check_eq(refused["details"].get("limit"), "sessions-per-sandbox",
             "the limit named")
    check_eq(made, 64, "sessions made before the limit")
    r = ok_result(s.call("exec_command", {"sandbox_id": other,
                                          "cmd": "echo still",
                                          "yield_time_ms": 60000},
                         timeout=90), "another sandbox")
    check_eq(r["output"], "still\n", "another sandbox runs commands")

    # 6. Per tenant: two sandboxes of one tenant share its caps.
    s3 = Server(sets=("management", "runtime"), state=state,
                config=conf + "limit sessions-per-tenant 3\n"
                "limit commands-per-tenant 2\n")
    s3.initialize()
    held = {}
    for box in (sid, sid, other):
        held[box] = ok_result(s3.call("create_workspace_session", {
            "sandbox_id": box}), "a session of the tenant")[
                "workspace_session_id"]
    e = err_result(s3.call("create_workspace_session",
                           {"sandbox_id": other}), "server_busy",
                   "past sessions-per-tenant")
    check_eq(e["details"].get("limit"), "sessions-per-tenant", "named")
    sleeping = {}
    for box in (sid, other):
        r = ok_result(s3.call("exec_command", {
            "sandbox_id": box, "cmd": "sleep 30", "yield_time_ms": 0,
            "workspace_session_id": held[box]}), "a running command")
        check_eq(r["status"], "running", "it runs")
        sleeping[box] = r["command_session_id"]
    e = err_result(s3.call("exec_command", {
        "sandbox_id": other, "cmd": "true", "yield_time_ms": 0,
        "workspace_session_id": held[other]}),
        "server_busy", "past commands-per-tenant")
    check_eq(e["details"].get("limit"), "commands-per-tenant", "named")

    # 7. A destroyed session leaves nothing: its scratch and its freezer
    # group go (the size walk of destroy used to keep it forever).
    w = held[other]
    r = ok_result(s3.call("write_command_stdin", {
        "sandbox_id": other, "command_session_id": sleeping[other],
        "stdin": "\u0003", "yield_time_ms": 10000}), "Ctrl-C")
    check_eq(r["status"], "cancelled", "the sleep ended")
    scratch = os.path.join(state, "sandboxes", other, "sessions", w)
    cg = [os.path.join(root, d) for root, dirs, _ in
          os.walk("/sys/fs/cgroup/freezer") for d in dirs
          if d == "smcp-" + w]
    check(os.path.isdir(scratch) and cg, "the session's scratch and group")
    ok_result(s3.call("destroy_workspace_session", {
        "sandbox_id": other, "workspace_session_id": w}), "destroy")
    end = time.time() + 10
    while time.time() < end and (os.path.exists(scratch) or
                                 any(os.path.exists(c) for c in cg)):
        time.sleep(0.05)
    check(not os.path.exists(scratch), "the scratch of a destroyed session"
          " is gone")
    check(not any(os.path.exists(c) for c in cg), "its freezer group is"
          " gone")

    # 8. An edit list is bounded.
    e = err_result(s3.call("file_edit", {
        "sandbox_id": sid, "path": "burst/f000",
        "edits": [{"old_string": "a", "new_string": "b"}] * 101}),
        "invalid_request", "101 edits")
    check_in("at most 100", e["message"], "the bound named")

    # 9. A tenant's sandboxes are bounded; a destroyed sandbox's helper
    # group goes with it.
    key, line = keygen("carol", "management", "runtime")
    s4 = Server(sets=("management", "runtime"), state=state,
                listen="127.0.0.1:0", config=conf + line + "\n"
                "limit sandboxes-per-tenant 1\n")
    s4.initialize()
    c, hdr = http_session(s4.port, key=key)

    def over_http(name, args):
        st, _, body = c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": args}}, hdr)
        check_eq(st, 200, name + " over HTTP")
        return http_json(body)["result"]

    made = ok_result(over_http("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}), "carol's first")["id"]
    e = err_result(over_http("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}), "server_busy",
        "carol's second, past sandboxes-per-tenant 1")
    check_eq(e["details"].get("limit"), "sandboxes-per-tenant", "named")
    ok_result(over_http("destroy_sandbox", {"sandbox_id": made}),
              "carol's destroyed")
    # The local operator has no such bound (it has two already).
    mine = ok_result(s4.call("create_sandbox", {"image": IMAGE,
                                                "workspace_root": ws}),
                     "the operator's third")["id"]
    ok_result(s4.call("destroy_sandbox", {"sandbox_id": mine}), "destroy")
    groups = [os.path.join(base, "sandbox-mcp", other) for base in
              ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/memory",
               "/sys/fs/cgroup/pids") if os.path.isdir(base)]
    check(groups and all(os.path.isdir(g) for g in groups),
          "the helper groups of a sandbox that had helpers: %r" % groups)
    ok_result(s4.call("destroy_sandbox", {"sandbox_id": other}), "destroy")
    end = time.time() + 10
    while time.time() < end and any(os.path.exists(g) for g in groups):
        time.sleep(0.05)
    check(not any(os.path.exists(g) for g in groups),
          "the helper groups of a destroyed sandbox are gone")


if __name__ == "__main__":
    main(test)
