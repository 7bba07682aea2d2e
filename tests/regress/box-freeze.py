#!/usr/bin/env python3
# Frozen boxes (boxes.md): a box with no tool call for box-freeze-after,
# and nothing running in it, is paused by the Engine; any tool call
# thaws it first and says so (thawed: true); a box is never frozen
# while a command of it runs; a frozen box outlives a server killed
# with -9 and is thawed by the next call to the new one; sandbox_stop
# takes one down as it is.

import json
import signal
import time

from lib import (Server, box_server, check, check_eq, docker, main, ok_result,
                 wait_for)

CONF = "limit box-freeze-after 2\n"


def paused(bid):
    return json.loads(docker("inspect", "smcp-" + bid))[0]["State"][
        "Paused"]


def test():
    s = box_server(CONF)
    state = s.state
    bid = ok_result(s.call("sandbox_start", {"services": []}, timeout=180),
                    "start")["id"]

    def ex(cmd, server=None, **kw):
        a = {"id": bid, "cmd": cmd}
        a.update(kw)
        return ok_result((server or s).call("sandbox_exec", a,
                                            timeout=120), cmd[:30])

    # Not while a command runs (a background one here).
    bg = ex("sleep 5", background=True)
    time.sleep(4)
    check(not paused(bid), "not frozen while a command runs")
    wait_for("the box to freeze after its command", lambda: paused(bid),
             15)
    out = ex("echo hi")
    check_eq((out["stdout"], out.get("thawed")), ("hi\n", True),
             "a call thaws it first and says so")
    check(not paused(bid), "thawed")
    out = ex("echo again")
    check("thawed" not in out, "a call on a running box says nothing")
    jobs = ok_result(s.call("sandbox_procs", {"id": bid}), "procs")["jobs"]
    check_eq([(j["bgId"], j["exitCode"]) for j in jobs],
             [(bg["bgId"], 0)], "the job ended well, frozen or not")

    # Status thaws too; a frozen box outlives the server.
    wait_for("the box to freeze again", lambda: paused(bid), 15)
    st = ok_result(s.call("sandbox_status", {"id": bid}), "status")
    check_eq((st["state"], st.get("thawed")), ("ready", True),
             "status thaws it")
    wait_for("the box to freeze once more", lambda: paused(bid), 15)
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait()
    s2 = Server(sets=("boxes",), config=CONF, state=state)
    s2.initialize()
    check(paused(bid), "still frozen with no server")
    out = ex("cat /proc/uptime >/dev/null; echo back", server=s2)
    check_eq((out["stdout"], out.get("thawed")), ("back\n", True),
             "the new server takes it back frozen and thaws it")

    # Stopped while frozen: taken down as it is.
    wait_for("a last freeze", lambda: paused(bid), 15)
    ok_result(s2.call("sandbox_stop", {"id": bid}, timeout=60), "stop")
    st = ok_result(s2.call("sandbox_status", {"id": bid}), "status")
    check_eq(st["state"], "terminated", "terminated")
    check_eq(docker("ps", "-aq", "--filter", "name=smcp-" + bid), "",
             "its container is gone")
    s2.close_stdin()
    check_eq(s2.wait_exit(30), 0, "the server ends")


if __name__ == "__main__":
    main(test)
