#!/usr/bin/env python3
# SIGHUP reads the configuration again, with no restart:
# - a key removed stops working on its next request, and its open MCP
#   session and its event stream end at once; a key kept keeps its
#   session; a key added works; a limit changed applies (max-body);
# - a key rotated (same name, new hash) ends what the old one opened,
#   and the new one works;
# - a file with an error is refused whole: the log names the line and
#   why, and the running configuration stays (keys and limits); a FIFO
#   in the file's place is refused without waiting for a writer;
# - what cannot change live (the Docker socket) keeps its value and the
#   log says it takes a restart: sandboxes still work.
# The server is the AddressSanitizer build: the old configuration is
# freed under open connections and calls, and a connection closed under
# a running call must not touch what the call's end freed.

import json
import os
import signal
import time

import lib
from lib import (IMAGE, Http, check, check_eq, check_in, cleanup, fail,
                 http_session, keygen, main, remove_our_containers, Server,
                 tmpdir)


def test():
    lib.BIN = lib.asan_bin()
    key_a, line_a = keygen("alice", "management", "runtime")
    key_b, line_b = keygen("bob", "management")
    key_c, line_c = keygen("carol", "management")
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    root = "workspace-root %s\n" % top
    s = Server(sets=("management", "runtime"), listen="127.0.0.1:0",
               stdio=False, config="%s%s\n%s\nlimit max-body 1M\n" % (
                   root, line_a, line_b))
    state = s.state
    cleanup(lambda: remove_our_containers(state))

    def rewrite(text):
        tmp = s.conf + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.rename(tmp, s.conf)

    def hup(until):
        n = s.log().count(until)
        os.kill(s.proc.pid, signal.SIGHUP)
        end = time.time() + 10
        while time.time() < end:
            if s.log().count(until) > n:
                return
            time.sleep(0.02)
        fail("no %r after SIGHUP: %s" % (until, s.log()[-2000:]))

    def tools_list(conn, hdr, what, status=200):
        st, h, body = conn.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": 2, "method": "tools/list"}, hdr)
        check_eq(st, status, what)
        return body

    # Alice holds a session, and a long call answered as an event stream.
    ca, ha = http_session(s.port, key=key_a)
    st, h, body = ca.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "create_sandbox", "arguments": {
            "image": IMAGE, "workspace_root": ws}}}, ha)
    check_eq(st, 200, "alice's sandbox")
    sid = json.loads(body)["result"]["structuredContent"]["id"]
    stream = Http(s.port)
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "exec_command", "arguments": {
                           "sandbox_id": sid, "cmd": "sleep 60",
                           "yield_time_ms": 60000}}}).encode()
    hdr = "".join("%s: %s\r\n" % kv for kv in ha.items())
    stream.send_raw(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n"
                     "Content-Length: %d\r\n%s\r\n" % (len(body), hdr))
                    .encode() + body)
    while b"\r\n\r\n" not in stream.buf:
        stream._fill()
    check(stream.buf.startswith(b"HTTP/1.1 200") and
          b"text/event-stream" in stream.buf, "alice's call streams: %r"
          % stream.buf[:200])
    check(not stream.closed(0.2), "the stream stays open")
    cb, hb = http_session(s.port, key=key_b)
    tools_list(cb, hb, "bob before")

    # Alice removed, carol added, max-body lowered, the Docker socket
    # changed (listen and state-dir are given on the command line here,
    # which overrides the file).
    rewrite("%s%s\n%s\nlimit max-body 1K\n"
            "docker-host unix:///nonexistent.sock\n"
            % (root, line_b, line_c))
    hup("configuration reloaded")
    check(stream.closed(5), "alice's event stream ended with her key")
    check_in("docker-host changed to unix:///nonexistent.sock: that takes"
             " a restart; still unix:///var/run/docker.sock", s.log(),
             "the log names what did not change")
    ca2 = Http(s.port)
    st, h, body = ca2.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 4, "method": "tools/list"}, ha)
    check_eq(st, 401, "alice's key no longer works")
    tools_list(cb, hb, "bob's session is kept")
    cc, hc = http_session(s.port, key=key_c)
    tools_list(cc, hc, "carol is let in")
    big = Http(s.port)
    st, h, body = big.request("POST", "/mcp", b"{" + b" " * 2000 + b"}",
                              {"Authorization": "Bearer " + key_c})
    check_eq(st, 413, "the new max-body applies")

    # A bad file: refused whole, the running configuration stays.
    rewrite("%s\nbogus-directive x\n" % line_b)
    hup("not reloaded")
    check_in('sandbox-mcp.conf:2: unknown directive "bogus-directive"',
             s.log(), "the line and the reason")
    tools_list(cc, hc, "carol still works")
    big = Http(s.port)
    st, h, body = big.request("POST", "/mcp", b"{" + b" " * 2000 + b"}",
                              {"Authorization": "Bearer " + key_c})
    check_eq(st, 413, "max-body stays 1K")

    # A FIFO in the file's place: refused at once, the loop never waits
    # for a writer.
    os.unlink(s.conf)
    os.mkfifo(s.conf)
    hup("not reloaded")
    check_in("sandbox-mcp.conf: not a file", s.log(), "why")
    tools_list(cc, hc, "carol still works after the FIFO")
    os.unlink(s.conf)

    # Bob's key rotated: his session ends, the new key works.
    key_b2, line_b2 = keygen("bob", "management")
    rewrite("%s%s\n%s\n" % (root, line_b2, line_c))
    hup("configuration reloaded")
    st, h, body = Http(s.port).request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 4, "method": "tools/list"}, hb)
    check_eq(st, 401, "the old key of bob")
    hb2 = dict(hb, Authorization="Bearer " + key_b2)
    st, h, body = Http(s.port).request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 5, "method": "tools/list"}, hb2)
    check_eq(st, 404, "bob's session ended with the key it was opened with")
    cb2, hb3 = http_session(s.port, key=key_b2)
    tools_list(cb2, hb3, "bob's new key")
    tools_list(cc, hc, "carol kept throughout")
    st, h, body = cc.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "list_docker_images", "arguments": {}}}, hc)
    check_eq(json.loads(body)["result"].get("isError"), False,
             "the Docker Engine is still reached")
    check(s.proc.poll() is None, "the server runs on")


main(test)
