#!/usr/bin/env python3
# bench/exec-phases.py: where the time of one exec_command goes, phase by
# phase, from kernel tracepoints.  See bench/README ("exec").  Needs
# perf(1) and root (tracepoints); python3 standard library only.
#
#   python3 bench/exec-phases.py [--image IMAGE] [--runs N] [--cmd CMD]
#                                [--tmpdir DIR] [--layers N]
#
# Starts sandbox-mcp (with limit session-pool 0, so that every session is
# built, not a kept one reused) and one sandbox as bench/exec.py does,
# publishes --layers layers first (none by default), runs 10 untimed
# exec_command, then N timed ones strictly one after another (20 ms
# apart) while "perf record -k CLOCK_MONOTONIC -a" records, system wide:
#
#   sched:sched_process_fork / _exec / _exit   every process's birth,
#                                              exec and exit
#   signal:signal_generate (SIGCHLD to the     when an exited process is
#     server)                                  reported to the server
#   syscalls:sys_enter_sendmsg (every          the server's messages to
#     process)                                 the zygote and the init,
#                                              the builder's answer, the
#                                              init's reports
#   syscalls:sys_enter_writev (server)         the answer written (fd 1)
#
# CLOCK_MONOTONIC is the client's clock too (time.perf_counter), so the
# client's request write and answer read fall on the same time line.  For
# each exec the events between the two are matched to the processes of
# that exec (the zygote's builder, which becomes the session's init, the
# init's child that runs the shell, the server's
# publishing process when the session changed something) and cut into
# phases; the table gives each phase's median and mean in ms.  CMD may hold $i, replaced by the run's number
# (e.g. --cmd 'head -c 4096 /dev/urandom > f$i').
#
# With --conc C it sends C exec_command at once, --runs times, and tells
# how the sandbox's zygote serves them: the round's length, the builders'
# part of it, the gap between two builder forks, and how many builds were
# ever under way at once (a builder's fork to its answer).

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True      # no __pycache__ in the source tree

import importlib.util  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "bench_exec", os.path.join(HERE, "exec.py"))
bx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bx)

from lifecycle import cleanup  # noqa: E402

PHASES = [
    ("request", "request written -> session sent to the zygote"),
    ("zygote", "-> the zygote's fork of a builder returned"),
    ("builder", "-> builder answers (dirs, lease, mounts, /proc)"),
    ("exec_sent", "-> the init forks the shell (exec sent)"),
    ("shell_start", "-> the shell execs (setsid, seccomp, caps)"),
    ("shell_run", "-> the shell exits (the command itself)"),
    ("exit_report", "-> the init reports the exit"),
    ("finish", "-> the server asks the init to finish"),
    ("finished", "-> the init answers finished"),
    ("publish", "-> publishing process exits (0: no changes)"),
    ("answer", "-> the answer is written to stdout"),
    ("client", "-> the client has read it"),
]


def child_of(rest):
    return int(re.search(r"child_pid=(\d+)", rest).group(1))


