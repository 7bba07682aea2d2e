#!/usr/bin/env python3
# Hostile requests to the REST routes and hostile sandboxes behind the
# forward route, on a server with no API keys (the case where a page is
# the only guard):
# - a browser's form (no preflight: an urlencoded or text/plain type,
#   the arguments in the query), even from a page the operator lets in,
#   runs no tool: a Content-Type, when given, must be JSON's even with
#   no body;
# - an Origin naming this server by another of its names (a forwarded
#   page on localhost:PORT calling 127.0.0.1:PORT) is a page of ours and
#   refused, for reads and writes;
# - a body's members are bounded before they are merged (each merge
#   looks the others up: 80,000 members once held the loop 15 s), and
#   answered at once;
# - a body is one JSON object: trailing bytes are refused, and a member
#   given twice in it is named as such;
# - a sandbox answering the forward route with a NUL in its head, or
#   with bare LF line ends (which a client may split where we do not,
#   and so read past our Connection and CSP lines), gets its answer
#   dropped and the connection closed, and the server lives on;
# - list_workspace_directories says nothing of what exists outside the
#   caller's roots, nor where a link inside one leads.

import base64
import os
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 docker, http_json, http_session, main, ok_result,
                 remove_our_containers, tmpdir)


def forward_answer(sid, port, answer):
    """Start a server in the sandbox that answers every request with
    the bytes answer (once per connection)."""
    script = b"#!/bin/sh\nprintf '%s'\nsleep 5\n" % answer
    docker("exec", "-d", sid, "sh", "-c",
           "echo %s | base64 -d > /tmp/a%d; chmod +x /tmp/a%d;"
           " nc -ll -p %d -e /tmp/a%d"
           % (base64.b64encode(script).decode(), port, port, port, port))
    time.sleep(0.5)


