#!/usr/bin/env python3
# Ownership over HTTP against the real Docker Engine. Every sandbox
# records the tenant of the key that made it (the key's name, or the
# tenant its api-key line groups it under); another tenant's sandbox,
# workspace session or command id answers exactly as an unknown one
# (same kind, message and details but for the id) and changes nothing,
# in every tool of the management and runtime sets and in the
# per-sandbox routes, in the process that made the sandbox and in a
# second process on the same state directory. list_sandboxes lists the
# caller's own; stdio (and HTTP with no key configured) is the local
# operator and sees everything; a record from before tenants is the
# local operator's. Workspace roots limited to tenants are, to anyone
# else, paths under no root. "local" is refused as a key's tenant.

import json
import os
import secrets
import subprocess
import time

from lib import (BIN, IMAGE, Peer, Server, check, check_eq, check_in, cleanup,
                 docker, err_result, http_json, http_session, keygen, main,
                 ok_result, remove_our_containers, tmpdir)

SETS = ("management", "runtime")


def unknown_sandbox():
    return "sbox-" + secrets.token_hex(6)


def same_as_unknown(peer, tool, args, real, fake, what):
    """The call naming real answers exactly as with fake in its place."""
    def swap(a, old, new):
        return {k: (new if v == old else v) for k, v in a.items()}
    got = peer.call(tool, args)
    want = peer.call(tool, swap(args, real, fake))
    check(want.get("isError") is True, "%s: the unknown id is an error: %r"
          % (what, want))
    check(got.get("isError") is True, "%s: %s by %s must fail, got %r"
          % (what, tool, peer.name, got))
    text = json.dumps(got["structuredContent"]).replace(real, fake)
    check_eq(json.loads(text), want["structuredContent"],
             "%s: %s by %s answers as an unknown id" % (what, tool,
                                                        peer.name))
    check_eq(got["structuredContent"]["error"]["kind"], want[
        "structuredContent"]["error"]["kind"], what + ": kind")


def same_route(peer, method, path, real, fake, what):
    st, b = peer.route(method, path)
    st2, b2 = peer.route(method, path.replace(real, fake))
    check_eq(st2, 404, what + ": an unknown sandbox is 404")
    check_eq((st, b.replace(real.encode(), fake.encode())), (st2, b2),
             what + ": another tenant's sandbox reads as unknown")


def keygen_tenant(name, tenant, *sets):
    argv = [BIN, "keygen", name, "--tenant", tenant]
    for s in sets:
        argv += ["--set", s]
    r = subprocess.run(argv, capture_output=True, text=True)
    check_eq(r.returncode, 0, "keygen --tenant: %s" % r.stderr)
    key, line = r.stdout.splitlines()
    check(line.endswith(" sets management,runtime tenant " + tenant),
          "the line names the tenant: %r" % line)
    return key, line


def write_record(path, rec):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rec, f)
    os.rename(tmp, path)


