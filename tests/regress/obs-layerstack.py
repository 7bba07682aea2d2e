#!/usr/bin/env python3
# The observability set's layerstack tool, against the real Docker
# Engine, from a separate --set observability process on the same state
# directory while a runtime process does the work:
# - the layers are the manifest's, newest first, the base last; sizes come
#   from the meta files (published layers) and the sandbox's record (the
#   base): the bytes written, the workspace's bytes; totals add up;
# - a live managed session's lease shows in leased_by_workspaces,
#   booked_by and active_lease_count;
# - the trend holds the layers made in the window, the stack's size
#   growing; a window of 0 holds none;
# - with workspace_id: that session's lower layers (its lease) and the
#   bytes of its changes, walked without following a link (a link to /
#   in the session counts nothing), a file of many names once; a tree
#   deeper than 4000 levels is an error, not a count that leaves it out;
#   a flood of walks of one sandbox is refused (server_busy,
#   walks-per-sandbox) rather than queued before every sandbox's work;
# - bad arguments: an unknown session is not_found, a malformed one and a
#   window past 600000 are invalid_request; over REST another tenant's
#   key does not see the sandbox.

import json
import os

from lib import (IMAGE, Http, check, check_eq, cleanup, err_result,
                 http_json, keygen, main, ok_result, remove_our_containers,
                 Server, tmpdir)


