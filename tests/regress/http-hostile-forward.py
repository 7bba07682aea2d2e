#!/usr/bin/env python3
# A hostile sandbox behind the forward route, and clients that lie in
# headers:
# - a forward carries one request: a client (or a pooling proxy) that
#   reuses the connection after the sandbox's keep-alive answer never
#   hands its next request, API key included, to the sandbox, nor does
#   one that pipelines it behind an upgrade the sandbox then takes;
# - the sandbox's answer is the connection's last (Connection: close)
#   and its page may connect only to its own origin (CSP), and a page
#   of the server's own origin may not drive /mcp;
# - of repeated X-Forwarded-Host / X-Forwarded-For lines from a trusted
#   proxy, the last one (the proxy's own) counts;
# - a 2026-07-28 request cannot ride a 2025 session past the header
#   checks;
# - a long preflight still gets a well-formed answer on a kept
#   connection;
# - a forward port is digits only;
# - header values are escaped in log lines, and no peer's bytes start a
#   log line of their own.

import base64
import os
import socket
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 conn_from,
                 docker, http_json, http_session, keygen, main, ok_result,
                 remove_our_containers, tmpdir)

PROXY = "127.0.0.2"     # a trusted-proxy


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "site")
    os.makedirs(ws)
    key, line = keygen("web", "management", "runtime")
    auth = {"Authorization": "Bearer " + key}
    s = Server(config="workspace-root %s\n%s\ntrusted-proxy %s\n"
               "public-host sandbox.example.com\n" % (roots, line, PROXY),
               listen="127.0.0.1:0", stdio=False)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    conn, hdr = http_session(s.port, key=key)
    st, h, b = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, hdr)
    sid = ok_result(http_json(b)["result"], "create")["id"]

    # 1. The sandbox answers keep-alive and records all it receives.
    docker("exec", "-d", sid, "sh", "-c",
           "(printf 'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nok';"
           " sleep 20) | nc -l -p 9100 > /tmp/got")
    time.sleep(0.5)
    c = Http(s.port)
    c.send_raw(("GET /sandboxes/%s/forward/9100/first HTTP/1.1\r\n"
                "Host: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n"
                % (sid, key)).encode())
    st, h, b = c.response()
    check_eq((st, b), (200, b"ok"), "the forwarded answer")
    check_eq(h.get("connection"), "close", "the answer says it is the last")
    check_eq(h.get("content-security-policy"),
             "connect-src 'self'; form-action 'self'",
             "the page's connections stay home")
    secret = "smcp_NEXTREQUESTSECRET"
    try:
        c.send_raw(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    "Authorization: Bearer %s\r\nContent-Length: 2\r\n\r\n"
                    "{}" % secret).encode())
    except OSError:
        pass
    check(c.closed(10), "the reused connection is closed")
    got = docker("exec", sid, "cat", "/tmp/got")
    check_in("GET /first HTTP/1.1", got, "the sandbox saw the request")
    check(secret not in got and "POST /mcp" not in got,
          "the next request never reached the sandbox: %r" % got)

    # An upgrade the sandbox refuses does not open the tunnel either.
    docker("exec", "-d", sid, "sh", "-c",
           "(printf 'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\n\\r\\nno';"
           " sleep 20) | nc -l -p 9101 > /tmp/got2")
    time.sleep(0.5)
    c = Http(s.port)
    c.send_raw(("GET /sandboxes/%s/forward/9101/ws HTTP/1.1\r\n"
                "Host: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
                % (sid, key)).encode())
    st, h, b = c.response()
    check_eq((st, b), (200, b"no"), "the refused upgrade's answer")
    try:
        c.send_raw(("GET /x HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n"
                    % secret).encode())
    except OSError:
        pass
    check(c.closed(10), "closed after a refused upgrade")
    got = docker("exec", sid, "cat", "/tmp/got2")
    check(secret not in got, "nothing after a refused upgrade: %r" % got)

    # A request pipelined behind an upgrade's, sent before its answer,
    # never reaches the sandbox, even once the sandbox takes the
    # upgrade: the connection closes instead.
    switch = ("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket"
              "\\r\\nConnection: Upgrade\\r\\n\\r\\n")
    for port in (9104, 9105):
        docker("exec", "-d", sid, "sh", "-c",
               "(sleep 1; printf '%s'; sleep 20) | nc -l -p %d > /tmp/got%d"
               % (switch, port, port))
    time.sleep(0.5)
    upgrade = ("GET /sandboxes/%s/forward/%%d/ws HTTP/1.1\r\n"
               "Host: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
               "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
               % (sid, key))
    c = Http(s.port)
    c.send_raw((upgrade % 9104 + "GET /next HTTP/1.1\r\nHost: x\r\n"
                "Authorization: Bearer %s\r\n\r\n" % secret).encode())
    check(c.closed(10), "a request pipelined behind an upgrade: closed")
    got = docker("exec", sid, "cat", "/tmp/got9104")
    check("/next" not in got and secret not in got,
          "the pipelined request never reached the sandbox: %r" % got)
    # A sandbox that takes the upgrade before the request's body is in
    # cannot make the rest of the stream a tunnel: the connection closes.
    docker("exec", "-d", sid, "sh", "-c",
           "(printf '%s'; sleep 20) | nc -l -p 9106 > /tmp/got9106"
           % switch)
    time.sleep(0.5)
    c = Http(s.port)
    c.send_raw((upgrade % 9106).replace("\r\n\r\n", "\r\nContent-Length:"
                                       " 10\r\n\r\n12345").encode())
    check(c.closed(10), "a 101 before the body is all sent: closed")
    try:
        c.send_raw(("67890GET /next HTTP/1.1\r\nHost: x\r\n"
                    "Authorization: Bearer %s\r\n\r\n" % secret).encode())
    except OSError:
        pass
    got = docker("exec", sid, "cat", "/tmp/got9106")
    check("/next" not in got and secret not in got,
          "nothing after the early 101 reached the sandbox: %r" % got)
    # An upgrade used as it should be (bytes only after the 101) works.
    c = Http(s.port)
    c.send_raw((upgrade % 9105).encode())
    while b"\r\n\r\n" not in c.buf:
        c._fill()
    check(c.buf.startswith(b"HTTP/1.1 101 "), "101: %r" % c.buf[:40])
    c.send_raw(b"hello-tunnel")
    deadline = time.monotonic() + 10
    got = ""
    while "hello-tunnel" not in got and time.monotonic() < deadline:
        got = docker("exec", sid, "cat", "/tmp/got9105")
    check_in("hello-tunnel", got, "the tunnel carries bytes sent after"
             " the 101")

    st, h, b = Http(s.port).request("GET", "/sandboxes/%s/forward/+9100/"
                                    % sid, None, auth)
    check_eq(st, 404, "a signed port")

    # A blank line after the body means nothing, and Expect: 100-continue
    # is answered here (an echo server sends the request back, after a
    # head of its own).
    echo = base64.b64encode(b"#!/bin/sh\nprintf 'HTTP/1.1 200 OK\\r\\n"
                            b"\\r\\n'\nexec cat\n").decode()
    docker("exec", "-d", sid, "sh", "-c", "echo %s | base64 -d > /tmp/echo;"
           " chmod +x /tmp/echo; nc -ll -p 9103 -e /tmp/echo" % echo)
    time.sleep(0.5)
    raw = socket.create_connection(("127.0.0.1", s.port), 30)
    cleanup(raw.close)
    raw.sendall(("POST /sandboxes/%s/forward/9103/x HTTP/1.1\r\n"
                 "Host: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                 "Expect: 100-continue\r\nContent-Length: 4\r\n\r\n"
                 "ping\r\n" % (sid, key)).encode())
    out = b""
    while not out.endswith(b"ping"):
        chunk = raw.recv(65536)
        if not chunk:
            break
        out += chunk
    raw.shutdown(socket.SHUT_WR)     # the echo ends with our side
    while True:
        chunk = raw.recv(65536)
        if not chunk:
            break
        out += chunk
    text = out.decode("latin-1")
    check(text.startswith("HTTP/1.1 100 Continue\r\n\r\n"),
          "100 Continue first: %r" % text[:60])
    check_in("POST /x HTTP/1.1\r\n", text, "the request reached the sandbox")
    check("Expect:" not in text, "Expect is not passed on")
    check(text.endswith("\r\n\r\nping"), "the body, and nothing after it:"
          " %r" % text[-40:])

    # 2. A page of this server's own origin (the browser says so) may
    # not call /mcp; a loopback client naming its own origin still may
    # (the conformance suite's DNS-rebinding check sends that).
    own = "http://127.0.0.1:%d" % s.port
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "page", "version": "1"}}}
    st, h, b = Http(s.port).request("POST", "/mcp", body, dict(
        auth, Origin=own, **{"Sec-Fetch-Site": "same-origin"}),
        host="127.0.0.1:%d" % s.port)
    check_eq(st, 403, "Sec-Fetch-Site: same-origin")
    check_in("forward route", http_json(b)["error"]["message"], "message")
    st, h, b = Http(s.port).request("POST", "/mcp", body, dict(
        auth, Origin=own), host="127.0.0.1:%d" % s.port)
    check_eq(st, 200, "a client naming the server's origin")
    st, h, b = Http(s.port).request("POST", "/mcp", body, dict(
        auth, Origin="http://localhost:5173"), host="127.0.0.1:%d" % s.port)
    check_eq(st, 200, "a loopback page on another port still may")

    # 3. Repeated forwarded lines: the proxy's (last) one counts.
    def raw_from_proxy(lines):
        c = conn_from(PROXY, s.port)
        c.send_raw(("POST /mcp HTTP/1.1\r\nHost: upstream\r\n"
                    "Authorization: Bearer %s\r\n%s"
                    "Content-Type: application/json\r\n"
                    "Accept: application/json, text/event-stream\r\n"
                    "Content-Length: 2\r\n\r\n{}" % (key, lines)).encode())
        return c.response()[0]
    st = raw_from_proxy("X-Forwarded-Host: sandbox.example.com\r\n"
                        "X-Forwarded-Host: evil.example\r\n")
    check_eq(st, 403, "the last X-Forwarded-Host line counts")
    st = raw_from_proxy("X-Forwarded-Host: evil.example\r\n"
                        "X-Forwarded-Host: sandbox.example.com\r\n")
    check(st != 403, "the proxy's own line allows it: %d" % st)
    raw_from_proxy("X-Forwarded-For: 6.6.6.6\r\n"
                   "X-Forwarded-For: 10.9.8.7\r\n"
                   "X-Forwarded-Host: other.example\r\n")
    end = time.time() + 10
    while "client=10.9.8.7" not in s.log() and time.time() < end:
        time.sleep(0.05)
    check_in("client=10.9.8.7", s.log(), "the proxy's client in the log")
    check("client=6.6.6.6" not in s.log(), "not the client's own claim")

    # 4. A 2026-07-28 request on a 2025 session is refused.
    st, h, b = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "list_sandboxes", "arguments": {},
                   "_meta": {
                       "io.modelcontextprotocol/protocolVersion":
                       "2026-07-28",
                       "io.modelcontextprotocol/clientCapabilities": {}}}},
        dict(hdr, **{"Mcp-Method": "tools/list",
                     "Mcp-Name": "something_else"}))
    r = http_json(b)
    check_eq(r.get("error", {}).get("code"), -32600,
             "a stateless request on a session: %r" % r)

    # 5. A preflight asking for many headers: a whole answer, and the
    # connection serves the next request.
    names = ", ".join("Mcp-Param-%s" % ("p%02d" % i + "x" * 60)
                      for i in range(40))
    c = Http(s.port)
    c.send_raw(("OPTIONS /mcp HTTP/1.1\r\nHost: localhost\r\n"
                "Origin: http://localhost:5173\r\n"
                "Access-Control-Request-Method: POST\r\n"
                "Access-Control-Request-Headers: %s\r\n\r\n"
                % names).encode())
    st, h, b = c.response()
    check_eq(st, 204, "the long preflight")
    check_eq(h.get("access-control-max-age"), "600", "its last header")
    st, h, b = c.request("GET", "/health")
    check_eq(st, 200, "the next request on the connection")

    # 6. A header value cannot pose as fields of the log line.
    lie = 'https://evil.example" peer=1.2.3.4:5 client=5.5.5.5 x="'
    st, h, b = Http(s.port).request("POST", "/mcp", body, dict(
        auth, Origin=lie))
    check_eq(st, 403, "a lying Origin")
    end = time.time() + 10
    while "evil.example" not in s.log() and time.time() < end:
        time.sleep(0.05)
    check_in('refused: Origin "https://evil.example\\x22 peer=1.2.3.4:5',
             s.log(), "the quote is escaped")
    check('evil.example" peer=' not in s.log(),
          "the value does not end its quotes")

    # 7. Nor can a body's value start a log line of its own (debug log).
    v = Server(listen="127.0.0.1:0", stdio=False, args=("-v",))
    forged = "x\n2001-01-01T00:00:00.000Z sandbox-mcp[1]: FORGED"
    st, h, b = Http(v.port).request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": forged, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}, {
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
        "Mcp-Name": "x"})
    check_eq(st, 400, "a name that does not match its header")
    end = time.time() + 10
    while "FORGED" not in v.log() and time.time() < end:
        time.sleep(0.05)
    check_in("x\\x0a2001-01-01", v.log(), "the line break is escaped")
    check("\n2001-01-01" not in v.log(), "no forged line")


main(test)
