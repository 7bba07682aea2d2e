#!/usr/bin/env python3
# Descriptors: a server started with a low soft limit on open files (256,
# far under the hard limit) raises it to the hard limit at start, so 400
# HTTP connections held open at once are all served, where before accept
# failed with "Too many open files" past about 250 and clients waited.
# Commands in sandboxes keep the soft limit the server was started with.

import os
import re
import resource
import socket

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 http_json, main, ok_result, remove_our_containers, tmpdir)


def nofile(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    return None


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    check(hard > 1024, "this machine's hard limit is above 1024: %d" % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        s = Server(sets=("management", "runtime"), stdio=False,
                   listen="127.0.0.1:0", args=("-v",),
                   config="workspace-root %s\n" % roots)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    state = s.state
    cleanup(lambda: remove_our_containers(state))

    check_eq(nofile(s.proc.pid), (hard, hard),
             "the server's open-files limit, soft and hard")
    check(re.search(r"open files limit 256 raised to %d" % hard, s.log()),
          "the raise is logged: " + s.log()[-1000:])

    # 400 connections at once, each with a request answered, all held
    # (from four addresses, each under max-connections-per-address).
    conns = []
    for i in range(400):
        c = Http.__new__(Http)
        c.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.sock.bind(("127.0.0.%d" % (1 + i % 4), 0))
        c.sock.settimeout(10)
        c.sock.connect(("127.0.0.1", s.port))
        c.buf = b""
        cleanup(c.close)
        st, h, b = c.request("GET", "/health")
        check_eq(st, 200, "connection %d of 400" % (i + 1))
        conns.append(c)
    check("Too many open files" not in s.log(), "no accept failures")
    for c in conns:
        c.close()

    # A command sees the limit the server was started with, not the
    # server's raised one.
    c = Http(s.port)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "fds", "version": "1"}}}
    st, h, b = c.request("POST", "/mcp", init)
    hdr = {"Mcp-Session-Id": h["mcp-session-id"],
           "MCP-Protocol-Version": "2025-06-18"}

    def call(name, args):
        st, h, b = c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": name, "arguments": args}}, hdr)
        check_eq(st, 200, name)
        return ok_result(http_json(b)["result"], name)
    sbx = call("create_sandbox", {"image": IMAGE, "workspace_root": ws})
    r = call("exec_command", {"sandbox_id": sbx["id"],
                              "cmd": "ulimit -Sn; ulimit -Hn"})
    check_eq(r["output"], "256\n%d\n" % hard, "a command's limits")


main(test)
