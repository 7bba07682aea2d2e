#!/usr/bin/env python3
# MCP session flood: one API key that sends 4,096 initializes (as many as
# max-sessions) does not lock other keys out. Each key has its own cap
# (max-sessions-per-key); past it the key's own least recently used idle
# session ends (its id then gets 404, like an expired one), so the
# flooding key's newest sessions keep working and another key still
# initializes. When none of the key's sessions is idle (each has a call
# running) its next initialize gets 503 naming the limit, and other keys
# are still served. With no keys configured, the cap is per client
# address: a flood from 127.0.0.2 leaves 127.0.0.1 its sessions.

import json
import os
import re
import socket
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 http_json, http_session, keygen, main, ok_result,
                 remove_our_containers, tmpdir)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "flood", "version": "1"}}}


def request_bytes(body, headers):
    body = json.dumps(body).encode()
    h = {"Host": "localhost", "Content-Type": "application/json",
         "Accept": "application/json, text/event-stream",
         "Content-Length": str(len(body))}
    h.update(headers)
    return ("POST /mcp HTTP/1.1\r\n" + "".join(
        "%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode() + body


def flood(port, n, headers=None, source=None, depth=64):
    """n initializes, pipelined depth at a time on keep-alive connections
    from source; returns the session ids in the order they were made."""
    headers = headers or {}
    ids = []
    one = request_bytes(INIT, headers)
    while len(ids) < n:
        c = Http.__new__(Http)
        c.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if source is not None:
            c.sock.bind((source, 0))
        c.sock.settimeout(30)
        c.sock.connect(("127.0.0.1", port))
        c.buf = b""
        k = min(depth, n - len(ids))
        c.send_raw(one * k)
        for _ in range(k):
            st, h, b = c.response()
            check_eq(st, 200, "initialize %d of the flood" % (len(ids) + 1))
            ids.append(h["mcp-session-id"])
        c.close()
    return ids


def ping(port, sid, headers=None, source=None):
    h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    h.update(headers or {})
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if source is not None:
        s.bind((source, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    c = Http.__new__(Http)
    c.sock, c.buf = s, b""
    c.send_raw(request_bytes({"jsonrpc": "2.0", "id": 7, "method": "ping"},
                             h))
    st, _, b = c.response()
    c.close()
    return st, b


def test():
    key_a, line_a = keygen("alice", "management", "runtime")
    key_b, line_b = keygen("bob", "management")
    auth_a = {"Authorization": "Bearer " + key_a}
    auth_b = {"Authorization": "Bearer " + key_b}

    # 1. Alice opens as many sessions as the server holds in all.
    s = Server(config="%s\n%s\n" % (line_a, line_b), listen="127.0.0.1:0",
               stdio=False)
    t0 = time.time()
    ids = flood(s.port, 4096, auth_a)
    took = time.time() - t0
    check_eq(len(set(ids)), 4096, "4,096 distinct session ids")
    # Bob still gets a session, and it works.
    cb, hb = http_session(s.port, key=key_b)
    st, h, b = cb.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 2,
                                           "method": "tools/list"}, hb)
    check_eq(st, 200, "bob's tools/list after alice's flood")
    # Alice's newest sessions still work; her oldest have ended.
    for sid in ids[-8:]:
        st, b = ping(s.port, sid, auth_a)
        check_eq(st, 200, "one of alice's newest sessions")
    for sid in ids[:8]:
        st, b = ping(s.port, sid, auth_a)
        check_eq(st, 404, "one of alice's oldest sessions")
        check_in("session not found", http_json(b)["error"]["message"],
                 "404 body")
    # A session used lately is kept over older unused ones: ping the
    # oldest still open, flood again past the cap, and it is still there.
    alive = [sid for sid in ids if ping(s.port, sid, auth_a)[0] == 200]
    check(0 < len(alive) < 4096, "alice holds some sessions, not all: %d"
          % len(alive))
    check_eq(ping(s.port, alive[0], auth_a)[0], 200, "alice's oldest open")
    flood(s.port, len(alive) - 1, auth_a)
    check_eq(ping(s.port, alive[0], auth_a)[0], 200,
             "the session alice used lately survives her next flood")
    check_eq(ping(s.port, alive[1], auth_a)[0], 404,
             "her next oldest, unused, has ended")
    check(took < 60, "the flood took %.1f s" % took)

    # 2. No keys: the cap is per client address.
    s2 = Server(config="", listen="127.0.0.1:0", stdio=False)
    ids2 = flood(s2.port, 4096, source="127.0.0.2")
    st, h, b = Http(s2.port).request("POST", "/mcp", INIT)
    check_eq(st, 200, "127.0.0.1 initializes after 127.0.0.2's flood")
    check_eq(ping(s2.port, ids2[-1], source="127.0.0.2")[0], 200,
             "127.0.0.2's newest session works")
    check_eq(ping(s2.port, ids2[0], source="127.0.0.2")[0], 404,
             "127.0.0.2's oldest session has ended")

    # 3. A cap of two, both sessions busy: the third initialize gets 503
    # naming the limit, and bob is still served.
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    s3 = Server(sets=("management", "runtime"), stdio=False,
                listen="127.0.0.1:0", args=("-v",),
                config="%s\n%s\nworkspace-root %s\n"
                "limit max-sessions-per-key 2\n" % (line_a, line_b, roots))
    state = s3.state
    cleanup(lambda: remove_our_containers(state))
    c1, h1 = http_session(s3.port, key=key_a)
    st, h, b = c1.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "create_sandbox",
                   "arguments": {"image": IMAGE, "workspace_root": ws}}},
        h1)
    check_eq(st, 200, "create_sandbox")
    res = http_json(b)["result"]
    sbx = ok_result(res, "create_sandbox")["id"]
    busy = []
    for i in range(2):
        c, hdr = http_session(s3.port, key=key_a) if i else (c1, h1)
        body = json.dumps({
            "jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
            "params": {"name": "exec_command",
                       "arguments": {"sandbox_id": sbx,
                                     "cmd": "sleep 30",
                                     "yield_time_ms": 25000}}}).encode()
        c.send_raw(request_bytes(json.loads(body), hdr))
        busy.append(c)
    # Both calls are running once the server has started both commands.
    end = time.time() + 30
    while len(re.findall(r"command cmd-\S+ started in \S+: sleep 30",
                         s3.log())) < 2:
        check(time.time() < end, "both commands start: " + s3.log()[-2000:])
        time.sleep(0.05)
    st, h, b = Http(s3.port).request("POST", "/mcp", INIT, auth_a)
    check_eq(st, 503, "alice's third initialize with both sessions busy")
    msg = http_json(b)["error"]["message"]
    check_in("max-sessions-per-key", msg, "the 503 names the limit")
    check("mcp-session-id" not in h, "no session id with the 503")
    check(re.match(r"\d+$", h.get("retry-after", "")), "Retry-After")
    st, h, b = Http(s3.port).request("POST", "/mcp", INIT, auth_b)
    check_eq(st, 200, "bob initializes meanwhile")


main(test)
