#!/usr/bin/env python3
# bench/lifecycle.py: create_sandbox and destroy_sandbox against plain
# Docker, on a generated workspace of 1,000 files / 16 MiB.  See
# bench/README ("lifecycle").  Python 3 standard library only.
#
#   python3 bench/lifecycle.py [options]
#
# Measured, in the same run and interleaved round by round, on one
# sandbox-mcp process (--set management over stdio) and one state
# directory:
#
#   create_sandbox count 1, warm base cache (the workspace is in the cache)
#   create_sandbox count 1, cold base cache (one file changed before each)
#   create_sandbox count 8 (warm)
#   destroy_sandbox (every sandbox made, each timed)
#
# against these baselines of the same image:
#
#   docker run -d IMAGE sleep infinity, then docker rm -f (the CLI, timed
#     end to end: process start included)
#   the same through the Docker Engine API, no CLI: POST /containers/create
#     and /containers/ID/start, then DELETE /containers/ID?force=1
#   the API with sandbox-mcp's own container configuration (init, limits,
#     the idle shell), then stop?t=5 and DELETE as destroy_sandbox does
#   8 containers at once, by the CLI and by the API
#
# Targets (the CLI baseline, as the requirement names docker run):
#   median warm create <= 1.5 x median docker run
#   median warm create - median docker run <= 50 ms
#   median count-8 create <= 8 x median warm count-1 create
#
# Results: printed, and written to $SANDBOX_MCP_BUILDDIR/bench/results/
# lifecycle.txt (lifecycle.json has every sample and the telemetry
# breakdown of every call).  Exit status 0 when every target is met, 1
# when one is missed or the run is broken.  Every container the run
# makes carries the label io.sandbox-mcp.state-dir=<its state directory>
# and is removed at the end, on failure and on SIGINT/SIGTERM too.

import argparse
import http.client
import json
import math
import os
import random
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

LABEL = "io.sandbox-mcp.state-dir"
MIB = 1024 * 1024

TARGET_WARM_RATIO = 1.5     # warm create / docker run, at most
TARGET_WARM_EXTRA_MS = 50   # warm create - docker run, at most
TARGET_BATCH_RATIO = 8      # count-8 create / warm count-1 create, at most

DEFAULT_IMAGES = "sandbox-mcp/debian:bookworm sandbox-mcp/busybox:test"


class BenchError(Exception):
    pass


def say(msg):
    print("lifecycle: " + msg, file=sys.stderr, flush=True)


def now():
    return time.perf_counter()


