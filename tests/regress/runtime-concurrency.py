#!/usr/bin/env python3
# Ten agents run twenty commands each, all at once, in one sandbox: every
# result is right, no publish is lost, and afterwards no process, mount
# or descriptor is left behind. Then the server (and separately a publish
# child) is killed in the middle of publishing: the manifest stays valid
# and the stack stays usable after a restart.

import glob
import json
import os
import random
import signal
import time

from lib import (IMAGE, Server, check, check_eq, cleanup, docker,
                 forker_sockets, forkers_of, main, mounts_under, ok_result,
                 remove_our_containers, tmpdir)

AGENTS = 10
COMMANDS = 20


def fds(pid):
    """The server's descriptors, but for the sandboxes' logs it keeps
    open (telemetry.c: at most a few, closed after each trash run)."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        n += not t.endswith(("/telemetry/events.ndjson",
                             "/telemetry/resources.ndjson"))
    return n


def children(pid):
    out = []
    for task in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, task)) as f:
            out += f.read().split()
    return out


def manifest_ok(state, sid):
    path = os.path.join(state, "sandboxes", sid, "stack", "manifest.json")
    with open(path) as f:
        m = json.load(f)
    check(m["version"] >= 1 and m["layers"][-1]["layer_id"] ==
          "B000001-base", "manifest %r" % m)
    for layer in m["layers"]:
        check(os.path.isdir(layer["path"]), "layer %s exists"
              % layer["layer_id"])
    return m


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    # (No autosquash: the manifest's version counts the publishes.)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nlimit autosquash-depth 400\n"
               % roots)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]
    cpid = int(docker("inspect", "-f", "{{.State.Pid}}", sid))
    with open("/proc/%d/cgroup" % cpid) as f:
        pids_cg = [l.split(":")[2].strip() for l in f if ":pids:" in l][0]
    pids_current = "/sys/fs/cgroup/pids%s/pids.current" % pids_cg
    sessions = os.path.join(state, "sandboxes", sid, "sessions")

    def no_spares(what):
        """Spares built ahead expire unused within ten seconds."""
        end = time.time() + 40
        while time.time() < end and os.listdir(sessions):
            time.sleep(0.1)
        check_eq(os.listdir(sessions), [], what + ": every spare expired")
        time.sleep(0.5)

    ok_result(s.call("exec_command", {"sandbox_id": sid, "cmd": "true"}),
              "warm up")
    no_spares("after the warm-up")
    # A sandbox's forker (job.c) and its spare helper hold one socket of
    # the server's each.
    base_fds = fds(s.proc.pid) - forker_sockets(s.proc.pid)
    base_children = len(children(s.proc.pid)) - len(forkers_of(s.proc.pid))
    with open(pids_current) as f:
        base_pids = int(f.read())

    # Ten agents, twenty commands each, one outstanding per agent.
    next_cmd = [0] * AGENTS
    pending = {}
    rid = 1000
    results = {}

    def send(agent):
        nonlocal rid
        j = next_cmd[agent]
        next_cmd[agent] += 1
        rid += 1
        cmd = ("mkdir -p agent%d && echo %d-%d > agent%d/f%d && "
               "cat agent%d/f%d" % (agent, agent, j, agent, j, agent, j))
        s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "exec_command", "arguments": {
                    "sandbox_id": sid, "cmd": cmd,
                    "yield_time_ms": 60000}}})
        pending[rid] = (agent, j)

    t0 = time.time()
    for a in range(AGENTS):
        send(a)
    while pending:
        m = s.recv(timeout=120)
        agent, j = pending.pop(m["id"])
        results[(agent, j)] = m["result"]
        if next_cmd[agent] < COMMANDS:
            send(agent)
    took = time.time() - t0
    check_eq(len(results), AGENTS * COMMANDS, "every command answered")
    for (agent, j), res in sorted(results.items()):
        sc = res["structuredContent"]
        check(not res["isError"] and sc["status"] == "ok",
              "agent %d command %d: %r" % (agent, j, sc))
        check_eq(sc["output"], "%d-%d\n" % (agent, j), "its own output")
        check(sc.get("publish") and sc["publish"]["layer_id"],
              "agent %d command %d published: %r" % (agent, j, sc))
    r = ok_result(s.call("exec_command", {
        "sandbox_id": sid, "cmd": "cat agent*/f* | sort | md5sum; ls"
        " agent*/f* | wc -l", "yield_time_ms": 60000}), "the tree")
    want = sorted("%d-%d" % (a, j) for a in range(AGENTS)
                  for j in range(COMMANDS))
    import hashlib
    digest = hashlib.md5(("\n".join(want) + "\n").encode()).hexdigest()
    check_eq(r["output"].split()[0], digest, "every published file there")
    check_eq(r["output"].split()[-1], str(AGENTS * COMMANDS), "count")
    m = manifest_ok(state, sid)
    check_eq(m["version"], 1 + AGENTS * COMMANDS, "one layer each")

    # Nothing left behind, once the spares built ahead have expired.
    no_spares("after the agents")
    check_eq(fds(s.proc.pid) - forker_sockets(s.proc.pid), base_fds,
             "descriptors of the server, its forkers' sockets aside")
    check_eq(len(children(s.proc.pid)) - len(forkers_of(s.proc.pid)),
             base_children, "child processes, its forkers aside")
    with open(pids_current) as f:
        check_eq(int(f.read()), base_pids, "processes in the container")
    check_eq(mounts_under(state), [os.path.join(state, "sandboxes", sid)],
             "no mount under the state directory but the sandbox's disk")
    check_eq(glob.glob(os.path.join(sessions, "*")), [],
             "no session scratch left")
    print("%d commands by %d agents in %.1f s" % (AGENTS * COMMANDS,
                                                  AGENTS, took))

    # kill -9 of the server while publishes run.
    for i in range(3):
        for a in range(4):
            s.send({"jsonrpc": "2.0", "id": 5000 + a, "method":
                    "tools/call", "params": {"name": "exec_command",
                                             "arguments": {
                        "sandbox_id": sid, "yield_time_ms": 60000,
                        "cmd": "head -c 3000000 /dev/urandom > k%d-%d"
                        % (i, a)}}})
        time.sleep(random.uniform(0.05, 0.5))
        s.proc.kill()
        s.proc.wait()
        time.sleep(1)      # publish children finish or die on their own
        s = Server(sets=("management", "runtime"),
                   config="workspace-root %s\n" % roots, state=state)
        s.initialize()
        manifest_ok(state, sid)
        r = ok_result(s.call("exec_command", {
            "sandbox_id": sid, "cmd": "echo ok > after%d; cat after%d"
            % (i, i), "yield_time_ms": 60000}), "usable after a crash")
        check_eq(r["output"], "ok\n", "works")
        check(r.get("publish") and r["publish"]["layer_id"],
              "publishes: %r" % (r,))
    # kill -9 of a publish child itself, mid-way.
    s.send({"jsonrpc": "2.0", "id": 6000, "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {
                "sandbox_id": sid, "yield_time_ms": 60000,
                "cmd": "head -c 50000000 /dev/urandom > huge"}}})
    # The publish's helper: a child of the sandbox's forker that is not
    # its spare, killed once the layer it builds is in staging.
    killed = False
    end = time.time() + 30
    while time.time() < end and not killed:
        staging = glob.glob(os.path.join(state, "sandboxes", sid, "stack",
                                         "staging", "L*"))
        helpers = []
        for f in forkers_of(s.proc.pid):
            for c in children(f):
                try:
                    with open("/proc/%s/comm" % c) as fh:
                        if fh.read().strip() != "smcp-spare":
                            helpers.append(int(c))
                except OSError:
                    continue
        if staging and helpers:
            for c in helpers:
                os.kill(c, signal.SIGKILL)
            killed = True
            break
        time.sleep(0.001)
    check(killed, "the publish's helper was seen building its layer")
    r = s.wait(6000, timeout=60)["result"]["structuredContent"]
    check(r.get("publish") is not None or r.get("publish_rejected"),
          "the command answered with the publish's fate: %r" % (
              {k: v for k, v in r.items() if k != "output"},))
    manifest_ok(state, sid)
    s.close_stdin()
    s.wait_exit()
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots, state=state)
    s.initialize()
    time.sleep(0.5)
    check_eq(glob.glob(os.path.join(state, "sandboxes", sid, "stack",
                                    "staging", "*")), [],
             "half-built layers removed at start")
    r = ok_result(s.call("exec_command", {"sandbox_id": sid,
                                          "cmd": "echo end > end"}), "end")
    check(r.get("publish") and r["publish"]["layer_id"],
          "still publishing: %r" % (r,))


main(test)
