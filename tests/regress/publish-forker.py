#!/usr/bin/env python3
# A sandbox's helpers are forked by its forker (job.c): one process per
# sandbox, in the sandbox's helper control groups, that the sandbox
# cannot reach, and whose loss loses nothing.
#
#   - it is charged to the sandbox (its helper groups), and is in none of
#     the container's groups, with no descriptor but its socket to the
#     server and /dev/null, stderr;
#   - it is confined once, as its helpers are: a mount namespace of its
#     own where nothing but the sandbox's state and its base is mounted,
#     no_new_privs, a seccomp filter, a cut capability set; its spare
#     helper (forked ahead, waiting for a job) is confined the same way
#     and charged to the sandbox too; its only descriptors are its socket
#     (whose other end the server holds) and /dev/null, stderr;
#   - a process in the sandbox sees neither it nor its helpers;
#   - kill -9 of the forker while publishes are under way (at whatever
#     moment of them): each publish answers, a manifest is always whole,
#     every layer it names is on disk, every file published is read back,
#     the next publish works (a new forker), and what the cut publishes
#     left in staging is swept while the server runs;
#   - destroying the sandbox ends the forker and removes the helper
#     groups.

import glob
import json
import os
import signal
import time

from lib import (IMAGE, Server, check, check_eq, cleanup, main, ok_result,
                 remove_our_containers, tmpdir, wait_for)


FILES = 3000


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        if int(rest[1]) == pid:
            out.append((int(p), st[st.index("(") + 1:st.rindex(")")]))
    return out


def forkers(server):
    return [p for p, comm in children(server.proc.pid)
            if comm == "smcp-forker"]


def cgroups(pid):
    with open("/proc/%d/cgroup" % pid) as f:
        return [line.strip().split(":", 2) for line in f if line.strip()]


