#!/usr/bin/env python3
# Protocol 2026-07-28 over stdio, beside the 2025 revisions: a request
# whose _meta names a protocol version is served on its own (no
# initialize needed, none consulted), with _meta checked (-32602), the
# version checked (-32022 with data.supported and data.requested),
# server/discover, resultType and serverInfo on every result, caching
# hints on server/discover and tools/list, x-mcp-header on sandbox_id in
# that era's list only, and ping, logging/setLevel and initialize gone
# (-32601). An unknown tool is -32602 naming it in every era. Results:
# a 2025-03-26 session reads the result as one text item of content,
# other revisions keep content empty unless the configuration says
# result-text yes (or --result-text); a bad result-text value is refused
# by name.

import json
import subprocess

from lib import BIN, Server, check, check_eq, check_in, main

VERSIONS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
CLIENT = {"name": "regress", "version": "1"}


def meta(version="2026-07-28", **extra):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientInfo": CLIENT,
         "io.modelcontextprotocol/clientCapabilities": {}}
    m.update(extra)
    return m


def modern(s, method, params=None, **kw):
    p = dict(params or {})
    p["_meta"] = meta(**kw)
    return s.request(method, p)


def error_code(r, want, what):
    check("error" in r, "%s: expected error %d, got %r" % (what, want, r))
    check_eq(r["error"]["code"], want, what)
    check("id" in r and r["id"] is not None, what + ": the id is kept")
    return r["error"]


def server_info(result, what):
    info = result.get("_meta", {}).get("io.modelcontextprotocol/serverInfo")
    check(isinstance(info, dict), what + ": _meta serverInfo: %r" % result)
    check_eq(info.get("name"), "sandbox-mcp", what + ": server name")
    check(isinstance(info.get("version"), str), what + ": server version")


def strip_headers(tools):
    for t in tools:
        for p in t["inputSchema"]["properties"].values():
            p.pop("x-mcp-header", None)
    return tools


