#!/usr/bin/env python3
# No answer waits for the peer's delayed ACK: on one keep-alive
# connection, file_read answers of every size from 1 KiB to 256 KiB in
# 1 KiB steps, over /mcp and over /v1, each come well inside the 40 ms a
# delayed ACK holds a segment back (a stall detector, not a speed
# target: the bound is 25 ms, most answers take under 2 ms). A write
# held by Nagle's algorithm behind the unacknowledged segments of an
# answer used to wait for the client's delayed ACK, at some sizes only.

import json
import os
import time
import urllib.parse

from lib import (IMAGE, Http, Server, check, check_eq, cleanup, http_session,
                 keygen, main, ok_result, remove_our_containers, tmpdir)

BOUND = 0.025
LINE = 1023          # and its newline: 1 KiB a line


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "big.txt"), "w") as f:
        for i in range(256):
            f.write(("%04d" % i) + "x" * (LINE - 4) + "\n")
    key, line = keygen("alice", "management", "runtime")
    state = os.path.join(top, "state")
    s = Server(sets=("management", "runtime"), state=state,
               listen="127.0.0.1:0",
               config="workspace-root %s\n%s\n" % (top, line))
    cleanup(lambda: remove_our_containers(state))
    c, hdr = http_session(s.port, key=key)
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, hdr)
    check_eq(st, 200, "create status")
    sid = json.loads(b)["result"]["structuredContent"]["id"]

    slow = []
    rid = 10
    for n in range(1, 257):
        rid += 1
        t0 = time.monotonic()
        st, h, b = c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "file_read", "arguments": {
                "sandbox_id": sid, "path": "big.txt", "offset": 1,
                "limit": n}}}, hdr)
        dt = time.monotonic() - t0
        check_eq(st, 200, "/mcp file_read of %d lines" % n)
        r = json.loads(b)["result"]
        check(r.get("isError") is False, "read %d: %r" % (n, r))
        if dt > BOUND:
            slow.append(("/mcp", n, len(b), round(dt * 1000, 1)))

    rest = Http(s.port)
    auth = {"Authorization": "Bearer " + key}
    for n in range(1, 257):
        q = urllib.parse.urlencode({"path": "big.txt", "offset": 1,
                                    "limit": n})
        t0 = time.monotonic()
        st, h, b = rest.request("GET", "/v1/sandboxes/%s/files?%s" %
                                (sid, q), None, auth)
        dt = time.monotonic() - t0
        check_eq(st, 200, "/v1 file_read of %d lines: %r" % (n, b[:200]))
        if dt > BOUND:
            slow.append(("/v1", n, len(b), round(dt * 1000, 1)))
    check_eq(slow, [], "answers held back (endpoint, lines, bytes, ms)")


if __name__ == "__main__":
    main(test)
