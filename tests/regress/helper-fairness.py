#!/usr/bin/env python3
# One tenant cannot hold every helper: with two helper slots and one per
# tenant, alice's flood of long sessionless edits leaves a slot to bob,
# whose one-line write is answered while alice's edits still wait.

import os
import threading
import time

from lib import (IMAGE, Server, check, check_eq, cleanup, http_json,
                 http_session, keygen, main, ok_result,
                 remove_our_containers, tmpdir)


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    # A 4 MiB text: 100 replace_all edits rewrite it 100 times each.
    with open(os.path.join(ws, "big.txt"), "w") as f:
        f.write(("ab" * 63 + "\n") * 32000)
    ka, la = keygen("alice", "management", "runtime")
    kb, lb = keygen("bob", "management", "runtime")
    s = Server(sets=("management", "runtime"), listen="127.0.0.1:0",
               stdio=False, config="workspace-root %s\n%s\n%s\n"
               "limit helper-processes 2\nlimit helper-per-tenant 1\n"
               % (roots, la, lb))
    state = s.state
    cleanup(lambda: remove_our_containers(state))

    def client(key):
        c, hdr = http_session(s.port, key=key)

        def call(name, args, rid=7):
            st, _, body = c.request("POST", "/mcp", {
                "jsonrpc": "2.0", "id": rid, "method": "tools/call",
                "params": {"name": name, "arguments": args}}, hdr)
            check_eq(st, 200, name)
            return http_json(body)["result"]
        return call

    alice = client(ka)
    bob = client(kb)
    sa = ok_result(alice("create_sandbox", {"image": IMAGE,
                                            "workspace_root": ws}),
                   "alice's sandbox")["id"]
    sb = ok_result(bob("create_sandbox", {"image": IMAGE,
                                          "workspace_root": ws}),
                   "bob's sandbox")["id"]
    edits = [{"old_string": "a", "new_string": "c", "replace_all": True},
             {"old_string": "c", "new_string": "a", "replace_all": True}]
    edits = (edits * 50)[:99] + [{"old_string": "b\n", "new_string":
                                  "d\n", "replace_all": True}]

    # Alice: eight long edits at once, each on a connection of its own.
    done = []

    def flood(i):
        call = client(ka)
        r = call("file_edit", {"sandbox_id": sa, "path": "big.txt",
                               "edits": edits}, rid=100 + i)
        done.append((time.time(), r))
    threads = [threading.Thread(target=flood, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.5)         # alice's edits hold her slot and queue
    t0 = time.time()
    r = ok_result(bob("file_write", {"sandbox_id": sb, "path": "b.txt",
                                     "content": "hello\n"}), "bob's write")
    took = time.time() - t0
    waiting = 8 - len(done)
    for t in threads:
        t.join(300)
    print("bob's write: %.2f s, alice's edits left: %d" % (took, waiting))
    check(took < 2, "bob's write took %.1f s behind alice's edits" % took)
    check(waiting > 0, "alice's edits were still going when bob's write"
          " was answered (%d left)" % waiting)
    for _, r in done:
        check(r["isError"] is False or r["structuredContent"]["error"][
            "kind"] == "invalid_request", "alice's edit: %r" %
            r["structuredContent"])


if __name__ == "__main__":
    main(test)
