#!/usr/bin/env python3
# bench/boxes.py: boxes against plain Docker, in the same run.  See
# bench/README ("boxes").  Python 3 standard library only.
#
#   python3 bench/boxes.py [--runs N] [--execs N]
#
# One sandbox-mcp process (--set boxes over stdio, tenant local, plan
# max) and, interleaved round by round:
#
#   sandbox_start, cold (no spare boxes are kept): the call's time, to
#     ready (display and engine up)
#   docker run -d of the same image (the CLI, timed end to end), then
#     docker rm -f
#   sandbox_exec true, one after another, in one ready box
#   docker exec CONTAINER true (the CLI) in a plain container of the
#     same image
#   sandbox_stop
#
# and, once: the memory of an idle box (its control group's usage, the
# display and the engine running), and of the server.
#
# Targets (boxes issue): median cold start <= 5 s; median sandbox_exec
# true <= 10 ms.  Results are printed; exit status 0 when every target
# is met.  Every container of the run is removed at the end.

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from lifecycle import BenchError, Server  # noqa: E402

IMAGE = "sandbox-mcp/box:bookworm"
TARGET_START_MS = 5000
TARGET_EXEC_MS = 10


def ms(t0, t1):
    return (t1 - t0) * 1000.0


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def cli(*args):
    r = subprocess.run(["docker"] + list(args), capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise BenchError("docker %s: %s" % (" ".join(args), r.stderr))
    return r.stdout.strip()


class Client(Server):
    def call(self, name, args, timeout=300):
        t0 = time.perf_counter()
        msg, _ = self.request("tools/call", {"name": name,
                                             "arguments": args}, timeout)
        t1 = time.perf_counter()
        res = msg.get("result", {})
        if res.get("isError") or "structuredContent" not in res:
            raise BenchError("%s: %r" % (name, msg))
        return res["structuredContent"], ms(t0, t1)


def cgroup_mem(cid):
    for p in ("/sys/fs/cgroup/memory/docker/%s/memory.usage_in_bytes" % cid,
              "/sys/fs/cgroup/system.slice/docker-%s.scope/memory.current"
              % cid):
        if os.path.exists(p):
            with open(p) as f:
                return int(f.read()) / 1048576.0
    return float("nan")


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--execs", type=int, default=100)
    o = ap.parse_args()
    binary = os.path.join(os.environ.get("SANDBOX_MCP_BUILDDIR",
                                         os.path.dirname(HERE)),
                          "sandbox-mcp")
    tmp = tempfile.mkdtemp(prefix="sandbox-mcp-boxes.")
    state = os.path.join(tmp, "state")
    log = os.path.join(tmp, "server.log")
    s = Client([binary, "--set", "boxes", "-f", "/dev/null",
                "--state-dir", state], log)
    plain = []
    samples = {"start": [], "run": [], "exec": [], "dexec": [],
               "stop": []}
    mem = {}
    try:
        msg, _ = s.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench-boxes", "version": "1"}})
        s.notify("notifications/initialized")
        for i in range(o.runs):
            r, t = s.call("sandbox_start", {"services": []})
            samples["start"].append(t)
            bid = r["id"]
            t0 = time.perf_counter()
            c = cli("run", "-d", "--label", "io.sandbox-mcp.state-dir=" +
                    state, IMAGE, "sleep", "infinity")
            samples["run"].append(ms(t0, time.perf_counter()))
            plain.append(c)
            if i == 0:
                # Idle: the display and the engine up, nothing asked.
                time.sleep(2)
                cid = cli("inspect", "-f", "{{.Id}}", "smcp-" + bid)
                mem["box_mib"] = cgroup_mem(cid)
                mem["server_mib"] = rss(s.proc.pid)
                for _ in range(10):
                    s.call("sandbox_exec", {"id": bid, "cmd": "true"})
                for _ in range(o.execs):
                    _, t = s.call("sandbox_exec", {"id": bid,
                                                   "cmd": "true"})
                    samples["exec"].append(t)
                    t0 = time.perf_counter()
                    cli("exec", c, "true")
                    samples["dexec"].append(ms(t0, time.perf_counter()))
            _, t = s.call("sandbox_stop", {"id": bid})
            samples["stop"].append(t)
            cli("rm", "-f", c)
            plain.remove(c)
    finally:
        for c in plain:
            subprocess.run(["docker", "rm", "-f", c], capture_output=True)
        s.stop()
    rows = [("sandbox_start (cold, to ready)", "start"),
            ("  docker run -d (CLI)", "run"),
            ("sandbox_exec true", "exec"),
            ("  docker exec true (CLI)", "dexec"),
            ("sandbox_stop", "stop")]
    print("boxes: %s, %d starts, %d execs; ms: median / p95" % (
        IMAGE, o.runs, o.execs))
    for label, k in rows:
        print("  %-34s %9.1f %9.1f  (n=%d)" % (label, med(samples[k]),
                                              pct(samples[k], 0.95),
                                              len(samples[k])))
    print("  start / docker run: %.2fx; exec / docker exec: %.3fx" % (
        med(samples["start"]) / med(samples["run"]),
        med(samples["exec"]) / med(samples["dexec"])))
    print("  idle box (its cgroup): %.1f MiB; server RSS %.1f MiB" % (
        mem.get("box_mib", float("nan")), mem.get("server_mib",
                                                  float("nan"))))
    ok = True
    for desc, good in (
            ("median cold start <= %d ms (%.0f ms)" % (
                TARGET_START_MS, med(samples["start"])),
             med(samples["start"]) <= TARGET_START_MS),
            ("median sandbox_exec true <= %d ms (%.1f ms)" % (
                TARGET_EXEC_MS, med(samples["exec"])),
             med(samples["exec"]) <= TARGET_EXEC_MS)):
        print("  %s  %s" % ("PASS" if good else "FAIL", desc))
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print("boxes: %s" % e, file=sys.stderr)
        sys.exit(2)
