#!/usr/bin/env python3
# The per-sandbox HTTP routes: GET /sandboxes/{id}/health and
# ANY /sandboxes/{id}/forward/{port}/{path...}, behind the API key with a
# grant of the runtime set. A forward reaches a server started inside
# the sandbox's network, streams both ways (an echo server returns 8 MiB
# as it was sent), never passes our Authorization header on, and says 502
# when nothing listens. The sandbox is made with the same key, as routes
# serve only the key's own tenant (http-tenants.py tests the refusals).

import base64
import json
import os
import socket
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 docker, http_json, http_session, keygen, main, ok_result,
                 remove_our_containers, tmpdir)


def raw_exchange(port, head, body, timeout=30):
    """Send head+body, half-close, read everything until the close."""
    s = socket.create_connection(("127.0.0.1", port), timeout)
    s.sendall(head + body)
    s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        out += chunk
    s.close()
    return out


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "site")
    os.makedirs(ws)
    key_rt, line_rt = keygen("rt", "runtime", "management",
                             "observability")
    key_mg, line_mg = keygen("mg", "management")
    s = Server(sets=("management", "runtime", "observability"),
               config="workspace-root %s\n%s\n%s\n" % (roots, line_rt,
                                                        line_mg),
               listen="127.0.0.1:0")
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    conn, hdr = http_session(s.port, key=key_rt)
    st, h, b = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, hdr)
    check_eq(st, 200, "create status")
    rec = ok_result(http_json(b)["result"], "create")
    sid = rec["id"]
    # A tenant's key is not told where the server listens on its host
    # (nor the base's host path); the local operator is.
    check_eq((rec["daemon"], rec["daemon_http"],
              rec["shared_base"]["source"]), (None, None, None),
             "no internal address or host path for a tenant")
    want = {"host": "127.0.0.1", "port": s.port}
    local = ok_result(s.call("inspect_sandbox", {"sandbox_id": rec["id"]}),
                      "inspect on stdio")
    check_eq((local["daemon"], local["daemon_http"]), (want, want),
             "endpoints of the serving process, for the operator")
    check(local["shared_base"]["source"].startswith(state),
          "the base's path, for the operator")
    st, h, b = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "snapshot", "arguments": {
            "sandbox_id": rec["id"]}}}, hdr)
    node = ok_result(http_json(b)["result"], "snapshot")
    check_eq(node["daemon"]["runtime_dir"], None,
             "no state directory path in a tenant's snapshot")
    local = ok_result(s.call("snapshot", {"sandbox_id": rec["id"]}),
                      "snapshot on stdio")
    check(local["daemon"]["runtime_dir"].startswith(state),
          "the operator's snapshot names it")
    auth = {"Authorization": "Bearer " + key_rt}

    c = Http(s.port)
    st, h, b = c.request("GET", "/sandboxes/%s/health" % sid, None, auth)
    check_eq((st, http_json(b)), (200, {"sandbox_id": sid,
                                        "state": "ready",
                                        "container": "running"}), "health")
    # Keys and grants.
    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/health" % sid)
    check_eq(st, 401, "no key")
    check(h.get("www-authenticate", "").startswith("Bearer"), "challenge")
    st, h, b = Http(s.port).request(
        "GET", "/sandboxes/%s/health" % sid, None,
        {"Authorization": "Bearer " + key_mg})
    check_eq(st, 403, "a key without the runtime set")
    check_in("runtime", http_json(b)["error"]["message"], "message")
    st, h, b = Http(s.port).request(
        "GET", "/sandboxes/sbox-000000000000/health", None, auth)
    check_eq(st, 404, "unknown sandbox")
    st, h, b = Http(s.port).request("GET", "/sandboxes/..%2f..%2fetc/"
                                    "health", None, auth)
    check_eq(st, 400, "an id that is not an id")
    st, h, b = Http(s.port).request("POST", "/sandboxes/%s/health" % sid,
                                    b"{}", auth)
    check_eq(st, 405, "POST health")
    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/other" % sid,
                                    None, auth)
    check_eq(st, 404, "unknown route")
    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/forward/99999/"
                                    % sid, None, auth)
    check_eq(st, 404, "port out of range")

    # A web server inside the sandbox.
    echo = base64.b64encode(b"#!/bin/sh\nprintf 'HTTP/1.1 200 OK\\r\\n"
                            b"\\r\\n'\nexec cat\n").decode()
    docker("exec", sid, "sh", "-c", "mkdir -p /www/sub && echo '<p>from"
           " the sandbox</p>' > /www/sub/page.html && httpd -p 8000 -h /www"
           " && echo %s | base64 -d > /tmp/echo && chmod +x /tmp/echo"
           " && nc -ll -p 9000 -e /tmp/echo &" % echo)
    time.sleep(0.3)
    c = Http(s.port)
    st, h, b = c.request("GET", "/sandboxes/%s/forward/8000/sub/page.html"
                         "?x=1" % sid, None, auth)
    check_eq((st, b), (200, b"<p>from the sandbox</p>\n"), "forwarded page")
    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/forward/8001/"
                                    % sid, None, auth)
    check_eq(st, 502, "nothing listens")
    check_in("nothing listens", http_json(b)["error"], "message")

    # Both directions stream: an echo server sends back what it gets
    # (after a head of its own).
    body = os.urandom(1 << 20) * 8
    head = ("PUT /sandboxes/%s/forward/9000/echo/here?q=1 HTTP/1.1\r\n"
            "Host: localhost\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/octet-stream\r\n"
            "Content-Length: %d\r\n\r\n" % (sid, key_rt, len(body))).encode()
    out = raw_exchange(s.port, head, body)
    check(out.startswith(b"HTTP/1.1 200 OK\r\n"), "the echo's head first")
    out = out.split(b"\r\n\r\n", 1)[-1]
    check(out.endswith(body), "8 MiB came back whole (%d bytes)" % len(out))
    seen = out[:len(out) - len(body)].decode()
    check(seen.startswith("PUT /echo/here?q=1 HTTP/1.1\r\n"),
          "the target is rewritten: %r" % seen[:60])
    check("Authorization" not in seen and key_rt not in seen,
          "our key is not passed on")
    check_in("Host: localhost:9000\r\n", seen, "Host")
    check_in("Connection: close\r\n", seen, "one request per connection")
    check_in("X-Forwarded-Prefix: /sandboxes/%s/forward/9000\r\n" % sid,
             seen, "prefix")
    check_in("Content-Length: %d\r\n" % len(body), seen, "length kept")
    # The server kept serving meanwhile.
    st, h, b = Http(s.port).request("GET", "/health")
    check_eq(st, 200, "still serving")

    # Health follows the container.
    docker("stop", "-t", "1", sid)
    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/health" % sid,
                                    None, auth)
    check_eq(http_json(b)["container"], "exited", "after docker stop")
    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/forward/8000/"
                                    % sid, None, auth)
    check_eq(st, 502, "forward to a stopped container")
    docker("rm", "-f", sid)
    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/health" % sid,
                                    None, auth)
    check_eq(http_json(b)["container"], "missing", "after docker rm")
    gone = ok_result(s.call("destroy_sandbox", {"sandbox_id": sid}),
                     "destroy with the container already gone")
    check_eq(gone["state"], "stopped", "stopped")
    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/health" % sid,
                                    None, auth)
    check_eq(st, 404, "health after destroy")


main(test)
