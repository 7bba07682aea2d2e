#!/usr/bin/env python3
# squash_layerstacks against the real Docker Engine:
# - after 30 publishes (files added, changed and deleted, a directory
#   replaced whole, a symlink, through sessions and sessionless writes)
#   a squash leaves the published view byte for byte as it was (a hash
#   of /workspace's names, types, modes, bytes and links) and the stack
#   short: one layer per run
#   between the tops of live sessions' leases, the base kept;
# - a live session standing in the middle of the stack sees its view
#   unchanged, is reported pinned, and its later publish is right; once
#   it ends, the layers it pinned are reclaimed;
# - the squashed layer holds no whiteout of a path nothing below has,
#   and hides a replaced directory (opaque) only over one below;
# - a squash while another process squashes the stack is a conflict
#   that changes nothing; nothing to squash gives empty arrays and the
#   same version;
# - autosquash (limit autosquash-depth 10) keeps the stack short under
#   sessionless writes, and a session still starts after 520 of them
#   (more than the 500 layers the kernel stacks in one overlay);
# - a sandbox's symlinks in its layers are never followed by the
#   squash (a link to a host directory, replaced by a directory of the
#   same name, then a whiteout over a link);
# - a live session whose lease cannot be read is reported in
#   faulty_sessions and keeps every replaced layer;
# - kill -9 in the middle of a squash leaves a manifest a restart can
#   use, the same view, and an empty staging directory;
# - two squashes at once while 10 sessions run commands: one squashes,
#   the other is a conflict, the commands keep running and their views
#   stay.

import fcntl
import json
import os
import signal
import time

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,
                 err_result, main, ok_result, remove_our_containers,
                 tmpdir)


def run(s, sid, cmd, ws=None):
    args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 60000}
    if ws is not None:
        args["workspace_session_id"] = ws
    r = ok_result(s.call("exec_command", args, timeout=90), "exec %r"
                  % cmd[:50])
    check_eq(r["status"], "ok", "exec %r ended" % cmd[:50])
    return r


def session(s, sid):
    return ok_result(s.call("create_workspace_session",
                            {"sandbox_id": sid}, timeout=60),
                     "session")["workspace_session_id"]


def publish(s, sid, ws):
    return ok_result(s.call("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": ws}, timeout=60),
        "publish %s" % ws)


def write(s, sid, path, content):
    return ok_result(s.call("file_write", {
        "sandbox_id": sid, "path": path, "content": content}, timeout=60),
        "write %s" % path)


VIEW = ("cd /workspace; { find . | sort | xargs stat -c '%n %F %a %s';"
        " find . -type f | sort | xargs md5sum; find . -type l | sort |"
        " while read l; do echo \"$l -> $(readlink \"$l\")\"; done; } |"
        " md5sum")


def view(s, sid, ws=None):
    """A hash of a session's /workspace (a new session's when ws is
    None: the published view): every name with its type, mode and size,
    every file's bytes, every link's target."""
    own = ws is None
    if own:
        ws = session(s, sid)
    r = run(s, sid, VIEW, ws)
    if own:
        ok_result(s.call("destroy_workspace_session", {
            "sandbox_id": sid, "workspace_session_id": ws}), "end view")
    check(len(r["output"].split()) == 2, "a hash of the view: %r"
          % r["output"][:200])
    return r["output"]


