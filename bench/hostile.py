#!/usr/bin/env python3
# bench/hostile.py: the sandbox boundary and the server's resources under
# an attacking agent, measured.  See bench/README ("hostile").  Python 3
# standard library and a C compiler (the attacker's tool is
# tests/regress/hostile.c, built static into the workspace).
#
#   python3 bench/hostile.py [options]
#
# One sandbox-mcp process (--set management --set runtime over stdio),
# the image sandbox-mcp/busybox:test, and in the same run:
#
#   race      --rounds (40) managed sessions, each with a process that
#             exchanges a real directory with a symlink to a host
#             directory in a loop (renameat2 RENAME_EXCHANGE) while the
#             session is published; the targets are a canary directory
#             (100 root-only files, 0700, on the state directory's file
#             system) and another sandbox's transcripts.  Then the same
#             race run from another session through a descriptor of the
#             publishing session's /workspace.  Counted: host bytes in any
#             layer (must be 0), canary files with a second link (0),
#             host file names in any answer (0); publish times.
#   pool      a daemon in a managed session holds a descriptor of
#             /workspace sent by a clean automatic session; --rounds
#             automatic sessions then write a file each.  Counted: files
#             of later sessions seen through the descriptor, planted files
#             that reach a later session (both 0).
#   sparse    a publish of a 1 TiB and an 8 GiB sparse file; four reads
#             of a 32 GiB sparse file at once; a publish of 1.5 GiB of
#             data with a sessionless file_write timed while it runs
#             (target: at most 1 s).
#   burst     400 sessionless writes pipelined: the peak of the server's
#             child processes (target: at most helper-processes + 3),
#             refusals, and the time the 400 answers take.
#   sessions  600 create_workspace_session in one sandbox: how many are
#             made before server_busy (sessions-per-sandbox), and an
#             exec_command in another sandbox timed after it.
#   publish   a managed session that wrote --files (1,000) small files,
#             published, --publishes (5) times; with --compare BIN the
#             same with that binary (today's, for instance) in the same
#             run, and the ratio of the medians.
#
# Results: printed, and written to $SANDBOX_MCP_BUILDDIR/bench/results/
# hostile.txt and hostile.json.  Exit status 0 when every target is met.

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from lifecycle import (BenchError, Docker, Server, cleanup,  # noqa: E402
                       drive, now, ms, say)

IMAGE = "sandbox-mcp/busybox:test"
HELPERS = 16


def children(pid):
    out = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                out += f.read().split()
    except OSError:
        pass
    return out


