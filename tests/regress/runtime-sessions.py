#!/usr/bin/env python3
# Workspace sessions and publishing: isolation between sessions, a base
# fixed when a session begins, managed sessions kept after a rejected
# publish and retried, three-way merges of separate edits, same-line
# conflicts, delete-versus-edit, gitignored paths (last writer wins),
# empty directories, the .wh. reserve, and isolated networking.

import os
import time

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,
                 err_result, main, ok_result, remove_our_containers,
                 tmpdir)

TEXT = "".join("line %d\n" % i for i in range(1, 11))


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(os.path.join(ws, "build"))
    with open(os.path.join(ws, "notes.txt"), "w") as f:
        f.write(TEXT)
    with open(os.path.join(ws, "victim.txt"), "w") as f:
        f.write("keep me\n")
    with open(os.path.join(ws, ".gitignore"), "w") as f:
        f.write("build/\n*.log\n")
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]

    def session(profile=None):
        args = {"sandbox_id": sid}
        if profile:
            args["network_profile"] = profile
        r = ok_result(s.call("create_workspace_session", args), "session")
        check_eq(r["finalize_policy"], "none", "managed")
        return r

    def run(cmd, wsid=None):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 20000}
        if wsid:
            args["workspace_session_id"] = wsid
        r = ok_result(s.call("exec_command", args, timeout=60), cmd[:40])
        return r

    def publish(wsid):
        return s.call("publish_workspace_session",
                      {"sandbox_id": sid, "workspace_session_id": wsid},
                      timeout=60)

    # Isolation: A's unpublished file is invisible to B.
    a = session()
    b = session()
    check_eq((a["base_manifest_version"], a["network_profile"]),
             (1, "shared"), "session A")
    run("echo from-a > a-only.txt", a["workspace_session_id"])
    r = run("ls a-only.txt 2>&1 || echo absent", b["workspace_session_id"])
    check_in("absent", r["output"], "B does not see A's file")
    check_eq(r["publish"] if "publish" in r else None, None,
             "managed sessions never publish by themselves")
    # A publishes; B, started before, still does not see it; C does.
    r = ok_result(publish(a["workspace_session_id"]), "publish A")
    check_eq((r["destroyed"], r["publish"]["changed_paths"]),
             (True, ["a-only.txt"]), "A published and destroyed")
    r = run("cat a-only.txt 2>&1 || echo absent", b["workspace_session_id"])
    check_in("absent", r["output"], "B's base is fixed")
    c = session()
    check_eq(c["base_manifest_version"], 2, "C stands on version 2")
    r = run("cat a-only.txt", c["workspace_session_id"])
    check_eq(r["output"], "from-a\n", "C sees A's file")
    e = err_result(s.call("exec_command", {
        "sandbox_id": sid, "cmd": "true",
        "workspace_session_id": a["workspace_session_id"]}),
        "not_found", "a published session is gone")

    # Two sessions edit separate lines: both publish, merged.
    d = session()
    run("sed -i 's/^line 2$/line two/' notes.txt", b["workspace_session_id"])
    run("sed -i 's/^line 9$/line nine/' notes.txt", d["workspace_session_id"])
    ok_result(publish(b["workspace_session_id"]), "publish B")
    r = ok_result(publish(d["workspace_session_id"]), "publish D (merge)")
    r = run("cat notes.txt")
    check_eq(r["output"], TEXT.replace("line 2\n", "line two\n")
             .replace("line 9\n", "line nine\n"), "merged text")

    # Same line: the second is rejected, keeps its changes, and retries.
    e1 = session()
    e2 = session()
    run("sed -i 's/^line 5$/five by e1/' notes.txt",
        e1["workspace_session_id"])
    run("sed -i 's/^line 5$/five by e2/' notes.txt; echo x > other.txt",
        e2["workspace_session_id"])
    ok_result(publish(e1["workspace_session_id"]), "publish E1")
    e = err_result(publish(e2["workspace_session_id"]), "operation_failed",
                   "publish E2 conflicts")
    det = e["details"]
    check_eq(det["publish_reject_class"], "source_conflict", "class")
    conflicts = det["publish_reject_details"]["conflicts"]
    check_eq([x["path"] for x in conflicts], ["notes.txt"], "the path")
    check_eq(conflicts[0]["head"]["kind"], "file", "head state")
    r = run("grep five notes.txt; cat other.txt", e2["workspace_session_id"])
    check_eq(r["output"], "five by e2\nx\n", "E2 kept its changes")
    run("cp /dev/null /tmp/x; git 2>/dev/null; sed -i 's/^five by e2$/five"
        " by e1/' notes.txt", e2["workspace_session_id"])
    r = ok_result(publish(e2["workspace_session_id"]), "retry E2")
    check_eq(r["publish"]["changed_paths"], ["notes.txt", "other.txt"],
             "the retry publishes")

    # An automatic session's rejected publish discards its changes; the
    # command's own status is unchanged.
    f1 = session()
    run("echo f1 > victim.txt", f1["workspace_session_id"])
    g = session()
    run("rm victim.txt", g["workspace_session_id"])
    ok_result(publish(f1["workspace_session_id"]), "publish F1 (edit)")
    e = err_result(publish(g["workspace_session_id"]), "operation_failed",
                   "delete versus edit")
    check_eq(e["details"]["publish_reject_class"], "source_conflict",
             "delete-vs-edit conflicts")
    s.call("destroy_workspace_session", {"sandbox_id": sid,
                                         "workspace_session_id":
                                         g["workspace_session_id"]})
    # The automatic session starts, then H publishes a change to line 3;
    # the automatic session's change to line 3 is rejected and dropped.
    h = session()
    run("sed -i 's/^line 3$/three by h/' notes.txt",
        h["workspace_session_id"])
    r = s.call("exec_command", {
        "sandbox_id": sid, "yield_time_ms": 100,
        "cmd": "sleep 1.5; sed -i 's/^line 3$/three by auto/' notes.txt;"
        " echo x > auto.txt"})
    cid = r["structuredContent"]["command_session_id"]
    check_eq(r["structuredContent"]["status"], "running", "running")
    ok_result(publish(h["workspace_session_id"]), "H publishes")
    for _ in range(200):
        r = ok_result(s.call("read_command_lines", {
            "sandbox_id": sid, "command_session_id": cid}), "poll")
        if r["status"] != "running":
            break
        time.sleep(0.05)
    check_eq(r["status"], "ok", "the command itself succeeded")
    check_eq((r.get("publish_rejected"), r.get("publish_reject_class")),
             (True, "source_conflict"), "its publish was rejected")
    r = run("grep three notes.txt; ls auto.txt 2>&1 || echo absent")
    check_eq(r["output"].splitlines()[0], "three by h", "H's line stays")
    check_in("absent", r["output"], "the rejected changes are gone")
    # Gitignored paths: last writer wins, no conflict.
    i1 = session()
    i2 = session()
    run("mkdir -p build && echo i1 > build/out.o && echo i1 > run.log",
        i1["workspace_session_id"])
    run("mkdir -p build && echo i2 > build/out.o && echo i2 > run.log",
        i2["workspace_session_id"])
    ok_result(publish(i1["workspace_session_id"]), "publish I1")
    ok_result(publish(i2["workspace_session_id"]), "publish I2 (ignored)")
    r = run("cat build/out.o run.log")
    check_eq(r["output"], "i2\ni2\n", "the last writer wins")

    # Empty directories publish; .wh. names are refused.
    r = run("mkdir -p a/b/c")
    check_eq(sorted(r["publish"]["changed_paths"]), ["a", "a/b", "a/b/c"],
             "empty directories")
    r = run("touch .wh.x")
    check_eq((r["publish_rejected"], r["publish_reject_class"]),
             (True, "protected_path"), ".wh. is protected")
    r = run("ls -a | grep -c wh || true")
    check_eq(r["output"], "0\n", "the refused change is gone")

    # Fifos and sockets are not published, and the result says so.
    r = run("mkfifo pipe && echo kept > kept.txt")
    check_eq(r["publish"]["changed_paths"], ["kept.txt"], "only the file")
    check_eq(r["publish_dropped"], ["pipe"], "the fifo is listed")

    # Destroy discards and reports what it dropped.
    j = session()
    run("head -c 5000 /dev/zero > big.bin", j["workspace_session_id"])
    r = ok_result(s.call("destroy_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": j["workspace_session_id"]}),
        "destroy")
    check_eq((r["destroyed"], r["discarded_bytes"]), (True, 5000),
             "discarded bytes")
    r = run("ls big.bin 2>&1 || echo absent")
    check_in("absent", r["output"], "discarded")

    # Isolated network: loopback only.
    k = session("isolated")
    check_eq(k["network_profile"], "isolated", "isolated profile")
    r = run("ip -o link 2>/dev/null | cut -d: -f2 | tr -d ' '; ip -o addr"
            " 2>/dev/null | grep -c 'inet '", k["workspace_session_id"])
    check_eq(r["output"].split(), ["lo", "1"], "only lo, up")
    e = err_result(s.call("create_workspace_session", {
        "sandbox_id": sid, "network_profile": "public"}),
        "invalid_request", "bad profile")
    # Refusals while a command runs.
    m = session()
    r = s.call("exec_command", {"sandbox_id": sid, "cmd": "sleep 30",
                                "workspace_session_id":
                                m["workspace_session_id"],
                                "yield_time_ms": 100})
    cid = r["structuredContent"]["command_session_id"]
    for tool in ("publish_workspace_session", "destroy_workspace_session"):
        e = err_result(s.call(tool, {"sandbox_id": sid,
                                     "workspace_session_id":
                                     m["workspace_session_id"]}),
                       "conflict", tool + " while running")
        check_eq(e["details"]["running_commands"], [cid], "lists it")
    s.call("write_command_stdin", {"sandbox_id": sid,
                                   "command_session_id": cid,
                                   "stdin": "\u0003"})

    # Another process destroys the sandbox: our sessions in it end.
    # (Only this server's: other suites may run on the machine.)
    def our_inits():
        """Session inits among this server's children (it adopts them)."""
        out = []
        for task in os.listdir("/proc/%d/task" % s.proc.pid):
            with open("/proc/%d/task/%s/children" % (s.proc.pid,
                                                     task)) as f:
                for c in f.read().split():
                    try:
                        with open("/proc/%s/cmdline" % c, "rb") as g:
                            if b"sandbox-mcp: session" in g.read():
                                out.append(c)
                    except OSError:
                        pass
        return out
    n = session()
    check(our_inits(), "the server has session inits")
    other = Server(sets=("management",), config="workspace-root %s\n"
                   % roots, state=state)
    other.initialize()
    ok_result(other.call("destroy_sandbox", {"sandbox_id": sid}),
              "destroyed by another process")
    deadline = time.time() + 15
    while time.time() < deadline:
        left = our_inits()
        if not left:
            break
        time.sleep(0.5)
    check_eq(left, [], "no session init left behind")


main(test)
