#!/usr/bin/env python3
# bench/exec.py: exec_command end to end over MCP stdio, against docker
# exec of the same container.  See bench/README ("exec").  Python 3
# standard library only.
#
#   python3 bench/exec.py [options]
#
# One sandbox-mcp process (--set management --set runtime over stdio), one
# state directory, a small generated workspace; per image, one sandbox:
#
#   seq:     exec_command "true" in an automatic session (session created,
#            command run, changes captured, session destroyed, all before
#            the answer), strictly one after another, 500 timed; with 100
#            "docker exec CONTAINER true" (the CLI, process start to exit),
#            100 Engine API execs (POST /containers/ID/exec, POST
#            /exec/ID/start attached until the stream ends, GET
#            /exec/ID/json: what the CLI does, without the CLI) of the
#            sandbox's own container, and 200 "nsenter -t PID -a true"
#            (PID: the container's init, State.Pid from docker inspect;
#            a subprocess started the same way as the CLI's, process start
#            to exit: the floor for running a process in the container's
#            namespaces) interleaved with them, in shuffled rounds
#   conc:    20 exec_command "true" sent at once (pipelined, distinct ids),
#            each timed from its own request's write to its answer; 25
#            rounds
#   rss:     64 commands "sleep 60" started (yield_time_ms 100), all
#            answering "running"; VmRSS and VmHWM of the server read from
#            /proc/PID/status; then each is interrupted (Ctrl-C) and waited
#            for
#   publish: "head -c 4096 /dev/urandom > f$i", 200 runs one after
#            another: a 4 KiB file written and published as a layer, each
#            answer's publish.layer_id checked; beside each run, in a
#            shuffled order, the disk's floor: a durable atomic replacement
#            of a 4 KiB file in a directory beside the state directory, on
#            its file system (write a temporary file, fsync, rename over
#            the target, fsync the directory)
#
# Targets (per image):
#   seq:     median <= 10 ms, <= 1/8 of the docker exec (CLI) median and
#            <= 1.2 x the nsenter median
#   conc:    p95 <= 40 ms
#   publish: median <= 10 ms
#   rss:     VmRSS of sandbox-mcp with 64 commands running <= 32 MiB
#
# Results: printed, and written to $SANDBOX_MCP_BUILDDIR/bench/results/
# exec.txt (exec.json holds every sample).  Exit status 0 when every
# target is met, 1 when one is missed or the run is broken.  Every
# container of the run carries the label io.sandbox-mcp.state-dir=<its
# state directory> and is removed at the end, on failure and on
# SIGINT/SIGTERM too.

import argparse
import hashlib
import json
import math
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True      # no __pycache__ in the source tree

from lifecycle import (BenchError, Docker, Server,  # noqa: E402
                       UnixHTTPConnection, cli, median, ms, now, urlquote)
from lifecycle import drive  # noqa: E402

MIB = 1024 * 1024

TARGET_SEQ_MS = 10.0        # median exec_command true, at most
TARGET_SEQ_RATIO = 1 / 8    # of the docker exec CLI median, at most
TARGET_NSENTER_RATIO = 1.2  # of the nsenter -t PID -a true median, at most
TARGET_CONC_P95_MS = 40.0   # 20 at once, p95, at most
TARGET_PUB_MS = 10.0        # median write 4 KiB + publish, at most
TARGET_RSS_MIB = 32.0       # VmRSS with 64 commands running, at most

DEFAULT_IMAGES = "sandbox-mcp/debian:bookworm sandbox-mcp/busybox:test"
YIELD_MS = 60000


def say(msg):
    print("exec: " + msg, file=sys.stderr, flush=True)


def pct(xs, q):
    """Nearest rank."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def status_kib(pid):
    """VmRSS and VmHWM of a process, in KiB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out


def pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid):
    """Every process below pid (from /proc/*/stat): (pid, comm, Pss in
    KiB)."""
    parent = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % e) as f:
                st = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses: split after the last ')'.
        fields = st[st.rindex(")") + 2:].split()
        parent[int(e)] = int(fields[1])
    out = []
    for p in parent:
        q = parent.get(p)
        while q and q != pid:
            q = parent.get(q)
        if q == pid:
            try:
                with open("/proc/%d/comm" % p) as f:
                    comm = f.read().strip()
            except OSError:
                continue
            out.append((p, comm, pss_kib(p)))
    return out


def cpu_times():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)       # idle + iowait
    return sum(v) - idle, sum(v)


def busy_pct(a, b):
    """Share of all CPUs busy between two cpu_times() samples, in %."""
    return 100.0 * (b[0] - a[0]) / max(1, b[1] - a[1])


