#!/usr/bin/env python3
# The outputSchema of every tool, checked with a real JSON Schema
# validator (python3-jsonschema, Draft 2020-12, MCP's default dialect):
# from 2025-06-18 on (2025-11-25, and the 2026-07-28 era) every tool
# declares one, a valid schema that is the tool's result or the error
# object; 2025-03-26 declares none. Then every one of the 18 tools is
# driven through its success shapes (both create_sandbox shapes, records
# with endpoints, each command status, automatic publishes with changes,
# with none, with dropped paths, with more paths than are listed, with
# dropped output lines, rejected; truncated windows, sessionless and
# session writes and edits, managed sessions shared and isolated,
# published with and without changes, rejected, destroyed; an export of
# the changes in each format, dir, tar and tar-zst, to an export root,
# with a live session named) and its
# failures (invalid_request, not_found, conflict, operation_failed,
# server_busy), and every structuredContent must validate against the
# tool's outputSchema and against the branch its isError names. Mutated
# copies of real results (a required field dropped, a type changed, an
# unknown property added) must be rejected, so a vacuous schema fails.
#
# Needs Debian's python3-jsonschema (4.10 or later, for Draft 2020-12);
# when the python3 running the suite has no jsonschema, the test runs
# itself again under /usr/bin/python3, where that package is.

import copy
import json
import os
import sys


def _jsonschema():
    """The validator; Debian's python3-jsonschema lives in /usr/bin/python3's
    path, which may not be the python3 that runs the suite: re-run there."""
    try:
        import jsonschema
        jsonschema.Draft202012Validator
        return jsonschema
    except (ImportError, AttributeError):
        pass
    alt = "/usr/bin/python3"
    if (not os.environ.get("SMCP_OUTPUT_SCHEMA_REEXEC") and
            os.access(alt, os.X_OK) and
            os.path.realpath(sys.executable) != os.path.realpath(alt)):
        os.environ["SMCP_OUTPUT_SCHEMA_REEXEC"] = "1"
        os.execv(alt, [alt, "-u"] + sys.argv)
    print("FAIL: no jsonschema with Draft202012Validator for %s: apt-get"
          " install python3-jsonschema" % sys.executable, file=sys.stderr)
    sys.exit(1)


jsonschema = _jsonschema()
from jsonschema import Draft202012Validator  # noqa: E402
from jsonschema.exceptions import SchemaError, best_match  # noqa: E402

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,  # noqa
                 err_result, fail, main, ok_result, our_containers,
                 remove_our_containers, tmpdir)


def _version():
    try:
        from importlib.metadata import version
        return version("jsonschema")
    except Exception:  # noqa: BLE001 - only for the log
        return "?"

TOOLS = ["list_docker_images", "list_workspace_directories",
         "create_sandbox", "list_sandboxes", "inspect_sandbox",
         "destroy_sandbox", "squash_layerstacks", "export_changes",
         "exec_command", "write_command_stdin", "read_command_lines",
         "file_read", "file_write", "file_edit", "file_blame",
         "create_workspace_session", "publish_workspace_session",
         "destroy_workspace_session"]
KINDS = ["invalid_request", "not_found", "operation_failed", "conflict",
         "server_busy", "unauthorized", "internal_error"]
# The error object every tool may give instead of its result.
ERROR_SCHEMA = {
    "type": "object",
    "properties": {"error": {
        "type": "object",
        "properties": {"kind": {"enum": KINDS},
                       "message": {"type": "string"},
                       "details": {"type": "object"}},
        "required": ["kind", "message", "details"],
        "additionalProperties": False}},
    "required": ["error"],
    "additionalProperties": False}
TEXT = "".join("line %d\n" % i for i in range(1, 11))
CLIENT = {"name": "regress", "version": "1"}


def modern(s, method, params=None):
    """A request of the 2026-07-28 era (stdio-modern.py)."""
    p = dict(params or {})
    p["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": CLIENT,
                  "io.modelcontextprotocol/clientCapabilities": {}}
    return s.request(method, p)


def where(err):
    """The JSON path of a validation error's instance."""
    out = "$"
    for p in err.absolute_path:
        out += "[%d]" % p if isinstance(p, int) else "." + str(p)
    return out


def describe(err):
    return "at %s: %s" % (where(err), err.message[:300])


def first_error(validator, instance):
    """The most relevant error of an instance, or None."""
    return best_match(validator.iter_errors(instance))


