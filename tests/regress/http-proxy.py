#!/usr/bin/env python3
# The HTTP endpoint behind a reverse proxy. CORS: a browser's preflight
# (OPTIONS /mcp) from an allow-origin origin gets 204 with the methods and
# headers it may send, without a key; responses to that origin carry
# Access-Control-Allow-Origin; any other origin gets 403 and no CORS
# headers. The Host guard takes the host a trusted-proxy forwards
# (X-Forwarded-Host, or Forwarded host=) and nobody else's, and accepts
# loopback names and public-host names; a page on the client's localhost
# is not an allowed origin once a proxy forwards its request. Refusals
# name the forwarded client in the normal log, tool-call spans carry it as
# client_addr, and an app reached through /sandboxes/{id}/forward sees the
# public host, scheme and client in X-Forwarded-* (only a trusted proxy's
# word for them, never a client's).

import base64
import json
import os
import socket
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 conn_from,
                 docker, http_json, keygen, main, ok_result,
                 remove_our_containers, tmpdir)

PROXY = "127.0.0.2"     # a trusted-proxy
STRANGER = "127.0.0.3"  # any other peer
ALLOWED = "https://console.example.com"


def init_body(rid=1):
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "regress", "version": "1"}}}


def cors_headers(h):
    return {k: v for k, v in h.items() if k.startswith("access-control-")}


