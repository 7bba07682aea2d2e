#!/usr/bin/env python3
# Docker inside a box, and what a box cannot reach (boxes.md):
# - docker-compose up of a two-service project with ports: works in a
#   box with no registry (its images built from scratch and a static
#   busybox, inside the box), its service names resolve between its
#   containers, and its published port answers inside the box;
# - the host's engine sees none of it (containers, images), the box has
#   no Docker socket of the host's, and another box sees none of it;
# - a box reaches neither another box, nor a service of the host's
#   listening on every address (through its bridge's gateway), nor the
#   host's Docker Engine.

import http.server
import json
import os
import shutil
import socketserver
import threading

from lib import (box_server, check, check_eq, cleanup, docker, main, ok_result)

COMPOSE = """version: "3"
services:
  web:
    build: ./web
    ports: ["18080:8080"]
  client:
    build: ./client
    depends_on: [web]
"""
WEB = """FROM scratch
COPY busybox /bin/busybox
COPY index.html /www/index.html
CMD ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/www"]
"""
CLIENT = """FROM scratch
COPY busybox /bin/busybox
CMD ["/bin/busybox", "sh", "-c", "while true; do /bin/busybox wget -q -O- \
http://web:8080/ || echo FAIL; /bin/busybox sleep 1; done"]
"""


def static_busybox():
    for p in ("/bin/busybox", "/usr/bin/busybox"):
        if os.path.exists(p):
            with open(p, "rb") as f:
                if b"GLIBC_" not in f.read(1 << 20):
                    return p
    return shutil.which("busybox")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test():
    s = box_server()
    state = s.state
    b1 = ok_result(s.call("sandbox_start", {"services": []}, timeout=180),
                   "start 1")["id"]
    b2 = ok_result(s.call("sandbox_start", {"services": []}, timeout=180),
                   "start 2")["id"]

    def ex(bid, cmd, **kw):
        a = {"id": bid, "cmd": cmd, "timeoutSec": 300}
        a.update(kw)
        return ok_result(s.call("sandbox_exec", a, timeout=320), cmd[:40])

    # The project, in /work/proj of box 1 (the busybox by the test's
    # hand: boxes get files through sandbox_sync, not here yet).
    bb = static_busybox()
    check(bb is not None, "a static busybox on the host")
    files = {"docker-compose.yml": COMPOSE, "web/Dockerfile": WEB,
             "web/index.html": "hello from web\n",
             "client/Dockerfile": CLIENT}
    script = "mkdir -p proj/web proj/client\n"
    for name, text in files.items():
        script += "cat > proj/%s <<'EOF'\n%sEOF\n" % (name, text)
    out = ex(b1, script)
    check_eq(out["exitCode"], 0, "the project written: %r" % out)
    for d in ("web", "client"):
        docker("cp", bb, "smcp-%s:/work/proj/%s/busybox" % (b1, d))

    out = ex(b1, "cd proj && docker-compose up -d 2>&1 | tail -5")
    check_eq(out["exitCode"], 0, "docker-compose up: %r" % out)
    out = ex(b1, "for i in $(seq 100); do curl -sf localhost:18080 &&"
             " break; sleep 0.2; done")
    check_eq(out["stdout"], "hello from web\n",
             "the published port answers in the box: %r" % out)
    out = ex(b1, "sleep 2; docker ps --format '{{.Names}}' | sort;"
             " docker logs proj_client_1 2>&1 | grep -c 'hello from web'")
    lines = out["stdout"].split()
    check_eq(lines[:2], ["proj_client_1", "proj_web_1"],
             "two containers in the box: %r" % out)
    check(int(lines[2]) >= 1, "the client reached web by its name: %r"
          % out)

    # The host's engine sees none of it; the box has no socket of it.
    host = docker("ps", "-a", "--format", "{{.Names}} {{.Image}}")
    check("proj_" not in host, "no container of the box on the host")
    check("proj_web" not in docker("images", "--format",
                                   "{{.Repository}}"),
          "no image of the box on the host")
    # (podman-docker's /run/docker.sock names a rootful socket that is
    # not there.)
    out = ex(b1, "for p in /var/run/docker.sock /run/docker.sock"
             " /run/podman/podman.sock; do [ -S $p ] && echo $p; done;"
             " grep -c docker.sock /proc/self/mountinfo")
    check_eq(out["stdout"], "0\n",
             "no Docker socket of the host's in the box: %r" % out)
    out = ex(b2, "docker ps -a --format '{{.Names}}'; docker images -q |"
             " wc -l")
    check_eq(out["stdout"].split(), ["0"],
             "the other box sees none of them: %r" % out)

    # What a box cannot reach.
    addr = {}
    for b in (b1, b2):
        info = json.loads(docker("inspect", "smcp-" + b))[0]
        net = list(info["NetworkSettings"]["Networks"].values())[0]
        addr[b] = (net["IPAddress"], net["Gateway"])
    check(addr[b1][0] != addr[b2][0], "two addresses")
    srv = socketserver.TCPServer(("0.0.0.0", 0), Quiet)
    port = srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    cleanup(srv.shutdown)
    probe = ("curl -s -m 3 -o /dev/null -w '%%{http_code}' http://%s:%d/"
             " ; echo")
    out = ex(b1, (probe % ("127.0.0.1", 18080)) + ";" +
             (probe % (addr[b1][1], port)) + ";" +
             (probe % (addr[b2][0], 18080)) + ";" +
             (probe % (addr[b1][1], 2375)))
    codes = out["stdout"].split("\n")[:4]
    check_eq(codes[0], "200", "its own published port answers")
    check_eq(codes[1:], ["000", "000", "000"],
             "nor the host's service through the gateway, nor the other"
             " box, nor a Docker Engine on the gateway: %r" % out)
    out = ex(b2, probe % (addr[b1][0], 18080))
    check_eq(out["stdout"].strip(), "000", "box 2 cannot reach box 1")

    for b in (b1, b2):
        ok_result(s.call("sandbox_stop", {"id": b}, timeout=120), "stop")
    s.close_stdin()
    check_eq(s.wait_exit(30), 0, "the server ends")


if __name__ == "__main__":
    main(test)
