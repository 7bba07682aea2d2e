#!/usr/bin/env python3
# The REST surface against MCP on one server (API keys configured, the
# management and runtime sets served): 17 of the 18 /v1 routes (all but
# squash's) are the same operation as their tool. Each route is driven
# next to the same tool call over HTTP tools/call, on matching objects
# (two sandboxes made and worked the same way, one through each surface,
# or the same call twice; their changes exported in each format, dest in
# the body or the query, to an export root), and the 200 body must be
# the call's structuredContent, member for member, with only ids,
# timestamps, durations and an archive's size set aside. Failures
# (unknown argument, wrong type, missing argument, in the door's order;
# bad and unknown ids; another tenant's sandbox, session, command and
# export; conflicts; missing files; edits that do not apply; a finished
# command; the commands-running limit; an export's dest outside every
# root, relative or missing, its unknown format) answer the tool's error
# object exactly, with the status of its kind. Then the routing (404,
# 405 and Allow, OPTIONS, 415, arguments given twice, bodies that are
# not objects, query values read with their argument's type,
# percent-encoding and +), the keys (401, 403 for a set the key lacks,
# tenants, Sec-Fetch-Site: same-origin, the Origin and Host guards), a
# second process that serves only the management set (404 for its
# runtime routes, whatever the method), and path parts and integers
# longer than usual.

import copy
import json
import os
import re
from urllib.parse import urlencode

from lib import (IMAGE, Http, Peer, Server, check, check_eq, check_in,
                 cleanup, keygen, main, remove_our_containers, tmpdir)

SETS = ("management", "runtime")
STATUS = {"invalid_request": 400, "unauthorized": 401, "not_found": 404,
          "conflict": 409, "operation_failed": 422, "server_busy": 429,
          "internal_error": 500}
UNKNOWN_SBOX = "sbox-0123456789ab"
UNKNOWN_WS = "ws-0123456789ab"
UNKNOWN_CMD = "cmd-0123456789ab"


