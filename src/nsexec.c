/*
 * Copyright (c) 2026 The sandbox-mcp authors
 *
 * Permission to use, copy, modify, and distribute this software for any
 * purpose with or without fee is hereby granted, provided that the above
 * copyright notice and this permission notice appear in all copies.
 *
 * THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES
 * WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF
 * MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR
 * ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES
 * WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN
 * ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF
 * OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.
 */

/*
 * Entering a sandbox: the code that runs in child processes to build a
 * workspace session's namespaces and to run a command inside them. The
 * server never changes its own namespaces.
 *
 * A session is built by a holder process (a job) that, still in the
 * host's mount namespace, creates the session's overlay as a detached
 * mount (fsopen, fsconfig lowerdir+ per layer, fsmount), joins the
 * container's cgroups, UTS, IPC and network namespaces (or a new network
 * namespace with loopback only), enters the container's mount namespace,
 * unshares a private copy of it, moves the overlay onto /workspace and
 * mounts a private /tmp, then unshares a PID namespace and forks its
 * first process: the session init. The init mounts /proc for its PID
 * namespace, tells the holder it is ready, blanks its command line and
 * environment (nothing of the host's shows in /proc/1 inside; with its
 * full capabilities it is not readable by the session's processes
 * anyway) and waits for children and for the end of its lifeline pipe:
 * when the server ends, or kills it, the kernel ends every process of
 * the session and with the last of them the mount namespace and its
 * overlay. It cannot exec our binary: the container's file system may
 * lack the dynamic loader.
 *
 * A command's shim joins the init's namespaces and cgroups, forks the
 * shell into the session's PID namespace, reports the shell's pid,
 * waits for it and exits with its status (128 + N for signal N). The
 * shell becomes a session leader (its process group is the command's),
 * gets no_new_privs, a bounding set reduced to Docker's default
 * capabilities and a seccomp filter, and runs in /workspace with a clean
 * environment.
 */

#include "config.h"

#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <seccomp.h>

#include "sandbox-mcp.h"

#define NSEXEC_INIT_NAME	"sandbox-mcp: session init"

/* Docker's default capability set: what a command may keep. */
static const int nsexec_caps_kept[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FSETID, CAP_FOWNER, CAP_MKNOD,
	CAP_NET_RAW, CAP_SETGID, CAP_SETUID, CAP_SETFCAP, CAP_SETPCAP,
	CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_KILL, CAP_AUDIT_WRITE
};

static struct sock_fprog	nsexec_filter;
static char			*nsexec_argv0;
static size_t			 nsexec_argv_len;

/*
 * Build the command filter once (in the server): EPERM for mounting,
 * namespaces, modules, kexec, bpf, perf events and keyrings; ENOSYS for
 * clone3, whose flags a filter cannot read, so the C library falls back
 * to clone, whose namespace flags it can. Also remember where our command
 * line is, for session inits to blank.
 */
