#!/usr/bin/env python3
# Nothing leaves a sandbox through a publish, and no session reaches
# another's unpublished work.
#
# 1. A process in a managed session exchanges a real directory with a
#    symlink to a host directory (renameat2 RENAME_EXCHANGE in a loop,
#    started with setsid) while the session is published: no host file
#    (a canary, 0600 under a 0700 directory on the state directory's file
#    system, and another sandbox's transcript) ever reaches a layer, and
#    no publish message names a host path.
# 2. The same race run by a process of another session, holding a
#    descriptor of the publishing session's /workspace received over a
#    unix socket in the shared /run: the publishing session's processes
#    can be stopped, that one cannot.
# 3. A daemon in a managed session receives a descriptor of /workspace
#    from a clean automatic session; later automatic sessions never hand
#    out that overlay: what they write is not seen through the
#    descriptor, and what is planted through it never reaches them, nor
#    their publishes (blame credits nobody with it).
# 4. A published layer cannot be changed afterwards through a file
#    descriptor, open for writing, that the publishing session handed to
#    a process of another session.

import json
import os
import subprocess

from lib import (IMAGE, SRCDIR, Server, check, check_eq, check_in, cleanup,
                 main, ok_result, remove_our_containers, tmpdir)

ROUNDS = 60


def build_hostile(dest):
    src = os.path.join(SRCDIR, "tests", "regress", "hostile.c")
    subprocess.run(["cc", "-static", "-O2", "-o", dest, src], check=True)


