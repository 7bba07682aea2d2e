#!/usr/bin/env python3
# Protocol 2026-07-28 over streamable HTTP, against the real Docker
# Engine: stateless POSTs (no Mcp-Session-Id issued or needed) whose API
# key, grants and tenant are checked on each request; MCP-Protocol-
# Version, Mcp-Method, Mcp-Name and Mcp-Param-Sandbox-Id required and
# matched to the body (blanks around values ignored, names in any case,
# values exactly, Base64 form decoded strictly), else 400 with -32020;
# 400 with -32022 for a version we do not speak, 400 with -32602 for a
# bad _meta, 404 with -32601 for a method we do not have; GET and DELETE
# 405; plain JSON answers. 2025 sessions on the same listener work as
# before, a 2025-03-26 one reading its results in content.

import base64
import json
import os
import time

from lib import (IMAGE, Http, Server, check, check_eq, check_in,
                 http_json, http_session, keygen, main, ok_result,
                 remove_our_containers, tmpdir)

V = "2026-07-28"
VERSIONS = [V, "2025-11-25", "2025-06-18", "2025-03-26"]
META = {"io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientInfo": {"name": "regress",
                                               "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}


class Peer:
    """A stateless-era client with one API key (None: no header)."""

    def __init__(self, port, key):
        self.port = port
        self.key = key
        self.rid = 0

    def post(self, method, params=None, headers=None, meta=META,
             conn=None):
        self.rid += 1
        p = dict(params or {})
        if meta is not None:
            p["_meta"] = meta
        h = {"MCP-Protocol-Version": V, "Mcp-Method": method}
        if method == "tools/call" and "name" in p:
            h["Mcp-Name"] = p["name"]
            sid = p.get("arguments", {}).get("sandbox_id")
            if sid is not None:
                h["Mcp-Param-Sandbox-Id"] = sid
        if self.key is not None:
            h["Authorization"] = "Bearer " + self.key
        for k, v in (headers or {}).items():
            for old in [o for o in h if o.lower() == k.lower()]:
                del h[old]
            h[k] = v
        c = conn or Http(self.port)
        start = time.monotonic()
        st, hd, b = c.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": self.rid, "method": method,
            "params": p}, h)
        took = time.monotonic() - start
        check("mcp-session-id" not in hd, "no Mcp-Session-Id is issued")
        # Plain JSON, unless the answer took over a second: then it
        # became an event stream (keep-alives), as sandbox-mcp(8) says.
        if b and not (took >= 1.0 and hd.get("content-type") ==
                      "text/event-stream"):
            check_eq(hd.get("content-type"), "application/json",
                     method + ": plain JSON (in %.2f s)" % took)
        return st, (http_json(b) if b else None)

    def ok(self, tool, args):
        st, r = self.post("tools/call", {"name": tool, "arguments": args})
        check_eq(st, 200, tool + " status")
        check_eq(r["result"].get("resultType"), "complete", "resultType")
        return ok_result(r["result"], tool)

    def call(self, tool, args):
        st, r = self.post("tools/call", {"name": tool, "arguments": args})
        check_eq(st, 200, tool + " status")
        return r["result"]


def refused(peer, status, code, what, *args, **kw):
    st, r = peer.post(*args, **kw)
    check_eq((st, (r or {}).get("error", {}).get("code")), (status, code),
             what)
    check_eq(r.get("id"), peer.rid, what + ": the id is kept")
    return r["error"]


