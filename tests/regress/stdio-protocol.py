#!/usr/bin/env python3
# MCP over stdio: version negotiation, the protocol methods, the tool list
# as published, and each kind of bad message answered with the right
# JSON-RPC error while the session goes on.

from lib import (Server, check, check_eq, check_in, err_result, main,
                 ok_result, VERSIONS)

NOARGS = {"type": "object", "properties": {}, "required": [],
          "additionalProperties": False}
SANDBOX_ID = {"type": "object",
              "properties": {"sandbox_id": {"type": "string"}},
              "required": ["sandbox_id"], "additionalProperties": False}
# The published schemas (descriptions aside), in the published order.
SCHEMAS = {
    "list_docker_images": NOARGS,
    "list_workspace_directories": {
        "type": "object", "properties": {"path": {"type": "string"}},
        "required": [], "additionalProperties": False},
    "create_sandbox": {
        "type": "object",
        "properties": {"image": {"type": "string"},
                       "workspace_root": {"type": "string"},
                       "count": {"type": "integer", "minimum": 1,
                                 "maximum": 32, "default": 1}},
        "required": ["image", "workspace_root"],
        "additionalProperties": False},
    "list_sandboxes": NOARGS,
    "inspect_sandbox": SANDBOX_ID,
    "destroy_sandbox": SANDBOX_ID,
    "squash_layerstacks": SANDBOX_ID,
    "export_changes": {
        "type": "object",
        "properties": {"sandbox_id": {"type": "string"},
                       "dest": {"type": "string"},
                       "format": {"type": "string", "default": "dir"},
                       "include_git_config": {"type": "boolean",
                                              "default": False},
                       "keep_setid": {"type": "boolean", "default": False},
                       "max_bytes": {"type": "integer", "minimum": 1},
                       "max_entries": {"type": "integer", "minimum": 1}},
        "required": ["sandbox_id", "dest"],
        "additionalProperties": False},
}
# readOnly, destructive, idempotent, openWorld.
ANNOTATIONS = {
    "list_docker_images": (True, False, True, False),
    "list_workspace_directories": (True, False, True, False),
    "create_sandbox": (False, False, False, False),
    "list_sandboxes": (True, False, True, False),
    "inspect_sandbox": (True, False, True, False),
    "destroy_sandbox": (False, True, False, False),
    "squash_layerstacks": (False, False, True, False),
    "export_changes": (False, True, True, False),
}


def strip_descriptions(schema):
    out = dict(schema)
    out["properties"] = {k: {kk: vv for kk, vv in v.items()
                             if kk != "description"}
                         for k, v in schema["properties"].items()}
    return out


