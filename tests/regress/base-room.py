#!/usr/bin/env python3
# The shared bases on a small loop-mounted ext4 state directory (400 MiB)
# with profile disk 64M and limit disk-reserve 48M, as a tenant pressing
# on the host's disk would:
# - once the sandboxes' disks have taken the room, creates from new
#   workspaces (24 MiB each) are refused before anything is copied: the
#   base cache gains no entry and the host's free space does not move,
#   however many are tried (before, each refused create left its copy in
#   the base cache, and the host filled past the reserve);
# - a base no sandbox uses is removed with the last sandbox on it; one a
#   sandbox still uses stays;
# - a create that reuses a base while the last sandbox on it is destroyed
#   gets a working sandbox (the sweep of unused bases waits for the
#   create's record);
# - three creates at once from new 96 MiB workspaces never take the
#   host's free space under the reserve while they run;
# - a workspace bigger than the room is refused from its walk, before a
#   byte of it is read; one of more entries than there are inodes free
#   is refused before its copy takes them.

import os
import select
import threading
import time

from lib import (IMAGE, check, check_eq, check_in, cleanup, free_bytes, main,
                 ok_result, readers_of, remove_our_containers, Server,
                 small_fs, tmpdir)

MIB = 1024 * 1024


def bases(state):
    d = os.path.join(state, "base-cache")
    return sorted(n for n in os.listdir(d) if not n.startswith("."))


