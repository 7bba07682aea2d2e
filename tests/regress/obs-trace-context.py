#!/usr/bin/env python3
# W3C trace context from the caller (params._meta.traceparent on MCP, the
# traceparent header on REST), against the real Docker Engine:
# - a tool call that carries it joins the caller's trace: its root span
#   has the caller's trace id, the caller's span as parent
#   (parent_remote), our request id as attrs.request_id, the tenant and
#   the key's name (never the key);
# - trace finds it by the caller's trace id, which holds every call made
#   under it, and by the request id; "last" finds it too;
# - a traceparent that is not one (all-zero ids, version ff, upper case,
#   too short, a version-00 one with more after it) is ignored: the call
#   gets a trace of its own;
# - the steps of an exec_command are spans under its root: command.run,
#   and under it session.create and publish, with the events
#   command.started, command.finished (under command.run) and
#   layer.published (under publish); a managed session's publish has
#   layer.published under the tool call; a limit refused is a
#   limit.hit event; lease.acquired and lease.released are the
#   session's.

import json
import os

from lib import (IMAGE, check, check_eq, cleanup, http_json, http_session,
                 keygen, main, ok_result, remove_our_containers, Server,
                 tmpdir)

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN1 = "00f067aa0ba902b7"
SPAN2 = "00f067aa0ba902b8"


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    state = os.path.join(top, "state")
    key, line = keygen("agent-key", "management", "runtime",
                       "observability")
    conf = "workspace-root %s\n%s\nlimit commands-running 1\n" % (top, line)
    s = Server(sets=("management", "runtime", "observability"),
               state=state, config=conf, listen="127.0.0.1:0", stdio=False)
    cleanup(lambda: remove_our_containers(state))
    conn, hdr = http_session(s.port, key=key)
    rid = [10]

    def call(tool, args, meta=None):
        rid[0] += 1
        params = {"name": tool, "arguments": args}
        if meta is not None:
            params["_meta"] = meta
        st, h, body = conn.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
            "params": params}, hdr)
        check_eq(st, 200, "%s status" % tool)
        return ok_result(http_json(body)["result"], tool)

    sid = call("create_sandbox", {"image": IMAGE, "workspace_root": ws})["id"]

    # Two calls under the caller's trace, from two of its spans.
    call("exec_command", {"sandbox_id": sid, "cmd": "echo one > one"},
         {"traceparent": "00-%s-%s-01" % (TRACE, SPAN1),
          "tracestate": "vendor=value"})
    call("file_read", {"sandbox_id": sid, "path": "one"},
         {"traceparent": "00-%s-%s-00" % (TRACE, SPAN2)})

    tr = call("trace", {"sandbox_id": sid, "trace_id": TRACE})
    check_eq(tr["trace"], TRACE, "the caller's trace")
    roots = sorted(tr["spans"], key=lambda r: r["span"]["ts"])
    check_eq([r["span"]["name"] for r in roots],
             ["tool.exec_command", "tool.file_read"],
             "both calls are roots of the caller's trace")
    for r, parent in zip(roots, (SPAN1, SPAN2)):
        sp = r["span"]
        check_eq(sp["trace"], TRACE, "the span's trace")
        check_eq(sp["parent"], parent, "the caller's span is its parent")
        check_eq(sp.get("parent_remote"), True, "a remote parent")
        check_eq(sp["attrs"].get("tenant"), "agent-key", "the tenant")
        check_eq(sp["attrs"].get("key"), "agent-key", "the key's name")
        check(key not in json.dumps(sp), "the key itself is never written")
        check(len(sp["attrs"].get("request_id", "")) == 16,
              "our request id: %r" % sp["attrs"])

    # By our request id: the caller's trace again.
    req = roots[1]["span"]["attrs"]["request_id"]
    again = call("trace", {"sandbox_id": sid, "trace_id": req})
    check_eq(again["trace"], TRACE, "found by its request id")
    check_eq(len(again["spans"]), 2, "the whole trace")
    # "last": the last call that started (not the trace calls, which go
    # to the state directory's log).
    last = call("trace", {"sandbox_id": sid})
    check_eq(last["trace"], TRACE, "last is the caller's trace")
    unknown = call("trace", {"sandbox_id": sid, "trace_id": "0" * 32})
    check_eq((unknown["trace"], unknown["spans"]), ("0" * 32, []),
             "an unknown id")

    # Over REST, the traceparent header.
    rest_trace = "a" * 31 + "1"
    st, h, body = conn.request(
        "GET", "/v1/sandboxes/%s/files?path=one" % sid, None,
        dict(hdr, traceparent="00-%s-%s-01" % (rest_trace, SPAN1)))
    check_eq(st, 200, "a REST read: %r" % body[:200])
    tr = call("trace", {"sandbox_id": sid, "trace_id": rest_trace})
    check_eq([r["span"]["name"] for r in tr["spans"]], ["tool.file_read"],
             "the REST call joined the caller's trace")
    check_eq(tr["spans"][0]["span"]["parent"], SPAN1, "its parent")

    # layerstack over REST answers as over MCP (the trace calls meanwhile
    # change nothing of the stack).
    ls = call("layerstack", {"sandbox_id": sid})
    st, h, body = conn.request("GET", "/v1/sandboxes/%s/layerstack" % sid,
                               None, hdr)
    check_eq((st, http_json(body)), (200, ls), "layerstack over REST")

    # Not trace context: the call gets a trace of its own.
    bad = ["00-%s-%s-01" % ("0" * 32, SPAN1),
           "00-%s-%s-01" % (TRACE, "0" * 16),
           "ff-%s-%s-01" % (TRACE, SPAN1),
           "00-%s-%s-01" % (TRACE.upper(), SPAN1),
           "00-%s-%s-0" % (TRACE, SPAN1),
           "00-%s-%s-01-extra" % (TRACE, SPAN1),
           "00_%s-%s-01" % (TRACE, SPAN1)]
    for i, tp in enumerate(bad):
        call("file_read", {"sandbox_id": sid, "path": "one"},
             {"traceparent": tp})
        last = call("trace", {"sandbox_id": sid})
        root = last["spans"][0]["span"]
        check(last["trace"] not in (TRACE, "0" * 32) and
              "parent" not in root,
              "%r is not trace context: %r" % (tp, root))
    # A later version is read by its first four fields.
    call("file_read", {"sandbox_id": sid, "path": "one"},
         {"traceparent": "01-%s-%s-01-more" % ("b" * 32, SPAN2)})
    last = call("trace", {"sandbox_id": sid})
    check_eq(last["trace"], "b" * 32, "a later version's trace id")

    # The steps of an exec_command, under its root.
    call("exec_command", {"sandbox_id": sid, "cmd": "echo two > two"})
    tr = call("trace", {"sandbox_id": sid})
    root = tr["spans"][0]
    check_eq(root["span"]["name"], "tool.exec_command", "the root")

    def names(node):
        return sorted(c["span"]["name"] for c in node["children"])

    check_eq(names(root), ["command.run"], "the root's steps")
    run = root["children"][0]
    check_eq(names(run), ["publish", "session.create"], "command.run's")
    check_eq([e["name"] for e in run["events"]],
             ["command.started", "command.finished"], "its events")
    fin = run["events"][1]["attrs"]
    check_eq((fin["status"], fin["exit_code"]), ("ok", 0), "how it ended")
    check_eq(run["span"]["attrs"]["command_session_id"],
             fin["command_session_id"], "the command named")
    pub = [c for c in run["children"] if c["span"]["name"] == "publish"][0]
    check_eq([e["name"] for e in pub["events"]], ["layer.published"],
             "the publish's event")
    check_eq(pub["events"][0]["attrs"]["workspace_session_id"],
             run["span"]["attrs"]["workspace_session_id"],
             "the session published")
    for c in [run] + run["children"]:
        check_eq(c["span"]["status"], "completed",
                 "%s completed" % c["span"]["name"])
        check(c["offset_ms"] >= 0, "an offset from the root")

    # A managed session's publish: layer.published under the call.
    w = call("create_workspace_session",
             {"sandbox_id": sid})["workspace_session_id"]
    call("exec_command", {"sandbox_id": sid, "workspace_session_id": w,
                          "cmd": "echo three > three"})
    call("publish_workspace_session", {"sandbox_id": sid,
                                       "workspace_session_id": w})
    tr = call("trace", {"sandbox_id": sid})
    root = tr["spans"][0]
    check_eq(root["span"]["name"], "tool.publish_workspace_session",
             "the publish call")
    check_eq([e["name"] for e in root["events"]], ["layer.published"],
             "its event")

    # A limit refused: limit.hit, under the refused call.
    call("exec_command", {"sandbox_id": sid, "cmd": "sleep 30",
                          "yield_time_ms": 100})
    rid[0] += 1
    st, h, body = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
        "params": {"name": "exec_command", "arguments": {
            "sandbox_id": sid, "cmd": "true"}}}, hdr)
    res = http_json(body)["result"]
    check(res["isError"], "the second command is refused: %r" % res)
    ev = call("events", {"sandbox_id": sid, "name": "limit.hit"})
    check_eq(len(ev["events"]), 1, "one limit.hit")
    check_eq((ev["events"][0]["attrs"]["limit"],
              ev["events"][0]["attrs"]["op"]),
             ("commands-running", "exec_command"), "which limit, by what")
    # The published session has ended: its lease is let go.
    ev = call("events", {"sandbox_id": sid})["events"]
    got = [e["name"] for e in ev
           if e["attrs"].get("workspace_session_id") == w and
           e["name"].startswith("lease.")]
    check_eq(got, ["lease.released", "lease.acquired"],
             "the managed session's lease, newest first")
    acq = [e for e in ev if e["name"] == "lease.acquired" and
           e["attrs"]["workspace_session_id"] == w][0]
    check(acq["attrs"]["manifest_version"] >= 1 and
          acq["attrs"]["layer_count"] >= 1, "what it leased: %r" % acq)


main(test)
