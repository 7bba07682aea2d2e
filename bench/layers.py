#!/usr/bin/env python3
# bench/layers.py: what the depth of a layer stack costs, and what a
# squash costs, over MCP stdio.  Python 3 standard library only.
#
#   python3 bench/layers.py [--image IMAGE] [--runs N] [--keep] [--no-depth]
#
# One sandbox-mcp process (--set management --set runtime, autosquash
# off: limit autosquash-depth 0), one sandbox of --image (default
# sandbox-mcp/busybox:test).
#
# 1. Depth: the stack is grown with sessionless file_write calls to
#    1, 50, 200 and 450 published layers; at each depth, --runs (15)
#    timed calls of each, one at a time: exec_command "true" (an
#    automatic session, built on the stack as it is), file_read of a
#    4 KiB file in a managed session made at that depth, file_read of it
#    without a session (resolved through the layers), and a publish (a
#    sessionless file_write of 4 KiB, which adds a layer: measured last).
#    Then one squash_layerstacks, timed, and the same calls again.
#    Reported: medians, and each one's ratio to its median at depth 1.
# 2. Squash: a fresh sandbox with 100 layers of 100 small files each
#    (one managed session per layer), squashed once: time, the layers
#    before and after, and the peak memory of the sandbox's helper group
#    during the squash (memory.max_usage_in_bytes, or memory.peak on
#    cgroup v2), against `tar -c | zstd` of the same 10,000 files made
#    on the host as a floor.
#
# 3. Export: each of those two stacks (the 100 x 100 one before its
#    squash, and a stack of 20 layers holding 10,000 files, 256 MiB of
#    base64 text) exported with export_changes to dir, tar and tar-zst:
#    median time of 5 calls (each to a new dest), bytes and the export
#    child's own peak RSS (from the server's log), against the medians
#    of 5 runs of `tar -cf` and `tar -c | zstd` of the exported
#    directory, and of `tar -xf` of that tar into a new directory (for
#    dir), in the same run as floors.  The big stack is squashed
#    too (time, child RSS).
#
# Targets: squash of 100 small layers <= 1 s; export tar-zst within
# 1.5x of the tar|zstd floor; every export's and squash's own peak RSS
# <= 64 MiB. The helper group's peak (which counts the page cache its
# reads and writes fill, reclaimable) is reported beside it.
#
# Results: printed, and written to $SANDBOX_MCP_BUILDDIR/bench/results/
# layers.txt and layers.json.  Exit status 0 when the targets are met, 1
# otherwise or when a call fails.

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BUILDDIR = os.environ.get("SANDBOX_MCP_BUILDDIR",
                          os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.join(BUILDDIR, "sandbox-mcp")
DEPTHS = (1, 50, 200, 450)
EXPORT_RUNS = 5


class Broken(Exception):
    pass


class Server:
    def __init__(self, state, conf):
        self.proc = subprocess.Popen(
            [BIN, "-f", conf, "--state-dir", state, "--set", "management",
             "--set", "runtime"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=open(state + ".log", "wb"))
        self.buf = b""
        self.n = 0
        self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench-layers", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def recv(self, timeout=300):
        end = time.time() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            r, _, _ = select.select([fd], [], [], max(0, end - time.time()))
            if not r:
                raise Broken("no answer within %d s" % timeout)
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise Broken("the server closed stdout")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method,
                   "params": params})
        while True:
            m = self.recv()
            if m.get("id") == self.n:
                return m

    def call(self, name, args):
        r = self.request("tools/call", {"name": name, "arguments": args})
        res = r.get("result")
        if res is None or res.get("isError"):
            raise Broken("%s %r: %r" % (name, args, r))
        return res["structuredContent"]

    def timed(self, name, args):
        t0 = time.perf_counter()
        r = self.call(name, args)
        return (time.perf_counter() - t0) * 1000, r

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def depth_of(state, sid):
    with open(os.path.join(state, "sandboxes", sid, "stack",
                           "manifest.json")) as f:
        return len(json.load(f)["layers"]) - 1


