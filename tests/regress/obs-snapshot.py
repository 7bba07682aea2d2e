#!/usr/bin/env python3
# The observability set's snapshot tool, against the real Docker Engine,
# from a separate --set observability process on the state directory a
# runtime process works in:
# - one sandbox: ready, available, no errors, its container's init pid
#   on the host (as the Engine says) and its state directory, its latest
#   resource sample and those of the last minute, its live sessions (a
#   managed one with a running command, the automatic one of a command
#   left running; no spare built ahead), its stack as the manifest says;
# - every ready sandbox at once: a sandbox whose container was killed by
#   hand is unavailable (or, once the runtime process has seen it fail,
#   no longer ready and left out) while the others are available;
# - an unknown sandbox is not_found; over HTTP another tenant's key sees
#   none of them.

import json
import os
import time

from lib import (IMAGE, check, check_eq, cleanup, docker, err_result, Http,
                 http_json, keygen, main, ok_result, remove_our_containers,
                 Server, tmpdir)


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    state = os.path.join(top, "state")
    key, line = keygen("other", "observability")
    conf = "workspace-root %s\n" % top
    run = Server(sets=("management", "runtime"), state=state, config=conf)
    cleanup(lambda: remove_our_containers(state))
    run.initialize()
    sids = [ok_result(run.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}), "create")["id"]
        for _ in range(3)]
    a, b, c = sids
    ok_result(run.call("exec_command", {"sandbox_id": a,
                                        "cmd": "echo x > x"}), "publish")
    w = ok_result(run.call("create_workspace_session", {
        "sandbox_id": a}), "session")["workspace_session_id"]
    r = ok_result(run.call("exec_command", {
        "sandbox_id": a, "workspace_session_id": w, "cmd": "sleep 60",
        "yield_time_ms": 100}), "a command in the session")
    check_eq(r["status"], "running", "it runs")
    r = ok_result(run.call("exec_command", {
        "sandbox_id": a, "cmd": "sleep 60", "yield_time_ms": 100}),
        "an automatic command")
    auto = r["workspace_session_id"]
    time.sleep(2.5)		# a resource sample or two

    obs = Server(sets=("observability",), state=state,
                 config=conf + line + "\n", listen="127.0.0.1:0")
    obs.initialize()
    n = ok_result(obs.call("snapshot", {"sandbox_id": a}), "snapshot")
    check_eq((n["sandbox_id"], n["lifecycle_state"], n["availability"],
              n["errors"]), (a, "ready", "available", []), "the node")
    check(abs(n["sampled_at_unix_ms"] - time.time() * 1000) < 60000,
          "when it was taken")
    rec = json.load(open(os.path.join(state, "sandboxes", a + ".json")))
    pid = int(docker("inspect", "-f", "{{.State.Pid}}",
                     rec["container_id"]).strip())
    check_eq(n["daemon"], {"daemon_pid": pid,
                           "runtime_dir": os.path.join(state, "sandboxes",
                                                       a)},
             "the daemon")
    latest = n["resources"]["latest"]
    check(latest is not None and
          latest["metrics"]["metrics_source"] == "docker_engine",
          "the latest sample: %r" % n["resources"])
    check(n["resources"]["history"], "the last minute's samples")
    got = {x["workspace_session_id"]: x for x in n["workspaces"]}
    check_eq(sorted(got), sorted([w, auto]),
             "the live sessions, no spare")
    check_eq((got[w]["automatic"], got[w]["commands_running"],
              got[w]["network_profile"]), (False, 1, "shared"),
             "the managed session")
    check_eq((got[auto]["automatic"], got[auto]["commands_running"]),
             (True, 1), "the automatic session")
    manifest = json.load(open(os.path.join(state, "sandboxes", a, "stack",
                                           "manifest.json")))
    check_eq(n["stack"]["layer_count"], len(manifest["layers"]),
             "the stack's layers")
    check(n["stack"]["layers_bytes"] > 0, "its bytes")
    check(n["stack"]["active_leases"] >= 2, "its leases")

    # Every ready sandbox at once, with one container killed by hand.
    rec_b = json.load(open(os.path.join(state, "sandboxes", b + ".json")))
    docker("kill", rec_b["container_id"])
    agg = ok_result(obs.call("snapshot", {}), "the aggregate")
    nodes = {x["sandbox_id"]: x for x in agg["sandboxes"]}
    check(a in nodes and c in nodes, "the others are there: %r"
          % sorted(nodes))
    check_eq((nodes[a]["availability"], nodes[c]["availability"]),
             ("available", "available"), "the others are available")
    if b in nodes:
        check_eq(nodes[b]["availability"], "unavailable",
                 "the killed one: %r" % nodes[b])
        check(nodes[b]["errors"], "it says why")
    nb = ok_result(obs.call("snapshot", {"sandbox_id": b}), "the killed")
    check_eq(nb["availability"], "unavailable", "the killed one alone")
    check(nb["errors"], "why: %r" % nb)

    err_result(obs.call("snapshot", {"sandbox_id": "sbox-000000000000"}),
               "not_found", "an unknown sandbox")
    # Another tenant's key sees none of them.
    st, h, body = Http(obs.port).request(
        "GET", "/v1/snapshot", None, {"Authorization": "Bearer " + key})
    check_eq((st, http_json(body)), (200, {"sandboxes": []}),
             "another tenant's aggregate")
    st, h, body = Http(obs.port).request(
        "GET", "/v1/sandboxes/%s/snapshot" % a, None,
        {"Authorization": "Bearer " + key})
    check_eq(st, 404, "another tenant's sandbox")


main(test)
