#!/usr/bin/env python3
# Boxes and tenants (boxes.md): a tenant's plan caps the boxes it runs at
# once (free: 3, then server_busy naming the cap); another tenant's box
# answers exactly as an unknown one; a tenant with no plan runs none.
# Boxes outlive the server: killed with -9 and started again, it takes
# back the boxes whose containers run and marks interrupted the one whose
# container was removed meanwhile; a container killed by hand while the
# server runs makes its box interrupted, with the reason, and leaves
# nothing behind. idleTimeoutMin stops a box that gets no tool call.
# Secrets: set over REST, listed by name only, given to the commands of
# a box that names them, never shown, stored encrypted, one tenant's.

import json
import os
import secrets
import signal
import time

from lib import (Peer, Server, box_server, check, check_eq, check_in, docker,
                 err_result, keygen, main, mounts_under, wait_for)


def test():
    key_a, line_a = keygen("alice", "boxes")
    key_b, line_b = keygen("bob", "boxes")
    key_c, line_c = keygen("carol", "boxes")
    conf = ("%s\n%s\n%s\ntenant alice plan free\ntenant bob plan pro\n"
            % (line_a, line_b, line_c))
    m = box_server(conf, listen="127.0.0.1:0")
    state = m.state
    a = Peer(m.port, key_a, "alice")
    b = Peer(m.port, key_b, "bob")
    c = Peer(m.port, key_c, "carol")

    e = err_result(c.call("sandbox_start", {"services": []}),
                   "operation_failed", "a tenant with no plan")
    check_in("tenant carol has no plan", e["message"], "why")

    # REST: the list, and what needs the outside world.
    st, r = a.rest("GET", "/v1/boxes")
    check_eq((st, r), (200, {"boxes": []}), "GET /v1/boxes, none yet")
    for path in ("/v1/auth/github", "/v1/billing/checkout",
                 "/v1/billing/portal", "/v1/billing/webhook"):
        st, r = a.rest("POST", path)
        check_eq(st, 501, path + ": 501")
        check_in("not configured", r["error"]["message"], path + ": why")

    # Secrets: alice's, set over REST; names only, ever.
    value = "s3cret-" + secrets.token_hex(8)
    st, r = a.rest("PUT", "/v1/secrets/API_TOKEN", {"value": value})
    check_eq((st, r), (200, {"name": "API_TOKEN"}), "PUT a secret")
    st, r = a.rest("PUT", "/v1/secrets/9BAD", {"value": "x"})
    check_eq((st, r["error"]["kind"]), (400, "invalid_request"),
             "a bad secret name")
    check_eq(a.rest("GET", "/v1/secrets"), (200, {"secrets":
                                                  ["API_TOKEN"]}),
             "GET /v1/secrets: names")
    check_eq(a.ok("sandbox_secrets", {}), {"secrets": ["API_TOKEN"]},
             "sandbox_secrets: names")
    check_eq(b.ok("sandbox_secrets", {}), {"secrets": []},
             "bob sees none of alice's")
    e = err_result(b.call("sandbox_start", {"services": [],
                                            "secrets": ["API_TOKEN"]}),
                   "invalid_request", "bob names alice's secret")
    check_in("API_TOKEN", e["message"], "the secret named")
    with open(os.path.join(state, "store.db"), "rb") as f:
        check(value.encode() not in f.read(), "stored encrypted")

    boxes = [a.ok("sandbox_start", {"services": [],
                                    "secrets": ["API_TOKEN"]})["id"]]
    boxes += [a.ok("sandbox_start", {"services": []})["id"]
              for _ in range(2)]
    st, r = a.rest("GET", "/v1/boxes")
    check_eq(sorted(x["id"] for x in r["boxes"]), sorted(boxes),
             "GET /v1/boxes: alice's three")
    check_eq(b.rest("GET", "/v1/boxes"), (200, {"boxes": []}),
             "bob's list has none of them")
    out = a.ok("sandbox_exec", {"id": boxes[0],
                                "cmd": "printf %s \"$API_TOKEN\""})
    check_eq(out["stdout"], value, "the secret in the command's env")
    out = a.ok("sandbox_exec", {"id": boxes[1],
                                "cmd": "printf %s \"$API_TOKEN\""})
    check_eq(out["stdout"], "", "not in a box that did not name it")
    e = err_result(a.call("sandbox_start", {"services": []}),
                   "server_busy", "a fourth box on the free plan")
    check_eq((e["details"].get("limit"), e["details"].get("plan")),
             (3, "free"), "the cap and the plan named")
    check_eq(len(docker("ps", "-q", "--filter",
                        "label=io.sandbox-mcp.tenant=alice").split()), 3,
             "three containers, not four")

    # Another tenant's box is an unknown one, to every tool.
    fake = "box-" + secrets.token_hex(6)
    for tool, args in [("sandbox_status", {}), ("sandbox_stop", {}),
                       ("sandbox_exec", {"cmd": "id"})]:
        got = b.call(tool, dict(args, id=boxes[0]))
        want = b.call(tool, dict(args, id=fake))
        check_eq(json.loads(json.dumps(got["structuredContent"]).replace(
            boxes[0], fake)), want["structuredContent"],
            "bob's %s on alice's box answers as on an unknown one" % tool)
        check_eq(got["structuredContent"]["error"]["kind"], "not_found",
                 "bob: not_found")
    check_eq(a.ok("sandbox_status", {"id": boxes[0]})["state"], "ready",
             "alice's box is untouched")

    # A stopped box frees its place under the cap.
    a.ok("sandbox_stop", {"id": boxes[2]})
    boxes[2] = a.ok("sandbox_start", {"services": [],
                                      "idleTimeoutMin": 1})["id"]
    out = a.ok("sandbox_exec", {"id": boxes[0], "cmd": "echo hi > f"})
    check_eq(out["exitCode"], 0, "a file in alice's first box")

    # Killed with -9; one box's container removed meanwhile.
    m.proc.send_signal(signal.SIGKILL)
    m.proc.wait()
    docker("rm", "-f", "smcp-" + boxes[1])
    m2 = Server(sets=("boxes",), config=conf, listen="127.0.0.1:0",
                state=state)
    m2.initialize()
    a = Peer(m2.port, key_a, "alice again")
    check_eq(a.ok("sandbox_status", {"id": boxes[0]})["state"], "ready",
             "a box whose container runs is taken back")
    out = a.ok("sandbox_exec", {"id": boxes[0], "cmd": "cat f"})
    check_eq(out["stdout"], "hi\n", "its files are there")
    st = a.ok("sandbox_status", {"id": boxes[1]})
    check_eq(st["state"], "interrupted", "the one whose container is gone")
    check_in("gone", st["interrupted"], "why: %r" % st)
    e = err_result(a.call("sandbox_exec", {"id": boxes[1], "cmd": "true"}),
                   "conflict", "exec on an interrupted box")
    check_in("interrupted", e["message"], "the state named")
    wait_for("the interrupted box's disk to go", lambda: os.path.join(
        state, "boxes", boxes[1]) not in mounts_under(state), 30)

    # Killed by hand while the server runs: interrupted, with the reason.
    docker("kill", "smcp-" + boxes[0])

    def lost():
        st = a.ok("sandbox_status", {"id": boxes[0]})
        return st if st["state"] == "interrupted" else None
    st = wait_for("the killed box to read interrupted", lost, 30)
    check_in("outside sandbox-mcp", st["interrupted"], "why: %r" % st)
    wait_for("the killed box's container to go", lambda: docker(
        "ps", "-aq", "--filter", "name=smcp-" + boxes[0]) == "", 30)

    # idleTimeoutMin 1: no tool call on it for a minute stops it.
    name = "smcp-" + boxes[2]
    wait_for("the idle box to stop", lambda: docker(
        "ps", "-aq", "--filter", "name=" + name) == "", 100)
    # (A connection idle that long is closed by the server.)
    a = Peer(m2.port, key_a, "alice after a minute")
    st = wait_for("the idle box to be terminated", lambda: (lambda st: st if
                  st["state"] == "terminated" else None)(a.ok(
                      "sandbox_status", {"id": boxes[2]})), 30)
    check_eq(st["reason"], "idle_timeout", "stopped for idleness")
    wait_for("no box disk left", lambda: [
        p for p in mounts_under(state) if "/boxes/" in p] == [], 30)
    st, r = a.rest("DELETE", "/v1/secrets/API_TOKEN")
    check_eq((st, r), (200, {"name": "API_TOKEN", "removed": True}),
             "DELETE a secret")
    st, r = a.rest("DELETE", "/v1/secrets/API_TOKEN")
    check_eq((st, r["error"]["kind"]), (404, "not_found"),
             "DELETE it again")
    logs = [m.stderr_path, m2.stderr_path]
    for top, _, files in os.walk(os.path.join(state, "telemetry")):
        logs += [os.path.join(top, f) for f in files]
    for log in logs:
        with open(log, "rb") as f:
            check(value.encode() not in f.read(),
                  "the value is in no log: %s" % log)


if __name__ == "__main__":
    main(test)
