#!/usr/bin/env python3
# Disk caps the host can honour, on a small loop-mounted ext4 state
# directory (400 MiB) with profile disk 64M and limit disk-reserve 48M:
# - sandboxes are admitted while their caps and the reserve fit in what
#   is free; the next is refused (operation_failed, "no room", naming
#   disk-reserve), leaves no image, record or container, and the
#   reserve is still free;
# - one sandbox filling its disk does not stop another from writing,
#   and then the host's file system filled outside the sandboxes does
#   not either: the caps were reserved when the disks were made, and no
#   disk is turned read-only.

import os

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,
                 free_bytes, main, ok_result, our_containers,
                 remove_our_containers, small_fs, tmpdir)

MIB = 1024 * 1024


def mount_options(mnt):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == mnt:
                return fields[5].split(",") + line.split(" - ")[1].split()[2] \
                    .split(",")
    return None


def test():
    top = tmpdir()
    fs = small_fs(top)
    roots = os.path.join(top, "roots")
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "readme.txt"), "w") as f:
        f.write("base\n")
    state = os.path.join(fs, "state")
    s = Server(sets=("management", "runtime"), state=state,
               config="workspace-root %s\nprofile disk 64M\n"
               "limit disk-reserve 48M\n" % roots)
    cleanup(lambda: remove_our_containers(state))
    s.initialize()

    def run(sid, cmd):
        return ok_result(s.call("exec_command", {
            "sandbox_id": sid, "cmd": cmd, "yield_time_ms": 120000},
            timeout=150), "exec %r" % cmd[:40])

    made = []
    refused = None
    for i in range(10):
        before = free_bytes(fs)
        r = s.call("create_sandbox", {"image": IMAGE, "workspace_root": ws},
                   timeout=120)
        if r.get("isError"):
            refused = r["structuredContent"]["error"]
            break
        made.append(r["structuredContent"]["id"])
        check(before - free_bytes(fs) >= 64 * MIB, "the cap is taken from the"
              " host's room at once (%d bytes)" % (before - free_bytes(fs)))
    check(len(made) >= 2, "some sandboxes fit: %d" % len(made))
    check(refused is not None, "one past the room is refused")
    check_eq(refused["kind"], "operation_failed", "refusal kind")
    check_in("no room", refused["message"], "the refusal says why")
    check_in("disk-reserve", refused["message"], "and names the reserve")
    check(free_bytes(fs) >= 48 * MIB, "the reserve is still free: %d" % free_bytes(fs))
    sboxes = os.path.join(state, "sandboxes")
    images = sorted(n for n in os.listdir(sboxes) if n.endswith(".img"))
    check_eq(images, sorted(m + ".img" for m in made),
             "no image of the refused sandbox")
    listed = ok_result(s.call("list_sandboxes", {}), "list")["sandboxes"]
    check_eq(sorted(x["id"] for x in listed), sorted(made),
             "no record of the refused sandbox")
    check_eq(sorted(our_containers(state)), sorted(made),
             "no container of the refused sandbox")

    # One sandbox fills its disk; another writes on.
    a, b = made[0], made[1]
    out = run(a, "dd if=/dev/zero of=/workspace/fill bs=1M 2>&1;"
                 " echo rc=$?")["output"]
    check_in("No space left on device", out, "a's disk is full: %r" % out)
    out = run(b, "dd if=/dev/zero of=/workspace/one bs=1M count=16"
                 " 2>&1 && echo wrote")["output"]
    check_in("wrote", out, "b writes beside a full a: %r" % out)

    # The host's file system full, outside every sandbox.
    hostfill = os.path.join(fs, "hostfill")
    with open(hostfill, "wb") as f:
        try:
            while True:
                f.write(b"\0" * MIB)
                f.flush()
        except OSError:
            pass
    os.sync()
    check(free_bytes(fs) < MIB, "the host's file system is full: %d" % free_bytes(fs))
    out = run(b, "dd if=/dev/urandom of=/workspace/two bs=1M count=16"
                 " 2>&1 && sync && echo wrote")["output"]
    check_in("wrote", out, "b writes on a full host: %r" % out)
    for sid in made:
        opts = mount_options(os.path.join(sboxes, sid))
        check(opts is not None and "rw" in opts and "ro" not in opts,
              "%s's disk is not read-only: %r" % (sid, opts))
    out = run(b, "cat /workspace/readme.txt; ls -l /workspace/two")["output"]
    check_in("base", out, "b reads its files")
    os.unlink(hostfill)
    for sid in made:
        ok_result(s.call("destroy_sandbox", {"sandbox_id": sid},
                         timeout=60), "destroy %s" % sid)


main(test)
