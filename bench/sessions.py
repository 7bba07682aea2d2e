#!/usr/bin/env python3
# bench/sessions.py: what a managed workspace session costs, per network
# profile.  See bench/README ("sessions").  Python 3 standard library
# only.
#
#   python3 bench/sessions.py [--image IMAGE] [--runs N] [--tmpdir DIR]
#
# Starts sandbox-mcp and one sandbox as bench/exec.py does, then, 5
# untimed rounds first, N rounds of: create_workspace_session (shared or
# isolated, in shuffled order), exec_command "true" in it, and
# destroy_workspace_session, each call timed from its request's write to
# its answer.  create_workspace_session answers once the builder has made
# the session and its init is up: for an isolated session, that includes
# its own root (an overlay per writable mount of the container, the other
# mounts copied, pivot_root).  Prints the median and p95 of each call per
# profile.  Not part of make bench; no targets.

import argparse
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True      # no __pycache__ in the source tree

import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "bench_exec", os.path.join(HERE, "exec.py"))
bx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bx)

from lifecycle import cleanup, p95  # noqa: E402

PROFILES = ("shared", "isolated")
CALLS = ("create", "exec", "destroy")


def round_trip(b, profile):
    """One session's life: the time of each call, in ms."""
    r, tc = b.server.call("create_workspace_session", {
        "sandbox_id": b.sid, "network_profile": profile})
    ws = r["workspace_session_id"]
    r, te = b.server.call("exec_command", {
        "sandbox_id": b.sid, "cmd": "true", "workspace_session_id": ws,
        "yield_time_ms": 60000})
    if r.get("status") != "ok":
        raise bx.BenchError("exec_command true: %s" % r)
    r, td = b.server.call("destroy_workspace_session", {
        "sandbox_id": b.sid, "workspace_session_id": ws})
    return {"create": tc, "exec": te, "destroy": td}


def main():
    ap = argparse.ArgumentParser(description="workspace session cost")
    ap.add_argument("--image", default="sandbox-mcp/busybox:test")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--tmpdir", default=None)
    opt = ap.parse_args()
    bopt = argparse.Namespace(images=[opt.image], files=20, seed=1,
                              keep=False, tmpdir=opt.tmpdir, pause=0.0,
                              runs=1, docker=1, conc=1, rounds=1, writes=1,
                              running=1, warmup=1, session_pool=None)
    b = bx.Bench(bopt)
    b.log_name = "sessions-server.log"
    rng = random.Random(1)
    samples = {p: {c: [] for c in CALLS} for p in PROFILES}
    try:
        b.setup()
        res, _ = b.server.call("create_sandbox", {
            "image": opt.image, "workspace_root": b.ws})
        b.sid = res["id"]
        for _ in range(5):
            for p in PROFILES:
                round_trip(b, p)
        for _ in range(opt.runs):
            order = list(PROFILES)
            rng.shuffle(order)
            for p in order:
                for c, t in round_trip(b, p).items():
                    samples[p][c].append(t)
    finally:
        cleanup(b, bx.say)
    print("sessions: %s, %d rounds, state directory on %s" % (
        opt.image, opt.runs, b.state_fs))
    print("  %-28s %9s %9s" % ("call, in ms", "median", "p95"))
    for p in PROFILES:
        for c in CALLS:
            xs = samples[p][c]
            print("  %-28s %9.2f %9.2f" % ("%s %s" % (p, c),
                                            statistics.median(xs), p95(xs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
