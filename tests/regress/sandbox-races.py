#!/usr/bin/env python3
# Races and crashes around the lifecycle: destroys racing each other,
# destroy while a create of the same batch is running, kill -9 of the
# server in the middle of a batch create followed by a restart, and the
# Docker Engine stopping during a create. After each: no record claims
# ready without a running container, no container of ours is left
# without a record, and destroy_sandbox cleans up what is left.
#
# A private dockerd (lib.Dockerd) is paused with SIGSTOP to hold a create
# at a known point: while the create copies a fresh workspace (before it
# writes records), the Engine is stopped, so the records are written and
# the container requests wait. The races are reproduced every time, not
# by luck.

import glob
import json
import os
import random
import signal
import tempfile
import time

from lib import (IMAGE, Dockerd, Server, check, check_eq, check_in,
                 cleanup, err_result, main, ok_result, tmpdir)


def records(state):
    out = {}
    for path in glob.glob(os.path.join(state, "sandboxes", "*.json")):
        with open(path) as f:
            rec = json.load(f)
        out[rec["id"]] = rec
    return out


def containers(d, state):
    out = d.docker("ps", "-a", "--filter",
                   "label=io.sandbox-mcp.state-dir=" + state,
                   "--format", "{{.Names}} {{.State}}")
    return dict(line.split() for line in out.splitlines() if line)


def invariants(d, state, what):
    recs = records(state)
    cons = containers(d, state)
    for sid, rec in recs.items():
        if rec["state"] == "ready":
            check_eq(cons.get(sid), "running",
                     "%s: ready record %s has a running container"
                     % (what, sid))
    for name in cons:
        check(name in recs, "%s: container %s has a record" % (what, name))
    return recs, cons


def wait_for(cond, what, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.005)
    check(False, "timed out waiting for " + what)


def hold_create(srv, pid, roots, rid, count):
    """Send a create and hold it, records written, inside the Engine."""
    ws = tempfile.mkdtemp(dir=roots)
    with open(os.path.join(ws, "big"), "wb") as f:
        f.write(os.urandom(1 << 20) * 96)
    staging = os.path.join(srv.state, "base-cache", ".staging")
    srv.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
              "params": {"name": "create_sandbox", "arguments": {
                  "image": IMAGE, "workspace_root": ws, "count": count}}})
    wait_for(lambda: os.listdir(staging), "the copy to start")
    os.kill(pid, signal.SIGSTOP)
    return wait_for(lambda: len(records(srv.state)) == count and
                    records(srv.state), "%d records" % count)


def settle(d, state):
    """Wait until the Engine has done what was asked of it before a
    crash: the set of our containers stays the same for two seconds."""
    last, since = None, time.time()
    end = time.time() + 60
    while time.time() < end:
        now = containers(d, state)
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= 2:
            return
        time.sleep(0.1)
    check(False, "the Engine did not settle")


def destroy_all(s, what):
    for sid in list(records(s.state)):
        r = s.call("destroy_sandbox", {"sandbox_id": sid})
        ok_result(r, "%s: destroy %s" % (what, sid))


