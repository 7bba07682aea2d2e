#!/usr/bin/env python3
# A long call kept alive through Debian's nginx: a private nginx (its own
# configuration and directory, stock buffering) with a proxy_read_timeout
# of 3 s in front of sandbox-mcp. A 7 s call asked for as JSON only gets
# nginx's 504 at the timeout; the same call from a client that accepts
# event streams outlives it on SSE keep-alives, its first event passes
# nginx before the call ends (no buffering), and the result arrives.

import json
import os
import socket
import subprocess
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in, cleanup,
                 fail, http_json, http_session, main, ok_result,
                 remove_our_containers, sse_parse, tmpdir)

CONF = """
worker_processes 1;
user root;
error_log %(dir)s/error.log info;
pid %(dir)s/nginx.pid;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %(dir)s/body;
    proxy_temp_path %(dir)s/proxy;
    fastcgi_temp_path %(dir)s/fastcgi;
    uwsgi_temp_path %(dir)s/uwsgi;
    scgi_temp_path %(dir)s/scgi;
    server {
        listen 127.0.0.1:%(port)d;
        location = /mcp {
            proxy_pass http://127.0.0.1:%(upstream)d;
            proxy_http_version 1.1;
            proxy_set_header Host localhost;
            proxy_set_header Connection "";
            proxy_read_timeout 3s;
        }
    }
}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_nginx(upstream):
    d = tmpdir("smcp-nginx-")
    port = free_port()
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(CONF % {"dir": d, "port": port, "upstream": upstream})
    p = subprocess.Popen(["nginx", "-p", d, "-c", conf, "-g",
                          "daemon off;"], stderr=subprocess.PIPE)

    def stop():
        if p.poll() is None:
            p.terminate()
            p.wait(10)
    cleanup(stop)
    end = time.time() + 10
    while time.time() < end:
        if p.poll() is not None:
            fail("nginx exited: %s" % p.stderr.read().decode())
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return port
        except OSError:
            time.sleep(0.05)
    fail("nginx did not start listening")


def exec_call(rid, sid, cmd):
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "exec_command", "arguments": {
                "sandbox_id": sid, "cmd": cmd, "yield_time_ms": 30000}}}


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "w")
    os.makedirs(ws)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\nlimit sse-keepalive 1\n" % roots,
               listen="127.0.0.1:0", stdio=False)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    port = start_nginx(s.port)

    c, hdr = http_session(port)
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, hdr)
    check_eq(st, 200, "create through nginx")
    sid = ok_result(http_json(b)["result"], "create")["id"]

    # As JSON only, the call is cut by nginx's read timeout.
    j = Http(port, timeout=30)
    st, h, b = j.request("POST", "/mcp", exec_call(3, sid, "sleep 7"),
                         dict(hdr, Accept="application/json"))
    check_eq(st, 504, "a JSON-only long call times out in nginx")

    # As an event stream, it outlives the timeout.
    t0 = time.time()
    body = exec_call(4, sid, "sleep 7; echo through")
    e = Http(port, timeout=30)
    data = json.dumps(body).encode()
    hh = dict(hdr, **{"Host": "127.0.0.1",
                      "Content-Type": "application/json",
                      "Accept": "application/json, text/event-stream",
                      "Content-Length": str(len(data))})
    e.send_raw(("POST /mcp HTTP/1.1\r\n" + "".join(
        "%s: %s\r\n" % kv for kv in hh.items()) + "\r\n").encode() + data)
    while b"\r\n\r\n" not in e.buf:
        e._fill()
    head, e.buf = e.buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    rh = dict((k.strip().lower(), v.strip()) for k, v in
              (line.split(":", 1) for line in lines[1:]))
    check_eq((lines[0].split(" ")[1], rh.get("content-type")),
             ("200", "text/event-stream"), "the stream through nginx")
    first = e.sse_body(rh, until=lambda t: "\n\n" in t)
    check(time.time() - t0 < 6, "the first event passed nginx before the"
          " call ended: %.1f s" % (time.time() - t0))
    ev = sse_parse(first + e.sse_body(rh))
    check(time.time() - t0 >= 7, "the call outlived nginx's 3 s timeout")
    res = [x for x in ev if x.get("data")]
    check_eq(len(res), 1, "one result event")
    check_in("through", str(ok_result(json.loads(res[0]["data"])["result"],
                                      "exec through nginx")), "output")
    kas = sum(len(x.get(":", [])) for x in ev)
    check(kas >= 4, "keep-alives passed nginx: %d" % kas)


main(test)