def cross_tenant(base, roots, ws_open):
    """Two keys of different tenants, two processes, one state dir."""
    key_a, line_a = keygen("alice", *SETS)
    key_b, line_b = keygen("bob", *SETS)
    conf = "workspace-root %s\n%s\n%s\n" % (roots, line_a, line_b)
    m = Server(sets=SETS, config=conf, listen="127.0.0.1:0")
    state = m.state
    cleanup(lambda: remove_our_containers(state))
    m.initialize()
    r = Server(sets=("runtime",), config=conf, listen="127.0.0.1:0",
               stdio=False, state=state)
    a, b = Peer(m.port, key_a, "alice"), Peer(m.port, key_b, "bob")
    ar, br = Peer(r.port, key_a, "alice@R"), Peer(r.port, key_b, "bob@R")

    ra = a.ok("create_sandbox", {"image": IMAGE, "workspace_root": ws_open})
    sa = ra["id"]
    rb = b.ok("create_sandbox", {"image": IMAGE, "workspace_root": ws_open})
    sb = rb["id"]

    # alice's work: a published file, a live session, a running command.
    a.ok("file_write", {"sandbox_id": sa, "path": "pub.txt",
                        "content": "alice's\n"})
    ws_a = a.ok("create_workspace_session",
                {"sandbox_id": sa})["workspace_session_id"]
    a.ok("file_write", {"sandbox_id": sa, "workspace_session_id": ws_a,
                        "path": "draft.txt", "content": "draft\n"})
    ex = a.ok("exec_command", {"sandbox_id": sa, "workspace_session_id":
                               ws_a, "cmd": "echo hello-a; cat",
                               "yield_time_ms": 300})
    check_eq(ex["status"], "running", "alice's command runs")
    cmd_a = ex["command_session_id"]

    fake = unknown_sandbox()
    calls = [
        ("inspect_sandbox", {"sandbox_id": sa}),
        ("destroy_sandbox", {"sandbox_id": sa}),
        ("exec_command", {"sandbox_id": sa, "cmd": "touch pwned"}),
        ("exec_command", {"sandbox_id": sa, "workspace_session_id": ws_a,
                          "cmd": "touch pwned"}),
        ("read_command_lines", {"sandbox_id": sa,
                                "command_session_id": cmd_a}),
        ("write_command_stdin", {"sandbox_id": sa,
                                 "command_session_id": cmd_a,
                                 "stdin": "pwned\n"}),
        ("write_command_stdin", {"sandbox_id": sa,
                                 "command_session_id": cmd_a,
                                 "stdin": "\u0003"}),
        ("file_read", {"sandbox_id": sa, "path": "pub.txt"}),
        ("file_read", {"sandbox_id": sa, "path": "draft.txt",
                       "workspace_session_id": ws_a}),
        ("file_write", {"sandbox_id": sa, "path": "pwned.txt",
                        "content": "x"}),
        ("file_write", {"sandbox_id": sa, "path": "pwned.txt",
                        "content": "x", "workspace_session_id": ws_a}),
        ("file_edit", {"sandbox_id": sa, "path": "pub.txt", "edits": [
            {"old_string": "alice", "new_string": "bob"}]}),
        ("file_blame", {"sandbox_id": sa, "path": "pub.txt"}),
        ("create_workspace_session", {"sandbox_id": sa}),
        ("create_workspace_session", {"sandbox_id": sa,
                                      "network_profile": "bogus"}),
        ("publish_workspace_session", {"sandbox_id": sa,
                                       "workspace_session_id": ws_a}),
        ("destroy_workspace_session", {"sandbox_id": sa,
                                       "workspace_session_id": ws_a}),
    ]
    for tool, args in calls:
        same_as_unknown(b, tool, args, sa, fake, "same process")
    for tool, args in calls:
        if tool not in ("inspect_sandbox", "destroy_sandbox"):
            same_as_unknown(br, tool, args, sa, fake, "runtime process")
    for peer in (b, br):
        for method, path in [
                ("GET", "/sandboxes/%s/health" % sa),
                ("GET", "/sandboxes/%s/forward/8000/x?y=1" % sa),
                ("POST", "/sandboxes/%s/forward/8000/" % sa)]:
            same_route(peer, method, path, sa, fake, peer.name + " route")

    check_eq((ra.get("tenant"), rb.get("tenant")), ("alice", "bob"),
             "each record names its tenant")
    check_eq(json.load(open(os.path.join(state, "sandboxes",
                                         sa + ".json")))["tenant"],
             "alice", "the tenant is on disk")

    # alice's ids under bob's own sandbox: unknown there too.
    for tool, args, idk in [
            ("read_command_lines", {"command_session_id": cmd_a},
             "command_session_id"),
            ("write_command_stdin", {"command_session_id": cmd_a,
                                     "stdin": "pwned\n"},
             "command_session_id"),
            ("file_read", {"workspace_session_id": ws_a,
                           "path": "draft.txt"}, "workspace_session_id"),
            ("exec_command", {"workspace_session_id": ws_a, "cmd": "true"},
             "workspace_session_id"),
            ("publish_workspace_session", {"workspace_session_id": ws_a},
             "workspace_session_id"),
            ("destroy_workspace_session", {"workspace_session_id": ws_a},
             "workspace_session_id")]:
        args = dict(args, sandbox_id=sb)
        other = ("cmd-" if idk == "command_session_id" else "ws-") + \
            secrets.token_hex(6)
        same_as_unknown(b, tool, args, args[idk], other, "bob's sandbox")

    # Lists: one's own only; stdio sees both.
    check_eq([x["id"] for x in b.ok("list_sandboxes", {})["sandboxes"]],
             [sb], "bob lists his own")
    check_eq([x["id"] for x in a.ok("list_sandboxes", {})["sandboxes"]],
             [sa], "alice lists hers")
    local = ok_result(m.call("list_sandboxes"), "stdio list")["sandboxes"]
    check_eq(sorted((x["id"], x["tenant"]) for x in local),
             sorted([(sa, "alice"), (sb, "bob")]), "stdio lists every one")
    check_eq(ok_result(m.call("inspect_sandbox", {"sandbox_id": sa}),
                       "stdio inspect")["state"], "ready", "stdio inspects")
    # A stdio process started with --tenant acts for that tenant only.
    ta = Server(sets=SETS, config=conf, state=m.state,
                args=("--tenant", "alice"))
    ta.initialize()
    check_eq([x["id"] for x in ok_result(ta.call("list_sandboxes"),
                                         "--tenant list")["sandboxes"]],
             [sa], "stdio with --tenant alice lists hers only")
    err_result(ta.call("inspect_sandbox", {"sandbox_id": sb}), "not_found",
               "stdio with --tenant alice: bob's sandbox")
    ta.close_stdin()
    check_eq(ta.wait_exit(), 0, "the --tenant process ends")

    # Nothing changed.
    check_eq(a.ok("inspect_sandbox", {"sandbox_id": sa})["state"], "ready",
             "alice's sandbox is still ready")
    check_eq(docker("inspect", "-f", "{{.State.Running}}", sa), "true",
             "its container still runs")
    out = a.ok("read_command_lines", {"sandbox_id": sa,
                                      "command_session_id": cmd_a})
    check_eq((out["status"], out["output"]), ("running", "hello-a\n"),
             "alice's command got no stdin and no Ctrl-C")
    check_eq(a.ok("file_read", {"sandbox_id": sa, "path": "draft.txt",
                                "workspace_session_id": ws_a})["content"],
             "draft\n", "alice's session lives")
    check_eq(a.ok("file_read", {"sandbox_id": sa,
                                "path": "pub.txt"})["content"],
             "alice's\n", "alice's file unchanged")
    for path in ("pwned.txt", "pwned"):
        e = a.call("file_read", {"sandbox_id": sa, "path": path,
                                 "workspace_session_id": ws_a})
        check_eq(e["structuredContent"].get("error", {}).get("kind"),
                 "not_found", "no %s in alice's session" % path)
    owners = {x["owner"] for x in a.ok("file_blame", {
        "sandbox_id": sa, "path": "pub.txt"})["ranges"]}
    check(all(o.startswith("operation:") for o in owners),
          "the file is alice's own write: %r" % owners)
    a.ok("write_command_stdin", {"sandbox_id": sa,
                                 "command_session_id": cmd_a,
                                 "stdin": "\u0004"})
    end = time.time() + 30
    while a.ok("read_command_lines", {
            "sandbox_id": sa, "command_session_id": cmd_a})["status"] == \
            "running":
        check(time.time() < end, "cat ends at Ctrl-D")
        time.sleep(0.05)
    pub = a.ok("publish_workspace_session", {"sandbox_id": sa,
                                             "workspace_session_id": ws_a})
    check_eq(sorted(pub["publish"]["changed_paths"]), ["draft.txt"],
             "alice publishes her session, and only her change")

    # The owner passes everywhere, in both processes.
    st, body = a.route("GET", "/sandboxes/%s/health" % sa)
    check_eq((st, http_json(body)["state"]), (200, "ready"), "alice: health")
    st, body = ar.route("GET", "/sandboxes/%s/forward/8000/" % sa)
    check_eq(st, 502, "alice@R: forward reaches the sandbox (nothing"
             " listens)")
    check_eq(ar.ok("exec_command", {"sandbox_id": sa, "cmd":
                                    "cat pub.txt draft.txt"})["output"],
             "alice's\ndraft\n", "alice@R runs in her sandbox")
    check_eq(br.ok("exec_command", {"sandbox_id": sb,
                                    "cmd": "echo mine"})["output"],
             "mine\n", "bob@R runs in his")
    r.kill()
    m.kill()
    return state, sa, sb


