#!/usr/bin/env python3
# sandbox-mcp behind Debian's nginx with TLS, configured by the shipped
# contrib/nginx-sandbox-mcp.conf (only its addresses, certificate and log
# paths replaced): a private nginx started by the test with a self-signed
# certificate for sandbox.example.com. A browser-style CORS preflight over
# HTTP/2 from an allowed origin gets 204 and the CORS headers; a real MCP
# session (initialize, tools/list, tools/call) works through it, the
# answers readable by that origin; the public name reaches sandbox-mcp (a
# request naming another host is refused), and a page on the client's
# localhost (http://localhost:5173) gets 403 through the proxy, with the
# refusal logged under the client's address.

import http.client
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import time

from lib import (SRCDIR, Server, check, check_eq, check_in, cleanup, fail,
                 keygen, main, tmpdir)

NAME = "sandbox.example.com"
LISTEN = "127.0.0.77"    # nginx's own loopback address
CLIENT = "127.0.0.9"     # where the "browser" connects from
ALLOWED = "https://console.example.com"


def free_port(addr):
    s = socket.socket()
    s.bind((addr, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def nginx_config(d, upstream, port, cert, key):
    with open(os.path.join(SRCDIR, "contrib", "nginx-sandbox-mcp.conf")) as f:
        site = f.read()
    subs = [
        (r"\nserver \{\n    listen 80;.*?\n\}\n", "\n"),
        (r"server 127\.0\.0\.1:8080;", "server 127.0.0.1:%d;" % upstream),
        (r"listen 443 ssl http2;", "listen %s:%d ssl http2;" % (LISTEN, port)),
        (r"\n    listen \[::\]:443 ssl http2;", ""),
        (r"/etc/letsencrypt/live/sandbox\.example\.com/fullchain\.pem", cert),
        (r"/etc/letsencrypt/live/sandbox\.example\.com/privkey\.pem", key),
        (r"/var/log/nginx/", d + "/"),
    ]
    for pat, rep in subs:
        site, n = re.subn(pat, lambda m: rep, site, flags=re.S)
        check(n >= 1, "the shipped nginx example has %r" % pat)
    for t in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(d, t), exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write("daemon off;\nuser root;\nworker_processes 1;\n"
                "pid %s/nginx.pid;\nerror_log %s/error.log;\n"
                "events { worker_connections 64; }\n"
                "http {\n  access_log %s/access.log;\n"
                "  client_body_temp_path %s/body;\n"
                "  proxy_temp_path %s/proxy;\n"
                "  fastcgi_temp_path %s/fastcgi;\n"
                "  uwsgi_temp_path %s/uwsgi;\n"
                "  scgi_temp_path %s/scgi;\n%s\n}\n"
                % ((d,) * 8 + (site,)))
    return conf


def test():
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        fail("nginx is not installed (apt-get install nginx)")
    d = tmpdir()
    key, line = keygen("web", "management")
    s = Server(config="%s\ntrusted-proxy 127.0.0.1\npublic-host %s\n"
               "allow-origin %s\n" % (line, NAME, ALLOWED),
               listen="127.0.0.1:0", stdio=False)

    # A self-signed certificate for the public name.
    cert, pkey = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048",
                    "-nodes", "-keyout", pkey, "-out", cert, "-days", "2",
                    "-subj", "/CN=" + NAME, "-addext",
                    "subjectAltName=DNS:" + NAME], check=True,
                   capture_output=True)
    port = free_port(LISTEN)
    conf = nginx_config(d, s.port, port, cert, pkey)
    r = subprocess.run([nginx, "-t", "-c", conf, "-p", d, "-e",
                        d + "/error.log"], capture_output=True, text=True)
    check_eq(r.returncode, 0, "nginx -t: %s" % r.stderr)
    proc = subprocess.Popen([nginx, "-c", conf, "-p", d, "-e",
                             d + "/error.log"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)

    def stop():
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)
    cleanup(stop)
    end = time.time() + 20
    while True:
        try:
            socket.create_connection((LISTEN, port), 1).close()
            break
        except OSError:
            if proc.poll() is not None or time.time() > end:
                fail("nginx did not start: %s" % proc.stderr.read())
            time.sleep(0.05)

    ctx = ssl.create_default_context(cafile=cert)

    def request(method, body=None, headers=None, host=NAME, path="/mcp"):
        c = http.client.HTTPSConnection(NAME, port, timeout=30,
                                        context=ctx,
                                        source_address=(CLIENT, 0))
        c.sock = ctx.wrap_socket(
            socket.create_connection((LISTEN, port), 30, (CLIENT, 0)),
            server_hostname=NAME)
        h = {"Host": host}
        if body is not None:
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
            h["Accept"] = "application/json, text/event-stream"
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        resp = c.getresponse()
        data = resp.read()
        c.close()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, \
            data

    # A browser's preflight, over HTTP/2 as a browser sends it.
    r = subprocess.run([
        "curl", "-sS", "--http2", "-o", "/dev/null", "-D", "-", "-w",
        "version=%{http_version}\n", "--cacert", cert, "--resolve",
        "%s:%d:%s" % (NAME, port, LISTEN), "--interface", CLIENT,
        "-X", "OPTIONS", "-H", "Origin: " + ALLOWED,
        "-H", "Access-Control-Request-Method: POST",
        "-H", "Access-Control-Request-Headers: authorization,content-type,"
        "mcp-protocol-version,mcp-session-id",
        "https://%s:%d/mcp" % (NAME, port)], capture_output=True, text=True,
        timeout=60)
    check_eq(r.returncode, 0, "curl: %s" % r.stderr)
    head = r.stdout.lower()
    check_in("version=2", head, "the preflight went over HTTP/2")
    check(re.search(r"^http/2 204", head, re.M), "preflight 204: %r" % head)
    check_in("access-control-allow-origin: " + ALLOWED, head, "allow-origin")
    check(re.search(r"^access-control-allow-headers:.*authorization.*"
                    r"content-type.*mcp-session-id.*mcp-protocol-version",
                    head, re.M), "allowed headers: %r" % head)
    check_in("access-control-allow-methods: get, post, delete, options",
             head, "allowed methods")
    check_in("access-control-expose-headers: mcp-session-id", head,
             "exposed headers")

    # A real MCP session from that origin, through nginx.
    auth = {"Authorization": "Bearer " + key, "Origin": ALLOWED}
    st, h, b = request("POST", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "browser", "version": "1"}}}, auth)
    check_eq(st, 200, "initialize through nginx (%r)" % b)
    check_eq(h.get("access-control-allow-origin"), ALLOWED,
             "the page may read it")
    sid = h.get("mcp-session-id")
    check(sid, "a session id")
    hdr = dict(auth, **{"Mcp-Session-Id": sid,
                        "MCP-Protocol-Version": "2025-06-18"})
    st, h, b = request("POST", {"jsonrpc": "2.0",
                                "method": "notifications/initialized"}, hdr)
    check_eq(st, 202, "initialized")
    st, h, b = request("POST", {"jsonrpc": "2.0", "id": 2,
                                "method": "tools/list"}, hdr)
    check_eq(st, 200, "tools/list")
    names = [t["name"] for t in json.loads(b)["result"]["tools"]]
    check_in("list_sandboxes", names, "the management tools")
    st, h, b = request("POST", {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "list_sandboxes", "arguments": {}}}, hdr)
    check_eq(st, 200, "tools/call")
    res = json.loads(b)["result"]
    check_eq((res["isError"], res["structuredContent"]["sandboxes"]),
             (False, []), "list_sandboxes through nginx")
    check_eq(h.get("access-control-allow-origin"), ALLOWED, "readable")

    # REST goes through the same file: the same key, the same answer.
    st, h, b = request("GET", None, {"Authorization": "Bearer " + key},
                       path="/v1/sandboxes")
    check_eq((st, json.loads(b)), (200, {"sandboxes": []}),
             "REST through nginx")
    st, h, b = request("GET", None, None, path="/v1/sandboxes")
    check_eq(st, 401, "REST without the key through nginx")

    # The host the client named is what sandbox-mcp checks.
    st, h, b = request("POST", {"jsonrpc": "2.0", "id": 4,
                                "method": "tools/list"}, hdr,
                       host="evil.example")
    check_eq(st, 403, "another name through nginx")
    check_in("evil.example", json.loads(b)["error"]["message"], "named")

    # A page on the client's own localhost is another origin here.
    local = {"Authorization": "Bearer " + key,
             "Origin": "http://localhost:5173"}
    st, h, b = request("POST", {
        "jsonrpc": "2.0", "id": 5, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "page", "version": "1"}}}, local)
    check_eq(st, 403, "http://localhost:5173 through nginx")
    check("access-control-allow-origin" not in h, "nothing to read")
    st, h, b = request("OPTIONS", None, {
        "Origin": "http://localhost:5173",
        "Access-Control-Request-Method": "POST"})
    check_eq(st, 403, "its preflight")
    check("access-control-allow-origin" not in h, "no CORS headers")
    end = time.time() + 10
    want = "refused: Origin \"http://localhost:5173\" peer=127.0.0.1:"
    while want not in s.log() and time.time() < end:
        time.sleep(0.05)
    check_in(want, s.log(), "the refusal is logged")
    check(re.search(re.escape(want) + r"\d+ client=" + re.escape(CLIENT),
                    s.log()), "with the client nginx saw: %r" % s.log())


main(test)
