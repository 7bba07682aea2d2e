#!/usr/bin/env python3
# Twenty boxes at once on this 2-CPU machine (boxes.md): 21 starts sent
# together over stdio (tenant local, plan max: 20 at once) answer 20
# ready boxes and one server_busy naming the cap; each box runs its own
# command; 20 stops at once leave no container, network or disk.

import os

from lib import (box_server, check_eq, docker, main, mounts_under)


def test():
    s = box_server()
    state = s.state

    def all_at_once(base, calls, timeout):
        for i, (tool, args) in enumerate(calls):
            s.send({"jsonrpc": "2.0", "id": base + i, "method":
                    "tools/call", "params": {"name": tool,
                                             "arguments": args}})
        return [s.wait(base + i, timeout)["result"]
                for i in range(len(calls))]

    res = all_at_once(1000, [("sandbox_start", {"services": []})] * 21,
                      600)
    boxes = [r["structuredContent"]["id"] for r in res if not r["isError"]]
    errs = [r["structuredContent"]["error"] for r in res if r["isError"]]
    check_eq(len(boxes), 20, "twenty boxes")
    check_eq([(e["kind"], e["details"].get("limit")) for e in errs],
             [("server_busy", 20)], "the twenty-first refused at the cap")
    check_eq(len(set(boxes)), 20, "twenty ids")
    out = all_at_once(2000, [("sandbox_exec", {"id": b, "cmd":
                                               "echo $BOX_ID; hostname"})
                             for b in boxes], 300)
    check_eq([o["structuredContent"].get("stdout") for o in out],
             ["%s\n%s\n" % (b, b) for b in boxes], "each box its own")
    addrs = set()
    for b in boxes:
        nets = docker("inspect", "-f", "{{range .NetworkSettings.Networks}}"
                      "{{.IPAddress}}{{end}}", "smcp-" + b)
        addrs.add(nets)
    check_eq(len(addrs), 20, "twenty networks' addresses")
    out = all_at_once(3000, [("sandbox_stop", {"id": b}) for b in boxes],
                      600)
    check_eq([o["isError"] for o in out], [False] * 20, "twenty stops")
    check_eq(docker("ps", "-aq", "--filter",
                    "label=io.sandbox-mcp.state-dir=" + state), "",
             "no container left")
    check_eq(docker("network", "ls", "-q", "--filter",
                    "label=io.sandbox-mcp.state-dir=" + state), "",
             "no network left")
    check_eq([p for p in mounts_under(state) if "/boxes/" in p], [],
             "no disk left")
    check_eq([f for f in os.listdir(os.path.join(state, "boxes"))
              if f.endswith(".img")], [], "no image left")
    s.close_stdin()
    check_eq(s.wait_exit(30), 0, "the server ends")


if __name__ == "__main__":
    main(test)
