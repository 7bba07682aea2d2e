#!/usr/bin/env python3
# A box's commands against what a box holds (boxes.md, "Who runs in a
# box"), each rule a check that fails without it:
# - the display's and the engine's processes (the box user's too, but
#   without no_new_privs and the command filter) are out of a command's
#   reach: each command has a PID namespace and a /proc of its own, and
#   sees no process but its own (nor can trace or signal another);
# - a command's processes end with it, its timeout or its stop, setsid
#   or not;
# - no process of a box opens a vsock or a crypto socket, a command nor
#   a container of the box's own engine (the box's seccomp profile);
# - nothing on the container's own root file system is writable by the
#   box user (what it writes lands on the capped disk or in memory);
# - a command of more than an exec argument's 128 KiB is refused, and a
#   background job keeps only the start of its command;
# - sandbox_status says what runs: a display or an engine that ended
#   reads as down (a command cannot end them).

import time

from lib import (box_server, check, check_eq, check_in, docker, err_result,
                 main, ok_result)

VSOCK_C = r"""
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
int main(void) {
	int s = socket(40, SOCK_STREAM, 0), a = socket(38, SOCK_SEQPACKET, 0);
	printf("vsock %d %d alg %d\n", s, s < 0 ? errno : 0, a);
	return (s >= 0 || a >= 0);
}
"""

def test():
    s = box_server()
    state = s.state
    bid = ok_result(s.call("sandbox_start", {"services": []}, timeout=180),
                    "start")["id"]

    def ex(cmd, **kw):
        a = {"id": bid, "cmd": cmd, "timeoutSec": 300}
        a.update(kw)
        return ok_result(s.call("sandbox_exec", a, timeout=320), cmd[:40])

    # Out of reach: a command sees only its own processes.
    out = ex("pgrep -x Xvfb; pgrep -f 'podman [s]ystem service';"
             " ls /proc | grep -cE '^[0-9]+$'; echo $$")
    lines = out["stdout"].split()
    check_eq(len(lines), 2, "neither the display nor the engine seen: %r"
             % out)
    check(int(lines[0]) <= 5, "only its own processes: %r" % out)
    check_eq(lines[1], "2", "the shell is the second of its namespace")
    host = docker("exec", "smcp-" + bid, "pgrep", "-x", "Xvfb")
    check(host.strip().isdigit(), "the display runs, out of sight")

    # Its processes end with it: timeout, setsid, a background stop.
    out = ex("setsid sleep 4242 >/dev/null 2>&1 & sleep 100",
             timeoutSec=2)
    check_eq(out["exitCode"], 124, "the timeout")
    ex("(sleep 4343 >/dev/null 2>&1 &); echo left")
    bg = ex("setsid sleep 4444 >/dev/null 2>&1 & sleep 1000",
            background=True)
    ok_result(s.call("sandbox_procs", {"id": bid, "action": "stop",
                                       "bgId": bg["bgId"]}, timeout=60),
              "stop")
    left = docker("exec", "smcp-" + bid, "sh", "-c",
                  "pgrep -f 'sleep 4[234]4[234]' || true")
    check_eq(left.strip(), "", "none of them left: %r" % left)

    # Stops that come as a job starts (before its helper has a command
    # to kill): many at once; the server, and this test, live on.
    for i in range(40):
        rids = []
        for k in range(4):
            rid = 10000 + i * 10 + k
            s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                    "params": {"name": "sandbox_exec", "arguments": {
                        "id": bid, "cmd": "sleep 1000",
                        "background": True}}})
            rids.append(rid)
        bgs = [s.wait(r, 60)["result"]["structuredContent"]["bgId"]
               for r in rids]
        for k, b in enumerate(bgs):
            s.send({"jsonrpc": "2.0", "id": 20000 + i * 10 + k,
                    "method": "tools/call", "params": {
                        "name": "sandbox_procs", "arguments": {
                            "id": bid, "action": "stop", "bgId": b}}})
        for k in range(4):
            r = s.wait(20000 + i * 10 + k, 60)["result"]
            check_eq((r["isError"], r["structuredContent"]["running"]),
                     (False, False), "a stop at its start")
    check(s.proc.poll() is None, "the server lives")

    # No vsock, no AF_ALG: a command, and a container of the box's own.
    out = ex("python3 -c 'import socket; socket.socket(40, 1)' 2>&1 |"
             " tail -1")
    check_in("Address family not supported", out["stdout"], "a command")
    out = ex("mkdir -p v && cd v && cat > v.c <<'EOF'\n%sEOF\n"
             "gcc -static -o v v.c && printf 'FROM scratch\\nCOPY v /v\\n"
             "CMD [\"/v\"]\\n' > Dockerfile && docker build -q -t v . >"
             " /dev/null && docker run --rm v; echo rc=$?" % VSOCK_C)
    check_in("rc=0", out["stdout"], "an inner container: %r" % out)
    check_in("vsock -1 97", out["stdout"], "vsock refused: %r" % out)
    check_in("alg -1", out["stdout"], "AF_ALG refused: %r" % out)

    # Nothing writable on the root file system but the mount points of
    # what is capped (the box's disk, memory); /run/lock is small.
    out = ex("for p in $(find / -xdev -writable ! -type l 2>/dev/null); do"
             " mountpoint -q $p || echo $p; done; dd if=/dev/zero"
             " of=/run/lock/big bs=1M count=8 2>&1 | grep -c 'No space';"
             " rm -f /run/lock/big")
    check_eq(out["stdout"], "1\n",
             "nothing writable on the container's own root, and /run/lock"
             " full at 1 MiB: %r" % out)

    # Bounds on what a command costs the server.
    e = err_result(s.call("sandbox_exec", {"id": bid, "cmd": "true #" +
                                           "A" * (200 * 1024)}),
                   "invalid_request", "a 200 KiB command")
    check_eq(e["details"].get("argument"), "cmd", "cmd named")
    long = "sleep 0.1 # " + "B" * (100 * 1024)
    bg = ex(long, background=True)
    jobs = ok_result(s.call("sandbox_procs", {"id": bid}), "procs")["jobs"]
    job = [j for j in jobs if j["bgId"] == bg["bgId"]][0]
    check_eq(len(job["cmd"]), 1024, "only its start kept")

    # What runs, as sandbox_status finds it.
    st = ok_result(s.call("sandbox_status", {"id": bid}), "status")
    check_eq(st["boxd"], {"display": "up", "engine": "up"}, "both up")
    # (A command cannot reach them: they end by the test's hand.)
    out = ex("pkill -x Xvfb; echo $?")
    check_eq(out["stdout"], "1\n", "a command finds no display to kill")
    docker("exec", "smcp-" + bid, "pkill", "-x", "Xvfb")
    time.sleep(0.5)
    st = ok_result(s.call("sandbox_status", {"id": bid}), "status")
    check_eq(st["boxd"], {"display": "down", "engine": "up"},
             "the display killed reads down")
    docker("exec", "smcp-" + bid, "pkill", "-f", "podman system service")
    time.sleep(0.5)
    st = ok_result(s.call("sandbox_status", {"id": bid}), "status")
    check_eq(st["boxd"], {"display": "down", "engine": "down"},
             "the engine killed reads down")

    ok_result(s.call("sandbox_stop", {"id": bid}, timeout=120), "stop")
    s.close_stdin()
    check_eq(s.wait_exit(30), 0, "the server ends")


if __name__ == "__main__":
    main(test)
