#!/usr/bin/env python3
# The per-sandbox disk cap (profile disk 64M): 200 MiB written to
# /workspace stop at the cap with "No space left on device" inside the
# sandbox, and the host file system under the state directory grows by
# at most the cap (plus MARGIN, the host file system's own bookkeeping
# for the image and the small files of the state directory); what fits
# still publishes; a file_write that does not fit fails clearly; a
# second server on the same state directory, and a restart after
# kill -9, use the disk without mounting it twice; a disk found
# unmounted (as after a reboot) is mounted again by the first server to
# start, once, when two start at once; kill -9 in the middle of
# create_sandbox and destroy_sandbox leaves state a restart can clean
# up; destroy_sandbox leaves no mount, no loop device and no image (its
# answer does not wait for the unmount: a child takes the disk down
# right after); the output of a command on a full disk costs the log
# one line; the disk is journalled ext4 without fast commits.

import os
import subprocess
import time

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,
                 err_result, main, mounts_under, ok_result,
                 our_containers, remove_our_containers, tmpdir)

MIB = 1024 * 1024
CAP = 64 * MIB
MARGIN = 2 * MIB


def du(path):
    """Bytes allocated under path on its own file system (du -x), once
    what the sandboxes' disks hold in the page cache is written down:
    a disk's image grows only as its loop device writes to it."""
    os.sync()
    out = subprocess.run(["du", "-sx", "--block-size=1", path],
                         capture_output=True, text=True).stdout
    return int(out.split()[0])


def loops_of(image):
    """Loop devices whose backing file is the image (deleted or not)."""
    real = os.path.realpath(image)
    found = []
    for name in os.listdir("/sys/block"):
        try:
            with open("/sys/block/%s/loop/backing_file" % name) as f:
                back = f.read().strip()
        except OSError:
            continue
        if back == real or back == real + " (deleted)":
            found.append(name)
    return found


def wait_for(cond, what, timeout=20, show=None):
    end = time.time() + timeout
    while not cond():
        if time.time() > end:
            check(False, "%s within %d s%s" % (
                what, timeout, ": %r" % (show(),) if show else ""))
        time.sleep(0.1)
    check(True, what)