void
nsexec_init(int argc, char **argv)
{
	static const char *denied[] = { "mount", "umount2", "pivot_root",
	    "setns", "unshare", "init_module", "finit_module",
	    "delete_module", "kexec_load", "kexec_file_load", "bpf",
	    "perf_event_open", "keyctl", "add_key", "request_key",
	    "open_by_handle_at", "fsopen", "fsconfig", "fsmount",
	    "move_mount", "open_tree", "fspick", "mount_setattr", "swapon",
	    "swapoff", "reboot", "acct", "quotactl", "lookup_dcookie",
	    "userfaultfd", "uselib", "personality" };
	static const unsigned long nsflags[] = { CLONE_NEWNS, CLONE_NEWUTS,
	    CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
	    CLONE_NEWCGROUP, 0x80 /* CLONE_NEWTIME */ };
	scmp_filter_ctx	 ctx;
	size_t		 i;
	int		 sys, pipefd[2];
	ssize_t		 n;
	char		*buf;
	size_t		 size = 0;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		fatalx("seccomp_init failed");
	for (i = 0; i < sizeof denied / sizeof denied[0]; i++) {
		if ((sys = seccomp_syscall_resolve_name(denied[i])) ==
		    __NR_SCMP_ERROR)
			continue;
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), sys, 0) != 0)
			fatalx("seccomp_rule_add %s failed", denied[i]);
	}
	for (i = 0; i < sizeof nsflags / sizeof nsflags[0]; i++) {
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ,
		    nsflags[i], nsflags[i])) != 0)
			fatalx("seccomp_rule_add clone failed");
	}
	if ((sys = seccomp_syscall_resolve_name("clone3")) != __NR_SCMP_ERROR &&
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), sys, 0) != 0)
		fatalx("seccomp_rule_add clone3 failed");
	/* Export the BPF program through a pipe; it is small. */
	if (pipe(pipefd) != 0)
		fatal("pipe");
	if (seccomp_export_bpf(ctx, pipefd[1]) != 0)
		fatalx("seccomp_export_bpf failed");
	close(pipefd[1]);
	buf = xmalloc(65536);
	while ((n = read(pipefd[0], buf + size, 65536 - size)) > 0)
		size += n;
	close(pipefd[0]);
	seccomp_release(ctx);
	if (size == 0 || size % sizeof(struct sock_filter) != 0)
		fatalx("the seccomp program has a bad size %zu", size);
	nsexec_filter.len = size / sizeof(struct sock_filter);
	nsexec_filter.filter = (struct sock_filter *)buf;

	/* The arguments lie end to end from argv[0]. */
	nsexec_argv0 = argv[0];
	nsexec_argv_len = 0;
	for (i = 0; i < (size_t)argc; i++)
		nsexec_argv_len = argv[i] + strlen(argv[i]) + 1 - argv[0];
}

char *
nsexec_argv(size_t *len)
{
	*len = nsexec_argv_len;
	return (nsexec_argv0);
}