def check_schemas(tools, what):
    """Every tool of the list has a valid 2020-12 outputSchema of the
    declared form; return {name: outputSchema}."""
    check_eq(sorted(t["name"] for t in tools), sorted(TOOLS),
             what + ": the 18 tools")
    out = {}
    for t in tools:
        name = t["name"]
        os_ = t.get("outputSchema")
        check(isinstance(os_, dict), "%s: %s has no outputSchema: %r"
              % (what, name, t))
        for key, schema in (("outputSchema", os_),
                            ("inputSchema", t["inputSchema"])):
            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as e:
                fail("%s: %s %s is not a valid 2020-12 schema: %s"
                     % (what, name, key, describe(e)))
            check(True, "schema checked")
        check_eq(os_.get("type"), "object", "%s: %s type" % (what, name))
        any_ = os_.get("anyOf")
        check(isinstance(any_, list) and len(any_) == 2,
              "%s: %s: anyOf of the result and the error: %r"
              % (what, name, any_))
        check_eq(sorted(os_), ["anyOf", "type"], "%s: %s keys" % (what, name))
        check_eq(any_[1], ERROR_SCHEMA, "%s: %s error branch" % (what, name))
        check(isinstance(any_[0], dict) and any_[0],
              "%s: %s result branch is a non-empty schema" % (what, name))
        out[name] = os_
    return out


