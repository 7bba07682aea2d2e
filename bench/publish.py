#!/usr/bin/env python3
# bench/publish.py: many agents publishing in one sandbox over HTTP.  See
# bench/README ("publish").  Python 3 standard library only.
#
#   python3 bench/publish.py [--bin BIN ...] [--agents 32] [--managed 24]
#       [--seconds 20] [--rounds 1] [--image IMAGE] [--tmpdir DIR]
#
# For each binary (given with --bin, repeated: the runs alternate between
# them, round after round, so that each has the same machine; default
# $SANDBOX_MCP_BUILDDIR/sandbox-mcp): a server listening on loopback with
# a key, one sandbox, and --agents agents, each on its own keep-alive
# connection and MCP session, for --seconds:
#   - a managed agent: create_workspace_session, one exec_command in it
#     writing 3 small files of its own, publish_workspace_session (timed
#     from its request's write to its answer);
#   - an automatic agent (the others): exec_command rewriting its own
#     line of one shared file (sed -i), which publishes (timed whole).
# Then checks that nothing was lost: every managed agent's files of every
# answered publish are there, and each line of the shared file is its
# agent's last answered write.  Prints publishes per second (both kinds)
# and the latencies; no targets (issue: >= 200 publishes/s, publish p99
# <= 100 ms).

import argparse
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100.0 * (len(xs) - 1))))]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Session:
    """One MCP session on one keep-alive HTTP connection."""

    def __init__(self, port, key):
        self.conn = http.client.HTTPConnection("127.0.0.1", port,
                                               timeout=300)
        self.hdr = {"Authorization": "Bearer " + key,
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream"}
        self.rid = 0
        h, _ = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18",
                                     "capabilities": {},
                                     "clientInfo": {"name": "bench",
                                                    "version": "1"}}})
        self.hdr["Mcp-Session-Id"] = h["mcp-session-id"]
        self.hdr["MCP-Protocol-Version"] = "2025-06-18"
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, msg):
        self.conn.request("POST", "/mcp", json.dumps(msg), self.hdr)
        r = self.conn.getresponse()
        body = r.read()
        h = {k.lower(): v for k, v in r.getheaders()}
        if h.get("content-type", "").startswith("text/event-stream"):
            data = [line[6:] for line in body.decode().split("\n")
                    if line.startswith("data: ")]
            body = data[-1].encode() if data else b""
        return h, (json.loads(body) if body else None)

    def call(self, name, args):
        self.rid += 1
        _, m = self.post({"jsonrpc": "2.0", "id": self.rid,
                          "method": "tools/call",
                          "params": {"name": name, "arguments": args}})
        if "result" not in m:
            raise RuntimeError("%s: %r" % (name, m))
        return m["result"]