def test():
    # Each supported version is answered as asked; others get the newest.
    for v in VERSIONS + ["2024-11-05"]:
        s = Server()
        r = s.initialize(v)
        check_eq(r["protocolVersion"], v if v in VERSIONS else "2025-11-25",
                 "negotiated version for " + v)
        check_eq(r["capabilities"], {"tools": {"listChanged": False},
                                     "logging": {}}, "capabilities")
        check_eq(r["serverInfo"]["name"], "sandbox-mcp", "server name")
        check(r["serverInfo"]["version"], "server version")
        check(r["serverInfo"].get("title"), "server title")
        check(len(r.get("instructions", "")) > 40, "instructions")
        s.close_stdin()
        check_eq(s.wait_exit(), 0, "exit status at end of stdin")

    s = Server()
    # Before initialize: ping works, everything else is refused.
    r = s.request("ping")
    check_eq(r.get("result"), {}, "ping before initialize")
    r = s.request("tools/list")
    check_eq(r["error"]["code"], -32002, "tools/list before initialize")
    check_in("not initialized", r["error"]["message"], "message")

    s.initialize()
    r = s.request("ping")
    check_eq(r.get("result"), {}, "ping")

    r = s.request("tools/list", {"cursor": 5})
    check_eq(r.get("error", {}).get("code"), -32602, "a cursor not a string")
    r = s.request("tools/list", {"cursor": "ignored"})
    tools = r["result"]["tools"]
    check_eq([t["name"] for t in tools], list(SCHEMAS),
             "tools in seed order, working ones only")
    for t in tools:
        check_eq(strip_descriptions(t["inputSchema"]), SCHEMAS[t["name"]],
                 "schema of " + t["name"])
        check_eq(list(t["inputSchema"]["properties"]),
                 list(SCHEMAS[t["name"]]["properties"]),
                 "property order of " + t["name"])
        check(t["title"] and t["description"], "title and description")
        a = t["annotations"]
        check_eq((a["readOnlyHint"], a["destructiveHint"],
                  a["idempotentHint"], a["openWorldHint"]),
                 ANNOTATIONS[t["name"]], "annotations of " + t["name"])

    r = s.request("logging/setLevel", {"level": "debug"})
    check_eq(r.get("result"), {}, "logging/setLevel")
    r = s.request("logging/setLevel", {"level": "chatty"})
    check_eq(r["error"]["code"], -32602, "bad log level")

    # Malformed JSON.
    s.send_raw(b'{"jsonrpc": "2.0", "id": 5, "method": \n')
    r = s.recv()
    check_eq(r["error"]["code"], -32700, "malformed JSON")
    check_eq(r["id"], 5, "a parse error answers the id its head shows")
    # Invalid UTF-8.
    s.send_raw(b'{"jsonrpc":"2.0","id":6,"method":"p\xffing"}\n')
    check_eq(s.recv()["error"]["code"], -32700, "invalid UTF-8")
    # JSON values that are not requests.
    for raw, what in [(b'17\n', "a number"), (b'"x"\n', "a string"),
                      (b'{"id": 7, "method": "ping"}\n', "no jsonrpc"),
                      (b'{"jsonrpc":"2.0","id":8}\n', "no method"),
                      (b'{"jsonrpc":"2.0","id":9,"method":5}\n',
                       "method not a string")]:
        s.send_raw(raw)
        check_eq(s.recv()["error"]["code"], -32600, what)
    # A response from the peer is taken silently; so is a notification.
    s.send_raw(b'{"jsonrpc":"2.0","id":99,"result":{}}\n')
    s.send_raw(b'{"jsonrpc":"2.0","method":"notifications/whatever"}\n')
    s.no_message()
    # Unknown method.
    r = s.request("resources/list")
    check_eq(r["error"]["code"], -32601, "unknown method")
    check_in("resources/list", r["error"]["message"], "names the method")
    # Bad params for a protocol method.
    r = s.request("tools/call", {"name": 7})
    check_eq(r["error"]["code"], -32602, "tools/call with a numeric name")
    # An unknown tool is a protocol error naming it; an unknown argument
    # or a wrong type is a tool error, not a JSON-RPC error.
    r = s.request("tools/call", {"name": "make_coffee", "arguments": {}})
    check_eq(r.get("error", {}).get("code"), -32602, "unknown tool")
    check_eq(r["error"]["message"], "unknown tool: make_coffee", "message")
    e = err_result(s.call("list_docker_images", {"all": True}),
                   "invalid_request", "unknown argument")
    check_eq(e["message"],
             "unknown argument for list_docker_images: all", "message")
    check_eq(e["details"], {"argument": "all"}, "details")
    e = err_result(s.call("list_workspace_directories", {"path": 3}),
                   "invalid_request", "wrong type")
    check_eq(e["message"], "path must be a string", "message")
    # Absent arguments mean {}; a null optional argument means absent.
    ok_or_roots = s.call("list_workspace_directories", {"path": None})
    err_result(ok_or_roots, "operation_failed", "no roots configured")
    # The session still works after all of that.
    ok_result(s.call("list_docker_images"), "list after errors")
    s.close_stdin()
    check_eq(s.wait_exit(), 0, "exit status")
    check("Traceback" not in s.log(), "no crash")


main(test)