def test_headers(p):
    inspect = {"name": "inspect_sandbox",
               "arguments": {"sandbox_id": "sbox-none"}}
    # Protocol version header: required, and equal to _meta's.
    refused(p, 400, -32020, "no MCP-Protocol-Version", "tools/list",
            headers={"MCP-Protocol-Version": None}).get("message")
    refused(p, 400, -32020, "MCP-Protocol-Version differs", "tools/list",
            meta=dict(META, **{
                "io.modelcontextprotocol/protocolVersion": "2099-01-01"}))
    e = refused(p, 400, -32022, "unsupported version", "tools/list",
                meta=dict(META, **{
                    "io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
                headers={"MCP-Protocol-Version": "2099-01-01"})
    check_eq(e.get("data"), {"supported": VERSIONS, "requested":
                             "2099-01-01"}, "-32022 data")
    # Mcp-Method: required, exact value, any header-name case.
    e = refused(p, 400, -32020, "no Mcp-Method", "tools/list",
                headers={"Mcp-Method": None})
    check_in("Mcp-Method", e["message"], "names the header")
    refused(p, 400, -32020, "Mcp-Method differs", "tools/list",
            headers={"Mcp-Method": "prompts/list"})
    refused(p, 400, -32020, "Mcp-Method in another case", "tools/list",
            headers={"Mcp-Method": "TOOLS/LIST"})
    st, r = p.post("tools/list", headers={"mcp-method": "tools/list"})
    check_eq(st, 200, "a lowercase header name")
    # Mcp-Name for tools/call; blanks around it are not part of it.
    refused(p, 400, -32020, "no Mcp-Name", "tools/call", inspect,
            headers={"Mcp-Name": None})
    refused(p, 400, -32020, "Mcp-Name differs", "tools/call", inspect,
            headers={"Mcp-Name": "destroy_sandbox"})
    st, r = p.post("tools/call", inspect,
                   headers={"Mcp-Name": "  inspect_sandbox\t"})
    check_eq((st, r["result"]["structuredContent"]["error"]["kind"]),
             (200, "not_found"), "blanks around Mcp-Name")
    enc = "=?base64?" + base64.b64encode(b"inspect_sandbox").decode() + "?="
    st, r = p.post("tools/call", inspect, headers={"Mcp-Name": enc})
    check_eq(st, 200, "Mcp-Name in Base64 form")
    # Mcp-Param-Sandbox-Id mirrors the argument x-mcp-header declares.
    e = refused(p, 400, -32020, "no Mcp-Param-Sandbox-Id", "tools/call",
                inspect, headers={"Mcp-Param-Sandbox-Id": None})
    check_in("Mcp-Param-Sandbox-Id", e["message"], "names the header")
    refused(p, 400, -32020, "Mcp-Param-Sandbox-Id differs", "tools/call",
            inspect, headers={"Mcp-Param-Sandbox-Id": "sbox-other"})
    refused(p, 400, -32020, "Mcp-Param-Sandbox-Id without the argument",
            "tools/call", {"name": "inspect_sandbox", "arguments": {}},
            headers={"Mcp-Param-Sandbox-Id": "sbox-none"})
    good = "=?base64?" + base64.b64encode(b"sbox-none").decode() + "?="
    st, r = p.post("tools/call", inspect,
                   headers={"Mcp-Param-Sandbox-Id": good})
    check_eq(st, 200, "Mcp-Param-Sandbox-Id in Base64 form")
    for bad, what in (("=?base64?SGVsbG8?=", "unpadded Base64"),
                      ("=?base64?SGVs!!!bG8=?=", "not Base64"),
                      ("sbox-n\u00f6ne", "not ASCII")):
        args = {"name": "inspect_sandbox", "arguments": {
            "sandbox_id": "Hello" if "Base64" in what else "sbox-n\u00f6ne"}}
        refused(p, 400, -32020, what, "tools/call", args,
                headers={"Mcp-Param-Sandbox-Id": bad})
    lit = "=?base64?" + base64.b64encode(b"x").decode()
    st, r = p.post("tools/call", {"name": "inspect_sandbox",
                                  "arguments": {"sandbox_id": lit}})
    check_eq(st, 200, "a value without the ?= end is literal")
    # A repeated header is refused.
    c = Http(p.port)
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                       "params": {"_meta": META}}).encode()
    c.send_raw(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/json\r\nAccept: application/json"
                "\r\nAuthorization: Bearer %s\r\nMCP-Protocol-Version: %s\r\n"
                "Mcp-Method: tools/list\r\nMcp-Method: tools/call\r\n"
                "Content-Length: %d\r\n\r\n" % (p.key, V, len(body))
                ).encode() + body)
    st, h, b = c.response()
    check_eq((st, http_json(b)["error"]["code"]), (400, -32020),
             "a repeated Mcp-Method")
    # _meta, methods.
    refused(p, 400, -32602, "no _meta", "tools/list", meta={
        "io.modelcontextprotocol/protocolVersion": V})
    for m in ("ping", "logging/setLevel", "initialize", "resources/list"):
        refused(p, 404, -32601, m, m)
    e = refused(p, 400, -32602, "unknown tool", "tools/call",
                {"name": "make_coffee", "arguments": {}})
    check_eq(e["message"], "unknown tool: make_coffee", "names the tool")
    # GET and DELETE are not part of this era.
    for method in ("GET", "DELETE"):
        st, h, b = Http(p.port).request(method, "/mcp", None, {
            "Authorization": "Bearer " + p.key,
            "MCP-Protocol-Version": V})
        check_eq((st, h.get("allow")), (405, "POST"), method + " /mcp")