def run_one(binary, opt, top):
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    nauto = opt.agents - opt.managed
    with open(os.path.join(ws, "shared.txt"), "w") as f:
        for i in range(nauto):
            f.write("line %d\n" % i)
    state = os.path.join(top, "state")
    port = free_port()
    out = subprocess.run([binary, "keygen", "bench", "--set", "management",
                          "--set", "runtime"], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    key, keyline = out[0], out[1]
    conf = os.path.join(top, "sandbox-mcp.conf")
    with open(conf, "w") as f:
        f.write("workspace-root %s\nlisten 127.0.0.1:%d\n%s\n"
                "limit sessions-per-sandbox 256\n" % (top, port, keyline))
    err = open(os.path.join(top, "server.err"), "wb")
    proc = subprocess.Popen([binary, "-f", conf, "--state-dir", state,
                             "--set", "management", "--set", "runtime"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=err)
    sid = None
    try:
        end = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.time() > end or proc.poll() is not None:
                    raise RuntimeError("the server did not listen")
                time.sleep(0.05)
        s0 = Session(port, key)
        r = s0.call("create_sandbox", {"image": opt.image,
                                       "workspace_root": ws})
        sid = r["structuredContent"]["id"]
        s0.call("exec_command", {"sandbox_id": sid, "cmd": "true",
                                 "yield_time_ms": 60000})
        lock = threading.Lock()
        res = {"pub": [], "auto": [], "managed_n": 0, "auto_n": 0,
               "rejected": 0, "errors": [], "files": [], "lines": {}}
        start = threading.Event()
        deadline = [0.0]

        def managed(a):
            try:
                s = Session(port, key)
                start.wait()
                i = 0
                while time.time() < deadline[0]:
                    r = s.call("create_workspace_session",
                               {"sandbox_id": sid})
                    ws_id = r["structuredContent"]["workspace_session_id"]
                    names = ["m%d/f%d_%d" % (a, i, k) for k in range(3)]
                    cmd = "mkdir -p m%d && " % a + " && ".join(
                        "echo %s > %s" % (n, n) for n in names)
                    r = s.call("exec_command", {
                        "sandbox_id": sid, "workspace_session_id": ws_id,
                        "cmd": cmd, "yield_time_ms": 60000})
                    if r.get("isError"):
                        raise RuntimeError("exec: %r" % r)
                    t = time.perf_counter()
                    r = s.call("publish_workspace_session", {
                        "sandbox_id": sid, "workspace_session_id": ws_id})
                    dt = (time.perf_counter() - t) * 1000
                    with lock:
                        if r.get("isError"):
                            res["rejected"] += 1
                        else:
                            res["pub"].append(dt)
                            res["managed_n"] += 1
                            res["files"] += names
                    if r.get("isError"):
                        s.call("destroy_workspace_session", {
                            "sandbox_id": sid, "workspace_session_id": ws_id})
                    i += 1
            except Exception as e:      # noqa: BLE001
                with lock:
                    res["errors"].append("managed %d: %s" % (a, e))

        def automatic(a):
            try:
                s = Session(port, key)
                start.wait()
                i = 0
                while time.time() < deadline[0]:
                    val = "agent %d edit %d" % (a, i)
                    t = time.perf_counter()
                    r = s.call("exec_command", {
                        "sandbox_id": sid, "yield_time_ms": 60000,
                        "cmd": "sed -i '%ds/.*/%s/' shared.txt" % (a + 1,
                                                                    val)})
                    dt = (time.perf_counter() - t) * 1000
                    sc = r.get("structuredContent") or {}
                    with lock:
                        if r.get("isError") or sc.get("publish_rejected"):
                            res["rejected"] += 1
                        elif sc.get("publish"):
                            res["auto"].append(dt)
                            res["auto_n"] += 1
                            res["lines"][a] = val
                    i += 1
            except Exception as e:      # noqa: BLE001
                with lock:
                    res["errors"].append("automatic %d: %s" % (a, e))

        threads = [threading.Thread(target=managed, args=(a,))
                   for a in range(opt.managed)]
        threads += [threading.Thread(target=automatic, args=(a,))
                    for a in range(nauto)]
        for t in threads:
            t.start()
        time.sleep(1)
        t0 = time.time()
        deadline[0] = t0 + opt.seconds
        start.set()
        for t in threads:
            t.join()
        took = time.time() - t0
        if res["errors"]:
            raise RuntimeError("; ".join(res["errors"][:3]))
        # Nothing lost.
        r = s0.call("exec_command", {
            "sandbox_id": sid, "yield_time_ms": 60000,
            "cmd": "cat shared.txt; cat m*/f* 2>/dev/null | sort | md5sum"})
        outl = r["structuredContent"]["output"].splitlines()
        want = hashlib.md5(("".join(n + "\n" for n in
                                    sorted(res["files"]))).encode())
        lost = []
        if outl[-1].split()[0] != want.hexdigest():
            lost.append("managed agents' files differ")
        for a, val in res["lines"].items():
            if outl[a] != val:
                lost.append("line %d: %r, not %r" % (a + 1, outl[a], val))
        return {"took": took, "managed": res["managed_n"],
                "auto": res["auto_n"], "rejected": res["rejected"],
                "pub": res["pub"], "autolat": res["auto"], "lost": lost}
    finally:
        if sid is not None:
            try:
                Session(port, key).call("destroy_sandbox",
                                        {"sandbox_id": sid})
            except Exception:           # noqa: BLE001
                pass
        proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err.close()


def main():
    ap = argparse.ArgumentParser(description="many agents publishing")
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--agents", type=int, default=32)
    ap.add_argument("--managed", type=int, default=24)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--image", default="sandbox-mcp/busybox:test")
    ap.add_argument("--tmpdir", default=os.environ.get("TMPDIR", "/tmp"))
    opt = ap.parse_args()
    if not opt.bin:
        opt.bin = [os.path.join(os.environ.get("SANDBOX_MCP_BUILDDIR", "."),
                                "sandbox-mcp")]
    if not 0 <= opt.managed <= opt.agents:
        ap.error("--managed must be between 0 and --agents")
    failed = 0
    for rnd in range(opt.rounds):
        for b in opt.bin:
            top = tempfile.mkdtemp(prefix="smcp-bench-pub-", dir=opt.tmpdir)
            try:
                r = run_one(os.path.abspath(b), opt, top)
            finally:
                shutil.rmtree(top, ignore_errors=True)
            n = r["managed"] + r["auto"]
            print("%s round %d: %d agents (%d managed), %.1f s: %d publishes"
                  " (%d managed, %d automatic), %.1f/s; %d rejected"
                  % (b, rnd + 1, opt.agents, opt.managed, r["took"], n,
                     r["managed"], r["auto"], n / r["took"], r["rejected"]))
            print("  publish_workspace_session: median %.1f ms, p99 %.1f ms;"
                  " automatic exec_command (edit + publish): median %.1f ms,"
                  " p99 %.1f ms" % (pct(r["pub"], 50), pct(r["pub"], 99),
                                    pct(r["autolat"], 50),
                                    pct(r["autolat"], 99)))
            if r["lost"]:
                failed = 1
                print("  LOST: " + "; ".join(r["lost"][:5]))
            else:
                print("  nothing lost")
            sys.stdout.flush()
    return failed


if __name__ == "__main__":
    sys.exit(main())
