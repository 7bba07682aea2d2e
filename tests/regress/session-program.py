#!/usr/bin/env python3
# The zygote and the session inits run the zygote program (a small static
# program the server keeps in a sealed memfd), not a fork of the server:
# they map none of the server's libraries, hold none of its memory and
# none of its descriptors.
# A distinctive string of the server's configuration (the name of its
# workspace root) is found in the server's memory, and in neither the
# zygote's nor a session init's, so a command that could read its init
# (it cannot: see runtime-escape) would still find nothing of the
# server's there. Commands run as before.

import os
import secrets

from lib import (IMAGE, Server, check, check_eq, children_named, cleanup,
                 main, ok_result, remove_our_containers, tmpdir)

SERVER_LIBS = ("libgit2", "libarchive", "libcrypto", "libevent", "libcjson")


def exe(pid):
    return os.readlink("/proc/%d/exe" % pid)


def fds(pid):
    return sorted(int(fd) for fd in os.listdir("/proc/%d/fd" % pid))


def maps(pid):
    with open("/proc/%d/maps" % pid) as f:
        return f.read()


def holds(pid, needle):
    """Whether needle is in any readable private mapping of pid."""
    found = False
    with open("/proc/%d/mem" % pid, "rb", 0) as mem:
        for line in maps(pid).splitlines():
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            if not f[1].startswith("r") or hi - lo > 256 << 20 or \
                    (len(f) > 5 and f[5].startswith("[v")):
                continue
            try:
                mem.seek(lo)
                if needle in mem.read(hi - lo):
                    found = True
                    break
            except OSError:
                continue
    return found


def test():
    mark = "smcp-root-" + secrets.token_hex(12)
    roots = os.path.join(tmpdir(), mark)
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots)
    cleanup(lambda: remove_our_containers(s.state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]
    r = ok_result(s.call("exec_command", {"sandbox_id": sid,
                                          "cmd": "echo hi; sleep 30",
                                          "yield_time_ms": 300}),
                  "a command left running")
    check_eq(r["status"], "running", "the command runs")
    server = s.proc.pid
    needle = mark.encode()
    check(holds(server, needle), "the server's memory holds its"
          " configuration (the test can see it)")

    zygotes = children_named(server, "sandbox-mcp: zy")
    inits = children_named(server, "sandbox-mcp: se")
    check_eq(len(zygotes), 1, "one zygote")
    check(len(inits) >= 1, "a session init: %r" % inits)
    # Nothing of the job's or the program's own goes on: the zygote
    # keeps the state directory, its socket and the container's mount
    # namespace; an init, its control socket.
    check_eq(fds(zygotes[0]), [0, 1, 2, 4, 5, 6], "the zygote's descriptors")
    for p in inits:
        check_eq(fds(p), [0, 1, 2, 3], "an init's descriptors")
    for what, pid in [("zygote", zygotes[0])] + [("init", p) for p in inits]:
        check(exe(pid).startswith("/memfd:sandbox-mcp-nsexec"),
              "the %s runs the zygote program: %s" % (what, exe(pid)))
        m = maps(pid)
        for lib in SERVER_LIBS:
            check(lib not in m, "the %s maps no %s" % (what, lib))
        check(len(m.splitlines()) < 40, "the %s has few mappings: %d" % (
            what, len(m.splitlines())))
        check(not holds(pid, needle), "the %s holds nothing of the"
              " server's configuration" % what)

    ok_result(s.call("write_command_stdin", {
        "sandbox_id": sid, "command_session_id": r["command_session_id"],
        "stdin": "\u0003", "yield_time_ms": 10000}), "Ctrl-C")
    r = ok_result(s.call("exec_command", {"sandbox_id": sid,
                                          "cmd": "echo $$; cat /proc/1/comm",
                                          "yield_time_ms": 10000}), "exec")
    check_eq(r["output"], "2\nsandbox-mcp: se\n",
             "a command is process 2 of its session, under the init")
    ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}), "destroy")


if __name__ == "__main__":
    main(test)
