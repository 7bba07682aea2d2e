#!/usr/bin/env python3
# Usage and credits (boxes.md): a box's start and each command are
# metered calls, priced by the configuration, recorded as usage events
# with the spec's fields (GET /v1/usage, filtered); a tenant whose
# credits run out has its boxes stopped (credits_exhausted) and its
# starts refused; sandbox-mcp credits TENANT +N grants more to a server
# that runs (GET /v1/credits shows it at once); a tenant with no credit
# limit is only recorded.

import subprocess

from lib import (BIN, Peer, box_server, check_eq, check_in, err_result, keygen,
                 main, wait_for)


def get(peer, path):
    st, r = peer.rest("GET", path)
    check_eq(st, 200, "GET " + path)
    return r


def test():
    key_a, line_a = keygen("acme", "boxes")
    key_f, line_f = keygen("free", "boxes")
    conf = ("%s\n%s\ntenant acme plan pro credits 3\ntenant free plan pro\n"
            "price box-minute 1 usd 0.5\nprice call 1 usd 0.01\n"
            % (line_a, line_f))
    s = box_server(conf, listen="127.0.0.1:0")
    state = s.state
    a = Peer(s.port, key_a, "acme")
    f = Peer(s.port, key_f, "free")
    check_eq(get(a, "/v1/credits")["balance"], 3, "acme starts with 3")
    check_eq(get(f, "/v1/credits")["balance"], None, "free: no limit")

    bid = a.ok("sandbox_start", {"services": []})["id"]
    check_eq(get(a, "/v1/credits")["balance"], 2, "the start cost 1")
    out = a.ok("sandbox_exec", {"id": bid, "cmd": "echo one"})
    check_eq(out["stdout"], "one\n", "a first command")
    out = a.ok("sandbox_exec", {"id": bid, "cmd": "echo two"})
    check_eq(out["stdout"], "two\n", "the last paid command runs whole")

    def ended():
        st = a.ok("sandbox_status", {"id": bid})
        return st if st["state"] == "terminated" else None
    st = wait_for("the box to stop on no credits", ended, 30)
    check_eq(st["reason"], "credits_exhausted", "why it stopped")
    check_eq(get(a, "/v1/credits")["balance"], 0, "none left")
    e = err_result(a.call("sandbox_start", {"services": []}),
                   "operation_failed", "a start with no credits")
    check_in("no credits left", e["message"], "why")
    check_in("sandbox-mcp credits acme", e["message"], "what to do")

    usage = get(a, "/v1/usage")["usage"]
    check_eq([(u["kind"], u["box"], u["credits"], u["unit"])
              for u in usage], [("call", bid, 1, "call")] * 3,
             "three metered calls, newest first")
    u = usage[0]
    check_eq(sorted(u), ["at", "box", "cost_usd", "credits", "kind",
                         "quantity", "tenant", "unit"], "the fields")
    check_eq((u["tenant"], u["cost_usd"], u["quantity"]),
             ("acme", 0.01, 1), "tenant, dollars, quantity")
    check_eq(get(a, "/v1/usage?kind=box_minute")["usage"], [],
             "no minute yet")
    check_eq(len(get(a, "/v1/usage?limit=2")["usage"]), 2, "limit")

    # Granted from the shell, to the running server.
    conf_path = s.conf
    r = subprocess.run([BIN, "credits", "-f", conf_path, "--state-dir",
                        state, "acme", "+5"], capture_output=True,
                       text=True, timeout=30)
    check_eq((r.returncode, r.stdout), (0, "tenant acme: 5 credits left\n"),
             "credits +5: %r" % r.stderr)
    check_eq(get(a, "/v1/credits")["balance"], 5, "seen at once")
    bid2 = a.ok("sandbox_start", {"services": []})["id"]
    check_eq(a.ok("sandbox_status", {"id": bid2})["state"], "ready",
             "a start again")
    r = subprocess.run([BIN, "credits", "-f", conf_path, "--state-dir",
                        state, "free", "+5"], capture_output=True,
                       text=True, timeout=30)
    check_eq(r.returncode, 1, "no grant to a tenant without a limit")
    check_in("no credit limit", r.stderr, "why")
    r = subprocess.run([BIN, "credits", "acme", "five"],
                       capture_output=True, text=True, timeout=30)
    check_eq(r.returncode, 2, "credits: a bad amount")

    # No limit: recorded, never stopped.
    fid = f.ok("sandbox_start", {"services": []})["id"]
    for i in range(3):
        f.ok("sandbox_exec", {"id": fid, "cmd": "true"})
    check_eq(f.ok("sandbox_status", {"id": fid})["state"], "ready",
             "free runs on")
    check_eq(len(get(f, "/v1/usage")["usage"]), 4, "its calls recorded")
    check_eq(get(a, "/v1/usage?box=" + fid)["usage"], [],
             "acme sees none of free's")
    for p, b in ((a, bid2), (f, fid)):
        p.ok("sandbox_stop", {"id": b})


if __name__ == "__main__":
    main(test)