/* A message on the report pipe, then the exit status (children only). */
static int
nsexec_fail(int report, const char *fmt, ...)
{
	char	buf[1024];
	int	n;
	va_list	ap;

	n = snprintf(buf, sizeof buf, "error ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - n - 2, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = sizeof buf - 2;
	buf[n++] = '\n';
	job_write_all(report, buf, n);
	return (125);
}

/* Join the container's cgroups: our pid into each cgroup.procs. */
static int
nsexec_cgroups(char **procs, size_t n, int report)
{
	char	pid[32];
	size_t	i;
	int	fd;

	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	for (i = 0; i < n; i++) {
		if ((fd = open(procs[i], O_WRONLY | O_CLOEXEC)) == -1 ||
		    write(fd, pid, strlen(pid)) == -1) {
			nsexec_fail(report, "cannot join the cgroup %s: %s",
			    procs[i], strerror(errno));
			if (fd != -1)
				close(fd);
			return (-1);
		}
		close(fd);
	}
	return (0);
}

/* Bring loopback up in a fresh network namespace. */
static int
nsexec_loopback(void)
{
	struct ifreq	ifr;
	int		s, r;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	memset(&ifr, 0, sizeof ifr);
	strlcpy(ifr.ifr_name, "lo", sizeof ifr.ifr_name);
	r = ioctl(s, SIOCGIFFLAGS, &ifr);
	if (r == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
	return (r);
}

/*
 * The holder (a job): build the session and fork its init. Reports
 * "init PID" (the init's pid in our namespace) or "error MESSAGE".
 * Descriptor kept: 4 = the lifeline's read end.
 */
int
nsexec_holder(void *arg, int report)
{
	struct nsexec_session	*s = arg;
	static const char	*names[] = { "uts", "ipc", "net", "mnt" };
	int			 fds[4], fs, mfd, ready[2], i;
	char			 path[64], c;
	size_t			 l;
	pid_t			 init;

	/* The overlay, built while our paths are the host's. */
	if ((fs = fsopen("overlay", FSOPEN_CLOEXEC)) == -1)
		return (nsexec_fail(report, "fsopen overlay: %s",
		    strerror(errno)));
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", "sandbox-mcp", 0) != 0)
		return (nsexec_fail(report, "overlay source: %s",
		    strerror(errno)));
	for (l = 0; l < s->nlower; l++) {
		if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+",
		    s->lower[l], 0) != 0)
			return (nsexec_fail(report, "overlay layer %s: %s",
			    s->lower[l], strerror(errno)));
	}
	if (fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", s->upper, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", s->work, 0) != 0)
		return (nsexec_fail(report, "overlay upper: %s",
		    strerror(errno)));
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		return (nsexec_fail(report, "overlay create: %s",
		    strerror(errno)));
	if ((mfd = fsmount(fs, FSMOUNT_CLOEXEC, 0)) == -1)
		return (nsexec_fail(report, "fsmount: %s", strerror(errno)));
	close(fs);

	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "/proc/%ld/ns/%s",
		    (long)s->container_pid, names[i]);
		if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			return (nsexec_fail(report, "the container's process"
			    " is gone (%s: %s)", path, strerror(errno)));
	}
	if (nsexec_cgroups(s->cgroup_procs, s->ncgroup, report) != 0)
		return (125);
	if (setns(fds[0], CLONE_NEWUTS) != 0 ||
	    setns(fds[1], CLONE_NEWIPC) != 0)
		return (nsexec_fail(report, "setns: %s", strerror(errno)));
	if (s->isolated) {
		if (unshare(CLONE_NEWNET) != 0 || nsexec_loopback() != 0)
			return (nsexec_fail(report, "isolated network: %s",
			    strerror(errno)));
	} else if (setns(fds[2], CLONE_NEWNET) != 0)
		return (nsexec_fail(report, "setns net: %s", strerror(errno)));
	if (setns(fds[3], CLONE_NEWNS) != 0)
		return (nsexec_fail(report, "setns mnt: %s", strerror(errno)));
	for (i = 0; i < 4; i++)
		close(fds[i]);
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return (nsexec_fail(report, "private mounts: %s",
		    strerror(errno)));
	if (mkdir("/workspace", 0755) != 0 && errno != EEXIST)
		return (nsexec_fail(report, "mkdir /workspace: %s",
		    strerror(errno)));
	if (move_mount(mfd, "", AT_FDCWD, "/workspace",
	    MOVE_MOUNT_F_EMPTY_PATH) != 0)
		return (nsexec_fail(report, "mounting /workspace: %s",
		    strerror(errno)));
	close(mfd);
	if (mkdir("/tmp", 01777) != 0 && errno != EEXIST)
		return (nsexec_fail(report, "mkdir /tmp: %s",
		    strerror(errno)));
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=1777") != 0)
		return (nsexec_fail(report, "mounting /tmp: %s",
		    strerror(errno)));
	if (unshare(CLONE_NEWPID) != 0)
		return (nsexec_fail(report, "unshare pid: %s",
		    strerror(errno)));

	if (pipe2(ready, O_CLOEXEC) != 0)
		return (nsexec_fail(report, "pipe: %s", strerror(errno)));
	init = fork();
	if (init == -1)
		return (nsexec_fail(report, "fork: %s", strerror(errno)));
	if (init == 0) {
		/* PID 1 of the session. */
		close(ready[0]);
		close(report);
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV |
		    MS_NOEXEC, NULL) != 0)
			_exit(124);
		if (chdir("/") != 0)
			_exit(124);
		if (dup2(4, 3) == -1)	/* the lifeline, at fd 3 */
			_exit(124);
		close(4);
		c = 'r';
		if (write(ready[1], &c, 1) != 1)
			_exit(124);
		close(ready[1]);
		nsexec_init_main(s->argv0, s->argv_len);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1) {
		kill(init, SIGKILL);
		return (nsexec_fail(report, "the session's init did not"
		    " start"));
	}
	dprintf(report, "init %ld\n", (long)init);
	return (0);
}

static void
nsexec_init_sigchld(int sig)
{
}

/*
 * The session's init (pid 1 of its PID namespace): blank the command
 * line and environment, reap every child, end when the lifeline (fd 3)
 * closes or the server kills us.
 */
