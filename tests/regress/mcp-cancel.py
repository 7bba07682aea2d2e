#!/usr/bin/env python3
# notifications/cancelled for a running call, over stdio and HTTP: no
# response is sent for the cancelled request; an exec_command inside its
# yield stops waiting at once; a create_sandbox in progress is rolled back
# (no container, no record, no state directory left). To cancel a create
# at a known step, the Docker Engine is reached through a relay (named as
# such: hold_relay) that holds the containers' start requests until the
# cancel is sent; every request still reaches the real Engine.

import json
import os
import select
import socket
import threading
import time

from lib import (IMAGE, Http, Server, check, check_eq, cleanup,
                 http_session, main, ok_result, our_containers,
                 remove_our_containers, sse_parse, tmpdir)

REAL = "/var/run/docker.sock"


class HoldRelay:
    """A unix socket relaying to the real Engine that holds POST
    /containers/.../start until released."""

    def __init__(self, path):
        self.path = path
        self.seen = threading.Event()
        self.release = threading.Event()
        self.release.set()      # held only when cleared
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(64)
        threading.Thread(target=self.serve, daemon=True).start()
        cleanup(self.close)

    def close(self):
        self.release.set()
        self.sock.close()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.relay, args=(c,),
                             daemon=True).start()

    def relay(self, c):
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = c.recv(65536)
            if not chunk:
                c.close()
                return
            buf += chunk
        line = buf.split(b"\r\n", 1)[0]
        if line.startswith(b"POST /") and b"/start" in line and \
                not self.release.is_set():
            self.seen.set()
            self.release.wait(60)
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.connect(REAL)
        u.sendall(buf)

        def pump(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        t = threading.Thread(target=pump, args=(u, c), daemon=True)
        t.start()
        pump(c, u)
        t.join()
        c.close()
        u.close()


def no_leftovers(s, what):
    """The rollback has removed every container, record and directory."""
    end = time.time() + 60
    while time.time() < end:
        left = our_containers(s.state)
        sb = os.path.join(s.state, "sandboxes")
        dirs = [n for n in os.listdir(sb) if n.startswith("sbox-")] \
            if os.path.isdir(sb) else []
        if not left and not dirs:
            return
        time.sleep(0.2)
    check(False, "%s: left behind containers %r, state %r"
          % (what, left, dirs))


def test():
    d = tmpdir()
    ws = os.path.join(d, "w")
    os.makedirs(ws)
    relay = HoldRelay(os.path.join(d, "hold_relay.sock"))
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % d,
               listen="127.0.0.1:0", docker_host="unix://" + relay.path)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}, timeout=60),
        "create")["id"]

    # stdio, exec_command inside its yield: no answer for it.
    s.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {
                "sandbox_id": sid, "cmd": "sleep 60",
                "yield_time_ms": 25000}}})
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 50}})
    r = s.request("ping")
    check_eq(r.get("result"), {}, "the peer is served after the cancel")
    s.no_message(1.0)
    s.call("destroy_sandbox", {"sandbox_id": sid}, timeout=60)

    # stdio, create_sandbox held at the containers' start.
    relay.release.clear()
    s.send({"jsonrpc": "2.0", "id": 51, "method": "tools/call",
            "params": {"name": "create_sandbox", "arguments": {
                "image": IMAGE, "workspace_root": ws, "count": 2}}})
    check(relay.seen.wait(60), "the create reached the containers' start")
    check_eq(len(our_containers(state)), 2, "two containers made")
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 51, "reason": "test"}})
    s.request("ping")   # the notification is read before the release
    relay.release.set()
    no_leftovers(s, "stdio create cancelled")
    r = s.request("ping")
    check_eq(r.get("result"), {}, "the peer is served after the cancel")
    s.no_message(0.5)

    # HTTP: a create on an event stream, cancelled from another
    # connection; the stream ends with no answer, nothing is left.
    relay.release.clear()
    relay.seen.clear()
    c, hdr = http_session(s.port)
    a = Http(s.port, timeout=60)
    body = json.dumps({"jsonrpc": "2.0", "id": 52, "method": "tools/call",
                       "params": {"name": "create_sandbox", "arguments": {
                           "image": IMAGE, "workspace_root": ws,
                           "count": 2}}}).encode()
    h = dict(hdr, **{"Host": "127.0.0.1",
                     "Content-Type": "application/json",
                     "Accept": "application/json, text/event-stream",
                     "Content-Length": str(len(body))})
    a.send_raw(("POST /mcp HTTP/1.1\r\n" + "".join(
        "%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode() + body)
    check(relay.seen.wait(60), "HTTP create reached the start")
    st, hh = read_head(a)
    check_eq((st, hh.get("content-type")), (200, "text/event-stream"),
             "a held create becomes a stream")
    st, _, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 52}}, hdr)
    check_eq(st, 202, "cancel accepted")
    relay.release.set()
    ev = sse_parse(a.sse_body(hh))
    check_eq([e for e in ev if e.get("data")], [],
             "no answer on the cancelled stream")
    no_leftovers(s, "HTTP create cancelled")

    # HTTP, exec_command: the stream of a call inside a 25 s yield ends
    # at once on the cancel, with no answer.
    sid = ok_result(s.call("create_sandbox", {
        "image": IMAGE, "workspace_root": ws}, timeout=60),
        "create")["id"]
    body = json.dumps({"jsonrpc": "2.0", "id": 53, "method": "tools/call",
                       "params": {"name": "exec_command", "arguments": {
                           "sandbox_id": sid, "cmd": "sleep 60",
                           "yield_time_ms": 25000}}}).encode()
    h["Content-Length"] = str(len(body))
    a.send_raw(("POST /mcp HTTP/1.1\r\n" + "".join(
        "%s: %s\r\n" % kv for kv in h.items()) + "\r\n").encode() + body)
    st, hh = read_head(a)
    check_eq(hh.get("content-type"), "text/event-stream", "exec stream")
    t0 = time.time()
    st, _, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 53}}, hdr)
    ev = sse_parse(a.sse_body(hh))
    check(time.time() - t0 < 10, "the yield ended at the cancel: %.1f s"
          % (time.time() - t0))
    check_eq([e for e in ev if e.get("data")], [], "no exec answer")

    # Same as plain JSON (a client that takes no streams): 202, no body.
    p = Http(s.port, timeout=60)
    h2 = dict(h, Accept="application/json")
    p.send_raw(("POST /mcp HTTP/1.1\r\n" + "".join(
        "%s: %s\r\n" % kv for kv in h2.items()) + "\r\n").encode() + body)
    # The two connections are not ordered: cancel until the server has
    # had the call (a cancel of an unknown request does nothing).
    t0 = time.time()
    while time.time() - t0 < 20:
        c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 53}}, hdr)
        r, _, _ = select.select([p.sock], [], [], 0.5)
        if r:
            break
    st, hh, b = p.response()
    check_eq((st, b), (202, b""), "a cancelled JSON request: no answer")
    check(time.time() - t0 < 10, "answered at the cancel")
    s.call("destroy_sandbox", {"sandbox_id": sid}, timeout=60)


def read_head(c):
    while b"\r\n\r\n" not in c.buf:
        c._fill()
    head, c.buf = c.buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    return int(lines[0].split(" ")[1]), headers


main(test)