def medians(s, sid, runs, tag):
    """The medians (ms) of the four calls at the stack's depth now."""
    blob = "x" * 4095 + "\n"
    s.call("file_write", {"sandbox_id": sid, "path": "bench/read.txt",
                          "content": blob})
    ws = s.call("create_workspace_session",
                {"sandbox_id": sid})["workspace_session_id"]
    out = {}
    t = [s.timed("exec_command", {"sandbox_id": sid, "cmd": "true",
                                  "yield_time_ms": 30000})[0]
         for _ in range(runs)]
    out["exec_command true"] = statistics.median(t)
    t = []
    for _ in range(runs):
        ms, r = s.timed("file_read", {"sandbox_id": sid,
                                      "path": "bench/read.txt",
                                      "workspace_session_id": ws})
        if r["content"] != blob:
            raise Broken("session file_read returned other bytes")
        t.append(ms)
    out["file_read (session)"] = statistics.median(t)
    t = []
    for _ in range(runs):
        ms, r = s.timed("file_read", {"sandbox_id": sid,
                                      "path": "bench/read.txt"})
        if r["content"] != blob:
            raise Broken("file_read returned other bytes")
        t.append(ms)
    out["file_read (no session)"] = statistics.median(t)
    s.call("destroy_workspace_session", {"sandbox_id": sid,
                                         "workspace_session_id": ws})
    t = [s.timed("file_write", {"sandbox_id": sid,
                                "path": "bench/w-%s-%d.txt" % (tag, i),
                                "content": blob})[0] for i in range(runs)]
    out["publish (4 KiB write)"] = statistics.median(t)
    return out


def helper_peak_reset(sid):
    for path in ("/sys/fs/cgroup/memory/sandbox-mcp/%s/"
                 "memory.max_usage_in_bytes" % sid,):
        try:
            with open(path, "w") as f:
                f.write("0")
        except OSError:
            pass


def helper_peak(sid):
    for path in ("/sys/fs/cgroup/memory/sandbox-mcp/%s/"
                 "memory.max_usage_in_bytes" % sid,
                 "/sys/fs/cgroup/sandbox-mcp/%s/memory.peak" % sid):
        try:
            with open(path) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError):
            continue
    return None