def test():
    ws = tmpdir()
    os.makedirs(os.path.join(ws, "project"))
    ka, la = keygen("alice", "management", "runtime")
    kb, lb = keygen("bob", "management")
    kc, lc = keygen("carol", "observability")
    conf = "workspace-root %s\n%s\n%s\n%s\n" % (ws, la, lb, lc)
    s = Server(sets=("management", "runtime"), config=conf,
               listen="127.0.0.1:0", stdio=False)
    a, b = Peer(s.port, ka), Peer(s.port, kb)

    # The key is checked on every request; there is no session to lean on.
    st, r = Peer(s.port, None).post("tools/list")
    check_eq(st, 401, "no key")
    st, r = Peer(s.port, "smcp_" + "A" * 43).post("tools/list")
    check_eq(st, 401, "a wrong key")
    st, r = Peer(s.port, kc).post("tools/list")
    check_eq(st, 403, "a key granting none of the server's sets")

    # Grants: each key sees its own sets; the list is private to it.
    st, r = a.post("tools/list")
    check_eq(st, 200, "alice tools/list")
    check_eq(r["result"]["cacheScope"], "private", "with keys: private")
    check_eq(len(r["result"]["tools"]), 18, "alice: both sets")
    st, r = b.post("tools/list")
    names = [t["name"] for t in r["result"]["tools"]]
    check_eq(len(names), 8, "bob: the management set only")
    st, r = b.post("tools/call", {"name": "exec_command", "arguments": {
        "sandbox_id": "sbox-x", "cmd": "true"}})
    check_eq((st, r["error"]["code"]), (400, -32602),
             "bob: a tool of an ungranted set is unknown")
    st, r = a.post("server/discover")
    check_eq((st, r["result"]["supportedVersions"]), (200, VERSIONS),
             "server/discover")

    test_headers(a)

    # Tenant: alice's sandbox, made in this era, is hers alone.
    try:
        made = a.ok("create_sandbox", {"image": IMAGE,
                                       "workspace_root": os.path.join(
                                           ws, "project")})
        sid = made["id"]
        check_eq(a.ok("inspect_sandbox", {"sandbox_id": sid})["id"],
                 sid, "alice inspects her sandbox")
        mine = a.call("inspect_sandbox", {"sandbox_id": sid})
        theirs = b.call("inspect_sandbox", {"sandbox_id": sid})
        none = b.call("inspect_sandbox", {"sandbox_id": "sbox-0123456789ab"})
        check(theirs.get("isError") is True and mine.get("isError") is False,
              "bob cannot read alice's sandbox: %r" % theirs)
        check_eq(json.dumps(theirs["structuredContent"]).replace(
            sid, "sbox-0123456789ab"), json.dumps(none["structuredContent"]),
            "alice's sandbox reads to bob as an unknown one")
        check_eq(b.ok("list_sandboxes", {})["sandboxes"], [],
                 "bob lists none")
        a.ok("destroy_sandbox", {"sandbox_id": sid})
    finally:
        remove_our_containers(s.state)

    # The 2025 era on the same listener, as before.
    c, hdr = http_session(s.port, key=ka)
    st, h, body = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/list"}, hdr)
    check("x-mcp-header" not in body.decode(), "2025 list unchanged")
    c, hdr = http_session(s.port, version="2025-03-26", key=ka)
    st, h, body = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "list_sandboxes", "arguments": {}}}, hdr)
    res = http_json(body)["result"]
    check_eq(len(res["content"]), 1, "2025-03-26: one content item")
    check_eq(json.loads(res["content"][0]["text"]), res["structuredContent"],
             "2025-03-26: content holds the result")


main(test)
