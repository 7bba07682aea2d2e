#!/usr/bin/env python3
# Tenants apart on the network, against the real Docker Engine and the
# host's firewall:
# - tenant ta's sandbox serves a port; tenant tb's sandbox cannot connect
#   to it, by address or by name; ta's second sandbox can, by both;
# - no sandbox reaches the host's own listeners through its gateway (the
#   server's HTTP listener on 0.0.0.0, a listener on another address of
#   the host), while the forward route (the host connecting in) still
#   works; a port the operator opens (sandbox-host-port) is reachable;
# - a tenant's network is made with its first sandbox and goes, with its
#   firewall rules, with its last.

import base64
import json
import os
import socket
import subprocess
import threading
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 docker, http_json, http_session, keygen, main, ok_result,
                 remove_our_containers, tmpdir)


class Tenant:
    def __init__(self, port, key):
        self.key = key
        self.conn, self.hdr = http_session(port, key=key)
        self.rid = 10

    def call(self, tool, args, what):
        self.rid += 1
        st, h, b = self.conn.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": self.rid, "method": "tools/call",
            "params": {"name": tool, "arguments": args}}, self.hdr)
        check_eq(st, 200, what + ": status")
        return ok_result(http_json(b)["result"], what)

    def sandbox(self, ws):
        return self.call("create_sandbox", {"image": IMAGE,
                                            "workspace_root": ws},
                         "create")["id"]

    def run(self, sid, cmd):
        return self.call("exec_command", {
            "sandbox_id": sid, "cmd": cmd, "yield_time_ms": 30000},
            "exec %r" % cmd[:40])["output"]


def networks(state):
    """The tenants' networks of a state directory (other servers on the
    host have theirs)."""
    out = docker("network", "ls", "--filter",
                 "label=io.sandbox-mcp.state-dir=" + state, "--format",
                 "{{.Name}}")
    return sorted(out.split())


def chain():
    r = subprocess.run(["iptables", "-w", "10", "-S", "SANDBOX-MCP-INPUT"],
                       capture_output=True, text=True)
    return r.stdout


def host_address():
    """An address of the host other than loopback and the bridges'."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        dev, addr = f[1], f[3].split("/")[0]
        if dev != "lo" and not dev.startswith(("br-", "docker")):
            return addr
    return None


def serve_once(port, text):
    """A host listener on 0.0.0.0:port answering text to each client."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(8)
    cleanup(srv.close)

    def loop():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            try:
                c.sendall(text)
            finally:
                c.close()
    threading.Thread(target=loop, daemon=True).start()


