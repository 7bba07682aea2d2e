#!/usr/bin/env python3
# GET /metrics, scraped by a real Prometheus, against the real Docker
# Engine:
# - on the listen address it needs a key granted "metrics": none is 401,
#   a tenant's key (tool sets only) is 403 naming the grant, the metrics
#   key is 200 in the text format (and gets 403 on /mcp: no tool set);
# - metrics-listen serves /metrics with no key and nothing else (404),
#   only to loopback Host names (a rebound name is 403, with or without
#   a --listen), and is refused on an address that is not loopback;
# - "metrics" is refused as a server's --set;
# - a known workload (a sandbox, commands that publish, a rejected
#   publish, a call to a tool that does not exist, one not found, one
#   command left running) gives exact counts: Prometheus scrapes both
#   endpoints and PromQL answers them;
# - a tool name a client sends never becomes a label.

import json
import os
import re
import subprocess
import time
import urllib.parse
import urllib.error
import urllib.request

from lib import (BIN, IMAGE, Http, check, check_eq, check_in, cleanup,
                 err_result, fail, http_json, http_session, keygen, main,
                 ok_result, remove_our_containers, Server, tmpdir)


def scrape(port, key=None):
    c = Http(port)
    hdr = {}
    if key is not None:
        hdr["Authorization"] = "Bearer " + key
    st, h, body = c.request("GET", "/metrics", None, hdr)
    c.close()
    return st, h, body.decode()