def ms(t0, t1):
    return (t1 - t0) * 1000.0


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def p95(xs):
    """Nearest rank: with 20 samples or fewer this is the maximum."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[max(0, math.ceil(0.95 * len(s)) - 1)]


# ------------------------------------------------------------ workspace

def make_workspace(root, seed, nfiles, total):
    """nfiles files holding exactly total bytes, in nested directories,
    the same bytes for the same seed."""
    rng = random.Random(seed)
    dirs = [""]
    depth = {"": 0}
    names = ["src", "lib", "test", "docs", "assets", "vendor", "build",
             "include", "tools", "data", "pkg", "cmd", "internal", "web"]
    for i in range(64):
        parent = rng.choice([d for d in dirs if depth[d] < 4])
        d = os.path.join(parent, "%s%02d" % (rng.choice(names), i))
        dirs.append(d)
        depth[d] = depth[parent] + 1
    # Sizes: log-normal (many small files, a few large), scaled to total.
    w = [rng.lognormvariate(0.0, 1.6) for _ in range(nfiles)]
    sw = sum(w)
    sizes = [max(1, int(total * x / sw)) for x in w]
    big = max(range(nfiles), key=lambda i: sizes[i])
    sizes[big] += total - sum(sizes)
    exts = [".c", ".h", ".py", ".txt", ".json", ".bin", ".md", ".go"]
    files = []
    for d in dirs:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for i, size in enumerate(sizes):
        rel = os.path.join(rng.choice(dirs), "f%04d%s" % (i, rng.choice(exts)))
        with open(os.path.join(root, rel), "wb") as f:
            f.write(rng.randbytes(size))
        files.append(rel)
    return files


def tree_figures(root):
    nf = nd = nbytes = 0
    for dp, dn, fn in os.walk(root):
        nd += len(dn)
        for f in fn:
            nf += 1
            nbytes += os.lstat(os.path.join(dp, f)).st_size
    return nf, nd, nbytes


# --------------------------------------------------------------- server

class Server:
    """sandbox-mcp over stdio: one JSON-RPC message per line."""

    def __init__(self, argv, log_path):
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log)
        self.rfd = self.proc.stdout.fileno()
        self.wfd = self.proc.stdin.fileno()
        self.buf = b""
        self.next_id = 0

    def _readline(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchError("sandbox-mcp gave no answer within %d s"
                                 % timeout)
            r, _, _ = select.select([self.rfd], [], [], left)
            if r:
                chunk = os.read(self.rfd, 1 << 16)
                if not chunk:
                    raise BenchError("sandbox-mcp closed its stdout (exit"
                                     " status %r)" % self.proc.poll())
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def _send(self, msg):
        data = (json.dumps(msg) + "\n").encode()
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self._send(msg)

    def request(self, method, params, timeout=300):
        """The response and the round trip in ms (write to whole line)."""
        self.next_id += 1
        rid = self.next_id
        data = (json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                            "params": params}) + "\n").encode()
        t0 = now()
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]
        while True:
            line = self._readline(timeout)
            t1 = now()
            msg = json.loads(line)
            if msg.get("id") == rid:
                return msg, ms(t0, t1)

    def tool(self, name, args):
        msg, t = self.request("tools/call", {"name": name, "arguments": args})
        if "error" in msg:
            raise BenchError("%s: JSON-RPC error %s" % (name, msg["error"]))
        res = msg["result"]
        if res.get("isError"):
            raise BenchError("%s failed: %s" % (
                name, json.dumps(res.get("structuredContent"))[:500]))
        return res["structuredContent"], t

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self.log.close()
        return self.proc.returncode


# --------------------------------------------------------------- docker

class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=120):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Docker:
    """The Engine API over its unix socket; a connection per request."""

    def __init__(self, path):
        self.path = path

    def call(self, method, path, body=None, ok=(200, 201, 204)):
        conn = UnixHTTPConnection(self.path)
        try:
            headers = {}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read()
        finally:
            conn.close()
        if r.status not in ok:
            raise BenchError("Docker %s %s: HTTP %d %s" % (
                method, path, r.status, raw[:300].decode("utf-8", "replace")))
        return r.status, (json.loads(raw) if raw else None)

    def run(self, body, name=None):
        """create + start; the container id."""
        path = "/containers/create"
        if name:
            path += "?name=" + name
        _, c = self.call("POST", path, body)
        self.call("POST", "/containers/%s/start" % c["Id"], ok=(204, 304))
        return c["Id"]

    def remove(self, cid):
        self.call("DELETE", "/containers/%s?force=1" % cid, ok=(204, 404))

    def ours(self, state):
        f = json.dumps({"label": ["%s=%s" % (LABEL, state)]})
        _, lst = self.call("GET", "/containers/json?all=1&filters=" +
                           urlquote(f))
        return [c["Id"] for c in lst]

    def remove_networks(self, state):
        """Remove the tenants' networks of a state directory (the
        server removes one with its last sandbox, but not when it is
        stopped first); Docker's address pools run out otherwise."""
        f = json.dumps({"label": ["%s=%s" % (LABEL, state)]})
        _, lst = self.call("GET", "/networks?filters=" + urlquote(f))
        for n in lst:
            self.call("DELETE", "/networks/" + n["Id"])


def urlquote(s):
    return urllib.parse.quote(s, safe="")


def cli(argv, timeout=120):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    if r.returncode != 0:
        raise BenchError("%s: %s" % (" ".join(argv),
                                     r.stderr.decode(errors="replace")[:300]))
    return r.stdout.decode().strip()


# ------------------------------------------------------------ telemetry

def read_spans(state):
    """Every span line of the state directory's own telemetry log."""
    spans = []
    base = os.path.join(state, "telemetry", "events.ndjson")
    for p in (base + ".1", base):
        if not os.path.exists(p):
            continue
        with open(p) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("kind") == "span":
                    spans.append(rec)
    return spans


def phase(spans):
    """Wall time a group of concurrent spans covers, in ms."""
    if not spans:
        return 0.0
    if len(spans) == 1:
        return spans[0]["dur_ms"]
    start = min(s["ts"] for s in spans)
    end = max(s["ts"] + s["dur_ms"] for s in spans)
    return end - start