def test_modern(s):
    # No initialize: server/discover is served at once.
    r = modern(s, "server/discover")
    check("result" in r, "server/discover: %r" % r)
    d = r["result"]
    check_eq(d.get("resultType"), "complete", "discover resultType")
    check_eq(d.get("supportedVersions"), VERSIONS, "supported versions")
    check_eq(d.get("capabilities"), {"tools": {"listChanged": False}},
             "capabilities")
    check_in("create_sandbox", d.get("instructions", ""), "instructions")
    check_eq(d.get("cacheScope"), "public", "stdio answers are public")
    check(isinstance(d.get("ttlMs"), int) and d["ttlMs"] >= 0, "ttlMs")
    server_info(d, "discover")

    r = modern(s, "tools/list")
    lst = r["result"]
    check_eq(lst.get("resultType"), "complete", "tools/list resultType")
    check_eq(lst.get("cacheScope"), "public", "tools/list cacheScope")
    check(isinstance(lst.get("ttlMs"), int) and lst["ttlMs"] >= 0,
          "tools/list ttlMs")
    server_info(lst, "tools/list")
    declared = {t["name"]: t["inputSchema"]["properties"]["sandbox_id"].get(
        "x-mcp-header") for t in lst["tools"]
        if "sandbox_id" in t["inputSchema"]["properties"]}
    check_eq(declared, {"inspect_sandbox": "Sandbox-Id",
                        "destroy_sandbox": "Sandbox-Id",
                        "squash_layerstacks": "Sandbox-Id",
                        "export_changes": "Sandbox-Id"},
             "x-mcp-header on every sandbox_id")

    r = modern(s, "tools/call", {"name": "list_sandboxes", "arguments": {}})
    res = r["result"]
    check_eq((res.get("resultType"), res.get("isError"), res.get("content")),
             ("complete", False, []), "tools/call result")
    check(isinstance(res["structuredContent"]["sandboxes"], list),
          "structuredContent")
    server_info(res, "tools/call")
    r = modern(s, "tools/call", {"name": "inspect_sandbox",
                                 "arguments": {"sandbox_id": "nope"}})
    check_eq(r["result"]["structuredContent"]["error"]["kind"], "not_found",
             "a tool error is a result")
    e = error_code(modern(s, "tools/call", {"name": "make_coffee"}),
                   -32602, "unknown tool")
    check_eq(e["message"], "unknown tool: make_coffee", "names the tool")

    # _meta is checked before anything else.
    e = error_code(s.request("tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        -32602, "no clientCapabilities")
    check_in("clientCapabilities", e["message"], "names the field")
    error_code(s.request("tools/list", {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": []}}),
        -32602, "clientCapabilities not an object")
    e = error_code(modern(s, "tools/list", **{
        "io.modelcontextprotocol/logLevel": "loud"}), -32602, "bad logLevel")
    check_in("logLevel", e["message"], "names the field")
    check("result" in modern(s, "tools/list", **{
        "io.modelcontextprotocol/logLevel": "warning"}), "a good logLevel")
    for v in ("1900-01-01", "2025-06-18"):
        e = error_code(modern(s, "tools/list", version=v), -32022,
                       "unsupported version " + v)
        check_eq(e.get("data"), {"supported": VERSIONS, "requested": v},
                 "error data for " + v)

    # Gone in this era, and unknown methods.
    for m in ("ping", "logging/setLevel", "initialize", "resources/list"):
        e = error_code(modern(s, m), -32601, m)
        check_in(m, e["message"], "names the method")


def test_legacy_beside(s):
    # The same process then serves a 2025 session as before.
    r = s.request("tools/list")
    error_code(r, -32002, "a 2025 request before initialize")
    s.initialize("2025-06-18")
    legacy = s.request("tools/list")["result"]
    check_eq(sorted(legacy), ["tools"], "the 2025 list has no era fields")
    check("x-mcp-header" not in json.dumps(legacy),
          "the 2025 list keeps the published schemas")
    now = modern(s, "tools/list")["result"]["tools"]
    check_eq(strip_headers(now), legacy["tools"],
             "the lists differ only by x-mcp-header")
    check_eq(s.request("ping").get("result"), {}, "ping in the 2025 era")
    e = error_code(s.request("tools/call", {"name": "make_coffee"}), -32602,
                   "unknown tool in the 2025 era")
    check_eq(e["message"], "unknown tool: make_coffee", "names the tool")
    res = s.call("inspect_sandbox", {"sandbox_id": "nope"})
    check_eq(res["content"], [], "2025-06-18 keeps content empty")
    check("resultType" not in res, "no resultType in the 2025 era")


def text_item(res, what):
    check_eq(len(res["content"]), 1, what + ": one content item")
    item = res["content"][0]
    check_eq(item["type"], "text", what + ": a text item")
    check_eq(json.loads(item["text"]), res["structuredContent"],
             what + ": the text is the structured result")


def test():
    s = Server()
    test_modern(s)
    test_legacy_beside(s)

    old = Server()
    old.initialize("2025-03-26")
    text_item(old.call("inspect_sandbox", {"sandbox_id": "nope"}),
              "2025-03-26 error")
    text_item(old.call("list_sandboxes", {}), "2025-03-26 success")

    t = Server(config="result-text yes\n")
    t.initialize("2025-11-25")
    text_item(t.call("list_sandboxes", {}), "result-text yes, 2025-11-25")
    r = modern(t, "tools/call", {"name": "list_sandboxes"})
    text_item(r["result"], "result-text yes, 2026-07-28")

    # --result-text does the same from the command line, for a host's
    # entry, and overrides "result-text no".
    o = Server(config="result-text no\n", args=("--result-text",))
    o.initialize("2025-11-25")
    text_item(o.call("list_sandboxes", {}), "--result-text, 2025-11-25")

    bad = Server(config="result-text maybe\n")
    check_eq(bad.wait_exit(), 2, "a bad result-text stops the start")
    check_in("result-text must be yes or no: maybe", bad.log(),
             "the error names the directive")
    r = subprocess.run([BIN, "-n", "-f", bad.conf], capture_output=True,
                       text=True)
    check_eq(r.returncode, 1, "-n refuses it")
    check_in(":1: result-text must be yes or no", r.stderr, "file:line")


main(test)
