#!/usr/bin/env python3
# Every path a command can write is on its sandbox's disk or in memory
# (profile disk 64M):
# - the container's root is read-only to Docker; 300 MiB written to
#   /root, /var/tmp, /run, /home or /opt stop at the cap with "No space
#   left on device", and Docker's layer of the container on the host's
#   disk does not grow;
# - what one session installs outside /workspace, the next runs, shared
#   or isolated; an isolated session's writes stay its own;
# - the files Docker binds in (/etc/hosts, /etc/hostname,
#   /etc/resolv.conf) are read-only;
# - a new server finds the sandbox's root as it was and mounts no second.

import os
import subprocess

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup,
                 docker, main, ok_result, remove_our_containers, tmpdir)

MIB = 1024 * 1024


def du(path):
    out = subprocess.run(["du", "-sb", path], capture_output=True,
                         text=True, check=True).stdout
    return int(out.split()[0])


def test():
    top = tmpdir()
    ws = os.path.join(top, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "readme.txt"), "w") as f:
        f.write("base\n")
    state = os.path.join(top, "state")
    config = "workspace-root %s\nprofile disk 64M\n" % top
    s = Server(sets=("management", "runtime"), state=state, config=config)
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    r = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                            "workspace_root": ws},
                         timeout=120), "create")
    sid = r["id"]

    def run(cmd, session=None, server=None):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 120000}
        if session is not None:
            args["workspace_session_id"] = session
        return ok_result((server or s).call("exec_command", args,
                                            timeout=150),
                         "exec %r" % cmd[:50])

    import json
    info = json.loads(docker("inspect", sid))[0]
    check(info["HostConfig"]["ReadonlyRootfs"] is True,
          "the container's own root is read-only")
    docker_upper = info["GraphDriver"]["Data"]["UpperDir"]
    before = du(docker_upper)

    # Writes outside /workspace stop at the cap.
    for d in ("/root", "/var/tmp", "/run", "/home", "/opt"):
        out = run("mkdir -p %s && dd if=/dev/zero of=%s/big bs=1M "
                  "count=300 2>&1; ls -l %s/big; rm -f %s/big" %
                  (d, d, d, d))
        check_in("No space left on device", out["output"],
                 "a write to %s stops at the disk's cap" % d)
        size = int(out["output"].split("\n")[-2].split()[4])
        check(size < 64 * MIB, "%s/big stopped below 64 MiB (%d)" %
              (d, size))
    grown = du(docker_upper) - before
    check(grown < MIB, "Docker's layer of the container did not grow"
          " (%d bytes)" % grown)

    # Shared sessions share what they install; isolated ones see it.
    run("mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho tool-ok\\n'"
        " > /usr/local/bin/mytool && chmod 755 /usr/local/bin/mytool &&"
        " echo kept > /root/marker")
    out = run("mytool; cat /root/marker")
    check_eq(out["output"], "tool-ok\nkept\n", "the next session runs it")
    upper = os.path.join(state, "sandboxes", sid, "root", "upper")
    with open(os.path.join(upper, "root", "marker")) as f:
        check_eq(f.read(), "kept\n", "the file lies on the sandbox's disk")
    iso = ok_result(s.call("create_workspace_session", {
        "sandbox_id": sid, "network_profile": "isolated"}),
        "isolated session")["workspace_session_id"]
    out = run("mytool; echo mine > /root/marker; cat /root/marker", iso)
    check_eq(out["output"], "tool-ok\nmine\n", "an isolated session sees"
             " what was installed and writes its own copy")
    out = run("cat /root/marker")
    check_eq(out["output"], "kept\n", "its write stays its own")
    ok_result(s.call("destroy_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": iso}), "destroy iso")

    # What Docker binds in from the host's disk is read-only.
    for f in ("/etc/hosts", "/etc/hostname", "/etc/resolv.conf"):
        out = run("test -s %s && echo present; echo x >> %s && echo"
                  " written" % (f, f))
        check_in("present", out["output"], "%s is there" % f)
        check("written" not in out["output"] and "Read-only" in
              out["output"], "%s cannot be written: %r" % (f, out["output"]))

    # A new server finds the root as it was, and mounts no second one.
    s.kill()
    s2 = Server(sets=("management", "runtime"), state=state, config=config)
    s2.initialize()
    out = run("cat /root/marker; mytool; grep -c sandbox-mcp-root"
              " /proc/self/mountinfo", server=s2)
    check_eq(out["output"], "kept\ntool-ok\n1\n", "after a restart")


if __name__ == "__main__":
    main(test)
