#!/usr/bin/env python3
# Faults a real Docker Engine does not produce on demand, injected by a
# scripted fake on a unix socket (named as such: fake_docker): a reply cut
# short, garbage, a body that is not JSON, an oversized reply, an error
# status, and silence. Each gets a clear operation_failed answer, and the
# server keeps serving other requests meanwhile, including while a Docker
# call hangs.

import os
import socket
import threading
import time

from lib import (Http, Server, check, check_eq, check_in, cleanup,
                 err_result, http_json, http_session, main, ok_result,
                 tmpdir)


class FakeDocker:
    """Answers each connection with the next scripted reply."""

    def __init__(self, path):
        self.path = path
        self.script = []
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(16)
        self.held = []
        t = threading.Thread(target=self.serve, daemon=True)
        t.start()
        cleanup(self.close)

    def close(self):
        self.sock.close()
        for c in self.held:
            c.close()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            c.settimeout(5)
            try:
                req = c.recv(65536)
            except OSError:
                req = b""
            if req.startswith(b"GET /containers/json"):
                # The server's start-up recovery lists its containers
                # once; it must not take a reply scripted for the test,
                # whenever its connection comes.
                reply = ok_reply(b"[]")
            elif req.startswith(b"GET /events"):
                # Every process follows the Engine's events on a
                # connection of its own: an open stream with no event.
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: "
                          b"application/json\r\nTransfer-Encoding: "
                          b"chunked\r\n\r\n")
                self.held.append(c)
                continue
            else:
                with self.lock:
                    reply = self.script.pop(0) if self.script else None
            if reply is None:          # silence: hold the connection
                self.held.append(c)
                continue
            c.sendall(reply)
            c.shutdown(socket.SHUT_WR)
            time.sleep(0.05)
            c.close()


CALL = b'{"jsonrpc":"2.0","id":2,"method":"tools/call",' \
    b'"params":{"name":"list_docker_images"}}'


def ok_reply(body, ctype="application/json"):
    return (b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d"
            b"\r\n\r\n" % (ctype.encode(), len(body))) + body


def test():
    d = tmpdir()
    sock = os.path.join(d, "fake_docker.sock")
    fake = FakeDocker(sock)
    os.makedirs(os.path.join(d, "ws"))
    s = Server(docker_host="unix://" + sock,
               config="limit docker-timeout 2\nlimit docker-max-reply 4K\n"
               "workspace-root %s\n" % os.path.join(d, "ws"))
    s.initialize()
    prefix = "cannot reach the Docker Engine at %s: " % sock

    cases = [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n[{\"Id\":",
         prefix + "the connection closed before a complete reply"),
        (b"HTTP/1.1 200 OK\r\nContent-Le",
         prefix + "the connection closed before a complete reply"),
        (b"\x00\x01garbage\x02\r\n\r\n", prefix + "malformed reply"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
         prefix + "malformed reply"),
        (ok_reply(b"<html>not json</html>", "text/html"),
         prefix + "the reply is not JSON"),
        (ok_reply(b"[" + b"{}," * 3000 + b"{}]"),
         prefix + "the reply is larger than 4096 bytes"),
        (b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
         b"application/json\r\nContent-Length: 18\r\n\r\n"
         b'{"message":"boom"}',
         "the Docker Engine refused the request (HTTP 500): boom"),
        (ok_reply(b'{"not": "a list"}'),
         "the Docker Engine answered the image list with something other"
         " than a list"),
    ]
    for reply, message in cases:
        fake.script.append(reply)
        e = err_result(s.call("list_docker_images"), "operation_failed",
                       "fault %r" % reply[:30])
        check(e["message"].startswith(message),
              "message %r should start with %r" % (e["message"], message))
        check_eq(s.request("ping").get("result"), {}, "ping after a fault")

    # A reply that is fine works through the same fake.
    fake.script.append(ok_reply(
        b'[{"Id":"sha256:aa","RepoTags":["x:1"]}]'))
    check_eq(ok_result(s.call("list_docker_images"), "good reply")["images"],
             ["x:1"], "images from the fake")

    # Silence: the call waits for the deadline, and meanwhile everything
    # else is answered at once.
    t0 = time.time()
    s.send({"jsonrpc": "2.0", "id": 500, "method": "tools/call",
            "params": {"name": "list_docker_images"}})
    time.sleep(0.2)
    for i in range(5):
        t1 = time.time()
        check_eq(s.request("ping").get("result"), {}, "ping while Docker"
                 " hangs")
        check(time.time() - t1 < 0.2, "ping answered promptly")
    r = s.call("list_workspace_directories")
    ok_result(r, "another tool while Docker hangs")
    r = s.wait(500, timeout=10)
    e = err_result(r["result"], "operation_failed", "silent Engine")
    check_eq(e["message"], prefix + "no complete reply within 2 s",
             "timeout message")
    took = time.time() - t0
    check(1.8 < took < 4, "answered at the deadline, took %.2f" % took)

    # notifications/cancelled for a call waiting on a silent Engine: the
    # call ends early and, on stdio, no answer is sent for it.
    s.send({"jsonrpc": "2.0", "id": 600, "method": "tools/call",
            "params": {"name": "list_docker_images"}})
    time.sleep(0.2)
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 600, "reason": "user gave up"}})
    s.no_message(wait=3)
    check_eq(s.request("ping").get("result"), {}, "ping after a cancel")
    s.close_stdin()
    check_eq(s.wait_exit(), 0, "exit")

    # Over HTTP: a session ended (DELETE) while one of its calls waits on
    # the silent Engine; the waiting client gets its answer at once.
    h = Server(docker_host="unix://" + sock, listen="127.0.0.1:0",
               stdio=False, config="limit docker-timeout 30\n")
    a, hdr = http_session(h.port)
    a.send_raw(("POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                "Content-Type: application/json\r\nMcp-Session-Id: %s\r\n"
                "Content-Length: %d\r\n\r\n" % (
                    hdr["Mcp-Session-Id"], len(CALL))).encode() + CALL)
    time.sleep(0.3)
    b = Http(h.port)
    t0 = time.time()
    check_eq(b.request("DELETE", "/mcp", None, hdr)[0], 204, "DELETE")
    st, _, body = a.response()
    check(time.time() - t0 < 2, "the waiting call is answered promptly")
    e = err_result(http_json(body)["result"], "operation_failed",
                   "call of a deleted session")
    check_in("cancelled", e["message"], "message")
    check_eq(b.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 3,
                                        "method": "ping"}, hdr)[0], 404,
             "the session is gone")


main(test)