def raw_exchange(source, port, head):
    """Send a request head to the echo server and read it back: after
    the head of its answer, the head it received, which ends with the
    next blank line."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    cleanup(s.close)
    s.sendall(head)
    out = b""
    while out.count(b"\r\n\r\n") < 2:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        out += chunk
    s.close()
    return out.split(b"\r\n\r\n", 1)[-1].decode("latin-1")


def wait_log(srv, needle, what):
    end = time.time() + 10
    while needle not in srv.log():
        if time.time() > end:
            check_in(needle, srv.log(), what)
        time.sleep(0.05)
    check_in(needle, srv.log(), what)


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "site")
    os.makedirs(ws)
    key, line = keygen("web", "management", "runtime")
    auth = {"Authorization": "Bearer " + key}
    s = Server(config="workspace-root %s\n%s\ntrusted-proxy %s\n"
               "allow-origin %s\npublic-host sandbox.example.com\n"
               "public-host *.boxes.example.com\n"
               % (roots, line, PROXY, ALLOWED),
               listen="127.0.0.1:0", stdio=False)
    state = s.state
    cleanup(lambda: remove_our_containers(state))

    # A browser's preflight: no key, 204, exactly what it may use.
    st, h, b = conn_from(STRANGER, s.port).request("OPTIONS", "/mcp", None, {
        "Origin": ALLOWED, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type,"
        " mcp-session-id, mcp-protocol-version, mcp-method, mcp-name,"
        " mcp-param-sandbox-id"}, host="localhost")
    check_eq(st, 204, "preflight from an allowed origin")
    check_eq(h.get("access-control-allow-origin"), ALLOWED, "allow-origin")
    methods = [m.strip() for m in
               h.get("access-control-allow-methods", "").split(",")]
    for m in ("POST", "DELETE", "GET"):
        check_in(m, methods, "allowed methods")
    allowed = [x.strip().lower() for x in
               h.get("access-control-allow-headers", "").split(",")]
    for want in ("authorization", "content-type", "mcp-session-id",
                 "mcp-protocol-version", "last-event-id", "mcp-method",
                 "mcp-name", "mcp-param-sandbox-id"):
        check_in(want, allowed, "allowed request headers")
    check_eq(h.get("access-control-expose-headers"), "Mcp-Session-Id",
             "exposed headers")
    check_in("Origin", h.get("vary", ""), "Vary")
    check("content-length" not in h, "a 204 has no Content-Length")

    # Another origin: 403, and nothing a browser could read.
    st, h, b = Http(s.port).request("OPTIONS", "/mcp", None, {
        "Origin": "https://evil.example",
        "Access-Control-Request-Method": "POST"}, host="localhost")
    check_eq((st, cors_headers(h)), (403, {}), "preflight from elsewhere")
    st, h, b = Http(s.port).request("POST", "/mcp", init_body(), dict(
        auth, Origin="https://evil.example"), host="localhost")
    check_eq((st, cors_headers(h)), (403, {}), "POST from elsewhere")

    # The real request from the allowed origin can be read by the page.
    st, h, b = Http(s.port).request("POST", "/mcp", init_body(), dict(
        auth, Origin=ALLOWED), host="localhost")
    check_eq(st, 200, "initialize from the allowed origin")
    check_eq(h.get("access-control-allow-origin"), ALLOWED,
             "allow-origin on the response")
    check_eq(h.get("access-control-expose-headers"), "Mcp-Session-Id",
             "Mcp-Session-Id readable by the page")
    check(h.get("mcp-session-id"), "a session")
    st, h, b = Http(s.port).request("POST", "/mcp", init_body(), dict(
        Origin=ALLOWED), host="localhost")
    check_eq((st, h.get("access-control-allow-origin")), (401, ALLOWED),
             "a 401 the page can read")

    def post(source, host, extra=None):
        return conn_from(source, s.port).request(
            "POST", "/mcp", init_body(), dict(auth, **(extra or {})),
            host=host)[0]

    # Host: public names and loopback directly; nothing else.
    check_eq(post(STRANGER, "sandbox.example.com"), 200, "public-host")
    check_eq(post(STRANGER, "SANDBOX.example.com:8443"), 200,
             "public-host, any case and port")
    check_eq(post(STRANGER, "a.boxes.example.com"), 200, "*.domain")
    check_eq(post(STRANGER, "boxes.example.com"), 403, "*.domain itself")
    check_eq(post(STRANGER, "evil.example"), 403, "another Host")
    # A stranger's forwarding headers count for nothing.
    check_eq(post(STRANGER, "evil.example", {
        "X-Forwarded-Host": "sandbox.example.com"}), 403,
        "X-Forwarded-Host from a stranger")
    check_eq(post(STRANGER, "localhost", {
        "X-Forwarded-Host": "evil.example"}), 200,
        "a stranger's X-Forwarded-Host is not read")
    # The trusted proxy's word is the host, whatever its upstream name.
    check_eq(post(PROXY, "sandbox_mcp", {
        "X-Forwarded-Host": "sandbox.example.com"}), 200,
        "forwarded public-host")
    check_eq(post(PROXY, "localhost", {
        "Forwarded": "for=203.0.113.4;host=\"sandbox.example.com:443\";"
        "proto=https"}), 200, "Forwarded host=")
    check_eq(post(PROXY, "sandbox.example.com", {
        "X-Forwarded-Host": "evil.example"}), 403,
        "forwarded host not public")
    check_eq(post(PROXY, "localhost", {
        "Forwarded": "host=sandbox.example.com, for=1.2.3.4;host=evil.ex"}),
        403, "only the proxy's own Forwarded element counts")
    check_eq(post(PROXY, "sandbox_mcp"), 403,
             "the proxy's upstream name alone")
    check_eq(post(PROXY, "localhost", {
        "X-Forwarded-Host": "sandbox.example.com/x"}), 403,
        "a forwarded host that is not one")

    # A page on the client's own localhost: fine straight to a loopback
    # listener (local development), refused once a proxy forwards it.
    check_eq(post(STRANGER, "localhost:8080", {
        "Origin": "http://localhost:5173"}), 200, "local page, local server")
    check_eq(post(PROXY, "sandbox_mcp", {
        "X-Forwarded-Host": "sandbox.example.com",
        "X-Forwarded-For": "203.0.113.9",
        "Origin": "http://localhost:5173"}), 403,
        "local page through the proxy")
    check_eq(post(STRANGER, "sandbox.example.com", {
        "Origin": "http://localhost:5173"}), 403,
        "local page calling the public name")
    # Unless it is allowed.
    s2 = Server(config="trusted-proxy %s\npublic-host sandbox.example.com\n"
                "allow-origin http://localhost:5173\n" % PROXY,
                listen="127.0.0.1:0", stdio=False)
    st, h, b = conn_from(PROXY, s2.port).request(
        "POST", "/mcp", init_body(), {
            "X-Forwarded-Host": "sandbox.example.com",
            "X-Forwarded-For": "203.0.113.9",
            "Origin": "http://localhost:5173"}, host="sandbox_mcp")
    check_eq((st, h.get("access-control-allow-origin")),
             (200, "http://localhost:5173"), "an allowed local page")
    # The refusal names the client in the normal (not debug) log.
    wait_log(s, "refused: Origin \"http://localhost:5173\" peer=%s:"
             % PROXY, "refusal logged")
    check_in("client=203.0.113.9", s.log(), "client named in the refusal")
    c = conn_from(PROXY, s.port)
    st, h, b = c.request("POST", "/mcp", init_body(), {
        "Authorization": "Bearer nope", "X-Forwarded-For": "198.51.100.7"},
        host="localhost")
    check_eq(st, 401, "unknown key through the proxy")
    wait_log(s, "client=198.51.100.7", "client of an unknown key")
    check_eq(post(PROXY, "localhost", {
        "X-Forwarded-Host": "evil.example",
        "X-Forwarded-For": "198.51.100.8"}), 403, "forwarded evil host")
    wait_log(s, "forwarded host \"evil.example\"", "forwarded host logged")
    check_in("client=198.51.100.8", s.log(), "client of a refused host")

    # A tool call through the proxy: its span names the client.
    c = conn_from(PROXY, s.port)
    fwd = {"X-Forwarded-For": "10.9.8.7, 198.51.100.23",
           "X-Forwarded-Host": "sandbox.example.com"}
    st, h, b = c.request("POST", "/mcp", init_body(), dict(auth, **fwd),
                         host="sandbox_mcp")
    check_eq(st, 200, "initialize through the proxy")
    hdr = dict(auth, **fwd)
    hdr["Mcp-Session-Id"] = h["mcp-session-id"]
    hdr["MCP-Protocol-Version"] = "2025-06-18"
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "method": "notifications/initialized"}, hdr,
        host="sandbox_mcp")
    check_eq(st, 202, "initialized")
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, hdr, host="sandbox_mcp")
    check_eq(st, 200, "create through the proxy")
    sid = ok_result(http_json(b)["result"], "create")["id"]
    direct = Http(s.port)
    st, h, b = direct.request("POST", "/mcp", init_body(), auth,
                              host="localhost")
    dhdr = dict(auth, **{"Mcp-Session-Id": h["mcp-session-id"],
                         "MCP-Protocol-Version": "2025-06-18"})
    direct.request("POST", "/mcp", {
        "jsonrpc": "2.0", "method": "notifications/initialized"}, dhdr,
        host="localhost")
    st, h, b = direct.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "list_sandboxes", "arguments": {}}}, dhdr,
        host="localhost")
    check_eq(st, 200, "a direct call")
    spans = []
    for path in (os.path.join(state, "telemetry", "events.ndjson"),
                 os.path.join(state, "sandboxes", sid, "telemetry",
                              "events.ndjson")):
        if os.path.exists(path):
            with open(path) as f:
                spans += [json.loads(x) for x in f if x.strip()]
    roots = {r["name"]: r for r in spans
             if r["kind"] == "span" and "parent" not in r and
             r["name"].startswith("tool.")}
    check_eq(roots.get("tool.create_sandbox", {}).get("attrs", {}).get(
        "client_addr"), "198.51.100.23", "client_addr of a proxied call")
    check_eq(roots.get("tool.list_sandboxes", {}).get("attrs", {}).get(
        "client_addr"), "127.0.0.1", "client_addr of a direct call")

    # What an app in the sandbox sees: an echo server returns the head
    # (after a head of its own).
    echo = base64.b64encode(b"#!/bin/sh\nprintf 'HTTP/1.1 200 OK\\r\\n"
                            b"\\r\\n'\nexec cat\n").decode()
    docker("exec", "-d", sid, "sh", "-c", "echo %s | base64 -d > /tmp/echo;"
           " chmod +x /tmp/echo; nc -ll -p 9000 -e /tmp/echo" % echo)
    end = time.time() + 10
    while True:
        r = docker("exec", sid, "netstat", "-ltn")
        if ":9000 " in r or time.time() > end:
            break
        time.sleep(0.1)
    path = "/sandboxes/%s/forward/9000/echo" % sid
    seen = raw_exchange(PROXY, s.port, (
        "GET %s HTTP/1.1\r\nHost: sandbox_mcp\r\nAuthorization: Bearer %s"
        "\r\nX-Forwarded-For: 10.0.0.66, 203.0.113.50\r\n"
        "X-Forwarded-Host: sandbox.example.com\r\n"
        "X-Forwarded-Proto: https\r\n\r\n" % (path, key)).encode())
    check(seen.startswith("GET /echo HTTP/1.1\r\n"), "forwarded: %r"
          % seen[:200])
    check_in("\r\nX-Forwarded-For: 203.0.113.50\r\n", seen,
             "the real client")
    check("10.0.0.66" not in seen, "the client's own word is dropped")
    check_in("\r\nX-Forwarded-Host: sandbox.example.com\r\n", seen,
             "the public host")
    check_in("\r\nX-Forwarded-Proto: https\r\n", seen, "the public scheme")
    seen = raw_exchange(PROXY, s.port, (
        "GET %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s"
        "\r\nForwarded: for=192.0.2.1;host=x.boxes.example.com;proto=https"
        "\r\nX-Forwarded-For: 203.0.113.51\r\n\r\n" % (path, key)).encode())
    check_in("\r\nX-Forwarded-Host: x.boxes.example.com\r\n", seen,
             "host from Forwarded")
    check_in("\r\nX-Forwarded-Proto: https\r\n", seen, "proto from Forwarded")
    check("Forwarded: " not in seen.replace("X-Forwarded-", ""),
          "Forwarded is not passed on")
    seen = raw_exchange(STRANGER, s.port, (
        "GET %s HTTP/1.1\r\nHost: localhost:7000\r\nAuthorization: Bearer %s"
        "\r\nX-Forwarded-For: 203.0.113.52\r\n"
        "X-Forwarded-Host: sandbox.example.com\r\n"
        "X-Forwarded-Proto: https\r\nX-Real-IP: 203.0.113.53\r\n"
        "Forwarded: for=203.0.113.54;proto=https\r\n\r\n"
        % (path, key)).encode())
    check_in("\r\nX-Forwarded-For: %s\r\n" % STRANGER, seen,
             "a stranger is the client")
    check_in("\r\nX-Forwarded-Host: localhost:7000\r\n", seen,
             "a stranger's Host")
    check_in("\r\nX-Forwarded-Proto: http\r\n", seen, "no TLS here")
    for lie in ("203.0.113.5", "sandbox.example.com", "https",
                "X-Real-IP"):
        check(lie not in seen, "a stranger's %s is not passed on: %r"
              % (lie, seen[:600]))


main(test)