def breakdown(spans):
    """Per create trace (keyed by the first sandbox id it named) and per
    destroy trace (keyed by sandbox id): where its time went."""
    traces = {}
    for s in spans:
        traces.setdefault(s.get("trace", ""), []).append(s)
    creates, destroys = {}, {}
    for tr, ss in traces.items():
        by = {}
        for s in ss:
            by.setdefault(s["name"], []).append(s)
        if "tool.create_sandbox" in by and "sandbox.create" in by:
            root = by["tool.create_sandbox"][0]
            sc = by["sandbox.create"][0]
            insp = by.get("docker.image_inspect", [])
            crt = by.get("docker.container_create", [])
            st = by.get("docker.container_start", [])
            if not crt:
                continue
            ids = sorted(s["attrs"]["path"].split("name=", 1)[1] for s in crt)
            i_ms = sum(s["dur_ms"] for s in insp)
            c_ms, s_ms = phase(crt), phase(st)
            d = {
                "tool_ms": root["dur_ms"],
                "create_ms": sc["dur_ms"],
                "image_inspect_ms": i_ms,
                "container_create_ms": c_ms,
                "container_start_ms": s_ms,
                "container_create_sum_ms": sum(s["dur_ms"] for s in crt),
                "container_start_sum_ms": sum(s["dur_ms"] for s in st),
                "outside_docker_ms": sc["dur_ms"] - i_ms - c_ms - s_ms,
                # image_inspect's end to the first container_create: the
                # base-cache step and the records (ms timestamps: +-1 ms)
                "base_and_records_ms": (min(s["ts"] for s in crt) -
                                        (insp[0]["ts"] + insp[0]["dur_ms"])
                                        if insp else float("nan")),
                "after_start_ms": (sc["ts"] + sc["dur_ms"] -
                                   max(s["ts"] + s["dur_ms"] for s in st)
                                   if st else float("nan")),
            }
            for sid in ids:
                creates[sid] = d
        elif "tool.destroy_sandbox" in by and "sandbox.destroy" in by:
            root = by["tool.destroy_sandbox"][0]
            sd = by["sandbox.destroy"][0]
            stop = sum(s["dur_ms"] for s in by.get("docker.container_stop", []))
            rm = sum(s["dur_ms"] for s in by.get("docker.container_remove", []))
            destroys[sd["attrs"].get("sandbox_id")] = {
                "tool_ms": root["dur_ms"],
                "destroy_ms": sd["dur_ms"],
                "container_stop_ms": stop,
                "container_remove_ms": rm,
                "outside_docker_ms": sd["dur_ms"] - stop - rm,
            }
    return creates, destroys


# ---------------------------------------------------------------- bench

