#!/usr/bin/env python3
# The file tools against a real sandbox: round trips in and out of
# sessions, the read window, edits and their refusals, every path
# refusal, symlinks planted by commands (nothing outside the workspace
# read or written), binary and non-UTF-8 files, the size limits, files
# large enough to be handled by a child process, sessionless writes seen
# by sessions started after them only, eight concurrent sessionless
# writers, a sessionless edit racing a session's publish (merge and
# conflict), and blame with three owners, before and after a restart.

import hashlib
import json
import os

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, docker,
                 err_result, main, ok_result, remove_our_containers, tmpdir)

TEXT = "".join("line %d\n" % i for i in range(1, 11))


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(os.path.join(ws, "src"))
    with open(os.path.join(ws, "src", "a.txt"), "w") as f:
        f.write(TEXT)
    with open(os.path.join(ws, "crlf.txt"), "wb") as f:
        f.write(b"one\r\ntwo\r\nthree\r\n")
    with open(os.path.join(ws, "bin.dat"), "wb") as f:
        f.write(b"ab\x00cd\n")
    with open(os.path.join(ws, "latin1.txt"), "wb") as f:
        f.write(b"caf\xe9\n")
    with open(os.path.join(ws, "long.txt"), "w") as f:
        f.write("x" * (300 * 1024))
    conf = "workspace-root %s\n" % roots
    s = Server(sets=("management", "runtime"), config=conf)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]
    container = ok_result(s.call("inspect_sandbox", {"sandbox_id": sid}),
                          "inspect")["container_id"]
    manifest = os.path.join(state, "sandboxes", sid, "stack",
                            "manifest.json")

    def version():
        with open(manifest) as f:
            return json.load(f)["version"]

    def call(name, **args):
        args["sandbox_id"] = sid
        return s.call(name, args, timeout=60)

    def ok(name, what, **args):
        return ok_result(call(name, **args), what)

    def refused(name, kind, what, needle, **args):
        e = err_result(call(name, **args), kind, what)
        check_in(needle, e["message"], what)
        return e

    def session():
        return ok("create_workspace_session", "session")[
            "workspace_session_id"]

    def run(cmd, wsid=None):
        args = {"cmd": cmd, "yield_time_ms": 20000}
        if wsid:
            args["workspace_session_id"] = wsid
        r = ok("exec_command", cmd[:40], **args)
        check_eq(r["status"], "ok", "%s: status (%r)" % (cmd[:40], r))
        return r

    # Reads of the snapshot: whole file, absolute path, windows.
    r = ok("file_read", "read", path="src/a.txt")
    check_eq((r["path"], r["content"], r["start_line"], r["num_lines"],
              r["total_lines"], r["bytes_read"], r["total_bytes"],
              r["next_offset"], r["truncated"]),
             ("src/a.txt", TEXT, 1, 10, 10, len(TEXT), len(TEXT), None,
              False), "whole file")
    r = ok("file_read", "absolute", path="/workspace//src/./a.txt",
           offset=3, limit=2)
    check_eq((r["path"], r["content"], r["next_offset"], r["truncated"]),
             ("src/a.txt", "line 3\nline 4\n", 5, True), "window")
    r = ok("file_read", "offset 0", path="src/a.txt", offset=0, limit=1)
    check_eq((r["start_line"], r["content"]), (1, "line 1\n"), "offset 0")
    r = ok("file_read", "past end", path="src/a.txt", offset=11)
    check_eq((r["content"], r["num_lines"], r["next_offset"],
              r["truncated"]), ("", 0, None, False), "offset past the end")
    r = ok("file_read", "crlf", path="crlf.txt", offset=2, limit=1)
    check_eq(r["content"], "two\r\n", "line ends kept")

    # Bad input: limits, paths, kinds of file.
    for lim in (0, 2001):
        e = refused("file_read", "invalid_request", "limit %d" % lim,
                    "limit must be between 1 and 2000", path="src/a.txt",
                    limit=lim)
        check_eq(e["details"], {"argument": "limit"}, "limit details")
    for p, needle in (("", "must be non-empty"),
                      ("a\u0000b", "NUL"),
                      ("../etc/passwd", "invalid path: ../etc/passwd"),
                      ("src/../../x", "a .. component"),
                      ("/etc/passwd", "must be under /workspace"),
                      ("/workspacex/a", "must be under /workspace")):
        for tool, extra in (("file_read", {}),
                            ("file_write", {"content": "x"}),
                            ("file_edit", {"edits": [
                                {"old_string": "a", "new_string": "b"}]}),
                            ("file_blame", {})):
            e = refused(tool, "invalid_request", "%s %r" % (tool, p),
                        needle, path=p, **extra)
            check_eq(e["details"], {"argument": "path"}, "path details")
    refused("file_read", "invalid_request", "directory", "src is a directory",
            path="src")
    refused("file_read", "invalid_request", "root", "is a directory",
            path="/workspace")
    e = refused("file_read", "not_found", "missing", "no file nope.txt",
                path="nope.txt")
    check_eq(e["details"], {"path": "nope.txt"}, "not_found details")
    refused("file_read", "not_found", "missing parent", "no file",
            path="nodir/x")
    refused("file_read", "invalid_request", "file as parent",
            "src/a.txt is not a directory", path="src/a.txt/x")
    refused("file_read", "invalid_request", "binary",
            "bin.dat is not UTF-8 text", path="bin.dat")
    refused("file_read", "invalid_request", "latin-1",
            "latin1.txt is not UTF-8 text", path="latin1.txt")
    refused("file_edit", "invalid_request", "edit binary",
            "not UTF-8 text", path="bin.dat",
            edits=[{"old_string": "ab", "new_string": "x"}])
    refused("file_read", "invalid_request", "300 KiB line",
            "line 1 of long.txt is longer than the 256 KiB", path="long.txt")
    refused("file_write", "invalid_request", "write over a directory",
            "src is a directory", path="src", content="x")
    refused("file_write", "invalid_request", ".wh. name",
            "reserves", path="d/.wh.x", content="x")

    # Edits: refusals leave the file and the stack as they were.
    v0 = version()
    for edits, needle in (
            ([], "edits must be a non-empty array"),
            ([{"old_string": "line 1\n", "new_string": "L1\n"}, "bad",
              {"old_string": "line 3", "new_string": "L3"}],
             "edit 2 is not an object"),
            ([{"old_string": "line 1\n", "new_string": "L1\n"},
              {"old_string": 3, "new_string": "x"}],
             "edit 2: old_string must be a string"),
            ([{"old_string": "line 1\n", "new_string": "L1\n"},
              {"old_string": "nowhere", "new_string": "x"}],
             "edit 2: text not found in src/a.txt"),
            ([{"old_string": "line", "new_string": "x"}],
             "edit 1: text found 10 times in src/a.txt; set replace_all"
             " or add context"),
            ([{"old_string": "line 2", "new_string": "line 2"}],
             "old_string and new_string are the same"),
            ([{"old_string": "", "new_string": "x"}],
             "old_string is empty"),
            ([{"old_string": "line 2", "new_string": "X"},
              {"old_string": "X", "new_string": "line 2"}],
             "edits made no change to src/a.txt")):
        refused("file_edit", "invalid_request", needle, needle,
                path="src/a.txt", edits=edits)
    refused("file_edit", "not_found", "edit missing", "no file",
            path="nope.txt", edits=[{"old_string": "a", "new_string": "b"}])
    check_eq(version(), v0, "no layer from refused edits")
    check_eq(ok("file_read", "after", path="src/a.txt")["content"], TEXT,
             "file untouched by refused edits")

    # Sessionless write and edit: one layer each, owner and layer id.
    r = ok("file_write", "write", path="new/dir/n.txt", content="n1\nn2\n")
    check_eq((r["type"], r["path"], r["bytes_written"]),
             ("create", "new/dir/n.txt", 6), "sessionless create")
    check(r["owner"].startswith("operation:"), "owner %r" % r["owner"])
    check(r["layer_id"].startswith("L"), "layer id %r" % r["layer_id"])
    check_eq(version(), v0 + 1, "one layer")
    r2 = ok("file_write", "update", path="new/dir/n.txt", content="")
    check_eq((r2["type"], r2["bytes_written"]), ("update", 0), "update")
    check(r2["owner"] != r["owner"], "an owner per call")
    check_eq(ok("file_read", "empty", path="new/dir/n.txt")["total_lines"],
             0, "emptied")
    out = docker("exec", container, "ls", "/workspace")
    check("new" not in out, "the container's own /workspace is not the "
          "published stack")
    r = ok("file_edit", "crlf edit", path="crlf.txt",
           edits=[{"old_string": "one\ntwo\n", "new_string": "1\n2\n"}])
    check_eq((r["type"], r["edits_applied"], r["replacements"],
              r["bytes_written"]), ("edit", 1, 1, 13), "crlf edit")
    check_eq(ok("file_read", "crlf", path="crlf.txt")["content"],
             "1\r\n2\r\nthree\r\n", "CRLF retry")

    # A session: its own view, round trips, published later.
    before = session()
    ok("file_write", "sessionless", path="seen.txt", content="published\n")
    after = session()
    refused("file_read", "not_found", "started before", "no file",
            path="seen.txt", workspace_session_id=before)
    check_eq(ok("file_read", "started after", path="seen.txt",
                workspace_session_id=after)["content"], "published\n",
             "a session started afterwards sees the write")
    r = ok("file_write", "session write", path="p/q/s.txt",
           content="s1\ns2\n", workspace_session_id=after)
    check_eq((r["type"], r["bytes_written"]), ("create", 6), "session write")
    check("owner" not in r and "layer_id" not in r, "nothing published yet")
    r = ok("file_edit", "session edit", path="p/q/s.txt",
           edits=[{"old_string": "s2", "new_string": "S2"}],
           workspace_session_id=after)
    check_eq(r["replacements"], 1, "session edit")
    check_eq(ok("file_read", "session read", path="p/q/s.txt",
                workspace_session_id=after)["content"], "s1\nS2\n",
             "session round trip")
    out = run("cat p/q/s.txt; stat -c %a p p/q p/q/s.txt", after)["output"]
    check_eq(out, "s1\nS2\n755\n755\n644\n", "commands see the write")
    run("chmod 600 p/q/s.txt", after)
    ok("file_write", "keep mode", path="p/q/s.txt", content="s3\n",
       workspace_session_id=after)
    check_eq(run("stat -c %a p/q/s.txt", after)["output"], "600\n",
             "an existing mode is kept")
    refused("file_read", "not_found", "unpublished", "no file",
            path="p/q/s.txt")
    r = ok("publish_workspace_session", "publish",
           workspace_session_id=after)
    check_in("p/q/s.txt", r["publish"]["changed_paths"], "published")
    check_eq(ok("file_read", "published", path="p/q/s.txt")["content"],
             "s3\n", "visible after the publish")
    ok("destroy_workspace_session", "destroy", workspace_session_id=before)
    refused("file_read", "not_found", "ended session", "no workspace session",
            path="src/a.txt", workspace_session_id=after)

    # Symlinks planted by commands, in a session and once published.
    w = session()
    run("ln -s /etc x && ln -s / root && ln -s src/a.txt alias", w)
    for p, needle in (("x/passwd", "x is a symlink (in x/passwd)"),
                      ("alias", "alias is a symlink"),
                      ("root/tmp/pwn", "root is a symlink")):
        refused("file_read", "invalid_request", "session " + p, needle,
                path=p, workspace_session_id=w)
    refused("file_write", "invalid_request", "write through a symlink",
            "root is a symlink", path="root/tmp/pwn", content="pwned",
            workspace_session_id=w)
    refused("file_write", "invalid_request", "write over a symlink",
            "alias is a symlink", path="alias", content="pwned",
            workspace_session_id=w)
    refused("file_edit", "invalid_request", "edit through a symlink",
            "x is a symlink", path="x/passwd", workspace_session_id=w,
            edits=[{"old_string": "root", "new_string": "pwned"}])
    ok("publish_workspace_session", "publish links", workspace_session_id=w)
    for p, needle in (("x/passwd", "x is a symlink"),
                      ("alias", "alias is a symlink")):
        refused("file_read", "invalid_request", "snapshot " + p, needle,
                path=p)
    refused("file_write", "invalid_request", "sessionless through a link",
            "root is a symlink", path="root/tmp/pwn", content="pwned")
    refused("file_edit", "invalid_request", "sessionless edit via a link",
            "x is a symlink", path="x/passwd",
            edits=[{"old_string": "root", "new_string": "pwned"}])
    check(not os.path.exists("/tmp/pwn"), "nothing written on the host")
    out = docker("exec", container, "sh", "-c",
                 "test -e /tmp/pwn && echo present; grep -c pwned"
                 " /etc/passwd", check_rc=False)
    check_eq(out, "0", "nothing written in the container")
    check_eq(run("cat src/a.txt")["output"], TEXT, "the link's target kept")

    # Files too big for the server: a 5 MiB edit is refused; 2 MiB reads
    # and writes go through a child process.
    run("head -c 5242880 /dev/zero | tr '\\0' a > big5 && "
        "i=0; while [ $i -lt 40000 ]; do echo \"row $i\"; i=$((i+1)); "
        "done > rows && seq 1 200000 > seq.txt")
    refused("file_edit", "invalid_request", "5 MiB edit",
            "file_edit takes files of at most 4 MiB", path="big5",
            edits=[{"old_string": "a", "new_string": "b"}])
    r = ok("file_read", "big read", path="seq.txt", offset=150000, limit=3)
    check_eq((r["content"], r["total_lines"], r["total_bytes"],
              r["next_offset"]), ("150000\n150001\n150002\n", 200000,
                                  1288895, 150003), "2 MiB read")
    r = ok("file_read", "window cut", path="seq.txt", offset=1, limit=2000)
    check_eq((r["num_lines"], r["truncated"]), (2000, True), "2000 lines")
    big = "".join("%07d\n" % i for i in range(300000))
    w = session()
    r = ok("file_write", "2.4 MiB write", path="gen/big.txt", content=big,
           workspace_session_id=w)
    check_eq((r["type"], r["bytes_written"]), ("create", len(big)),
             "big session write")
    r = ok("file_edit", "big edit", path="gen/big.txt",
           edits=[{"old_string": "0150000\n", "new_string": "middle\n"}],
           workspace_session_id=w)
    check_eq(r["bytes_written"], len(big) - 1, "big session edit")
    r = ok("file_read", "big session read", path="gen/big.txt",
           offset=150001, limit=1, workspace_session_id=w)
    check_eq(r["content"], "middle\n", "big edit landed")
    ok("destroy_workspace_session", "destroy big", workspace_session_id=w)

    # Eight sessionless writers at once: eight layers, the last wins.
    v1 = version()
    ids = {}
    for i in range(8):
        s._next_id += 1
        ids[s._next_id] = "writer %d\n" % i
        s.send({"jsonrpc": "2.0", "id": s._next_id, "method": "tools/call",
                "params": {"name": "file_write", "arguments": {
                    "sandbox_id": sid, "path": "race.txt",
                    "content": ids[s._next_id]}}})
    layers = {}
    for rid, content in ids.items():
        r = ok_result(s.wait(rid, 60)["result"], "writer")
        layers[r["layer_id"]] = content
    check_eq(len(layers), 8, "eight distinct layers")
    check_eq(version(), v1 + 8, "eight publishes")
    with open(manifest) as f:
        top = json.load(f)["layers"][0]["layer_id"]
    check_eq(ok("file_read", "race", path="race.txt")["content"],
             layers[top], "the last writer's content")
    types = set()
    for lid in layers:
        with open(os.path.join(state, "sandboxes", sid, "stack", "layers",
                               lid + ".meta.json")) as f:
            types.add(json.load(f)["changed_paths"])
    check_eq(types, {1}, "one-file layers")

    # A sessionless edit racing a session's publish on the same file.
    with_base = session()
    ok("file_edit", "session line 1", path="src/a.txt",
       edits=[{"old_string": "line 1\n", "new_string": "session 1\n"}],
       workspace_session_id=with_base)
    ok("file_edit", "sessionless line 10", path="src/a.txt",
       edits=[{"old_string": "line 10\n", "new_string": "op 10\n"}])
    ok("publish_workspace_session", "merged publish",
       workspace_session_id=with_base)
    merged = TEXT.replace("line 1\n", "session 1\n").replace(
        "line 10\n", "op 10\n")
    check_eq(ok("file_read", "merged", path="src/a.txt")["content"], merged,
             "separate regions merge")
    clash = session()
    ok("file_edit", "session line 5", path="src/a.txt",
       edits=[{"old_string": "line 5\n", "new_string": "session 5\n"}],
       workspace_session_id=clash)
    ok("file_edit", "sessionless line 5", path="src/a.txt",
       edits=[{"old_string": "line 5\n", "new_string": "op 5\n"}])
    e = err_result(call("publish_workspace_session",
                        workspace_session_id=clash), "operation_failed",
                   "conflicting publish")
    check_eq(e["details"]["publish_reject_class"], "source_conflict",
             "same line conflicts")
    ok("destroy_workspace_session", "drop", workspace_session_id=clash)

    # Blame: A writes, B edits line 2, a session changes line 3.
    a = ok("file_write", "A", path="blame.txt",
           content="one\ntwo\nthree\nfour\nfive\n")["owner"]
    b = ok("file_edit", "B", path="blame.txt",
           edits=[{"old_string": "two\n", "new_string": "TWO\n"}])["owner"]
    w = session()
    ok("file_edit", "C", path="blame.txt", workspace_session_id=w,
       edits=[{"old_string": "three\n", "new_string": "THREE\n"}])
    ok("publish_workspace_session", "publish C", workspace_session_id=w)
    want = [{"start_line": 1, "line_count": 1, "owner": a},
            {"start_line": 2, "line_count": 1, "owner": b},
            {"start_line": 3, "line_count": 1,
             "owner": "workspace_session:" + w},
            {"start_line": 4, "line_count": 2, "owner": a}]
    r = ok("file_blame", "blame", path="blame.txt")
    check_eq(r, {"path": "blame.txt", "ranges": want}, "three owners")
    r = ok("file_blame", "blame base", path="/workspace/src/a.txt")
    check_eq([x["owner"] for x in r["ranges"]][:1], ["workspace_session:" +
                                                     with_base],
             "a base file changed by a session")
    check_eq(r["ranges"][1]["owner"], "original", "untouched base lines")
    check_eq(r["ranges"][-1]["owner"][:10], "operation:", "line 10")
    refused("file_blame", "not_found", "base only", "no audit record",
            path="latin1.txt")
    refused("file_blame", "not_found", "never", "no audit record",
            path="never.txt")
    ok("file_write", "empty", path="empty.txt", content="")
    check_eq(ok("file_blame", "empty", path="empty.txt")["ranges"], [],
             "an empty file has no ranges")
    run("rm blame.txt")
    check_eq(ok("file_blame", "deleted", path="blame.txt")["ranges"], want,
             "a deleted path keeps its last record")

    # After a restart: the same answers.
    s.close_stdin()
    s.wait_exit(30)
    s = Server(sets=("management", "runtime"), config=conf, state=state)
    s.initialize()
    check_eq(ok("file_blame", "blame again", path="blame.txt")["ranges"],
             want, "blame survives a restart")
    check_eq(ok("file_read", "read again", path="race.txt")["content"],
             layers[top], "content survives a restart")

    # A record torn by a crash mid-append is skipped, and the next
    # record starts on a line of its own.
    audit = os.path.join(state, "sandboxes", sid, "audit", hashlib.sha256(
        b"blame.txt").hexdigest() + ".ndjson")
    with open(audit, "a") as f:
        f.write('{"path":"blame.txt","ranges":[{"start_line":1,"line_c')
    check_eq(ok("file_blame", "torn", path="blame.txt")["ranges"], want,
             "a torn record is skipped")
    d = ok("file_write", "after torn", path="blame.txt", content="d\n")
    check_eq(ok("file_blame", "after torn", path="blame.txt")["ranges"],
             [{"start_line": 1, "line_count": 1, "owner": d["owner"]}],
             "a record after a torn one")
    with open(audit) as f:
        lines = f.read().split("\n")
    check_eq((len(lines), lines[-1]), (6, ""), "records stay one a line")
    check_eq(json.loads(lines[-2])["owner"], d["owner"], "the last record")


main(test)
