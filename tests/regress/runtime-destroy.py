#!/usr/bin/env python3
# Destroying a sandbox while commands run in it, with the Docker Engine's
# events missing (as after an Engine restart: here injected by a fake,
# EventlessDocker, a proxy in front of the real Engine that passes every
# request through but holds the event stream open without events). The
# commands end at once, as killed, saying why at the end of their output
# and answering the calls that wait on them; the debug line of each
# gives its final status; and the process's sweep does not find the
# sandbox's sessions again and again ("ending our sessions in it").

import os
import re
import socket
import threading
import time

from lib import (IMAGE, Server, check, check_eq, cleanup, main, ok_result,
                 remove_our_containers, tmpdir)

ENGINE = "/var/run/docker.sock"


class EventlessDocker:
    """A fake in front of the real Engine: GET /events gets a stream
    that never carries an event; every other request (one per
    connection) goes through to the Engine, both ways."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(64)
        self.held = []
        threading.Thread(target=self.serve, daemon=True).start()
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
            threading.Thread(target=self.client, args=(c,),
                             daemon=True).start()

    def client(self, c):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = c.recv(65536)
            if not chunk:
                c.close()
                return
            head += chunk
        if head.startswith(b"GET /") and b"/events" in \
                head.split(b"\r\n", 1)[0]:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json"
                      b"\r\nTransfer-Encoding: chunked\r\n\r\n")
            self.held.append(c)
            return
        e = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        e.connect(ENGINE)
        e.sendall(head)
        threading.Thread(target=self.pump, args=(e, c),
                         daemon=True).start()
        self.pump(c, e)

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            src.close()
            dst.close()


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    proxy = os.path.join(tmpdir(), "docker.sock")
    EventlessDocker(proxy)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots, args=["-v"],
               docker_host="unix://" + proxy)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws},
                           timeout=60), "create")["id"]

    def run(cmd, **kw):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 300}
        args.update(kw)
        return ok_result(s.call("exec_command", args, timeout=60),
                         "exec %r" % cmd)

    a = run("echo a > a.txt; echo a; sleep 100")
    check_eq(a["status"], "running", "automatic command running")
    m = ok_result(s.call("create_workspace_session", {"sandbox_id": sid}),
                  "session")["workspace_session_id"]
    b = run("sleep 100", workspace_session_id=m)
    check_eq(b["status"], "running", "managed command running")
    c = run("sleep 100 & echo c", workspace_session_id=m)
    check_eq(c["status"], "running", "a background sleep holds the output")
    # A call still waiting on a command when the sandbox goes.
    s.send({"jsonrpc": "2.0", "id": 9001, "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {
                "sandbox_id": sid, "cmd": "echo d; sleep 100",
                "yield_time_ms": 120000}}})
    time.sleep(1)

    r = ok_result(s.call("destroy_sandbox", {"sandbox_id": sid},
                         timeout=60), "destroy")
    check_eq(r["state"], "stopped", "destroyed")
    # Answered when the command ended, not at the end of its yield.
    w = s.wait(9001, timeout=60)
    check("result" in w, "the waiting call answered: %r" % w)
    d = w["result"]["structuredContent"]
    check_eq((d["status"], d["exit_code"]), ("error", 137),
             "the waiting command ended as killed")
    check_eq(d["output"], "d\nsandbox-mcp: sandbox %s is being destroyed\n"
             % sid, "its output says why")
    d_id = d["command_session_id"]

    log = s.log()
    for cid in (a["command_session_id"], b["command_session_id"],
                c["command_session_id"], d_id):
        found = re.findall(r"command %s finished status=(\w+) exit=(\d+)"
                           % cid, log)
        check_eq(found, [("error", "137")], "the debug line of %s" % cid)

    # Two rounds of the sweep (every 5 s): the sandbox's sessions are
    # gone with it, so it is not found again.
    time.sleep(11)
    n = s.log().count("sandbox %s was destroyed: ending our sessions"
                      % sid)
    check(n <= 1, "the sweep found the destroyed sandbox's sessions %d"
          " times" % n)


main(test)
