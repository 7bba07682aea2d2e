#!/usr/bin/env python3
# The observability set's cgroup tool and the resource sampler, against
# the real Docker Engine, from a separate --set observability process on
# the state directory two runtime processes share:
# - the container's statistics are sampled every 2 s into
#   telemetry/resources.ndjson by one process only (the two runtime
#   processes never both sample: no two samples of a sandbox closer than
#   1 s), and the observability process (which samples nothing) reads
#   them: metrics_source docker_engine, the cgroup version, the memory
#   limit of the profile;
# - while a busy loop runs the cpu counter grows, and each sample but
#   the first carries sample_delta_ms and deltas;
# - window_ms 0 holds no sample; past 600000 is invalid_request;
# - scope a workspace session: one disk sample of its changes now;
#   an unknown session is not_found, a malformed scope invalid_request.

import os
import time

from lib import (IMAGE, check, check_eq, cleanup, err_result, main,
                 ok_result, remove_our_containers, Server, tmpdir)


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    state = os.path.join(top, "state")
    conf = "workspace-root %s\n" % top
    run = Server(sets=("management", "runtime"), state=state, config=conf)
    cleanup(lambda: remove_our_containers(state))
    run.initialize()
    rec = ok_result(run.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}), "create")
    sid = rec["id"]
    mem_max = rec["resource_profile"]["memory_max"]
    # A second process doing the work on the same state directory.
    run2 = Server(sets=("runtime",), state=state, config=conf)
    run2.initialize()
    obs = Server(sets=("observability",), state=state, config=conf)
    obs.initialize()

    r = ok_result(run.call("exec_command", {
        "sandbox_id": sid, "yield_time_ms": 100, "timeout_ms": 9000,
        "cmd": "while :; do :; done"}), "a busy loop")
    check_eq(r["status"], "running", "the loop runs")
    time.sleep(7)

    v = ok_result(obs.call("cgroup", {"sandbox_id": sid}), "cgroup")
    check_eq((v["view"], v["scope"]), ("cgroup", "sandbox"), "the view")
    s = v["series"]
    check(len(s) >= 3, "samples in the window: %r" % s)
    for i, item in enumerate(s):
        m = item["metrics"]
        check_eq(m["metrics_source"], "docker_engine", "the source")
        check(m["cgroup"] in ("v1", "v2"), "the cgroup version: %r" % m)
        check_eq(m["mem_max"], mem_max, "the profile's memory limit")
        check(m["mem_cur"] > 0, "memory in use: %r" % m)
        if i == 0:
            check(item["sample_delta_ms"] is None and "deltas" not in item,
                  "the first has nothing to compare: %r" % item)
            continue
        check(1000 <= item["sample_delta_ms"] <= 6000,
              "one process samples, every 2 s: %r" % item)
        check_eq(item["deltas"]["cpu_usec"],
                 m["cpu_usec"] - s[i - 1]["metrics"]["cpu_usec"],
                 "the cpu delta")
        check(item["deltas"]["cpu_usec"] >= 0, "a counter never falls")
    busy = sum(item["deltas"]["cpu_usec"] for item in s[1:])
    span = s[-1]["ts"] - s[0]["ts"]
    check(busy > span * 1000 * 0.3,
          "the busy loop's CPU grows the counter: %d us in %d ms"
          % (busy, span))
    ts = [item["ts"] for item in s]
    check_eq(ts, sorted(ts), "oldest first")
    path = os.path.join(state, "sandboxes", sid, "telemetry",
                        "resources.ndjson")
    check(os.path.getsize(path) > 0, "the samples are on disk")

    check_eq(ok_result(obs.call("cgroup", {"sandbox_id": sid,
                                           "window_ms": 0}),
                       "window 0")["series"], [], "an empty window")
    err_result(obs.call("cgroup", {"sandbox_id": sid, "window_ms": 600001}),
               "invalid_request", "a window past 600000")
    err_result(obs.call("cgroup", {"sandbox_id": sid, "scope": "../x"}),
               "invalid_request", "a malformed scope")
    err_result(obs.call("cgroup", {"sandbox_id": sid,
                                   "scope": "ws-000000000000"}),
               "not_found", "an unknown session")

    # A workspace session's disk, sampled now.
    w = ok_result(run.call("create_workspace_session", {
        "sandbox_id": sid}), "session")["workspace_session_id"]
    ok_result(run.call("exec_command", {
        "sandbox_id": sid, "workspace_session_id": w,
        "cmd": "head -c 7000 /dev/zero > f"}), "a file")
    v = ok_result(obs.call("cgroup", {"sandbox_id": sid, "scope": w}),
                  "the session's scope")
    check_eq(v["scope"], w, "its scope")
    check_eq(len(v["series"]), 1, "one sample")
    check_eq(v["series"][0]["metrics"],
             {"metrics_source": "workspace_disk", "upper_bytes": 7000},
             "its changes' bytes")


main(test)