def leftover(state):
    """What is mounted under the state directory, and the entries of
    sandboxes/ (the hidden .trash and .staging aside)."""
    sboxes = os.path.join(state, "sandboxes")
    return (mounts_under(state),
            sorted(n for n in os.listdir(sboxes) if not n.startswith(".")))


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "readme.txt"), "w") as f:
        f.write("base\n")
    config = ("workspace-root %s\nprofile disk 64M\n" % roots)

    # What a process killed at the wrong moment leaves beside the
    # sandbox directories is removed at start: an image or a record
    # without a lock, a lock without a record (and its empty directory)
    # older than a minute, a record's temporary file; a sandbox with both
    # stays, and so does a lock younger than a minute.
    state = os.path.join(tmpdir(), "state")
    sboxes = os.path.join(state, "sandboxes")
    os.makedirs(sboxes)
    old = time.time() - 120
    planted = {"sbox-00000000000a.img": "image without a lock",
               "sbox-00000000000b.lock": "lock without a record",
               "sbox-00000000000b": "its directory",
               "sbox-00000000000c.json.tmp-0123abcd": "temporary record",
               "sbox-00000000000d.lock": "lock of a record",
               "sbox-00000000000d.json": "record",
               "sbox-00000000000e.lock": "young lock",
               "sbox-00000000000f.json": "record without a lock"}
    for name in planted:
        path = os.path.join(sboxes, name)
        if name == "sbox-00000000000b":
            os.mkdir(path)
        else:
            with open(path, "w") as f:
                f.write("{}" if name.endswith(".json") else "")
        if name != "sbox-00000000000e.lock":
            os.utime(path, (old, old))
    s = Server(sets=("management",), config=config, state=state)
    s.initialize()
    kept = ["sbox-00000000000d.json", "sbox-00000000000d.lock",
            "sbox-00000000000e.lock"]
    wait_for(lambda: sorted(n for n in os.listdir(sboxes)
                            if not n.startswith(".")) == kept,
             "leftovers removed, the rest kept")
    s.kill()
    for name in kept:
        os.unlink(os.path.join(sboxes, name))

    s = Server(sets=("management", "runtime"), config=config, state=state)
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    rec = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws},
                           timeout=60), "create")
    sid = rec["id"]
    check_eq(rec["resource_profile"]["disk"], CAP, "the record's disk cap")
    image = os.path.join(sboxes, sid + ".img")
    mnt = os.path.join(sboxes, sid)
    check(os.path.isfile(image), "the image exists")
    check_eq(mounts_under(state), [mnt], "one mount: the sandbox's disk")
    check_eq(len(loops_of(image)), 1, "one loop device")
    # Journalled, and without fast commits: a publish makes its layer
    # durable with one commit of the whole journal (publish.c).
    dev = "/dev/" + loops_of(image)[0]
    feats = subprocess.run(["dumpe2fs", "-h", dev], capture_output=True,
                           text=True).stdout
    feats = [line.split(":", 1)[1].split() for line in feats.splitlines()
             if line.startswith("Filesystem features:")]
    check(feats and "has_journal" in feats[0] and
          "fast_commit" not in feats[0],
          "the disk's features: %r" % feats)

    def run(server, cmd, wsid=None, box=sid):
        args = {"sandbox_id": box, "cmd": cmd, "yield_time_ms": 60000}
        if wsid:
            args["workspace_session_id"] = wsid
        return ok_result(server.call("exec_command", args, timeout=90),
                         "exec %r" % cmd[:40])

    def session(server):
        return ok_result(server.call("create_workspace_session",
                                     {"sandbox_id": sid}),
                         "session")["workspace_session_id"]

    # 200 MiB into /workspace: the write stops at the cap, the host
    # grows by at most the cap.
    before = du(state)
    a = session(s)
    r = run(s, "dd if=/dev/zero of=/workspace/big bs=1M count=200 2>&1;"
            " echo rc=$?", a)
    check_in("No space left on device", r["output"], "dd hit the cap")
    check_in("rc=1", r["output"], "dd failed")
    grown = du(state) - before
    check(grown <= CAP + MARGIN, "the state directory grew by %d bytes,"
          " at most the cap %d + %d" % (grown, CAP, MARGIN))
    st = os.statvfs(mnt)
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    check(used >= 32 * MIB, "the write did land on the disk (%d)" % used)
    # The cap was taken from the host when the disk was made (reserved:
    # the sandbox's writes never need room the host may not have).
    check(os.stat(image).st_blocks * 512 >= CAP, "the image holds its"
          " whole cap")
    check(os.stat(image).st_blocks * 512 <= CAP + MARGIN, "the image holds"
          " at most the cap (and its own extent blocks)")
    # Transcripts live on the disk too: a command's output cannot grow
    # the host file system either.
    r = run(s, "yes 0123456789abcdef | head -c 8388608 | wc -c", a)
    check(du(state) - before <= CAP + MARGIN, "output is on the disk")

    # What fits still publishes.
    # (sync: ext4 reuses freed blocks only once their removal commits.)
    run(s, "rm -f /workspace/big; echo fits > /workspace/fits.txt; sync", a)
    ok_result(s.call("publish_workspace_session",
                     {"sandbox_id": sid, "workspace_session_id": a},
                     timeout=60), "publish what fits")
    r = ok_result(s.call("file_read", {"sandbox_id": sid,
                                       "path": "fits.txt"}), "read")
    check_in("fits", r["content"], "the published file")

    # A file_write that does not fit: another session holds the disk
    # full, unpublished.
    b = session(s)
    r = run(s, "dd if=/dev/zero of=/workspace/fill bs=1M count=200 2>&1;"
            " echo rc=$?", b)
    check_in("No space left on device", r["output"], "the disk is full")
    e = err_result(s.call("file_write", {"sandbox_id": sid,
                                         "path": "more.txt",
                                         "content": "x" * (2 * MIB)},
                          timeout=60), "operation_failed",
                   "file_write past the cap")
    check_in("No space left on device", e["message"],
             "file_write names the cause")
    print("file_write past the cap: %s" % e["message"])
    # Each write of a command's output fails on the full disk: the log
    # says so once for the command, however much it writes (the sandbox
    # chooses that, and the log is on the host's disk).
    r = run(s, "yes 0123456789abcdef | head -c 4194304; echo", b)
    cid = r["command_session_id"]
    said = [l for l in s.log().splitlines() if cid in l and
            "No space left on device" in l]
    check_eq(len(said), 1, "log lines of %s's failed output writes (%r)"
             % (cid, said[:3]))
    ok_result(s.call("destroy_workspace_session",
                     {"sandbox_id": sid, "workspace_session_id": b}),
              "discard the full session")

    # A second server on the same state directory uses the disk as it
    # is mounted.
    s2 = Server(sets=("runtime",), config=config, state=state)
    s2.initialize()
    r = run(s2, "cat /workspace/fits.txt; df -k /workspace | tail -1")
    check_in("fits", r["output"], "the second server sees the layer")
    check_eq(mounts_under(state), [mnt], "still one mount")
    check_eq(len(loops_of(image)), 1, "still one loop device")

    # kill -9 and a restart: the sandbox stays usable.
    s.kill()
    s2.kill()
    s = Server(sets=("management", "runtime"), config=config, state=state)
    s.initialize()
    r = run(s, "cat /workspace/fits.txt; echo kept > /root/kept")
    check_in("fits", r["output"], "usable after kill -9 and restart")
    check_eq(mounts_under(state), [mnt], "one mount after the restart")
    s.kill()

    # As after a reboot: the disk is not mounted. The servers are gone,
    # so are their sessions; the container stops (its root, on the
    # disk, goes with its mounts), and with the last of them the file
    # system and its loop device. The container is started again (by
    # hand: its restart policy is no) and two servers start at once: one
    # mounts the disk, once, and the root is found as it was.
    subprocess.run(["docker", "stop", "-t", "1", sid], check=True,
                   capture_output=True)
    subprocess.run(["umount", mnt], check=True)
    wait_for(lambda: not loops_of(image), "the loop device goes")
    subprocess.run(["docker", "start", sid], check=True,
                   capture_output=True)
    check_eq(mounts_under(state), [], "nothing mounted")
    s = Server(sets=("management", "runtime"), config=config, state=state)
    s2 = Server(sets=("runtime",), config=config, state=state)
    s.initialize()
    s2.initialize()
    r = run(s2, "cat /workspace/fits.txt")
    check_in("fits", r["output"], "the disk was mounted again")
    r = run(s, "cat /workspace/fits.txt /root/kept")
    check_in("fits\nkept", r["output"], "by both servers, with the root")
    check_eq(mounts_under(state), [mnt], "mounted once")
    check_eq(len(loops_of(image)), 1, "on one loop device")
    s2.kill()

    # destroy_sandbox: no mount, no loop device, no image.
    ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}, timeout=60),
              "destroy")
    check_eq(ok_result(s.call("list_sandboxes"), "list")["sandboxes"], [],
             "the sandbox is gone at once")
    wait_for(lambda: not mounts_under(state) and not os.path.exists(image)
             and not os.path.exists(mnt), "no mount, image or directory"
             " soon after destroy")
    wait_for(lambda: not loops_of(image), "no loop device after destroy")

    # kill -9 in the middle of create_sandbox, then of destroy_sandbox:
    # a restart lists what is left, destroy_sandbox removes it, and
    # nothing stays behind.
    s.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "create_sandbox",
                       "arguments": {"image": IMAGE,
                                     "workspace_root": ws}}})
    wait_for(lambda: any(n.endswith(".json") for n in os.listdir(sboxes)),
             "a record is written")
    s.kill()
    s = Server(sets=("management", "runtime"), config=config, state=state)
    s.initialize()
    left = ok_result(s.call("list_sandboxes"), "list")["sandboxes"]
    for box in left:
        ok_result(s.call("destroy_sandbox", {"sandbox_id": box["id"]},
                         timeout=60), "destroy what create left")
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws},
                           timeout=60), "create again")["id"]
    s.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
            "params": {"name": "destroy_sandbox",
                       "arguments": {"sandbox_id": sid}}})
    wait_for(lambda: _state_of(sboxes, sid) != "ready",
             "destroy_sandbox began")
    s.kill()
    s = Server(sets=("management", "runtime"), config=config, state=state)
    s.initialize()
    for box in ok_result(s.call("list_sandboxes"), "list")["sandboxes"]:
        ok_result(s.call("destroy_sandbox", {"sandbox_id": box["id"]},
                         timeout=60), "destroy what destroy left")
    check_eq(ok_result(s.call("list_sandboxes"), "list")["sandboxes"], [],
             "no sandbox left")
    wait_for(lambda: leftover(state) == ([], []),
             "no mount, image, record or directory left",
             show=lambda: leftover(state))
    wait_for(lambda: not os.listdir(os.path.join(sboxes, ".staging")),
             "no half-made image left")

    # A disk that cannot be made fails the create, which rolls back: no
    # record, no container, no image is left. (A file where the
    # images are made is a fault a real host can have.)
    staging = os.path.join(sboxes, ".staging")
    os.rmdir(staging)
    with open(staging, "w"):
        pass
    e = err_result(s.call("create_sandbox", {"image": IMAGE,
                                             "workspace_root": ws},
                          timeout=60), "internal_error",
                   "create without room for a disk")
    check_in("cannot make the disk of sandbox", e["message"],
             "the error names the disk")
    os.unlink(staging)
    os.mkdir(staging)
    check_eq(ok_result(s.call("list_sandboxes"), "list")["sandboxes"], [],
             "the create rolled back its record")
    wait_for(lambda: leftover(state) == ([], []),
             "and its disk, directory and lock", show=lambda: leftover(state))
    check_eq(our_containers(state), {}, "no container left")
    s.kill()
    for name in os.listdir("/sys/block"):
        try:
            with open("/sys/block/%s/loop/backing_file" % name) as f:
                back = f.read()
        except OSError:
            continue
        check(not back.startswith(os.path.realpath(state)),
              "a loop device is left: %s %s" % (name, back))


def _state_of(sboxes, sid):
    import json
    try:
        with open(os.path.join(sboxes, sid + ".json")) as f:
            return json.load(f).get("state")
    except (OSError, ValueError):
        return None


main(test)
