#!/usr/bin/env python3
# Boxes (boxes.md): sandbox_start makes a whole machine of the box image
# (its own disk, network and container engine, a display), ready when
# it answers; sandbox_exec runs commands in it as the unprivileged box
# user, hardened, confined to /work, with a timeout, a tail of each
# stream and background jobs; sandbox_status tells its state; a stopped
# box leaves nothing behind but its record. Bad input is refused with
# the argument named.

import json
import os
import secrets

from lib import (box_server, check, check_eq, check_in, docker, err_result,
                 main, mounts_under, ok_result)

BOX_IMAGE = "sandbox-mcp/box:bookworm"


def test():
    s = box_server()
    state = s.state

    tools = sorted(t["name"] for t in s.request("tools/list", {})
                   ["result"]["tools"])
    check_eq(tools, ["sandbox_exec", "sandbox_procs", "sandbox_secrets",
                     "sandbox_start", "sandbox_status", "sandbox_stop"],
             "the boxes set's tools")

    # Bad input, before anything is made.
    for services, what in [
            ([{"name": "web", "port": 80}, {"name": "web", "port": 81}],
             "given twice"),
            ([{"name": "web", "port": 0}], "port must be"),
            ([{"name": "web", "port": 65536}], "port must be"),
            ([{"name": "Web_1", "port": 80}], "DNS label"),
            ([{"name": "-web", "port": 80}], "DNS label"),
            (["web"], "DNS label")]:
        e = err_result(s.call("sandbox_start", {"services": services}),
                       "invalid_request", "services %r" % services)
        check_in(what, e["message"], "services %r: message" % services)
        check_eq(e["details"].get("argument"), "services",
                 "services %r: the argument named" % services)
    e = err_result(s.call("sandbox_start", {"services": [],
                                            "secrets": ["nope"]}),
                   "invalid_request", "an unknown secret")
    check_in('"nope"', e["message"], "the secret named")
    check_eq(docker("ps", "-aq", "--filter",
                    "label=io.sandbox-mcp.state-dir=" + state), "",
             "no container made by refused starts")

    r = ok_result(s.call("sandbox_start", {
        "services": [{"name": "web", "port": 8080},
                     {"name": "api", "port": 9000}]}, timeout=180),
        "sandbox_start")
    bid = r["id"]
    check(bid.startswith("box-") and len(bid) == 16, "box id: %r" % bid)
    check_eq((r["status"], r["startedFrom"]), ("ready", "cold"),
             "ready, cold")
    st = ok_result(s.call("sandbox_status", {"id": bid}), "status")
    check_eq(st["state"], "ready", "status: ready")
    check_eq(st["boxd"], {"display": "up", "engine": "up"}, "boxd")
    check_eq([w["name"] for w in st["wiring"]], ["web", "api"], "wiring")

    # The container: never privileged, no Docker socket, the plan's
    # caps, our seccomp profile, a network of its own.
    name = "smcp-" + bid
    info = json.loads(docker("inspect", name))[0]
    hc = info["HostConfig"]
    check_eq(hc["Privileged"], False, "not privileged")
    check_eq(hc["CapAdd"], None if hc["CapAdd"] is None else [],
             "no capability added")
    check(any(o.startswith("seccomp=") and "SCMP_ACT_ALLOW" in o
              for o in hc["SecurityOpt"]), "a seccomp profile of ours")
    check_eq(hc["PidsLimit"], 2048, "the max plan's processes")
    check_eq(hc["Memory"], 8 << 30, "the max plan's memory")
    check(hc["NetworkMode"] not in ("default", "bridge", "host"),
          "a network of its own: %r" % hc["NetworkMode"])
    nets = info["NetworkSettings"]["Networks"]
    check_eq(list(nets), [hc["NetworkMode"]], "on that network only")
    check(nets[hc["NetworkMode"]]["IPAddress"].startswith("10.210."),
          "its address from box-subnets: %r" % nets)
    for m in info["Mounts"]:
        check("docker.sock" not in m["Source"], "no Docker socket")
        check(m["Source"].startswith(os.path.join(state, "boxes", bid)),
              "binds from the box's disk only: %r" % m["Source"])
    check_eq(sorted(m["Destination"] for m in info["Mounts"]),
             ["/home/box", "/work"], "what is bound")
    top = os.path.join(state, "boxes", bid)
    check_in(top, mounts_under(state), "the box's disk is mounted")

    def ex(cmd, **kw):
        a = {"id": bid, "cmd": cmd}
        a.update(kw)
        return s.call("sandbox_exec", a, timeout=120)

    out = ok_result(ex("id -u; pwd; echo $DISPLAY; grep -E"
                       " '^(NoNewPrivs|Seccomp|CapEff|CapBnd):'"
                       " /proc/self/status"), "exec")
    lines = out["stdout"].split("\n")
    check_eq(lines[:3], ["1000", "/work", ":99"], "box user, /work, :99")
    status = dict(x.split(":\t") for x in lines[3:] if x)
    check_eq((status["NoNewPrivs"], status["Seccomp"], status["CapEff"]),
             ("1", "2", "0000000000000000"),
             "no_new_privs, a filter, no capability")
    check_eq((out["exitCode"], out["timedOut"], out["truncated"]),
             (0, False, False), "exit 0")

    out = ok_result(ex("self=$(getent hosts $(hostname) | cut -d' ' -f1);"
                       " for n in web api; do a=$(getent hosts $n |"
                       " cut -d' ' -f1); [ -n \"$a\" ] && [ \"$a\" ="
                       " \"$self\" ] && echo $n; done;"
                       " echo oops >&2; exit 3"), "services, stderr")
    check_eq((out["stdout"], out["stderr"], out["exitCode"]),
             ("web\napi\n", "oops\n", 3),
             "names resolve to the box itself; stderr; exit 3")

    # cwd: under /work, never out of it.
    ok_result(ex("mkdir -p a/b; ln -s /etc out; ln -s a in"), "dirs")
    for cwd, want in [("a/b", "/work/a/b\n"), ("/work/a", "/work/a\n"),
                      ("in", "/work/a\n"), ("/work", "/work\n")]:
        check_eq(ok_result(ex("pwd -P", cwd=cwd), cwd)["stdout"], want,
                 "cwd " + cwd)
    out = ok_result(ex("pwd", cwd="out"), "cwd through a link out")
    check_eq(out["exitCode"], 126, "a link out of /work: not entered")
    check_in("leads out of /work", out["stderr"], "why")
    for cwd in ("../etc", "a/../../etc", "/etc", "/workspace"):
        e = err_result(ex("pwd", cwd=cwd), "invalid_request", "cwd " + cwd)
        check_eq(e["details"].get("argument"), "cwd", "cwd named")

    # No way up: no new user namespace, no setuid program, no root.
    out = ok_result(ex("unshare -r true 2>&1; echo $?;"
                       " find / -xdev -perm /6000 -type f 2>/dev/null |"
                       " head -3"), "no way up")
    check_in("Operation not permitted", out["stdout"], "unshare refused")
    check_eq(out["stdout"].split("\n")[1:], ["1", ""],
             "no setuid or setgid program")

    # Timeouts, the tail of a stream, background jobs.
    for t in (0, -1, 3601):
        e = err_result(ex("true", timeoutSec=t), "invalid_request",
                       "timeoutSec %d" % t)
        check_eq(e["details"].get("argument"), "timeoutSec",
                 "timeoutSec named")
    out = ok_result(ex("echo start; sleep 30", timeoutSec=1), "timeout")
    check_eq((out["exitCode"], out["timedOut"], out["stdout"]),
             (124, True, "start\n"), "killed at its timeout")
    out = ok_result(ex("seq 1 20000"), "a long output")
    check_eq(len(out["stdout"]), 16384, "the last 16 KiB")
    check(out["stdout"].endswith("19999\n20000\n"), "its end is kept")
    check_eq((out["truncated"], out["stdoutTruncated"],
              out["stderrTruncated"]), (True, True, False), "truncated")
    bg = ok_result(ex("sleep 0.5; echo later", background=True), "bg")
    check(bg["bgId"].startswith("bg-") and bg["exitCode"] is None,
          "answered at once with a bgId: %r" % bg)
    out = ok_result(ex("sleep 2; cat .sbx/%s.log" % bg["bgId"]), "its log")
    check_eq(out["stdout"], "later\n", "the background job's log")

    # Background jobs: listed, waited for, stopped.
    def procs(**kw):
        return s.call("sandbox_procs", dict(kw, id=bid), timeout=60)
    long = ok_result(ex("echo up; sleep 600", background=True), "long")
    short = ok_result(ex("sleep 1; exit 7", background=True), "short")
    jobs = ok_result(procs(), "list")["jobs"]
    check_eq([j["bgId"] for j in jobs], [short["bgId"], long["bgId"],
                                         bg["bgId"]], "newest first")
    check_eq([j["running"] for j in jobs], [True, True, False],
             "two running, one ended")
    check_eq(jobs[2]["exitCode"], 0, "the ended one's exit code")
    w = ok_result(procs(action="wait", bgId=short["bgId"], timeoutSec=30),
                  "wait")
    check_eq((w["running"], w["exitCode"], w["stopped"]), (False, 7, False),
             "waited for its end")
    w = ok_result(procs(action="wait", bgId=long["bgId"], timeoutSec=1),
                  "wait, not long enough")
    check_eq((w["running"], w["exitCode"]), (True, None), "still running")
    w = ok_result(procs(action="stop", bgId=long["bgId"]), "stop")
    check_eq((w["running"], w["stopped"], w["exitCode"]), (False, True, 137),
             "stopped: its process group killed")
    out = ok_result(ex("pgrep -f 'slee[p] 600'; cat .sbx/%s.log" %
                       long["bgId"]), "after the stop")
    check_eq(out["stdout"], "up\n", "nothing of it runs; its log stays")
    e = err_result(procs(action="wait", bgId="bg-00000000"), "not_found",
                   "an unknown job")
    check_eq(e["details"].get("bgId"), "bg-00000000", "the job named")
    for kw, arg in [({"action": "wait"}, "bgId"),
                    ({"action": "kill", "bgId": long["bgId"]}, "action"),
                    ({"action": "wait", "bgId": long["bgId"],
                      "timeoutSec": -1}, "timeoutSec")]:
        e = err_result(procs(**kw), "invalid_request", "procs %r" % kw)
        check_eq(e["details"].get("argument"), arg, "the argument named")

    # The box's own engine answers; the host's sees none of its work.
    out = ok_result(ex("docker ps --format '{{.Names}}'; echo rc=$?"),
                    "inner engine")
    check_in("rc=0", out["stdout"], "docker ps in the box")

    e = err_result(s.call("sandbox_status", {"id": "box-" +
                                             secrets.token_hex(6)}),
                   "not_found", "an unknown box")
    check_eq(e["details"].get("id", "")[:4], "box-", "the id named")

    # Stop: nothing left but the record.
    check_eq(ok_result(s.call("sandbox_stop", {"id": bid}, timeout=60),
                       "stop"), {"ok": True}, "stopped")
    st = ok_result(s.call("sandbox_status", {"id": bid}), "status after")
    check_eq((st["state"], st["reason"]), ("terminated", "stopped"),
             "terminated")
    e = err_result(ex("true"), "conflict", "exec on a stopped box")
    check_in("terminated", e["message"], "why")
    check_eq(ok_result(s.call("sandbox_stop", {"id": bid}), "again"),
             {"ok": True}, "a second stop")
    check_eq(docker("ps", "-aq", "--filter", "name=" + name), "",
             "its container is gone")
    check_eq(docker("network", "ls", "-q", "--filter",
                    "label=io.sandbox-mcp.tenant=" + bid), "",
             "its network is gone")
    check(top not in mounts_under(state), "its disk is unmounted")
    check(not os.path.exists(top + ".img"), "its image is removed")
    s.close_stdin()
    check_eq(s.wait_exit(30), 0, "the server ends")


if __name__ == "__main__":
    main(test)