def groups_and_roots(base, roots, ws_open, state, sa, sb):
    """Keys grouped into a tenant, roots limited to tenants, old records,
    and the local operator."""
    key_a, line_a = keygen("alice", *SETS)
    key_b, line_b = keygen("bob", *SETS)
    key_c, line_c = keygen_tenant("carol", "bob", *SETS)
    secret = os.path.join(roots, "secret")        # nested, alice's only
    a_only = os.path.join(base, "alice-only")
    b_only = os.path.join(base, "bob-only")
    outside = os.path.join(base, "outside")
    a_exp = os.path.join(roots, "alice-exp")      # alice's export root
    b_exp = os.path.join(roots, "bob-exp")        # bob's export root
    for d in (secret, a_only, b_only, outside, a_exp, b_exp):
        os.makedirs(os.path.join(d, "ws"))
    with open(os.path.join(a_exp, "ws", "exported.txt"), "w") as f:
        f.write("alice's export\n")
    os.symlink(a_exp, os.path.join(b_exp, "to-alice"))
    os.symlink(os.path.join(a_exp, "ws"), os.path.join(roots, "to-alice-ws"))
    conf = ("workspace-root %s\nworkspace-root %s tenants alice\n"
            "workspace-root %s tenants alice,nobody\n"
            "workspace-root %s tenants bob\n"
            "export-root %s tenants alice\nexport-root %s tenants bob\n"
            "%s\n%s\n%s\n"
            % (roots, secret, a_only, b_only, a_exp, b_exp, line_a, line_b,
               line_c))
    m = Server(sets=SETS, config=conf, listen="127.0.0.1:0", state=state)
    m.initialize()
    a, b = Peer(m.port, key_a, "alice"), Peer(m.port, key_b, "bob")
    c = Peer(m.port, key_c, "carol")

    # carol is in bob's tenant: she sees and uses bob's sandboxes.
    check_eq([x["id"] for x in c.ok("list_sandboxes", {})["sandboxes"]],
             [sb], "carol lists bob's")
    check_eq(c.ok("exec_command", {"sandbox_id": sb,
                                   "cmd": "echo shared"})["output"],
             "shared\n", "carol runs in bob's sandbox")
    same_as_unknown(c, "inspect_sandbox", {"sandbox_id": sa}, sa,
                    unknown_sandbox(), "carol")
    same_as_unknown(c, "exec_command", {"sandbox_id": sa, "cmd": "true"},
                    sa, unknown_sandbox(), "carol")
    st, body = c.route("GET", "/sandboxes/%s/health" % sb)
    check_eq(st, 200, "carol: health of bob's sandbox")
    same_route(c, "GET", "/sandboxes/%s/health" % sa, sa, unknown_sandbox(),
               "carol")
    rc = c.ok("create_sandbox", {"image": IMAGE,
                                 "workspace_root": os.path.join(b_only,
                                                                "ws")})
    check_eq(rc["tenant"], "bob", "carol's sandbox is bob's tenant's")
    check_eq(sorted(x["id"] for x in b.ok("list_sandboxes",
                                          {})["sandboxes"]),
             sorted([sb, rc["id"]]), "bob sees what carol made")
    check_eq([x["id"] for x in a.ok("list_sandboxes", {})["sandboxes"]],
             [sa], "alice still sees only hers")

    # Roots.
    def root_names(peer):
        r = peer.ok("list_workspace_directories", {})
        return [d["path"] for d in r["directories"]]
    check_eq(root_names(a), [roots, secret, a_only], "alice's roots")
    check_eq(root_names(b), [roots, b_only], "bob's roots")
    check_eq(root_names(c), [roots, b_only], "carol's roots")
    local = ok_result(m.call("list_workspace_directories"), "stdio roots")
    check_eq([d["path"] for d in local["directories"]],
             [roots, secret, a_only, b_only], "stdio sees every root")
    lst = b.ok("list_workspace_directories", {"path": roots})
    check("secret" not in [d["name"] for d in lst["directories"]],
          "a nested root of alice's is hidden from bob: %r" % lst)
    lst = a.ok("list_workspace_directories", {"path": roots})
    check("secret" in [d["name"] for d in lst["directories"]],
          "alice sees it")
    check_eq(a.ok("list_workspace_directories",
                  {"path": os.path.join(secret, "ws")})["parent"], secret,
             "alice goes up to her nested root")
    check_eq(a.ok("list_workspace_directories",
                  {"path": secret})["parent"], None,
             "and no further: it is a root")
    for path in (a_only, os.path.join(a_only, "ws"), secret,
                 os.path.join(secret, "ws")):
        for tool, arg, extra in [
                ("list_workspace_directories", "path", {}),
                ("create_sandbox", "workspace_root", {"image": IMAGE})]:
            got = b.call(tool, dict(extra, **{arg: path}))
            want = b.call(tool, dict(extra, **{arg: outside}))
            check_eq(json.loads(json.dumps(got).replace(path, outside)),
                     want, "bob: %s %s is a path under no root"
                     % (tool, path))
        got = b.call("list_workspace_directories",
                     {"path": os.path.join(path, "nope")})
        want = b.call("list_workspace_directories",
                      {"path": os.path.join(outside, "nope")})
        check_eq(json.loads(json.dumps(got).replace(path, outside)), want,
                 "bob: a missing directory under %s is outside" % path)
        check_eq(want["structuredContent"]["error"]["kind"],
                 "invalid_request", "outside every root")
    # An export root limited to alice, inside a root that serves
    # everyone, holds what alice exported: to bob it is a path under no
    # root, reached directly, below it, or through a link bob or anyone
    # planted; alice lists it and makes sandboxes of it.
    lst = b.ok("list_workspace_directories", {"path": roots})
    names = [d["name"] for d in lst["directories"]]
    check("alice-exp" not in names and "to-alice-ws" not in names and
          "bob-exp" in names, "alice's export root is hidden from bob: %r"
          % names)
    lst = b.ok("list_workspace_directories", {"path": b_exp})
    check("to-alice" not in [d["name"] for d in lst["directories"]],
          "a link into alice's export root is hidden from bob: %r" % lst)
    for path in (a_exp, os.path.join(a_exp, "ws"),
                 os.path.join(b_exp, "to-alice"),
                 os.path.join(b_exp, "to-alice", "ws"),
                 os.path.join(roots, "to-alice-ws")):
        got = b.call("create_sandbox", {"image": IMAGE,
                                        "workspace_root": path})
        check_eq(got["structuredContent"]["error"]["kind"],
                 "invalid_request", "bob: create_sandbox from %s" % path)
        check("alice's export" not in json.dumps(got),
              "bob reads nothing of alice's export through %s" % path)
        got = b.call("list_workspace_directories", {"path": path})
        check_eq(got["structuredContent"]["error"]["kind"],
                 "invalid_request", "bob: list %s" % path)
    got = b.call("list_workspace_directories", {"path": a_exp})
    want = b.call("list_workspace_directories", {"path": outside})
    check_eq(json.loads(json.dumps(got).replace(a_exp, outside)), want,
             "bob: alice's export root is a path under no root")
    lst = a.ok("list_workspace_directories", {"path": roots})
    check("alice-exp" in [d["name"] for d in lst["directories"]] and
          "bob-exp" not in [d["name"] for d in lst["directories"]],
          "alice lists her export root, not bob's: %r" % lst)
    ra = a.ok("create_sandbox", {"image": IMAGE,
                                 "workspace_root": os.path.join(a_exp,
                                                                "ws")})
    check_eq(a.ok("exec_command", {"sandbox_id": ra["id"],
                                   "cmd": "cat exported.txt"})["output"],
             "alice's export\n", "alice makes a sandbox of her export")
    a.ok("destroy_sandbox", {"sandbox_id": ra["id"]})

    check_eq(a.call("list_workspace_directories", {"path": os.path.join(
        a_only, "nope")})["structuredContent"]["error"]["kind"],
             "not_found", "alice: a missing directory in her root")
    rs = a.ok("create_sandbox", {"image": IMAGE,
                                 "workspace_root": os.path.join(secret,
                                                                "ws")})
    check_eq((rs["tenant"], rs["workspace_root"]),
             ("alice", os.path.join(secret, "ws")),
             "alice creates in her nested root")

    # A record from before tenants is the local operator's.
    path = os.path.join(state, "sandboxes", sa + ".json")
    rec = json.load(open(path))
    del rec["tenant"]
    write_record(path, rec)
    same_as_unknown(a, "inspect_sandbox", {"sandbox_id": sa}, sa,
                    unknown_sandbox(), "an old record")
    same_as_unknown(a, "exec_command", {"sandbox_id": sa, "cmd": "true"},
                    sa, unknown_sandbox(), "an old record")
    check(sa not in [x["id"] for x in a.ok("list_sandboxes",
                                           {})["sandboxes"]],
          "an old record is not listed to a key")
    got = ok_result(m.call("inspect_sandbox", {"sandbox_id": sa}),
                    "stdio: an old record")
    check_eq((got["id"], got["tenant"]), (sa, "local"),
             "an old record shows as local's")
    out = ok_result(m.call("exec_command", {"sandbox_id": sa,
                                            "cmd": "cat pub.txt"}),
                    "stdio runs in an old record's sandbox")
    check_eq(out["output"], "alice's\n", "stdio runs anywhere")
    m.kill()

    # With no key configured, HTTP peers are the local operator too.
    o = Server(sets=SETS, config="workspace-root %s\n" % roots,
               listen="127.0.0.1:0", stdio=False, state=state)
    conn, hdr = http_session(o.port)
    st, h, body = conn.request("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_sandboxes", "arguments": {}}}, hdr)
    ids = {x["id"] for x in http_json(body)["result"][
        "structuredContent"]["sandboxes"]}
    check_eq(ids, {sa, sb, rc["id"], rs["id"]}, "keyless HTTP sees all")
    o.kill()