def free_port():
    s = socket.socket()
    s.bind(("0.0.0.0", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    key_a, line_a = keygen("ta", "management", "runtime")
    key_b, line_b = keygen("tb", "management", "runtime")
    opened = free_port()
    serve_once(opened, b"opened-port\n")
    closed = free_port()
    serve_once(closed, b"host-secret\n")
    s = Server(sets=("management", "runtime"), listen="0.0.0.0:0",
               stdio=False,
               config="workspace-root %s\n%s\n%s\nsandbox-host-port %d\n"
               % (roots, line_a, line_b, opened))
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    # A rule of a bridge that is gone (a network removed by hand, or
    # while no server ran) is swept when a network is walled off.
    subprocess.run(["iptables", "-w", "10", "-N", "SANDBOX-MCP-INPUT"],
                   capture_output=True)
    subprocess.run(["iptables", "-w", "10", "-A", "SANDBOX-MCP-INPUT", "-i",
                    "br-0123456789ab", "-j", "DROP"], check=True)
    before = networks(state)
    ta = Tenant(s.port, key_a)
    tb = Tenant(s.port, key_b)
    a1 = ta.sandbox(ws)
    a2 = ta.sandbox(ws)
    b1 = tb.sandbox(ws)
    made = [n for n in networks(state) if n not in before]
    check_eq(len(made), 2, "one network per tenant: %r" % made)
    check(all(n.endswith(("-ta", "-tb")) for n in made), "named by tenant")

    # ta's first sandbox serves a port.
    script = base64.b64encode(b"#!/bin/sh\nprintf 'HTTP/1.1 200 OK\\r\\n"
                              b"Content-Length: 10\\r\\n\\r\\n"
                              b"ta-secret\\n'\n").decode()
    docker("exec", "-d", a1, "sh", "-c",
           "echo %s | base64 -d > /tmp/srv; chmod +x /tmp/srv;"
           " nc -ll -p 8000 -e /tmp/srv" % script)
    info = json.loads(docker("inspect", a1))[0]
    nets = info["NetworkSettings"]["Networks"]
    check_eq(len(nets), 1, "a sandbox is on one network")
    net = list(nets.values())[0]
    addr, gateway = net["IPAddress"], net["Gateway"]
    deadline = time.monotonic() + 10
    got = ""
    while "ta-secret" not in got and time.monotonic() < deadline:
        got = ta.run(a2, "nc -w 2 %s 8000 </dev/null" % addr)
    check_in("ta-secret", got, "ta's second sandbox reaches it by address")
    check_in("ta-secret", ta.run(a2, "nc -w 2 %s 8000 </dev/null" % a1),
             "ta's second sandbox reaches it by name")
    out = tb.run(b1, "nc -w 2 %s 8000 </dev/null; echo end" % addr)
    check("ta-secret" not in out, "tb's sandbox cannot reach ta's by"
          " address: %r" % out)
    out = tb.run(b1, "nc -w 2 %s 8000 </dev/null; echo end" % a1)
    check("ta-secret" not in out, "nor by name: %r" % out)

    # The host's own listeners, through the gateway and another address.
    req = "printf 'GET /health HTTP/1.0\\r\\n\\r\\n' | nc -w 2 %s %d; echo end"
    targets = [(gateway, s.port), (gateway, closed)]
    other = host_address()
    if other is not None:
        targets += [(other, s.port), (other, closed)]
    for sid, who in ((a2, ta), (b1, tb)):
        for host, port in targets:
            out = who.run(sid, req % (host, port))
            check("HTTP/1" not in out and "host-secret" not in out,
                  "a sandbox reaches no host listener (%s:%d): %r"
                  % (host, port, out))
        out = who.run(sid, "nc -w 2 %s %d </dev/null" % (gateway, opened))
        check_in("opened-port", out, "an opened port is reachable")
    # The host connecting in (the forward route) still works.
    st, h, b = Http(s.port).request(
        "GET", "/sandboxes/%s/forward/8000/" % a1, None,
        {"Authorization": "Bearer " + key_a})
    check_in(b"ta-secret", b, "the forward route reaches the sandbox")

    # The last sandbox of a tenant takes its network and rules along.
    bridge_a = "br-" + json.loads(docker("network", "inspect", [
        n for n in made if n.endswith("-ta")][0]))[0]["Id"][:12]
    check_in(bridge_a, chain(), "ta's bridge has its rules")
    check("br-0123456789ab" not in chain(), "a gone bridge's rule is swept")
    # IPv6: a sandbox with raw sockets could speak it to the host's
    # link-local address on the bridge; the bridge has none, drops it,
    # and ip6tables drops what comes in on it too.
    if os.path.exists("/proc/sys/net/ipv6"):
        with open("/proc/sys/net/ipv6/conf/%s/disable_ipv6" % bridge_a) as f:
            check_eq(f.read().strip(), "1", "IPv6 is off on ta's bridge")
        out = subprocess.run(["ip", "-6", "addr", "show", "dev", bridge_a],
                             capture_output=True, text=True).stdout
        check("inet6" not in out, "the host has no IPv6 address on it: %r"
              % out)
        out = subprocess.run(["ip6tables", "-w", "10", "-S",
                              "SANDBOX-MCP-INPUT"], capture_output=True,
                             text=True).stdout
        check_in("-A SANDBOX-MCP-INPUT -i %s -j DROP" % bridge_a, out,
                 "ip6tables drops what comes in on ta's bridge")
    ta.call("destroy_sandbox", {"sandbox_id": a1}, "destroy a1")
    check_eq(len([n for n in networks(state) if n.endswith("-ta")
                  and n in made]), 1, "ta's network stays with a2")
    ta.call("destroy_sandbox", {"sandbox_id": a2}, "destroy a2")
    deadline = time.monotonic() + 10
    while any(n.endswith("-ta") for n in networks(state) if n in made) and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    check(not any(n.endswith("-ta") for n in networks(state) if n in made),
          "ta's network is gone with its last sandbox")
    while bridge_a in chain() and time.monotonic() < deadline:
        time.sleep(0.1)
    check(bridge_a not in chain(), "and its rules")
    check(any(n.endswith("-tb") for n in networks(state) if n in made),
          "tb's stays")
    tb.call("destroy_sandbox", {"sandbox_id": b1}, "destroy b1")


main(test)
