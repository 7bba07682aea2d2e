#!/usr/bin/env python3
# API keys, grants, the Origin guard and the loopback Host guard, and the
# refusal to listen beyond loopback without a key.

import json
import hashlib
import re
import subprocess

from lib import (BIN, Http, Server, check, check_eq, check_in, http_json,
                 http_session, keygen, main, tmpdir)


def test():
    # keygen prints a key and the line that stores only its hash.
    key_a, line_a = keygen("alice", "management", "observability")
    check(re.fullmatch(r"smcp_[A-Za-z0-9_-]{43}", key_a), "key format %r"
          % key_a)
    want = "api-key alice sha256:%s sets management,observability" % \
        hashlib.sha256(key_a.encode()).hexdigest()
    check_eq(line_a, want, "api-key line")
    key_b, line_b = keygen("bob", "management")
    key_c, line_c = keygen("carol", "runtime")

    s = Server(config="%s\n%s\n%s\n" % (line_a, line_b, line_c),
               listen="127.0.0.1:0", stdio=False)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"}}

    # No key, a malformed header, a wrong key: 401 with the challenge.
    for hdr, what in [({}, "no key"),
                      ({"Authorization": "Basic YTpi"}, "not Bearer"),
                      ({"Authorization": "Bearer smcp_wrong"}, "wrong key"),
                      ({"Authorization": "Bearer " + key_a[:-1]},
                       "truncated key")]:
        c = Http(s.port)
        st, h, b = c.request("POST", "/mcp", init, hdr)
        check_eq(st, 401, what)
        check(h.get("www-authenticate", "").startswith(
            'Bearer realm="sandbox-mcp"'), what + ": WWW-Authenticate")
        check(http_json(b)["error"]["message"], what + ": JSON body")
    # DELETE and GET need the key too.
    c = Http(s.port)
    check_eq(c.request("GET", "/mcp")[0], 401, "GET without a key")
    # /health needs none.
    check_eq(Http(s.port).request("GET", "/health")[0], 200, "/health")
    # A host asking for OAuth discovery first is told to send the key.
    for path in ("/.well-known/oauth-protected-resource",
                 "/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-authorization-server"):
        st, h, body = Http(s.port).request("GET", path)
        check_eq(st, 404, path)
        desc = json.loads(body)["error_description"]
        check("static API keys" in desc and "Bearer" in desc,
              "%s says to use an API key: %r" % (path, desc))

    # The right key opens a session; the tools are the intersection of
    # the process's sets and the key's grant.
    ca, ha = http_session(s.port, key=key_a)
    st, h, b = ca.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 2,
                                           "method": "tools/list"}, ha)
    check_eq(len(http_json(b)["result"]["tools"]), 8, "alice's tools")

    # A key granting none of the process's sets is refused.
    c = Http(s.port)
    st, h, b = c.request("POST", "/mcp", init,
                         {"Authorization": "Bearer " + key_c})
    check_eq(st, 403, "key with no granted set of this process")

    # A session is bound to its key: bob cannot use alice's session.
    hb = dict(ha, Authorization="Bearer " + key_b)
    c = Http(s.port)
    st, h, b = c.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 3,
                                          "method": "ping"}, hb)
    check_eq(st, 404, "another key's session")
    c = Http(s.port)
    check_eq(c.request("DELETE", "/mcp", None, hb)[0], 404,
             "DELETE of another key's session")
    # alice's session still works.
    st, h, b = ca.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 4,
                                           "method": "ping"}, ha)
    check_eq(st, 200, "alice's session after bob's attempts")
    check("smcp_" not in s.log(), "keys are never logged")

    # Origin guard: a foreign Origin is refused, loopback forms pass.
    c = Http(s.port)
    st, h, b = c.request("POST", "/mcp", init,
                         {"Authorization": "Bearer " + key_a,
                          "Origin": "https://evil.example"})
    check_eq(st, 403, "foreign Origin")
    for origin in ["http://localhost", "http://127.0.0.1:%d" % s.port,
                   "https://[::1]:8443"]:
        c = Http(s.port)
        st, h, b = c.request("POST", "/mcp", init,
                             {"Authorization": "Bearer " + key_a,
                              "Origin": origin})
        check_eq(st, 200, "loopback Origin " + origin)
    for origin in ["null", "http://localhost.evil.example",
                   "http://127.0.0.1.evil.example:80"]:
        c = Http(s.port)
        st, h, b = c.request("POST", "/mcp", init,
                             {"Authorization": "Bearer " + key_a,
                              "Origin": origin})
        check_eq(st, 403, "Origin " + origin)
    # Host guard on loopback.
    c = Http(s.port)
    st, h, b = c.request("POST", "/mcp", init,
                         {"Authorization": "Bearer " + key_a},
                         host="evil.example")
    check_eq(st, 403, "foreign Host on loopback")
    for host in ["localhost:1234", "[::1]", "127.0.0.1"]:
        c = Http(s.port)
        st, h, b = c.request("POST", "/mcp", init,
                             {"Authorization": "Bearer " + key_a},
                             host=host)
        check_eq(st, 200, "Host " + host)
    c = Http(s.port)
    c.send_raw(b"GET /health HTTP/1.1\r\n\r\n")
    check_eq(c.response()[0], 400, "HTTP/1.1 without Host")

    # A configured origin is allowed; the allow-list is exact.
    s2 = Server(config="allow-origin https://console.example.com\n",
                listen="127.0.0.1:0", stdio=False)
    for origin, want in [("https://console.example.com", 200),
                         ("https://console.example.com:444", 403),
                         ("http://console.example.com", 403)]:
        c = Http(s2.port)
        st, h, b = c.request("POST", "/mcp", init, {"Origin": origin})
        check_eq(st, want, "configured Origin " + origin)

    # X-Forwarded-For is believed only from a trusted proxy.
    s3 = Server(config="trusted-proxy 127.0.0.1\n", listen="127.0.0.1:0",
                stdio=False, args=["-v"])
    c = Http(s3.port)
    c.request("GET", "/health", None, {"X-Forwarded-For": "203.0.113.9"})
    s4 = Server(config="", listen="127.0.0.1:0", stdio=False, args=["-v"])
    c = Http(s4.port)
    c.request("GET", "/health", None, {"X-Forwarded-For": "203.0.113.9"})
    import time
    time.sleep(0.2)
    check_in("forwarded-for=203.0.113.9", s3.log(), "trusted proxy log")
    check("203.0.113.9" not in s4.log(), "untrusted X-Forwarded-For")

    # No key and a non-loopback address: refused at start and by -n.
    d = tmpdir()
    for args in (["-n"], ["--set", "management", "--no-stdio"]):
        r = subprocess.run([BIN, "-f", "/dev/null", "--state-dir", d,
                            "--listen", "0.0.0.0:0"] + args,
                           capture_output=True, text=True, timeout=10)
        check(r.returncode in (1, 2), "non-loopback without a key: %r" % r)
        check_in("not a loopback address", r.stderr, "message")
        check_eq(r.stdout, "", "nothing on stdout")


main(test)
