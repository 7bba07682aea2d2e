#!/usr/bin/env python3
# bench/slowloris.py: the latency of legitimate HTTP requests while a
# slowloris holds the server's connections, against the same requests
# with no attack, in the same run.  See bench/README ("slowloris").
# Python 3 standard library only; needs the loopback interface to answer
# 127.0.0.0/8 (Linux does).
#
#   python3 bench/slowloris.py [--requests N] [--connections N]
#                              [--spread N] [--pace S] [--settle S]
#                              [--timeout S]
#
# One sandbox-mcp --set management --listen 127.0.0.1:0 --no-stdio with
# one API key and every limit at its default.  Four phases, one after
# the other:
#
#   quiet    no attack
#   one      --connections (1,100) connections from 127.0.0.2, each
#            sending one byte of a request head, then one more byte a
#            second; a connection the server closes or refuses is opened
#            again a second later, for as long as the phase lasts
#   spread   the same 1,100 spread over --spread (20) addresses,
#            127.0.0.2 up: each under max-connections-per-address, all
#            together over max-connections
#   quiet    no attack again (the server has recovered)
#
# The attack runs in a child process (this script with --attack) and
# settles for --settle (2 s) before the measurement.  In each phase, from
# 127.0.0.1, strictly one at a time, --requests (200) rounds of these
# three, one round every --pace (0.05 s) plus the requests' own time:
#
#   health     GET /health on a new connection (no key)
#   list-new   POST /mcp tools/list with the key on a new connection
#   list-kept  POST /mcp tools/list on a keep-alive connection opened
#              (and authenticated) before the phase
#
# each timed from connect (or the request's first byte, on the kept
# connection) to the whole answer read.  A phase lasts about 11 s, over
# two of the server's 5 s head deadlines, so the attack's connections are
# closed and opened again during the measurement.
#
# Target: p99 of every kind under each attack < 100 ms.  Results:
# printed, and written to $SANDBOX_MCP_BUILDDIR/bench/results/
# slowloris.txt (slowloris.json has every sample, and what the attacker
# saw).  Exit status 0 when the target is met, 1 when it is missed or the
# run is broken (a legitimate request that fails, takes over --timeout
# (10 s) or gets anything but 200; a server that will not start or
# dies).

import argparse
import json
import math
import os
import re
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

TARGET_P99_MS = 100.0
TIMEOUT = 10.0          # a legitimate request taking longer: broken run


class BenchError(Exception):
    pass


def say(msg):
    print("slowloris: " + msg, file=sys.stderr, flush=True)


def now():
    return time.perf_counter()


