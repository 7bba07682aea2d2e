#!/usr/bin/env python3
# Sandbox lifecycle against the real Docker Engine: create one and a
# batch of three (one shared base, its root hash as specified), the
# containers exactly as configured, records seen at once by a second
# process on the same state directory, destroy removing container, state
# and record, and a second destroy answered not_found.

import json
import os
import re
import stat

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, docker,
                 err_result, main, ok_result, our_containers,
                 remove_our_containers, root_hash, tmpdir)

PROFILE = "profile cpus 0.5 memory-high 64M memory-max 96M pids 77\n"


def make_workspace(top):
    os.makedirs(os.path.join(top, "src", "deep"))
    os.makedirs(os.path.join(top, "empty"))
    os.makedirs(os.path.join(top, ".git", "refs"))
    with open(os.path.join(top, "src", "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    with open(os.path.join(top, "run.sh"), "w") as f:
        f.write("#!/bin/sh\necho run\n")
    os.chmod(os.path.join(top, "run.sh"), 0o750)
    with open(os.path.join(top, ".git", "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    with open(os.path.join(top, "src", "deep", "blob.bin"), "wb") as f:
        f.write(bytes(range(256)) * 300)
    os.symlink("src/main.c", os.path.join(top, "main-link"))
    os.symlink("/etc/passwd", os.path.join(top, "abs-link"))


def tree(top):
    """Everything that the copy must keep: kinds, modes, bytes, links."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, top)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(full))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", stat.S_IMODE(st.st_mode))
            else:
                with open(full, "rb") as f:
                    out[rel] = ("f", stat.S_IMODE(st.st_mode), f.read(),
                                int(st.st_mtime))
    return out


def test():
    base = tmpdir()
    roots = os.path.join(base, "roots")
    ws = os.path.join(roots, "project")
    make_workspace(ws)
    ws2 = os.path.join(roots, "twin")
    make_workspace(ws2)
    conf = "workspace-root %s\n%s" % (roots, PROFILE)
    s = Server(config=conf)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()

    # One sandbox.
    rec = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws + "/"}), "create one")
    sid = rec["id"]
    check(re.fullmatch(r"sbox-[0-9a-f]{12}", sid), "id format %r" % sid)
    check_eq(rec["sandbox_id"], sid, "the id under the arguments' name")
    check_eq(rec["state"], "ready", "state")
    check_eq(rec["workspace_root"], ws, "canonical workspace root")
    check_eq(rec["image"], IMAGE, "image")
    check_eq((rec["daemon"], rec["daemon_http"]), (None, None),
             "no endpoints without --listen")
    want_hash = root_hash(ws)
    sb = rec["shared_base"]
    check_eq(sb["root_hash"], want_hash, "root hash as specified")
    check_eq((sb["target"], sb["readonly"]), ("/workspace", True),
             "shared base target")
    check(sb["source"].startswith(os.path.join(state, "base-cache") + "/"),
          "base under the state directory: %r" % sb["source"])
    check_eq(tree(sb["source"]), tree(ws), "the base is an exact copy")
    check_eq(rec["resource_profile"], {"cpus": 0.5,
                                       "memory_high": 64 << 20,
                                       "memory_max": 96 << 20,
                                       "pids": 77,
                                       # the suite's disks (lib.py)
                                       "disk": 1 << 30}, "resource profile")
    check(isinstance(rec["created_at_ms"], int) and
          rec["created_at_ms"] > 1.7e12, "created_at_ms")

    # The container, exactly as configured.
    info = json.loads(docker("inspect", sid))[0]
    check_eq(info["State"]["Status"], "running", "container running")
    check_eq(info["Name"], "/" + sid, "container named by the id")
    check_eq(info["Id"], rec["container_id"], "container id recorded")
    labels = info["Config"]["Labels"]
    check_eq((labels["io.sandbox-mcp.sandbox-id"],
              labels["io.sandbox-mcp.workspace-root"],
              labels["io.sandbox-mcp.root-hash"],
              labels["io.sandbox-mcp.state-dir"]),
             (sid, ws, want_hash, state), "labels")
    hc = info["HostConfig"]
    check_eq((hc["NanoCpus"], hc["Memory"], hc["MemoryReservation"],
              hc["PidsLimit"]), (500000000, 96 << 20, 64 << 20, 77),
             "resources")
    check_eq(hc["Init"], True, "Init")
    check_eq(hc["Privileged"], False, "not privileged")
    check(not hc.get("CapAdd"), "no added capabilities: %r"
          % hc.get("CapAdd"))
    check_in("no-new-privileges", hc["SecurityOpt"] or [], "SecurityOpt")
    check(not hc.get("PortBindings") and not hc.get("PublishAllPorts"),
          "no published ports")
    check(not info.get("Mounts"), "nothing bind-mounted from the host")

    # A batch of three over an identical workspace: one shared base.
    r = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws2, "count": 3}), "batch")
    batch = r["sandboxes"]
    check_eq(len(batch), 3, "three records")
    check_eq(len({b["id"] for b in batch} | {sid}), 4, "distinct ids")
    check_eq({b["shared_base"]["root_hash"] for b in batch}, {want_hash},
             "identical workspaces share the hash")
    check_eq({b["shared_base"]["source"] for b in batch}, {sb["source"]},
             "and the cache entry")
    entries = [e for e in os.listdir(os.path.join(state, "base-cache"))
               if not e.startswith(".")]
    check_eq(len(entries), 1, "one base-cache entry: %r" % entries)
    check_eq(os.listdir(os.path.join(state, "base-cache", ".staging")), [],
             "no staging left")
    running = our_containers(state)
    check_eq(sorted(running), sorted([sid] + [b["id"] for b in batch]),
             "four containers")
    check(all(v == "running" for v in running.values()), "all running")

    # A second process on the same state directory sees them at once.
    other = Server(config=conf, state=state)
    other.initialize()
    listed = ok_result(other.call("list_sandboxes"), "list")["sandboxes"]
    # Oldest first; the members of one batch may share a millisecond,
    # and then their ids order them.
    made = [rec] + batch
    want = [x["id"] for x in sorted(made, key=lambda x: (
        x["created_at_ms"], x["id"]))]
    check_eq(want[0], sid, "the first sandbox is the oldest")
    check_eq([x["id"] for x in listed], want,
             "listed oldest first by another process")
    check_eq(listed[0], rec, "the same record")
    got = ok_result(other.call("inspect_sandbox", {"sandbox_id": sid}),
                    "inspect")
    check_eq(got, rec, "inspect from another process")

    # Destroy (from the second process): container, state, record gone.
    gone = ok_result(other.call("destroy_sandbox", {"sandbox_id": sid}),
                     "destroy")
    check_eq(gone["state"], "stopped", "destroy answers stopped")
    check_eq(gone["id"], sid, "the destroyed record")
    check(sid not in our_containers(state), "container removed")
    check(not os.path.exists(os.path.join(state, "sandboxes", sid)),
          "state removed")
    e = err_result(s.call("inspect_sandbox", {"sandbox_id": sid}),
                   "not_found", "inspect after destroy")
    check_eq(e["details"], {"sandbox_id": sid}, "details")
    e = err_result(s.call("destroy_sandbox", {"sandbox_id": sid}),
                   "not_found", "destroy twice")
    listed = ok_result(s.call("list_sandboxes"), "list")["sandboxes"]
    check_eq([x["id"] for x in listed], [x for x in want if x != sid],
             "list after destroy (oldest first, as above)")
    for b in batch:
        ok_result(s.call("destroy_sandbox", {"sandbox_id": b["id"]}),
                  "destroy " + b["id"])
    check_eq(our_containers(state), {}, "no container left")
    check_eq(ok_result(s.call("list_sandboxes"), "list")["sandboxes"], [],
             "no record left")
    # The base stays for the next create; reusing it copies nothing.
    r = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}), "create again")
    check_eq(r["shared_base"]["source"], sb["source"], "reused base")
    ok_result(s.call("destroy_sandbox", {"sandbox_id": r["id"]}), "destroy")


main(test)