def test():
    top = tmpdir()
    roots = os.path.join(top, "roots")
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    build_hostile(os.path.join(ws, "hostile"))
    # The canary: a root-only file on the state directory's file system.
    canary_dir = os.path.join(top, "canary")
    os.makedirs(canary_dir, mode=0o700)
    os.chmod(canary_dir, 0o700)
    canaries = []
    for i in range(100):
        canary = os.path.join(canary_dir, "secret%02d" % i)
        with open(canary, "wb") as f:
            f.write(b"CANARY-7f3c9a-host-secret\n")
        os.chmod(canary, 0o600)
        canaries.append(canary)

    state = os.path.join(top, "state")
    s = Server(sets=("management", "runtime"), state=state,
               config="workspace-root %s\n" % roots)
    cleanup(lambda: remove_our_containers(state))
    s.initialize()

    def create():
        return ok_result(s.call("create_sandbox", {
            "image": IMAGE, "workspace_root": ws}), "create")["id"]

    sid = create()
    other = create()

    def call(name, args, what=None):
        return s.call(name, args, timeout=60)

    def run(cmd, box=None, **kw):
        args = {"sandbox_id": box or sid, "cmd": cmd,
                "yield_time_ms": 30000}
        args.update(kw)
        return ok_result(call("exec_command", args), "exec %r" % cmd[:50])

    def session(box=None):
        return ok_result(call("create_workspace_session", {
            "sandbox_id": box or sid}), "create session")[
                "workspace_session_id"]

    # Another sandbox's transcript, as list_sandboxes would let anyone
    # find: a command there prints a secret of its own.
    r = run("echo OTHER-SANDBOX-TRANSCRIPT-5e1d", box=other)
    cmd_other = r["command_session_id"]

    # Relative paths from a session's upper directory up to the test's
    # top directory: upper -> <ws> -> sessions -> <sbox> -> sandboxes
    # -> state -> top.
    up = "../../../../../.."
    targets = [up + "/canary",
               up + "/state/sandboxes/%s/commands" % other]

    # A deeper stack makes each step of a walk slower, as a long-lived
    # sandbox's is: the race has more room.
    for i in range(60):
        ok_result(call("file_write", {"sandbox_id": sid,
                                      "path": "pad/p%02d" % i,
                                      "content": "%d\n" % i}), "pad")

    leaked = []

    def check_layers(what):
        """No host bytes in any layer of the sandbox."""
        layers = os.path.join(state, "sandboxes", sid, "stack", "layers")
        for dirpath, dirnames, filenames in os.walk(layers):
            for name in filenames:
                full = os.path.join(dirpath, name)
                if os.path.islink(full) or not os.path.isfile(full):
                    continue
                # An autosquash may reclaim a layer under the walk: its
                # files live on in the layer that replaced it.
                try:
                    with open(full, "rb") as f:
                        data = f.read(1 << 20)
                except FileNotFoundError:
                    continue
                if (b"CANARY-7f3c9a" in data or
                        b"OTHER-SANDBOX-TRANSCRIPT" in data):
                    leaked.append((what, full))
        for canary in canaries:
            st = os.stat(canary)
            if st.st_nlink != 1:
                leaked.append((what, "%s has %d links" % (canary,
                                                         st.st_nlink)))

    messages = []

    # 1. The session's own process races the publish.
    for i in range(ROUNDS):
        ws_id = session()
        tgt = targets[i % len(targets)]
        r = run("mkdir -p d%d && echo x > d%d/x && ln -s %s s%d; "
                "(setsid /workspace/hostile swap d%d s%d </dev/null "
                ">/dev/null 2>&1 &); sleep 0.1; echo started"
                % (i, i, tgt, i, i, i), workspace_session_id=ws_id)
        check_eq(r["status"], "ok", "the swapper started")
        res = call("publish_workspace_session", {
            "sandbox_id": sid, "workspace_session_id": ws_id})
        sc = res["structuredContent"]
        # Not even the names of host files may come back.
        check("secret" not in json.dumps(sc), "round %d: a host file's"
              " name came back: %r" % (i, sc))
        if res.get("isError"):
            messages.append(sc["error"]["message"])
            call("destroy_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": ws_id})
        check_layers("own race %d" % i)
        if leaked:
            break
    check_eq(leaked, [], "host files in a layer after the own-session race")
    for m in messages:
        check(state not in m and top not in m,
              "a publish message names a host path: %r" % m)

    # Nothing published can be read back as a host file either.
    for i in range(ROUNDS):
        for name in ("d%d/secret00" % i, "s%d/secret00" % i):
            r = call("file_read", {"sandbox_id": sid, "path": name})
            check(r.get("isError") is True or b"CANARY" not in
                  r["structuredContent"].get("content", "").encode(),
                  "file_read %s returns the canary" % name)
    r = run("cat d*/secret s*/secret 2>/dev/null")
    check("CANARY" not in r["output"], "cat returns the canary: %r"
          % r["output"])

    # 2. A process of another session races the publish through a
    # descriptor of the publishing session's /workspace.
    for i in range(ROUNDS // 2):
        holder = session()
        sock = "/run/race-%d.sock" % i
        r = run("(mkdir -p /run; setsid /workspace/hostile serve %s swap e%d f%d "
                "</dev/null >/dev/null 2>&1 &); sleep 0.2; echo started"
                % (sock, i, i),
                workspace_session_id=holder)
        victim = session()
        tgt = targets[i % len(targets)]
        r = run("mkdir -p e%d && echo x > e%d/x && ln -s %s f%d && "
                "/workspace/hostile send %s /workspace && echo sent"
                % (i, i, tgt, i, sock), workspace_session_id=victim)
        check_eq(r["output"].strip(), "sent", "the descriptor was sent")
        res = call("publish_workspace_session", {
            "sandbox_id": sid, "workspace_session_id": victim})
        check("secret" not in json.dumps(res["structuredContent"]),
              "foreign round %d: a host file's name came back: %r"
              % (i, res["structuredContent"]))
        if res.get("isError"):
            m = res["structuredContent"]["error"]["message"]
            check(state not in m and top not in m,
                  "a publish message names a host path: %r" % m)
            call("destroy_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": victim})
        call("destroy_workspace_session", {
            "sandbox_id": sid, "workspace_session_id": holder})
        check_layers("foreign race %d" % i)
        if leaked:
            break
    check_eq(leaked, [], "host files in a layer after the foreign race")

    # 3. A kept session's overlay held by another session.
    holder = session()
    r = run("(mkdir -p /run; setsid /workspace/hostile serve /run/pool.sock keep </dev/null >/dev/null"
            " 2>&1 &); sleep 0.2; echo started", workspace_session_id=holder)
    r = run("/workspace/hostile send /run/pool.sock /workspace && echo sent")
    check_eq(r["output"].strip(), "sent", "a clean automatic session sent"
             " its /workspace")
    first = r["workspace_session_id"]
    # The next automatic sessions write; the holder looks and plants.
    seen = []
    for i in range(5):
        r = run("echo private-%d > mine-%d.txt; sleep 0.1; "
                "/workspace/hostile ask /run/pool.sock; "
                "cat planted 2>/dev/null || echo no-plant" % (i, i))
        seen.append(r)
        check("mine-%d.txt" % i not in r["output"],
              "another session sees this session's unpublished file: %r"
              % r["output"])
        check("no-plant" in r["output"] or r["output"].count("planted")
              <= 1, "a file planted through the descriptor reached this"
              " session: %r" % r["output"])
        check(r["workspace_session_id"] != first, "a new session id")
        pub = r.get("publish") or {}
        check("planted" not in pub.get("changed_paths", []),
              "a planted file was published by this session: %r" % pub)
    r = call("file_blame", {"sandbox_id": sid, "path": "planted"})
    check(r.get("isError") is True, "nobody is credited with a planted"
          " file: %r" % r)
    r = call("file_read", {"sandbox_id": sid, "path": "planted"})
    check(r.get("isError") is True, "a planted file was published: %r" % r)
    call("destroy_workspace_session", {"sandbox_id": sid,
                                      "workspace_session_id": holder})

    # 4. A published layer cannot be changed afterwards through a file
    # descriptor another session kept: the publishing session hands a
    # file it wrote, open for writing, to a daemon, and the daemon
    # writes it after the publish.
    for kind in ("automatic", "managed"):
        holder = session()
        sock = "/run/scribble-%s.sock" % kind
        run("mkdir -p /run; (setsid /workspace/hostile serve %s scribble"
            " </dev/null >/dev/null 2>&1 &); sleep 0.2; echo ok" % sock,
            workspace_session_id=holder)
        name = "kept-%s.txt" % kind
        cmd = ("echo original > %s && /workspace/hostile sendrw %s %s &&"
               " echo sent" % (name, sock, name))
        if kind == "automatic":
            r = run(cmd)
            check(r["publish"] and name in r["publish"]["changed_paths"],
                  "published: %r" % r)
        else:
            w = session()
            r = run(cmd, workspace_session_id=w)
            ok = call("publish_workspace_session", {
                "sandbox_id": sid, "workspace_session_id": w})
            check(not ok["isError"], "published: %r" % ok)
        check_eq(r["output"], "sent\n", "the descriptor was sent")
        r = run("/workspace/hostile ask %s" % sock,
                workspace_session_id=holder)
        check_in("scribbled 10", r["output"], "the daemon wrote through"
                 " its descriptor")
        r = call("file_read", {"sandbox_id": sid, "path": name})
        check_eq(r["structuredContent"].get("content"), "original\n",
                 "the published %s file is as published" % kind)
        r = run("cat %s" % name)
        check_eq(r["output"], "original\n", "a later session sees what"
                 " was published (%s)" % kind)
        call("destroy_workspace_session", {"sandbox_id": sid,
                                          "workspace_session_id": holder})
    del cmd_other


if __name__ == "__main__":
    main(test)
