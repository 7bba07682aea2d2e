#!/usr/bin/env python3
# The Docker Engine stops in the middle of a run and comes back: tools
# answer operation_failed with a message naming the socket and the
# reason, the server keeps serving, and calls work again once the Engine
# returns. A private dockerd (its own socket and data root) plays the
# Engine so the machine's own is never disturbed.

import os
import subprocess
import time

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,
                 err_result, main, ok_result, tmpdir)


class Dockerd:
    def __init__(self, root):
        self.root = root
        self.sock = os.path.join(root, "docker.sock")
        self.proc = None
        cleanup(self.stop)

    def start(self):
        self.proc = subprocess.Popen(
            ["dockerd", "--data-root", os.path.join(self.root, "data"),
             "--exec-root", os.path.join(self.root, "exec"),
             "--pidfile", os.path.join(self.root, "docker.pid"),
             "-H", "unix://" + self.sock, "--bridge", "none",
             "--iptables=false", "--ip6tables=false",
             "--storage-driver", "vfs"],
            stdout=open(os.path.join(self.root, "dockerd.log"), "ab"),
            stderr=subprocess.STDOUT)
        end = time.time() + 60
        while time.time() < end:
            r = subprocess.run(["docker", "-H", "unix://" + self.sock,
                                "info"], capture_output=True)
            if r.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError("private dockerd did not start")

    def stop(self):
        """Stop it the way an operator does (SIGTERM) and wait."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)
        self.proc = None


def test():
    d = Dockerd(tmpdir("smcp-dockerd-"))
    d.start()
    # Give the private Engine one image.
    save = subprocess.Popen(["docker", "save", IMAGE],
                            stdout=subprocess.PIPE)
    subprocess.run(["docker", "-H", "unix://" + d.sock, "load"],
                   stdin=save.stdout, capture_output=True, check=True)
    save.wait()

    s = Server(docker_host="unix://" + d.sock)
    s.initialize()
    images = ok_result(s.call("list_docker_images"), "before")["images"]
    check_eq(images, [IMAGE], "the private Engine's images")

    # The Engine goes away.
    d.stop()
    for i in range(3):
        t0 = time.time()
        e = err_result(s.call("list_docker_images"), "operation_failed",
                       "Engine stopped, call %d" % i)
        check_in("cannot reach the Docker Engine at %s: " % d.sock,
                 e["message"], "message names the socket")
        check(e["message"].endswith(("Connection refused",
                                     "No such file or directory")),
              "message gives the reason: %r" % e["message"])
        check(time.time() - t0 < 2, "the failure is prompt")
    check_eq(s.request("ping").get("result"), {}, "still serving")

    # It comes back: the same process recovers without a restart.
    d.start()
    images = ok_result(s.call("list_docker_images"), "after")["images"]
    check_eq(images, [IMAGE], "images after the Engine returned")
    s.close_stdin()
    check_eq(s.wait_exit(), 0, "exit")


main(test)
