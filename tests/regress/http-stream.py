#!/usr/bin/env python3
# Long calls over HTTP: a call that has not answered within a second
# becomes an SSE stream (200, text/event-stream, comment keep-alives every
# sse-keepalive seconds, then the result as an event); a fast call stays
# plain JSON, and so does a slow one whose client does not accept
# event streams. In a 2025-era session the events carry ids and a client
# that lost the stream gets the rest, the result included, with GET /mcp
# and Last-Event-ID, once; another session or key cannot, and GET without
# Last-Event-ID stays 405.

import json
import os
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 http_json, http_session, main, ok_result,
                 remove_our_containers, sse_parse, tmpdir)


def call(rid, cmd, yield_ms):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {
                "sandbox_id": SID[0], "cmd": cmd,
                "yield_time_ms": yield_ms}}}


SID = [None]


def post_head(c, body, hdr):
    """Send a POST and read only the response head."""
    data = json.dumps(body).encode()
    h = {"Host": "127.0.0.1", "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream",
         "Content-Length": str(len(data))}
    h.update(hdr)
    c.send_raw(("POST /mcp HTTP/1.1\r\n" + "".join(
        "%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode() + data)
    while b"\r\n\r\n" not in c.buf:
        c._fill()
    head, c.buf = c.buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    return int(lines[0].split(" ")[1]), headers


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "w")
    os.makedirs(ws)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nlimit sse-keepalive 1\n" % roots,
               listen="127.0.0.1:0", stdio=False)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    c, hdr = http_session(s.port)
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, hdr)
    SID[0] = ok_result(http_json(b)["result"], "create")["id"]

    # A fast call: plain JSON.
    st, h, b = c.request("POST", "/mcp", call(3, "echo fast", 5000), hdr)
    check_eq((st, h.get("content-type")), (200, "application/json"),
             "a fast call stays JSON")
    check_in("fast", str(http_json(b)), "fast call output")

    # A slow call: an event stream with keep-alives, then the result.
    t0 = time.time()
    st, h, b = c.request("POST", "/mcp", call(4, "sleep 4; echo slow",
                                              20000), hdr)
    check_eq((st, h.get("content-type")), (200, "text/event-stream"),
             "a slow call becomes an event stream")
    check_eq(h.get("x-accel-buffering"), "no", "no proxy buffering")
    check("content-length" not in h, "an event stream has no length")
    ev = c.events
    check(ev[0].get("id") and not ev[0].get("data"),
          "the first event gives an id to resume from: %r" % ev[0])
    kas = sum(len(e.get(":", [])) for e in ev)
    check(kas >= 2, "keep-alives every second over 4 s: %d" % kas)
    res = [e for e in ev if e.get("data")]
    check_eq(len(res), 1, "one message on the stream")
    msg = http_json(res[0]["data"].encode())
    check_eq(msg["id"], 4, "the result's id")
    check_in("slow", str(ok_result(msg["result"], "slow call")),
             "slow call output")
    ids = [e["id"] for e in ev if "id" in e]
    check_eq(len(ids), len(set(ids)), "event ids are unique")
    check(time.time() - t0 >= 3.5, "the call ran its course")
    # The connection serves the next request after the stream.
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 5,
                                          "method": "ping"}, hdr)
    check_eq(st, 200, "the connection is reused after a stream")

    # A client that accepts only JSON waits for JSON.
    st, h, b = c.request("POST", "/mcp", call(6, "sleep 2; echo plain",
                                              20000),
                         dict(hdr, Accept="application/json"))
    check_eq(h.get("content-type"), "application/json",
             "no stream for a JSON-only client")
    check_in("plain", str(http_json(b)), "JSON-only output")

    # A stream lost mid-call and resumed with Last-Event-ID.
    d = Http(s.port)
    st, h = post_head(d, call(7, "sleep 3; echo resumed", 20000), hdr)
    check_eq((st, h.get("content-type")), (200, "text/event-stream"),
             "stream to drop")
    ev = sse_parse(d.sse_body(h, until=lambda t: "id:" in t and
                              t.endswith("\n\n")))
    last = [e["id"] for e in ev if "id" in e][-1]
    d.close()
    r = Http(s.port)
    st, h, b = r.request("GET", "/mcp", None, dict(hdr, **{
        "Accept": "text/event-stream", "Last-Event-ID": last}))
    check_eq((st, h.get("content-type")), (200, "text/event-stream"),
             "resume status")
    msg = http_json(b)
    check_eq(msg["id"], 7, "the resumed stream's result")
    check_in("resumed", str(msg["result"]), "resumed output")
    check(all(e.get("id") != last for e in r.events),
          "only events after Last-Event-ID")

    # Lost again after the result was out: the result is still kept
    # until a stream delivers it; once delivered, it is gone.
    d = Http(s.port)
    st, h = post_head(d, call(8, "sleep 2; echo later", 20000), hdr)
    ev = sse_parse(d.sse_body(h, until=lambda t: "id:" in t and
                              t.endswith("\n\n")))
    last = [e["id"] for e in ev if "id" in e][-1]
    d.close()
    time.sleep(3)   # the call finishes while nobody listens
    other, ohdr = http_session(s.port)
    st, h, b = other.request("GET", "/mcp", None, dict(ohdr, **{
        "Accept": "text/event-stream", "Last-Event-ID": last}))
    check_eq(st, 404, "another session cannot resume the stream")
    st, h, b = r.request("GET", "/mcp", None, dict(hdr, **{
        "Accept": "text/event-stream", "Last-Event-ID": last}))
    check_eq(st, 200, "resume after the call ended")
    check_in("later", str(http_json(b)["result"]), "kept result")
    st, h, b = r.request("GET", "/mcp", None, dict(hdr, **{
        "Accept": "text/event-stream", "Last-Event-ID": last}))
    check_eq(st, 404, "a delivered stream is gone")
    st, h, b = r.request("GET", "/mcp", None, dict(hdr, **{
        "Accept": "text/event-stream"}))
    check_eq(st, 405, "GET without Last-Event-ID")
    st, h, b = r.request("GET", "/mcp", None, dict(hdr, **{
        "Accept": "text/event-stream", "Last-Event-ID": last,
        "MCP-Protocol-Version": "2026-07-28"}))
    check_eq(st, 405, "no resumption in the 2026-07-28 revision")

    # A slow call of the 2026-07-28 revision (no session) streams too,
    # with keep-alives and no event ids.
    body = call(9, "sleep 3; echo modern", 20000)
    body["params"]["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}
    m = Http(s.port)
    st, h, b = m.request("POST", "/mcp", body, {
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
        "Mcp-Name": "exec_command", "Mcp-Param-Sandbox-Id": SID[0]})
    check_eq((st, h.get("content-type")), (200, "text/event-stream"),
             "a slow 2026-07-28 call becomes an event stream")
    check("mcp-session-id" not in h, "no session for it")
    check(all("id" not in e for e in m.events), "no event ids: %r" %
          (m.events,))
    check(sum(len(e.get(":", [])) for e in m.events) >= 1,
          "keep-alives on it")
    msg = http_json(b)
    check_eq(msg["result"].get("resultType"), "complete", "its resultType")
    check_in("modern", str(msg["result"]), "its output")


main(test)
