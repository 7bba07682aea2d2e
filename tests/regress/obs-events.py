#!/usr/bin/env python3
# The observability set's events and trace tools, against the real
# Docker Engine:
# - the last tool call on a sandbox is its trace: the root span, by
#   "last" and by its id, the same over REST; an unknown trace has no
#   spans;
# - a runtime process does a known script of calls; a separate process
#   with only --set observability, on the same state directory, lists
#   the sandbox's events newest first, by exact name, since a time, the
#   last N, and the same over REST;
# - a last line still being written (no LF yet) is left out until it is
#   whole; a rotated log (events.ndjson.1) is read after the current one;
#   a log of 8 MiB of other lines answers, and reading it 100 times does
#   not grow the server;
# - over HTTP a key sees only its tenant's sandboxes: another tenant's
#   sandbox answers as an unknown one.

import json
import os

from lib import (IMAGE, check, check_eq, check_in, cleanup, Http, http_json,
                 http_session, keygen, main, ok_result, remove_our_containers,
                 rss_kib, Server, tmpdir)


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "a.txt"), "w") as f:
        f.write("a\n")
    state = os.path.join(top, "state")
    key_a, line_a = keygen("ta", "management", "runtime", "observability")
    key_b, line_b = keygen("tb", "observability")
    conf = "workspace-root %s\n%s\n%s\n" % (top, line_a, line_b)
    run = Server(sets=("management", "runtime"), state=state, config=conf,
                 listen="127.0.0.1:0", stdio=False)
    cleanup(lambda: remove_our_containers(state))
    conn_a, hdr_a = http_session(run.port, key=key_a)
    rid = [10]

    def call_a(tool, args):
        rid[0] += 1
        st, h, body = conn_a.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
            "params": {"name": tool, "arguments": args}}, hdr_a)
        check_eq(st, 200, "%s status" % tool)
        return ok_result(http_json(body)["result"], "ta: " + tool)

    # ta's sandbox, and a known script of calls in it.
    sid = call_a("create_sandbox", {"image": IMAGE,
                                    "workspace_root": ws})["id"]
    for i in range(3):
        call_a("exec_command", {"sandbox_id": sid,
                                "cmd": "echo %d > f%d" % (i, i)})
    w = call_a("create_workspace_session", {
        "sandbox_id": sid})["workspace_session_id"]
    call_a("destroy_workspace_session", {"sandbox_id": sid,
                                         "workspace_session_id": w})

    obs = Server(sets=("observability",), state=state, config=conf,
                 listen="127.0.0.1:0")
    obs.initialize()
    tools = obs.request("tools/list")["result"]["tools"]
    check_eq([t["name"] for t in tools],
             ["events", "trace", "snapshot", "cgroup", "layerstack"],
             "the set's tools")

    def events(**args):
        args["sandbox_id"] = sid
        return ok_result(obs.call("events", args), "events %r" % args)

    # The last tool call on the sandbox, as a trace: its root span.
    tr = ok_result(obs.call("trace", {"sandbox_id": sid}), "trace last")
    check_eq(tr["view"], "trace", "the trace view")
    check_eq(len(tr["spans"]), 1, "one root: %r" % tr)
    root = tr["spans"][0]
    check_eq((root["span"]["name"], root["span"]["status"],
              root["offset_ms"]), ("tool.destroy_workspace_session",
                                   "completed", 0), "the root span")
    check_eq(root["span"]["trace"], tr["trace"], "its trace")
    check(isinstance(root["children"], list) and
          isinstance(root["events"], list), "children and events")
    again = ok_result(obs.call("trace", {"sandbox_id": sid,
                                         "trace_id": tr["trace"]}),
                      "trace by id")
    check_eq(again, tr, "the same trace by its id")
    none = ok_result(obs.call("trace", {"sandbox_id": sid,
                                        "trace_id": "no-such-trace"}),
                     "an unknown trace")
    check_eq(none["spans"], [], "an unknown trace has no spans")
    st, h, body = Http(obs.port).request(
        "GET", "/v1/sandboxes/%s/trace?trace_id=%s" % (sid, tr["trace"]),
        None, {"Authorization": "Bearer " + key_a})
    check_eq((st, http_json(body)), (200, tr), "the trace over REST")

    every = events()
    check_eq(every["view"], "events", "the view")
    ev = every["events"]
    names = [e["name"] for e in ev]
    check(len(ev) >= 8, "every event: %r" % names)
    ts = [e["ts"] for e in ev]
    check_eq(ts, sorted(ts, reverse=True), "newest first")
    for e in ev:
        check_eq(sorted(e), ["attrs", "name", "parent", "trace", "ts"],
                 "an event's fields")
    check_eq(names[0], "session.destroyed", "the newest")
    check_eq(ev[0]["attrs"].get("workspace_session_id"), w,
             "its session: %r" % ev[0])
    check_eq(names.count("layer.published"), 3, "three layers: %r"
             % names)
    pub = events(name="layer.published")["events"]
    check_eq([e["name"] for e in pub], ["layer.published"] * 3, "by name")
    check_eq(pub, [e for e in ev if e["name"] == "layer.published"],
             "the same records by name")
    check_eq(events(last_n=2)["events"], ev[:2], "the last two")
    check_eq(events(last_n=0)["events"], [], "none asked for")
    check_eq(events(since_ms=pub[1]["ts"])["events"],
             [e for e in ev if e["ts"] >= pub[1]["ts"]], "since a time")
    check_eq(events(name="no.such")["events"], [], "an unknown name")
    r = obs.call("events", {"sandbox_id": "sbox-000000000000"})
    check_eq(r["structuredContent"]["error"]["kind"], "not_found",
             "an unknown sandbox")
    r = obs.call("events", {"sandbox_id": sid, "last_n": -1})
    check_eq(r["structuredContent"]["error"]["kind"], "invalid_request",
             "a negative last_n")

    # REST, and tenants over HTTP.
    st, h, body = Http(obs.port).request(
        "GET", "/v1/sandboxes/%s/events?name=layer.published&last_n=1"
        % sid, None, {"Authorization": "Bearer " + key_a})
    check_eq(st, 200, "REST status: %r" % body)
    check_eq(http_json(body)["events"], pub[:1], "REST answers the same")
    conn, hdr = http_session(obs.port, key=key_b)
    st, h, body = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "events", "arguments": {"sandbox_id": sid}}},
        hdr)
    err = http_json(body)["result"]["structuredContent"]["error"]
    check_eq((err["kind"], err["message"]),
             ("not_found", "no sandbox %s" % sid),
             "tb sees ta's sandbox as an unknown one")

    # A last line being written, then whole.
    log = os.path.join(state, "sandboxes", sid, "telemetry",
                       "events.ndjson")
    line = json.dumps({"kind": "event", "ts": ts[0] + 1000, "trace": "t",
                       "parent": None, "name": "test.partial",
                       "attrs": {"n": 1}})
    with open(log, "a") as f:
        f.write(line[:20])
    check_eq(events(last_n=1)["events"], ev[:1], "a partial line is left"
             " out")
    with open(log, "a") as f:
        f.write(line[20:] + "\n")
    check_eq(events(last_n=1)["events"][0]["name"], "test.partial",
             "whole, it is read")

    # Rotated: the current log's lines first, then the older file's.
    os.rename(log, log + ".1")
    newer = json.dumps({"kind": "event", "ts": ts[0] + 2000, "trace": "t",
                        "parent": None, "name": "test.after", "attrs": {}})
    with open(log, "w") as f:
        f.write(newer + "\n")
    got = events()["events"]
    check_eq([e["name"] for e in got[:2]], ["test.after", "test.partial"],
             "across the rotation: %r" % [e["name"] for e in got[:3]])
    check_eq(got[2:], ev, "and the rest as before")

    # 8 MiB of span lines after the events: the last events still come.
    span = json.dumps({"kind": "span", "ts": ts[0] + 3000, "trace": "t",
                       "span": "s", "name": "x", "dur_ms": 1,
                       "status": "completed", "attrs": {"pad": "p" * 900}})
    with open(log, "a") as f:
        for _ in range(8 * 1024 * 1024 // (len(span) + 1)):
            f.write(span + "\n")
    check_eq(events(last_n=1)["events"][0]["name"], "test.after",
             "found behind 8 MiB of spans")
    # Lines of every length across the 64 KiB slices the log is read in:
    # each wanted one is found whole, once, in order.
    with open(log, "a") as f:
        for i in range(3000):
            f.write(json.dumps({"kind": "event", "ts": ts[0] + 4000 + i,
                                "trace": "t", "parent": None,
                                "name": "test.many",
                                "attrs": {"seq": i,
                                          "pad": "q" * (i * 7919 % 3000)}})
                    + "\n")
            if i % 3 == 0:
                f.write(span + "\n")
    many = events(name="test.many", last_n=1500)["events"]
    check_eq([e["attrs"]["seq"] for e in many], list(range(2999, 1499, -1)),
             "by name, across slices")
    check_eq(events(last_n=1500)["events"], many, "every event, the same")
    # A trace written by another writer: blanks after colons, a CR for a
    # blank, escapes in attrs, a record nested 300 deep, records out of
    # order; every record comes back as it was, in time order. A record
    # whose span id needs an escape belongs to no tree.
    h = "h" * 32
    t0 = ts[0] + 20000
    deep = {}
    for _ in range(100):
        deep = {"d": deep}
    toodeep = deep
    for _ in range(100):
        toodeep = {"d": toodeep}
    recs = {
        "root": {"kind": "span", "ts": t0, "trace": h, "span": "root1",
                 "name": "tool.hand", "dur_ms": 9.5, "status": "completed",
                 "attrs": {"op": "hand"}},
        "c2": {"kind": "span", "ts": t0 + 2, "trace": h, "span": "c2",
               "parent": "root1", "name": "step.b", "dur_ms": 0.25,
               "status": "completed", "attrs": {}},
        "c1": {"kind": "span", "ts": t0 + 1, "trace": h, "span": "c1",
               "parent": "root1", "name": "step.a", "dur_ms": 1,
               "status": "completed", "attrs": {"s": "\u00e9\n\"x"}},
        "c3": {"kind": "span", "ts": t0 + 3, "trace": h, "span": "c3",
               "parent": "root1", "name": "step.deep", "dur_ms": 1,
               "status": "completed", "attrs": deep},
        "ev": {"kind": "event", "ts": t0 + 1, "trace": h, "parent": "c1",
               "name": "hand.ev", "attrs": {"n": 1}},
        "bad": {"kind": "span", "ts": t0 + 4, "trace": h,
                "span": "q\"uote", "parent": "root1", "name": "step.bad",
                "dur_ms": 1, "status": "completed", "attrs": {}},
        "toodeep": {"kind": "span", "ts": t0 + 5, "trace": h,
                    "span": "c5", "parent": "root1", "name": "step.deeper",
                    "dur_ms": 1, "status": "completed", "attrs": toodeep},
        "c4": {"kind": "span", "ts": t0 + 4, "trace": h, "span": "c4",
               "parent": "root1", "name": "step.odd", "dur_ms": 1,
               "status": "completed", "attrs": {"s": "a?b"}},
    }
    with open(log, "ab") as f:
        f.write(json.dumps(recs["c2"]).replace(", ", ",\r").encode() +
                b"\n")
        for k in ("ev", "c1", "c3", "bad", "toodeep", "root"):
            f.write(json.dumps(recs[k]).encode() + b"\n")
        # An escaped member name and a byte that is not UTF-8: printed
        # anew, the byte as '?'.
        f.write(json.dumps(recs["c4"]).replace('"status"', '"st\\u0061tus"')
                .replace("a?b", "a\x01b").encode().replace(b"\x01", b"\xff")
                + b"\n")
        # A member named twice: decoders differ on which counts.
        f.write(json.dumps(recs["c1"])[:-1].encode() +
                b', "span": "c9", "name": "twice"}\n')
    hand = ok_result(obs.call("trace", {"sandbox_id": sid,
                                        "trace_id": h}), "a hand trace")
    check_eq(len(hand["spans"]), 1, "one root")
    root = hand["spans"][0]
    check_eq((root["span"], root["offset_ms"], root["events"]),
             (recs["root"], 0, []), "the root as written")
    check_eq([(c["span"], c["offset_ms"]) for c in root["children"]],
             [(recs["c1"], 1), (recs["c2"], 2), (recs["c3"], 3),
              (recs["c4"], 4)],
             "its children as written, oldest first")
    check("truncated" not in hand, "nothing was cut")
    # A chain of 70 spans: 64 levels below the root, and truncated.
    c = "c" * 32
    with open(log, "a") as f:
        for i in range(71):
            rec = {"kind": "span", "ts": t0 + 100 + i, "trace": c,
                   "span": "n%d" % i, "name": "chain", "dur_ms": 0,
                   "status": "completed", "attrs": {}}
            if i > 0:
                rec["parent"] = "n%d" % (i - 1)
            f.write(json.dumps(rec) + "\n")
    chain = ok_result(obs.call("trace", {"sandbox_id": sid,
                                         "trace_id": c}), "a deep chain")
    node, levels = chain["spans"][0], 0
    while node["children"]:
        node, levels = node["children"][0], levels + 1
    check_eq((levels, chain.get("truncated")), (64, True),
             "a chain cut 64 levels down says so")
    check_eq(root["children"][0]["events"], [recs["ev"]],
             "the event under its span")
    before = rss_kib(obs.proc.pid)
    for _ in range(100):
        check_eq(len(events(name="layer.published")["events"]), 3,
                 "read again")
        check_eq(len(ok_result(obs.call("trace", {"sandbox_id": sid,
                                                  "trace_id": h}),
                               "trace again")["spans"]), 1, "traced again")
    grown = rss_kib(obs.proc.pid) - before
    check(grown < 4096, "100 reads grew the server by %d KiB" % grown)
    obs.kill()
    run.kill()


main(test)