__dead void
nsexec_init_main(char *argv0, size_t argv_len)
{
	struct sigaction	 sa;
	struct pollfd		 pfd;
	sigset_t		 block, empty;
	int			 status;
	extern char		**environ;
	char			**e;

	for (e = environ; e != NULL && *e != NULL; e++)
		explicit_bzero(*e, strlen(*e));
	if (argv0 != NULL && argv_len > 0) {
		explicit_bzero(argv0, argv_len);
		strlcpy(argv0, NSEXEC_INIT_NAME, argv_len);
	}
	closefrom(4);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = nsexec_init_sigchld;
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigemptyset(&empty);
	pfd.fd = 3;
	pfd.events = POLLIN;
	for (;;) {
		while (waitpid(-1, &status, WNOHANG) > 0)
			;
		pfd.revents = 0;
		if (ppoll(&pfd, 1, NULL, &empty) == -1 && errno != EINTR)
			_exit(1);
		if (pfd.revents != 0)
			_exit(0);	/* the server is gone or done */
	}
}

/* Drop what a command must not have, just before exec. */
static int
nsexec_harden(void)
{
	size_t	i;
	int	cap, keep;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return (-1);
	for (cap = 0; cap <= CAP_LAST_CAP; cap++) {
		keep = 0;
		for (i = 0; i < sizeof nsexec_caps_kept /
		    sizeof nsexec_caps_kept[0]; i++) {
			if (nsexec_caps_kept[i] == cap)
				keep = 1;
		}
		if (!keep && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 &&
		    errno != EINVAL)
			return (-1);
	}
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &nsexec_filter) != 0)
		return (-1);
	return (0);
}

/*
 * The command shim (a job): join the session, fork the shell, report its
 * pid ("pid N"), wait for it and exit with its status. Descriptors kept:
 * 4 = the command's stdin, 5 = its output.
 */
int
nsexec_command(void *arg, int report)
{
	struct nsexec_command	*c = arg;
	static const char	*names[] = { "pid", "uts", "ipc", "net", "mnt" };
	static const int	 types[] = { CLONE_NEWPID, CLONE_NEWUTS,
	    CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS };
	int			 fds[5], i, st[2], status, err;
	char			 path[64];
	const char		*shell;
	pid_t			 pid;
	ssize_t			 n;

	for (i = 0; i < 5; i++) {
		snprintf(path, sizeof path, "/proc/%ld/ns/%s",
		    (long)c->init_pid, names[i]);
		if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			return (nsexec_fail(report, "the workspace session has"
			    " ended (%s)", strerror(errno)));
	}
	if (nsexec_cgroups(c->cgroup_procs, c->ncgroup, report) != 0)
		return (125);
	for (i = 0; i < 5; i++) {
		if (setns(fds[i], types[i]) != 0)
			return (nsexec_fail(report, "entering the session"
			    " (%s): %s", names[i], strerror(errno)));
		close(fds[i]);
	}
	shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
	if (pipe2(st, O_CLOEXEC) != 0)
		return (nsexec_fail(report, "pipe: %s", strerror(errno)));

	pid = fork();
	if (pid == -1)
		return (nsexec_fail(report, "fork: %s", strerror(errno)));
	if (pid == 0) {
		char	*argv[] = { (char *)shell, (char *)"-c",
			    (char *)c->cmd, NULL };

		close(st[0]);
		setsid();
		if (dup2(4, STDIN_FILENO) == -1 ||
		    dup2(5, STDOUT_FILENO) == -1 ||
		    dup2(5, STDERR_FILENO) == -1)
			goto fail;
		close(4);
		close(5);
		close(report);
		signal(SIGPIPE, SIG_DFL);
		if (chdir("/workspace") != 0 || nsexec_harden() != 0)
			goto fail;
		execve(shell, argv, c->env);
fail:
		err = errno;
		if (write(st[1], &err, sizeof err) != sizeof err)
			_exit(127);
		_exit(127);
	}
	close(st[1]);
	close(4);
	close(5);
	n = read(st[0], &err, sizeof err);
	close(st[0]);
	if (n == sizeof err) {
		waitpid(pid, &status, 0);
		return (nsexec_fail(report, "cannot run %s in the sandbox: %s",
		    shell, strerror(err)));
	}
	dprintf(report, "pid %ld\n", (long)pid);
	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR)
			return (nsexec_fail(report, "waitpid: %s",
			    strerror(errno)));
	}
	if (WIFSIGNALED(status))
		return (128 + WTERMSIG(status));
	return (WEXITSTATUS(status));
}
