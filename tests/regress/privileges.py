#!/usr/bin/env python3
# Running as an ordinary user: the server says at once that it needs root
# or the capabilities its man page lists, and exits 1, instead of failing
# later with "cannot create ...: Permission denied" (it checks before it
# touches the state directory). A user that holds exactly those
# capabilities (ambient, no supplementary groups, so not in the docker
# group) gets past the check and really works: it creates a sandbox, runs
# a command in it and destroys it.

import os
import shutil
import stat
import subprocess
import tempfile
import time

import lib
from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, main,
                 ok_result, remove_our_containers)

NOBODY = "65534"
CAPS = ("sys_admin", "sys_ptrace", "sys_chroot", "dac_override",
        "dac_read_search", "chown", "fowner", "fsetid", "mknod", "setuid",
        "setgid", "setpcap", "setfcap", "kill", "net_raw", "net_admin",
        "net_bind_service", "audit_write")


def public_dir():
    """A directory an unprivileged user can enter (the run's own TMPDIR
    is root's alone)."""
    d = tempfile.mkdtemp(prefix="smcp-priv-", dir="/tmp")
    os.chmod(d, 0o755)
    cleanup(lambda: lib.remove_tmpdir(d))
    return d


def test():
    d = public_dir()
    binp = os.path.join(d, "sandbox-mcp")
    shutil.copy(lib.BIN, binp)
    os.chmod(binp, 0o755)
    conf = os.path.join(d, "sandbox-mcp.conf")
    with open(conf, "w") as f:
        f.write("")
    os.chmod(conf, 0o644)
    state = os.path.join(d, "state")

    # No capabilities: told what is needed, at once.
    start = time.monotonic()
    r = subprocess.run(["setpriv", "--reuid=" + NOBODY, "--regid=" + NOBODY,
                        "--clear-groups", binp, "-f", conf, "--state-dir",
                        state, "--set", "management", "--no-stdio",
                        "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    took = time.monotonic() - start
    check_eq(r.returncode, 1, "exit status as nobody (stderr %r)" % r.stderr)
    check_in("not enough privilege", r.stderr, "the message")
    check_in("uid 65534", r.stderr, "names the user")
    check_in("as root", r.stderr, "says root")
    for cap in CAPS:
        check_in("CAP_" + cap.upper(), r.stderr, "names the capabilities")
    check_in("PRIVILEGES in sandbox-mcp(8)", r.stderr, "points to the page")
    check("Permission denied" not in r.stderr, "no bare Permission denied:"
          " %r" % r.stderr)
    check(not os.path.exists(state), "nothing created before the check")
    check(took < 10, "at once (%.1f s)" % took)

    # Exactly those capabilities, no groups: it works.
    caps = ",".join("+" + c for c in CAPS)
    wrapper = os.path.join(d, "as-nobody")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec setpriv --reuid=%s --regid=%s"
                " --clear-groups --inh-caps=%s --ambient-caps=%s %s \"$@\"\n"
                % (NOBODY, NOBODY, caps, caps, binp))
    os.chmod(wrapper, 0o755)
    ws = os.path.join(d, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "hello.txt"), "w") as f:
        f.write("hello\n")
    lib.BIN = wrapper
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % d, state=state)
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    rec = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}, 120),
                    "create as nobody with the capabilities")
    out = ok_result(s.call("exec_command", {
        "sandbox_id": rec["id"], "cmd": "cat /workspace/hello.txt"}, 60),
        "a command")
    check_eq((out["status"], out["output"]), ("ok", "hello\n"),
             "the command's answer")
    st = os.stat(state)
    check_eq(st.st_uid, int(NOBODY), "the state directory is the user's")
    check_eq(stat.S_IMODE(st.st_mode), 0o700, "and its alone")
    gone = ok_result(s.call("destroy_sandbox", {"sandbox_id": rec["id"]},
                            60), "destroy")
    check_eq(gone["state"], "stopped", "destroyed")
    s.close_stdin()
    check_eq(s.wait_exit(30), 0, "exit")
    check("not enough privilege" not in s.log(), "no complaint")


main(test)
