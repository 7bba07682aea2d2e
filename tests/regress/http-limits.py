#!/usr/bin/env python3
# HTTP limits: a 17 MiB body gets 413, 100 KiB of headers 431, slow
# clients time out per phase (header, body, idle keep-alive), and the
# connection cap holds new clients back until one closes (when none may
# be evicted: see http-hostile-slowloris). None of it stalls other
# clients.

import http.client
import json
import socket
import time

from lib import Http, Server, check, check_eq, http_json, http_session, main


def served(port, what):
    c = Http(port, timeout=3)
    st, h, b = c.request("GET", "/health")
    check_eq(st, 200, what)
    c.close()


def test():
    s = Server(config="limit header-timeout 1\nlimit body-timeout 2\n"
               "limit idle-timeout 1\n", listen="127.0.0.1:0", stdio=False)
    c0, hdr = http_session(s.port)

    # 17 MiB body: refused as soon as the head declares it. The body is
    # made before the connection is opened: the head must arrive within
    # the 1 s header timeout even on a loaded machine.
    body = b"[" + b"1," * (17 * 1024 * 1024 // 2) + b"1]"
    c = Http(s.port)
    c.send_raw(("POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                "Content-Type: application/json\r\n"
                "Content-Length: %d\r\n\r\n" % len(body)).encode())
    st, h, b = c.response()
    check_eq(st, 413, "17 MiB body")
    check("16777216" in http_json(b)["error"]["message"], "message")
    served(s.port, "served during a refused upload")
    # A client that sends the whole body before it reads (as
    # http.client, the SDKs and curl do) gets the 413 too: the server
    # reads the refused body out instead of resetting the connection.
    for _ in range(3):
        hc = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
        hc.request("POST", "/mcp", body,
                   {"Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream"})
        r = hc.getresponse()
        check_eq(r.status, 413, "413 read after the whole body was sent")
        check("16777216" in json.loads(r.read())["error"]["message"],
              "its message")
        hc.close()
    # The same with Expect: 100-continue: no 100 is sent, just 413.
    c = Http(s.port)
    c.send_raw(("POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                "Content-Length: %d\r\n\r\n" % len(body)).encode())
    check_eq(c.response()[0], 413, "17 MiB body with Expect")
    # A chunked body growing past the limit.
    c = Http(s.port)
    c.send_raw(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
               b"Content-Type: application/json\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n")
    try:
        for _ in range(18):
            c.send_raw(b"100000\r\n" + b"a" * 0x100000 + b"\r\n")
    except OSError:
        pass
    check_eq(c.response()[0], 413, "chunked body over the limit")

    # 100 KiB of headers.
    c = Http(s.port)
    c.send_raw(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n" +
               b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 1000)
                        for i in range(100)) + b"\r\n")
    check_eq(c.response()[0], 431, "100 KiB of headers")
    served(s.port, "served after 431")

    # A slow head: 408 after the header timeout, others served meanwhile.
    slow = Http(s.port)
    slow.send_raw(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
    t0 = time.time()
    served(s.port, "served while a head trickles in")
    st, h, b = slow.response()
    took = time.time() - t0
    check_eq(st, 408, "slow head")
    check(0.7 < took < 3, "408 after about 1 s, took %.2f" % took)

    # A slow body: 408 after the body timeout.
    slow = Http(s.port)
    slow.send_raw(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n{")
    t0 = time.time()
    st, h, b = slow.response()
    check_eq(st, 408, "slow body")
    check(1.5 < time.time() - t0 < 4, "408 after about 2 s")

    # An idle keep-alive connection is closed after the idle timeout.
    idle = Http(s.port)
    check_eq(idle.request("GET", "/health")[0], 200, "before idling")
    t0 = time.time()
    check(idle.closed(timeout=4), "idle connection closed")
    check(time.time() - t0 < 3, "closed after about 1 s")

    # Garbage instead of HTTP: 400, and the server goes on.
    c = Http(s.port)
    c.send_raw(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n")
    check_eq(c.response()[0], 400, "TLS hello on the plain port")
    served(s.port, "served after garbage")

    # The session opened first still works (on a new connection: the
    # first one has idled out).
    c0 = Http(s.port)
    st, h, b = c0.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 9,
                                           "method": "ping"}, hdr)
    check_eq(st, 200, "first session still served")

    # Connection cap: with 4 open, each having made a request to /mcp (so
    # none may be evicted: with no keys configured that is as good as
    # authenticated), a fifth waits until one closes.
    s2 = Server(config="limit max-connections 4\n", listen="127.0.0.1:0",
                stdio=False)
    held = [Http(s2.port) for _ in range(4)]
    for i, h4 in enumerate(held):
        check_eq(h4.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"}})[0], 200,
            "held %d" % i)
    fifth = socket.create_connection(("127.0.0.1", s2.port), 5)
    fifth.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
    fifth.settimeout(0.5)
    try:
        got = fifth.recv(100)
    except socket.timeout:
        got = None
    check(got is None, "the fifth connection waits: %r" % (got,))
    held[0].close()
    fifth.settimeout(5)
    got = fifth.recv(100)
    check(got.startswith(b"HTTP/1.1 200"), "fifth served after a close: %r"
          % (got,))
    check("not accepting more" in s2.log(), "the cap is logged")

    # Connections reading out a refused body (413 sent) give way to a
    # newcomer: a crowd of them cannot keep the listener shut.
    s3 = Server(config="limit max-connections 4\n", listen="127.0.0.1:0",
                stdio=False)
    lingering = []
    for i in range(4):
        c = Http(s3.port)
        c.send_raw(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                   b"Content-Type: application/json\r\n"
                   b"Content-Length: 100000000\r\n\r\n" + b"x" * 1000)
        check_eq(c.response()[0], 413, "refused body %d" % i)
        c.send_raw(b"x" * 1000)		# still sending: it lingers
        lingering.append(c)
    served(s3.port, "a newcomer is served while 4 connections linger")


main(test)