def kill_tree(pid):
    """SIGKILL a process and every process under it, all at once."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    todo, tree = [pid], []
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += kids.get(p, [])
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def manifest(state, sid):
    with open(os.path.join(state, "sandboxes", sid, "stack",
                           "manifest.json")) as f:
        return json.load(f)


def layer_dirs(state, sid):
    d = os.path.join(state, "sandboxes", sid, "stack", "layers")
    return sorted(n for n in os.listdir(d) if not n.endswith(".meta.json"))


def squash(s, sid):
    return ok_result(s.call("squash_layerstacks", {"sandbox_id": sid},
                            timeout=120), "squash")


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(os.path.join(ws, "keep", "sub"))
    for i in range(5):
        with open(os.path.join(ws, "keep", "sub", "f%d" % i), "w") as f:
            f.write("base %d\n" % i)
    with open(os.path.join(ws, "gone.txt"), "w") as f:
        f.write("to delete\n")
    outside = tmpdir()
    with open(os.path.join(outside, "host.txt"), "w") as f:
        f.write("host\n")
    config = "workspace-root %s\n" % roots
    s = Server(sets=("management", "runtime"), config=config)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}, timeout=120), "create")["id"]

    # Nothing to squash yet: empty arrays, the same version.
    v0 = manifest(state, sid)["version"]
    r = squash(s, sid)
    check_eq(r, {"manifest_version": v0, "squashed_blocks": [],
                 "swept_sessions": []}, "nothing to squash")

    # 30 publishes of every kind.
    for i in range(10):
        write(s, sid, "w/file%d.txt" % i, "write %d\n" % i)
    a = session(s, sid)
    run(s, sid, "rm gone.txt; rm -rf keep/sub; mkdir keep/sub;"
        " echo new > keep/sub/only; ln -s w/file1.txt link;"
        " ln -s %s hostlink" % outside, a)
    publish(s, sid, a)
    for i in range(9):
        write(s, sid, "w/file%d.txt" % i, "again %d\n" % i)
    # The middle of the stack: a live session stands here.
    live = session(s, sid)
    run(s, sid, "echo mine > mine.txt", live)
    for i in range(5):
        b = session(s, sid)
        run(s, sid, "echo %d >> w/log.txt; rm -f w/file%d.txt" % (i, i), b)
        publish(s, sid, b)
    # A link to a host directory, then a directory of that name, then a
    # deletion of it: the squash must see names, never follow them.
    c = session(s, sid)
    run(s, sid, "ln -s %s trap" % outside, c)
    publish(s, sid, c)
    c = session(s, sid)
    run(s, sid, "rm trap; mkdir trap; echo in > trap/x", c)
    publish(s, sid, c)
    c = session(s, sid)
    run(s, sid, "rm -rf trap hostlink", c)
    publish(s, sid, c)
    for i in range(3):
        write(s, sid, "tail%d.txt" % i, "tail %d\n" % i)
    before = manifest(state, sid)
    depth = len(before["layers"]) - 1
    check(depth >= 30, "30 publishes or more (%d)" % depth)
    published = view(s, sid)
    mine = view(s, sid, live)

    r = squash(s, sid)
    after = manifest(state, sid)
    check_eq(r["manifest_version"], after["version"], "the new version")
    check_eq(after["version"], before["version"] + 1, "one commit")
    check_eq(after["layers"][-1], before["layers"][-1], "the base stays")
    blocks = r["squashed_blocks"]
    check_eq(len(blocks), 2, "two runs: above and below the live session's"
             " top (%r)" % blocks)
    ids = [l["layer_id"] for l in after["layers"]]
    check_eq(len(ids), 4, "squashed, the live top, squashed, base: %r"
             % ids)
    replaced = set()
    for b in blocks:
        check(b["squashed_layer_id"] in ids, "the block's layer is in the"
              " manifest")
        check(b["squashed_layer_id"].startswith("S"), "an S layer id")
        replaced |= set(b["replaced_layer_ids"])
    check_eq(len(replaced), depth - 1, "every layer but the live top was"
             " replaced")
    swept = {x["session_id"]: x["disposition"] for x in r["swept_sessions"]}
    check_eq(swept.get(live), "pinned", "the live session is pinned")
    check_eq(len(r.get("blocked_reasons", [])), 1, "one reason")
    check_in(live, r["blocked_reasons"][0], "the reason names it")
    lower = [b for b in blocks if b["squashed_layer_id"] == ids[2]][0]
    upper = [b for b in blocks if b["squashed_layer_id"] == ids[0]][0]
    check_eq(lower["replaced_layers"], "pinned", "the live session's"
             " layers stay")
    check_eq(upper["replaced_layers"], "reclaimed", "the rest go")

    # Byte for byte the same, published and in the live session.
    check_eq(view(s, sid), published, "the published view")
    check_eq(view(s, sid, live), mine, "the live session's view")
    # The upper squashed layer: no whiteout of trap (nothing below has
    # it), nothing of the host's directory.
    top = os.path.join(state, "sandboxes", sid, "stack", "layers", ids[0])
    check(not os.path.lexists(os.path.join(top, "trap")),
          "no deletion of a path nothing below has")
    check(not os.path.exists(os.path.join(top, "hostlink", "host.txt")),
          "a link was never followed")
    check_eq(sorted(os.listdir(outside)), ["host.txt"], "the host's"
             " directory is untouched")
    low = os.path.join(state, "sandboxes", sid, "stack", "layers", ids[2])
    check_eq(os.getxattr(os.path.join(low, "keep", "sub"),
                         "trusted.overlay.opaque"), b"y",
             "a replaced directory hides the base's")
    check(os.path.lexists(os.path.join(low, "gone.txt")),
          "the deletion of a base file is kept")

    # The live session publishes on top of the squashed stack.
    p = publish(s, sid, live)
    check_in("mine.txt", p["publish"]["changed_paths"],
             "the live session's change")
    r = ok_result(s.call("file_read", {"sandbox_id": sid,
                                       "path": "mine.txt"}), "read")
    check_eq(r["content"], "mine\n", "its file is published")
    # It has ended: what it pinned goes.
    for _ in range(200):
        m = manifest(state, sid)
        if layer_dirs(state, sid) == sorted(l["layer_id"] for l in
                                            m["layers"][:-1]):
            break
        time.sleep(0.05)
    m = manifest(state, sid)
    check_eq(layer_dirs(state, sid), sorted(l["layer_id"] for l in
                                            m["layers"][:-1]),
             "the pinned layers were reclaimed once the session ended")

    # A live session whose lease cannot be read (its layers damaged) is
    # faulty: named in faulty_sessions and blocked_reasons, and every
    # replaced layer stays, so that whatever it stands on is kept.
    for i in range(3):
        write(s, sid, "pre%d.txt" % i, "pre %d\n" % i)
    bad = session(s, sid)
    run(s, sid, "echo bad > bad.txt", bad)
    badview = view(s, sid, bad)
    for i in range(3):
        write(s, sid, "post%d.txt" % i, "post %d\n" % i)
    lease = os.path.join(state, "sandboxes", sid, "sessions", bad,
                         "lease.json")
    with open(lease) as f:
        doc = json.load(f)
    doc["layers"] = "not a stack"
    with open(lease + ".tmp", "w") as f:
        json.dump(doc, f)
    os.rename(lease + ".tmp", lease)
    r = squash(s, sid)
    check_eq(r.get("faulty_sessions"), [bad], "the faulty session")
    check(any(bad in x and "every layer" in x
              for x in r.get("blocked_reasons", [])),
          "a reason names it: %r" % r.get("blocked_reasons"))
    check(len(r["squashed_blocks"]) >= 1, "the stack was squashed")
    check_eq({b["replaced_layers"] for b in r["squashed_blocks"]},
             {"pinned"}, "no layer is reclaimed under it")
    check_eq(view(s, sid, bad), badview, "its view is the same")

    # One at a time: while another process squashes this stack (it
    # holds the stack's squash lock), a squash is a conflict and changes
    # nothing; once it is done, the squash goes ahead.
    for i in range(20):
        write(s, sid, "c/f%d.txt" % i, "c %d\n" % i)
    m = manifest(state, sid)
    lock = os.open(os.path.join(state, "sandboxes", sid, "stack",
                                ".squash"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    e = err_result(s.call("squash_layerstacks", {"sandbox_id": sid},
                          timeout=60), "conflict", "a squash meanwhile")
    check_in("another squash", e["message"], "the conflict says why")
    check_eq(manifest(state, sid), m, "the conflict changed nothing")
    os.close(lock)
    r = squash(s, sid)
    check_eq(len(r["squashed_blocks"]), 1, "then the squash goes ahead")

    # kill -9 in the middle of a squash of a bigger stack: the server
    # and every process under it, once the squash is building its layer.
    for i in range(40):
        files = {"k/%d/f%d.txt" % (i, j): "k %d %d\n" % (i, j)
                 for j in range(150)}
        c = session(s, sid)
        run(s, sid, "mkdir -p k/%d; cd k/%d; for j in $(seq 0 149); do"
            " echo \"k %d $j\" > f$j.txt; done" % (i, i, i), c)
        publish(s, sid, c)
    del files
    published = view(s, sid)
    staging_dir = os.path.join(state, "sandboxes", sid, "stack", "staging")
    s.send({"jsonrpc": "2.0", "id": 999, "method": "tools/call",
            "params": {"name": "squash_layerstacks",
                       "arguments": {"sandbox_id": sid}}})
    end = time.time() + 60
    while not os.listdir(staging_dir) and time.time() < end:
        time.sleep(0.001)
    check(os.listdir(staging_dir) != [], "the squash is building")
    kill_tree(s.proc.pid)
    s.kill()
    s = Server(sets=("management", "runtime"), config=config, state=state)
    s.initialize()
    m = manifest(state, sid)
    check(len(m["layers"]) >= 2, "the manifest is whole after kill -9")
    check_eq(view(s, sid), published, "the view after kill -9")
    check_eq(os.listdir(staging_dir), [], "staging is emptied at start")
    squash(s, sid)
    check_eq(len(manifest(state, sid)["layers"]), 2,
             "a squash after the restart: one layer over the base")
    check_eq(view(s, sid), published, "the view after that squash")
    s.kill()

    # Autosquash at depth 10: 520 sessionless writes (more layers than
    # the kernel stacks in one overlay) keep the stack short, each write
    # succeeds, and a session still starts on it.
    s = Server(sets=("management", "runtime"), state=state,
               config=config + "limit autosquash-depth 10\n")
    s.initialize()
    deepest = 0
    for i in range(520):
        write(s, sid, "auto/%d.txt" % i, "%d\n" % i)
        deepest = max(deepest, len(manifest(state, sid)["layers"]) - 1)
    check(deepest <= 100, "autosquash keeps the stack short (at most %d"
          " layers)" % deepest)
    w = session(s, sid)
    r = run(s, sid, "cat auto/519.txt auto/0.txt", w)
    check_eq(r["output"], "519\n0\n", "a session on the squashed stack")
    s.kill()

    # Two squashes at once while 10 sessions run commands: one squashes,
    # the other is a conflict or finds nothing left; every command
    # keeps running and sees its session's view as it was.
    s = Server(sets=("management", "runtime"), state=state, config=config)
    s.initialize()
    busy = []
    for i in range(10):
        ws = session(s, sid)
        r = ok_result(s.call("exec_command", {
            "sandbox_id": sid, "workspace_session_id": ws,
            "cmd": "echo s%d > mine.txt; while :; do cat mine.txt"
            " auto/7.txt >/dev/null || exit 3; sleep 0.05; done" % i,
            "yield_time_ms": 100}, timeout=60), "busy command %d" % i)
        check_eq(r["status"], "running", "command %d runs" % i)
        busy.append((ws, r["command_session_id"]))
        for k in range(3):
            write(s, sid, "busy/%d-%d.txt" % (i, k), "%d %d\n" % (i, k))
    published = view(s, sid)
    for rid in (801, 802):
        s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": "squash_layerstacks",
                           "arguments": {"sandbox_id": sid}}})
    answers = [s.wait(rid, timeout=120) for rid in (801, 802)]
    kinds = []
    for a in answers:
        res = a["result"]
        if res.get("isError"):
            kinds.append(res["structuredContent"]["error"]["kind"])
        else:
            kinds.append("ok")
    check_in("ok", kinds, "one of two concurrent squashes squashes: %r"
             % kinds)
    check(all(k in ("ok", "conflict") for k in kinds), "the other is a"
          " conflict or a squash of what is left: %r" % kinds)
    check_eq(view(s, sid), published, "the view after concurrent squashes")
    for i, (ws, cs) in enumerate(busy):
        r = ok_result(s.call("read_command_lines", {
            "sandbox_id": sid, "command_session_id": cs}), "read %d" % i)
        check_eq(r["status"], "running", "command %d still runs after the"
                 " squash" % i)
        r = run(s, sid, "cat mine.txt", ws)
        check_eq(r["output"], "s%d\n" % i, "session %d's own file" % i)
        r = ok_result(s.call("write_command_stdin", {
            "sandbox_id": sid, "command_session_id": cs, "stdin": "\u0003",
            "yield_time_ms": 10000}, timeout=30), "interrupt %d" % i)
        check(r["status"] != "running", "command %d interrupted" % i)
        ok_result(s.call("destroy_workspace_session", {
            "sandbox_id": sid, "workspace_session_id": ws}, timeout=60),
            "end busy %d" % i)
    ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}, timeout=120),
              "destroy")


if __name__ == "__main__":
    main(test)
