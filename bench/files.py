#!/usr/bin/env python3
# bench/files.py: the file tools (file_read, file_write, file_edit,
# file_blame) end to end over MCP stdio, against docker exec cat of the
# same container.  Python 3 standard library only.
#
#   python3 bench/files.py [options]
#
# One sandbox-mcp process (--set management --set runtime over stdio, and
# with --listen 127.0.0.1:0 over HTTP too, no API key, for the large read
# below), one state directory, one generated workspace: --files (1,000)
# small text files in four directories, plus data/small.txt (4 KiB: 64
# lines of 64 bytes), data/big.txt (10,000 lines) and data/large.txt
# (256 KiB, file_read's most: 1,024 lines of 256 bytes).  Per image, one sandbox, then,
# untimed, --layers (20) sessionless file_write calls to distinct other
# files (pre/layerNN.txt), so that the stack holds 20 published layers
# above the base, and a history for data/big.txt: one sessionless
# file_write of it (its first line changed) and --history (4) file_edit
# calls each changing one line in the middle, so that file_blame returns
# 2 x history + 2 ranges.  Then, strictly one call at a time, each timed
# from the request's write to its answer's read, after --warmup (20)
# untimed calls of the same kind:
#
#   read:   file_read data/small.txt (no session: the published snapshot),
#           --runs (300); with --docker (50) "docker exec CONTAINER cat
#           /tmp/files-bench-small.txt" (the CLI, process start to exit)
#           interleaved with them in shuffled rounds.  The container has
#           no /workspace mount of its own (sessions mount the workspace
#           in their own namespaces), so that copy of data/small.txt is
#           put there beforehand with docker exec -i CONTAINER sh -c
#           'cat > FILE' (not docker cp: with a disk the container's root
#           is read-only to Docker)
#   large:  file_read data/large.txt (256 KiB) over stdio and the same
#           call over HTTP, the REST route GET /v1/sandboxes/ID/files?path=
#           data/large.txt on one keep-alive connection (opened before the
#           phase; the run checks it is never reopened), timed from the
#           request's write to the whole body read; --runs of each, in
#           shuffled pairs, same server, same sandbox, same file
#   blame:  file_blame data/big.txt, --runs
#   write:  file_write of 4 KiB to data/written.txt (no session: each one
#           published as a one-file layer; the content differs every time),
#           --runs
#   edit:   file_edit of data/small.txt (no session: published as a layer),
#           one replacement, "state=AAAA" -> "state=BBBB" and back, --runs
#
#   disk floor: in the same run, what a durable atomic replacement of a
#           4 KiB file costs on the state directory's file system (write
#           a temporary file, fsync, rename, fsync the directory), --runs;
#           a sessionless publish makes two barriers (a syncfs for the
#           layer, its meta and the next manifest; an fsync of the
#           stack's directory after the renames) and appends a blame
#           record
#
# Read and blame see a stack of --layers + history + 1 layers.  Each write
# or edit publishes a layer, so these two phases run in fresh sandboxes
# (each with --layers published layers, none of the history) of --window
# (10) timed calls each, to stay at the depth the targets are stated
# for; the depth range they ran at is reported.  Those sandboxes are all
# removed at the end of the run, not between windows, so that no removal
# (file deletions, written back by the next publish's syncfs) falls into
# timed calls.  Every answer is
# checked: read returns the exact bytes of the file, blame returns ranges
# that cover lines 1..10,000 exactly with the owners the setup produced,
# write and edit return a layer_id (all distinct), their byte counts and
# one replacement; the contents are read back after each phase, and the
# docker exec cat output is compared with the file too.
#
# Targets (per image, medians):
#   read  <= 1 ms
#   large over HTTP <= 2 x large over stdio
#   write <= 5 ms
#   edit  <= 5 ms
#   blame <= 5 ms
#
# Reported per phase: median, p90, p99 (nearest rank), min, max, n, and
# the ratio of its median to the docker exec cat median; the same figures
# for the server's own tool.<name> spans of the timed calls (from its
# telemetry log in the state directory), to tell the server's time from
# the stdio round trip; the layer depth (from the stack's manifest.json)
# at the start and end of the phase; the blame range count, the layers at
# the end, and the server's VmRSS per image (sandbox still there) and at
# the end of the run.
#
# Options: --image (repeat; default $BENCH_FILES_IMAGES or both
# sandbox-mcp/debian:bookworm and sandbox-mcp/busybox:test), --runs
# ($BENCH_FILES_RUNS, 300), --docker ($BENCH_FILES_DOCKER, 50), --warmup
# (20), --layers (20), --window (10), --history (4), --files (1000),
# --pause ($BENCH_FILES_PAUSE, 0.005 s between timed calls), --seed (1),
# --keep (keep the temporary directory).  BENCH_FILES_TRACE=1 prints a
# traceback when the run breaks.
#
# Results: printed, and written to $SANDBOX_MCP_BUILDDIR/bench/results/
# files.txt (files.json holds every sample; files-server.log the server's
# stderr).  Exit status 0 when every target is met, 1 when one is missed
# or the run is broken.  Every container of the run carries the label
# io.sandbox-mcp.state-dir=<its state directory> and is removed at the
# end, on failure and on SIGINT/SIGTERM too.