def refusals(base):
    """local is reserved: refused for keys, with file:line."""
    _, line = keygen("ops", "runtime")
    conf = os.path.join(base, "local.conf")
    with open(conf, "w") as f:
        f.write("# keys\n%s tenant local\n" % line)
    r = subprocess.run([BIN, "-n", "-f", conf], capture_output=True,
                       text=True)
    check_eq(r.returncode, 1, "-n with tenant local")
    check_in('%s:2: api-key ops: the name "local" is reserved' % conf,
             r.stderr, "file:line error")
    with open(conf, "w") as f:
        f.write(line.replace("api-key ops ", "api-key local ") + "\n")
    r = subprocess.run([BIN, "-n", "-f", conf], capture_output=True,
                       text=True)
    check_eq(r.returncode, 1, "-n with a key named local")
    check_in('%s:1: api-key local: the name "local" is reserved' % conf,
             r.stderr, "file:line error")
    for args in (["ops", "--tenant", "local"], ["local"],
                 ["ops", "--tenant", "a/b"]):
        r = subprocess.run([BIN, "keygen"] + args + ["--set", "runtime"],
                           capture_output=True)
        check_eq((r.returncode, r.stdout), (2, b""), "keygen %r" % args)


def test():
    base = tmpdir()
    roots = os.path.join(base, "roots")
    ws_open = os.path.join(roots, "open")
    os.makedirs(ws_open)
    with open(os.path.join(ws_open, "README"), "w") as f:
        f.write("shared\n")
    state, sa, sb = cross_tenant(base, roots, ws_open)
    groups_and_roots(base, roots, ws_open, state, sa, sb)
    refusals(base)


main(test)