def main():
    ap = argparse.ArgumentParser(description="exec_command phases")
    ap.add_argument("--image", default="sandbox-mcp/busybox:test")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--cmd", default="true")
    ap.add_argument("--tmpdir", default=None)
    ap.add_argument("--conc", type=int, default=0,
                    help="instead: rounds of this many exec_command at"
                    " once (--runs rounds), and how the zygote serves"
                    " them")
    ap.add_argument("--layers", type=int, default=0,
                    help="publish this many layers first (a 4 KiB file"
                    " each), untimed")
    opt = ap.parse_args()
    if shutil.which("perf") is None:
        sys.exit("exec-phases: perf is needed")
    bopt = argparse.Namespace(images=[opt.image], files=20, seed=1,
                              keep=False, tmpdir=opt.tmpdir, pause=0.0,
                              runs=1, docker=1, conc=1, rounds=1, writes=1,
                              running=1, warmup=1,
                              # every session built anew: the phases
                              # are those of a build
                              session_pool=0)
    b = bx.Bench(bopt)
    b.log_name = "exec-phases-server.log"
    pdir = tempfile.mkdtemp(prefix="exec-phases.")
    data = os.path.join(pdir, "perf.data")
    perf = None
    reqs = []
    try:
        b.setup()
        res, _ = b.server.call("create_sandbox", {
            "image": opt.image, "workspace_root": b.ws})
        b.sid = res["id"]
        for i in range(opt.layers):
            r, _ = b.server.call("exec_command", {
                "sandbox_id": b.sid, "yield_time_ms": 60000,
                "cmd": "head -c 4096 /dev/urandom > layer%d" % i})
            if not (r.get("publish") or {}).get("layer_id"):
                raise bx.BenchError("layer %d not published: %s" % (i, r))
        for _ in range(10):
            b.exec_true()
        sp = b.pid
        zp = int(subprocess.check_output(
            ["pgrep", "-P", str(sp), "-f", "zygote"]).split()[0])
        perf = subprocess.Popen([
            "perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-a", "-o", data,
            "-e", "sched:sched_process_fork",
            "-e", "sched:sched_process_exit",
            "-e", "sched:sched_process_exec",
            "-e", "signal:signal_generate",
            "--filter", "sig == 17 && pid == %d" % sp,
            "-e", "syscalls:sys_enter_sendmsg",
            "-e", "syscalls:sys_enter_writev",
            "--filter", "common_pid == %d" % sp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        for i in range(opt.runs if not opt.conc else 0):
            rid, t0 = b.server.send_call("exec_command", {
                "sandbox_id": b.sid, "cmd": opt.cmd.replace("$i", str(i)),
                "yield_time_ms": 60000})
            msg, t1 = b.server.collect([rid])[rid]
            r = bx.result("exec_command", msg)
            reqs.append((t0, t1, r.get("publish") is not None))
            time.sleep(0.02)
        for i in range(opt.runs if opt.conc else 0):
            sent = {}
            for _ in range(opt.conc):
                rid, t0 = b.server.send_call("exec_command", {
                    "sandbox_id": b.sid, "cmd": opt.cmd,
                    "yield_time_ms": 60000})
                sent[rid] = t0
            got = b.server.collect(list(sent))
            reqs.append((min(sent.values()),
                         max(t for _, t in got.values()), False))
            time.sleep(0.1)
        time.sleep(0.3)
    finally:
        if perf is not None:
            perf.send_signal(2)
            perf.wait()
        cleanup(b, bx.say)
    out = subprocess.run(["perf", "script", "-i", data, "-F",
                          "comm,pid,time,event,trace"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout
    shutil.rmtree(pdir, ignore_errors=True)
    ev = []
    for line in out.splitlines():
        m = re.match(r"\s*(.*?)\s+(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)", line)
        if m:
            ev.append((float(m.group(3)), int(m.group(2)), m.group(4),
                       m.group(5)))
    ev.sort()
    if opt.conc:
        return report_conc(opt, b, ev, reqs, sp, zp)
    ph = {k: [] for k, _ in PHASES}
    total = []
    for t0, t1, published in reqs:
        w = [x for x in ev if t0 <= x[0] <= t1]

        def first(pred, after=0.0):
            for x in w:
                if x[0] >= after and pred(x):
                    return x
            return None
        try:
            sm = first(lambda x: x[1] == sp and "sendmsg" in x[2])
            bf = first(lambda x: x[1] == zp and x[2].endswith("fork"))
            # The builder becomes the session's init.
            init = builder = child_of(bf[3])
            ba = first(lambda x: x[1] == builder and "sendmsg" in x[2])
            shf = first(lambda x: x[1] == init and x[2].endswith("fork"))
            shell = child_of(shf[3])
            shx = first(lambda x: x[1] == shell and x[2].endswith("exec"))
            she = first(lambda x: x[1] == shell and x[2].endswith("exit"))
            er = first(lambda x: x[1] == init and "sendmsg" in x[2], she[0])
            fin = first(lambda x: x[1] == sp and "sendmsg" in x[2], er[0])
            fd = first(lambda x: x[1] == init and "sendmsg" in x[2], fin[0])
            if published:
                pf = first(lambda x: x[1] == sp and x[2].endswith("fork"),
                           fd[0])
                pub = child_of(pf[3])
                pe = first(lambda x: x[1] == pub and x[2].endswith("exit"))
                pub_end = pe[0]
            else:
                pub_end = fd[0]
            aw = [x for x in w if x[1] == sp and "writev" in x[2] and
                  "fd: 0x00000001" in x[3]][-1]
        except (TypeError, IndexError, AttributeError):
            continue
        pts = [t0, sm[0], bf[0], ba[0], shf[0], shx[0], she[0],
               er[0], fin[0], fd[0], pub_end, aw[0], t1]
        if pts != sorted(pts):
            continue
        for (k, _), a, c in zip(PHASES, pts, pts[1:]):
            ph[k].append((c - a) * 1000)
        total.append((t1 - t0) * 1000)
    print("exec-phases: %s, cmd %r, %d layers published before, state"
          " directory on %s: %d of %d runs matched" % (
              opt.image, opt.cmd, opt.layers, b.state_fs, len(total),
              opt.runs))
    if not total:
        return 1
    print("  %-50s %7s %7s" % ("phase, in ms", "median", "mean"))
    for k, desc in PHASES:
        print("  %-50s %7.2f %7.2f" % (desc, statistics.median(ph[k]),
                                       statistics.mean(ph[k])))
    print("  %-50s %7.2f %7.2f" % ("client round trip", statistics.median(
        total), statistics.mean(total)))
    return 0


def report_conc(opt, b, ev, reqs, sp, zp):
    """Rounds of --conc at once: how the zygote serves them."""
    rounds, gaps, lives, overlap, zbusy, tail = [], [], [], [], [], []
    for t0, t1, _ in reqs:
        w = [x for x in ev if t0 <= x[0] <= t1]
        forks = [x for x in w if x[1] == zp and x[2].endswith("fork")]
        if len(forks) != opt.conc:
            continue
        builders = [child_of(x[3]) for x in forks]
        ends = []
        for bpid, f in zip(builders, forks):
            # A build ends with its answer (the builder lives on as the
            # session's init).
            e = [x for x in w if x[1] == bpid and "sendmsg" in x[2]]
            if not e:
                break
            ends.append(e[0][0])
            lives.append((e[0][0] - f[0]) * 1000)
        else:
            starts = [f[0] for f in forks]
            gaps += [(y - x) * 1000 for x, y in zip(starts, starts[1:])]
            # builds under way at once: a fork before an earlier answer
            overlap.append(max(sum(1 for s, e in zip(starts, ends)
                                   if s <= t < e) for t in starts))
            answers = [x for x in w if x[1] in builders and
                       "sendmsg" in x[2]]
            zbusy.append((answers[-1][0] - starts[0]) * 1000
                         if answers else float("nan"))
            tail.append((t1 - answers[-1][0]) * 1000 if answers else
                        float("nan"))
            rounds.append((t1 - t0) * 1000)
    print("exec-phases: %s, %d at once, cmd %r, %d layers published"
          " before, state directory on %s: %d of %d rounds matched" % (
              opt.image, opt.conc, opt.cmd, opt.layers, b.state_fs,
              len(rounds), opt.runs))
    if not rounds:
        return 1
    med = statistics.median
    print("  round, first request written to last answer read  %7.2f ms"
          % med(rounds))
    print("  builders, first fork to last answer               %7.2f ms"
          % med(zbusy))
    print("  from one builder fork to the next                 %7.2f ms"
          " (builder fork to answer %.2f)" % (med(gaps), med(lives)))
    print("  most builds under way at once                     %7d"
          % max(overlap))
    print("  the last builder answer to the last answer read   %7.2f ms"
          % med(tail))
    return 0


if __name__ == "__main__":
    sys.exit(main())