def test():
    top = tmpdir()
    fs = small_fs(top)
    roots = os.path.join(top, "roots")
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "readme.txt"), "w") as f:
        f.write("base\n")
    other = os.path.join(roots, "other")
    os.makedirs(other)
    with open(os.path.join(other, "other.txt"), "w") as f:
        f.write("other\n")
    subs = []
    for i in range(6):
        d = os.path.join(roots, "big", "sub%d" % i)
        os.makedirs(d)
        with open(os.path.join(d, "data.bin"), "wb") as f:
            f.write(os.urandom(24 * MIB))
        subs.append(d)
    state = os.path.join(fs, "state")
    s = Server(sets=("management", "runtime"), state=state,
               config="workspace-root %s\nprofile disk 64M\n"
               "limit disk-reserve 48M\n" % roots)
    cleanup(lambda: remove_our_containers(state))
    s.initialize()

    def create(path):
        return s.call("create_sandbox", {"image": IMAGE,
                                         "workspace_root": path},
                      timeout=120)

    def destroy(sid):
        ok_result(s.call("destroy_sandbox", {"sandbox_id": sid},
                         timeout=60), "destroy %s" % sid)

    def cat(sid, name):
        return ok_result(s.call("exec_command", {
            "sandbox_id": sid, "cmd": "cat /workspace/" + name}),
            "cat %s" % name)["output"]

    # One sandbox on another workspace, then ws's until the room is gone.
    r = create(other)
    keep = ok_result(r, "create from other")["id"]
    made = []
    for i in range(10):
        r = create(ws)
        if r.get("isError"):
            check_in("no room", r["structuredContent"]["error"]["message"],
                     "the disk refusal says why")
            break
        made.append(r["structuredContent"]["id"])
    check(len(made) >= 1, "sandboxes fit: %d" % len(made))
    check_eq(len(bases(state)), 2, "two bases: %r" % bases(state))

    # New workspaces now: each refused before its copy.
    before_free, before_bases = free_bytes(fs), bases(state)
    for d in subs:
        r = create(d)
        check(r.get("isError"), "a create from %s is refused" % d)
        err = r["structuredContent"]["error"]
        check_eq(err["kind"], "operation_failed", "refusal kind")
        check_in("no room", err["message"], "the refusal says why")
        check_in("disk-reserve", err["message"], "and names the reserve")
        check_eq(bases(state), before_bases,
                 "no base left by a refused create from %s" % d)
    os.sync()
    check(abs(free_bytes(fs) - before_free) < 2 * MIB,
          "the host's room did not move: %d then %d"
          % (before_free, free_bytes(fs)))
    check(free_bytes(fs) >= 48 * MIB, "the reserve is free: %d" % free_bytes(fs))
    staging = os.listdir(os.path.join(state, "base-cache", ".staging"))
    check_eq(staging, [], "no copy in progress is left")

    # The last sandbox on ws goes, and ws's base with it; other's stays.
    ws_base = [b for b in bases(state) if b in
               open(os.path.join(state, "sandboxes", made[0] + ".json"))
               .read()]
    check_eq(len(ws_base), 1, "ws's base is named by its records")
    for sid in made[1:]:
        destroy(sid)
    check(ws_base[0] in bases(state), "a base in use stays")
    destroy(made[0])
    left = bases(state)
    check_eq(len(left), 1, "ws's base went with its last sandbox: %r"
             % left)
    check(ws_base[0] not in left, "the one left is other's")
    check_eq(cat(keep, "other.txt"), "other\n", "other's sandbox reads on")

    # A create reusing a base while the last sandbox on it goes.
    for i in range(3):
        first = ok_result(create(ws), "create on ws (%d)" % i)["id"]
        ids = []
        for name, args in (("create_sandbox", {"image": IMAGE,
                                               "workspace_root": ws}),
                           ("destroy_sandbox", {"sandbox_id": first})):
            s._next_id += 1
            ids.append(s._next_id)
            s.send({"jsonrpc": "2.0", "id": s._next_id,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": args}})
        made_r = s.wait(ids[0], 120)
        ok_result(s.wait(ids[1], 60)["result"], "destroy beside a create")
        second = ok_result(made_r["result"], "a create beside a destroy")[
            "id"]
        check_eq(cat(second, "readme.txt"), "base\n",
                 "the new sandbox reads its base (%d)" % i)
        destroy(second)
        check_eq(len(bases(state)), 1, "its base went after it (%d)" % i)
    destroy(keep)
    check_eq(bases(state), [], "no base is left with no sandbox")

    # Three creates at once from three new 96 MiB workspaces: the copies
    # and the disks take their room one at a time, so the host's free
    # space never falls under the reserve while they run, whatever they
    # answer (before, each copy judged the room alone, and together they
    # filled the file system).
    triple = []
    for i in range(3):
        d = os.path.join(roots, "triple", "t%d" % i)
        os.makedirs(d)
        with open(os.path.join(d, "data.bin"), "wb") as f:
            f.write(os.urandom(96 * MIB))
        triple.append(d)
    low = [free_bytes(fs)]
    done = threading.Event()

    def sample():
        while not done.is_set():
            low[0] = min(low[0], free_bytes(fs))
            time.sleep(0.002)
    t = threading.Thread(target=sample)
    t.start()
    ids = []
    for d in triple:
        s._next_id += 1
        ids.append(s._next_id)
        s.send({"jsonrpc": "2.0", "id": s._next_id, "method": "tools/call",
                "params": {"name": "create_sandbox", "arguments": {
                    "image": IMAGE, "workspace_root": d}}})
    answers = [s.wait(i, 180)["result"] for i in ids]
    done.set()
    t.join()
    made = [a["structuredContent"]["id"] for a in answers
            if not a.get("isError")]
    for a in answers:
        if a.get("isError"):
            check_in("no room", a["structuredContent"]["error"]["message"],
                     "a create at once is refused for room: %r" % a)
    check(len(made) >= 1, "one of the three fits")
    check(low[0] >= 48 * MIB, "the reserve stayed free while they ran:"
          " %d bytes free at the lowest" % low[0])
    for sid in made:
        destroy(sid)

    # A workspace bigger than the room (a sparse file of 2 GiB) is
    # refused from its walk, before a byte of it is read.
    sparse = os.path.join(roots, "sparse")
    os.makedirs(sparse)
    big = os.path.join(sparse, "big")
    with open(big, "wb") as f:
        f.truncate(2 << 30)
    s._next_id += 1
    rid = s._next_id
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "create_sandbox", "arguments": {
                "image": IMAGE, "workspace_root": sparse}}})
    read = False
    out = s.proc.stdout.fileno()
    end = time.time() + 120
    while rid not in s._pending and time.time() < end:
        read = read or readers_of(big)
        if b"\n" in s._buf or select.select([out], [], [], 0.002)[0]:
            m = s.recv(10)
            s._pending[m.get("id")] = m
    r = s.wait(rid, 60)["result"]
    check(r.get("isError"), "a 2 GiB workspace is refused: %r" % r)
    check_in("no room", r["structuredContent"]["error"]["message"],
             "for room")
    check(not read, "and not read first")

    # Few inodes: a workspace of more entries than the file system has
    # inodes free is refused, before its copy takes them.
    fs2 = small_fs(os.path.join(top, "f2"), "64M", inodes=2048)
    state2 = os.path.join(fs2, "state")
    s2 = Server(sets=("management", "runtime"), state=state2,
                config="workspace-root %s\nprofile disk none\n"
                "limit disk-reserve 4M\n" % roots)
    cleanup(lambda: remove_our_containers(state2))
    s2.initialize()
    many = os.path.join(roots, "many")
    os.makedirs(many)
    for i in range(3000):
        open(os.path.join(many, "e%d" % i), "w").close()
    before = os.statvfs(fs2).f_favail
    r = s2.call("create_sandbox", {"image": IMAGE, "workspace_root": many},
                timeout=120)
    check(r.get("isError"), "3000 entries on 2048 inodes: %r" % r)
    check_in("inodes", r["structuredContent"]["error"]["message"],
             "the refusal names inodes")
    check(os.statvfs(fs2).f_favail >= before - 16, "no inode was taken:"
          " %d then %d" % (before, os.statvfs(fs2).f_favail))
    s2.kill()


main(test)
