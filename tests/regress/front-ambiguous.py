#!/usr/bin/env python3
# Requests a gateway in front could read otherwise than we do are
# refused, and a listener without keys lets in no page but those listed:
# - a JSON body with a member given twice, at any depth of the MCP
#   envelope or of the arguments, is invalid on stdio, on /mcp and on
#   /v1 (cJSON would answer the first; a last-wins parser in front
#   would have authorized the second), and nothing runs;
# - two Authorization headers are a 400, on /mcp and /v1, even when
#   both are the same valid key;
# - a listener without keys refuses a page of http://localhost:3000
#   (a local dev server's page in a developer's browser), on /mcp and
#   /v1, unless allow-origin lists it (the server's own origin stays a
#   client's on /mcp, refused to a page that says it is one); with keys
#   a loopback page still may (it must hold a key).

import json
import os
import urllib.parse

from lib import (Http, Server, check, check_eq, check_in, http_json,
                 http_session, keygen, main)


def raw_post(port, path, body, extra=""):
    """POST body (bytes) with the extra header lines; (status, json)."""
    c = Http(port)
    c.send_raw(("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\n"
                "%sContent-Length: %d\r\n\r\n" % (path, extra, len(body)))
               .encode() + body)
    st, h, b = c.response()
    return st, (http_json(b) if b else None)