def manifest_whole(state, sid, what):
    stack = os.path.join(state, "sandboxes", sid, "stack")
    with open(os.path.join(stack, "manifest.json")) as f:
        m = json.load(f)
    for layer in m["layers"]:
        check(os.path.isdir(layer["path"]),
              "%s: the manifest's layer %s is on disk"
              % (what, layer["layer_id"]))
    return m


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]

    def run(cmd, **kw):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 30000}
        args.update(kw)
        return s.call("exec_command", args, timeout=60)

    r = ok_result(run("echo one > one.txt"), "first publish")
    check(r["publish"] and r["publish"]["changed_paths"] == ["one.txt"],
          "published: %r" % r["publish"])
    fk = forkers(s)
    check_eq(len(fk), 1, "one forker for the sandbox")
    pid = fk[0]

    # Charged to the sandbox: its helper groups, none of the container's.
    for _, ctrls, path in cgroups(pid):
        if any(c in ctrls.split(",") for c in ("cpu", "memory", "pids")):
            check(path.endswith("/sandbox-mcp/" + sid),
                  "the forker is in the sandbox's %s group: %s"
                  % (ctrls, path))
        check("docker" not in path,
              "the forker is in no group of the container: %s" % path)
    # Confined: nothing of the host is mounted in its view but the
    # sandbox's state and the base, and it cannot gain privileges.
    with open(os.path.join(state, "sandboxes", sid, "stack",
                           "manifest.json")) as f:
        base = json.load(f)["layers"][-1]["path"]
    sbdir = os.path.join(state, "sandboxes", sid)
    spares = [c for c, comm in children(pid) if comm == "smcp-spare"]
    check_eq(len(spares), 1, "the forker keeps one spare helper")
    for who, p in (("the forker", pid), ("its spare", spares[0])):
        check(os.readlink("/proc/%d/ns/mnt" % p) !=
              os.readlink("/proc/self/ns/mnt"),
              "%s has a mount namespace of its own" % who)
        with open("/proc/%d/mountinfo" % p) as f:
            points = [line.split()[4] for line in f]
        check(points.count("/") == 1, "%s: a root: %r" % (who, points))
        for mp in points:
            check(mp in ("/", sbdir, base) or mp.startswith(sbdir + "/"),
                  "%s: only the sandbox's state and its base are mounted,"
                  " not %s" % (who, mp))
        check(sbdir in points and base in points,
              "%s: the sandbox's state and its base: %r" % (who, points))
        with open("/proc/%d/status" % p) as f:
            status = dict(line.rstrip("\n").split(":\t", 1) for line in f
                          if ":\t" in line)
        check_eq(status.get("NoNewPrivs"), "1", "%s: no_new_privs" % who)
        check_eq(status.get("Seccomp"), "2", "%s: a seccomp filter" % who)
        check(int(status.get("CapBnd", "0"), 16) & (1 << 12) == 0,
              "%s: CAP_NET_ADMIN is out of its bounding set" % who)
        for _, ctrls, path in cgroups(p):
            if any(c in ctrls.split(",") for c in ("cpu", "memory",
                                                   "pids")):
                check(path.endswith("/sandbox-mcp/" + sid),
                      "%s is in the sandbox's %s group: %s"
                      % (who, ctrls, path))
    fds = sorted(int(x) for x in os.listdir("/proc/%d/fd" % pid))
    check_eq(fds, [0, 1, 2, 3, 4], "the forker's descriptors")
    sfds = sorted(int(x) for x in os.listdir("/proc/%d/fd" % spares[0]))
    check_eq(len(sfds), 4, "the spare's descriptors: %r" % sfds)
    for fd in sfds[:2]:
        check_eq(os.readlink("/proc/%d/fd/%d" % (spares[0], fd)),
                 "/dev/null", "the spare's descriptor %d" % fd)
    check(os.readlink("/proc/%d/fd/%d" % (spares[0], sfds[3]))
          .startswith("socket:"), "the spare's last descriptor is its"
          " socket")
    for fd in (0, 1):
        check_eq(os.readlink("/proc/%d/fd/%d" % (pid, fd)), "/dev/null",
                 "descriptor %d" % fd)
    check_eq(os.readlink("/proc/%d/fd/2" % pid),
             os.readlink("/proc/%d/fd/2" % s.proc.pid), "its stderr")
    check(os.readlink("/proc/%d/fd/3" % pid).startswith("socket:"),
          "descriptor 3 is its socket")
    check_eq(os.readlink("/proc/%d/fd/4" % pid), "anon_inode:[signalfd]",
             "descriptor 4 is its signalfd")

    # The sandbox sees neither it nor its helpers: not in its processes.
    r = ok_result(run("for p in /proc/[0-9]*; do cat $p/comm; done;"
                      " echo two > two.txt"), "look from inside")
    check("smcp-forker" not in r["output"],
          "the forker is not seen from the sandbox: %r" % r["output"])

    # kill -9 of the forker during publishes of many files, at a moment
    # that moves forward each round: every publish answers, the stack is
    # whole after each, and all that was published is there.
    published = {"one.txt": "one\n", "two.txt": "two\n"}
    cut = 0
    for rnd in range(6):
        fk = wait_for("a forker", lambda: forkers(s))
        # The last publish's helper may still be going away.
        old = set(c for p in fk for c, comm in children(p)
                  if comm != "smcp-spare")
        rid = 7000 + rnd
        s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "exec_command", "arguments": {
                    "sandbox_id": sid, "yield_time_ms": 30000,
                    "cmd": "mkdir -p r%d && for i in $(seq %d); do"
                           " echo %d-$i > r%d/f$i; done"
                           % (rnd, FILES, rnd, rnd)}}})
        # Wait for the publish's helper to be born, then kill its forker
        # a little later each round.
        end = time.time() + 30
        while not any(c not in old for p in fk
                      for c, comm in children(p) if comm != "smcp-spare"):
            check(time.time() < end, "round %d: the publish's helper" % rnd)
        time.sleep(0.003 * rnd)
        for p in fk:
            os.kill(p, signal.SIGKILL)
        m = s.wait(rid, timeout=60)
        check("result" in m, "round %d answered: %r" % (rnd, m))
        res = ok_result(m["result"], "round %d" % rnd)
        if res.get("publish"):
            for i in range(1, FILES + 1):
                published["r%d/f%d" % (rnd, i)] = "%d-%d\n" % (rnd, i)
        else:
            check(res.get("publish_rejected"), "round %d: neither published"
                  " nor rejected: %r" % (rnd, res))
            check_eq(res.get("publish_reject_class"), "storage_error",
                     "round %d: the rejection" % rnd)
            cut += 1
        manifest_whole(state, sid, "round %d" % rnd)
        # The next publish works, through a new forker.
        r = ok_result(run("echo %d > after%d.txt" % (rnd, rnd)),
                      "publish after round %d" % rnd)
        check(r["publish"] and r["publish"]["changed_paths"] ==
              ["after%d.txt" % rnd], "published after round %d: %r"
              % (rnd, r["publish"]))
        published["after%d.txt" % rnd] = "%d\n" % rnd
        check(all(p not in fk for p in forkers(s)),
              "a new forker after round %d" % rnd)
    # Killed as soon as its helper was born, a publish of 3,000 files
    # cannot have finished: the first rounds at least were cut short.
    check(cut >= 1, "no publish was cut short by the kill")
    # What the cut publishes were building in staging is swept away
    # while the server runs (no restart), by a helper of the sandbox.
    staging = os.path.join(state, "sandboxes", sid, "stack", "staging")
    wait_for("staging swept of what %d cut publishes left: %r"
             % (cut, os.listdir(staging)),
             lambda: os.listdir(staging) == [], timeout=20)
    m = manifest_whole(state, sid, "the end")
    check(len(m["layers"]) >= 9, "layers: %d" % len(m["layers"]))
    # Everything published is read back.
    names = sorted(published)
    r = ok_result(run("cat " + " ".join(names)), "read all back")
    check_eq(r["output"], "".join(published[n] for n in names),
             "every file published")

    # A sandbox destroyed while its publishes run: its helper groups go
    # all the same, once the publishes have ended with the forker.
    sid2 = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                               "workspace_root": ws}),
                     "create another")["id"]
    ws2 = ok_result(s.call("create_workspace_session", {
        "sandbox_id": sid2}), "session")["workspace_session_id"]
    ok_result(s.call("exec_command", {
        "sandbox_id": sid2, "workspace_session_id": ws2,
        "yield_time_ms": 60000,
        "cmd": "for i in $(seq 3000); do echo $i > f$i; done"},
        timeout=90), "files")
    s.send({"jsonrpc": "2.0", "id": 9900, "method": "tools/call",
            "params": {"name": "publish_workspace_session", "arguments": {
                "sandbox_id": sid2, "workspace_session_id": ws2}}})
    wait_for("the publish's helper",
             lambda: any(comm != "smcp-spare" for p in forkers(s)
                         for _, comm in children(p)), timeout=30)
    s.send({"jsonrpc": "2.0", "id": 9901, "method": "tools/call",
            "params": {"name": "destroy_sandbox",
                       "arguments": {"sandbox_id": sid2}}})
    s.wait(9900, timeout=60)
    check("result" in s.wait(9901, timeout=60), "the destroy answered")
    groups2 = glob.glob("/sys/fs/cgroup/*/sandbox-mcp/" + sid2) + \
        glob.glob("/sys/fs/cgroup/sandbox-mcp/" + sid2)
    wait_for("the destroyed sandbox's helper groups removed",
             lambda: not any(os.path.exists(d) for d in groups2) and
             not glob.glob("/sys/fs/cgroup/*/sandbox-mcp/" + sid2))

    # Destroy: the forker ends, the helper groups go.
    groups = glob.glob("/sys/fs/cgroup/*/sandbox-mcp/" + sid) + \
        glob.glob("/sys/fs/cgroup/sandbox-mcp/" + sid)
    check(groups, "the sandbox has helper groups")
    ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}, timeout=60),
              "destroy")
    wait_for("no forker", lambda: not forkers(s))
    wait_for("the helper groups removed",
             lambda: not any(os.path.exists(d) for d in groups))


main(test)