import argparse
import http.client
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True      # leave no __pycache__ in bench/

from lifecycle import (BenchError, Docker, Server, cli,  # noqa: E402
                       median, ms, now, read_spans, urlquote)
from lifecycle import drive  # noqa: E402
from exec import pct, status_kib  # noqa: E402

TARGET_READ_MS = 1.0        # median file_read of 4 KiB, at most
TARGET_WRITE_MS = 5.0       # median file_write of 4 KiB + publish, at most
TARGET_EDIT_MS = 5.0        # median file_edit, one replacement, at most
TARGET_BLAME_MS = 5.0       # median file_blame of 10,000 lines, at most
TARGET_HTTP_RATIO = 2.0     # median file_read of 256 KiB over HTTP, at
                            # most this times the same over stdio

DEFAULT_IMAGES = "sandbox-mcp/debian:bookworm sandbox-mcp/busybox:test"

SMALL = "data/small.txt"
BIG = "data/big.txt"
WRITTEN = "data/written.txt"
LARGE = "data/large.txt"
LARGE_LINES = 1024          # of 256 bytes: 262,144, file_read's most
BIG_LINES = 10000
TOKEN_A, TOKEN_B = "state=AAAA", "state=BBBB"
# The container does not mount the workspace (each session mounts it in
# its own mount namespace), so the baseline's copy of data/small.txt is
# put into the container's own /tmp with docker exec -i (sessions see a
# private tmpfs there instead).
CAT_PATH = "/tmp/files-bench-small.txt"

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
         " mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega"
         " sandbox layer publish session overlay workspace manifest").split()


def say(msg):
    print("files: " + msg, file=sys.stderr, flush=True)


def small_text():
    """4,096 bytes: 64 lines of 63 characters and a newline, one of them
    holding TOKEN_A once."""
    lines = []
    for i in range(64):
        if i == 31:
            s = "line %02d %s" % (i + 1, TOKEN_A)
        else:
            s = "line %02d of the four KiB file, sixty-four bytes a line" % (
                i + 1)
        lines.append(s.ljust(63, ".") + "\n")
    text = "".join(lines)
    assert len(text.encode()) == 4096 and text.count(TOKEN_A) == 1
    return text


def large_text():
    """262,144 bytes: 1,024 lines of 255 characters and a newline."""
    text = "".join(("large %04d " % i + "0123456789abcdef" * 16)[:255] +
                   "\n" for i in range(LARGE_LINES))
    assert len(text.encode()) == 256 * 1024
    return text


def big_line(n, tag="base"):
    return ("%05d %s line of the ten thousand line file" % (n, tag)).ljust(
        47, ".") + "\n"


def write_text(i):
    """4,096 bytes, different for every i."""
    head = ("write %08d " % i).ljust(63, "#") + "\n"
    body = "".join(("written line %02d, run %08d" % (k, i)).ljust(63, "-") +
                   "\n" for k in range(63))
    text = head + body
    assert len(text.encode()) == 4096
    return text


def check_read(r, path, expect):
    """A file_read result holding the whole of expect, from line 1."""
    data = expect.encode()
    nl = expect.count("\n")
    if (r.get("content") != expect or r.get("start_line") != 1 or
            r.get("num_lines") != nl or r.get("total_lines") != nl or
            r.get("bytes_read") != len(data) or
            r.get("total_bytes") != len(data) or
            r.get("truncated") is not False or
            r.get("next_offset") is not None):
        raise BenchError("file_read %s: unexpected answer %s"
                         % (path, json.dumps(r)[:500]))