DOCKER_COMMS = ("dockerd", "containerd", "containerd-shim", "runc",
                "docker-init", "docker-proxy")


def proc_cpu():
    """Every process: pid -> (comm, ppid, start, CPU ticks used by it and
    by its reaped children)."""
    out = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % e) as f:
                st = f.read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        v = st[st.rindex(")") + 2:].split()
        # Process 1 reaps every orphan, Docker's exited shims among
        # them: its children's time cannot be told apart, so only its
        # own counts.
        n = 13 if e == "1" else 15
        out[int(e)] = (comm, int(v[1]), int(v[19]),
                       sum(int(x) for x in v[11:n]))
    return out


def cpu_split(a, b, me):
    """CPU used between two proc_cpu() snapshots, in % of the machine,
    by: this run (this process and everything below it: the server, its
    helpers and commands, the docker CLI), Docker's daemons and
    containers, kernel threads, and everything else (other work)."""
    snap = dict(a)
    snap.update(b)

    def owner(pid):
        seen = 0
        p = pid
        while p > 1 and seen < 64:
            comm, ppid = snap[p][0], snap[p][1]
            if p == me:
                return "run"
            if p == 2 or ppid == 2:
                return "kernel"
            if comm.startswith(DOCKER_COMMS) or comm.startswith("runc:"):
                return "docker"
            if ppid not in snap:
                break
            p = ppid
            seen += 1
        return "other"
    use = {"run": 0, "docker": 0, "kernel": 0, "other": 0}
    for pid, (comm, ppid, start, t) in b.items():
        if pid in a and a[pid][2] == start:
            t -= a[pid][3]
        use[owner(pid)] += max(0, t)
    return use


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def fs_desc(path):
    """The file system a path lies on: type, source, and for ext4 whether
    it has a journal (a journal-less ext4 skips recently deleted inodes
    when it allocates one; see bench/README)."""
    path = os.path.realpath(path)
    best = ("", "?", "?")
    with open("/proc/self/mountinfo") as f:
        for line in f:
            a, _, b = line.partition(" - ")
            mnt = a.split()[4]
            fstype, source = b.split()[:2]
            inside = (path == mnt or path.startswith(mnt.rstrip("/") + "/"))
            if inside and len(mnt) >= len(best[0]):
                best = (mnt, fstype, source)
    mnt, fstype, source = best
    desc = "%s on %s (%s)" % (fstype, mnt, source)
    if fstype == "ext4":
        dev = os.path.basename(source)
        try:
            journals = os.listdir("/proc/fs/jbd2")
        except OSError:
            journals = None
        if journals is not None:
            has = any(j.rsplit("-", 1)[0] == dev for j in journals)
            desc += ", with a journal" if has else ", without a journal"
    return desc


# --------------------------------------------------------------- server

class Client(Server):
    """lifecycle's stdio client, plus pipelined requests: lines are
    stamped with the time the chunk that completed them was read."""

    def __init__(self, argv, log_path):
        super().__init__(argv, log_path)
        self.lines = []         # (line, arrival time), not yet taken

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise BenchError("sandbox-mcp gave no answer in time")
        r, _, _ = select.select([self.rfd], [], [], left)
        if not r:
            return
        chunk = os.read(self.rfd, 1 << 20)
        t = now()
        if not chunk:
            raise BenchError("sandbox-mcp closed its stdout (exit status"
                             " %r)" % self.proc.poll())
        self.buf += chunk
        while b"\n" in self.buf:
            line, _, self.buf = self.buf.partition(b"\n")
            self.lines.append((line, t))

    def send_call(self, name, args):
        """Write a tools/call; its id and the time the write began."""
        self.next_id += 1
        rid = self.next_id
        data = (json.dumps({"jsonrpc": "2.0", "id": rid,
                            "method": "tools/call",
                            "params": {"name": name,
                                       "arguments": args}}) +
                "\n").encode()
        t0 = now()
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]
        return rid, t0

    def collect(self, rids, timeout=300):
        """Answers to every id in rids: {id: (message, arrival time)}."""
        want = set(rids)
        got = {}
        deadline = time.monotonic() + timeout
        while want:
            while not self.lines:
                self._fill(deadline)
            line, t = self.lines.pop(0)
            msg = json.loads(line)
            rid = msg.get("id")
            if rid in want:
                want.discard(rid)
                got[rid] = (msg, t)
        return got

    def call(self, name, args, timeout=300):
        """One tool call: its structuredContent and round trip in ms."""
        rid, t0 = self.send_call(name, args)
        msg, t1 = self.collect([rid], timeout)[rid]
        return result(name, msg), ms(t0, t1)


