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
# - scope a workspace session: its disk samples, taken every 10 s by the
#   one sampling process, and a last one taken now, with deltas;
#   snapshot shows the latest as the session's upper_bytes; an unknown
#   session is not_found, a malformed scope invalid_request.

import json
import os
import time

from lib import (IMAGE, check, check_eq, cleanup, err_result, fail, main,
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
    check_eq(v["series"][-1]["metrics"],
             {"metrics_source": "workspace_disk", "upper_bytes": 7000},
             "the last sample, taken now: its changes' bytes")

    # The sampler measures it too, every 10 s, into resources.ndjson.
    def disk_samples():
        out = []
        with open(path) as f:
            for line in f:
                rec = json.loads(line)
                if rec["scope"] == w:
                    out.append(rec)
        return out

    def wait_sample(nbytes):
        end = time.time() + 30
        while time.time() < end:
            got = [r for r in disk_samples()
                   if r["metrics"]["upper_bytes"] == nbytes]
            if got:
                return got[-1]
            time.sleep(0.2)
        fail("no disk sample of %d bytes: %r" % (nbytes, disk_samples()))

    first = wait_sample(7000)
    check_eq(first["metrics"], {"metrics_source": "workspace_disk",
                                "upper_bytes": 7000}, "a disk sample")
    ok_result(run.call("exec_command", {
        "sandbox_id": sid, "workspace_session_id": w,
        "cmd": "head -c 3000 /dev/zero >> f"}), "a longer file")
    second = wait_sample(10000)
    ts = [r["ts"] for r in disk_samples()]
    check(all(b - a >= 5000 for a, b in zip(ts, ts[1:])),
          "one process measures the session, every 10 s: %r" % ts)
    v = ok_result(obs.call("cgroup", {"sandbox_id": sid, "scope": w}),
                  "the session's samples")
    series = v["series"]
    check(len(series) >= 3, "the sampler's samples and now's: %r" % series)
    logged = {r["ts"]: r["metrics"] for r in disk_samples()}
    for x in series[:-1]:
        check_eq(x["metrics"], logged.get(x["ts"]), "a sampler's sample")
    check_eq([x["ts"] for x in series], sorted(x["ts"] for x in series),
             "oldest first")
    check_eq(series[-1]["metrics"]["upper_bytes"], 10000, "now's sample")
    check_eq(series[-1]["deltas"], {"upper_bytes": 0},
             "no change since the sampler's last")
    check_eq(series[-2]["deltas"]["upper_bytes"],
             10000 - series[-3]["metrics"]["upper_bytes"],
             "the sampler's samples have deltas")
    snap = ok_result(obs.call("snapshot", {"sandbox_id": sid}), "snapshot")
    mine = [x for x in snap["workspaces"]
            if x["workspace_session_id"] == w]
    check_eq(len(mine), 1, "the session is in the snapshot")
    check_eq(mine[0]["upper_bytes"], 10000, "its latest disk sample")
    check(snap["resources"]["latest"]["scope"] == "sandbox",
          "the container's latest sample is not a disk sample")


main(test)