def test():
    d = Dockerd(images=[IMAGE])
    pid = int(open(os.path.join(d.root, "docker.pid")).read())
    cleanup(lambda: d.proc and os.kill(d.proc.pid, signal.SIGCONT))
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "f"), "w") as f:
        f.write("x\n")
    conf = "workspace-root %s\n" % roots
    create = {"image": IMAGE, "workspace_root": ws, "count": 4}

    # 1. Two destroys of one id at once, from one process and from two.
    a = Server(config=conf, docker_host=d.host)
    a.initialize()
    b = Server(config=conf, docker_host=d.host,
               state=a.state)
    b.initialize()
    for pair in ((a, a), (a, b)):
        sid = ok_result(a.call("create_sandbox", dict(create, count=1)),
                        "create")["id"]
        args = {"name": "destroy_sandbox", "arguments": {"sandbox_id": sid}}
        pair[0].send({"jsonrpc": "2.0", "id": 901, "method": "tools/call",
                      "params": args})
        pair[1].send({"jsonrpc": "2.0", "id": 902, "method": "tools/call",
                      "params": args})
        r1 = pair[0].wait(901)["result"]
        r2 = pair[1].wait(902)["result"]
        outcomes = sorted([r1["isError"], r2["isError"]])
        check_eq(outcomes, [False, True], "exactly one destroy wins")
        loser = r1 if r1["isError"] else r2
        check_in(loser["structuredContent"]["error"]["kind"],
                 ("conflict", "not_found"), "the other: conflict or"
                 " not_found")
        check_eq(records(a.state), {}, "record gone")
        check_eq(containers(d, a.state), {}, "container gone")

    # 2. Destroy while a create of the same batch is still running.
    recs = hold_create(a, pid, roots, 910, 4)
    for sid in recs:
        check_eq(recs[sid]["state"], "creating", "held in creating")
        e = err_result(b.call("destroy_sandbox", {"sandbox_id": sid}),
                       "conflict", "destroy during create")
        check_in("still being created", e["message"], "message")
    os.kill(pid, signal.SIGCONT)
    r = a.wait(910, timeout=60)["result"]
    batch = ok_result(r, "the create completes")["sandboxes"]
    check_eq(len(batch), 4, "the whole batch")
    invariants(d, a.state, "after the held create")
    destroy_all(a, "batch")

    # 3. kill -9 of the server with the create held inside Docker.
    hold_create(a, pid, roots, 920, 4)
    a.proc.kill()
    a.proc.wait()
    os.kill(pid, signal.SIGCONT)
    settle(d, a.state)         # Docker finishes what was asked of it
    b.close_stdin()
    b.wait_exit()
    a = Server(config=conf, docker_host=d.host,
               state=a.state)
    a.initialize()
    recs, cons = invariants(d, a.state, "after kill -9 and restart")
    check_eq(len(recs), 4, "the records are kept")
    for rec in recs.values():
        check_eq(rec["state"], "failed", "interrupted records are failed")
        check_in("interrupted", rec["error"], "and say why")
    destroy_all(a, "after the crash")
    check_eq(containers(d, a.state), {}, "all containers removed")

    # 4. kill -9 at random moments of unheld creates.
    for i in range(4):
        a.send({"jsonrpc": "2.0", "id": 930, "method": "tools/call",
                "params": {"name": "create_sandbox",
                           "arguments": dict(create, count=6)}})
        time.sleep(random.uniform(0.0, 0.6))
        a.proc.kill()
        a.proc.wait()
        settle(d, a.state)
        a = Server(config=conf, docker_host=d.host,
                   state=a.state)
        a.initialize()
        time.sleep(0.5)        # recovery asks Docker for the containers
        recs, cons = invariants(d, a.state, "random kill %d" % i)
        for rec in recs.values():
            check(rec["state"] in ("ready", "failed"),
                  "no record left in %s" % rec["state"])
        destroy_all(a, "random kill %d" % i)

    # 5. The Docker Engine stops during a create.
    hold_create(a, pid, roots, 940, 4)
    os.kill(pid, signal.SIGCONT)
    d.stop()
    r = a.wait(940, timeout=90)["result"]
    check(r["isError"], "the create fails or completes cleanly: %r"
          % (r,))
    e = r["structuredContent"]["error"]
    check_in("Docker Engine", e["message"], "the error names the Engine")
    check_eq(a.request("ping").get("result"), {}, "still serving")
    d.start()
    recs, cons = invariants(d, a.state, "after the Engine returned")
    for rec in recs.values():
        check_eq(rec["state"], "failed", "kept records are failed")
        check_in("could not be removed", rec["error"], "and say why")
    destroy_all(a, "after the Engine returned")
    check_eq(containers(d, a.state), {}, "nothing half-made left")
    check_eq(records(a.state), {}, "no record left")


main(test)
