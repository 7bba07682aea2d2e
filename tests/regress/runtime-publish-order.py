#!/usr/bin/env python3
# The end of an automatic session, seen from outside, in one step: while
# its last command reads running, the session's view still answers
# file_read with the session's id; once the session is not found, the
# command reads ok with its publish, and a sessionless file_read made
# after that answer sees the published file. Hammered with many short
# automatic commands, each followed at once by reads, over stdio and
# over HTTP with several clients at a time.

import json
import os
import threading

from lib import (IMAGE, Server, check, check_eq, cleanup, http_json,
                 http_session, main, ok_result, remove_our_containers,
                 tmpdir)

ROUNDS = 60


class Caller:
    """tools/call over stdio, or over HTTP on a connection of its own."""

    def __init__(self, s, port=None):
        self.s = s
        self.http = None
        if port is not None:
            self.http, self.hdr = http_session(port)
        self.n = 0

    def call(self, name, args):
        if self.http is None:
            return self.s.call(name, args, timeout=60)
        self.n += 1
        st, h, b = self.http.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": self.n, "method": "tools/call",
            "params": {"name": name, "arguments": args}}, self.hdr)
        check_eq(st, 200, "HTTP status of %s" % name)
        if h.get("content-type", "").startswith("text/event-stream"):
            data = [ln[5:].strip() for ln in b.decode().splitlines()
                    if ln.startswith("data:")]
            return json.loads(data[-1])["result"]
        return http_json(b)["result"]


def one(c, sid, tag, i, errors):
    """One automatic command writing a file, and the reads after it."""
    name = "%s-%d.txt" % (tag, i)
    body = "%s %d\n" % (tag, i)
    if i % 2 == 0:
        # Answered at the end: the publish is visible to the next read.
        r = ok_result(c.call("exec_command", {
            "sandbox_id": sid, "cmd": "echo '%s' > %s" % (body.strip(),
                                                          name),
            "yield_time_ms": 30000}), "exec")
        if r["status"] != "ok" or r["publish"] is None or \
                name not in r["publish"]["changed_paths"]:
            errors.append("%s: ended %r with publish %r" % (
                name, r["status"], r.get("publish")))
            return
    else:
        # Answered at once; then the session's view until it is gone.
        r = ok_result(c.call("exec_command", {
            "sandbox_id": sid, "cmd": "echo '%s' > %s" % (body.strip(),
                                                          name),
            "yield_time_ms": 0}), "exec")
        ws = r["workspace_session_id"]
        cid = r["command_session_id"]
        for _ in range(10000):
            f = c.call("file_read", {"sandbox_id": sid, "path": name,
                                     "workspace_session_id": ws})
            if not f["isError"]:
                continue
            err = f["structuredContent"]["error"]
            if err["details"] == {"path": name}:
                continue        # not written yet
            if err["details"] != {"workspace_session_id": ws}:
                errors.append("%s: file_read in the session: %r"
                              % (name, err))
                return
            break
        else:
            errors.append("%s: the session never ended" % name)
            return
        r = ok_result(c.call("read_command_lines", {
            "sandbox_id": sid, "command_session_id": cid}), "read")
        if r["status"] != "ok" or r.get("publish") is None:
            errors.append("%s: the session is gone while the command"
                          " reads %r with publish %r" % (
                              name, r["status"], r.get("publish")))
            return
    f = c.call("file_read", {"sandbox_id": sid, "path": name})
    if f["isError"]:
        errors.append("%s: a sessionless file_read after the answer: %r"
                      % (name, f["structuredContent"]["error"]))
    elif f["structuredContent"]["content"] != body:
        errors.append("%s: read %r" % (name,
                                       f["structuredContent"]["content"]))


def join(c, sid, tag, i, errors):
    """An automatic command, and others joining its session at once
    until the session no longer takes them: each joined command ends,
    and a refusal is a conflict while the session ends, or not_found
    once it has, with the first command's end and its file visible."""
    name = "%s-join-%d.txt" % (tag, i)
    r = ok_result(c.call("exec_command", {
        "sandbox_id": sid, "cmd": "echo j > %s" % name,
        "yield_time_ms": 0}), "exec")
    ws = r["workspace_session_id"]
    cid = r["command_session_id"]
    for _ in range(10000):
        j = c.call("exec_command", {
            "sandbox_id": sid, "cmd": "true", "workspace_session_id": ws,
            "yield_time_ms": 30000})
        if not j["isError"]:
            if j["structuredContent"]["status"] != "ok":
                errors.append("%s: a joined command ended %r" % (
                    name, j["structuredContent"]["status"]))
                return
            continue
        kind = j["structuredContent"]["error"]["kind"]
        if kind == "conflict":
            continue
        if kind != "not_found":
            errors.append("%s: join: %r" % (
                name, j["structuredContent"]["error"]))
            return
        break
    else:
        errors.append("%s: the session never ended" % name)
        return
    r = ok_result(c.call("read_command_lines", {
        "sandbox_id": sid, "command_session_id": cid}), "read")
    if r["status"] != "ok":
        errors.append("%s: the session is gone while its first command"
                      " reads %r" % (name, r["status"]))
        return
    f = c.call("file_read", {"sandbox_id": sid, "path": name})
    if f["isError"] or f["structuredContent"]["content"] != "j\n":
        errors.append("%s: a sessionless file_read after the end: %r"
                      % (name, f["structuredContent"]))


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots,
               listen="127.0.0.1:0")
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws},
                           timeout=60), "create")["id"]

    # Over stdio, one after another.
    errors = []
    c = Caller(s)
    for i in range(ROUNDS):
        one(c, sid, "stdio", i, errors)
    check_eq(errors, [], "stdio rounds")
    for i in range(ROUNDS // 2):
        join(c, sid, "stdio", i, errors)
    check_eq(errors, [], "stdio rounds joining")

    # Over HTTP, three clients at once.
    def client(k):
        cc = Caller(s, s.port)
        for i in range(ROUNDS // 2):
            one(cc, sid, "http%d" % k, i, errors)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    check_eq(errors, [], "HTTP rounds")


main(test)
