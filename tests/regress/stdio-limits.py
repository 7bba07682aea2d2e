#!/usr/bin/env python3
# stdio under bad input: a 20 MiB line is answered with one error and
# skipped without being held in memory, batches are refused outside
# 2025-03-26 and served in it, and end of stdin waits for pending answers.

import json
import os
import time

from lib import Server, check, check_eq, check_in, main


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def test():
    s = Server()
    s.initialize("2025-06-18")
    before = rss_kib(s.proc.pid)

    # A 20 MiB line: one error, then the session goes on.
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + \
        b"a" * (20 * 1024 * 1024) + b'"}}\n'
    s.send_raw(big)
    r = s.recv()
    check_eq(r["error"]["code"], -32600, "oversized line")
    check_in("limit of 16777216 bytes", r["error"]["message"], "message")
    check_eq(r["id"], 1, "answered with the id its head shows")
    r = s.request("ping")
    check_eq(r.get("result"), {}, "ping after the oversized line")

    # A 200 MiB line: still one error, and memory stays bounded by the
    # 16 MiB limit, not by the line.
    chunk = b"c" * (1 << 20)
    s.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"')
    for _ in range(200):
        s.send_raw(chunk)
    s.send_raw(b'"}}\n')
    r = s.recv()
    check_eq(r["error"]["code"], -32600, "200 MiB line")
    check_eq(r["id"], 1, "its id, read before the whole line came")
    # A raw NUL byte before the id, inside brackets: answered at once,
    # and the session goes on (the id scanner never stands still).
    s.send_raw(b'{"jsonrpc":"2.0","params":[\x00 x],"id":7}\n')
    r = s.recv(5)
    check_eq(r["error"]["code"], -32700, "a NUL byte in a broken line")
    check_eq(s.request("ping", timeout=5).get("result"), {},
             "ping after the NUL byte")
    # Not JSON past its id: a parse error that names the id.
    s.send_raw(b'{"jsonrpc":"2.0","id":"late-7","method":"ping",oops}\n')
    r = s.recv()
    check_eq((r["error"]["code"], r["id"]), (-32700, "late-7"),
             "a broken line answers its id")
    check_eq(s.request("ping").get("result"), {}, "ping after 200 MiB")
    grown = rss_kib(s.proc.pid) - before
    check(grown < 48 * 1024, "peak RSS grew by %d KiB: the line was kept"
          % grown)

    # A line just under the limit is parsed (and is a valid ping).
    pad = 16 * 1024 * 1024 - 200
    line = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"' + \
        b"b" * pad + b'"}}\n'
    s.send_raw(line)
    check_eq(s.recv().get("result"), {}, "ping of almost 16 MiB")

    # Batches: refused under 2025-06-18.
    s.send_raw(b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]\n')
    r = s.recv()
    check_eq(r["error"]["code"], -32600, "batch under 2025-06-18")
    check_in("2025-06-18", r["error"]["message"], "names the version")
    s.close_stdin()
    check_eq(s.wait_exit(), 0, "exit")

    # ... and served under 2025-03-26.
    s = Server()
    s.initialize("2025-03-26")
    s.send_raw(b'[{"jsonrpc":"2.0","id":4,"method":"ping"},'
               b'{"jsonrpc":"2.0","method":"notifications/x"},'
               b'{"jsonrpc":"2.0","id":5,"method":"tools/call",'
               b'"params":{"name":"list_docker_images"}}]\n')
    r = s.recv()
    check(isinstance(r, list), "batch answer is an array: %r" % (r,))
    check_eq(sorted(m["id"] for m in r), [4, 5], "one answer per request")
    for m in r:
        if m["id"] == 5:
            # 2025-03-26 reads the result as a text item of content.
            res = m["result"]
            check(res.get("isError") is False, "tool call in a batch: %r"
                  % res)
            check_eq([json.loads(c["text"]) for c in res["content"]],
                     [res["structuredContent"]],
                     "tool call in a batch: content holds the result")
    s.send_raw(b"[]\n")
    check_eq(s.recv()["error"]["code"], -32600, "empty batch")

    # End of stdin while a tool call is pending: it is answered, then
    # the process exits.
    s.send_raw(b'{"jsonrpc":"2.0","id":6,"method":"tools/call",'
               b'"params":{"name":"list_docker_images"}}\n')
    s.close_stdin()
    r = s.recv()
    check_eq(r["id"], 6, "pending call answered after end of stdin")
    check_eq(s.wait_exit(), 0, "exit after end of stdin")

    # A last line with no newline is still read.
    s = Server()
    s.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"ping"}')
    s.close_stdin()
    check_eq(s.recv().get("id"), 7, "unterminated last line")
    check_eq(s.wait_exit(), 0, "exit")

    # stdin from a regular file, stdout to a regular file.
    import subprocess
    from lib import BIN, tmpdir
    d = tmpdir()
    with open(os.path.join(d, "in"), "wb") as f:
        f.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
                b'{"protocolVersion":"2025-06-18"}}\n'
                b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
    with open(os.path.join(d, "in"), "rb") as fin, \
            open(os.path.join(d, "out"), "wb") as fout:
        rc = subprocess.run([BIN, "--set", "management", "-f", "/dev/null",
                             "--state-dir", os.path.join(d, "state")],
                            stdin=fin, stdout=fout, stderr=subprocess.DEVNULL,
                            timeout=20).returncode
    check_eq(rc, 0, "exit with files on stdin and stdout")
    with open(os.path.join(d, "out"), "rb") as f:
        lines = f.read().splitlines()
    check_eq(len(lines), 2, "two answers in the output file")


main(test)