def nearest(xs, q):
    """Nearest-rank percentile."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


# ------------------------------------------------------------- attacker

def attack(port, total, spread, trickle=1.0, retry=1.0):
    """Hold total connections from 127.0.0.2 .. 127.0.0.(1 + spread),
    one byte each, a byte a second after; reopen what the server closes
    a second later.  Prints "ready" once every slot has been opened, and
    its counters as JSON on SIGTERM."""
    sel = selectors.DefaultSelector()
    stats = {"connects": 0, "refused_503": 0, "closed": 0,
             "connect_errors": 0, "open_max": 0, "open_samples": []}
    slots = [{"src": "127.0.0.%d" % (2 + i % spread), "sock": None,
              "at": 0.0, "next": 0.0} for i in range(total)]
    head = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-a: " + b"b" * 10000
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))

    def close(slot, why):
        s = slot["sock"]
        try:
            sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        slot["sock"] = None
        slot["next"] = time.monotonic() + retry
        stats[why] += 1

    def open_(slot):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(0.5)
        try:
            s.bind((slot["src"], 0))
            s.connect(("127.0.0.1", port))
            s.send(head[:1])
        except OSError:
            s.close()
            slot["next"] = time.monotonic() + retry
            stats["connect_errors"] += 1
            return
        s.setblocking(False)
        slot["sock"] = s
        slot["at"] = 1
        slot["next"] = time.monotonic() + trickle
        stats["connects"] += 1
        sel.register(s, selectors.EVENT_READ, slot)

    ready = False
    last_sample = 0.0
    while not stop:
        t = time.monotonic()
        for slot in slots:
            if slot["next"] > t:
                continue
            if slot["sock"] is None:
                open_(slot)
                continue
            try:
                slot["sock"].send(head[slot["at"]:slot["at"] + 1])
                slot["at"] = (slot["at"] + 1) % len(head) or 1
                slot["next"] = t + trickle
            except BlockingIOError:
                slot["next"] = t + trickle
            except OSError:
                close(slot, "closed")
        if not ready:
            ready = True
            print("ready", flush=True)
        for key, _ in sel.select(0.05):
            slot = key.data
            try:
                got = slot["sock"].recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                close(slot, "closed")
                continue
            if got.startswith(b"HTTP/1.1 503"):
                close(slot, "refused_503")
            else:
                close(slot, "closed")   # EOF, or an answer (408)
        if t - last_sample >= 0.5:
            n = sum(1 for s in slots if s["sock"] is not None)
            stats["open_samples"].append(n)
            stats["open_max"] = max(stats["open_max"], n)
            last_sample = t
    for slot in slots:
        if slot["sock"] is not None:
            slot["sock"].close()
    print(json.dumps(stats), flush=True)


# --------------------------------------------------------------- client

class Conn:
    """One HTTP/1.1 connection from 127.0.0.1."""

    timeout = TIMEOUT

    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.connect(("127.0.0.1", port))
        self.buf = b""

    def close(self):
        self.sock.close()

    def request(self, method, path, body=None, headers=None):
        h = {"Host": "localhost"}
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
            h["Accept"] = "application/json, text/event-stream"
            h["Content-Length"] = str(len(data))
        h.update(headers or {})
        self.sock.sendall(("%s %s HTTP/1.1\r\n" % (method, path) +
                           "".join("%s: %s\r\n" % kv for kv in h.items()) +
                           "\r\n").encode() + data)
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdrs = {}
        for line in lines[1:]:
            k, v = line.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        while len(self.buf) < n:
            self._fill()
        b, self.buf = self.buf[:n], self.buf[n:]
        return status, hdrs, b

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise BenchError("the server closed a legitimate connection")
        self.buf += chunk


class Bench:
    def __init__(self, opt):
        self.opt = opt
        self.builddir = os.environ.get("SANDBOX_MCP_BUILDDIR", TOP)
        self.binary = os.path.join(self.builddir, "sandbox-mcp")
        self.results = os.path.join(self.builddir, "bench", "results")
        self.proc = None
        self.attacker = None
        self.samples = {}
        self.attacks = {}
        self.server_figures = {}

    def start(self):
        if not os.access(self.binary, os.X_OK):
            raise BenchError("%s not built (run make first)" % self.binary)
        self.tmp = tempfile.mkdtemp(prefix="sandbox-mcp-slowloris.")
        out = subprocess.run([self.binary, "keygen", "bench", "--set",
                              "management"], stdout=subprocess.PIPE,
                             check=True).stdout.decode().splitlines()
        self.key = out[0]
        conf = os.path.join(self.tmp, "sandbox-mcp.conf")
        with open(conf, "w") as f:
            f.write(out[1] + "\n")
        os.makedirs(self.results, exist_ok=True)
        self.log_path = os.path.join(self.results, "slowloris-server.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [self.binary, "--set", "management", "--listen", "127.0.0.1:0",
             "--no-stdio", "-f", conf, "--state-dir",
             os.path.join(self.tmp, "state")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=self.log)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            with open(self.log_path, "rb") as f:
                m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/mcp",
                              f.read())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                raise BenchError("sandbox-mcp exited at start")
            time.sleep(0.05)
        else:
            raise BenchError("sandbox-mcp did not start listening")
        self.auth = {"Authorization": "Bearer " + self.key}
        c = Conn(self.port)
        st, h, b = c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench-slowloris",
                                      "version": "1"}}}, self.auth)
        if st != 200 or "mcp-session-id" not in h:
            raise BenchError("initialize: %d %r" % (st, b[:200]))
        self.hdr = dict(self.auth)
        self.hdr["Mcp-Session-Id"] = h["mcp-session-id"]
        self.hdr["MCP-Protocol-Version"] = "2025-06-18"
        st, h, b = c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "method": "notifications/initialized"},
            self.hdr)
        c.close()

    def stop(self):
        if self.attacker is not None and self.attacker.poll() is None:
            self.attacker.kill()
            self.attacker.wait()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None:
            self.log.close()
        if getattr(self, "tmp", None):
            subprocess.run(["rm", "-rf", self.tmp])

    def server_state(self):
        pid = self.proc.pid
        fds = len(os.listdir("/proc/%d/fd" % pid))
        rss = 0
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        return fds, rss

    # One of each kind; returns ms per kind.
    def health(self):
        t0 = now()
        c = Conn(self.port)
        st, h, b = c.request("GET", "/health")
        t1 = now()
        c.close()
        if st != 200:
            raise BenchError("/health answered %d" % st)
        return (t1 - t0) * 1000

    def list_new(self, rid):
        t0 = now()
        c = Conn(self.port)
        st, h, b = c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": rid, "method": "tools/list"}, self.hdr)
        t1 = now()
        c.close()
        self.check_list(st, b, rid)
        return (t1 - t0) * 1000

    def list_kept(self, kept, rid):
        t0 = now()
        st, h, b = kept.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": rid, "method": "tools/list"}, self.hdr)
        t1 = now()
        self.check_list(st, b, rid)
        return (t1 - t0) * 1000

    def check_list(self, st, b, rid):
        if st != 200:
            raise BenchError("tools/list answered %d: %r" % (st, b[:200]))
        r = json.loads(b)
        if r.get("id") != rid or not r.get("result", {}).get("tools"):
            raise BenchError("tools/list: not its answer: %r" % b[:200])

    def phase(self, name, spread):
        self.attacker = None
        if spread:
            self.attacker = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--attack",
                 str(self.port), "--connections", str(self.opt.connections),
                 "--spread", str(spread)], stdout=subprocess.PIPE)
            line = self.attacker.stdout.readline()
            if line.strip() != b"ready":
                raise BenchError("the attacker did not start: %r" % line)
            time.sleep(self.opt.settle)
        kept = Conn(self.port)
        kept.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1,
                                      "method": "ping"}, self.hdr)
        s = {"health": [], "list-new": [], "list-kept": []}
        rid = 10
        fds = []
        t0 = now()
        for i in range(self.opt.requests):
            s["health"].append(self.health())
            time.sleep(self.opt.pace / 3)
            rid += 1
            s["list-new"].append(self.list_new(rid))
            time.sleep(self.opt.pace / 3)
            rid += 1
            s["list-kept"].append(self.list_kept(kept, rid))
            time.sleep(self.opt.pace / 3)
            if i % 20 == 0:
                fds.append(self.server_state())
            if self.proc.poll() is not None:
                raise BenchError("the server died during the %s phase"
                                 % name)
        took = now() - t0
        kept.close()
        self.samples[name] = s
        self.server_figures[name] = {
            "seconds": took,
            "fds_max": max(f for f, _ in fds),
            "rss_kib_max": max(r for _, r in fds)}
        if self.attacker is not None:
            self.attacker.send_signal(signal.SIGTERM)
            out, _ = self.attacker.communicate(timeout=30)
            self.attacks[name] = json.loads(out.decode().strip()
                                            .splitlines()[-1])
            self.attacker = None

    def run(self):
        with open("/proc/loadavg") as f:
            self.load = " ".join(f.read().split()[:3])
        self.start()
        say("server at 127.0.0.1:%d; quiet phase" % self.port)
        self.phase("quiet", 0)
        say("attack from one address (%d connections)"
            % self.opt.connections)
        self.phase("one", 1)
        say("attack spread over %d addresses" % self.opt.spread)
        self.phase("spread", self.opt.spread)
        say("quiet again")
        self.phase("quiet-after", 0)


def report(b):
    o = b.opt
    lines = []
    L = lines.append
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    version = subprocess.run([b.binary, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT).stdout.decode().strip()
    L("slowloris: legitimate requests from 127.0.0.1 while %d connections"
      " trickle bytes, against the same with no attack" % o.connections)
    L("machine: %d CPUs (%s), %s; %s; limits at the server's defaults;"
      " load average %s before the run" % (
          os.cpu_count(), cpu, " ".join(os.uname()[i] for i in (0, 2)),
          version, b.load))
    lines.extend(textwrap.wrap(
        "per phase %d of each kind, one at a time, a round of the three"
        " every %.3f s, over about %.0f s; ms, client side, connect to whole"
        " answer (list-kept: first byte of the request to whole answer)" % (
            o.requests, o.pace,
            b.server_figures.get("one", {}).get("seconds", 0)), 78,
        subsequent_indent="  "))
    L("")
    L("  %-8s %-10s %8s %8s %8s %8s   %s" % ("phase", "request", "median",
                                             "p95", "p99", "max",
                                             "p99/quiet p99"))
    failed = False
    names = {"quiet": "quiet", "one": "one addr", "spread":
             "%d addrs" % o.spread, "quiet-after": "quiet"}
    for ph in ("quiet", "one", "spread", "quiet-after"):
        s = b.samples.get(ph)
        if not s:
            continue
        for kind in ("health", "list-new", "list-kept"):
            xs = s[kind]
            q = b.samples["quiet"][kind]
            L("  %-8s %-10s %8.2f %8.2f %8.2f %8.2f   %s" % (
                names[ph], kind, statistics.median(xs), nearest(xs, 0.95),
                nearest(xs, 0.99), max(xs),
                "%.1fx" % (nearest(xs, 0.99) / nearest(q, 0.99))
                if ph in ("one", "spread") else ""))
    L("")
    for ph in ("one", "spread"):
        a = b.attacks.get(ph)
        f = b.server_figures.get(ph, {})
        if not a:
            continue
        samples = a["open_samples"]
        L("  attack %s: %d connects, %d refused with 503, %d closed by the"
          " server (408, evicted); attacker's connections open: median %d,"
          " max %d; server: at most %d descriptors, VmRSS %.1f MiB" % (
              names[ph], a["connects"], a["refused_503"], a["closed"],
              statistics.median(samples) if samples else 0,
              a["open_max"], f.get("fds_max", 0),
              f.get("rss_kib_max", 0) / 1024))
    L("")
    L("target: p99 of every request under each attack < %.0f ms"
      % TARGET_P99_MS)
    for ph in ("one", "spread"):
        for kind in ("health", "list-new", "list-kept"):
            p = nearest(b.samples[ph][kind], 0.99)
            ok = p < TARGET_P99_MS
            failed |= not ok
            L("  %s  %s, %s: p99 %.2f ms" % ("PASS" if ok else "FAIL",
                                             names[ph], kind, p))
    return "\n".join(lines) + "\n", failed


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--requests", type=int, default=int(os.environ.get(
        "BENCH_SLOWLORIS_REQUESTS", "200")))
    ap.add_argument("--connections", type=int, default=int(os.environ.get(
        "BENCH_SLOWLORIS_CONNECTIONS", "1100")))
    ap.add_argument("--spread", type=int, default=20)
    ap.add_argument("--pace", type=float, default=0.05)
    ap.add_argument("--settle", type=float, default=2.0)
    ap.add_argument("--timeout", type=float, default=TIMEOUT)
    ap.add_argument("--attack", type=int, metavar="PORT",
                    help=argparse.SUPPRESS)
    opt = ap.parse_args()
    if opt.attack is not None:
        attack(opt.attack, opt.connections, opt.spread)
        return 0
    if opt.requests < 100 or opt.connections < 1 or not \
            1 <= opt.spread <= 200:
        ap.error("--requests must be at least 100, --connections at least"
                 " 1, --spread from 1 to 200")
    Conn.timeout = opt.timeout
    b = Bench(opt)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(130))
    try:
        b.run()
    except (BenchError, OSError) as e:
        say("BROKEN RUN: %s" % e)
        b.stop()
        return 1
    except (KeyboardInterrupt, SystemExit):
        b.stop()
        raise
    b.stop()
    text, failed = report(b)
    sys.stdout.write(text)
    with open(os.path.join(b.results, "slowloris.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(b.results, "slowloris.json"), "w") as f:
        json.dump({"options": vars(opt), "samples_ms": b.samples,
                   "attacks": b.attacks, "server": b.server_figures}, f,
                  indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
