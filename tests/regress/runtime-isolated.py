#!/usr/bin/env python3
# The isolated profile: a session that reaches nothing outside it. Shared
# sessions serve every channel a sandbox offers (TCP on loopback, unix
# sockets in /run, /root, /dev, /var/tmp and /sys/fs/cgroup, an abstract
# socket, a fifo, a pty, a SysV shared memory segment, a POSIX message
# queue, a file in /dev/shm);
# another shared session reaches each, an isolated session none, whether
# it began before the channels were made or after. An isolated session
# changes the container's files for itself alone (the git it plants is not
# the one the next shared session runs), while shared sessions still
# share what they install. /proc masks, devices, /workspace, /tmp and
# publish work in an isolated session.
#
# The probe is a small static program built here and copied into the
# workspace, so the test runs on the suite's busybox image.

import os
import subprocess

from lib import (IMAGE, Server, check, check_eq, cleanup, docker,
                 main, ok_result, remove_our_containers, tmpdir)

PROBE = r"""
#define _GNU_SOURCE
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Serve in the background, the command's output closed; the command
 * ends once the server has left its process group.
 */
static void
background(void)
{
	int	fd, p[2];
	char	c;

	fflush(stdout);
	if (pipe(p) != 0 || fork() != 0) {
		close(p[1]);
		read(p[0], &c, 1);
		exit(0);
	}
	setsid();
	fd = open("/dev/null", O_RDWR);
	dup2(fd, 0);
	dup2(fd, 1);
	dup2(fd, 2);
	close(p[0]);
	close(p[1]);
}

static void
serve(int s)
{
	int	c;

	if (listen(s, 16) != 0) {
		printf("listen: %s\n", strerror(errno));
		exit(1);
	}
	printf("serving\n");
	background();
	for (;;) {
		if ((c = accept(s, NULL, NULL)) == -1)
			continue;
		write(c, "pong\n", 5);
		close(c);
	}
}

static void
reached(int s, int r)
{
	char	buf[16] = "";

	if (r != 0) {
		printf("refused: %s\n", strerror(errno));
		return;
	}
	read(s, buf, sizeof buf - 1);
	printf("reached %s", buf);
}

static socklen_t
unix_addr(struct sockaddr_un *sun, const char *path, int abstract)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	strncpy(sun->sun_path + abstract, path, sizeof sun->sun_path - 2);
	return (offsetof(struct sockaddr_un, sun_path) + abstract +
	    strlen(path));
}

int
main(int argc, char **argv)
{
	struct sockaddr_un	sun;
	struct sockaddr_in	sin;
	socklen_t		len;
	char			*p;
	int			s, fd, abs, id;
	mqd_t			q;

	if (argc < 2)
		return (2);
	if (strcmp(argv[1], "hold-pty") == 0) {
		if ((fd = posix_openpt(O_RDWR | O_NOCTTY)) == -1 ||
		    grantpt(fd) != 0 || unlockpt(fd) != 0) {
			printf("no pty: %s\n", strerror(errno));
			return (1);
		}
		printf("%s\n", ptsname(fd));
		background();
		for (;;)
			pause();
	}
	if (argc < 3)
		return (2);
	abs = strstr(argv[1], "abstract") != NULL;
	if (strncmp(argv[1], "serve-unix", 10) == 0 ||
	    strcmp(argv[1], "serve-abstract") == 0) {
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		len = unix_addr(&sun, argv[2], abs);
		if (bind(s, (struct sockaddr *)&sun, len) != 0) {
			printf("bind: %s\n", strerror(errno));
			return (1);
		}
		serve(s);
	}
	if (strcmp(argv[1], "connect-unix") == 0 ||
	    strcmp(argv[1], "connect-abstract") == 0) {
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		len = unix_addr(&sun, argv[2], abs);
		reached(s, connect(s, (struct sockaddr *)&sun, len));
		return (0);
	}
	if (strcmp(argv[1], "serve-tcp") == 0 ||
	    strcmp(argv[1], "connect-tcp") == 0) {
		s = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sin, 0, sizeof sin);
		sin.sin_family = AF_INET;
		sin.sin_port = htons(atoi(argv[2]));
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (argv[1][0] == 'c') {
			reached(s, connect(s, (struct sockaddr *)&sin,
			    sizeof sin));
			return (0);
		}
		if (bind(s, (struct sockaddr *)&sin, sizeof sin) != 0) {
			printf("bind: %s\n", strerror(errno));
			return (1);
		}
		serve(s);
	}
	if (strcmp(argv[1], "hold-fifo") == 0) {
		if ((fd = open(argv[2], O_RDONLY | O_NONBLOCK)) == -1) {
			printf("open: %s\n", strerror(errno));
			return (1);
		}
		printf("holding\n");
		background();
		for (;;)
			pause();
	}
	if (strcmp(argv[1], "write-fifo") == 0 ||
	    strcmp(argv[1], "open-tty") == 0) {
		fd = open(argv[2], argv[1][0] == 'w' ? O_WRONLY | O_NONBLOCK :
		    O_RDWR | O_NOCTTY);
		if (fd == -1)
			printf("refused: %s\n", strerror(errno));
		else
			printf("reached\n");
		return (0);
	}
	if (strcmp(argv[1], "shm-create") == 0) {
		if ((id = shmget(atoi(argv[2]), 4096, IPC_CREAT | 0600)) ==
		    -1 || (p = shmat(id, NULL, 0)) == (void *)-1) {
			printf("shm: %s\n", strerror(errno));
			return (1);
		}
		strcpy(p, "secret");
		printf("created\n");
		return (0);
	}
	if (strcmp(argv[1], "shm-read") == 0) {
		if ((id = shmget(atoi(argv[2]), 0, 0)) == -1 ||
		    (p = shmat(id, NULL, SHM_RDONLY)) == (void *)-1)
			printf("refused: %s\n", strerror(errno));
		else
			printf("reached %s\n", p);
		return (0);
	}
	if (strcmp(argv[1], "mq-create") == 0) {
		if ((q = mq_open(argv[2], O_CREAT | O_RDWR, 0600, NULL)) ==
		    (mqd_t)-1 || mq_send(q, "secret", 6, 0) != 0) {
			printf("mq: %s\n", strerror(errno));
			return (1);
		}
		printf("created\n");
		return (0);
	}
	if (strcmp(argv[1], "mq-read") == 0) {
		if ((q = mq_open(argv[2], O_RDONLY | O_NONBLOCK)) == (mqd_t)-1)
			printf("refused: %s\n", strerror(errno));
		else
			printf("reached\n");
		return (0);
	}
	return (2);
}
"""