def test():
    base = tmpdir()
    roots = os.path.join(base, "roots")
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    os.makedirs(os.path.join(base, "outside", "exists"))
    os.symlink("/etc", os.path.join(roots, "etc-link"))
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n"
               "allow-origin http://localhost:5173\n" % roots,
               listen="127.0.0.1:0", stdio=False)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    conn, hdr = http_session(s.port)
    st, h, b = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, hdr)
    sid = ok_result(http_json(b)["result"], "create")["id"]
    sb = "/v1/sandboxes/" + sid

    # 1. Forms: every type a form can send, no body, the query holding
    # a command that would leave a mark.
    for ctype in ("application/x-www-form-urlencoded", "text/plain",
                  "multipart/form-data; boundary=x"):
        st, h, b = Http(s.port).request(
            "POST", sb + "/commands?cmd=touch+/workspace/FORM", None,
            {"Content-Type": ctype, "Content-Length": "0",
             "Origin": "http://localhost:5173"})
        check_eq(st, 415, "a form's POST (%s)" % ctype)
        check_eq(http_json(b)["error"]["kind"], "invalid_request",
                 "a form's POST: kind")
    # A client with no Content-Type and no body still may (curl -X POST).
    st, h, b = Http(s.port).request(
        "POST", sb + "/commands?cmd=true&yield_time_ms=5000", None,
        {"Content-Length": "0"})
    check_eq(st, 200, "a POST with no body and no Content-Type")

    # 2. An Origin naming this server itself: refused, reads included.
    for origin in ("http://localhost:%d" % s.port,
                   "http://127.0.0.1:%d" % s.port):
        for method, path, body in [
                ("GET", "/v1/sandboxes", None),
                ("POST", sb + "/commands", {"cmd": "touch /workspace/OWN"})]:
            st, h, b = Http(s.port).request(method, path, body,
                                            {"Origin": origin})
            check_eq(st, 403, "Origin %s, %s %s" % (origin, method, path))
            check_in("forward route", http_json(b)["error"]["message"],
                     "Origin %s: message" % origin)
    for mark in ("FORM", "OWN"):
        st, h, b = Http(s.port).request(
            "POST", sb + "/commands", {"cmd": "test ! -e /workspace/%s"
                                       % mark, "yield_time_ms": 5000})
        check_eq((st, http_json(b).get("exit_code")), (200, 0),
                 "no %s was made" % mark)

    # 3. Many members: refused before the merge, at once.
    many = "{" + ",".join('"a%d": 1' % i for i in range(80000)) + "}"
    t0 = time.monotonic()
    st, h, b = Http(s.port, timeout=60).request(
        "POST", sb + "/commands", many.encode())
    took = time.monotonic() - t0
    check_eq(st, 400, "80,000 body members")
    check_in("80000 members", http_json(b)["error"]["message"],
             "the bound is named")
    check(took < 5, "80,000 members answered at once (%.1f s)" % took)

    # 4. One object, each member once.
    st, h, b = Http(s.port).request(
        "POST", sb + "/commands", b'{"cmd": "true"} {"cmd": "false"}')
    check_eq(st, 400, "a second object after the body")
    check_in("one JSON object", http_json(b)["error"]["message"],
             "trailing bytes: message")
    st, h, b = Http(s.port).request(
        "POST", sb + "/commands", b'{"cmd": "true", "cmd": "false"}')
    check_eq(st, 400, "a member twice in the body")
    check_in("given twice (in the body)", http_json(b)["error"]["message"],
             "a member twice: message")

    # 5. The forward route's answers that are no HTTP we pass on.
    for port, answer, what in [
            (9200, b"garbage\\000\\r\\n\\r\\n", "a NUL in the head"),
            (9201, b"HTTP/1.1 200 OK\\000\\r\\nX: y\\r\\n\\r\\n",
             "a NUL in the status line"),
            (9202, b"HTTP/1.1 200 OK\\nConnection: keep-alive\\n"
             b"Content-Length: 2\\n\\nhi\\r\\n\\r\\n", "bare LF line ends"),
            (9203, b"HTTP/1.1 200 OK\\r\\nX-A: 1\\rX-B: 2\\r\\n\\r\\n",
             "a bare CR"),
            (9204, b"HTTP/1.1 200 OK\\r\\n folded\\r\\n\\r\\n",
             "a folded line")]:
        forward_answer(sid, port, answer)
        c = Http(s.port)
        c.send_raw(("GET /sandboxes/%s/forward/%d/ HTTP/1.1\r\n"
                    "Host: 127.0.0.1\r\n\r\n" % (sid, port)).encode())
        check(c.closed(10), "%s: the connection is closed" % what)
        check_eq(c.buf, b"", "%s: nothing of it was passed on" % what)
        st, h, b = Http(s.port).request("GET", "/health")
        check_eq(st, 200, "%s: the server lives on" % what)
    forward_answer(sid, 9205, b"HTTP/1.1 200 OK\\r\\nContent-Length: 2"
                   b"\\r\\n\\r\\nok")
    st, h, b = Http(s.port).request(
        "GET", "/sandboxes/%s/forward/9205/" % sid)
    check_eq((st, b), (200, b"ok"), "a well-formed answer still passes")

    # 6. Outside the roots, existing or not, and links out of them.
    up = os.path.join(ws, "..", "..", "outside")
    errs = []
    for path in (up + "/exists", up + "/nothing",
                 os.path.join(ws, "..", "nothing")):
        st, h, b = Http(s.port).request(
            "GET", "/v1/workspace-directories?path=" + path)
        errs.append((st, http_json(b)["error"]["kind"]))
    check_eq(errs[0], (400, "invalid_request"), "an existing dir outside")
    check_eq(errs[1], errs[0], "outside: existing and not look the same")
    check_eq(errs[2], (404, "not_found"),
             "a missing dir inside the roots (by way of ..)")
    st, h, b = Http(s.port).request(
        "GET", "/v1/workspace-directories?path=%s/etc-link" % roots)
    err = http_json(b)["error"]
    check_eq((st, err["kind"]), (400, "invalid_request"), "a link out")
    check("/etc" not in err["message"].replace(roots + "/etc-link", ""),
          "where the link leads is not said: %r" % err["message"])

    st, h, b = Http(s.port).request("DELETE", sb)
    check_eq(st, 200, "destroy")


if __name__ == "__main__":
    main(test)
