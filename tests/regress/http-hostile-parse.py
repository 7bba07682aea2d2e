#!/usr/bin/env python3
# Hostile HTTP framing: a request with two Host headers (the second naming
# another host) or none (HTTP/1.0 included) gets 400, so the loopback Host
# guard cannot be slipped past; a Content-Length that is signed, not all
# digits, or given twice with different values gets 400 and nothing of
# the body is taken as a request; the chunk-size lines of a chunked body
# count against the body limit, not the header limit, so a body of
# 20,000 one-byte chunks within max-body is served and one over it gets
# 413; and a chunk whose data runs past its size gets 400 without
# bringing the server down.

import json

from lib import Http, Server, check, check_eq, http_json, main

INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18",
                              "capabilities": {},
                              "clientInfo": {"name": "regress",
                                             "version": "1"}}}).encode()


def raw(port, data):
    """Send bytes on a new connection; return (status, headers, body)."""
    c = Http(port)
    c.send_raw(data)
    r = c.response()
    c.close()
    return r


def post_head(extra):
    return (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\n"
            b"Accept: application/json\r\n" + extra + b"\r\n")


def chunked(body, n):
    """body cut into n chunks (the last takes the rest)."""
    size = len(body) // n
    out = []
    for i in range(n):
        piece = body[i * size:(i + 1) * size] if i < n - 1 else \
            body[i * size:]
        out.append(b"%x\r\n%s\r\n" % (len(piece), piece))
    return b"".join(out) + b"0\r\n\r\n"


def test():
    s = Server(config="limit max-body 128K\n", listen="127.0.0.1:0",
               stdio=False)

    # Host: exactly one.
    st, h, b = raw(s.port, b"GET /health HTTP/1.1\r\nHost: localhost\r\n"
                   b"Host: evil.example\r\n\r\n")
    check_eq(st, 400, "two Host headers, the second elsewhere")
    st, h, b = raw(s.port, b"GET /health HTTP/1.1\r\nHost: localhost\r\n"
                   b"Host: localhost\r\n\r\n")
    check_eq(st, 400, "two identical Host headers")
    st, h, b = raw(s.port, post_head(b"Host: evil.example\r\n"
                                     b"Content-Length: %d\r\n" % len(INIT))
                   + INIT)
    check_eq(st, 400, "initialize with a second Host elsewhere")
    check("mcp-session-id" not in h, "no session for it")
    st, h, b = raw(s.port, b"GET /health HTTP/1.0\r\n\r\n")
    check_eq(st, 400, "HTTP/1.0 without Host")
    st, h, b = raw(s.port, b"GET /health HTTP/1.1\r\n\r\n")
    check_eq(st, 400, "HTTP/1.1 without Host")
    st, h, b = raw(s.port, b"GET /health HTTP/1.0\r\nHost: localhost\r\n"
                   b"\r\n")
    check_eq(st, 200, "HTTP/1.0 with Host")

    # Content-Length: digits only, one value.
    n = len(INIT)
    for value, what in [(b"+%d" % n, "signed +"),
                        (b"-1", "negative"),
                        (b"%dx" % n, "trailing letter"),
                        (b"0x%x" % n, "hexadecimal"),
                        (b"%d %d" % (n, n), "two numbers"),
                        (b"%d, %d" % (n, n), "a list")]:
        st, h, b = raw(s.port, post_head(b"Content-Length: " + value +
                                         b"\r\n") + INIT)
        check_eq(st, 400, "Content-Length: %s (%s)" % (value.decode(),
                                                       what))
        check("mcp-session-id" not in h, what + ": no session")
    st, h, b = raw(s.port, post_head(b"Content-Length: %d\r\n"
                                     b"Content-Length: %d\r\n"
                                     % (n, n + 1)) + INIT + b" ")
    check_eq(st, 400, "two different Content-Length values")
    st, h, b = raw(s.port, post_head(b"Content-Length: %d\r\n"
                                     b"Content-Length: %d\r\n"
                                     % (n, n)) + INIT)
    check_eq(st, 200, "the same Content-Length twice")

    # 20,000 one-byte chunks: 120,000 bytes on the wire, within the
    # 128 KiB body limit, far over what the 64 KiB header limit holds.
    body = INIT + b" " * (20000 - len(INIT))
    st, h, b = raw(s.port, post_head(b"Transfer-Encoding: chunked\r\n") +
                   chunked(body, 20000))
    check_eq(st, 200, "20,000 chunks within the body limit")
    check("result" in http_json(b), "initialize answered: %r" % b[:200])
    check("mcp-session-id" in h, "a session for it")
    # 30,000 one-byte chunks: the data (30,000 bytes) is within the limit,
    # the body on the wire (180,000 bytes) is not.
    body = INIT + b" " * (30000 - len(INIT))
    st, h, b = raw(s.port, post_head(b"Transfer-Encoding: chunked\r\n") +
                   chunked(body, 30000))
    check_eq(st, 413, "30,000 chunks over the body limit")
    # The server goes on.
    st, h, b = raw(s.port, b"GET /health HTTP/1.1\r\nHost: localhost\r\n"
                   b"\r\n")
    check_eq(st, 200, "served afterwards")

    # A chunk whose data runs on past its size, in one read: 400, and the
    # server is still there (it used to free a line twice and abort).
    s2 = Server(config="limit max-header 1K\n", listen="127.0.0.1:0",
                stdio=False)
    st, h, b = raw(s2.port, post_head(b"Transfer-Encoding: chunked\r\n") +
                   b"1\r\nX" + b"y" * 5000)
    check_eq(st, 400, "a chunk longer than its size")
    st, h, b = raw(s2.port, b"GET /health HTTP/1.1\r\nHost: localhost\r\n"
                   b"\r\n")
    check_eq(st, 200, "served afterwards")
    check(s2.proc.poll() is None, "the server is running")


main(test)