def sample(text, name, labels=None):
    """The value of one series in an exposition, or None."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r'^(\w+)(\{([^}]*)\})? (\S+)$', line)
        check(m is not None, "a sample line: %r" % line)
        if m.group(1) != name:
            continue
        got = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"',
                              m.group(3) or ""))
        if got == (labels or {}):
            return float(m.group(4))
    return None


class Prometheus:
    def __init__(self, jobs):
        self.dir = tmpdir("smcp-prom-")
        conf = os.path.join(self.dir, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n"
                    "  scrape_timeout: 1s\nscrape_configs:\n")
            for name, port, key in jobs:
                f.write("  - job_name: %s\n" % name)
                if key is not None:
                    f.write("    authorization:\n      credentials: %s\n"
                            % key)
                f.write("    static_configs:\n      - targets:"
                        " ['127.0.0.1:%d']\n" % port)
        self.log_path = os.path.join(self.dir, "log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + conf,
             "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:0"],
            stdout=self.log, stderr=self.log)
        cleanup(self.stop)
        end = time.time() + 30
        self.port = None
        while time.time() < end and self.port is None:
            with open(self.log_path) as f:
                m = re.search(r'msg="Listening on" address=127\.0\.0\.1:'
                              r'(\d+)', f.read())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                fail("prometheus exited: " + open(self.log_path).read())
            else:
                time.sleep(0.05)
        check(self.port is not None, "prometheus listens")
        # It answers queries once its storage is open: /-/ready says when.
        while time.time() < end:
            try:
                with urllib.request.urlopen(
                        "http://127.0.0.1:%d/-/ready" % self.port,
                        timeout=5) as r:
                    if r.status == 200:
                        return
            except urllib.error.HTTPError as e:
                check_eq(e.code, 503, "prometheus starting")
            time.sleep(0.05)
        fail("prometheus not ready: " + open(self.log_path).read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def query(self, q):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (
            self.port, urllib.parse.urlencode({"query": q}))
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.loads(r.read())
        check_eq(doc["status"], "success", "query %s" % q)
        return doc["data"]["result"]

    def value(self, q):
        res = self.query(q)
        return float(res[0]["value"][1]) if len(res) == 1 else None

    def wait_for(self, q, want, timeout=30):
        """Poll until the query answers want (scrapes are each second)."""
        end = time.time() + timeout
        got = None
        while time.time() < end:
            got = self.value(q)
            if got == want:
                return
            time.sleep(0.25)
        fail("PromQL %s answered %r, not %r" % (q, got, want))


def test():
    # The grant is a key's, never a server's set.
    r = subprocess.run([BIN, "--set", "runtime,metrics", "-n"],
                       capture_output=True, text=True)
    check_eq(r.returncode, 2, "--set metrics refused")
    check_in("not served as a tool set", r.stderr, "why")
    top = tmpdir()
    bad = os.path.join(top, "bad.conf")
    with open(bad, "w") as f:
        f.write("metrics-listen 0.0.0.0:9464\n")
    r = subprocess.run([BIN, "-f", bad, "-n", "--set", "runtime"],
                       capture_output=True, text=True)
    check_eq(r.returncode, 1, "metrics-listen off loopback refused")
    check_in("not a loopback address", r.stderr, "why")

    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "notes.txt"), "w") as f:
        f.write("".join("line %d\n" % i for i in range(1, 11)))
    agent, agent_line = keygen("agent", "management", "runtime")
    ops, ops_line = keygen("ops", "metrics")
    check(ops_line.endswith(" sets metrics"), "keygen grants metrics: %s"
          % ops_line)
    conf = "workspace-root %s\n%s\n%s\nmetrics-listen 127.0.0.1:0\n" % (
        top, agent_line, ops_line)
    s = Server(sets=("management", "runtime"), config=conf,
               listen="127.0.0.1:0", stdio=False)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    m = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/metrics",
                  s.log())
    check(m is not None, "the metrics listener's address is logged")
    mport = int(m.group(1))

    # Who may read it.
    st, h, body = scrape(s.port)
    check_eq(st, 401, "no key")
    st, h, body = scrape(s.port, agent)
    check_eq(st, 403, "a key without the grant")
    check_in("does not grant the metrics set", body, "the answer says why")
    st, h, body = scrape(s.port, ops)
    check_eq(st, 200, "the metrics key")
    check(h["content-type"].startswith("text/plain; version=0.0.4"),
          "the text format: %r" % h["content-type"])
    check_eq(sample(body, "sandbox_mcp_build_info", {"version": "0.1.0"}),
             1.0, "build_info")
    c = Http(s.port)
    st, h, b = c.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "x", "version": "1"}}},
        {"Authorization": "Bearer " + ops})
    check_eq(st, 403, "the metrics key serves no tool set")
    st, h, body = scrape(mport)
    check_eq(st, 200, "metrics-listen needs no key")
    c = Http(mport)
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 1,
                                          "method": "ping"})
    check_eq(st, 404, "metrics-listen serves nothing else")

    # The Host guard: metrics-listen answers this machine's names only,
    # even in a process with no other listener (DNS rebinding).
    st, h, b = Http(mport).request("GET", "/metrics", None,
                                   host="rebind.attacker.example")
    check_eq(st, 403, "a foreign Host on metrics-listen")
    lone = Server(sets=("management",), config="metrics-listen"
                  " 127.0.0.1:0\n")
    m = None
    end = time.time() + 10
    while m is None and time.time() < end:
        m = re.search(r"serving metrics on http://127\.0\.0\.1:(\d+)/",
                      lone.log())
        time.sleep(0.02)
    check(m is not None, "the lone metrics listener is logged")
    lport = int(m.group(1))
    st, h, b = Http(lport).request("GET", "/metrics", None,
                                   host="rebind.attacker.example")
    check_eq(st, 403, "a foreign Host, with no --listen")
    st, h, b = Http(lport).request("GET", "/metrics", None,
                                   host="localhost:%d" % lport)
    check_eq(st, 200, "localhost")
    lone.kill()

    # The known workload, over MCP with the agent's key.
    conn, hdr = http_session(s.port, key=agent)
    rid = [10]

    def call(tool, args):
        rid[0] += 1
        st, h, body = conn.request("POST", "/mcp", {
            "jsonrpc": "2.0", "id": rid[0], "method": "tools/call",
            "params": {"name": tool, "arguments": args}}, hdr)
        check_eq(st, 200, "%s status" % tool)
        doc = http_json(body)
        return doc.get("result", doc.get("error"))

    sid = ok_result(call("create_sandbox", {"image": IMAGE,
                                            "workspace_root": ws}),
                    "create")["id"]
    for i in range(3):
        ok_result(call("exec_command", {"sandbox_id": sid,
                                        "cmd": "echo %d > f%d" % (i, i)}),
                  "exec %d" % i)
    sess = []
    for who in ("e1", "e2"):
        r = ok_result(call("create_workspace_session", {"sandbox_id": sid}),
                      "session")
        sess.append(r["workspace_session_id"])
        ok_result(call("exec_command", {
            "sandbox_id": sid, "workspace_session_id": sess[-1],
            "cmd": "sed -i 's/^line 5$/five by %s/' notes.txt" % who}),
            "edit by %s" % who)
    ok_result(call("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": sess[0]}), "publish e1")
    err_result(call("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": sess[1]}),
        "operation_failed", "publish e2 is rejected")
    err_result(call("exec_command", {"sandbox_id": "0" * 64, "cmd": "true"}),
               "not_found", "no such sandbox")
    r = call('evil_tool{x="1"}\n', {})
    check_in("unknown tool", r.get("message", ""), "an unknown tool")
    r = ok_result(call("exec_command", {"sandbox_id": sid,
                                        "cmd": "sleep 600",
                                        "yield_time_ms": 100}),
                  "a command left running")
    check_eq(r["status"], "running", "the command runs on")

    st, h, text = scrape(mport)
    check_eq(st, 200, "scrape")
    for line in text.splitlines():
        check("evil" not in line, "a sent name is no label: %r" % line)
    check_eq(sample(text, "sandbox_mcp_commands_running"), 1.0,
             "one command running")
    check_eq(sample(text, "sandbox_mcp_workspace_sessions",
                    {"kind": "managed"}), 1.0,
             "the rejected session is kept, the published one is gone")
    hist = sample(text, "sandbox_mcp_tool_call_duration_seconds_count",
                  {"tool": "exec_command"})
    inf = sample(text, "sandbox_mcp_tool_call_duration_seconds_bucket",
                 {"tool": "exec_command", "le": "+Inf"})
    check_eq((hist, inf), (7.0, 7.0), "the histogram counts every call")
    check(sample(text, "sandbox_mcp_docker_requests_total") > 0,
          "Docker calls are counted")

    # A real Prometheus scrapes both endpoints and answers PromQL.
    p = Prometheus([("open", mport, None), ("keyed", s.port, ops)])
    p.wait_for('up{job="keyed"}', 1.0)
    p.wait_for('up{job="open"}', 1.0)
    p.wait_for('sandbox_mcp_tool_calls_total{job="keyed",'
               'tool="exec_command",outcome="ok"}', 6.0)
    p.wait_for('sandbox_mcp_tool_calls_total{job="open",'
               'tool="exec_command",outcome="not_found"}', 1.0)
    p.wait_for('sum by (outcome) (sandbox_mcp_publishes_total{job="open",'
               'outcome="published"})', 4.0)
    p.wait_for('sandbox_mcp_publishes_total{job="open",outcome="rejected"}',
               1.0)
    p.wait_for('sandbox_mcp_sandboxes{job="open",state="ready"}', 1.0)
    p.wait_for('sandbox_mcp_commands_running{job="keyed"}', 1.0)
    p.wait_for('sandbox_mcp_mcp_sessions{job="open",transport="http"}', 1.0)
    p.wait_for('sum(sandbox_mcp_tool_call_duration_seconds_count'
               '{job="open",tool="create_sandbox"})', 1.0)
    q = p.value('histogram_quantile(1, sum by (le) (sandbox_mcp_tool_call_'
                'duration_seconds_bucket{job="open",tool="create_sandbox"}))')
    check(q is not None and 0 < q <= 60, "PromQL reads the histogram: %r"
          % q)
    check(sum(1 for x in p.query('sandbox_mcp_http_responses_total'
                                  '{job="open",code="403"}')) == 1,
          "the refusals are counted by status")


main(test)
