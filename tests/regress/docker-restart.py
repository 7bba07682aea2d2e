#!/usr/bin/env python3
# The Docker Engine stops in the middle of a run and comes back: tools
# answer operation_failed with a message naming the socket and the
# reason, the server keeps serving, and calls work again once the Engine
# returns. A private dockerd (lib.Dockerd) plays the Engine so the
# machine's own is never disturbed.

import time

from lib import (IMAGE, Dockerd, Server, check, check_eq, check_in,
                 err_result, main, ok_result)


def test():
    d = Dockerd(images=[IMAGE])

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