class Bench:
    def __init__(self, opt):
        self.opt = opt
        self.builddir = os.environ.get("SANDBOX_MCP_BUILDDIR",
                                       os.path.dirname(HERE))
        self.srcdir = os.environ.get("SANDBOX_MCP_SRCDIR",
                                     os.path.dirname(HERE))
        self.binary = os.path.join(self.builddir, "sandbox-mcp")
        self.results = os.path.join(self.builddir, "bench", "results")
        host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        self.sock = host[len("unix://"):]
        self.docker = Docker(self.sock)
        self.tmp = None
        self.server = None
        self.state = None
        self.fig = {}
        self.targets = []

    def target(self, name, ok, text):
        self.targets.append((name, ok, text))

    # --- setup

    def start(self, binary, tag):
        self.state = os.path.join(self.tmp, "state-" + tag)
        os.makedirs(self.state)
        self.server_log = os.path.join(self.results,
                                       "hostile-server-%s.log" % tag)
        open(self.server_log, "w").close()
        self.server = Server([binary, "--set", "management", "--set",
                              "runtime", "-f", self.conf, "--state-dir",
                              self.state, "--docker-host",
                              "unix://" + self.sock], self.server_log)
        msg, _ = self.server.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench-hostile", "version": "1"}})
        if "result" not in msg:
            raise BenchError("initialize failed: %r" % msg)
        self.server.notify("notifications/initialized")

    def stop(self):
        ids = self.docker.ours(self.state)
        for c in ids:
            self.docker.remove(c)
        self.server.stop()
        self.server = None

    def call(self, name, args):
        """(structuredContent, is_error, ms)."""
        msg, t = self.server.request("tools/call", {"name": name,
                                                    "arguments": args})
        if "error" in msg:
            raise BenchError("%s: JSON-RPC error %s" % (name, msg["error"]))
        r = msg["result"]
        return r["structuredContent"], r.get("isError", False), t

    def ok(self, name, args):
        sc, err, t = self.call(name, args)
        if err:
            raise BenchError("%s failed: %s" % (name, json.dumps(sc)[:400]))
        return sc, t

    def create(self):
        return self.ok("create_sandbox", {"image": IMAGE,
                                          "workspace_root": self.ws})[0]["id"]

    def sh(self, sid, cmd, ws=None):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 120000}
        if ws:
            args["workspace_session_id"] = ws
        return self.ok("exec_command", args)[0]

    def session(self, sid):
        return self.ok("create_workspace_session",
                       {"sandbox_id": sid})[0]["workspace_session_id"]

    def setup(self):
        if not os.access(self.binary, os.X_OK):
            raise BenchError("%s not built (run make first)" % self.binary)
        self.tmp = os.path.realpath(tempfile.mkdtemp(
            prefix="sandbox-mcp-hostile."))
        self.wsroot = os.path.join(self.tmp, "workspaces")
        self.ws = os.path.join(self.wsroot, "project")
        os.makedirs(self.ws)
        subprocess.run(["cc", "-static", "-O2", "-o",
                        os.path.join(self.ws, "hostile"),
                        os.path.join(self.srcdir, "tests", "regress",
                                     "hostile.c")], check=True)
        self.canary = os.path.join(self.tmp, "canary")
        os.makedirs(self.canary, mode=0o700)
        self.canaries = []
        for i in range(100):
            p = os.path.join(self.canary, "secret%02d" % i)
            with open(p, "wb") as f:
                f.write(b"CANARY-7f3c9a-host-secret\n")
            os.chmod(p, 0o600)
            self.canaries.append(p)
        self.conf = os.path.join(self.tmp, "sandbox-mcp.conf")
        with open(self.conf, "w") as f:
            f.write("workspace-root %s\n" % self.wsroot)
            # A disk's cap is reserved when it is made (BENCH_DISK).
            f.write("profile disk %s\n" % os.environ.get("BENCH_DISK",
                                                         "2G"))
        os.makedirs(self.results, exist_ok=True)

    # --- measurements

    def leaks(self, sid):
        n = 0
        layers = os.path.join(self.state, "sandboxes", sid, "stack",
                              "layers")
        for dirpath, _, files in os.walk(layers):
            for name in files:
                p = os.path.join(dirpath, name)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                with open(p, "rb") as f:
                    data = f.read(1 << 20)
                if b"CANARY-7f3c9a" in data or b"OTHER-SANDBOX" in data:
                    n += 1
        n += sum(1 for c in self.canaries if os.stat(c).st_nlink != 1)
        return n

    def race(self):
        sid = self.create()
        other = self.create()
        self.sh(other, "echo OTHER-SANDBOX-TRANSCRIPT")
        # A deep stack, as a long-lived sandbox has: each step of a walk
        # is slower, the race has more room.
        for i in range(60):
            self.ok("file_write", {"sandbox_id": sid, "path": "pad/%d" % i,
                                   "content": "%d\n" % i})
        up = "../../../../../.."
        tgt = [up + "/canary",
               up + "/state-new/sandboxes/%s/commands" % other]
        times, outcomes, named = [], {}, 0
        for i in range(self.opt.rounds):
            w = self.session(sid)
            self.sh(sid, "mkdir -p d%d && echo x > d%d/x && ln -s %s s%d;"
                     " (setsid /workspace/hostile swap d%d s%d </dev/null"
                     " >/dev/null 2>&1 &); sleep 0.1; echo ok"
                     % (i, i, tgt[i % 2], i, i, i), w)
            sc, err, t = self.call("publish_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": w})
            times.append(t)
            k = sc["error"]["details"].get("publish_reject_class") \
                if err else "published"
            outcomes[k] = outcomes.get(k, 0) + 1
            if "secret" in json.dumps(sc) or self.tmp in json.dumps(sc):
                named += 1
            if err:
                self.call("destroy_workspace_session", {
                    "sandbox_id": sid, "workspace_session_id": w})
        own_leaks = self.leaks(sid)
        ftimes = []
        for i in range(self.opt.rounds // 2):
            h = self.session(sid)
            sock = "/run/r%d.sock" % i
            self.sh(sid, "mkdir -p /run; (setsid /workspace/hostile serve %s"
                     " swap e%d f%d </dev/null >/dev/null 2>&1 &); sleep 0.2"
                     % (sock, i, i), h)
            v = self.session(sid)
            self.sh(sid, "mkdir -p e%d && echo x > e%d/x && ln -s %s f%d &&"
                     " /workspace/hostile send %s /workspace"
                     % (i, i, tgt[i % 2], i, sock), v)
            sc, err, t = self.call("publish_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": v})
            ftimes.append(t)
            k = sc["error"]["details"].get("publish_reject_class") \
                if err else "published"
            outcomes["foreign " + k] = outcomes.get("foreign " + k, 0) + 1
            if "secret" in json.dumps(sc) or self.tmp in json.dumps(sc):
                named += 1
            if err:
                self.call("destroy_workspace_session", {
                    "sandbox_id": sid, "workspace_session_id": v})
            self.call("destroy_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": h})
        leaks = own_leaks + self.leaks(sid)
        self.fig["race"] = {"publishes": len(times) + len(ftimes),
                            "own_ms": times, "foreign_ms": ftimes,
                            "outcomes": outcomes, "host_files_in_layers":
                            leaks, "host_names_in_answers": named}
        self.target("race: host files in layers", leaks == 0,
                    "%d (target 0)" % leaks)
        self.target("race: host names in answers", named == 0,
                    "%d (target 0)" % named)
        return sid

    def pool(self, sid):
        h = self.session(sid)
        self.sh(sid, "mkdir -p /run; (setsid /workspace/hostile serve"
                 " /run/pool.sock keep </dev/null >/dev/null 2>&1 &);"
                 " sleep 0.2", h)
        self.sh(sid, "/workspace/hostile send /run/pool.sock /workspace")
        seen = planted = 0
        for i in range(self.opt.rounds):
            r = self.sh(sid, "echo p > mine-%d; /workspace/hostile ask"
                         " /run/pool.sock; cat planted 2>/dev/null ||"
                         " echo no-plant" % i)
            if "mine-%d" % i in r["output"]:
                seen += 1
            if "no-plant" not in r["output"]:
                planted += 1
        self.call("destroy_workspace_session", {"sandbox_id": sid,
                                               "workspace_session_id": h})
        self.fig["pool"] = {"sessions": self.opt.rounds,
                            "seen_through_descriptor": seen,
                            "planted_reached": planted}
        self.target("pool: another session's files seen", seen == 0,
                    "%d (target 0)" % seen)
        self.target("pool: planted files reached a session", planted == 0,
                    "%d (target 0)" % planted)

    def sparse(self, sid):
        w = self.session(sid)
        self.sh(sid, "truncate -s %d huge && truncate -s %d big && echo e"
                 " >> big" % (1 << 40, 8 << 30), w)
        _, t_pub = self.ok("publish_workspace_session", {
            "sandbox_id": sid, "workspace_session_id": w})
        w = self.session(sid)
        self.sh(sid, "truncate -s %d s32" % (32 << 30), w)
        t0 = now()
        ids = []
        for i in range(4):
            self.server.next_id += 1
            ids.append(self.server.next_id)
            self.server._send({"jsonrpc": "2.0", "id": ids[-1],
                               "method": "tools/call", "params": {
                                   "name": "file_read", "arguments": {
                                       "sandbox_id": sid, "path": "s32",
                                       "workspace_session_id": w}}})
        while ids:
            m = json.loads(self.server._readline(300))
            if m.get("id") in ids:
                ids.remove(m["id"])
        t_reads = ms(t0, now())
        self.call("destroy_workspace_session", {"sandbox_id": sid,
                                               "workspace_session_id": w})
        w = self.session(sid)
        self.sh(sid, "dd if=/dev/zero of=z bs=1M count=1536 2>/dev/null", w)
        self.server.next_id += 1
        pid = self.server.next_id
        t0 = now()
        self.server._send({"jsonrpc": "2.0", "id": pid, "method":
                           "tools/call", "params": {
                               "name": "publish_workspace_session",
                               "arguments": {"sandbox_id": sid,
                                             "workspace_session_id": w}}})
        writes = []
        done = None
        for i in range(5):
            self.server.next_id += 1
            wid = self.server.next_id
            t1 = now()
            self.server._send({"jsonrpc": "2.0", "id": wid, "method":
                               "tools/call", "params": {
                                   "name": "file_write", "arguments": {
                                       "sandbox_id": sid,
                                       "path": "during-%d" % i,
                                       "content": "x\n"}}})
            while True:
                m = json.loads(self.server._readline(300))
                if m.get("id") == pid:
                    done = ms(t0, now())
                if m.get("id") == wid:
                    writes.append(ms(t1, now()))
                    break
        while done is None:
            m = json.loads(self.server._readline(300))
            if m.get("id") == pid:
                done = ms(t0, now())
        self.fig["sparse"] = {"publish_1tib_8gib_ms": t_pub,
                              "four_reads_32gib_ms": t_reads,
                              "publish_1_5gib_ms": done,
                              "writes_during_ms": writes}
        self.target("sparse: a write during a large publish",
                    max(writes) <= 1000, "%.1f ms at most (target 1000)"
                    % max(writes))

    def burst(self, sid):
        first = self.server.next_id + 1
        t0 = now()
        for i in range(400):
            self.server.next_id += 1
            self.server._send({"jsonrpc": "2.0", "id": self.server.next_id,
                               "method": "tools/call", "params": {
                                   "name": "file_write", "arguments": {
                                       "sandbox_id": sid,
                                       "path": "burst/%d" % i,
                                       "content": "b\n"}}})
        want = set(range(first, self.server.next_id + 1))
        peak = busy = 0
        while want:
            peak = max(peak, len(children(self.server.proc.pid)))
            m = json.loads(self.server._readline(300))
            if m.get("id") in want:
                want.discard(m["id"])
                if m["result"].get("isError"):
                    busy += 1
        took = ms(t0, now())
        self.fig["burst"] = {"writes": 400, "peak_children": peak,
                             "refused": busy, "ms": took}
        self.target("burst: children at once", peak <= HELPERS + 3,
                    "%d (target %d)" % (peak, HELPERS + 3))

    def sessions(self, sid, other):
        made = 0
        t0 = now()
        for i in range(600):
            sc, err, _ = self.call("create_workspace_session",
                                   {"sandbox_id": sid})
            if err:
                break
            made += 1
        t_refused = ms(t0, now())
        r, t_other = self.ok("exec_command", {"sandbox_id": other,
                                              "cmd": "echo still",
                                              "yield_time_ms": 60000})
        self.fig["sessions"] = {"made": made, "ms_to_refusal": t_refused,
                                "other_exec_ms": t_other,
                                "refusal": sc.get("error", {})}
        self.target("sessions: refused at the cap", err and made <= 64,
                    "%d made, then %s" % (made, sc.get("error", {}).get(
                        "kind")))
        self.target("sessions: another sandbox runs commands",
                    r["output"] == "still\n", "%.1f ms" % t_other)

    def publish1000(self, tag):
        sid = self.create()
        times = []
        for i in range(self.opt.publishes):
            w = self.session(sid)
            self.sh(sid, "mkdir -p p%d && cd p%d && i=0; while [ $i -lt %d"
                     " ]; do echo $i > f$i; i=$((i+1)); done" %
                     (i, i, self.opt.files), w)
            _, t = self.ok("publish_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": w})
            times.append(t)
        self.fig.setdefault("publish_%d_files" % self.opt.files, {})[tag] \
            = times

    def run_all(self):
        self.setup()
        self.start(self.binary, "new")
        sid = self.race()
        self.pool(sid)
        self.sparse(sid)
        self.burst(sid)
        other = self.create()
        self.sessions(sid, other)
        self.publish1000("new")
        self.stop()
        if self.opt.compare:
            self.start(self.opt.compare, "compare")
            self.publish1000("compare")
            self.stop()

    def run(self):
        self.run_all()


