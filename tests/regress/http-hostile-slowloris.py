#!/usr/bin/env python3
# Slowloris: 1,100 connections from 127.0.0.2 that each send one byte and
# then nothing do not hold up a legitimate client on 127.0.0.1: /health
# and an authenticated tools/list are answered within 1 s. What holds:
# a cap on connections per client address (max-connections-per-address;
# the newcomer over it gets 503 naming the limit); when max-connections
# is reached, the newcomer evicts the oldest idle connection that has not
# authenticated (a key-holder's idle keep-alive connection is kept); the
# request head has a short deadline (header-timeout, 5 s by default);
# and behind a trusted proxy the forwarded client address is the one
# counted, never the proxy's own.

import json
import socket
import time

from lib import (Http, Server, check, check_eq, check_in, cleanup,
                 http_json, http_session, keygen, main)


def connect_from(source, port, timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    cleanup(s.close)
    return s


def http_on(sock):
    c = Http.__new__(Http)
    c.sock, c.buf = sock, b""
    return c


def is_closed(sock, timeout=5):
    """Whether the server closes sock (EOF or reset) within timeout;
    what it sent first is returned too."""
    sock.settimeout(timeout)
    got = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True, got
            got += chunk
    except socket.timeout:
        return False, got
    except OSError:
        return True, got


def timed(fn):
    t0 = time.time()
    r = fn()
    return r, time.time() - t0


def mcp_body(method, rid=5):
    return {"jsonrpc": "2.0", "id": rid, "method": method}


def test():
    key, line = keygen("alice", "management")
    auth = {"Authorization": "Bearer " + key}

    # 1. The finding: 1,100 one-byte connections from 127.0.0.2.
    s = Server(config=line + "\n", listen="127.0.0.1:0", stdio=False)
    c0, hdr = http_session(s.port, key=key)
    attack = []
    for i in range(1100):
        a = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        cleanup(a.close)
        a.bind(("127.0.0.2", 0))
        a.settimeout(10)
        a.connect(("127.0.0.1", s.port))
        try:
            a.send(b"P")
        except OSError:
            pass        # refused and closed already
        attack.append(a)
    (st, h, b), took = timed(lambda: Http(s.port, timeout=20).request(
        "GET", "/health"))
    check_eq(st, 200, "/health under the slowloris")
    check(took < 1, "/health answered within 1 s under the slowloris:"
          " %.2f s" % took)
    (st, h, b), took = timed(lambda: Http(s.port, timeout=20).request(
        "POST", "/mcp", mcp_body("tools/list"), hdr))
    check_eq(st, 200, "tools/list under the slowloris")
    check_eq(len(http_json(b)["result"]["tools"]), 8, "the tool list")
    check(took < 1, "tools/list answered within 1 s under the slowloris:"
          " %.2f s" % took)
    # The connections over the per-address cap were refused with 503.
    refused = 0
    for a in attack:
        a.setblocking(False)
        try:
            got = a.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            refused += 1
            continue
        if got.startswith(b"HTTP/1.1 503"):
            check_in(b"max-connections-per-address", got, "503 body")
            refused += 1
    check(refused >= 1100 - 128 * 2, "most of the 1,100 were refused: %d"
          % refused)
    # The head deadline: an admitted one-byte connection gets 408 and is
    # closed after header-timeout (5 s by default).
    t0 = time.time()
    late = connect_from("127.0.0.3", s.port)
    late.send(b"G")
    closed, got = is_closed(late, timeout=15)
    took = time.time() - t0
    check(closed and got.startswith(b"HTTP/1.1 408"),
          "a one-byte head gets 408 and is closed: %r" % got[:40])
    check(4 < took < 8, "after the 5 s header deadline: %.2f s" % took)
    for a in attack:
        a.close()

    # 2. The per-address cap, exactly: with 4, a fifth connection from the
    # same address gets 503; the four admitted are still served, and
    # another address is unaffected.
    # (A long head deadline here and below, so that it plays no part.)
    s2 = Server(config="limit max-connections-per-address 4\n"
                "limit header-timeout 60\n", listen="127.0.0.1:0",
                stdio=False)
    four = [connect_from("127.0.0.2", s2.port) for _ in range(4)]
    for f in four:
        f.send(b"GET /he")
    fifth = connect_from("127.0.0.2", s2.port)
    closed, got = is_closed(fifth)
    check(closed, "the fifth connection from 127.0.0.2 is closed")
    check(got.startswith(b"HTTP/1.1 503"), "with 503: %r" % got[:40])
    check_in(b"max-connections-per-address", got, "naming the limit")
    check_eq(Http(s2.port).request("GET", "/health")[0], 200,
             "127.0.0.1 is served")
    for i, f in enumerate(four):
        f.send(b"alth HTTP/1.1\r\nHost: localhost\r\n\r\n")
        check_eq(http_on(f).response()[0], 200, "admitted %d served" % i)
    # A closed connection frees its place.
    four[0].close()
    again = connect_from("127.0.0.2", s2.port)
    check_eq(http_on(again).request("GET", "/health")[0], 200,
             "a new connection once one has closed")

    # 3. The total cap: the newcomer evicts the oldest idle connection
    # that has not authenticated; an authenticated idle one stays.
    s3 = Server(config=line + "\nlimit max-connections 16\n"
                "limit max-connections-per-address 8\n"
                "limit header-timeout 60\n",
                listen="127.0.0.1:0", stdio=False)
    keyed, khdr = http_session(s3.port, key=key)        # authenticated
    anon = Http(s3.port)
    check_eq(anon.request("GET", "/health")[0], 200, "anonymous /health")
    slow = [connect_from("127.0.0.2", s3.port) for _ in range(8)] + \
        [connect_from("127.0.0.4", s3.port) for _ in range(6)]
    for sl in slow:
        sl.send(b"P")
    # 16 open: keyed, anon and the 14 slow ones.
    (st, h, b), took = timed(lambda: Http(s3.port, timeout=20).request(
        "GET", "/health"))
    check_eq(st, 200, "a newcomer at the total cap is served")
    check(took < 1, "at once: %.2f s" % took)
    check(is_closed(anon.sock)[0], "the idle anonymous connection was"
          " evicted first")
    (st, h, b), took = timed(lambda: Http(s3.port, timeout=20).request(
        "GET", "/health"))
    check_eq(st, 200, "a second newcomer is served")
    check(is_closed(slow[0])[0], "then the oldest slow connection")
    check(not is_closed(slow[1], timeout=0.2)[0], "the next slow one stays")
    st, h, b = keyed.request("POST", "/mcp", mcp_body("tools/list"), khdr)
    check_eq(st, 200, "the authenticated idle connection was kept")

    # 4. Behind a trusted proxy the forwarded address counts: the proxy
    # may hold more connections than the cap, a client behind it may not
    # hold more requests than the cap, and X-Forwarded-For from anyone
    # else is not believed.
    s4 = Server(config=line + "\ntrusted-proxy 127.0.0.4\n"
                "limit max-connections-per-address 2\n",
                listen="127.0.0.1:0", stdio=False)
    via = [connect_from("127.0.0.4", s4.port) for _ in range(5)]
    for i, v in enumerate(via):
        st, h, b = http_on(v).request("GET", "/health", None, {
            "X-Forwarded-For": "198.51.100.%d" % i})
        check_eq(st, 200, "proxied connection %d" % i)
    held = []

    def slow_post(sock, xff):
        body = json.dumps(mcp_body("ping")).encode()
        sock.send(("POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                   "Authorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\n"
                   "Accept: application/json\r\n"
                   "X-Forwarded-For: %s\r\n"
                   "Content-Length: %d\r\n\r\n" % (key, xff, len(body)))
                  .encode() + body[:5])
    for i in range(2):
        slow_post(via[i], "203.0.113.7")
        held.append(via[i])
    slow_post(via[2], "203.0.113.7")
    st, h, b = http_on(via[2]).response()
    check_eq(st, 503, "a third request of 203.0.113.7 through the proxy")
    check_in("max-connections-per-address",
             json.dumps(http_json(b)), "naming the limit")
    slow_post(via[3], "192.0.2.1, 203.0.113.7")
    check_eq(http_on(via[3]).response()[0], 503,
             "the address the proxy added counts, not the client's claim")
    slow_post(via[4], "203.0.113.7, 192.0.2.1")
    check(not is_closed(via[4], timeout=0.3)[0],
          "another client behind the proxy is admitted")
    # Direct peers' X-Forwarded-For is ignored.
    d = connect_from("127.0.0.5", s4.port)
    st, h, b = http_on(d).request("GET", "/health", None,
                                  {"X-Forwarded-For": "203.0.113.7"})
    check_eq(st, 200, "a direct peer naming 203.0.113.7 counts as itself")


main(test)