class Bench:
    def __init__(self, opt):
        self.opt = opt
        self.builddir = os.environ.get("SANDBOX_MCP_BUILDDIR", TOP)
        self.binary = os.path.join(self.builddir, "sandbox-mcp")
        self.results = os.path.join(self.builddir, "bench", "results")
        host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        if not host.startswith("unix://"):
            raise BenchError("DOCKER_HOST must be a unix:// socket: " + host)
        self.sock = host[len("unix://"):]
        self.docker = Docker(self.sock)
        self.tmp = None
        self.server = None
        self.samples = {}
        self.rounds = []

    def add(self, image, key, value):
        self.samples.setdefault(image, {}).setdefault(key, []).append(value)

    # --- setup

    def setup(self):
        if not os.access(self.binary, os.X_OK):
            raise BenchError("%s not built (run make first)" % self.binary)
        # Canonical: sandbox-mcp labels its containers with this path.
        self.tmp = os.path.realpath(
            tempfile.mkdtemp(prefix="sandbox-mcp-lifecycle."))
        self.state = os.path.join(self.tmp, "state")
        self.wsroot = os.path.join(self.tmp, "workspaces")
        self.ws = os.path.join(self.wsroot, "project")
        os.makedirs(self.state)
        os.makedirs(self.ws)
        self.conf = os.path.join(self.tmp, "sandbox-mcp.conf")
        with open(self.conf, "w") as f:
            f.write("workspace-root %s\n" % self.wsroot)
            # A disk's cap is reserved when it is made (BENCH_DISK).
            f.write("profile disk %s\n" % os.environ.get("BENCH_DISK",
                                                         "2G"))
        t0 = now()
        self.files = make_workspace(self.ws, self.opt.seed, self.opt.files,
                                    self.opt.bytes)
        nf, nd, nb = tree_figures(self.ws)
        if nf != self.opt.files or nb != self.opt.bytes:
            raise BenchError("workspace: %d files, %d bytes" % (nf, nb))
        self.ws_desc = ("%d files, %d directories, %d bytes (%.1f MiB),"
                        " seed %d" % (nf, nd, nb, nb / MIB, self.opt.seed))
        say("workspace %s: %s (%.1f s)" % (self.ws, self.ws_desc,
                                            now() - t0))
        os.makedirs(self.results, exist_ok=True)
        self.server_log = os.path.join(self.results, "lifecycle-server.log")
        open(self.server_log, "w").close()
        self.server = Server([self.binary, "--set", "management", "-f",
                              self.conf, "--state-dir", self.state,
                              "--docker-host", "unix://" + self.sock],
                             self.server_log)
        msg, _ = self.server.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench-lifecycle", "version": "1"}})
        if "result" not in msg:
            raise BenchError("initialize failed: %r" % msg)
        self.server.notify("notifications/initialized")
        self.cold_round = 0

    def cache_entries(self):
        d = os.path.join(self.state, "base-cache")
        return sorted(e for e in os.listdir(d) if not e.startswith("."))

    def change_workspace(self):
        """Give one file new content (same size): the next create is cold."""
        self.cold_round += 1
        p = os.path.join(self.ws, self.files[0])
        with open(p, "r+b") as f:
            f.write(b"cold %08d " % self.cold_round)

    # --- sandbox-mcp

    def create(self, image, count, expect):
        before = self.cache_entries()
        res, t = self.server.tool("create_sandbox", {
            "image": image, "workspace_root": self.ws, "count": count})
        recs = [res] if count == 1 else res.get("sandboxes", [])
        if len(recs) != count or any(r.get("state") != "ready" for r in recs):
            raise BenchError("create_sandbox count %d: unexpected result %s"
                             % (count, json.dumps(res)[:500]))
        after = self.cache_entries()
        new = len(after) - len(before)
        if expect == "warm" and new != 0:
            raise BenchError("a warm create added a base-cache entry")
        if expect == "cold" and new != 1:
            raise BenchError("a cold create added %d base-cache entries"
                             % new)
        return [r["id"] for r in recs], t

    def destroy(self, image, sid, kind):
        res, t = self.server.tool("destroy_sandbox", {"sandbox_id": sid})
        if res.get("state") != "stopped":
            raise BenchError("destroy_sandbox %s: %s" % (sid, res))
        if image is not None:
            self.add(image, "destroy", t)
            self.add(image, "destroy_ids", sid)
            self.add(image, "destroy_kind", kind)
        return t

    def m_warm(self, image, record=True):
        ids, t = self.create(image, 1, "warm")
        if record:
            self.add(image, "warm", t)
            self.add(image, "warm_ids", ids[0])
        self.destroy(image if record else None, ids[0], "single")

    def m_cold(self, image, record=True):
        self.change_workspace()
        ids, t = self.create(image, 1, "cold")
        if record:
            self.add(image, "cold", t)
            self.add(image, "cold_ids", ids[0])
        self.destroy(image if record else None, ids[0], "single")

    def m_batch(self, image):
        ids, t = self.create(image, 8, "warm")
        self.add(image, "batch", t)
        self.add(image, "batch_ids", ids[0])
        for sid in ids:
            self.destroy(image, sid, "batch")

    # --- baselines

    def labels(self):
        return {LABEL: self.state}

    def m_cli(self, image, record=True):
        t0 = now()
        cid = cli(["docker", "run", "-d", "--label",
                   "%s=%s" % (LABEL, self.state), image, "sleep", "infinity"])
        t1 = now()
        cli(["docker", "rm", "-f", cid])
        t2 = now()
        if record:
            self.add(image, "cli_run", ms(t0, t1))
            self.add(image, "cli_rm", ms(t1, t2))

    def m_api(self, image, record=True):
        t0 = now()
        cid = self.docker.run({"Image": image, "Cmd": ["sleep", "infinity"],
                               "Labels": self.labels()})
        t1 = now()
        self.docker.remove(cid)
        t2 = now()
        if record:
            self.add(image, "api_run", ms(t0, t1))
            self.add(image, "api_rm", ms(t1, t2))

    def same_config(self, image):
        """The body sandbox-mcp sends for a sandbox (src/sandbox.c)."""
        p = self.profile
        return {
            "Image": image,
            "Entrypoint": ["/bin/sh"],
            "Cmd": ["-c", "trap 'exit 0' TERM; while :; do sleep 3600 &"
                    " wait; done"],
            "WorkingDir": "/", "Tty": False, "OpenStdin": False,
            "AttachStdin": False, "AttachStdout": False,
            "AttachStderr": False,
            "Labels": self.labels(),
            "HostConfig": {
                "NanoCpus": int(round(p["cpus"] * 1e9)),
                "Memory": int(p["memory_max"]),
                "MemoryReservation": int(p["memory_high"]),
                "PidsLimit": int(p["pids"]),
                "Init": True, "Privileged": False, "PublishAllPorts": False,
                "PortBindings": {}, "CapAdd": [],
                "SecurityOpt": ["no-new-privileges"],
                "RestartPolicy": {"Name": "no"},
            },
        }

    def m_api_cfg(self, image, record=True):
        name = "lifecycle-%s" % os.urandom(6).hex()
        t0 = now()
        cid = self.docker.run(self.same_config(image), name=name)
        t1 = now()
        self.docker.call("POST", "/containers/%s/stop?t=5" % cid,
                         ok=(204, 304))
        self.docker.call("DELETE", "/containers/%s?force=1&v=1" % cid,
                         ok=(204, 404))
        t2 = now()
        if record:
            self.add(image, "api_cfg_run", ms(t0, t1))
            self.add(image, "api_cfg_rm", ms(t1, t2))

    def m_cli8(self, image):
        t0 = now()
        procs = [subprocess.Popen(["docker", "run", "-d", "--label",
                                   "%s=%s" % (LABEL, self.state), image,
                                   "sleep", "infinity"],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(8)]
        outs = [p.communicate(timeout=300) for p in procs]
        t1 = now()
        ids = [o[0].decode().strip() for o in outs]
        bad = [o[1].decode(errors="replace") for p, o in zip(procs, outs)
               if p.returncode != 0]
        self.remove_all(ids)
        if bad:
            raise BenchError("docker run (8 at once): " + bad[0][:300])
        self.add(image, "cli8_run", ms(t0, t1))

    def m_api8(self, image):
        ids, errs = [None] * 8, []

        def one(i):
            try:
                ids[i] = self.docker.run({"Image": image,
                                          "Cmd": ["sleep", "infinity"],
                                          "Labels": self.labels()})
            except Exception as e:  # noqa: BLE001 - reported below
                errs.append(e)
        threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
        t0 = now()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        t1 = now()
        self.remove_all([i for i in ids if i])
        if errs:
            raise BenchError("API create+start (8 at once): %s" % errs[0])
        self.add(image, "api8_run", ms(t0, t1))

    def remove_all(self, ids):
        threads = [threading.Thread(target=self.docker.remove, args=(c,))
                   for c in ids if c]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    # --- the run

    def run_image(self, image):
        o = self.opt
        say("image %s: warm-up" % image)
        # Warm-up, not counted (run() has already built the base): a
        # create and one of each baseline.
        self.m_warm(image, record=False)
        self.m_cli(image, record=False)
        self.m_api(image, record=False)
        self.m_api_cfg(image, record=False)
        rng = random.Random(o.seed + 1)
        n = max(o.warm, o.cold, o.batch, o.baseline)
        for i in range(n):
            steps = []
            if i < o.baseline:
                steps += [("cli", self.m_cli), ("api", self.m_api),
                          ("api_cfg", self.m_api_cfg)]
            if i < o.warm:
                steps.append(("warm", self.m_warm))
            if i < o.cold:
                steps.append(("cold", self.m_cold))
            if i < o.batch:
                steps += [("batch", self.m_batch), ("cli8", self.m_cli8),
                          ("api8", self.m_api8)]
            # Shuffled, so that no measurement always follows the same
            # one.  A cold create leaves its new content cached, so the
            # warm creates after it hit that entry.
            rng.shuffle(steps)
            self.rounds.append([s[0] for s in steps])
            for name, fn in steps:
                fn(image)
                time.sleep(o.pause)
            say("image %s: round %d/%d done" % (image, i + 1, n))

    def first_create(self, image):
        ids, _ = self.create(image, 1, "cold")
        res, _ = self.server.tool("inspect_sandbox", {"sandbox_id": ids[0]})
        self.profile = res["resource_profile"]
        self.destroy(None, ids[0], "single")

    def run(self):
        self.setup()
        images = self.opt.images
        info = self.docker.call("GET", "/version")[1]
        self.docker_desc = "Docker Engine %s (API %s), CLI %s" % (
            info.get("Version"), info.get("ApiVersion"),
            cli(["docker", "version", "--format", "{{.Client.Version}}"]))
        self.image_desc = {}
        for image in images:
            st, img = self.docker.call("GET", "/images/%s/json" %
                                       urlquote(image), ok=(200, 404))
            if st == 404:
                raise BenchError("image %s is not there locally" % image)
            self.image_desc[image] = "%s, %.1f MB" % (img["Id"][:19],
                                                     img["Size"] / 1e6)
        self.first_create(images[0])
        for image in images:
            self.run_image(image)
        spans = read_spans(self.state)
        self.creates, self.destroys = breakdown(spans)


# --------------------------------------------------------------- report

def row(label, xs, extra=""):
    return "  %-54s %9.1f %9.1f %4d%s" % (label, median(xs), p95(xs),
                                          len(xs), extra)


def report(b):
    o = b.opt
    lines = []
    L = lines.append
    ncpu = os.cpu_count()
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
    L("lifecycle: create_sandbox / destroy_sandbox against docker run / "
      "docker rm -f, same images, same run")
    L("workspace: %s" % b.ws_desc)
    L("machine: %d CPUs (%s), %s; %s; %s" % (
        ncpu, cpu, " ".join(os.uname()[i] for i in (0, 2)), version,
        b.docker_desc))
    lines.extend(textwrap.wrap(
        "samples: %d warm, %d cold, %d count-8, %d of each baseline (%d of"
        " the 8-at-once ones), interleaved in shuffled rounds after a"
        " warm-up; median and p95 (nearest rank) in ms, client side:"
        " request written to whole answer read (stdio), or CLI process"
        " start to exit" % (o.warm, o.cold, o.batch, o.baseline, o.batch),
        78, subsequent_indent="  "))
    failed = False
    for image in o.images:
        s = b.samples.get(image, {})
        L("")
        L("image %s (%s)" % (image, b.image_desc[image]))
        L("  %-54s %9s %9s %4s" % ("", "median", "p95", "n"))
        L(row("create_sandbox count 1, warm base cache", s.get("warm", [])))
        L(row("create_sandbox count 1, cold base cache", s.get("cold", [])))
        L(row("create_sandbox count 8 (warm)", s.get("batch", [])))
        L(row("baseline: docker run -d IMAGE sleep infinity", s.get("cli_run", [])))
        L(row("baseline: API create+start (no CLI)", s.get("api_run", [])))
        L(row("baseline: API create+start, sandbox-mcp's config",
              s.get("api_cfg_run", [])))
        L(row("baseline: 8 x docker run -d at once", s.get("cli8_run", [])))
        L(row("baseline: 8 x API create+start at once", s.get("api8_run", [])))
        L(row("destroy_sandbox (all)", s.get("destroy", [])))
        kinds = s.get("destroy_kind", [])
        ds = s.get("destroy", [])
        L(row("destroy_sandbox, count-1 sandboxes",
              [t for t, k in zip(ds, kinds) if k == "single"]))
        L(row("destroy_sandbox, members of count-8 batches",
              [t for t, k in zip(ds, kinds) if k == "batch"]))
        L(row("baseline: docker rm -f", s.get("cli_rm", [])))
        L(row("baseline: API DELETE ?force=1", s.get("api_rm", [])))
        L(row("baseline: API stop?t=5 + DELETE, sandbox-mcp's config",
              s.get("api_cfg_rm", [])))

        # Where the time goes, from the server's telemetry spans.
        L("  where create_sandbox's time goes (server telemetry, medians, ms):")
        L("    %-13s %7s %7s %7s %8s %7s %7s %8s %7s" % (
            "", "client", "tool", "inspect", "base+rec", "create",
            "start", "outside", "after"))
        for key, label in (("warm_ids", "warm"), ("cold_ids", "cold"),
                           ("batch_ids", "count 8")):
            ds_ = [b.creates[i] for i in s.get(key, []) if i in b.creates]
            client = s.get({"warm_ids": "warm", "cold_ids": "cold",
                            "batch_ids": "batch"}[key], [])
            if not ds_:
                L("    %-13s (no telemetry)" % label)
                continue

            def med(k):
                return median([d[k] for d in ds_])
            L("    %-13s %7.1f %7.1f %7.1f %8.1f %7.1f %7.1f %8.1f %7.1f" % (
                label, median(client), med("tool_ms"),
                med("image_inspect_ms"), med("base_and_records_ms"),
                med("container_create_ms"), med("container_start_ms"),
                med("outside_docker_ms"), med("after_start_ms")))
        bd = [b.creates[i] for i in s.get("batch_ids", []) if i in b.creates]
        if bd:
            L("    count 8: container_create calls sum to %.1f ms over a"
              " %.1f ms phase, container_start calls to %.1f ms over %.1f ms"
              % (median([d["container_create_sum_ms"] for d in bd]),
                 median([d["container_create_ms"] for d in bd]),
                 median([d["container_start_sum_ms"] for d in bd]),
                 median([d["container_start_ms"] for d in bd])))
        dd = [b.destroys[i] for i in s.get("destroy_ids", [])
              if i in b.destroys]
        if dd:
            L("    destroy: tool %.1f, container_stop %.1f, container_remove"
              " %.1f, outside Docker %.1f" % (
                  median([d["tool_ms"] for d in dd]),
                  median([d["container_stop_ms"] for d in dd]),
                  median([d["container_remove_ms"] for d in dd]),
                  median([d["outside_docker_ms"] for d in dd])))
        for line in textwrap.wrap(
                "(client: round trip seen by the client; tool: the"
                " tool.create_sandbox span; inspect, create, start: the"
                " Docker calls, for count 8 the wall time each phase"
                " covers; base+rec: image_inspect's end to the first"
                " container_create, i.e. the base-cache step and writing"
                " the records, +-1 ms; outside: sandbox.create minus the"
                " Docker phases; after: the last container_start's end to"
                " the span's end, marking the records ready)", 72):
            L("    " + line)

        warm, cold, batch = (median(s.get(k, [])) for k in
                             ("warm", "cold", "batch"))
        run, api, apic = (median(s.get(k, [])) for k in
                          ("cli_run", "api_run", "api_cfg_run"))
        rm_, arm = median(s.get("cli_rm", [])), median(s.get("api_rm", []))
        dst = median(s.get("destroy", []))
        cli8, api8 = median(s.get("cli8_run", [])), median(s.get("api8_run", []))
        wd = [b.creates[i] for i in s.get("warm_ids", []) if i in b.creates]
        base_hit = median([d["base_and_records_ms"] for d in wd])
        outside = median([d["outside_docker_ms"] for d in wd])
        L("  ratios and differences (medians):")
        L("    warm create / docker run            %6.2fx  (%+.1f ms)"
          % (warm / run, warm - run))
        L("    warm create / API create+start      %6.2fx  (%+.1f ms)"
          % (warm / api, warm - api))
        L("    warm create / API, same config      %6.2fx  (%+.1f ms)"
          % (warm / apic, warm - apic))
        L("    docker CLI overhead (run - API)     %+7.1f ms" % (run - api))
        L("    cold create - warm create           %+7.1f ms" % (cold - warm))
        L("    base-cache step on a hit            %7.1f ms (base+rec),"
          " %.1f ms outside Docker in all" % (base_hit, outside))
        L("    count 8 / warm count 1              %6.2fx" % (batch / warm))
        L("    count 8 / 8 x docker run at once    %6.2fx;  / 8 x API at"
          " once %.2fx" % (batch / cli8, batch / api8))
        L("    destroy_sandbox / docker rm -f      %6.2fx  (%+.1f ms);"
          "  / API DELETE %.2fx" % (dst / rm_, dst - rm_, dst / arm))
        L("  targets (against the docker run CLI baseline):")
        for desc, ok in (
                ("warm create <= %.1fx docker run (%.2fx)"
                 % (TARGET_WARM_RATIO, warm / run),
                 warm <= TARGET_WARM_RATIO * run),
                ("warm create - docker run <= %d ms (%+.1f ms)"
                 % (TARGET_WARM_EXTRA_MS, warm - run),
                 warm - run <= TARGET_WARM_EXTRA_MS),
                ("count 8 <= %dx a single create (%.2fx)"
                 % (TARGET_BATCH_RATIO, batch / warm),
                 batch <= TARGET_BATCH_RATIO * warm)):
            L("    %s  %s" % ("PASS" if ok else "FAIL", desc))
            failed = failed or not ok
    return lines, failed


def cleanup(b, say=say):
    """Stop the server, then remove every container of this run (b: a
    bench with server, server_log, tmp, state, docker and opt.keep; the
    other benchmarks use this one with their own say)."""
    left = None
    if b.server is not None:
        code = b.server.stop()
        if code not in (0, None):
            say("sandbox-mcp exited with status %s (log: %s)"
                % (code, b.server_log))
    if b.tmp is not None:
        try:
            ids = b.docker.ours(b.state)
            if ids:
                say("removing %d leftover container(s)" % len(ids))
                if hasattr(b, "remove_all"):
                    b.remove_all(ids)
                else:
                    for c in ids:
                        b.docker.remove(c)
            left = len(b.docker.ours(b.state))
            b.docker.remove_networks(b.state)
        except Exception as e:  # noqa: BLE001 - cleanup goes on
            say("cannot list or remove containers or networks: %s" % e)
        if not b.opt.keep:
            # The sandboxes' disks are mounted under it: unmount them
            # (lazily) first, or they outlive the directory.
            for mp in mounts_under(b.tmp):
                subprocess.run(["umount", "-l", mp], capture_output=True)
            shutil.rmtree(b.tmp, ignore_errors=True)
        else:
            say("kept %s" % b.tmp)
    return left


def mounts_under(d):
    """Mount points at or under a directory, deepest first."""
    top = os.path.realpath(d)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp == top or mp.startswith(top + "/"):
                found.append(mp)
    return sorted(found, key=len, reverse=True)


def drive(b, name, report, saved, say, trace=None):
    """Run bench b (SIGTERM and SIGHUP end it as SIGINT does), clean up
    whatever happens, then print its report and write it to NAME.txt and
    saved(b) to NAME.json in the results directory.  Returns the exit
    status: 1 when the run broke, a target was missed or a container was
    left behind.  With the environment variable trace set, a broken run
    prints its traceback."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)

    broken = None
    try:
        b.run()
    except (BenchError, OSError, ValueError, KeyError,
            subprocess.TimeoutExpired) as e:
        broken = str(e) or repr(e)
        if trace and os.environ.get(trace):
            import traceback
            traceback.print_exc()
    except KeyboardInterrupt as e:
        broken = "interrupted (%s)" % (e or "SIGINT")
    finally:
        left = cleanup(b, say)
    if broken is not None:
        say("BROKEN RUN: %s" % broken)
        if os.path.exists(getattr(b, "server_log", "")):
            with open(b.server_log) as f:
                tail = f.read()[-2000:]
            if tail:
                say("server log (end):\n" + tail)
        return 1
    lines, failed = report(b)
    lines.append("")
    lines.append("containers of this run left after cleanup: %s"
                 % ("?" if left is None else left))
    if left:
        failed = True
    text = "\n".join(lines) + "\n"
    with open(os.path.join(b.results, name + ".txt"), "w") as f:
        f.write(text)
    with open(os.path.join(b.results, name + ".json"), "w") as f:
        json.dump(saved(b), f, indent=1)
    sys.stdout.write(text)
    return 1 if failed else 0


def main():
    env = os.environ.get
    ap = argparse.ArgumentParser(description="sandbox lifecycle benchmark")
    ap.add_argument("--image", action="append", dest="images",
                    help="image to measure (repeat); default: $BENCH_"
                    "LIFECYCLE_IMAGES or %s" % DEFAULT_IMAGES)
    ap.add_argument("--warm", type=int, default=int(env("BENCH_LIFECYCLE_WARM", 10)))
    ap.add_argument("--cold", type=int, default=int(env("BENCH_LIFECYCLE_COLD", 5)))
    ap.add_argument("--batch", type=int, default=int(env("BENCH_LIFECYCLE_BATCH", 5)))
    ap.add_argument("--baseline", type=int,
                    default=int(env("BENCH_LIFECYCLE_BASELINE", 10)))
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--bytes", type=int, default=16 * MIB)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pause", type=float, default=0.1,
                    help="seconds between two measurements (0.1)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary directory")
    opt = ap.parse_args()
    if not opt.images:
        opt.images = env("BENCH_LIFECYCLE_IMAGES", DEFAULT_IMAGES).split()
    if min(opt.warm, opt.cold, opt.batch, opt.baseline) < 1:
        ap.error("every sample count must be at least 1")

    return drive(Bench(opt), "lifecycle", report, lambda b: {
        "options": vars(opt), "samples": b.samples, "rounds": b.rounds,
        "create_spans": b.creates, "destroy_spans": b.destroys}, say)


if __name__ == "__main__":
    sys.exit(main())
