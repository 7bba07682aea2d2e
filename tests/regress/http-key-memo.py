#!/usr/bin/env python3
# A connection's remembered key verdict: on one keep-alive connection,
# each request is judged by the key it carries, whatever the previous
# request carried (another key, a key granting none of the process's
# sets, the accepted key changed in one character or lengthened).

from lib import Http, Server, check, check_eq, http_json, keygen, main


def test():
    key_a, line_a = keygen("alice", "management")
    key_b, line_b = keygen("bob", "management")
    key_c, line_c = keygen("carol", "runtime")
    s = Server(config="%s\n%s\n%s\n" % (line_a, line_b, line_c),
               listen="127.0.0.1:0", stdio=False)
    c = Http(s.port)
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "regress", "version": "1"}}},
        {"Authorization": "Bearer " + key_a})
    check_eq(st, 200, "alice's initialize")
    sid = h["mcp-session-id"]
    n = 1

    def ping(c, key, want, what):
        nonlocal n
        n += 1
        hdr = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
        if key is not None:
            hdr["Authorization"] = "Bearer " + key
        st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": n,
                                              "method": "ping"}, hdr)
        check_eq(st, want, what)
        if want == 200:
            check_eq(http_json(b), {"jsonrpc": "2.0", "id": n,
                                    "result": {}}, what + ": answer")

    # Another valid key keeps the connection: each request is judged by
    # its own key.
    for key, want, what in [
            (key_a, 200, "alice again"),
            (key_b, 404, "bob on alice's session"),
            (key_a, 200, "alice after bob"),
            (key_b, 404, "bob after alice")]:
        ping(c, key, want, what)
    # A key that is not one (alice's changed in its last character, or
    # lengthened), none, or one granting no set of this process is
    # refused, and the connection closed, right after alice's key was
    # accepted on it.
    changed = key_a[:-1] + ("A" if key_a[-1] != "A" else "B")
    for key, want, what in [
            (changed, 401, "alice's key changed in one character"),
            (key_a + "x", 401, "alice's key lengthened"),
            (None, 401, "no key"),
            (key_c, 403, "carol, who has no set of this process")]:
        ping(c, key_a, 200, "alice before: " + what)
        ping(c, key, want, what)
        check(c.closed(), what + ": connection closed")
        c = Http(s.port)
    ping(c, key_a, 200, "alice at the end")
    check("smcp_" not in s.log(), "keys are never logged")


main(test)
