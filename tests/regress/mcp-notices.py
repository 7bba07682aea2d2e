#!/usr/bin/env python3
# notifications/message for events a caller should know, at the level set
# by logging/setLevel: a rejected publish and a command killed by its
# timeout_ms (warning), a sandbox whose container died (error). Over stdio
# they come at any time; a level above theirs silences them. Over HTTP
# they come only on an event stream of a call of the same session that is
# still running, before that call's result; the response of the call that
# caused them stays plain JSON, and GET /mcp stays 405.

import json
import os

from lib import (IMAGE, Http, Server, check, check_eq, cleanup, docker,
                 err_result, http_json, http_session, main, ok_result,
                 remove_our_containers, sse_parse, tmpdir)

TEXT = "".join("line %d\n" % i for i in range(1, 11))


def stdio_call(s, name, args):
    """Call a tool over stdio; return (result, notifications on the way)."""
    s._next_id += 1
    rid = s._next_id
    s.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": args}})
    notes = []
    while True:
        m = s.recv(60)
        if m.get("method") == "notifications/message":
            notes.append(m["params"])
        elif m.get("id") == rid:
            return m["result"], notes


def conflict(call, sid, line):
    """Two managed sessions change the same line; the second publish is
    rejected. call(name, args) -> result."""
    w = []
    for i in range(2):
        w.append(ok_result(call("create_workspace_session", {
            "sandbox_id": sid}), "session")["workspace_session_id"])
    for i, wsid in enumerate(w):
        ok_result(call("exec_command", {
            "sandbox_id": sid, "workspace_session_id": wsid,
            "yield_time_ms": 20000,
            "cmd": "sed -i 's/^line %d$/%d by %d/' notes.txt"
            % (line, line, i)}), "edit")
    ok_result(call("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": w[0]}), "publish 1")
    return w[1]


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "notes.txt"), "w") as f:
        f.write(TEXT)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nlimit sse-keepalive 1\n" % roots,
               listen="127.0.0.1:0")
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    r = s.request("logging/setLevel", {"level": "warning"})
    check_eq(r.get("result"), {}, "setLevel")
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]

    def call(name, args):
        res, notes = stdio_call(s, name, args)
        check_eq(notes, [], "no notification for %s" % name)
        return res

    # stdio: a rejected publish.
    loser = conflict(call, sid, 1)
    res, notes = stdio_call(s, "publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": loser})
    err_result(res, "operation_failed", "publish 2 rejected")
    check_eq(len(notes), 1, "one notification: %r" % notes)
    check_eq((notes[0]["level"], notes[0]["data"]["event"],
              notes[0]["data"]["sandbox_id"]),
             ("warning", "publish.rejected", sid), "the notification")
    check("source_conflict" in notes[0]["data"]["message"], "its message")

    # stdio: a command killed by its timeout.
    res, notes = stdio_call(s, "exec_command", {
        "sandbox_id": sid, "cmd": "sleep 30", "timeout_ms": 300,
        "yield_time_ms": 20000})
    check_eq([n["data"]["event"] for n in notes], ["command.timeout"],
             "timeout notification")

    # stdio: above their level, nothing.
    s.request("logging/setLevel", {"level": "error"})
    loser = conflict(call, sid, 2)
    res, notes = stdio_call(s, "publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": loser})
    err_result(res, "operation_failed", "publish rejected again")
    check_eq(notes, [], "nothing past the level")
    s.no_message(0.5)

    # HTTP: on the open stream of a running call of the same session.
    c, hdr = http_session(s.port)
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "logging/setLevel",
        "params": {"level": "info"}}, hdr)
    check_eq(st, 200, "HTTP setLevel")
    n = [10]

    def hcall(name, args):
        n[0] += 1
        st, h, b = c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": n[0], "method": "tools/call",
            "params": {"name": name, "arguments": args}}, hdr)
        check_eq(h.get("content-type"), "application/json",
                 "%s answers as JSON" % name)
        check_eq(st, 200, name)
        return http_json(b)["result"]

    loser = conflict(hcall, sid, 3)
    a = Http(s.port, timeout=60)
    body = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                       "params": {"name": "exec_command", "arguments": {
                           "sandbox_id": sid, "cmd": "sleep 4; echo end",
                           "yield_time_ms": 20000}}}).encode()
    hh = dict(hdr, **{"Host": "127.0.0.1",
                      "Content-Type": "application/json",
                      "Accept": "application/json, text/event-stream",
                      "Content-Length": str(len(body))})
    a.send_raw(("POST /mcp HTTP/1.1\r\n" + "".join(
        "%s: %s\r\n" % kv for kv in hh.items()) + "\r\n").encode() + body)
    while b"\r\n\r\n" not in a.buf:
        a._fill()
    head, a.buf = a.buf.split(b"\r\n\r\n", 1)
    rh = dict((k.strip().lower(), v.strip()) for k, v in
              (line.split(":", 1) for line in
               head.decode().split("\r\n")[1:]))
    check_eq(rh.get("content-type"), "text/event-stream", "the open stream")
    first = a.sse_body(rh, until=lambda t: "id:" in t and
                       t.endswith("\n\n"))
    res = hcall("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": loser})
    err_result(res, "operation_failed", "HTTP publish rejected")
    ev = sse_parse(first + a.sse_body(rh))
    msgs = [json.loads(e["data"]) for e in ev if e.get("data")]
    check_eq([m.get("method", m.get("id")) for m in msgs],
             ["notifications/message", 99],
             "the notification, then the result")
    check_eq((msgs[0]["params"]["level"],
              msgs[0]["params"]["data"]["event"]),
             ("warning", "publish.rejected"), "HTTP notification")
    check(all("id" in e for e in ev if e.get("data")),
          "2025-era events carry ids")
    st, h, b = c.request("GET", "/mcp", None, dict(hdr, **{
        "Accept": "text/event-stream"}))
    check_eq(st, 405, "GET stays 405")

    # stdio, at level error: a sandbox whose container dies.
    docker("rm", "-f", sid)
    m = s.recv(60)
    check_eq((m.get("method"), m["params"]["level"],
              m["params"]["data"]["event"], m["params"]["data"]["sandbox_id"]),
             ("notifications/message", "error", "sandbox.failed", sid),
             "a dead sandbox")


main(test)