class Rest:
    """The server's REST routes over one keep-alive HTTP/1.1 connection
    (http.client; no API key: the listener is on loopback and none is
    configured).  A connection the server closed would be reopened by
    http.client without a word: connects counts them, and the run
    breaks if there is more than one."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port,
                                               timeout=120)
        self.connects = 0
        connect = self.conn.connect

        def counted():
            self.connects += 1
            connect()
        self.conn.connect = counted

    def get(self, path):
        """GET path: the JSON result and the round trip in ms, from the
        request's write to the whole body read."""
        t0 = now()
        self.conn.request("GET", path, headers={"Accept":
                                                "application/json"})
        resp = self.conn.getresponse()
        body = resp.read()
        t1 = now()
        if resp.status != 200:
            raise BenchError("GET %s: HTTP %d %r" % (path, resp.status,
                                                     body[:300]))
        if resp.will_close:
            raise BenchError("GET %s: the server closes the connection"
                             % path)
        if self.connects != 1:
            raise BenchError("GET %s: %d connections opened, not one"
                             " kept alive" % (path, self.connects))
        return json.loads(body), ms(t0, t1)

    def close(self):
        self.conn.close()


# ---------------------------------------------------------------- bench

class Bench:
    def __init__(self, opt):
        self.opt = opt
        self.builddir = os.environ.get("SANDBOX_MCP_BUILDDIR",
                                       os.path.dirname(HERE))
        self.binary = os.path.join(self.builddir, "sandbox-mcp")
        self.results = os.path.join(self.builddir, "bench", "results")
        host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        if not host.startswith("unix://"):
            raise BenchError("DOCKER_HOST must be a unix:// socket: " + host)
        self.sock = host[len("unix://"):]
        self.docker = Docker(self.sock)
        self.tmp = None
        self.server = None
        self.sandboxes = []
        self.samples = {}
        self.info = {}          # per image: depths, rss, blame ranges
        self.rss = {}
        self.rng = random.Random(opt.seed)
        self.nwrite = 0         # write_text counter, across images

    def add(self, image, key, value):
        self.samples.setdefault(image, {}).setdefault(key, []).append(value)

    def note(self, image, key, value):
        self.info.setdefault(image, {})[key] = value

    # --- setup

    def make_workspace(self):
        rng = random.Random(self.opt.seed)
        nbytes = 0
        dirs = ("src", "lib", "docs", "tests")
        for i in range(self.opt.files):
            d = os.path.join(self.ws, dirs[i % len(dirs)])
            os.makedirs(d, exist_ok=True)
            lines = []
            size = rng.randrange(200, 2000)
            n = 0
            while n < size:
                s = " ".join(rng.choice(WORDS)
                             for _ in range(rng.randrange(3, 12))) + "\n"
                lines.append(s)
                n += len(s)
            data = "".join(lines).encode()
            with open(os.path.join(d, "file%04d.txt" % i), "wb") as f:
                f.write(data)
            nbytes += len(data)
        os.makedirs(os.path.join(self.ws, "data"))
        self.small = small_text()
        self.big = "".join(big_line(n) for n in range(1, BIG_LINES + 1))
        self.large = large_text()
        for rel, text in ((SMALL, self.small), (BIG, self.big),
                          (LARGE, self.large)):
            with open(os.path.join(self.ws, rel), "w") as f:
                f.write(text)
            nbytes += len(text.encode())
        self.ws_desc = ("%d small text files in %d directories, plus %s"
                        " (4,096 bytes, 64 lines), %s (%s lines, %d"
                        " bytes) and %s (262,144 bytes, %s lines); %d"
                        " bytes in all" % (
                            self.opt.files, len(dirs), SMALL, BIG,
                            "{:,}".format(BIG_LINES), len(self.big),
                            LARGE, "{:,}".format(LARGE_LINES), nbytes))

    def setup(self):
        if not os.access(self.binary, os.X_OK):
            raise BenchError("%s not built (run make first)" % self.binary)
        # Canonical: sandbox-mcp labels its containers with this path.
        self.tmp = os.path.realpath(
            tempfile.mkdtemp(prefix="sandbox-mcp-files."))
        self.state = os.path.join(self.tmp, "state")
        self.wsroot = os.path.join(self.tmp, "workspaces")
        self.ws = os.path.join(self.wsroot, "project")
        os.makedirs(self.state)
        os.makedirs(self.ws)
        self.make_workspace()
        self.conf = os.path.join(self.tmp, "sandbox-mcp.conf")
        with open(self.conf, "w") as f:
            f.write("workspace-root %s\n" % self.wsroot)
            # A disk's cap is reserved when it is made (BENCH_DISK).
            f.write("profile disk %s\n" % os.environ.get("BENCH_DISK",
                                                         "2G"))
        os.makedirs(self.results, exist_ok=True)
        self.server_log = os.path.join(self.results, "files-server.log")
        open(self.server_log, "w").close()
        # Over stdio, and over HTTP on a loopback port of the kernel's
        # choosing (no API key: loopback only) for the large read.
        self.server = Server([self.binary, "--set", "management", "--set",
                              "runtime", "-f", self.conf, "--state-dir",
                              self.state, "--docker-host",
                              "unix://" + self.sock, "--listen",
                              "127.0.0.1:0"], self.server_log)
        msg, _ = self.server.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench-files", "version": "1"}})
        if "result" not in msg:
            raise BenchError("initialize failed: %r" % msg)
        self.server.notify("notifications/initialized")
        self.pid = self.server.proc.pid
        self.rss["idle"] = status_kib(self.pid)
        self.rest = Rest(self.http_port())

    def http_port(self):
        """The port of the server's listener, from its "listening on
        http://127.0.0.1:PORT/mcp" line."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(self.server_log, errors="replace") as f:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/",
                              f.read())
            if m:
                return int(m.group(1))
            if self.server.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise BenchError("sandbox-mcp did not say where it listens")

    def depth(self):
        """Published layers above the base, from the stack's manifest."""
        p = os.path.join(self.state, "sandboxes", self.sid, "stack",
                         "manifest.json")
        with open(p) as f:
            layers = json.load(f)["layers"]
        # Newest first, the base last (layer_id "B000001-base").
        return sum(1 for x in layers
                   if not x.get("layer_id", "").endswith("-base"))

    def tool(self, name, args):
        return self.server.tool(name, dict(args, sandbox_id=self.sid))

    # --- checked calls

    def read(self, path, expect):
        r, t = self.tool("file_read", {"path": path})
        check_read(r, path, expect)
        return t

    def read_http(self, path, expect):
        """The same file_read through its REST route, on the keep-alive
        connection."""
        r, t = self.rest.get("/v1/sandboxes/%s/files?path=%s" % (
            urlquote(self.sid), urlquote(path)))
        check_read(r, path, expect)
        return t

    def published(self, what, r, path, nbytes):
        lid = r.get("layer_id")
        if (not lid or r.get("path") != path or
                r.get("bytes_written") != nbytes or
                not str(r.get("owner", "")).startswith("operation:")):
            raise BenchError("%s %s: unexpected answer %s"
                             % (what, path, json.dumps(r)[:500]))
        if lid in self.layer_ids:
            raise BenchError("%s %s: layer_id %s seen before"
                             % (what, path, lid))
        self.layer_ids.add(lid)

    def write(self, path, text):
        r, t = self.tool("file_write", {"path": path, "content": text})
        if r.get("type") not in ("create", "update"):
            raise BenchError("file_write %s: unexpected answer %s"
                             % (path, json.dumps(r)[:500]))
        self.published("file_write", r, path, len(text.encode()))
        return r, t

    def edit(self, path, old, new, size):
        r, t = self.tool("file_edit", {"path": path, "edits": [
            {"old_string": old, "new_string": new}]})
        if (r.get("type") != "edit" or r.get("edits_applied") != 1 or
                r.get("replacements") != 1):
            raise BenchError("file_edit %s: unexpected answer %s"
                             % (path, json.dumps(r)[:500]))
        self.published("file_edit", r, path, size)
        return r, t

    def blame(self):
        r, t = self.tool("file_blame", {"path": BIG})
        if r.get("path") != BIG or r.get("ranges") != self.want_ranges:
            raise BenchError("file_blame %s: ranges %s, expected %s" % (
                BIG, json.dumps(r.get("ranges"))[:600],
                json.dumps(self.want_ranges)[:600]))
        return t

    # --- setup of the sandbox

    def prepare(self, image):
        o = self.opt
        self.layer_ids = set()
        for i in range(o.layers):
            self.write("pre/layer%02d.txt" % i,
                       "layer %d of the stack before timing\n" % i)
        # data/big.txt: a sessionless write (line 1 changed: an audit
        # record, its owner on line 1), then edits of single lines in the
        # middle, each its own owner.
        text = big_line(1, "rewritten") + self.big[len(big_line(1)):]
        r, _ = self.write(BIG, text)
        owners = {1: r["owner"]}
        step = BIG_LINES // (o.history + 1)
        for k in range(1, o.history + 1):
            n = k * step
            old, new = big_line(n), big_line(n, "edit%d" % k)
            r, _ = self.edit(BIG, old, new, len(text.encode()))
            text = text.replace(old, new)
            owners[n] = r["owner"]
        self.big_now = text
        want = []
        for n in range(1, BIG_LINES + 1):
            owner = owners.get(n, "original")
            if want and want[-1]["owner"] == owner:
                want[-1]["line_count"] += 1
            else:
                want.append({"start_line": n, "line_count": 1,
                             "owner": owner})
        self.want_ranges = want
        self.note(image, "blame_ranges", len(want))
        d = self.depth()
        if d != o.layers + o.history + 1:
            raise BenchError("%d layers after the setup, expected %d"
                             % (d, o.layers + o.history + 1))
        # The history is readable back.
        r, _ = self.tool("file_read", {"path": BIG, "offset": step,
                                       "limit": 1})
        if r.get("content") != big_line(step, "edit1"):
            raise BenchError("file_read %s line %d: %r"
                             % (BIG, step, r.get("content")))

    # --- measurements

    def m_read(self, image, record=True):
        t = self.read(SMALL, self.small)
        if record:
            self.add(image, "read", t)

    def m_cat(self, image, record=True):
        t0 = now()
        r = subprocess.run(["docker", "exec", self.cid, "cat", CAT_PATH],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        t1 = now()
        if r.returncode != 0:
            raise BenchError("docker exec cat: status %d: %s" % (
                r.returncode, r.stderr.decode(errors="replace")[:300]))
        if r.stdout != self.small.encode():
            raise BenchError("docker exec cat: %d bytes, not the file's"
                             " %d" % (len(r.stdout), len(self.small)))
        if record:
            self.add(image, "cat", ms(t0, t1))

    def phase_depth(self, image, name, when):
        self.note(image, "depth_%s_%s" % (name, when), self.depth())

    def phase_spans(self, image, key, tool):
        """The server's own duration of the phase's timed calls: the
        last --runs tool.<tool> spans of its telemetry log (calls are
        sequential, so these are the timed ones)."""
        time.sleep(0.05)
        spans = [x for x in read_spans(self.state)
                 if x.get("name") == "tool." + tool]
        for x in spans[-self.opt.runs:]:
            self.add(image, key + "_span", x["dur_ms"])

    def run_read(self, image):
        o = self.opt
        self.phase_depth(image, "read", "start")
        for _ in range(o.warmup):
            self.m_read(image, record=False)
        # Not docker cp: with a disk the container's root is read-only to
        # Docker, and writable only through the overlay sandbox-mcp
        # mounts over it in the container's mount namespace, where
        # docker exec runs.
        r = subprocess.run(["docker", "exec", "-i", self.cid, "sh", "-c",
                            "cat > %s" % CAT_PATH], input=self.small.encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        if r.returncode != 0:
            raise BenchError("docker exec -i (a copy to %s): status %d: %s"
                             % (CAT_PATH, r.returncode,
                                r.stderr.decode(errors="replace")[:300]))
        for _ in range(3):
            self.m_cat(image, record=False)
        say("image %s: %d file_read, %d docker exec cat, interleaved"
            % (image, o.runs, o.docker))
        per = max(1, o.runs // o.docker)
        left = o.runs
        for i in range(o.docker):
            n = per if i < o.docker - 1 else left
            steps = [self.m_read] * n + [self.m_cat]
            left -= n
            self.rng.shuffle(steps)
            for fn in steps:
                fn(image)
                if o.pause:
                    time.sleep(o.pause)
        self.phase_depth(image, "read", "end")
        self.phase_spans(image, "read", "file_read")

    def run_large(self, image):
        """file_read of 256 KiB over stdio and over HTTP (REST, one
        keep-alive connection), same server, sandbox and file, in
        shuffled pairs."""
        o = self.opt
        self.phase_depth(image, "large", "start")
        for _ in range(o.warmup):
            self.read(LARGE, self.large)
            self.read_http(LARGE, self.large)
        say("image %s: %d file_read of 256 KiB over stdio and over HTTP,"
            " in shuffled pairs" % (image, o.runs))
        for _ in range(o.runs):
            steps = [("large_stdio", self.read), ("large_http",
                                                  self.read_http)]
            self.rng.shuffle(steps)
            for key, fn in steps:
                self.add(image, key, fn(LARGE, self.large))
                if o.pause:
                    time.sleep(o.pause)
        self.phase_depth(image, "large", "end")

    def run_blame(self, image):
        o = self.opt
        self.phase_depth(image, "blame", "start")
        say("image %s: %d file_blame (%d ranges)"
            % (image, o.runs, len(self.want_ranges)))
        for i in range(o.warmup + o.runs):
            t = self.blame()
            if i >= o.warmup:
                self.add(image, "blame", t)
            if o.pause:
                time.sleep(o.pause)
        self.phase_depth(image, "blame", "end")
        self.phase_spans(image, "blame", "file_blame")

    def fresh(self, image):
        """A new sandbox of the image with --layers published layers,
        replacing the phase's previous one: every write or edit adds a
        layer, so the phases move to a fresh stack every --window calls
        to stay at the depth the targets are stated for.  The previous
        one stays until the run ends: removing it here would put its file
        deletions (and their write-back, which each publish's syncfs
        waits for; on an ext4 without a journal also the slower inode
        allocation after many deletions) into the timed calls."""
        o = self.opt
        res, _ = self.server.tool("create_sandbox", {
            "image": image, "workspace_root": self.ws})
        self.sid, self.cid = res["id"], res["container_id"]
        self.sandboxes.append(self.sid)
        for i in range(o.layers):
            self.write("pre/layer%02d.txt" % i,
                       "layer %d of the stack before timing\n" % i)
        if self.depth() != o.layers:
            raise BenchError("%d layers in a fresh sandbox, expected %d"
                             % (self.depth(), o.layers))

    def destroy(self, sid):
        res, _ = self.server.tool("destroy_sandbox", {"sandbox_id": sid})
        if res.get("state") != "stopped":
            raise BenchError("destroy_sandbox: %s" % res)
        self.sandboxes.remove(sid)

    def rotating(self, image, name, call):
        """Run --warmup + --runs calls of a write-like phase, in fresh
        sandboxes of --window timed calls each; record the depth range."""
        o = self.opt
        depths = []
        self.fresh(image)
        for i in range(o.warmup):
            call(i)
        n = 0
        while n < o.runs:
            if n > 0 or o.warmup > 0:
                self.fresh(image)
            for _ in range(min(o.window, o.runs - n)):
                depths.append(self.depth())
                t = call(o.warmup + n)
                self.add(image, name, t)
                n += 1
                if o.pause:
                    time.sleep(o.pause)
        self.note(image, "depth_%s_start" % name, min(depths))
        self.note(image, "depth_%s_end" % name, max(depths))
        self.phase_spans(image, name, "file_" + name)

    def run_write(self, image):
        o = self.opt
        say("image %s: %d file_write of 4 KiB" % (image, o.runs))
        last = [None]

        def call(i):
            self.nwrite += 1
            last[0] = write_text(self.nwrite)
            _, t = self.write(WRITTEN, last[0])
            return t
        self.rotating(image, "write", call)
        self.read(WRITTEN, last[0])

    def run_edit(self, image):
        say("image %s: %d file_edit" % (image, self.opt.runs))
        cur = [None, None]

        def call(i):
            if cur[1] != self.sid:      # a fresh sandbox: the base text
                cur[0], cur[1] = self.small, self.sid
            old, new = ((TOKEN_A, TOKEN_B) if TOKEN_A in cur[0]
                        else (TOKEN_B, TOKEN_A))
            _, t = self.edit(SMALL, old, new, 4096)
            cur[0] = cur[0].replace(old, new)
            return t
        self.rotating(image, "edit", call)
        self.read(SMALL, cur[0])

    def run_sync(self, image):
        """The disk's floor, same run: what a durable atomic 4 KiB file
        replacement costs here (write a temporary file, fsync it, rename
        it over the target, fsync the directory), in the state
        directory's file system."""
        d = os.path.join(self.tmp, "sync-floor")
        os.makedirs(d, exist_ok=True)
        data = self.small.encode()
        for i in range(self.opt.warmup + self.opt.runs):
            t0 = now()
            tmp = os.path.join(d, "f.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, os.path.join(d, "f"))
            dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(dfd)
            os.close(dfd)
            t1 = now()
            if i >= self.opt.warmup:
                self.add(image, "sync", ms(t0, t1))

    # --- the run

    def run(self):
        self.setup()
        info = self.docker.call("GET", "/version")[1]
        self.docker_desc = "Docker Engine %s (API %s), CLI %s" % (
            info.get("Version"), info.get("ApiVersion"),
            cli(["docker", "version", "--format", "{{.Client.Version}}"]))
        self.image_desc = {}
        for image in self.opt.images:
            st, img = self.docker.call("GET", "/images/%s/json" %
                                       urlquote(image), ok=(200, 404))
            if st == 404:
                raise BenchError("image %s is not there locally" % image)
            self.image_desc[image] = "%s, %.1f MB" % (img["Id"][:19],
                                                     img["Size"] / 1e6)
        for image in self.opt.images:
            res, t = self.server.tool("create_sandbox", {
                "image": image, "workspace_root": self.ws})
            self.sid, self.cid = res["id"], res["container_id"]
            self.main_sid = self.sid
            self.sandboxes.append(self.sid)
            say("image %s: sandbox %s (%.0f ms)" % (image, self.sid, t))
            t0 = now()
            self.prepare(image)
            self.run_read(image)
            self.run_large(image)
            self.run_blame(image)
            self.note(image, "layers_end", self.depth())
            self.note(image, "rss_kib", status_kib(self.pid))
            self.run_write(image)
            self.run_edit(image)
            self.run_sync(image)
            self.sid = self.main_sid
            self.blame()        # unchanged by the phases in between
            self.samples[image]["elapsed_s"] = [now() - t0]
        # Every sandbox of the run goes only now (see fresh).
        for sid in list(self.sandboxes):
            self.destroy(sid)
        self.rss["end"] = status_kib(self.pid)


# --------------------------------------------------------------- report

def row(label, xs, base):
    m = median(xs)
    return "  %-42s %7.2f %7.2f %7.2f %7.2f %7.2f %4d %7.3f" % (
        label, m, pct(xs, 0.90), pct(xs, 0.99), min(xs) if xs else
        float("nan"), max(xs) if xs else float("nan"), len(xs), m / base)


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
    L("files: file_read / file_write / file_edit / file_blame over stdio,"
      " against docker exec cat of the same container")
    lines.extend(textwrap.wrap("workspace: " + b.ws_desc, 78,
                               subsequent_indent="  "))
    L("machine: %d CPUs (%s), %s; %s; %s" % (
        os.cpu_count(), cpu, " ".join(os.uname()[i] for i in (0, 2)),
        version, b.docker_desc))
    lines.extend(textwrap.wrap(
        "method: client-side round trip, request line written to answer"
        " line read (HTTP: request written to the whole body read;"
        " docker exec cat: CLI process start to exit; server's"
        " tool span: the tool.* span of its telemetry log), in ms;"
        " p90/p99 nearest rank; ratio = median / docker exec cat median;"
        " %d warm-up calls per phase, %.0f ms pause between calls; no"
        " workspace session (the published snapshot; writes and edits"
        " publish a layer each)" % (o.warmup, o.pause * 1000),
        78, subsequent_indent="  "))
    failed = False
    for image in o.images:
        s = b.samples.get(image, {})
        inf = b.info.get(image, {})
        cat = median(s.get("cat", []))
        L("")
        L("image %s (%s)" % (image, b.image_desc[image]))
        L("  %-42s %7s %7s %7s %7s %7s %4s %7s" % (
            "", "median", "p90", "p99", "min", "max", "n", "ratio"))

        def dep(name):
            return "layers %d-%d" % (inf.get("depth_%s_start" % name, -1),
                                     inf.get("depth_%s_end" % name, -1))
        span = "  server's tool span"
        L(row("file_read 4 KiB (%s)" % dep("read"), s.get("read", []), cat))
        L(row(span, s.get("read_span", []), cat))
        L(row("docker exec cat 4 KiB", s.get("cat", []), cat))
        L(row("file_read 256 KiB, stdio (%s)" % dep("large"),
              s.get("large_stdio", []), cat))
        L(row("file_read 256 KiB, HTTP keep-alive (REST)",
              s.get("large_http", []), cat))
        L(row("file_blame 10,000 lines (%s)" % dep("blame"),
              s.get("blame", []), cat))
        L(row(span, s.get("blame_span", []), cat))
        L(row("file_write 4 KiB (%s)" % dep("write"), s.get("write", []),
              cat))
        L(row(span, s.get("write_span", []), cat))
        L(row("file_edit 4 KiB (%s)" % dep("edit"), s.get("edit", []), cat))
        L(row(span, s.get("edit_span", []), cat))
        L(row("disk floor: fsync'd atomic 4 KiB replace",
              s.get("sync", []), cat))
        L("  blame: %d ranges; layers then: %d; server VmRSS then:"
          " %.1f MiB (VmHWM %.1f)" % (
              inf.get("blame_ranges", 0), inf.get("layers_end", -1),
              inf["rss_kib"]["VmRSS"] / 1024,
              inf["rss_kib"]["VmHWM"] / 1024))
        L("  targets:")
        for key, desc, target in (
                ("read", "file_read", TARGET_READ_MS),
                ("write", "file_write", TARGET_WRITE_MS),
                ("edit", "file_edit", TARGET_EDIT_MS),
                ("blame", "file_blame", TARGET_BLAME_MS)):
            m = median(s.get(key, []))
            ok = m <= target
            L("    %s  median %s <= %.0f ms (%.2f ms, %.3f x docker exec"
              " cat)" % ("PASS" if ok else "FAIL", desc, target, m,
                         m / cat))
            failed = failed or not ok
        hm = median(s.get("large_http", []))
        sm = median(s.get("large_stdio", []))
        ok = hm <= TARGET_HTTP_RATIO * sm
        L("    %s  median file_read 256 KiB over HTTP <= %.0fx over stdio"
          " (%.2f ms / %.2f ms = %.2fx)" % (
              "PASS" if ok else "FAIL", TARGET_HTTP_RATIO, hm, sm,
              hm / sm))
        failed = failed or not ok
    L("")
    L("server RSS (MiB): %.1f at idle (after initialize), %.1f after the"
      " run (sandboxes destroyed), peak (VmHWM) %.1f" % (
          b.rss["idle"]["VmRSS"] / 1024, b.rss["end"]["VmRSS"] / 1024,
          b.rss["end"]["VmHWM"] / 1024))
    return lines, failed


def main():
    env = os.environ.get
    ap = argparse.ArgumentParser(description="file tools benchmark")
    ap.add_argument("--image", action="append", dest="images",
                    help="image to measure (repeat); default: $BENCH_FILES_"
                    "IMAGES or %s" % DEFAULT_IMAGES)
    ap.add_argument("--runs", type=int,
                    default=int(env("BENCH_FILES_RUNS", 300)),
                    help="timed calls per phase (300)")
    ap.add_argument("--docker", type=int,
                    default=int(env("BENCH_FILES_DOCKER", 50)),
                    help="docker exec cat runs (50)")
    ap.add_argument("--warmup", type=int, default=20,
                    help="untimed calls before each phase (20)")
    ap.add_argument("--layers", type=int, default=20,
                    help="layers published before timing (20)")
    ap.add_argument("--window", type=int, default=10,
                    help="timed writes or edits per fresh sandbox (10)")
    ap.add_argument("--history", type=int, default=4,
                    help="file_edit calls in data/big.txt's history (4)")
    ap.add_argument("--files", type=int, default=1000,
                    help="small files in the workspace (1000)")
    ap.add_argument("--pause", type=float,
                    default=float(env("BENCH_FILES_PAUSE", 0.005)),
                    help="seconds between timed calls (0.005)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary directory")
    opt = ap.parse_args()
    if not opt.images:
        opt.images = env("BENCH_FILES_IMAGES", DEFAULT_IMAGES).split()
    if min(opt.runs, opt.docker, opt.files, opt.window) < 1:
        ap.error("--runs, --docker, --files and --window must be at"
                 " least 1")
    if min(opt.warmup, opt.layers, opt.history) < 0 or opt.history > 100:
        ap.error("--warmup, --layers, --history: 0 or more (history"
                 " at most 100)")
    if opt.docker > opt.runs:
        ap.error("--docker must not exceed --runs")

    return drive(Bench(opt), "files", report, lambda b: {
        "options": vars(opt), "samples": b.samples, "info": b.info,
        "rss_kib": b.rss}, say, "BENCH_FILES_TRACE")


if __name__ == "__main__":
    sys.exit(main())
