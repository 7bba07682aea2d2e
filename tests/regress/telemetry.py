#!/usr/bin/env python3
# Telemetry: every tools/call writes a root span "tool.<name>" whose trace
# is the call's request id, Docker calls write child spans under it, and
# the log is NDJSON that another process can read.

import json
import os

from lib import Server, check, check_eq, check_in, main, ok_result


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test():
    s = Server(config="workspace-root /tmp\n")
    s.initialize()
    ok_result(s.call("list_docker_images"), "list_docker_images")
    s.call("list_workspace_directories", {"path": "relative"})
    # An unknown tool is a protocol error: no tool ran, no span.
    r = s.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    check_eq(r["error"]["code"], -32602, "unknown tool")
    s.request("tools/list")
    s.close_stdin()
    check_eq(s.wait_exit(), 0, "exit")

    path = os.path.join(s.state, "telemetry", "events.ndjson")
    check(os.path.exists(path), "telemetry log at " + path)
    recs = records(path)
    spans = [r for r in recs if r["kind"] == "span"]
    roots = [r for r in spans if "parent" not in r and
             r["name"].startswith("tool.")]
    check_eq([r["name"] for r in roots],
             ["tool.list_docker_images", "tool.list_workspace_directories"],
             "one root span per tool call that ran")
    for r in spans:
        for key in ("ts", "trace", "span", "name", "dur_ms", "status",
                    "attrs"):
            check(key in r, "span field %s in %r" % (key, r))
        check(isinstance(r["dur_ms"], (int, float)) and r["dur_ms"] >= 0,
              "dur_ms")
    images = roots[0]
    check_eq(images["status"], "completed", "status of a good call")
    check_eq(images["attrs"]["op"], "list_docker_images", "attrs.op")
    children = [r for r in spans if r.get("parent") == images["span"]]
    check_eq([c["name"] for c in children], ["docker.images_list"],
             "child span for the Docker call")
    child = children[0]
    check_eq(child["trace"], images["trace"], "child in the same trace")
    check_eq((child["attrs"]["method"], child["attrs"]["path"],
              child["attrs"]["http_status"]), ("GET", "/images/json", 200),
             "child attrs")
    check(child["ts"] >= images["ts"], "child starts after its root")
    bad = roots[1]
    check_eq(bad["status"], "error", "status of a refused call")
    check_eq(bad["attrs"]["error_kind"], "invalid_request", "error kind")
    check_eq(len({r["trace"] for r in roots}), 2, "a trace per call")
    check_eq(len({r["span"] for r in spans}), len(spans), "unique spans")


main(test)
