#!/usr/bin/env python3
# Streamable HTTP at /mcp: sessions, 202 for notifications, GET 405,
# DELETE 204, unknown and missing sessions, the protocol version header,
# batches, /health and other paths, and a keep-alive connection reused
# for all of it.

import json

from lib import (Http, Server, check, check_eq, check_in, err_result,
                 http_json, http_session, main, ok_result)


def test():
    s = Server(listen="127.0.0.1:0", stdio=False)
    c, hdr = http_session(s.port)

    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 2,
                                          "method": "tools/list"}, hdr)
    check_eq(st, 200, "tools/list status")
    check_eq(h.get("content-type"), "application/json", "content type")
    tools = http_json(b)["result"]["tools"]
    check_eq(len(tools), 8, "the management set's eight tools")

    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "list_docker_images", "arguments": {}}}, hdr)
    check_eq(st, 200, "tools/call status")
    ok_result(http_json(b)["result"], "list_docker_images over HTTP")

    # An unknown tool is a protocol error, over HTTP too.
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "nope"}}, hdr)
    check_eq((st, http_json(b)["error"]["code"]), (200, -32602),
             "unknown tool")
    check_eq(http_json(b)["error"]["message"], "unknown tool: nope",
             "unknown tool message")

    # Notifications and responses: 202, no body.
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 77}}, hdr)
    check_eq((st, b), (202, b""), "notification")
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 5,
                                          "result": {}}, hdr)
    check_eq((st, b), (202, b""), "response from the client")

    # Protocol errors keep status 200 with a JSON-RPC error.
    st, h, b = c.request("POST", "/mcp", b'{"jsonrpc": ', hdr)
    check_eq((st, http_json(b)["error"]["code"]), (200, -32700),
             "malformed JSON")
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 6,
                                          "method": "nope"}, hdr)
    check_eq(http_json(b)["error"]["code"], -32601, "unknown method")
    # A batch under 2025-06-18 is refused.
    st, h, b = c.request("POST", "/mcp", [{"jsonrpc": "2.0", "id": 7,
                                           "method": "ping"}], hdr)
    check_eq(http_json(b)["error"]["code"], -32600, "batch refused")

    # Methods other than POST and DELETE.
    st, h, b = c.request("GET", "/mcp", None, hdr)
    check_eq(st, 405, "GET /mcp")
    check_eq(h.get("allow"), "POST, DELETE", "Allow header")
    p = Http(s.port)
    st, h, b = p.request("PUT", "/mcp", b"{}", hdr)
    check_eq(st, 405, "PUT /mcp")
    check(p.closed(), "a refused request's unread body closes the"
          " connection")

    # Session header rules.
    nosid = {k: v for k, v in hdr.items() if k != "Mcp-Session-Id"}
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 8,
                                          "method": "ping"}, nosid)
    check_eq(st, 400, "request without a session id")
    check_in("Mcp-Session-Id", http_json(b)["error"]["message"], "message")
    bad = dict(hdr, **{"Mcp-Session-Id": "0" * 32})
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 9,
                                          "method": "ping"}, bad)
    check_eq(st, 404, "unknown session id")
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 10,
                                          "method": "ping"},
                         dict(hdr, **{"MCP-Protocol-Version": "1999-01-01"}))
    check_eq(st, 400, "unsupported MCP-Protocol-Version")
    # Content negotiation (a refused body ends the connection).
    c = Http(s.port)
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 11,
                                          "method": "ping"},
                         dict(hdr, **{"Content-Type": "text/plain"}))
    check_eq(st, 415, "wrong content type")
    c = Http(s.port)
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 12,
                                          "method": "ping"},
                         dict(hdr, **{"Accept": "text/html"}))
    check_eq(st, 406, "client that does not accept JSON")

    # /health needs nothing; other paths are 404.
    c = Http(s.port)
    st, h, b = c.request("GET", "/health")
    check_eq(st, 200, "/health")
    health = http_json(b)
    check_eq(health["status"], "ok", "health status")
    check("version" in health, "health version")
    st, h, b = c.request("GET", "/nothing")
    check_eq(st, 404, "unknown path")
    # HEAD: the length of the body, no body; the connection goes on.
    c.send_raw(b"HEAD /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
    c.sock.settimeout(2)
    head = b""
    while b"\r\n\r\n" not in head:
        head += c.sock.recv(4096)
    check(head.endswith(b"\r\n\r\n"), "no body after a HEAD reply: %r"
          % head[-40:])
    check(b"Content-Length: " in head and b"Content-Length: 0" not in head,
          "HEAD keeps the length")
    st, h, b = c.request("GET", "/health")
    check_eq(st, 200, "the connection goes on after HEAD")

    # DELETE ends the session; it is then unknown.
    st, h, b = c.request("DELETE", "/mcp", None, hdr)
    check_eq(st, 204, "DELETE /mcp")
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 13,
                                          "method": "ping"}, hdr)
    check_eq(st, 404, "deleted session")
    st, h, b = c.request("DELETE", "/mcp", None, hdr)
    check_eq(st, 404, "DELETE of a deleted session")

    # 2025-03-26 allows batches over HTTP.
    c2, hdr2 = http_session(s.port, "2025-03-26")
    st, h, b = c2.request("POST", "/mcp", [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/x"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}], hdr2)
    r = http_json(b)
    check(isinstance(r, list) and len(r) == 2, "batch answer: %r" % (r,))

    # Initialize without a session creates one; a failed initialize does
    # not leave a session behind.
    c3 = Http(s.port)
    st, h, b = c3.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1,
                                           "method": "initialize",
                                           "params": {}})
    check_eq(http_json(b)["error"]["code"], -32602, "initialize without"
             " protocolVersion")
    check("mcp-session-id" not in h, "no session for a failed initialize")
    # HTTP/1.0 without keep-alive closes after the answer.
    c4 = Http(s.port)
    c4.send_raw(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
    st, h, b = c4.response()
    check_eq((st, h.get("connection")), (200, "close"), "HTTP/1.0")
    check(c4.closed(), "HTTP/1.0 connection closed")
    # Pipelined requests are answered in order.
    c5 = Http(s.port)
    c5.send_raw(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"
                b"GET /nothing HTTP/1.1\r\nHost: localhost\r\n\r\n")
    check_eq(c5.response()[0], 200, "first pipelined answer")
    check_eq(c5.response()[0], 404, "second pipelined answer")
    check("Traceback" not in s.log(), "log")


main(test)