def report(b):
    f = b.fig
    lines = ["hostile: the sandbox boundary and the server's resources"
             " under attack", ""]
    r = f["race"]
    med = statistics.median
    lines.append("race: %d publishes under a symlink swap (own %d, through"
                 " another session's descriptor %d)" % (
                     r["publishes"], len(r["own_ms"]), len(r["foreign_ms"])))
    lines.append("  outcomes: %s" % ", ".join("%s %d" % kv for kv in
                                              sorted(r["outcomes"].items())))
    lines.append("  publish median %.1f ms (own), %.1f ms (foreign)" % (
        med(r["own_ms"]), med(r["foreign_ms"])))
    lines.append("  host files in layers %d, host names in answers %d" % (
        r["host_files_in_layers"], r["host_names_in_answers"]))
    p = f["pool"]
    lines.append("pool: %d sessions after a descriptor was passed: seen %d,"
                 " planted %d" % (p["sessions"],
                                  p["seen_through_descriptor"],
                                  p["planted_reached"]))
    s = f["sparse"]
    lines.append("sparse: publish 1 TiB + 8 GiB %.0f ms; four reads of 32"
                 " GiB at once %.0f ms" % (s["publish_1tib_8gib_ms"],
                                           s["four_reads_32gib_ms"]))
    lines.append("  publish of 1.5 GiB of data %.0f ms; writes meanwhile:"
                 " median %.1f ms, max %.1f ms" % (
                     s["publish_1_5gib_ms"], med(s["writes_during_ms"]),
                     max(s["writes_during_ms"])))
    u = f["burst"]
    lines.append("burst: 400 pipelined writes in %.0f ms, %d refused, peak"
                 " %d children" % (u["ms"], u["refused"],
                                   u["peak_children"]))
    x = f["sessions"]
    lines.append("sessions: %d made, refused after %.0f ms (%s); another"
                 " sandbox's exec %.1f ms" % (x["made"], x["ms_to_refusal"],
                                              x["refusal"].get("kind"),
                                              x["other_exec_ms"]))
    key = "publish_%d_files" % b.opt.files
    pub = f[key]
    lines.append("publish of a session that wrote %d files: median %.1f ms"
                 " (%s)" % (b.opt.files, med(pub["new"]),
                            ", ".join("%.1f" % t for t in pub["new"])))
    if "compare" in pub:
        lines.append("  with %s: median %.1f ms; ratio %.2f" % (
            b.opt.compare, med(pub["compare"]),
            med(pub["new"]) / med(pub["compare"])))
    lines.append("")
    failed = False
    for name, ok, text in b.targets:
        lines.append("%-4s %s: %s" % ("PASS" if ok else "FAIL", name, text))
        failed = failed or not ok
    return lines, failed


def main():
    ap = argparse.ArgumentParser(description="hostile benchmark")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--publishes", type=int, default=5)
    ap.add_argument("--compare", help="another sandox-mcp binary to time"
                    " the publish against, in the same run")
    ap.add_argument("--keep", action="store_true")
    opt = ap.parse_args()
    b = Bench(opt)
    return drive(b, "hostile", report, lambda b: {"options": vars(opt),
                                                  "figures": b.fig}, say,
                 "BENCH_HOSTILE_TRACE")


if __name__ == "__main__":
    sys.exit(main())