def child_rss(state, what, dest=None):
    """The peak RSS (KiB) the server logged for the last export to dest
    (what "export") or the last squash."""
    rss = None
    with open(state + ".log", errors="replace") as f:
        for line in f:
            if what == "export" and (" exported to %s (" % dest) in line \
                    or what == "squash" and "stack squashed" in line:
                try:
                    rss = int(line.rsplit("peak RSS ", 1)[1].split()[0])
                except (IndexError, ValueError):
                    pass
    return rss


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def exports(s, state, sid, tmp, tag, lines, data):
    """export_changes of sandbox sid to each format, against floors made
    from the exported directory: returns whether the targets hold."""
    ok = True
    out = os.path.join(tmp, "out")
    os.makedirs(out, exist_ok=True)
    rows = {}
    for fmt in ("dir", "tar", "tar-zst"):
        ext = {"dir": "d", "tar": "tar", "tar-zst": "tar.zst"}[fmt]
        times = []
        for k in range(EXPORT_RUNS):
            dest = os.path.join(out, "%s-%d.%s" % (tag, k, ext))
            t0 = time.perf_counter()
            r = s.call("export_changes", {"sandbox_id": sid, "dest": dest,
                                          "format": fmt})
            times.append(time.perf_counter() - t0)
            rss = child_rss(state, "export", dest)
            if k > 0:
                remove(dest)
        rows[fmt] = (statistics.median(times), r["bytes_written"], rss)
    tree = os.path.join(out, "%s-0.d" % tag)
    ftar, fzst = [], []
    for k in range(EXPORT_RUNS):
        t0 = time.perf_counter()
        subprocess.run("tar -cf %s/floor.tar -C %s ." % (tmp, tree),
                       shell=True, check=True)
        ftar.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        subprocess.run("tar -cf - -C %s . | zstd -q -c > %s/floor.tar.zst"
                       % (tree, tmp), shell=True, check=True)
        fzst.append(time.perf_counter() - t0)
    fdir = []
    for k in range(EXPORT_RUNS):
        into = os.path.join(tmp, "floor-dir")
        os.makedirs(into)
        t0 = time.perf_counter()
        subprocess.run("tar -xf %s/floor.tar -C %s" % (tmp, into),
                       shell=True, check=True)
        fdir.append(time.perf_counter() - t0)
        shutil.rmtree(into)
    ftar, fzst = statistics.median(ftar), statistics.median(fzst)
    floors = {"dir": (statistics.median(fdir), rows["dir"][1]),
              "tar": (ftar, os.path.getsize(tmp + "/floor.tar")),
              "tar-zst": (fzst, os.path.getsize(tmp + "/floor.tar.zst"))}
    for fmt, (sec, size, rss) in rows.items():
        fl = floors[fmt]
        lines.append("export %-8s %-7s %8.3f s %12d bytes  child RSS %s%s"
                     % (tag, fmt, sec, size, "%.1f MiB" % (rss / 1024.0)
                        if rss else "unknown",
                        "  floor %.3f s %d bytes (ratio %.2fx)"
                        % (fl[0], fl[1], sec / fl[0]) if fl else ""))
        data.setdefault("export", []).append({
            "stack": tag, "format": fmt, "seconds": sec, "bytes": size,
            "child_rss_kib": rss, "floor_seconds": fl[0] if fl else None,
            "floor_bytes": fl[1] if fl else None})
        if rss is None or rss > 64 * 1024:
            ok = False
    ratio = rows["tar-zst"][0] / fzst
    lines.append("  %s  export %s tar-zst within 1.5x of tar|zstd (%.2fx)"
                 % ("PASS" if ratio <= 1.5 else "FAIL", tag, ratio))
    lines.append("  %s  export %s child RSS <= 64 MiB in every format"
                 % ("PASS" if ok else "FAIL", tag))
    shutil.rmtree(out, ignore_errors=True)
    return ok and ratio <= 1.5


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", default="sandbox-mcp/busybox:test")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--no-depth", action="store_true",
                    help="leave out part 1 (depth)")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="bench-layers-")
    roots = os.path.join(tmp, "roots")
    os.makedirs(os.path.join(roots, "ws"))
    with open(os.path.join(roots, "ws", "README"), "w") as f:
        f.write("bench\n")
    conf = os.path.join(tmp, "conf")
    with open(conf, "w") as f:
        f.write("workspace-root %s\nexport-root %s\nlimit autosquash-depth"
                " 0\nprofile disk %s\n" % (roots, tmp,
                                          os.environ.get("BENCH_DISK",
                                                         "2G")))
    state = os.path.join(tmp, "state")
    s = Server(state, conf)
    lines, data, ok = [], {"depth": [], "squash": {}}, True
    try:
        sid = s.call("create_sandbox", {"image": a.image,
                                        "workspace_root": os.path.join(
                                            roots, "ws")})["id"]
        base = None
        lines.append("layers: depth (published layers above the base),"
                     " medians in ms of %d calls, ratio to depth 1"
                     % a.runs)
        lines.append("%-7s %-7s %-24s %9s %7s" % ("depth", "stack", "call",
                                                 "median", "ratio"))
        n = 0
        for d in DEPTHS if not a.no_depth else ():
            while depth_of(state, sid) < d:
                s.call("file_write", {"sandbox_id": sid,
                                      "path": "grow/%d.txt" % n,
                                      "content": "%d\n" % n})
                n += 1
            for when in ("before", "after"):
                if when == "after":
                    deep = depth_of(state, sid)
                    t0 = time.perf_counter()
                    r = s.call("squash_layerstacks", {"sandbox_id": sid})
                    sq = (time.perf_counter() - t0) * 1000
                    lines.append("%-7d squash  %-24s %9.1f   (%d -> %d"
                                 " layers)" % (d, "squash_layerstacks", sq,
                                               deep, depth_of(state, sid)))
                at = depth_of(state, sid)
                m = medians(s, sid, a.runs, "%d%s" % (d, when))
                if base is None:
                    base = m
                for k, v in m.items():
                    lines.append("%-7d %-7s %-24s %9.2f %7.2fx"
                                 % (d, when, k, v, v / base[k]))
                    data["depth"].append({"depth": d, "stack": when,
                                          "layers": at, "call": k,
                                          "median_ms": v,
                                          "ratio": v / base[k]})
        s.call("destroy_sandbox", {"sandbox_id": sid})

        # 2. 100 layers of 100 small files, squashed once.
        sid = s.call("create_sandbox", {"image": a.image,
                                        "workspace_root": os.path.join(
                                            roots, "ws")})["id"]
        for i in range(100):
            ws = s.call("create_workspace_session",
                        {"sandbox_id": sid})["workspace_session_id"]
            s.call("exec_command", {
                "sandbox_id": sid, "workspace_session_id": ws,
                "cmd": "mkdir -p l%d && cd l%d && for j in $(seq 0 99); do"
                " echo \"layer %d file $j\" > f$j.txt; done" % (i, i, i),
                "yield_time_ms": 60000})
            s.call("publish_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": ws})
        lines.append("")
        ex_small = exports(s, state, sid, tmp, "100x100", lines, data)
        before = depth_of(state, sid)
        helper_peak_reset(sid)
        t0 = time.perf_counter()
        r = s.call("squash_layerstacks", {"sandbox_id": sid})
        sq = time.perf_counter() - t0
        peak = helper_peak(sid)
        after = depth_of(state, sid)
        # The floor: tar | zstd of the same files, on the host.
        host = os.path.join(tmp, "copy")
        os.makedirs(host)
        for i in range(100):
            for j in range(100):
                with open(os.path.join(host, "l%d-f%d.txt" % (i, j)),
                          "w") as f:
                    f.write("layer %d file %d\n" % (i, j))
        t0 = time.perf_counter()
        subprocess.run("tar -cf - -C %s . | zstd -q -c > %s/floor.tar.zst"
                       % (host, tmp), shell=True, check=True)
        floor = time.perf_counter() - t0
        s.call("destroy_sandbox", {"sandbox_id": sid})
        lines.append("")
        lines.append("squash of 100 layers x 100 files: %.3f s (%d -> %d"
                     " layers; %d blocks); helper peak %s; floor tar|zstd"
                     " of the 10,000 files %.3f s (ratio %.2fx)"
                     % (sq, before, after, len(r["squashed_blocks"]),
                        "%.1f MiB" % (peak / 1048576) if peak else "unknown",
                        floor, sq / floor))
        data["squash"] = {"seconds": sq, "layers_before": before,
                          "layers_after": after, "helper_peak": peak,
                          "floor_seconds": floor}
        t1 = sq <= 1.0
        lines.append("  %s  squash of 100 small layers <= 1 s (%.3f s)"
                     % ("PASS" if t1 else "FAIL", sq))
        sq_rss = child_rss(state, "squash")
        lines.append("  squash child RSS %s" % ("%.1f MiB" % (sq_rss / 1024.0)
                                                if sq_rss else "unknown"))

        # 3. 20 layers, 10,000 files, 256 MiB of text: export, squash.
        sid = s.call("create_sandbox", {"image": a.image,
                                        "workspace_root": os.path.join(
                                            roots, "ws")})["id"]
        for i in range(20):
            ws = s.call("create_workspace_session",
                        {"sandbox_id": sid})["workspace_session_id"]
            s.call("exec_command", {
                "sandbox_id": sid, "workspace_session_id": ws,
                "cmd": "mkdir -p big%d && cd big%d && base64 /dev/urandom |"
                " { for j in $(seq 0 499); do head -c 26843 > f$j; done; }"
                % (i, i), "yield_time_ms": 120000})
            s.call("publish_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": ws})
        lines.append("")
        ex_big = exports(s, state, sid, tmp, "10k-256M", lines, data)
        before = depth_of(state, sid)
        t0 = time.perf_counter()
        s.call("squash_layerstacks", {"sandbox_id": sid})
        bsq = time.perf_counter() - t0
        big_rss = child_rss(state, "squash")
        lines.append("squash of 20 layers, 10,000 files, 256 MiB: %.3f s"
                     " (%d -> %d layers); child RSS %s" % (
                         bsq, before, depth_of(state, sid),
                         "%.1f MiB" % (big_rss / 1024.0) if big_rss else
                         "unknown"))
        data["squash_big"] = {"seconds": bsq, "child_rss_kib": big_rss}
        s.call("destroy_sandbox", {"sandbox_id": sid})
        t3 = all(r is not None and r <= 64 * 1024 for r in (sq_rss, big_rss))
        lines.append("  %s  squash child RSS <= 64 MiB (%s, %s)"
                     % ("PASS" if t3 else "FAIL", sq_rss, big_rss))
        ok = t1 and t3 and ex_small and ex_big
    except Broken as e:
        lines.append("bench: layers: broken: %s" % e)
        ok = False
    finally:
        s.stop()
        if not a.keep:
            for mp in sorted((l.split()[4] for l in open(
                    "/proc/self/mountinfo") if l.split()[4].startswith(tmp)),
                    reverse=True):
                subprocess.run(["umount", "-l", mp])
            shutil.rmtree(tmp, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    out = os.path.join(BUILDDIR, "bench", "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "layers.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "layers.json"), "w") as f:
        json.dump(data, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