DEBIAN = "sandbox-mcp/debian:bookworm"


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(os.path.join(ws, "d"))
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    with open(os.path.join(ws, "d", "b.bin"), "wb") as f:
        f.write(b"b" * 10000)
    state = os.path.join(top, "state")
    key, line = keygen("ta", "observability")
    # No spare sessions: their leases would count beside the session's.
    run = Server(sets=("management", "runtime"), state=state,
                 config="workspace-root %s\nlimit session-pool 0\n" % top)
    cleanup(lambda: remove_our_containers(state))
    run.initialize()
    sid = ok_result(run.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}), "create")["id"]
    for i in range(2):
        r = ok_result(run.call("exec_command", {
            "sandbox_id": sid, "cmd": "head -c 4096 /dev/zero > l%d" % i}),
            "publish %d" % i)
        check(r.get("publish"), "published: %r" % r)
    w = ok_result(run.call("create_workspace_session", {
        "sandbox_id": sid}), "session")["workspace_session_id"]
    ok_result(run.call("exec_command", {
        "sandbox_id": sid, "workspace_session_id": w,
        "cmd": "head -c 5000 /dev/zero > mine; ln -s / rootlink;"
               " mkdir -p x/y && head -c 300 /dev/zero > x/y/z"}),
        "changes in the session")

    obs = Server(sets=("observability",), state=state,
                 config="workspace-root %s\n%s\n" % (top, line),
                 listen="127.0.0.1:0")
    obs.initialize()
    with open(os.path.join(state, "sandboxes", sid, "stack",
                           "manifest.json")) as f:
        manifest = json.load(f)
    ids = [l["layer_id"] for l in manifest["layers"]]

    v = ok_result(obs.call("layerstack", {"sandbox_id": sid}), "layerstack")
    check_eq(v["view"], "layerstack", "the view")
    check_eq(v["manifest_version"], manifest["version"], "the version")
    check(v["root_hash"].startswith("sha256:"), "a root hash")
    check_eq([l["layer_id"] for l in v["layers"]], ids,
             "the manifest's layers, newest first")
    base = v["layers"][-1]
    check_eq(base["bytes"], 10002, "the base: the workspace's bytes")
    check(base["allocated_bytes"] >= 8192, "the base's blocks: %r" % base)
    for l in v["layers"][:2]:
        check_eq(l["bytes"], 4096, "a published layer's bytes")
        check(l["allocated_bytes"] >= 4096, "its blocks: %r" % l)
    check_eq(v["total_bytes"], 10002 + 2 * 4096, "the total")
    check_eq(v["total_allocated_bytes"],
             sum(l["allocated_bytes"] for l in v["layers"]),
             "the allocated total")
    check(v["storage_logical_bytes"] >= v["total_bytes"],
          "every layer on disk: %r" % v)
    check_eq(v["staging_entry_count"], 0, "nothing being built")
    check_eq(v["active_lease_count"], 1, "the managed session's lease")
    for l in v["layers"]:
        check_eq((l["leased_by_workspaces"], l["booked_by"]), (1, [w]),
                 "layer %s leased by the session" % l["layer_id"])
    check_eq([t["layer_id"] for t in v["trend"]], list(reversed(ids[:2])),
             "the trend: the layers made in the window, oldest first")
    sizes = [t["total_bytes"] for t in v["trend"]]
    check_eq(sizes, [10002 + 4096, 10002 + 2 * 4096], "the stack growing")
    none = ok_result(obs.call("layerstack", {"sandbox_id": sid,
                                             "window_ms": 0}), "window 0")
    check_eq(none["trend"], [], "no layer in an empty window")

    # One session's view.
    wv = ok_result(obs.call("layerstack", {"sandbox_id": sid,
                                           "workspace_id": w}), "workspace")
    check_eq(sorted(wv), ["manifest_version", "mounts", "upper_bytes",
                          "view", "workspace"], "the workspace view")
    check_eq((wv["workspace"], wv["mounts"]), (w, ids), "its lower layers")
    check_eq(wv["upper_bytes"], 5300, "its changes, no link followed")

    # A file of many names counts once; a tree too deep to walk with a
    # descriptor a level is an error, not a count that leaves it out.
    w2 = ok_result(run.call("create_workspace_session", {
        "sandbox_id": sid}), "a second session")["workspace_session_id"]
    ok_result(run.call("exec_command", {
        "sandbox_id": sid, "workspace_session_id": w2,
        "cmd": "head -c 1000 /dev/zero > one; i=0; while [ $i -lt 300 ];"
               " do ln one l$i; i=$((i+1)); done"}, timeout=120),
        "hard links")
    wv2 = ok_result(obs.call("layerstack", {"sandbox_id": sid,
                                            "workspace_id": w2}), "links")
    check_eq(wv2["upper_bytes"], 1000, "a file of 301 names, once")
    # (perl's chdir goes one level at a time, past PATH_MAX.)
    deb = ok_result(run.call("create_sandbox", {
        "image": DEBIAN, "workspace_root": ws}, timeout=120),
        "a debian sandbox")["id"]
    w3 = ok_result(run.call("create_workspace_session", {
        "sandbox_id": deb}), "its session")["workspace_session_id"]
    r = ok_result(run.call("exec_command", {
        "sandbox_id": deb, "workspace_session_id": w3, "timeout_ms": 120000,
        "cmd": "perl -e 'for (1..4100) { mkdir q(z) or die qq(mkdir $_ $!);"
               " chdir q(z) or die qq(chdir $_ $!) } open(F, q(>deep)) or"
               " die qq(open $!); print F q(x) x 5000'"
               " && echo built"}, timeout=150), "a deep tree")
    check_eq(r["output"], "built\n", "the deep tree is built")
    e = err_result(obs.call("layerstack", {"sandbox_id": deb,
                                           "workspace_id": w3}),
                   "operation_failed", "a tree too deep")
    check("deeper than 4000 levels" in e["message"], "why: %r" % e)

    # One walk of a sandbox's sessions at a time: a flood of them is
    # refused, not queued where every sandbox's publishes wait.
    ids = []
    for i in range(30):
        rid = 8000 + i
        obs.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                  "params": {"name": "layerstack", "arguments": {
                      "sandbox_id": sid, "workspace_id": w}}})
        ids.append(rid)
    busy = done = 0
    for rid in ids:
        res = obs.wait(rid, timeout=60)["result"]
        if res["isError"]:
            err = res["structuredContent"]["error"]
            check_eq((err["kind"], err["details"].get("limit")),
                     ("server_busy", "walks-per-sandbox"), "a refusal")
            busy += 1
        else:
            check_eq(res["structuredContent"]["upper_bytes"], 5300,
                     "a walk's answer")
            done += 1
    check(busy > 0 and done > 0, "walked %d, refused %d" % (done, busy))

    # Bad arguments.
    err_result(obs.call("layerstack", {"sandbox_id": sid,
                                       "workspace_id": "ws-000000000000"}),
               "not_found", "an unknown session")
    err_result(obs.call("layerstack", {"sandbox_id": sid,
                                       "workspace_id": "../../etc"}),
               "invalid_request", "a malformed session id")
    err_result(obs.call("layerstack", {"sandbox_id": sid,
                                       "window_ms": 600001}),
               "invalid_request", "a window past 600000")
    err_result(obs.call("layerstack", {"sandbox_id": "sbox-000000000000"}),
               "not_found", "an unknown sandbox")

    # Over REST, tenant ta's key does not see a sandbox made over stdio.
    st, h, body = Http(obs.port).request(
        "GET", "/v1/sandboxes/%s/layerstack?workspace_id=%s" % (sid, w),
        None, {"Authorization": "Bearer " + key})
    check_eq((st, http_json(body)["error"]["kind"]), (404, "not_found"),
             "another tenant's sandbox over REST")

    # The session gone: its lease no longer counts.
    ok_result(run.call("destroy_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": w}), "destroy")
    v = ok_result(obs.call("layerstack", {"sandbox_id": sid}), "after")
    check_eq(v["active_lease_count"], 1, "the second session's lease")
    check(all(l["booked_by"] == [w2] for l in v["layers"]),
          "only the second session leases them")


main(test)