def query_text(v):
    """A value as a query gives it: integers in digits, booleans as true
    and false, arrays and objects as JSON text."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    return json.dumps(v)


class Rest:
    """REST requests with one API key, each on a connection of its own."""

    def __init__(self, port, key, name):
        self.port = port
        self.key = key
        self.name = name

    def req(self, method, path, body=None, query=None, headers=None):
        """(status, headers, parsed body or None); query is a dict (form
        encoded, + for a space) or a raw string."""
        if query is not None:
            path += "?" + (query if isinstance(query, str) else
                           urlencode({k: query_text(v) for k, v in
                                      query.items()}))
        h = {}
        if self.key is not None:
            h["Authorization"] = "Bearer " + self.key
        h.update(headers or {})
        c = Http(self.port)
        st, hd, b = c.request(method, path, body, h)
        c.close()
        data = None
        if b:
            try:
                data = json.loads(b.decode())
            except ValueError:
                data = b
        return st, hd, data

    def ok(self, method, path, body=None, query=None):
        st, h, data = self.req(method, path, body, query)
        check_eq(st, 200, "%s: %s %s %r %r status (body %r)"
                 % (self.name, method, path, body, query, data))
        return data


# The volatile members: the ids each object gets, its timestamps and its
# durations. A value of the expected shape is replaced by a placeholder;
# any other value is left as it is, so that it differs.
VOLATILE = {
    "id": r"sbox-[0-9a-f]{12}",
    "sandbox_id": r"sbox-[0-9a-f]{12}",
    "container_id": r"[0-9a-f]{64}",
    "command_session_id": r"cmd-[0-9a-f]{12}",
    "running_commands": r"cmd-[0-9a-f]{12}",
    "workspace_session_id": r"ws-[0-9a-f]{12}",
}


def norm(v, key=None):
    if isinstance(v, dict):
        return {k: norm(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x, key) for x in v]
    if isinstance(v, str) and key in VOLATILE and \
            re.fullmatch(VOLATILE[key], v):
        return "<%s>" % key
    if key == "created_at_ms" and isinstance(v, int) and v > 0:
        return "<ms>"
    if key in ("wall_time_seconds", "command_total_time_seconds") and \
            isinstance(v, (int, float)) and not isinstance(v, bool) and \
            v >= 0:
        return "<seconds>"
    if key == "layer_id" and isinstance(v, str) and \
            re.fullmatch(r"L[0-9]{6}-[0-9a-f]{8}", v):
        return v[:8] + "<hash>"     # the layer's number stays
    if key == "owner" and isinstance(v, str):
        m = re.fullmatch(r"(operation:)[0-9a-f]{16}|"
                         r"(workspace_session:)ws-[0-9a-f]{12}", v)
        if m:
            return (m.group(1) or m.group(2)) + "<id>"
    return v


def same_result(what, rest, res):
    """A REST answer (status, headers, body) is the tool call's result
    (its envelope), volatile members aside; returns the REST body."""
    st, h, body = rest
    check_eq(st, 200, what + ": REST status (body %r)" % (body,))
    check_eq(h.get("content-type"), "application/json",
             what + ": REST Content-Type")
    check(res.get("isError") is False, what + ": the tool call succeeds: %r"
          % (res,))
    sc = res.get("structuredContent")
    check(isinstance(body, dict), what + ": REST body is an object: %r"
          % (body,))
    check_eq(sorted(body), sorted(sc), what + ": members of REST and MCP")
    check_eq(norm(body), norm(sc), what + ": REST result equals MCP's")
    return body


def same_error(what, kind, rest, res, subst=()):
    """A REST answer is the tool call's error: the same kind, message and
    details (with the (rest, mcp) pairs of subst swapped in the MCP error
    where the objects differ), with the status of the kind."""
    st, h, body = rest
    check(res.get("isError") is True, what + ": the tool call fails: %r"
          % (res,))
    sc = res["structuredContent"]
    check_eq(sc["error"]["kind"], kind, what + ": MCP error kind")
    check_eq(st, STATUS[kind], what + ": REST status for %s (body %r)"
             % (kind, body))
    check_eq(h.get("content-type"), "application/json",
             what + ": REST Content-Type")
    text = json.dumps(sc)
    for mine, theirs in subst:
        text = text.replace(theirs, mine)
    check_eq(body, json.loads(text), what + ": REST error equals MCP's")
    return body["error"]


def rest_error(what, st_want, rest, kind=None):
    """A REST refusal of the surface itself: its status and an error
    object (of kind, when the contract gives one)."""
    st, h, body = rest
    check_eq(st, st_want, what + ": status (body %r)" % (body,))
    check(isinstance(body, dict) and list(body) == ["error"] and
          sorted(body["error"]) == ["details", "kind", "message"] and
          isinstance(body["error"]["message"], str) and
          isinstance(body["error"]["details"], dict),
          what + ": an error object: %r" % (body,))
    check(body["error"]["kind"] in STATUS, what + ": a kind: %r" % (body,))
    if kind is not None:
        check_eq(body["error"]["kind"], kind, what + ": kind")
    return body["error"]


def allow_set(h):
    return {m.strip() for m in h.get("allow", "").split(",") if m.strip()}


def test():
    base = tmpdir()
    roots = os.path.join(base, "roots")
    ws = os.path.join(roots, "ws")
    os.makedirs(os.path.join(ws, "src"))
    os.makedirs(os.path.join(roots, "other", "deep"))
    with open(os.path.join(ws, "README"), "w") as f:
        f.write("read me\n")
    with open(os.path.join(ws, "src", "a.txt"), "w") as f:
        f.write("one\ntwo\nthree\n")
    key_a, line_a = keygen("alice", *SETS)
    key_b, line_b = keygen("bob", *SETS)
    key_m, line_m = keygen("ops", "management")
    key_r, line_r = keygen("runner", "runtime")
    exports = os.path.join(base, "exports")
    os.makedirs(exports)
    conf = ("workspace-root %s\nexport-root %s\nlimit commands-running 2\n"
            "%s\n%s\n%s\n%s\n"
            % (roots, exports, line_a, line_b, line_m, line_r))
    srv = Server(sets=SETS, config=conf, listen="127.0.0.1:0", stdio=False)
    state = srv.state
    cleanup(lambda: remove_our_containers(state))
    mcp = Peer(srv.port, key_a, "alice")
    rest = Rest(srv.port, key_a, "alice")
    made = []

    def destroy_left():
        for sid in made:
            Http(srv.port).request("DELETE", "/v1/sandboxes/" + sid, None, {
                "Authorization": "Bearer " + key_a})
    cleanup(destroy_left)

    # Management reads: the same call twice answers the same.
    imgs = same_result("list_docker_images",
                       rest.req("GET", "/v1/docker-images"),
                       mcp.call("list_docker_images", {}))
    check_in(IMAGE, imgs["images"], "the test image is listed")
    same_result("list_workspace_directories, roots",
                rest.req("GET", "/v1/workspace-directories"),
                mcp.call("list_workspace_directories", {}))
    lst = same_result("list_workspace_directories, a path in the query",
                      rest.req("GET", "/v1/workspace-directories",
                               query={"path": roots}),
                      mcp.call("list_workspace_directories",
                               {"path": roots}))
    check_eq([d["name"] for d in lst["directories"]], ["other", "ws"],
             "the root's subdirectories")

    # Two sandboxes made the same way, one through each surface; count
    # comes from the query (digits are an integer).
    st, h, rec_r = rest.req("POST", "/v1/sandboxes", {
        "image": IMAGE, "workspace_root": ws}, {"count": 1})
    if st == 200:
        made.append(rec_r["id"])
    res = mcp.call("create_sandbox", {"image": IMAGE, "workspace_root": ws,
                                      "count": 1})
    if res.get("isError") is False:
        made.append(res["structuredContent"]["id"])
    same_result("create_sandbox", (st, h, rec_r), res)
    R, M = rec_r["id"], res["structuredContent"]["id"]
    check(R != M, "two sandboxes")
    check_eq((rec_r["state"], rec_r["tenant"]), ("ready", "alice"),
             "the REST sandbox is ready and alice's")

    lst = same_result("list_sandboxes", rest.req("GET", "/v1/sandboxes"),
                      mcp.call("list_sandboxes", {}))
    check_eq([x["id"] for x in lst["sandboxes"]], [R, M],
             "both listed, oldest first")
    ins = same_result("inspect_sandbox, the same sandbox",
                      rest.req("GET", "/v1/sandboxes/" + R),
                      mcp.call("inspect_sandbox", {"sandbox_id": R}))
    check_eq(ins, rec_r, "inspect answers the record create made")
    same_result("inspect_sandbox, matching sandboxes",
                rest.req("GET", "/v1/sandboxes/" + R),
                mcp.call("inspect_sandbox", {"sandbox_id": M}))


    def both(what, method, route, tool, body=None, query=None, m_path=None,
             r_ws=None, m_ws=None, ws_in="body"):
        """The route on R (route: the path after the sandbox's) and the
        tool on M with the same arguments; m_path holds M's values of the
        route's other path parts, r_ws and m_ws the sessions to work in.
        Returns (REST body, MCP structuredContent)."""
        if r_ws is not None:
            if ws_in == "body":
                body = dict(body or {}, workspace_session_id=r_ws)
            else:
                query = dict(query or {}, workspace_session_id=r_ws)
        args = dict(body or {}, **(query or {}))
        args.update(m_path or {})
        args["sandbox_id"] = M
        if m_ws is not None:
            args["workspace_session_id"] = m_ws
        res = mcp.call(tool, args)
        got = same_result(what, rest.req(method, "/v1/sandboxes/%s%s"
                                         % (R, route), body, query), res)
        return got, res["structuredContent"]

    # Sessionless file tools: each change is published as a layer.
    w, _ = both("file_write, sessionless", "PUT", "/files", "file_write",
                {"path": "notes/a.txt", "content": "alpha\nbeta\ngamma\n"})
    check_eq((w["type"], w["bytes_written"], w["layer_id"][:8]),
             ("create", 17, "L000002-"), "a new file, published")
    w, _ = both("file_write, the same write again", "PUT", "/files",
                "file_write", {"path": "notes/a.txt",
                               "content": "alpha\nbeta\ngamma\n"})
    check_eq(w["type"], "update", "the file exists now")
    w, _ = both("file_write, the same write a third time", "PUT", "/files",
                "file_write", {"path": "notes/a.txt",
                               "content": "alpha\nbeta\ngamma\n"})
    check_eq((w["type"], w["layer_id"]), ("update", None),
             "a repeated write publishes nothing")
    r, _ = both("file_read, sessionless, window in the query", "GET",
                "/files", "file_read", query={"path": "notes/a.txt",
                                              "offset": 2, "limit": 1})
    check_eq((r["content"], r["start_line"], r["next_offset"],
              r["truncated"]), ("beta\n", 2, 3, True),
             "offset and limit from the query are integers")
    e, _ = both("file_edit, sessionless", "PATCH", "/files", "file_edit",
                {"path": "notes/a.txt", "edits": [
                    {"old_string": "beta", "new_string": "BETA"}]})
    check_eq((e["edits_applied"], e["replacements"], e["layer_id"][:8]),
             (1, 1, "L000004-"), "one edit, published")
    b, _ = both("file_blame", "GET", "/blame", "file_blame",
                query={"path": "notes/a.txt"})
    check_eq([x["line_count"] for x in b["ranges"]], [1, 1, 1],
             "three ranges: written, edited, written")
    # Only the base holds README: never published, not_found.
    err = same_error("file_blame, a file only the base holds", "not_found",
                     rest.req("GET", "/v1/sandboxes/%s/blame" % R,
                              query={"path": "README"}),
                     mcp.call("file_blame", {"sandbox_id": R,
                                             "path": "README"}))
    check_eq(err["details"], {"path": "README"}, "details name the path")
    both("file_edit, a base file", "PATCH", "/files", "file_edit",
         {"path": "src/a.txt", "edits": [{"old_string": "two\n",
                                          "new_string": "TWO\n"}]})
    b, _ = both("file_blame, an edited base file", "GET", "/blame",
                "file_blame", query={"path": "src/a.txt"})
    check_eq([(x["line_count"], x["owner"].split(":")[0])
              for x in b["ranges"]],
             [(1, "original"), (1, "operation"), (1, "original")],
             "the base's lines are original")
    # An array argument in the query is JSON text; + is a space.
    both("file_write, a name with a blank", "PUT", "/files", "file_write",
         {"path": "my file.txt", "content": "x y\n"})
    check_in("+", urlencode({"path": "my file.txt"}), "the query uses +")
    e, _ = both("file_edit, the edits in the query", "PATCH", "/files",
                "file_edit", query={"path": "my file.txt", "edits": [
                    {"old_string": "x", "new_string": "z"}]})
    r, _ = both("file_read, + for a space", "GET", "/files", "file_read",
                query={"path": "my file.txt"})
    check_eq(r["content"], "z y\n", "the file edited through the query")

    # Managed sessions: one to work in and publish, one to discard.
    s1, m1 = both("create_workspace_session, with a body", "POST",
                  "/workspace-sessions", "create_workspace_session",
                  {"network_profile": "shared"})
    s2, m2 = both("create_workspace_session, no body", "POST",
                  "/workspace-sessions", "create_workspace_session")
    check_eq((s1["network_profile"], s1["finalize_policy"]),
             ("shared", "none"), "a managed, shared session")
    ws_r1, ws_m1 = s1["workspace_session_id"], m1["workspace_session_id"]
    ws_r2, ws_m2 = s2["workspace_session_id"], m2["workspace_session_id"]
    in_s1 = dict(r_ws=ws_r1, m_ws=ws_m1)

    w, _ = both("file_write, in a session", "PUT", "/files", "file_write",
                {"path": "s.txt", "content": "s1\ns2\n"}, **in_s1)
    check_eq(sorted(w), ["bytes_written", "path", "type"],
             "a session's write has no owner or layer")
    both("file_edit, in a session", "PATCH", "/files", "file_edit",
         {"path": "s.txt", "edits": [{"old_string": "s2",
                                      "new_string": "S2"}]}, **in_s1)
    r, _ = both("file_read, in a session", "GET", "/files", "file_read",
                query={"path": "s.txt"}, ws_in="query", **in_s1)
    check_eq(r["content"], "s1\nS2\n", "the session's view")
    both("file_write, in the session to discard", "PUT", "/files",
         "file_write", {"path": "gone.txt", "content": "12345"},
         r_ws=ws_r2, m_ws=ws_m2)
    # file_blame reads what was published: an unpublished file is
    # not_found on both, and a session is no argument of it.
    same_error("file_blame, a file only a session holds", "not_found",
               rest.req("GET", "/v1/sandboxes/%s/blame" % R,
                        query={"path": "s.txt"}),
               mcp.call("file_blame", {"sandbox_id": R, "path": "s.txt"}))
    same_error("file_blame with a session", "invalid_request",
               rest.req("GET", "/v1/sandboxes/%s/blame" % R, query={
                   "path": "s.txt", "workspace_session_id": ws_r1}),
               mcp.call("file_blame", {"sandbox_id": R, "path": "s.txt",
                                       "workspace_session_id": ws_r1}))

    # A command in the session that waits for its stdin.
    x, xm = both("exec_command, in a session, waiting", "POST", "/commands",
                 "exec_command", {"cmd": "read x; echo got:$x;"
                                  " echo done > out.txt; echo more",
                                  "yield_time_ms": 300}, **in_s1)
    check_eq((x["status"], x["exit_code"], x["output"]),
             ("running", None, ""), "the command waits for its stdin")
    cmd_r, cmd_m = x["command_session_id"], xm["command_session_id"]
    # While it runs its session cannot be published.
    err = same_error("publish_workspace_session, a command runs",
                     "conflict",
                     rest.req("POST", "/v1/sandboxes/%s/workspace-sessions/"
                              "%s/publish" % (R, ws_r1)),
                     mcp.call("publish_workspace_session", {
                         "sandbox_id": R, "workspace_session_id": ws_r1}))
    check_eq(err["details"].get("running_commands"), [cmd_r],
             "the conflict names the running command")
    x, _ = both("write_command_stdin", "POST",
                "/commands/%s/stdin" % cmd_r, "write_command_stdin",
                {"stdin": "hi\n", "yield_time_ms": 10000},
                m_path={"command_session_id": cmd_m})
    check_eq((x["status"], x["exit_code"], x["output"]),
             ("ok", 0, "got:hi\nmore\n"), "the command read its stdin")
    x, _ = both("read_command_lines, window in the query", "GET",
                "/commands/%s/lines" % cmd_r, "read_command_lines",
                query={"start_offset": 1, "limit": 1},
                m_path={"command_session_id": cmd_m})
    check_eq((x["output"], x["start_offset"], x["end_offset"],
              x["total_lines"]), ("more\n", 1, 2, 2),
             "start_offset and limit from the query are integers")
    err = same_error("write_command_stdin, a finished command",
                     "operation_failed",
                     rest.req("POST", "/v1/sandboxes/%s/commands/%s/stdin"
                              % (R, cmd_r), {"stdin": "late\n"}),
                     mcp.call("write_command_stdin", {
                         "sandbox_id": R, "command_session_id": cmd_r,
                         "stdin": "late\n"}))
    check_eq(err["details"].get("status"), "ok", "its status in details")

    p, _ = both("publish_workspace_session", "POST",
                "/workspace-sessions/%s/publish" % ws_r1,
                "publish_workspace_session",
                m_path={"workspace_session_id": ws_m1})
    check_eq((p["destroyed"], sorted(p["publish"]["changed_paths"])),
             (True, ["out.txt", "s.txt"]), "the session's changes")
    b, _ = both("file_blame, a session's publish", "GET", "/blame",
                "file_blame", query={"path": "s.txt"})
    check_eq([x["owner"].split(":")[0] for x in b["ranges"]],
             ["workspace_session"], "the session owns its lines")
    same_error("publish_workspace_session, an ended session", "not_found",
               rest.req("POST", "/v1/sandboxes/%s/workspace-sessions/%s/"
                        "publish" % (R, ws_r1)),
               mcp.call("publish_workspace_session", {
                   "sandbox_id": R, "workspace_session_id": ws_r1}))
    d, _ = both("destroy_workspace_session", "DELETE",
                "/workspace-sessions/%s" % ws_r2,
                "destroy_workspace_session",
                m_path={"workspace_session_id": ws_m2})
    check_eq((d["destroyed"], d["discarded_bytes"]), (True, 5),
             "the discarded write")
    same_error("destroy_workspace_session, an ended session", "not_found",
               rest.req("DELETE", "/v1/sandboxes/%s/workspace-sessions/%s"
                        % (R, ws_r2)),
               mcp.call("destroy_workspace_session", {
                   "sandbox_id": R, "workspace_session_id": ws_r2}))

    # A command without a session publishes through its automatic one.
    x, _ = both("exec_command, sessionless", "POST", "/commands",
                "exec_command", {"cmd": "echo hi; echo x > auto.txt",
                                 "yield_time_ms": 10000})
    check_eq((x["status"], x["output"], x["publish"]["changed_paths"]),
             ("ok", "hi\n", ["auto.txt"]), "the automatic publish")
    # An automatic session publishes by itself.
    x = rest.ok("POST", "/v1/sandboxes/%s/commands" % R,
                {"cmd": "cat", "yield_time_ms": 200})
    check_eq(x["status"], "running", "cat waits")
    same_error("publish_workspace_session, an automatic session",
               "conflict",
               rest.req("POST", "/v1/sandboxes/%s/workspace-sessions/%s/"
                        "publish" % (R, x["workspace_session_id"])),
               mcp.call("publish_workspace_session", {
                   "sandbox_id": R,
                   "workspace_session_id": x["workspace_session_id"]}))
    x = rest.ok("POST", "/v1/sandboxes/%s/commands/%s/stdin"
                % (R, x["command_session_id"]),
                {"stdin": "\u0004", "yield_time_ms": 10000})
    check_eq(x["status"], "ok", "cat ends at Ctrl-D")

    # The published changes of both, exported in each format: R's
    # through the route, M's through the tool, each to a dest of its own
    # under the export root. dir is the default; the tar-zst dest and
    # format come in the query of a POST without a body. An archive's
    # bytes_written is its size, which the files' mtimes (in its headers,
    # then compressed) make differ between the two: each must be the
    # size of its own archive, and is set aside as volatile.
    exported = {}
    for fmt, in_query in (("dir", False), ("tar", False),
                          ("tar-zst", True)):
        name = {"dir": "%s", "tar": "%s.tar", "tar-zst": "%s.tar.zst"}[fmt]
        dr = os.path.join(exports, name % "rest")
        dm = os.path.join(exports, name % "mcp")
        args = {"dest": dr}
        if fmt != "dir":
            args["format"] = fmt
        res = mcp.call("export_changes", dict(args, sandbox_id=M, dest=dm))
        got = rest.req("POST", "/v1/sandboxes/%s/export" % R,
                       None if in_query else args,
                       args if in_query else None)
        if fmt != "dir" and got[0] == 200 and \
                res.get("isError") is False:
            sizes = (got[2].get("bytes_written"),
                     res["structuredContent"].get("bytes_written"))
            check_eq(sizes, (os.path.getsize(dr), os.path.getsize(dm)),
                     "export_changes, %s: bytes_written is the size of"
                     " the archive" % fmt)
            res = copy.deepcopy(res)
            res["structuredContent"]["bytes_written"] = sizes[0]
        x = same_result("export_changes, %s" % fmt, got, res)
        check_eq((x["format"], x["layers_exported"] > 0,
                  x["files_written"] > 0), (fmt, True, True),
                 "export_changes, %s: layers and files: %r" % (fmt, x))
        check((os.path.isdir if fmt == "dir" else os.path.isfile)(dr) and
              (os.path.isdir if fmt == "dir" else os.path.isfile)(dm),
              "export_changes, %s: both dests made" % fmt)
        exported[fmt] = x

    def tree(top):
        out = {}
        for d, _, files in os.walk(top):
            for f in files:
                with open(os.path.join(d, f), "rb") as fh:
                    out[os.path.relpath(os.path.join(d, f), top)] = fh.read()
        return out
    t = tree(os.path.join(exports, "rest"))
    check_eq(t, tree(os.path.join(exports, "mcp")),
             "the two dir exports hold the same files")
    check_eq(t.get("auto.txt"), b"x\n", "the dir export holds auto.txt")
    check("README" not in t, "the dir export holds no base file")
    # Again, onto the same dests: every file is equal, none is written.
    x = same_result("export_changes, dir again", rest.req(
        "POST", "/v1/sandboxes/%s/export" % R,
        {"dest": os.path.join(exports, "rest"), "format": "dir"}),
        mcp.call("export_changes", {"sandbox_id": M, "format": "dir",
                                    "dest": os.path.join(exports, "mcp")}))
    check_eq((x["files_written"], x["skipped_unchanged"]),
             (0, exported["dir"]["files_written"]),
             "export_changes, dir again: every file skipped")
    # A session of alice's that stays live, for the checks below.
    ws_live = rest.ok("POST", "/v1/sandboxes/%s/workspace-sessions"
                      % R)["workspace_session_id"]
    rest.ok("PUT", "/v1/sandboxes/%s/files" % R, {
        "path": "live.txt", "content": "live\n",
        "workspace_session_id": ws_live})

    errors(srv.port, rest, mcp, R, ws, base, cmd_r, ws_live)
    tenants(srv.port, key_b, rest, R, cmd_r, ws_live, exports)
    routing(rest, mcp, R)
    keys(srv.port, key_m, key_r, rest, R)
    mgmt = second_server(conf, state, key_a, rest, R)

    # The commands-running limit (2 in the configuration): two commands
    # run, a third is server_busy, 429 with Retry-After.
    for i in range(2):
        x = rest.ok("POST", "/v1/sandboxes/%s/commands" % R,
                    {"cmd": "cat", "yield_time_ms": 0})
        check_eq(x["status"], "running", "command %d runs" % (i + 1))
    busy = rest.req("POST", "/v1/sandboxes/%s/commands" % R,
                    {"cmd": "true"})
    err = same_error("exec_command, the commands-running limit",
                     "server_busy", busy,
                     mcp.call("exec_command", {"sandbox_id": R,
                                               "cmd": "true"}))
    check_eq(err["details"], {"limit": "commands-running",
                              "sandbox_id": R}, "busy details")
    check(re.fullmatch(r"[0-9]+", busy[1].get("retry-after", "")),
          "429 carries Retry-After: %r" % (busy[1],))

    # Destroy: the records as they were, stopped; then both are gone.
    d, _ = both("destroy_sandbox", "DELETE", "", "destroy_sandbox")
    made.remove(R)
    made.remove(M)
    check_eq((d["id"], d["state"], d["daemon"], d["daemon_http"],
              "error" in d), (R, "stopped", None, None, False),
             "the destroyed record")
    for method, tool in [("GET", "inspect_sandbox"),
                         ("DELETE", "destroy_sandbox")]:
        same_error("%s, a destroyed sandbox" % tool, "not_found",
                   rest.req(method, "/v1/sandboxes/" + R),
                   mcp.call(tool, {"sandbox_id": R}))
    lst = same_result("list_sandboxes, none left",
                      rest.req("GET", "/v1/sandboxes"),
                      mcp.call("list_sandboxes", {}))
    check_eq(lst, {"sandboxes": []}, "nothing left")

    edges(srv.port, rest, mcp, mgmt)


def edges(port, rest, mcp, mgmt):
    """Requests at the edges of the surface: a path part longer than the
    usual ids, an integer of many digits, the Host guard, and the
    methods of a path on a server that serves none of its routes."""
    # A path part of 300 characters is still a path part: the route is
    # file_read, whose check refuses the id as the tool does.
    long_id = "a" * 300
    same_error("a sandbox id of 300 characters in the path",
               "invalid_request",
               rest.req("GET", "/v1/sandboxes/%s/files" % long_id,
                        query={"path": "README"}),
               mcp.call("file_read", {"sandbox_id": long_id,
                                      "path": "README"}))
    same_error("a sandbox id of 300 characters, inspect", "invalid_request",
               rest.req("GET", "/v1/sandboxes/" + long_id),
               mcp.call("inspect_sandbox", {"sandbox_id": long_id}))
    # Digits are an integer, however many: past 2^53 it is refused as
    # tools/call refuses the number.
    same_error("a query integer of 31 digits", "invalid_request",
               rest.req("GET", "/v1/sandboxes/%s/files" % UNKNOWN_SBOX,
                        query={"path": "README", "limit": 10 ** 30}),
               mcp.call("file_read", {"sandbox_id": UNKNOWN_SBOX,
                                      "path": "README",
                                      "limit": 10 ** 30}))
    # The Host guard of /mcp applies, and its refusal is a REST failure:
    # the error object.
    rest_error("a foreign Host", 403, rest.req(
        "GET", "/v1/sandboxes", headers={"Host": "evil.example"}))
    # On a server that serves only the management set, the runtime
    # routes are 404 whatever the method: OPTIONS offers none of them
    # and another method is no 405 naming them.
    r2 = Rest(mgmt.port, rest.key, "alice@management")
    sb = "/v1/sandboxes/" + UNKNOWN_SBOX
    for method, path in [("OPTIONS", sb + "/files"),
                         ("DELETE", sb + "/files"),
                         ("GET", sb + "/commands"),
                         ("OPTIONS", sb + "/commands")]:
        st, h, body = r2.req(method, path)
        rest_error("management only: %s %s" % (method, path), 404,
                   (st, h, body), "not_found")
    st, h, body = r2.req("OPTIONS", sb)
    check_eq((st, allow_set(h) - {"OPTIONS"}), (204, {"GET", "DELETE"}),
             "management only: OPTIONS of a management route")
    mgmt.kill()


def errors(port, rest, mcp, R, ws, base, cmd_r, ws_live):
    """Bad calls answer the tool's error object exactly, with the status
    of its kind: the argument checks in their order, bad and unknown
    ids, missing files, edits that do not apply."""
    sb = "/v1/sandboxes/" + R
    cases = [
        # (what, kind, method, path, body, query, tool, arguments)
        ("an unknown argument in the body", "invalid_request",
         "PUT", sb + "/files", {"path": "u.txt", "content": "",
                                "bogus": True}, None,
         "file_write", {"sandbox_id": R, "path": "u.txt", "content": "",
                        "bogus": True}),
        ("an unknown argument in the query", "invalid_request",
         "GET", "/v1/sandboxes", None, {"bogus": 1},
         "list_sandboxes", {"bogus": "1"}),
        ("an unknown argument before a wrong type", "invalid_request",
         "POST", sb + "/commands", {"cmd": 5, "bogus": 1}, None,
         "exec_command", {"sandbox_id": R, "cmd": 5, "bogus": 1}),
        ("a wrong type in the body", "invalid_request",
         "POST", sb + "/commands", {"cmd": 5}, None,
         "exec_command", {"sandbox_id": R, "cmd": 5}),
        ("a wrong type in an array argument", "invalid_request",
         "PATCH", sb + "/files", {"path": "notes/a.txt",
                                  "edits": {"old_string": "a"}}, None,
         "file_edit", {"sandbox_id": R, "path": "notes/a.txt",
                       "edits": {"old_string": "a"}}),
        ("a query value that is no integer", "invalid_request",
         "GET", sb + "/files", None, {"path": "README", "limit": "abc"},
         "file_read", {"sandbox_id": R, "path": "README", "limit": "abc"}),
        ("true for an integer stays a string", "invalid_request",
         "GET", sb + "/files", None, {"path": "README", "limit": "true"},
         "file_read", {"sandbox_id": R, "path": "README",
                       "limit": "true"}),
        ("a negative number in the query", "invalid_request",
         "GET", sb + "/files", None, {"path": "README", "limit": -1},
         "file_read", {"sandbox_id": R, "path": "README", "limit": -1}),
        ("a query integer past 2^53", "invalid_request",
         "GET", sb + "/files", None, {"path": "README",
                                      "limit": 10 ** 20},
         "file_read", {"sandbox_id": R, "path": "README",
                       "limit": 10 ** 20}),
        ("a query integer out of the tool's range", "invalid_request",
         "GET", sb + "/files", None, {"path": "README", "limit": 0},
         "file_read", {"sandbox_id": R, "path": "README", "limit": 0}),
        ("a wrong type before a missing argument", "invalid_request",
         "PUT", sb + "/files", {"content": 5}, None,
         "file_write", {"sandbox_id": R, "content": 5}),
        ("a missing argument in the body", "invalid_request",
         "PUT", sb + "/files", {"path": "u.txt"}, None,
         "file_write", {"sandbox_id": R, "path": "u.txt"}),
        ("a missing argument, no query", "invalid_request",
         "GET", sb + "/files", None, None,
         "file_read", {"sandbox_id": R}),
        ("an empty required string", "invalid_request",
         "POST", sb + "/commands", {"cmd": ""}, None,
         "exec_command", {"sandbox_id": R, "cmd": ""}),
        ("a sandbox id that is not one", "invalid_request",
         "GET", "/v1/sandboxes/Not.An.Id", None, None,
         "inspect_sandbox", {"sandbox_id": "Not.An.Id"}),
        ("a sandbox id that is not one, runtime", "invalid_request",
         "POST", "/v1/sandboxes/Not.An.Id/commands", {"cmd": "true"}, None,
         "exec_command", {"sandbox_id": "Not.An.Id", "cmd": "true"}),
        ("a bad path", "invalid_request",
         "GET", sb + "/files", None, {"path": "../etc/passwd"},
         "file_read", {"sandbox_id": R, "path": "../etc/passwd"}),
        ("an edit whose old text is absent", "invalid_request",
         "PATCH", sb + "/files", {"path": "notes/a.txt", "edits": [
             {"old_string": "no such text", "new_string": "x"}]}, None,
         "file_edit", {"sandbox_id": R, "path": "notes/a.txt", "edits": [
             {"old_string": "no such text", "new_string": "x"}]}),
        ("an edit that matches twice", "invalid_request",
         "PATCH", sb + "/files", {"path": "notes/a.txt", "edits": [
             {"old_string": "a", "new_string": "x"}]}, None,
         "file_edit", {"sandbox_id": R, "path": "notes/a.txt", "edits": [
             {"old_string": "a", "new_string": "x"}]}),
        ("a bad network profile", "invalid_request",
         "POST", sb + "/workspace-sessions", {"network_profile": "bogus"},
         None, "create_workspace_session", {"sandbox_id": R,
                                            "network_profile": "bogus"}),
        ("an image that does not exist", "invalid_request",
         "POST", "/v1/sandboxes", {"image": "sandbox-mcp/none:missing",
                                   "workspace_root": ws}, None,
         "create_sandbox", {"image": "sandbox-mcp/none:missing",
                            "workspace_root": ws}),
        ("a workspace outside the roots", "invalid_request",
         "POST", "/v1/sandboxes", {"image": IMAGE, "workspace_root": base},
         None, "create_sandbox", {"image": IMAGE, "workspace_root": base}),
        ("a directory path outside the roots", "invalid_request",
         "GET", "/v1/workspace-directories", None, {"path": base},
         "list_workspace_directories", {"path": base}),
        ("an export outside the workspace root and the export roots",
         "invalid_request",
         "POST", sb + "/export", {"dest": os.path.join(base, "elsewhere")},
         None, "export_changes", {"sandbox_id": R, "dest": os.path.join(
             base, "elsewhere")}),
        ("an export to a relative dest", "invalid_request",
         "POST", sb + "/export", None, {"dest": "exports/x"},
         "export_changes", {"sandbox_id": R, "dest": "exports/x"}),
        ("an export in an unknown format", "invalid_request",
         "POST", sb + "/export", {"dest": os.path.join(base, "exports", "z"),
                                  "format": "zip"}, None,
         "export_changes", {"sandbox_id": R, "format": "zip",
                            "dest": os.path.join(base, "exports", "z")}),
        ("an export without a dest", "invalid_request",
         "POST", sb + "/export", None, None,
         "export_changes", {"sandbox_id": R}),
        ("a missing directory under a root", "not_found",
         "GET", "/v1/workspace-directories", None,
         {"path": os.path.join(ws, "nope")},
         "list_workspace_directories", {"path": os.path.join(ws, "nope")}),
        ("a missing file", "not_found",
         "GET", sb + "/files", None, {"path": "missing.txt"},
         "file_read", {"sandbox_id": R, "path": "missing.txt"}),
        ("a missing file to edit", "not_found",
         "PATCH", sb + "/files", {"path": "missing.txt", "edits": [
             {"old_string": "a", "new_string": "b"}]}, None,
         "file_edit", {"sandbox_id": R, "path": "missing.txt", "edits": [
             {"old_string": "a", "new_string": "b"}]}),
        ("digits for a string stay a string", "not_found",
         "GET", sb + "/files", None, {"path": "123"},
         "file_read", {"sandbox_id": R, "path": "123"}),
        ("true for a string stays a string", "not_found",
         "GET", sb + "/files", None, {"path": "true"},
         "file_read", {"sandbox_id": R, "path": "true"}),
        ("an unknown workspace session", "not_found",
         "GET", sb + "/files", None, {"path": "README",
                                      "workspace_session_id": UNKNOWN_WS},
         "file_read", {"sandbox_id": R, "path": "README",
                       "workspace_session_id": UNKNOWN_WS}),
        ("an unknown workspace session to run in", "not_found",
         "POST", sb + "/commands", {"cmd": "true",
                                    "workspace_session_id": UNKNOWN_WS},
         None, "exec_command", {"sandbox_id": R, "cmd": "true",
                                "workspace_session_id": UNKNOWN_WS}),
        ("an unknown workspace session to publish", "not_found",
         "POST", sb + "/workspace-sessions/%s/publish" % UNKNOWN_WS, None,
         None, "publish_workspace_session",
         {"sandbox_id": R, "workspace_session_id": UNKNOWN_WS}),
        ("an unknown command", "not_found",
         "GET", sb + "/commands/%s/lines" % UNKNOWN_CMD, None, None,
         "read_command_lines", {"sandbox_id": R,
                                "command_session_id": UNKNOWN_CMD}),
        ("an unknown command's stdin", "not_found",
         "POST", sb + "/commands/%s/stdin" % UNKNOWN_CMD, {"stdin": "x"},
         None, "write_command_stdin", {"sandbox_id": R,
                                       "command_session_id": UNKNOWN_CMD,
                                       "stdin": "x"}),
        # A path part is percent-decoded: %2D is the id's dash.
        ("an unknown sandbox, percent-encoded", "not_found",
         "GET", "/v1/sandboxes/" + UNKNOWN_SBOX.replace("-", "%2D"), None,
         None, "inspect_sandbox", {"sandbox_id": UNKNOWN_SBOX}),
    ]
    u = "/v1/sandboxes/" + UNKNOWN_SBOX
    for method, route, body, query, tool, args in [
            ("GET", "", None, None, "inspect_sandbox", {}),
            ("DELETE", "", None, None, "destroy_sandbox", {}),
            ("POST", "/commands", {"cmd": "true"}, None, "exec_command",
             {"cmd": "true"}),
            ("POST", "/commands/%s/stdin" % cmd_r, {"stdin": "x"}, None,
             "write_command_stdin", {"command_session_id": cmd_r,
                                     "stdin": "x"}),
            ("GET", "/commands/%s/lines" % cmd_r, None, None,
             "read_command_lines", {"command_session_id": cmd_r}),
            ("GET", "/files", None, {"path": "README"}, "file_read",
             {"path": "README"}),
            ("PUT", "/files", {"path": "x", "content": "x"}, None,
             "file_write", {"path": "x", "content": "x"}),
            ("PATCH", "/files", {"path": "x", "edits": [
                {"old_string": "a", "new_string": "b"}]}, None,
             "file_edit", {"path": "x", "edits": [
                 {"old_string": "a", "new_string": "b"}]}),
            ("GET", "/blame", None, {"path": "README"}, "file_blame",
             {"path": "README"}),
            ("POST", "/export", {"dest": os.path.join(base, "exports",
                                                      "unknown")}, None,
             "export_changes", {"dest": os.path.join(base, "exports",
                                                     "unknown")}),
            ("POST", "/workspace-sessions", None, None,
             "create_workspace_session", {}),
            ("POST", "/workspace-sessions/%s/publish" % ws_live, None, None,
             "publish_workspace_session",
             {"workspace_session_id": ws_live}),
            ("DELETE", "/workspace-sessions/%s" % ws_live, None, None,
             "destroy_workspace_session",
             {"workspace_session_id": ws_live})]:
        cases.append(("an unknown sandbox: " + tool, "not_found", method,
                      u + route, body, query, tool,
                      dict(args, sandbox_id=UNKNOWN_SBOX)))
    for what, kind, method, path, body, query, tool, args in cases:
        err = same_error(what, kind, rest.req(method, path, body, query),
                         mcp.call(tool, args))
        if kind == "not_found" and "sandbox_id" in args and \
                args["sandbox_id"] == UNKNOWN_SBOX:
            check_eq(err["details"], {"sandbox_id": UNKNOWN_SBOX},
                     what + ": details")
    # Nothing of the refused writes was made.
    for name in ("elsewhere", "exports/x", "exports/z", "exports/unknown"):
        check(not os.path.lexists(os.path.join(base, name)),
              "a refused export made no %s" % name)
    for path in ("u.txt", "x"):
        same_error("no %s was written" % path, "not_found",
                   rest.req("GET", sb + "/files", query={"path": path}),
                   mcp.call("file_read", {"sandbox_id": R, "path": path}))
    check_eq(rest.ok("GET", sb + "/files", query={
        "path": "notes/a.txt"})["content"], "alpha\nBETA\ngamma\n",
             "the refused edits changed nothing")


def tenants(port, key_b, rest, R, cmd_r, ws_live, exports):
    """bob's key reaches none of alice's: her sandbox, its sessions and
    commands answer exactly as unknown ids, over REST as over MCP."""
    pwned = os.path.join(exports, "pwned.tar")
    brest = Rest(port, key_b, "bob")
    bmcp = Peer(port, key_b, "bob")
    lst = same_result("bob: list_sandboxes", brest.req("GET", "/v1/sandboxes"),
                      bmcp.call("list_sandboxes", {}))
    check_eq(lst, {"sandboxes": []}, "bob lists none of alice's")
    for method, route, body, query, tool, args in [
            ("GET", "", None, None, "inspect_sandbox", {}),
            ("DELETE", "", None, None, "destroy_sandbox", {}),
            ("POST", "/commands", {"cmd": "echo x > pwned"}, None,
             "exec_command", {"cmd": "echo x > pwned"}),
            ("POST", "/commands/%s/stdin" % cmd_r, {"stdin": "x"}, None,
             "write_command_stdin", {"command_session_id": cmd_r,
                                     "stdin": "x"}),
            ("GET", "/commands/%s/lines" % cmd_r, None, None,
             "read_command_lines", {"command_session_id": cmd_r}),
            ("GET", "/files", None, {"path": "notes/a.txt"}, "file_read",
             {"path": "notes/a.txt"}),
            ("GET", "/files", None, {"path": "live.txt",
                                     "workspace_session_id": ws_live},
             "file_read", {"path": "live.txt",
                           "workspace_session_id": ws_live}),
            ("PUT", "/files", {"path": "pwned", "content": "x"}, None,
             "file_write", {"path": "pwned", "content": "x"}),
            ("PATCH", "/files", {"path": "notes/a.txt", "edits": [
                {"old_string": "alpha", "new_string": "pwned"}]}, None,
             "file_edit", {"path": "notes/a.txt", "edits": [
                 {"old_string": "alpha", "new_string": "pwned"}]}),
            ("GET", "/blame", None, {"path": "notes/a.txt"}, "file_blame",
             {"path": "notes/a.txt"}),
            ("POST", "/export", {"dest": pwned, "format": "tar"}, None,
             "export_changes", {"dest": pwned, "format": "tar"}),
            ("POST", "/workspace-sessions", None, None,
             "create_workspace_session", {}),
            ("POST", "/workspace-sessions/%s/publish" % ws_live, None, None,
             "publish_workspace_session",
             {"workspace_session_id": ws_live}),
            ("DELETE", "/workspace-sessions/%s" % ws_live, None, None,
             "destroy_workspace_session",
             {"workspace_session_id": ws_live})]:
        what = "bob: %s of alice's sandbox" % tool
        got = brest.req(method, "/v1/sandboxes/%s%s" % (R, route), body,
                        query)
        unknown = brest.req(method, "/v1/sandboxes/%s%s" % (UNKNOWN_SBOX,
                                                            route),
                            body, query)
        check_eq(unknown[0], 404, what + ": an unknown sandbox is 404")
        check_eq((got[0], json.loads(json.dumps(got[2]).replace(
            R, UNKNOWN_SBOX))), (unknown[0], unknown[2]),
                 what + ": answered as an unknown id")
        same_error(what, "not_found", got,
                   bmcp.call(tool, dict(args, sandbox_id=R)))
    # alice's sandbox, session and files are as they were.
    check_eq(rest.ok("GET", "/v1/sandboxes/" + R)["state"], "ready",
             "alice's sandbox is still there")
    check_eq(rest.ok("GET", "/v1/sandboxes/%s/files" % R, query={
        "path": "live.txt", "workspace_session_id": ws_live})["content"],
             "live\n", "alice's session lives")
    check_eq(rest.ok("GET", "/v1/sandboxes/%s/files" % R, query={
        "path": "notes/a.txt"})["content"], "alpha\nBETA\ngamma\n",
             "alice's file unchanged")
    st, h, body = rest.req("GET", "/v1/sandboxes/%s/files" % R,
                           query={"path": "pwned"})
    check_eq(st, 404, "bob wrote nothing in alice's sandbox")
    check(not os.path.lexists(pwned), "bob exported nothing of alice's")


def routing(rest, mcp, R):
    """Paths, methods, bodies and query strings."""
    sb = "/v1/sandboxes/" + R
    for path in ("/v1/nope", sb + "/nope", sb + "/commands/%s" %
                 UNKNOWN_CMD, "/v1/sandboxes/%s/files/x" % R):
        rest_error("GET %s, no route" % path, 404, rest.req("GET", path),
                   "not_found")
    for method, path, want in [
            ("PUT", "/v1/sandboxes", {"GET", "POST"}),
            ("DELETE", "/v1/docker-images", {"GET"}),
            ("POST", sb, {"GET", "DELETE"}),
            ("DELETE", sb + "/files", {"GET", "PUT", "PATCH"}),
            ("GET", sb + "/commands", {"POST"}),
            ("GET", sb + "/export", {"POST"}),
            ("GET", sb + "/commands/%s/stdin" % UNKNOWN_CMD, {"POST"}),
            ("POST", sb + "/workspace-sessions/%s" % UNKNOWN_WS,
             {"DELETE"})]:
        st, h, body = rest.req(method, path)
        rest_error("%s %s, another method" % (method, path), 405,
                   (st, h, body))
        check_eq(allow_set(h), want, "%s %s: Allow" % (method, path))
    for path, want in [(sb + "/files", {"GET", "PUT", "PATCH"}),
                       ("/v1/sandboxes", {"GET", "POST"}),
                       (sb + "/commands", {"POST"})]:
        st, h, body = rest.req("OPTIONS", path)
        check_eq((st, body), (204, None), "OPTIONS %s" % path)
        check_eq(allow_set(h) - {"OPTIONS"}, want,
                 "OPTIONS %s: the methods it takes" % path)
    rest_error("OPTIONS, no route", 404, rest.req("OPTIONS", "/v1/nope"),
               "not_found")

    # The body: a JSON object, sent as application/json.
    put = {"path": "ct.txt", "content": "x\n"}
    for ct in ("text/plain", None):
        rest_error("a body of Content-Type %s" % ct, 415,
                   rest.req("PUT", sb + "/files", put,
                            headers={"Content-Type": ct}))
    rest_error("a form body", 415, rest.req(
        "PUT", sb + "/files", b"path=ct.txt&content=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"}))
    for raw in (b"[1, 2]", b'"text"', b"null", b"7", b"{bad json",
                b'{"path": "ct.txt"'):
        rest_error("a body %r" % raw, 400, rest.req(
            "PUT", sb + "/files", raw), "invalid_request")
    same_error("nothing was written by refused bodies", "not_found",
               rest.req("GET", sb + "/files", query={"path": "ct.txt"}),
               mcp.call("file_read", {"sandbox_id": R, "path": "ct.txt"}))
    w = rest.req("PUT", sb + "/files", put, headers={
        "Content-Type": "application/json; charset=utf-8"})
    check_eq((w[0], w[2] and w[2].get("type")), (200, "create"),
             "application/json with a charset is JSON")

    # An argument given twice.
    dup = [
        ("in the path and the body", "PUT", sb + "/files",
         {"sandbox_id": R, "path": "dup.txt", "content": "x"}, None),
        ("in the query and the body", "PUT", sb + "/files",
         {"path": "dup.txt", "content": "x"}, {"path": "dup.txt"}),
        ("in the path and the query", "GET", sb, None, {"sandbox_id": R}),
        ("in the path and the query, runtime", "PUT", sb + "/files",
         {"path": "dup.txt", "content": "x"}, {"sandbox_id": R}),
        ("twice in the query", "GET", sb + "/files", None,
         "path=README&path=README"),
        ("twice in the query, once encoded", "PUT", sb + "/files",
         {"content": "x"}, "path=dup.txt&pat%68=dup.txt"),
    ]
    for what, method, path, body, query in dup:
        rest_error("an argument given " + what, 400,
                   rest.req(method, path, body, query), "invalid_request")
    same_error("nothing was written by refused duplicates", "not_found",
               rest.req("GET", sb + "/files", query={"path": "dup.txt"}),
               mcp.call("file_read", {"sandbox_id": R, "path": "dup.txt"}))
    # The same arguments once each, split between query and body, work.
    w = rest.req("PUT", sb + "/files", {"content": "q\n"},
                 {"path": "dup.txt"})
    check_eq((w[0], w[2] and w[2].get("path")), (200, "dup.txt"),
             "path in the query, content in the body")


def keys(port, key_m, key_r, rest, R):
    """Keys as for /mcp: none or an unknown one is 401, one that does not
    grant the route's set 403, and a page of ours is refused."""
    sb = "/v1/sandboxes/" + R
    for key, what in [(None, "no key"), ("smcp_" + "A" * 43,
                                         "an unknown key")]:
        st, h, body = Rest(port, key, what).req("GET", "/v1/sandboxes")
        rest_error(what, 401, (st, h, body), "unauthorized")
        check(h.get("www-authenticate", "").startswith("Bearer"),
              what + ": WWW-Authenticate: %r" % (h,))
        rest_error(what + ", runtime", 401, Rest(port, key, what).req(
            "POST", sb + "/commands", {"cmd": "echo x > nokey"}),
            "unauthorized")
    ops = Rest(port, key_m, "ops (management)")
    check_eq(ops.ok("GET", "/v1/sandboxes"), {"sandboxes": []},
             "ops: a management route, its own tenant's sandboxes")
    for method, path, body in [
            ("GET", sb + "/files?path=README", None),
            ("POST", sb + "/commands", {"cmd": "echo x > nogrant"}),
            ("PUT", sb + "/files", {"path": "nogrant", "content": "x"})]:
        rest_error("ops: %s %s, a runtime route" % (method, path), 403,
                   ops.req(method, path, body), "unauthorized")
    runner = Rest(port, key_r, "runner (runtime)")
    for path in ("/v1/sandboxes", "/v1/docker-images", sb):
        rest_error("runner: GET %s, a management route" % path, 403,
                   runner.req("GET", path), "unauthorized")
    # runner holds the runtime set but is another tenant: not_found.
    rest_error("runner: alice's sandbox", 404, runner.req(
        "GET", sb + "/files", query={"path": "README"}), "not_found")

    for method, path, body in [
            ("GET", "/v1/sandboxes", None),
            ("GET", sb + "/files?path=README", None),
            ("PUT", sb + "/files", {"path": "page.txt", "content": "x"})]:
        rest_error("Sec-Fetch-Site: same-origin, %s %s" % (method, path),
                   403, rest.req(method, path, body, headers={
                       "Sec-Fetch-Site": "same-origin"}), "unauthorized")
    st, h, body = rest.req("GET", "/v1/sandboxes", headers={
        "Sec-Fetch-Site": "none"})
    check_eq(st, 200, "Sec-Fetch-Site: none is no page of ours")
    # The Origin guard of /mcp: a foreign Origin is refused, a loopback
    # page on another port passes; an Origin naming this server itself
    # (by another of its names) is a page of ours, served through the
    # forward route, and refused as Sec-Fetch-Site: same-origin is.
    for method, path, body in [
            ("GET", "/v1/sandboxes", None),
            ("PUT", sb + "/files", {"path": "origin.txt", "content": "x"})]:
        rest_error("a foreign Origin, %s %s" % (method, path), 403,
                   rest.req(method, path, body, headers={
                       "Origin": "http://evil.example"}))
    st, h, body = rest.req("GET", "/v1/sandboxes", headers={
        "Origin": "http://127.0.0.1:5173"})
    check_eq(st, 200, "a loopback Origin on another port")
    for origin in ("http://127.0.0.1:%d" % port, "http://localhost:%d" % port):
        err = rest_error("the server's own Origin %s" % origin, 403,
                         rest.req("PUT", sb + "/files", {
                             "path": "page.txt", "content": "x"},
                             headers={"Origin": origin}), "unauthorized")
        check_in("forward route", err["message"], "own Origin: message")
    for path in ("nokey", "nogrant", "page.txt", "origin.txt"):
        st, h, body = rest.req("GET", sb + "/files", query={"path": path})
        check_eq(st, 404, "a refused request wrote no %s" % path)


def second_server(conf, state, key, rest, R):
    """A process on the same state directory that serves only the
    management set: its management routes answer, a runtime route is
    404 even for a key that grants the set and a sandbox that exists."""
    m = Server(sets=("management",), config=conf, listen="127.0.0.1:0",
               stdio=False, state=state)
    r2 = Rest(m.port, key, "alice@management")
    check_eq(r2.ok("GET", "/v1/sandboxes/" + R),
             rest.ok("GET", "/v1/sandboxes/" + R),
             "the management process reads the same record")
    sb = "/v1/sandboxes/" + R
    check_eq(rest.req("GET", sb + "/files", query={"path": "README"})[0],
             200, "the runtime route on the first server")
    for method, path, body in [
            ("GET", sb + "/files?path=README", None),
            ("POST", sb + "/commands", {"cmd": "echo x > served"}),
            ("POST", sb + "/workspace-sessions", None)]:
        rest_error("management only: %s %s" % (method, path), 404,
                   r2.req(method, path, body), "not_found")
    check_eq(rest.req("GET", sb + "/files", query={"path": "served"})[0],
             404, "the refused command did not run")
    return m


main(test)