def test():
    # --- Duplicate members on stdio --------------------------------
    s = Server()
    s.initialize()
    marker = os.path.join(s.dir, "never")
    dups = [
        # The tool's name twice: we would run the first.
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":'
        b'{"name":"list_sandboxes","arguments":{},"name":"destroy_sandbox"}}',
        # The method twice.
        b'{"jsonrpc":"2.0","id":7,"method":"tools/list",'
        b'"method":"tools/call"}',
        # Deep in the arguments.
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":'
        b'{"name":"create_sandbox","arguments":{"image":"a",'
        b'"workspace_root":"' + marker.encode() + b'","image":"b"}}}',
        # In _meta, and inside an array.
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":'
        b'{"_meta":{"k":[{"x":1,"y":2,"x":3}]},"name":"list_sandboxes",'
        b'"arguments":{}}}',
    ]
    for d in dups:
        s.send_raw(d + b"\n")
        m = s.recv()
        check("error" in m and "result" not in m,
              "stdio, duplicate member: refused, got %r" % m)
        check_eq(m["error"]["code"], -32600, "stdio duplicate: code")
        check_in("given twice", m["error"]["message"], "stdio: message")
    # Many members, one repeated far apart (the sorted check).
    many = {"k%05d" % i: i for i in range(5000)}
    text = json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                       "params": {"name": "list_sandboxes",
                                  "arguments": {}, "_meta": many}})
    text = text[:-3] + ', "k00000": 1}}}'
    s.send_raw(text.encode() + b"\n")
    m = s.recv()
    check_eq(m.get("error", {}).get("code"), -32600, "5,000 members, one"
             " repeated")
    check_in('"k00000"', m["error"]["message"], "the name is said")
    # A second JSON document after the message, or anything else, is a
    # second reading of it: refused.
    for tail in (b' {"jsonrpc":"2.0","id":9,"method":"tools/call","params":'
                 b'{"name":"destroy_sandbox","arguments":{}}}', b" garbage",
                 b"[]"):
        s.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"tools/call",'
                   b'"params":{"name":"list_sandboxes","arguments":{}}}' +
                   tail + b"\n")
        m = s.recv()
        check("error" in m and "result" not in m,
              "stdio, something after the message (%r): %r" % (tail, m))
        check_eq(m["error"]["code"], -32700, "a parse error")
    # The same message with distinct names is served.
    r = s.call("list_sandboxes", {})
    check(r.get("isError") is False, "a plain call still served: %r" % r)
    check(not os.path.exists(marker), "nothing was created")

    # --- Over HTTP, with keys --------------------------------------
    key, line = keygen("alice", "management")
    h = Server(config=line + "\n", listen="127.0.0.1:0", stdio=False)
    auth = "Authorization: Bearer %s\r\n" % key
    # A session of 2025-06-18: the tool's name twice, and deep in the
    # arguments; the same call without the repetition is served.
    c, hdr = http_session(h.port, key=key)
    extra = "".join("%s: %s\r\n" % kv for kv in hdr.items())
    for body in (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":'
                 b'{"name":"list_sandboxes","arguments":{},'
                 b'"name":"destroy_sandbox"}}',
                 b'{"jsonrpc":"2.0","id":3,"method":"tools/call",'
                 b'"params":{"name":"list_sandboxes","arguments":'
                 b'{"a":{"b":{"c":1,"c":2}}}}}'):
        st, j = raw_post(h.port, "/mcp", body, extra)
        check_eq(st, 200, "/mcp duplicate: status")
        check_eq(j["error"]["code"], -32600, "/mcp duplicate: code")
        check_in("given twice", j["error"]["message"], "/mcp duplicate")
    st, hh, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_sandboxes", "arguments": {}}}, hdr)
    check("result" in http_json(b), "/mcp plain call")
    # Stateless 2026-07-28: the headers name list_sandboxes, as the
    # first of the two names does.
    meta = (b'"_meta":{"io.modelcontextprotocol/protocolVersion":'
            b'"2026-07-28","io.modelcontextprotocol/clientInfo":'
            b'{"name":"r","version":"1"},'
            b'"io.modelcontextprotocol/clientCapabilities":{}}')
    modern = ("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call"
              "\r\nMcp-Name: list_sandboxes\r\n")
    st, j = raw_post(h.port, "/mcp", b'{"jsonrpc":"2.0","id":4,"method":'
                     b'"tools/call","params":{' + meta + b',"name":'
                     b'"list_sandboxes","arguments":{},"name":'
                     b'"destroy_sandbox"}}', auth + modern)
    check(j is not None and "error" in j and "result" not in j,
          "2026-07-28 duplicate: refused, got %d %r" % (st, j))
    st, j = raw_post(h.port, "/mcp", b'{"jsonrpc":"2.0","id":4,"method":'
                     b'"tools/call","params":{' + meta + b',"name":'
                     b'"list_sandboxes","arguments":{}}}', auth + modern)
    check(j is not None and "result" in j, "2026-07-28 plain: %r" % j)

    # A second document after the message on /mcp.
    st, j = raw_post(h.port, "/mcp", b'{"jsonrpc":"2.0","id":3,"method":'
                     b'"tools/call","params":{"name":"list_sandboxes",'
                     b'"arguments":{}}} {"jsonrpc":"2.0","id":3,"method":'
                     b'"ping"}', extra)
    check(j is not None and "error" in j and "result" not in j,
          "/mcp, a second document: refused, got %d %r" % (st, j))

    # /v1 query values that are JSON: one value whole, no escaped NUL.
    rt = Server(sets=("management", "runtime"), listen="127.0.0.1:0",
                stdio=False)
    for q in ('[{"old_string":"a","new_string":"b"}] [{"old_string":"c",'
              '"new_string":"d"}]',
              '[{"old_string":"a","new_string":"P\\u0000Q"}]',
              '[{"old_string":"a","new_string":"b","old_string":"c"}]'):
        c = Http(rt.port)
        c.send_raw(("PATCH /v1/sandboxes/sbox-000000000000/files?path=q.txt"
                    "&edits=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    "Content-Length: 0\r\n\r\n" % urllib.parse.quote(q))
                   .encode())
        st, hh, b = c.response()
        check_eq(st, 400, "/v1 query edits %r: status" % q)
        check_in("edit", http_json(b)["error"]["message"],
                 "/v1 query edits: the argument is named")

    # /v1: a body with a member twice, at the top and deeper.
    for body in (b'{"image":"a","workspace_root":"/nonexistent",'
                 b'"image":"b"}',
                 b'{"image":"a","labels":{"x":"1","x":"2"}}'):
        st, j = raw_post(h.port, "/v1/sandboxes", body, auth)
        check_eq(st, 400, "/v1 duplicate: status %r" % body)
        check_eq(j["error"]["kind"], "invalid_request", "/v1 kind")
        check_in("given twice", j["error"]["message"], "/v1 message")

    # Two Authorization headers: 400, even the same valid key twice.
    for path, body in (("/mcp", b'{"jsonrpc":"2.0","id":1,"method":'
                        b'"tools/call","params":{"name":"list_sandboxes",'
                        b'"arguments":{}}}'),
                       ("/v1/sandboxes", b"{}")):
        for second in (key, "smcp_other"):
            st, j = raw_post(h.port, path, body, auth +
                             "Authorization: Bearer %s\r\n" % second)
            check_eq(st, 400, "%s, two Authorization headers" % path)
    st, hh, b = Http(h.port).request("GET", "/v1/sandboxes", None, {
        "Authorization": "Bearer " + key})
    check_eq(st, 200, "/v1 with one key")
    # With keys, a loopback page still may (it holds a key).
    st, hh, b = Http(h.port).request("GET", "/v1/sandboxes", None, {
        "Authorization": "Bearer " + key,
        "Origin": "http://localhost:3000"})
    check_eq(st, 200, "a loopback page with a key")

    # --- A listener without keys -----------------------------------
    n = Server(listen="127.0.0.1:0", stdio=False)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "page", "version": "1"}}}
    for origin in ("http://localhost:3000", "http://127.0.0.1:5173",
                   "http://[::1]:8000"):
        st, hh, b = Http(n.port).request("POST", "/mcp", init,
                                         {"Origin": origin})
        check_eq(st, 403, "keyless /mcp, page %s" % origin)
        st, hh, b = Http(n.port).request("GET", "/v1/sandboxes", None,
                                         {"Origin": origin})
        check_eq(st, 403, "keyless /v1, page %s" % origin)
        st, hh, b = Http(n.port).request(
            "OPTIONS", "/mcp", None, {"Origin": origin,
                                      "Access-Control-Request-Method":
                                      "POST"})
        check(st >= 400 and "access-control-allow-origin" not in hh,
              "keyless preflight from %s: %r" % (origin, st))
    # The server's own origin, named by a client (the conformance
    # suite's DNS-rebinding check does so) is served on /mcp; a page of
    # the forward route under it says so and is refused, and /v1 takes
    # no page of its own origin either.
    own = "http://127.0.0.1:%d" % n.port
    st, hh, b = Http(n.port).request("POST", "/mcp", init, {"Origin": own},
                                     host="127.0.0.1:%d" % n.port)
    check_eq(st, 200, "keyless /mcp, a client naming the server's origin")
    st, hh, b = Http(n.port).request("POST", "/mcp", init, {
        "Origin": own, "Sec-Fetch-Site": "same-origin"},
        host="127.0.0.1:%d" % n.port)
    check_eq(st, 403, "keyless /mcp, a page of the server's own origin")
    st, hh, b = Http(n.port).request("GET", "/v1/sandboxes", None,
                                     {"Origin": own},
                                     host="127.0.0.1:%d" % n.port)
    check_eq(st, 403, "keyless /v1, the server's own origin")
    # Only by the name the request itself uses.
    for other in ("http://localhost:%d" % n.port, "http://[::1]:%d" % n.port,
                  "http://LOCALHOST:%d" % n.port):
        st, hh, b = Http(n.port).request("POST", "/mcp", init, {
            "Origin": other}, host="127.0.0.1:%d" % n.port)
        check_eq(st, 403, "keyless /mcp, its port under another name %s"
                 % other)
    # Two Origin headers: a 400, whichever comes first.
    for first, second in ((own, "http://evil.example"),
                          ("http://evil.example", own)):
        c = Http(n.port)
        c.send_raw(("GET /v1/sandboxes HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                    "Origin: %s\r\nOrigin: %s\r\n\r\n"
                    % (n.port, first, second)).encode())
        check_eq(c.response()[0], 400, "two Origin headers (%s first)"
                 % first)
    # No Origin (a program, not a page) is served as before.
    st, hh, b = Http(n.port).request("POST", "/mcp", init)
    check_eq(st, 200, "keyless, no Origin")
    # An origin the operator lists is let in.
    a = Server(config="allow-origin http://localhost:3000\n",
               listen="127.0.0.1:0", stdio=False)
    st, hh, b = Http(a.port).request("GET", "/v1/sandboxes", None,
                                     {"Origin": "http://localhost:3000"})
    check_eq(st, 200, "keyless, a listed origin")
    st, hh, b = Http(a.port).request("GET", "/v1/sandboxes", None,
                                     {"Origin": "http://localhost:3001"})
    check_eq(st, 403, "keyless, another port of the listed origin")


main(test)