class Results:
    """Every tool result seen, validated at the end against the
    outputSchema of its tool."""

    def __init__(self, schemas):
        self.schemas = schemas
        self.whole = {n: Draft202012Validator(s) for n, s in schemas.items()}
        self.ok = {n: Draft202012Validator(s["anyOf"][0])
                   for n, s in schemas.items()}
        self.err = {n: Draft202012Validator(s["anyOf"][1])
                    for n, s in schemas.items()}
        self.seen = []          # (tool, label, result envelope)

    def add(self, tool, label, res):
        self.seen.append((tool, label, res))
        return res

    def mismatches(self):
        bad = []
        for tool, label, res in self.seen:
            sc = res.get("structuredContent")
            if not isinstance(sc, dict):
                bad.append("%s (%s): structuredContent is not an object: %r"
                           % (tool, label, res))
                continue
            branch = self.err if res.get("isError") else self.ok
            for v, which in ((self.whole[tool], "outputSchema"),
                             (branch[tool], "the %s branch" %
                              ("error" if res.get("isError") else
                               "result"))):
                e = first_error(v, sc)
                if e is not None:
                    # The branch's error is the precise one.
                    be = first_error(branch[tool], sc)
                    bad.append("%s (%s) does not match %s: %s; result %s"
                               % (tool, label, which,
                                  describe(be if be is not None else e),
                                  json.dumps(sc)[:600]))
                    break
        return bad

    def rejects(self, tool, sc, what):
        """A mutated result must be rejected by the tool's outputSchema."""
        e = first_error(self.whole[tool], sc)
        check(e is not None, "%s: the outputSchema of %s accepts a mutated"
              " result (%s): %s" % (what, tool, what, json.dumps(sc)[:800]))
        check(Draft202012Validator({}).is_valid(sc), "a vacuous schema"
              " accepts it")

    def accepts(self, tool, sc, what):
        e = first_error(self.whole[tool], sc)
        check(e is None, "%s: %s rejects %s" % (tool, what,
                                                 describe(e) if e else ""))


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    ws2 = os.path.join(roots, "ws2")
    os.makedirs(os.path.join(ws, "src"))
    os.makedirs(os.path.join(ws2, "lib"))
    with open(os.path.join(ws, "src", "a.txt"), "w") as f:
        f.write(TEXT)
    with open(os.path.join(ws, "notes.txt"), "w") as f:
        f.write(TEXT)
    with open(os.path.join(ws2, "lib", "b.txt"), "w") as f:
        f.write("b\n")
    with open(os.path.join(roots, "a-file"), "w") as f:
        f.write("x\n")
    # Where export_changes writes: an export root of its own, apart from
    # the workspace roots.
    exports = tmpdir()
    conf = ("workspace-root %s\n"
            "export-root %s\n"
            "limit sessions-per-sandbox 2\n"
            "limit transcript-max 64K\n"
            "limit list-directories 1\n" % (roots, exports))

    # The lists: 2025-06-18 and 2026-07-28 declare, 2025-03-26 does not.
    # Listening, so that the records carry their endpoint objects.
    s = Server(sets=("management", "runtime"), config=conf,
               listen="127.0.0.1:0")
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize("2025-06-18")
    tools = s.request("tools/list")["result"]["tools"]
    schemas = check_schemas(tools, "2025-06-18")
    r = modern(s, "tools/list")
    check("result" in r, "2026-07-28 tools/list: %r" % r)
    now = check_schemas(r["result"]["tools"], "2026-07-28")
    check_eq(now, schemas, "2026-07-28 declares the same outputSchemas")

    late = Server(sets=("management", "runtime"))
    late.initialize("2025-11-25")
    check_eq(check_schemas(late.request("tools/list")["result"]["tools"],
                           "2025-11-25"), schemas,
             "2025-11-25 declares the same outputSchemas")
    late.kill()
    old = Server(sets=("management", "runtime"))
    old.initialize("2025-03-26")
    otools = old.request("tools/list")["result"]["tools"]
    check_eq(sorted(t["name"] for t in otools), sorted(TOOLS),
             "2025-03-26: the 18 tools")
    check_eq([t["name"] for t in otools if "outputSchema" in t], [],
             "2025-03-26: no tool has an outputSchema")
    old.kill()

    R = Results(schemas)

    def call(tool, args=None, label=None, server=s, timeout=60):
        res = server.call(tool, args if args is not None else {},
                          timeout=timeout)
        return R.add(tool, label or json.dumps(args)[:80], res)

    def ok(tool, args=None, label=None, **kw):
        return ok_result(call(tool, args, label, **kw), label or tool)

    def err(tool, args, kind, label=None, **kw):
        return err_result(call(tool, args, label, **kw), kind,
                          label or tool)

    # Discovery, with and without roots.
    images = ok("list_docker_images")
    check_in(IMAGE, images["images"], "the test image is listed")
    r = ok("list_workspace_directories", label="roots")
    check_eq(r["path"], None, "the roots have no path")
    r = ok("list_workspace_directories", {"path": roots}, "a root")
    check_eq((len(r["directories"]), r["truncated"]), (1, True),
             "list-directories 1 truncates")
    r = ok("list_workspace_directories", {"path": ws}, "a workspace")
    check_eq((r["parent"], r["truncated"]), (roots, False), "parent")
    err("list_workspace_directories", {"path": "relative"},
        "invalid_request")
    err("list_workspace_directories", {"path": os.path.join(roots, "nope")},
        "not_found")
    bare = Server(sets=("management", "runtime"))
    bare.initialize("2025-06-18")
    err("list_workspace_directories", {}, "operation_failed", "no roots",
        server=bare)
    err("list_workspace_directories", {"path": ws}, "operation_failed",
        "no roots, with a path", server=bare)
    bare.kill()

    # Sandboxes: one, then a batch of two.
    err("create_sandbox", {"image": "sandbox-mcp/no-such:image",
                           "workspace_root": ws}, "invalid_request",
        "missing image")
    err("create_sandbox", {"image": IMAGE,
                           "workspace_root": os.path.join(roots, "nope")},
        "not_found", "missing root")
    err("create_sandbox", {"image": IMAGE, "workspace_root": ws,
                           "count": 0}, "invalid_request", "count 0")
    rec = ok("create_sandbox", {"image": IMAGE, "workspace_root": ws},
             "count 1")
    sid = rec["id"]
    check_eq(rec["daemon"], {"host": "127.0.0.1", "port": s.port},
             "the record's endpoint")
    batch = ok("create_sandbox", {"image": IMAGE, "workspace_root": ws2,
                                  "count": 2}, "count 2")["sandboxes"]
    check_eq(len(batch), 2, "a batch of two")
    b1, b2 = batch[0]["id"], batch[1]["id"]
    listed = ok("list_sandboxes")["sandboxes"]
    check_eq(sorted(x["id"] for x in listed), sorted([sid, b1, b2]),
             "three listed")
    ok("inspect_sandbox", {"sandbox_id": sid})
    err("inspect_sandbox", {"sandbox_id": "sbox-000000000000"}, "not_found")

    def run(cmd, label=None, **kw):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 20000}
        args.update(kw)
        return ok("exec_command", args, label or cmd[:40])

    def session(profile=None, sb=None):
        args = {"sandbox_id": sb or sid}
        if profile:
            args["network_profile"] = profile
        r = ok("create_workspace_session", args,
               "session " + (profile or "default"))
        check_eq(r["network_profile"], profile or "shared", "the profile")
        return r["workspace_session_id"]

    def publish(wsid, sb=None):
        return call("publish_workspace_session",
                    {"sandbox_id": sb or sid, "workspace_session_id": wsid})

    # Commands: every status, every publish shape.
    r = run("echo hi")
    check_eq((r["status"], r["publish"]), ("ok", None), "ok, no publish")
    r = run("exit 3")
    check_eq((r["status"], r["exit_code"]), ("error", 3), "error")
    r = run("echo new > made.txt")
    check(isinstance(r["publish"], dict), "an automatic publish: %r" % r)
    r = run("mkfifo pipe && echo kept > kept.txt", "publish_dropped")
    check_eq(r["publish_dropped"], ["pipe"], "the fifo is dropped")
    r = run("mkdir many && cd many && i=0; while [ $i -lt 1005 ]; do"
            " : > f$i; i=$((i+1)); done", "1005 changed paths")
    check_eq(r["publish"].get("changed_path_count"), 1006,
             "changed_path_count past 1000 paths")
    r = run("seq 1 40000", "dropped_lines")
    check(r.get("dropped_lines", 0) > 0, "dropped_lines: %r"
          % {k: v for k, v in r.items() if k != "output"})
    r = run("echo start; sleep 30", "timeout", timeout_ms=500)
    check_eq((r["status"], r["exit_code"]), ("timed_out", 124), "timed_out")
    r = run("read x; echo got $x", "stdin", yield_time_ms=200)
    check_eq(r["status"], "running", "waits for stdin")
    cid = r["command_session_id"]
    ok("read_command_lines", {"sandbox_id": sid, "command_session_id": cid},
       "while running")
    r = ok("write_command_stdin", {"sandbox_id": sid,
                                   "command_session_id": cid,
                                   "stdin": "hi\n", "yield_time_ms": 5000})
    check_eq((r["status"], r["output"]), ("ok", "got hi\n"), "stdin answered")
    ok("read_command_lines", {"sandbox_id": sid, "command_session_id": cid,
                              "start_offset": 0, "limit": 1}, "window")
    err("write_command_stdin", {"sandbox_id": sid, "command_session_id": cid,
                                "stdin": "x"}, "operation_failed",
        "stdin to a finished command")
    err("read_command_lines", {"sandbox_id": sid,
                               "command_session_id": "cmd-nope"},
        "not_found")
    err("write_command_stdin", {"sandbox_id": sid,
                                "command_session_id": "cmd-nope",
                                "stdin": "x"}, "not_found")
    r = run("sleep 100", "ctrl-c", yield_time_ms=200)
    r = ok("write_command_stdin", {"sandbox_id": sid,
                                   "command_session_id":
                                   r["command_session_id"],
                                   "stdin": "\u0003", "yield_time_ms": 5000},
           "ctrl-c")
    check_eq(r["status"], "cancelled", "cancelled")

    # An automatic publish rejected: the automatic session starts, waits
    # on its stdin while H publishes a change to line 3, then changes
    # line 3 itself.
    h = session("shared")
    run("sed -i 's/^line 3$/three by h/' notes.txt", workspace_session_id=h)
    r = run("read go; sed -i 's/^line 3$/three by auto/' notes.txt",
            "rejected automatic publish", yield_time_ms=100)
    check_eq(r["status"], "running", "the automatic command waits")
    cid = r["command_session_id"]
    ok_result(publish(h), "publish H")
    r = ok("write_command_stdin", {"sandbox_id": sid,
                                   "command_session_id": cid,
                                   "stdin": "go\n", "yield_time_ms": 20000},
           "go")
    check_eq((r["status"], r.get("publish_rejected"),
              r.get("publish_reject_class")), ("ok", True, "source_conflict"),
             "the automatic publish is rejected")
    r = ok("read_command_lines", {"sandbox_id": sid,
                                  "command_session_id": cid}, "rejected")
    check_eq(r.get("publish_rejected"), True, "read sees the rejection")

    # Managed sessions: a rejected publish, a publish of nothing, conflicts.
    e1 = session()
    e2 = session("isolated")
    run("sed -i 's/^line 5$/five by e1/' notes.txt", workspace_session_id=e1)
    run("sed -i 's/^line 5$/five by e2/' notes.txt", workspace_session_id=e2)
    r = ok_result(publish(e1), "publish E1")
    check(isinstance(r["publish"], dict), "E1 publishes a layer")
    e = err_result(publish(e2), "operation_failed", "publish E2")
    check_eq(e["details"].get("publish_reject_class"), "source_conflict",
             "E2 is rejected")
    r = ok("destroy_workspace_session", {"sandbox_id": sid,
                                         "workspace_session_id": e2})
    check_eq(r["destroyed"], True, "E2 destroyed")
    n = session()
    r = ok_result(publish(n), "publish nothing")
    check_eq(r["publish"], None, "publish: null")
    err("publish_workspace_session", {"sandbox_id": sid,
                                      "workspace_session_id": n},
        "not_found", "publish a published session")
    err("destroy_workspace_session", {"sandbox_id": sid,
                                      "workspace_session_id": n},
        "not_found", "destroy a published session")
    m = session()
    r = run("sleep 30", "managed, running", workspace_session_id=m,
            yield_time_ms=100)
    mcid = r["command_session_id"]
    err("publish_workspace_session", {"sandbox_id": sid,
                                      "workspace_session_id": m},
        "conflict", "publish while running")
    err("destroy_workspace_session", {"sandbox_id": sid,
                                      "workspace_session_id": m},
        "conflict", "destroy while running")
    ok("write_command_stdin", {"sandbox_id": sid, "command_session_id": mcid,
                               "stdin": "\u0003", "yield_time_ms": 5000},
       "ctrl-c in a managed session")
    err("create_workspace_session", {"sandbox_id": sid,
                                     "network_profile": "public"},
        "invalid_request", "bad profile")

    # Files: reads, sessionless and session changes, blame.
    r = ok("file_read", {"sandbox_id": sid, "path": "src/a.txt"}, "whole")
    check_eq((r["truncated"], r["next_offset"]), (False, None), "whole")
    r = ok("file_read", {"sandbox_id": sid, "path": "src/a.txt",
                         "offset": 3, "limit": 2}, "window")
    check_eq((r["truncated"], r["next_offset"]), (True, 5), "window")
    r = ok("file_read", {"sandbox_id": sid, "path": "src/a.txt",
                         "workspace_session_id": m}, "in a session")
    err("file_read", {"sandbox_id": sid, "path": "nope.txt"}, "not_found")
    err("file_read", {"sandbox_id": sid, "path": "src/a.txt", "limit": 0},
        "invalid_request")
    r = ok("file_write", {"sandbox_id": sid, "path": "w/new.txt",
                          "content": "one\ntwo\n"}, "sessionless")
    check(r["owner"].startswith("operation:") and r["layer_id"],
          "sessionless write: %r" % r)
    r = ok("file_write", {"sandbox_id": sid, "path": "w/new.txt",
                          "content": "one\ntwo\n"}, "sessionless, same")
    check(r["layer_id"] is None or isinstance(r["layer_id"], str),
          "a rewrite: %r" % r)
    r = ok("file_write", {"sandbox_id": sid, "path": "w/s.txt",
                          "content": "s\n", "workspace_session_id": m},
           "in a session")
    check("owner" not in r, "no owner in a session: %r" % r)
    err("file_write", {"sandbox_id": sid, "path": "../x", "content": "x"},
        "invalid_request")
    r = ok("file_edit", {"sandbox_id": sid, "path": "w/new.txt", "edits": [
        {"old_string": "two", "new_string": "TWO"}]}, "sessionless")
    check(r["layer_id"], "sessionless edit publishes: %r" % r)
    ok("file_edit", {"sandbox_id": sid, "path": "w/s.txt",
                     "workspace_session_id": m, "edits": [
                         {"old_string": "s", "new_string": "S",
                          "replace_all": True}]}, "in a session")
    err("file_edit", {"sandbox_id": sid, "path": "w/new.txt", "edits": [
        {"old_string": "absent", "new_string": "x"}]}, "invalid_request",
        "old_string not found")
    err("file_edit", {"sandbox_id": sid, "path": "nope.txt", "edits": [
        {"old_string": "a", "new_string": "b"}]}, "not_found")
    r = ok("file_blame", {"sandbox_id": sid, "path": "w/new.txt"})
    check(r["ranges"], "blame ranges")
    r = ok("file_blame", {"sandbox_id": sid, "path": "notes.txt"}, "merged")
    check_eq(len({x["owner"].split(":")[0] for x in r["ranges"]}), 2,
             "original and session owners: %r" % r)
    err("file_blame", {"sandbox_id": sid, "path": "never.txt"}, "not_found")
    ok("destroy_workspace_session", {"sandbox_id": sid,
                                     "workspace_session_id": m},
       "with changes")
    err("file_write", {"sandbox_id": sid, "path": "x", "content": "x",
                       "workspace_session_id": m}, "not_found",
        "write in a destroyed session")

    # server_busy: at most two sessions in one sandbox (B1).
    x1 = session(sb=b1)
    x2 = session(sb=b1)
    err("create_workspace_session", {"sandbox_id": b1}, "server_busy",
        "a third session")
    err("exec_command", {"sandbox_id": b1, "cmd": "true"}, "server_busy",
        "an automatic session past the limit")
    for x in (x1, x2):
        ok("destroy_workspace_session", {"sandbox_id": b1,
                                         "workspace_session_id": x})

    # Every tool: an unknown argument, and an unknown sandbox.
    for tool in TOOLS:
        err(tool, {"bogus": 1}, "invalid_request", "unknown argument")
    need = {"exec_command": {"cmd": "true"},
            "write_command_stdin": {"command_session_id": "cmd-x",
                                    "stdin": "x"},
            "read_command_lines": {"command_session_id": "cmd-x"},
            "file_read": {"path": "a"}, "file_write": {"path": "a",
                                                       "content": "x"},
            "file_edit": {"path": "a", "edits": [{"old_string": "a",
                                                  "new_string": "b"}]},
            "file_blame": {"path": "a"},
            "publish_workspace_session": {"workspace_session_id": "ws-x"},
            "destroy_workspace_session": {"workspace_session_id": "ws-x"},
            "create_workspace_session": {}, "inspect_sandbox": {},
            "destroy_sandbox": {}, "squash_layerstacks": {},
            "export_changes": {"dest": os.path.join(exports, "none")}}
    for tool, args in need.items():
        a = dict(args, sandbox_id="sbox-0123456789ab")
        err(tool, a, "not_found", "unknown sandbox")

    # The 2026-07-28 era's results too.
    for tool, args in (("list_sandboxes", {}),
                       ("inspect_sandbox", {"sandbox_id": "nope"}),
                       ("file_read", {"sandbox_id": sid,
                                      "path": "src/a.txt"})):
        r = modern(s, "tools/call", {"name": tool, "arguments": args})
        check("result" in r, "2026-07-28 tools/call: %r" % r)
        R.add(tool, "2026-07-28", r["result"])

    # squash_layerstacks: with a managed session standing on the stack
    # (blocks, a pinned session and its reason), then nothing to do.
    keep = session()
    ok("file_write", {"sandbox_id": sid, "path": "sq/a.txt", "content": "a"})
    ok("file_write", {"sandbox_id": sid, "path": "sq/b.txt", "content": "b"})
    r = ok("squash_layerstacks", {"sandbox_id": sid})
    check(r["squashed_blocks"] and r["swept_sessions"],
          "a squash with blocks and a session: %r" % r)
    r = ok("squash_layerstacks", {"sandbox_id": sid})

    # export_changes: each format to the export root while the session
    # stands (named in live_workspace_sessions), after the deletion of a
    # base file (a whiteout in the archives, a deletion applied to a dir
    # dest that holds it); the dir again, every file unchanged.
    run("rm src/a.txt", "a deletion before the exports")
    dest = {"dir": os.path.join(exports, "dir"),
            "tar": os.path.join(exports, "changes.tar"),
            "tar-zst": os.path.join(exports, "changes.tar.zst")}
    os.makedirs(os.path.join(dest["dir"], "src"))
    with open(os.path.join(dest["dir"], "src", "a.txt"), "w") as f:
        f.write(TEXT)
    for fmt in ("dir", "tar", "tar-zst"):
        args = {"sandbox_id": sid, "dest": dest[fmt]}
        if fmt != "dir":
            args["format"] = fmt
        r = ok("export_changes", args, "export " + fmt, timeout=120)
        check_eq(r["format"], fmt, "the format exported")
        check(r["layers_exported"] > 0 and r["files_written"] > 0,
              "an export of %s with layers and files: %r" % (fmt, r))
        check_eq(r.get("live_workspace_sessions"), [keep],
                 "the live session is named (%s)" % fmt)
        check((os.path.isdir if fmt == "dir" else os.path.isfile)(
            dest[fmt]), "%s is at its dest" % fmt)
        check_eq(r.get("deletes_applied" if fmt == "dir" else
                       "whiteouts_emitted", 0) > 0, True,
                 "the deletion is exported (%s): %r" % (fmt, r))
    check(os.path.isfile(os.path.join(dest["dir"], "made.txt")),
          "the dir export holds a published file")
    check(not os.path.lexists(os.path.join(dest["dir"], "src", "a.txt")),
          "the dir export removed the deleted file")
    r = ok("export_changes", {"sandbox_id": sid, "dest": dest["dir"],
                              "format": "dir"}, "export dir again",
           timeout=120)
    check_eq((r["files_written"], r["deletes_applied"],
              r["skipped_unchanged"] > 0), (0, 0, True),
             "a second dir export skips every file: %r" % r)
    err("export_changes", {"sandbox_id": sid, "dest": dest["tar"],
                           "format": "zip"}, "invalid_request",
        "an unknown format")
    err("export_changes", {"sandbox_id": sid, "dest": "relative/x"},
        "invalid_request", "a relative dest")
    err("export_changes", {"sandbox_id": sid, "dest": os.path.join(
        os.path.dirname(exports), "not-an-export-root")},
        "invalid_request", "a dest outside every root")
    ok("destroy_workspace_session", {"sandbox_id": sid,
                                     "workspace_session_id": keep})

    # Destroy: the batch, then the first.
    for b in (b1, b2):
        r = ok("destroy_sandbox", {"sandbox_id": b})
        check_eq(r["state"], "stopped", "destroyed")
    err("destroy_sandbox", {"sandbox_id": b1}, "not_found", "twice")
    r = ok("destroy_sandbox", {"sandbox_id": sid})
    check_eq(our_containers(state), {}, "no container left")

    # Coverage: each tool answered both ways; the kinds; the shapes.
    by = {}
    for tool, label, res in R.seen:
        by.setdefault(tool, set()).add(bool(res.get("isError")))
    for tool in TOOLS:
        check_eq(by.get(tool), {False, True},
                 tool + ": a success and an error were validated")
    kinds = {res["structuredContent"]["error"]["kind"]
             for _, _, res in R.seen if res.get("isError")}
    for k in ("invalid_request", "not_found", "conflict",
              "operation_failed", "server_busy"):
        check_in(k, kinds, "error kinds validated")
    cmds = [res["structuredContent"] for tool, _, res in R.seen
            if tool in ("exec_command", "write_command_stdin",
                        "read_command_lines") and not res.get("isError")]
    check_eq({c["status"] for c in cmds},
             {"ok", "error", "running", "timed_out", "cancelled"},
             "command statuses validated")
    exported = {res["structuredContent"]["format"] for tool, _, res in R.seen
                if tool == "export_changes" and not res.get("isError")}
    check_eq(exported, {"dir", "tar", "tar-zst"}, "export formats validated")
    for key in ("publish", "publish_rejected", "publish_reject_class",
                "publish_reject_details", "publish_dropped",
                "dropped_lines"):
        check(any(key in c for c in cmds), "a command result with " + key)

    # Every result matches its tool's outputSchema.
    bad = R.mismatches()
    print("validated %d results (%d errors) of %d tools with jsonschema %s"
          % (len(R.seen), sum(1 for _, _, res in R.seen
                              if res.get("isError")), len(by),
             _version()))
    check(not bad, "%d of %d results do not match their outputSchema:\n  %s"
          % (len(bad), len(R.seen), "\n  ".join(bad)))
    check(len(R.seen) > 100, "validated %d results" % len(R.seen))

    # The check can fail: mutated copies of real results are rejected.
    def pick(tool, pred=lambda sc: True, error=False):
        for t, _, res in R.seen:
            if t == tool and bool(res.get("isError")) == error and \
                    pred(res["structuredContent"]):
                return copy.deepcopy(res["structuredContent"])
        fail("no %s %s to mutate" % (tool, "error" if error else "result"))

    def mutate(tool, fn, what, pred=lambda sc: True, error=False):
        sc = pick(tool, pred, error)
        R.accepts(tool, sc, "the real result (%s)" % what)
        fn(sc)
        R.rejects(tool, sc, what)

    def drop(*path):
        def fn(sc):
            for p in path[:-1]:
                sc = sc[p]
            del sc[path[-1]]
        return fn

    def setv(value, *path):
        def fn(sc):
            for p in path[:-1]:
                sc = sc[p]
            sc[path[-1]] = value
        return fn

    published = (lambda sc: isinstance(sc.get("publish"), dict))
    mutate("exec_command", drop("status"), "status dropped")
    mutate("exec_command", drop("output"), "output dropped")
    mutate("exec_command", setv("0", "exit_code"), "exit_code a string")
    mutate("exec_command", setv("done", "status"), "status not in the enum")
    mutate("exec_command", setv(-1, "total_lines"), "total_lines < 0")
    mutate("exec_command", setv(1, "surprise"), "an unknown property")
    mutate("exec_command", setv(7, "publish", "layer_id"),
           "publish.layer_id a number", published)
    mutate("exec_command", drop("publish", "changed_paths"),
           "publish.changed_paths dropped", published)
    mutate("exec_command", setv(1, "publish", "extra"),
           "an unknown property in publish", published)
    mutate("read_command_lines", setv(False, "publish_rejected"),
           "publish_rejected false",
           lambda sc: sc.get("publish_rejected") is True)
    mutate("read_command_lines", setv(1.5, "end_offset"),
           "end_offset not an integer")
    mutate("inspect_sandbox", drop("id"), "record id dropped")
    mutate("inspect_sandbox", setv("gone", "state"), "state not in the enum")
    mutate("inspect_sandbox", setv("x", "daemon"), "daemon a string")
    mutate("inspect_sandbox", setv(3, "container_id"), "container_id 3")
    mutate("create_sandbox", lambda sc: sc["sandboxes"].pop(),
           "a batch of one", lambda sc: "sandboxes" in sc)
    mutate("create_sandbox", drop("tenant"), "record tenant dropped",
           lambda sc: "id" in sc)
    mutate("list_sandboxes", setv({}, "sandboxes"), "sandboxes an object")
    mutate("list_docker_images",
           lambda sc: sc["images"].append(sc["images"][0]),
           "a repeated image")
    mutate("list_workspace_directories", drop("truncated"),
           "truncated dropped")
    mutate("list_workspace_directories",
           setv(1, "directories", 0, "extra"),
           "an unknown property in a directory",
           lambda sc: sc["directories"])
    mutate("file_read", setv("5", "next_offset"), "next_offset a string")
    mutate("file_read", setv(0, "start_line"), "start_line 0")
    mutate("file_read", setv(1, "encoding"), "an unknown property")
    mutate("file_write", setv("delete", "type"), "type not in the enum")
    mutate("file_write", drop("bytes_written"), "bytes_written dropped")
    mutate("file_edit", setv(-2, "replacements"), "replacements < 0",
           lambda sc: "replacements" in sc)
    mutate("file_blame", drop("ranges", 0, "owner"), "a range's owner",
           lambda sc: sc["ranges"])
    mutate("create_workspace_session", setv("auto", "finalize_policy"),
           "finalize_policy auto")
    mutate("create_workspace_session", setv("public", "network_profile"),
           "network_profile public")
    mutate("publish_workspace_session", setv(False, "destroyed"),
           "destroyed false")
    mutate("publish_workspace_session", drop("publish"), "publish dropped")
    mutate("destroy_workspace_session", drop("discarded_bytes"),
           "discarded_bytes dropped")
    mutate("destroy_sandbox", setv("2024", "created_at_ms"),
           "created_at_ms a string")
    mutate("export_changes", setv("zip", "format"), "format not in the enum")
    mutate("export_changes", drop("bytes_written"), "bytes_written dropped")
    mutate("export_changes", setv(-1, "files_written"), "files_written < 0")
    mutate("export_changes", setv(1.5, "layers_exported"),
           "layers_exported not an integer")
    mutate("export_changes", setv([3], "live_workspace_sessions"),
           "a live session not a string",
           lambda sc: "live_workspace_sessions" in sc)
    mutate("export_changes", setv(1, "surprise"), "an unknown property")
    for tool in ("file_read", "exec_command", "create_sandbox"):
        mutate(tool, drop("error", "message"), "error.message dropped",
               error=True)
        mutate(tool, setv("oops", "error", "kind"), "error.kind oops",
               error=True)
        mutate(tool, setv([], "error", "details"), "error.details []",
               error=True)
        mutate(tool, setv(1, "error", "hint"), "an unknown error property",
               error=True)
        mutate(tool, setv(1, "also"), "a property beside error", error=True)
    R.rejects("list_sandboxes", [], "not an object")
    R.rejects("exec_command", {}, "an empty object")


main(test)
