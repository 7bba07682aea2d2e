#!/usr/bin/env python3
# The command filter: io_uring is not there (ENOSYS, as on a kernel built
# without it, in both network profiles), device nodes cannot be made
# while fifos still can (nor, by a rename leaving a whiteout behind, a
# character device 0:0), and the kernel log, the clock and the host name
# are refused; what a shell, busybox and a build do still works.
#
# The probe is a small static program built here and copied into the
# workspace, so the test runs on the suite's busybox image.

import os
import subprocess

from lib import (IMAGE, Server, check, check_eq, check_in, cleanup, main,
                 ok_result, remove_our_containers, tmpdir)

PROBE = r"""
#include <sys/socket.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Each call with harmless arguments: "NAME ok" or "NAME: strerror". */
static void
try(const char *name, long r)
{
	if (r >= 0)
		printf("%s ok\n", name);
	else
		printf("%s: %s\n", name, strerror(errno));
}

int
main(void)
{
	char		params[120];
	struct timespec	ts;

	memset(params, 0, sizeof params);
	try("io_uring_setup", syscall(425, 4, params));
	try("io_uring_enter", syscall(426, -1, 0, 0, 0, NULL, 0));
	try("io_uring_register", syscall(427, -1, 0, NULL, 0));
	try("syslog", syscall(SYS_syslog, 10 /* buffer size */, NULL, 0));
	clock_gettime(CLOCK_REALTIME, &ts);
	try("clock_settime", syscall(SYS_clock_settime, CLOCK_REALTIME,
	    &ts));
	try("kcmp", syscall(SYS_kcmp, getpid(), getpid(), 0, 0, 0));
	try("socket_vsock", socket(40 /* AF_VSOCK */, SOCK_STREAM, 0));
	try("socket_alg", socket(38 /* AF_ALG */, SOCK_SEQPACKET, 0));
	try("socket_unix", socket(AF_UNIX, SOCK_STREAM, 0));
	/*
	 * A rename that leaves a whiteout behind makes a character device
	 * (0:0) at the old name, in any directory of a file system that
	 * has them (/tmp here): a device node by another door. A plain
	 * rename still works.
	 */
	close(open("/tmp/wh-src", O_CREAT | O_WRONLY, 0644));
	try("renameat2_whiteout", syscall(SYS_renameat2, AT_FDCWD,
	    "/tmp/wh-src", AT_FDCWD, "/tmp/wh-dst", 4 /* RENAME_WHITEOUT */));
	try("renameat2_whiteout_more", syscall(SYS_renameat2, AT_FDCWD,
	    "/tmp/wh-src", AT_FDCWD, "/tmp/wh-dst", 4 | 1 /* NOREPLACE */));
	try("renameat2_plain", syscall(SYS_renameat2, AT_FDCWD,
	    "/tmp/wh-src", AT_FDCWD, "/tmp/wh-dst", 0));
	return (0);
}
"""


def test():
    roots = tmpdir()
    ws = os.path.join(roots, "ws")
    os.makedirs(ws)
    src = os.path.join(roots, "probe.c")
    with open(src, "w") as f:
        f.write(PROBE)
    r = subprocess.run(["cc", "-static", "-O2", "-o",
                        os.path.join(ws, "probe"), src],
                       capture_output=True, text=True)
    check(r.returncode == 0, "cc -static: %s" % r.stderr)
    s = Server(sets=("management", "runtime"),
               config="workspace-root %s\n" % roots)
    state = s.state
    cleanup(lambda: remove_our_containers(state))
    s.initialize()
    sid = ok_result(s.call("create_sandbox", {"image": IMAGE,
                                              "workspace_root": ws}),
                    "create")["id"]

    def run(cmd, wsid=None):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 60000}
        if wsid is not None:
            args["workspace_session_id"] = wsid
        return ok_result(s.call("exec_command", args, timeout=90),
                         "exec %r" % cmd[:50])

    iso = ok_result(s.call("create_workspace_session", {
        "sandbox_id": sid, "network_profile": "isolated"}),
        "isolated session")["workspace_session_id"]
    want = {"io_uring_setup": "Function not implemented",
            "io_uring_enter": "Function not implemented",
            "io_uring_register": "Function not implemented",
            "syslog": "Operation not permitted",
            "clock_settime": "Operation not permitted",
            "kcmp": "Operation not permitted",
            "socket_vsock": "Address family not supported by protocol",
            "socket_alg": "Address family not supported by protocol",
            "socket_unix": "ok",
            "renameat2_whiteout": "Operation not permitted",
            "renameat2_whiteout_more": "Operation not permitted",
            "renameat2_plain": "ok"}
    for wsid in (None, iso):
        r = run("./probe", wsid)
        got = dict(line.split(": ", 1) if ": " in line else
                   (line.split()[0], "ok")
                   for line in r["output"].splitlines())
        check_eq(got, want, "the filter (%s)" % ("isolated" if wsid
                                                  else "shared"))

    # Device nodes no, fifos and files yes.
    r = run("mknod /tmp/null c 1 3 2>&1; echo rc=$?;"
            " mknod /workspace/blk b 7 0 2>&1; echo rc=$?;"
            " mkfifo /tmp/fifo && echo fifo; touch /tmp/f && echo file;"
            " ls /workspace/blk 2>&1")
    out = r["output"].splitlines()
    check_in("Operation not permitted", out[0], "mknod of a character"
             " device: %r" % out)
    check_eq(out[1], "rc=1", "refused")
    check_in("Operation not permitted", out[2], "mknod of a block"
             " device: %r" % out)
    check_eq(out[3:5], ["rc=1", "fifo"], "a fifo is made")
    check_eq(out[5], "file", "a file is made")
    # No character device anywhere a command can write (the probe's
    # renames included).
    for wsid in (None, iso):
        r = run("find / -xdev -type c 2>/dev/null | grep -v '^/dev/';"
                " find /tmp /workspace -type c; echo end", wsid)
        check_eq(r["output"], "end\n", "no device node was made")
    r = run("hostname smcp-other 2>&1; hostname")
    check("smcp-other" not in r["output"], "the host name is kept: %r"
          % r["output"])

    # What commands need still works: pipes, background jobs,
    # sub-shells, parallel children.
    r = run("echo a | tr a b; (sleep 0.1 &); wait; seq 3 | sort -r |"
            " head -1; seq 4 | xargs -P 2 -n 1 true; echo done")
    check_eq(r["output"], "b\n3\ndone\n", "ordinary commands")
    check_eq(r["status"], "ok", "status")


main(test)