def result(name, msg):
    if "error" in msg:
        raise BenchError("%s: JSON-RPC error %s" % (name, msg["error"]))
    res = msg["result"]
    if res.get("isError"):
        raise BenchError("%s failed: %s" % (
            name, json.dumps(res.get("structuredContent"))[:500]))
    return res["structuredContent"]


def check_true(r, what):
    if (r.get("status") != "ok" or r.get("exit_code") != 0 or
            r.get("output") != "" or r.get("publish") is not None):
        raise BenchError("%s: unexpected answer %s"
                         % (what, json.dumps(r)[:500]))


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
        self.log_name = "exec-server.log"
        self.samples = {}
        self.rss = {}
        self.rng = random.Random(opt.seed)

    def add(self, image, key, value):
        self.samples.setdefault(image, {}).setdefault(key, []).append(value)

    def setup(self):
        if not os.access(self.binary, os.X_OK):
            raise BenchError("%s not built (run make first)" % self.binary)
        with open(self.binary, "rb") as f:
            self.binary_sha = hashlib.sha256(f.read()).hexdigest()
        self.binary_mtime = os.stat(self.binary).st_mtime
        # Canonical: sandbox-mcp labels its containers with this path.
        self.tmp = os.path.realpath(
            tempfile.mkdtemp(prefix="sandbox-mcp-exec.",
                             dir=self.opt.tmpdir))
        self.state = os.path.join(self.tmp, "state")
        self.wsroot = os.path.join(self.tmp, "workspaces")
        self.ws = os.path.join(self.wsroot, "project")
        os.makedirs(self.state)
        self.state_fs = fs_desc(self.state)
        rng = random.Random(self.opt.seed)
        nbytes = 0
        for i in range(self.opt.files):
            d = os.path.join(self.ws, "src" if i % 2 else "doc")
            os.makedirs(d, exist_ok=True)
            size = rng.randrange(100, 8192)
            with open(os.path.join(d, "file%02d.txt" % i), "wb") as f:
                f.write(rng.randbytes(size))
            nbytes += size
        self.ws_desc = "%d files in 2 directories, %d bytes" % (
            self.opt.files, nbytes)
        self.conf = os.path.join(self.tmp, "sandbox-mcp.conf")
        with open(self.conf, "w") as f:
            f.write("workspace-root %s\n" % self.wsroot)
            # A disk's cap is reserved when it is made (BENCH_DISK).
            f.write("profile disk %s\n" % os.environ.get("BENCH_DISK",
                                                         "2G"))
            # The cap the rss phase reaches (the server's default is 64).
            f.write("limit commands-running %d\n" % self.opt.running)
            if self.opt.session_pool is not None:
                f.write("limit session-pool %d\n" % self.opt.session_pool)
        os.makedirs(self.results, exist_ok=True)
        self.server_log = os.path.join(self.results, self.log_name)
        open(self.server_log, "w").close()
        self.server = Client([self.binary, "--set", "management", "--set",
                              "runtime", "-f", self.conf, "--state-dir",
                              self.state, "--docker-host",
                              "unix://" + self.sock], self.server_log)
        msg, _ = self.server.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench-exec", "version": "1"}})
        if "result" not in msg:
            raise BenchError("initialize failed: %r" % msg)
        self.server.notify("notifications/initialized")
        self.pid = self.server.proc.pid
        self.rss["idle"] = status_kib(self.pid)

    # --- measurements

    def exec_true(self):
        r, t = self.server.call("exec_command", {
            "sandbox_id": self.sid, "cmd": "true",
            "yield_time_ms": YIELD_MS})
        check_true(r, "exec_command true")
        return r, t

    def m_exec(self, image, record=True):
        r, t = self.exec_true()
        if record:
            self.add(image, "seq", t)
            self.add(image, "seq_wall", r["wall_time_seconds"] * 1000)
            self.add(image, "seq_cmd",
                     r["command_total_time_seconds"] * 1000)

    def m_cli(self, image, record=True):
        t0 = now()
        r = subprocess.run(["docker", "exec", self.cid, "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        t1 = now()
        if r.returncode != 0:
            raise BenchError("docker exec: status %d: %s" % (
                r.returncode, r.stderr.decode(errors="replace")[:300]))
        if record:
            self.add(image, "cli", ms(t0, t1))

    def m_api(self, image, record=True):
        t0 = now()
        _, e = self.docker.call("POST", "/containers/%s/exec" % self.cid, {
            "Cmd": ["true"], "AttachStdin": False, "AttachStdout": True,
            "AttachStderr": True, "Tty": False})
        conn = UnixHTTPConnection(self.sock)
        try:
            conn.request("POST", "/exec/%s/start" % e["Id"],
                         body=json.dumps({"Detach": False,
                                          "Tty": False}).encode(),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()     # the attached stream, to its end
        finally:
            conn.close()
        if resp.status != 200:
            raise BenchError("exec start: HTTP %d %r" % (resp.status,
                                                         data[:200]))
        _, info = self.docker.call("GET", "/exec/%s/json" % e["Id"])
        t1 = now()
        if info.get("Running") or info.get("ExitCode") != 0:
            raise BenchError("API exec: %s" % json.dumps(info)[:300])
        if record:
            self.add(image, "api", ms(t0, t1))

    def m_nsenter(self, image, record=True):
        """The floor: true run in every namespace of the container's init
        (and its root and working directory), by nsenter, started and
        timed as the docker CLI is."""
        t0 = now()
        r = subprocess.run(["nsenter", "-t", str(self.init_pid), "-a",
                            "true"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        t1 = now()
        if r.returncode != 0:
            raise BenchError("nsenter -t %d -a true: status %d: %s" % (
                self.init_pid, r.returncode,
                r.stderr.decode(errors="replace")[:300]))
        if record:
            self.add(image, "nsenter", ms(t0, t1))

    def run_seq(self, image):
        o = self.opt
        if shutil.which("nsenter") is None or os.geteuid() != 0:
            raise BenchError("the nsenter floor needs nsenter(1) and root")
        pid = cli(["docker", "inspect", "--format", "{{.State.Pid}}",
                   self.cid]).strip()
        if not pid.isdigit() or int(pid) <= 0:
            raise BenchError("docker inspect %s: State.Pid %r"
                             % (self.cid, pid))
        self.init_pid = int(pid)
        # The floor runs where the container's processes run: its
        # namespaces, seen from inside (nsenter forks into the PID
        # namespace, so /proc/self is the command's own).
        want = os.readlink("/proc/%d/ns/mnt" % self.init_pid)
        got = cli(["nsenter", "-t", pid, "-a", "readlink",
                   "/proc/self/ns/mnt"]).strip()
        if got != want:
            raise BenchError("nsenter -t %s -a: mount namespace %r, not"
                             " the container's %r" % (pid, got, want))
        say("image %s: warm-up" % image)
        for _ in range(o.warmup):
            self.m_exec(image, record=False)
        for _ in range(3):
            self.m_cli(image, record=False)
            self.m_api(image, record=False)
            self.m_nsenter(image, record=False)
        # Rounds of (runs / docker) exec_commands, (nsenter / docker)
        # nsenters and one of each docker exec, shuffled, so slow and
        # fast periods fall on all alike.
        say("image %s: %d exec_command true, %d docker exec (CLI), %d"
            " (API), %d nsenter, interleaved" % (image, o.runs, o.docker,
                                                 o.docker, o.nsenter))
        execs, nsenters = spread(o.runs, o.docker), spread(o.nsenter,
                                                           o.docker)
        for i in range(o.docker):
            steps = ([self.m_exec] * execs[i] + [self.m_nsenter] *
                     nsenters[i] + [self.m_cli, self.m_api])
            self.rng.shuffle(steps)
            for fn in steps:
                fn(image)
                if o.pause:
                    time.sleep(o.pause)

    def run_conc(self, image):
        o = self.opt
        say("image %s: %d rounds of %d exec_command true at once"
            % (image, o.rounds, o.conc))
        for rnd in range(o.rounds + 1):         # round 0: warm-up
            sent = {}
            for _ in range(o.conc):
                rid, t0 = self.server.send_call("exec_command", {
                    "sandbox_id": self.sid, "cmd": "true",
                    "yield_time_ms": YIELD_MS})
                sent[rid] = t0
            got = self.server.collect(list(sent))
            for rid, (msg, t1) in got.items():
                check_true(result("exec_command", msg),
                           "exec_command true (%d at once)" % o.conc)
                if rnd:
                    self.add(image, "conc", ms(sent[rid], t1))
            if rnd:
                first = min(sent.values())
                self.add(image, "conc_round",
                         ms(first, max(t for _, t in got.values())))
            time.sleep(max(o.pause, 0.05))

    def run_rss(self, image):
        o = self.opt
        say("image %s: %d commands sleep 60 at once" % (image, o.running))
        before = status_kib(self.pid)
        sent = {}
        for _ in range(o.running):
            rid, _ = self.server.send_call("exec_command", {
                "sandbox_id": self.sid, "cmd": "sleep 60",
                "yield_time_ms": 100})
            sent[rid] = 1
        got = self.server.collect(list(sent))
        cmds = []
        for rid, (msg, _) in got.items():
            r = result("exec_command", msg)
            if r.get("status") != "running":
                raise BenchError("sleep 60 did not answer running: %s"
                                 % json.dumps(r)[:300])
            cmds.append(r["command_session_id"])
        # Every one is running: read them back to be sure.
        running = 0
        for c in cmds:
            r, _ = self.server.call("read_command_lines", {
                "sandbox_id": self.sid, "command_session_id": c})
            running += r.get("status") == "running"
        if running != o.running:
            raise BenchError("%d of %d commands running" % (running,
                                                            o.running))
        st = status_kib(self.pid)
        main_pss = pss_kib(self.pid)
        kids = descendants(self.pid)
        # The server's own helpers (the sandbox's zygote, each session's
        # init: forks of sandbox-mcp, named "sandbox-mcp: ...") and the
        # commands they run.
        helpers = [k for k in kids if k[1].startswith("sandbox-mcp")]
        others = [k for k in kids if not k[1].startswith("sandbox-mcp")]
        # One more is refused: the cap is reached, not passed.
        extra, _ = self.server.send_call("exec_command", {
            "sandbox_id": self.sid, "cmd": "true",
            "yield_time_ms": YIELD_MS})
        try:
            msg, _ = self.server.collect([extra], timeout=30)[extra]
        except BenchError:
            raise BenchError("command %d (beyond the cap of running"
                             " commands) had no answer within 30 s"
                             % (o.running + 1))
        res = msg.get("result", {})
        if not res.get("isError") or "commands-running" not in json.dumps(
                res.get("structuredContent")):
            raise BenchError("command %d was not refused: %s"
                             % (o.running + 1, json.dumps(msg)[:300]))
        sent = {}
        for c in cmds:
            rid, _ = self.server.send_call("write_command_stdin", {
                "sandbox_id": self.sid, "command_session_id": c,
                "stdin": "\u0003", "yield_time_ms": 0})
            sent[rid] = c
        for rid, (msg, _) in self.server.collect(list(sent)).items():
            result("write_command_stdin", msg)
        t0 = now()
        pending = set(cmds)
        while pending:
            if now() - t0 > 60:
                raise BenchError("%d commands still running 60 s after"
                                 " Ctrl-C" % len(pending))
            for c in sorted(pending):
                r, _ = self.server.call("read_command_lines", {
                    "sandbox_id": self.sid, "command_session_id": c})
                if r.get("status") != "running":
                    pending.discard(c)
            if pending:
                time.sleep(0.05)
        stopped_ms = ms(t0, now())
        time.sleep(0.2)
        after = status_kib(self.pid)
        self.rss[image] = {
            "before_kib": before, "running_kib": st, "after_kib": after,
            "pss_kib": main_pss,
            "helpers": len(helpers),
            "helpers_pss_kib": sum(k[2] for k in helpers),
            "commands": len(others),
            "commands_pss_kib": sum(k[2] for k in others),
            "stop_ms": stopped_ms,
        }

    def m_sync(self, image, record=True, key="sync"):
        """The disk's floor: a durable atomic replacement of a 4 KiB file
        (write a temporary file, fsync it, rename it over the target,
        fsync the directory) on the state directory's file system, or
        (key "sbsync") on the sandbox's own disk, where its layers are
        (a loop device on an image in the state directory)."""
        if key == "sync":
            d = os.path.join(self.tmp, "sync-floor")
        else:
            d = os.path.join(self.state, "sandboxes", self.sid,
                             "bench-sync-floor")
        os.makedirs(d, exist_ok=True)
        data = os.urandom(4096)
        tmp = os.path.join(d, "f.tmp")
        t0 = now()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, os.path.join(d, "f"))
        dfd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
        t1 = now()
        if record:
            self.add(image, key, ms(t0, t1))

    def m_publish(self, image, i):
        name = "f%d" % i
        r, t = self.server.call("exec_command", {
            "sandbox_id": self.sid,
            "cmd": "head -c 4096 /dev/urandom > %s" % name,
            "yield_time_ms": YIELD_MS})
        pub = r.get("publish") or {}
        if (r.get("status") != "ok" or r.get("exit_code") != 0 or
                not pub.get("layer_id") or
                pub.get("changed_paths") != [name]):
            raise BenchError("write %s: unexpected answer %s"
                             % (name, json.dumps(r)[:500]))
        self.add(image, "pub", t)
        self.add(image, "pub_wall", r["wall_time_seconds"] * 1000)

    def run_publish(self, image):
        o = self.opt
        say("image %s: %d runs writing 4 KiB and publishing, each beside"
            " an fsync'd 4 KiB replace" % (image, o.writes))
        for _ in range(3):
            self.m_sync(image, record=False)
            self.m_sync(image, record=False, key="sbsync")
        for i in range(o.writes):
            steps = [lambda: self.m_publish(image, i),
                     lambda: self.m_sync(image),
                     lambda: self.m_sync(image, key="sbsync")]
            self.rng.shuffle(steps)
            for fn in steps:
                fn()
                if o.pause:
                    time.sleep(o.pause)
        # The layers are there: the last file has the bytes written.
        r, _ = self.server.call("exec_command", {
            "sandbox_id": self.sid, "yield_time_ms": YIELD_MS,
            "cmd": "wc -c < f%d; ls | grep -c '^f[0-9]'" % (o.writes - 1)})
        if r.get("output", "").split() != ["4096", str(o.writes)]:
            raise BenchError("after the writes: %r" % r.get("output"))

    # --- the run

    def phase(self, image, name, fn):
        """Run one measurement; note how busy the machine was meanwhile,
        and with what."""
        a, pa = cpu_times(), proc_cpu()
        t0 = now()
        fn(image)
        b, pb = cpu_times(), proc_cpu()
        total = max(1, b[1] - a[1])
        self.machine.setdefault(image, {})[name] = {
            "busy_pct": busy_pct(a, b), "seconds": now() - t0,
            "loadavg": loadavg(),
            "cpu_pct": {k: 100.0 * v / total for k, v in
                        cpu_split(pa, pb, os.getpid()).items()}}

    def run(self):
        # How busy the machine is before anything starts: other work
        # running meanwhile shows here.
        a, pa = cpu_times(), proc_cpu()
        time.sleep(1.0)
        b, pb = cpu_times(), proc_cpu()
        self.machine = {"before": {
            "busy_pct": busy_pct(a, b), "loadavg": loadavg(),
            "cpu_pct": {k: 100.0 * v / max(1, b[1] - a[1]) for k, v in
                        cpu_split(pa, pb, os.getpid()).items()}}}
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
            res, t = self.server.call("create_sandbox", {
                "image": image, "workspace_root": self.ws})
            self.sid, self.cid = res["id"], res["container_id"]
            say("image %s: sandbox %s (%.0f ms)" % (image, self.sid, t))
            self.phase(image, "seq", self.run_seq)
            self.phase(image, "conc", self.run_conc)
            self.phase(image, "rss", self.run_rss)
            self.phase(image, "publish", self.run_publish)
            res, _ = self.server.call("destroy_sandbox",
                                      {"sandbox_id": self.sid})
            if res.get("state") != "stopped":
                raise BenchError("destroy_sandbox: %s" % res)
        self.rss["end"] = status_kib(self.pid)


def spread(n, k):
    """n as k counts that differ by at most one, the larger first."""
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


# --------------------------------------------------------------- report

def row(label, xs):
    return "  %-50s %8.2f %8.2f %8.2f %5d" % (
        label, median(xs), pct(xs, 0.95), pct(xs, 0.99), len(xs))


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
    L("exec: exec_command in automatic sessions, over stdio, against"
      " docker exec of the same container and nsenter into its init")
    L("workspace: %s; state directory on %s" % (b.ws_desc, b.state_fs))
    L("clean automatic sessions kept per sandbox (limit session-pool): %s"
      % ("32 (the default)" if b.opt.session_pool is None else
         b.opt.session_pool))
    L("machine: %d CPUs (%s), %s; %s; %s" % (
        os.cpu_count(), cpu, " ".join(os.uname()[i] for i in (0, 2)),
        version, b.docker_desc))
    L("binary: %s (sha256 %s..., modified %s)" % (
        b.binary, b.binary_sha[:12], time.strftime(
            "%Y-%m-%d %H:%M:%S", time.localtime(b.binary_mtime))))
    lines.extend(textwrap.wrap(
        "method: client-side round trip, request line written to answer"
        " line read (docker, nsenter: process start to exit; API: exec"
        " create to inspect; disk floor: open to the directory's fsync),"
        " in ms, median / p95 / p99 (nearest rank);"
        " %.0f ms pause between sequential measurements" % (o.pause * 1000),
        78, subsequent_indent="  "))
    mb = b.machine["before"]
    L("machine load: %.0f%% of the CPUs busy in the second before the run,"
      " %.0f%% by other work (load average %s)" % (
          mb["busy_pct"], mb["cpu_pct"]["other"], mb["loadavg"]))
    failed = False
    for image in o.images:
        s = b.samples.get(image, {})
        L("")
        L("image %s (%s)" % (image, b.image_desc[image]))
        m = b.machine.get(image, {})
        L("  CPU use in %% of the %d CPUs (all / this run / Docker /"
          " kernel threads / other work) during:" % os.cpu_count())
        L("    " + "; ".join(
            "%s %.0f/%.0f/%.0f/%.0f/%.0f (%.1f s)" % (
                k, v["busy_pct"], v["cpu_pct"]["run"],
                v["cpu_pct"]["docker"], v["cpu_pct"]["kernel"],
                v["cpu_pct"]["other"], v["seconds"])
            for k, v in m.items()))
        L("  %-50s %8s %8s %8s %5s" % ("", "median", "p95", "p99", "n"))
        L(row("exec_command true, one at a time", s.get("seq", [])))
        L(row("  server's wall_time_seconds", s.get("seq_wall", [])))
        L(row("  server's command_total_time_seconds", s.get("seq_cmd", [])))
        L(row("docker exec CONTAINER true (CLI)", s.get("cli", [])))
        L(row("Engine API exec create+start+inspect", s.get("api", [])))
        L(row("nsenter -t PID -a true (the container's init)",
              s.get("nsenter", [])))
        L(row("exec_command true, %d at once (each)" % o.conc,
              s.get("conc", [])))
        rounds = s.get("conc_round", [])
        L(row("  the whole round of %d (%.0f exec_command/s)" % (
            o.conc, o.conc * 1000 / median(rounds) if rounds else 0),
            rounds))
        pub = s.get("pub", [])
        L(row("write 4 KiB and publish", pub))
        L(row("  server's wall_time_seconds", s.get("pub_wall", [])))
        L(row("disk floor: fsync'd atomic 4 KiB replace",
              s.get("sync", [])))
        L(row("  the same on the sandbox's own disk",
              s.get("sbsync", [])))
        q = max(1, len(pub) // 4)
        L("    by layer depth: " + ", ".join(
            "runs %d-%d %.2f" % (i + 1, min(i + q, len(pub)),
                                 median(pub[i:i + q]))
            for i in range(0, len(pub), q)))
        r = b.rss.get(image, {})
        if r:
            L("  RSS of sandbox-mcp (MiB): %.1f before, %.1f with %d"
              " commands running (VmHWM %.1f), %.1f after they ended" % (
                  r["before_kib"]["VmRSS"] / 1024,
                  r["running_kib"]["VmRSS"] / 1024, o.running,
                  r["running_kib"]["VmHWM"] / 1024,
                  r["after_kib"]["VmRSS"] / 1024))
            L("    then, Pss (MiB): sandbox-mcp %.1f, its %d helper"
              " processes (zygote, session inits) %.1f, in all %.1f;"
              % (r["pss_kib"] / 1024, r["helpers"],
                 r["helpers_pss_kib"] / 1024,
                 (r["pss_kib"] + r["helpers_pss_kib"]) / 1024))
            L("    the %d command processes %.1f; Ctrl-C to all %d ended:"
              " %.0f ms" % (r["commands"], r["commands_pss_kib"] / 1024,
                            o.running, r["stop_ms"]))
        seq, cli_ = median(s.get("seq", [])), median(s.get("cli", []))
        api = median(s.get("api", []))
        nse = median(s.get("nsenter", []))
        conc95 = pct(s.get("conc", []), 0.95)
        pubm = median(pub)
        syncm = median(s.get("sync", []))
        sbsyncm = median(s.get("sbsync", []))
        rss = r["running_kib"]["VmRSS"] / 1024 if r else float("nan")
        L("  exec_command / docker exec CLI: %.3f (1/%.1f); / API exec:"
          " %.3f (1/%.1f)" % (seq / cli_, cli_ / seq, seq / api, api / seq))
        L("  exec_command / nsenter: %.3fx; write+publish / disk floor:"
          " %.2fx, / the sandbox disk's: %.2fx" % (seq / nse, pubm / syncm,
                                                  pubm / sbsyncm))
        L("  targets:")
        for desc, ok in (
                ("median exec_command true <= %.0f ms (%.2f ms)"
                 % (TARGET_SEQ_MS, seq), seq <= TARGET_SEQ_MS),
                ("median <= 1/8 of docker exec's (%.2f <= %.2f ms)"
                 % (seq, cli_ * TARGET_SEQ_RATIO),
                 seq <= cli_ * TARGET_SEQ_RATIO),
                ("median <= %.1fx nsenter's (%.2f / %.2f ms = %.2fx)"
                 % (TARGET_NSENTER_RATIO, seq, nse, seq / nse),
                 seq <= nse * TARGET_NSENTER_RATIO),
                ("%d at once: p95 <= %.0f ms (%.2f ms)"
                 % (o.conc, TARGET_CONC_P95_MS, conc95),
                 conc95 <= TARGET_CONC_P95_MS),
                ("write 4 KiB + publish: median <= %.0f ms (%.2f ms;"
                 " disk floor %.2f ms, the sandbox disk's %.2f ms)"
                 % (TARGET_PUB_MS, pubm, syncm, sbsyncm),
                 pubm <= TARGET_PUB_MS),
                ("VmRSS with %d running <= %.0f MiB (%.1f MiB)"
                 % (o.running, TARGET_RSS_MIB, rss), rss <= TARGET_RSS_MIB)):
            L("    %s  %s" % ("PASS" if ok else "FAIL", desc))
            failed = failed or not ok
    L("")
    L("server RSS (MiB): %.1f at idle (after initialize), %.1f after the"
      " run (sandboxes destroyed), peak (VmHWM) %.1f" % (
          b.rss["idle"]["VmRSS"] / 1024, b.rss["end"]["VmRSS"] / 1024,
          b.rss["end"]["VmHWM"] / 1024))
    return lines, failed


def main():
    env = os.environ.get
    ap = argparse.ArgumentParser(description="exec_command benchmark")
    ap.add_argument("--image", action="append", dest="images",
                    help="image to measure (repeat); default: $BENCH_EXEC_"
                    "IMAGES or %s" % DEFAULT_IMAGES)
    ap.add_argument("--runs", type=int,
                    default=int(env("BENCH_EXEC_RUNS", 500)),
                    help="sequential exec_command true (500)")
    ap.add_argument("--docker", type=int,
                    default=int(env("BENCH_EXEC_DOCKER", 100)),
                    help="docker exec runs, CLI and API each (100)")
    ap.add_argument("--nsenter", type=int,
                    default=int(env("BENCH_EXEC_NSENTER", 200)),
                    help="nsenter -t PID -a true runs (200)")
    ap.add_argument("--conc", type=int, default=20,
                    help="exec_command at once (20)")
    ap.add_argument("--rounds", type=int,
                    default=int(env("BENCH_EXEC_ROUNDS", 25)),
                    help="rounds of --conc at once (25)")
    ap.add_argument("--writes", type=int,
                    default=int(env("BENCH_EXEC_WRITES", 200)),
                    help="4 KiB writes published (200)")
    ap.add_argument("--running", type=int, default=64,
                    help="commands running for the RSS figure (64)")
    ap.add_argument("--files", type=int, default=20,
                    help="files in the workspace (20)")
    ap.add_argument("--warmup", type=int, default=20,
                    help="untimed exec_command before the timed ones (20)")
    ap.add_argument("--pause", type=float,
                    default=float(env("BENCH_EXEC_PAUSE", 0.02)),
                    help="seconds between sequential measurements (0.02)")
    ap.add_argument("--tmpdir", default=env("BENCH_EXEC_TMPDIR") or None,
                    help="where the state directory and workspace go"
                    " (default: $BENCH_EXEC_TMPDIR, else $TMPDIR or /tmp)")
    ap.add_argument("--session-pool", type=int,
                    default=(int(env("BENCH_EXEC_SESSION_POOL"))
                             if env("BENCH_EXEC_SESSION_POOL") else None),
                    help="limit session-pool for the server (default: its"
                    " own, 32; 0: every session built anew)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true",
                    help="keep the temporary directory")
    opt = ap.parse_args()
    if not opt.images:
        opt.images = env("BENCH_EXEC_IMAGES", DEFAULT_IMAGES).split()
    if min(opt.runs, opt.docker, opt.nsenter, opt.conc, opt.rounds,
           opt.writes, opt.running, opt.files) < 1:
        ap.error("every count must be at least 1")
    if opt.docker > opt.runs:
        ap.error("--docker must not exceed --runs")
    if opt.running < opt.conc:
        # --running is also the server's commands-running cap
        ap.error("--running must be at least --conc")

    return drive(Bench(opt), "exec", report, lambda b: {
        "options": vars(opt), "samples": b.samples, "rss_kib": b.rss,
        "machine": b.machine, "state_fs": b.state_fs}, say,
        "BENCH_EXEC_TRACE")


if __name__ == "__main__":
    sys.exit(main())