# Every channel: how the serving session makes it, how another reaches it.
CHANNELS = [
    ("unix socket in /run", "mkdir -p /run && ./probe serve-unix "
     "/run/chan.sock", "./probe connect-unix /run/chan.sock"),
    ("unix socket in /root", "./probe serve-unix /root/chan.sock",
     "./probe connect-unix /root/chan.sock"),
    ("unix socket in /dev", "./probe serve-unix /dev/chan.sock",
     "./probe connect-unix /dev/chan.sock"),
    ("unix socket in /var/tmp", "mkdir -p /var/tmp && ./probe serve-unix "
     "/var/tmp/chan.sock", "./probe connect-unix /var/tmp/chan.sock"),
    # Docker's tmpfs under the read-only /sys (cgroup v1 hosts).
    ("unix socket in /sys/fs/cgroup", "./probe serve-unix "
     "/sys/fs/cgroup/chan.sock", "./probe connect-unix "
     "/sys/fs/cgroup/chan.sock"),
    ("abstract socket", "./probe serve-abstract smcp-chan",
     "./probe connect-abstract smcp-chan"),
    ("tcp on loopback", "./probe serve-tcp 47123",
     "./probe connect-tcp 47123"),
    ("fifo in /root", "mkfifo /root/chan.fifo && ./probe hold-fifo "
     "/root/chan.fifo", "./probe write-fifo /root/chan.fifo"),
    ("SysV shared memory", "./probe shm-create 4242",
     "./probe shm-read 4242"),
    ("POSIX message queue", "./probe mq-create /smcp-chan",
     "./probe mq-read /smcp-chan; cat /dev/mqueue/smcp-chan >/dev/null"
     " 2>&1 && echo reached file || echo refused file"),
    ("file in /dev/shm", "echo secret > /dev/shm/chan",
     "cat /dev/shm/chan 2>/dev/null | sed 's/^/reached /' | grep . ||"
     " echo refused"),
]


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

    def session(profile):
        return ok_result(s.call("create_workspace_session", {
            "sandbox_id": sid, "network_profile": profile}),
            "session " + profile)["workspace_session_id"]

    def run(cmd, wsid=None):
        args = {"sandbox_id": sid, "cmd": cmd, "yield_time_ms": 60000}
        if wsid is not None:
            args["workspace_session_id"] = wsid
        r = ok_result(s.call("exec_command", args, timeout=90),
                      "exec %r" % cmd[:50])
        check_eq(r["status"], "ok" if r["exit_code"] == 0 else "error",
                 "status of %r" % cmd[:50])
        return r

    early = session("isolated")
    srv = session("shared")
    peer = session("shared")

    # The shared session serves; another shared session reaches each.
    for name, serve, reach in CHANNELS:
        r = run(serve, srv)
        check_eq(r["exit_code"], 0, "serving %s: %r" % (name, r["output"]))
        r = run(reach, peer)
        check("reached" in r["output"] and "refused" not in r["output"],
              "a shared session reaches the %s: %r" % (name, r["output"]))
    tty = run("./probe hold-pty", srv)["output"].strip()
    check(tty.startswith("/dev/pts/"), "a pty: %r" % tty)
    r = run("./probe open-tty " + tty, peer)
    check_eq(r["output"], "reached\n", "a shared session opens the pty")

    # An isolated session reaches none, begun before or after.
    late = session("isolated")
    for iso, when in ((early, "begun before"), (late, "begun after")):
        for name, serve, reach in CHANNELS:
            r = run(reach, iso)
            check("reached" not in r["output"],
                  "an isolated session (%s) reaches the %s: %r"
                  % (when, name, r["output"]))
        r = run("./probe open-tty " + tty, iso)
        check("reached" not in r["output"], "an isolated session (%s)"
              " opens the shared pty: %r" % (when, r["output"]))

    # An isolated session's changes to the container's files are its own.
    plant = ("mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho planted"
             "\\n' > /usr/local/bin/git && chmod +x /usr/local/bin/git &&"
             " echo planted > /root/planted && touch /dev/planted &&"
             " mkdir -p /run/planted /sys/fs/cgroup/planted && git")
    r = run(plant, late)
    check_eq(r["output"], "planted\n", "the isolated session runs its own")
    r = run("echo '10.9.9.9 planted' >> /etc/hosts 2>&1; echo rc=$?", late)
    check("rc=0" not in r["output"], "/etc/hosts is read-only for an"
          " isolated session: %r" % r["output"])
    look = ("for f in /usr/local/bin/git /root/planted /dev/planted"
            " /run/planted /sys/fs/cgroup/planted; do test -e $f &&"
            " echo $f; done;"
            " grep -c planted /etc/hosts; true")
    check_eq(run(look)["output"], "0\n", "a new shared session sees"
             " nothing the isolated one planted")
    check_eq(run(look, srv)["output"], "0\n", "nor does a live one")
    check_eq(run(look, early)["output"], "0\n", "nor another isolated one")

    # Shared sessions share what they install, and isolated ones see it.
    run("mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho tool\\n' >"
        " /usr/local/bin/smcp-tool && chmod +x /usr/local/bin/smcp-tool")
    check_eq(run("smcp-tool")["output"], "tool\n", "installed for the next")
    check_eq(run("smcp-tool", peer)["output"], "tool\n", "and for a live one")
    iso = session("isolated")
    check_eq(run("smcp-tool", iso)["output"], "tool\n", "an isolated"
             " session sees the container as shared sessions left it")

    # What an isolated session keeps: /proc masks, devices, its own pty,
    # /tmp, /workspace and publish.
    cid = ok_result(s.call("inspect_sandbox", {"sandbox_id": sid}),
                    "inspect")["container_id"]
    probe = ("for p in $(awk '$2 ~ \"^/proc/\" {print $2}' /proc/mounts |"
             " sort -u); do echo $p $(stat -f -c %T $p 2>&1)"
             " $(touch $p 2>/dev/null && echo rw || echo ro); done")
    want = docker("exec", cid, "sh", "-c", probe)
    check(want.count("/proc/") >= 4 and "/proc/sys proc ro" in want,
          "the container masks /proc: %r" % want)
    check_eq(run(probe, iso)["output"].strip(), want,
             "the isolated session's /proc masks")
    r = run("(echo x > /proc/sys/kernel/core_pattern) 2>&1; echo rc=$?",
            iso)
    check("rc=0" not in r["output"], "/proc/sys read-only: %r"
          % r["output"])
    r = run("head -c 5 /dev/urandom | wc -c; echo x > /dev/null &&"
            " head -c 3 /dev/zero | wc -c; ./probe hold-pty", iso)
    check_eq(r["output"].split()[:2], ["5", "3"], "devices work")
    check(r["output"].split()[2].startswith("/dev/pts/"),
          "its own pty: %r" % r["output"])
    r = run("ls /dev/shm /var/tmp /run | grep -c chan; true", iso)
    check_eq(r["output"], "0\n", "private /dev/shm, /var/tmp and /run")
    r = run("echo t > /tmp/t && cat /tmp/t &&"
            " echo w > /workspace/iso.txt && cat iso.txt", iso)
    check_eq(r["output"].split()[0], "t", "/tmp")
    check_eq(r["output"].split()[-1], "w", "/workspace")
    r = ok_result(s.call("publish_workspace_session", {
        "sandbox_id": sid, "workspace_session_id": iso}), "publish")
    check_eq(r["publish"]["changed_paths"], ["iso.txt"], "published")
    r = ok_result(s.call("file_read", {"sandbox_id": sid,
                                       "path": "iso.txt"}), "read")
    check_eq(r["content"], "w\n", "what the isolated session wrote")
    for wsid in (early, late, srv, peer):
        ok_result(s.call("destroy_workspace_session", {
            "sandbox_id": sid, "workspace_session_id": wsid}), "destroy")


main(test)
