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
 * Entering a sandbox: the code that runs in the child processes that
 * build workspace sessions and run commands. The server never changes its
 * own namespaces.
 *
 * For each sandbox the server forks one zygote, which runs the zygote
 * program (nsexec-main.c: this file's zygote half, linked statically,
 * run from a sealed memfd; see nsexec_zygote_exec), joins the
 * container's cgroups (once: moving a process between cgroup v1
 * hierarchies costs an RCU grace period, milliseconds, so nothing else
 * does it again) and its UTS, IPC and network namespaces, and keeps a
 * descriptor of its mount namespace and of the state directory. On a
 * "session" message the zygote forks a builder (and goes back to its
 * requests: builders, as many at once as there are CPUs, answer
 * themselves). The builder is born in a PID namespace of its own, as its
 * pid 1, and as a child of the server rather than of the zygote
 * (CLONE_PARENT): it makes the session's directory and lease and the
 * session's overlay with the new mount API from paths relative to the
 * state directory (fsopen, fsconfig lowerdir+ per layer, fsmount; the
 * kernel wants the layers in the builder's mount namespace, so this
 * happens first), enters the container's mount namespace, unshares a
 * private copy of it (an isolated session also gets its own IPC
 * namespace and a root of its own, see nsexec_isolate), moves the
 * overlay onto /workspace, mounts a private /tmp, unshares a network
 * namespace with loopback only when the session is isolated, mounts the
 * session's /proc, answers, and goes on as the session init: one process
 * forked per session, one address space copied and torn down.
 *
 * The session's /proc is its PID namespace's, with the container's
 * read-only and masked paths moved onto it. The init (pid 1 of the
 * session) blanks its command line and environment (the zygote
 * program's), and serves its control socket: an
 * "exec" message with the command's stdin and output descriptors forks
 * the shell; a "kill" message signals a command's process group; every
 * exit it reaps is reported back; "finish" kills and reaps every other
 * process of the session and answers "finished". When the control
 * socket closes (the server ended or let the session go) the init
 * exits, and the kernel
 * ends every process of the session and with the last of them the mount
 * namespace and its overlay. Being inside the session already, a command
 * costs one clone sharing the init's memory until it execs: no setns,
 * no cgroup move, no page table copied.
 *
 * A shell becomes a session leader (its process group is the command's),
 * gets no_new_privs, a bounding set reduced to Docker's default
 * capabilities and a seccomp filter, and runs in /workspace with the
 * environment the server gives. The init cannot exec our binary: the
 * container's file system may lack the dynamic loader.
 *
 * Messages travel on SOCK_SEQPACKET sockets, typed and checked
 * (nsexec.h): a header with the protocol's version and the type, the
 * fields, and descriptors passed as SCM_RIGHTS. A child that gets a
 * message it does not know ends: its server is not one it can serve.
 */

#include "config.h"

#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <net/if.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NSEXEC_HELPER
#include <seccomp.h>
#endif

#include "nsexec.h"
#include "sandbox-mcp.h"

#define NSEXEC_INIT_NAME	"sandbox-mcp: session init"
#define NSEXEC_ZYGOTE_NAME	"sandbox-mcp: zygote"
#define NSEXEC_MAX_COMMANDS	4096
#define NSEXEC_PROC_MOUNTS	64
#define NSEXEC_BUILDERS_MAX	8
#define NSEXEC_MOUNTINFO_MAX	(256 * 1024)
#define NSEXEC_MOUNTS_MAX	256
#define NSEXEC_SKELETON_MAX	64

/* Docker's default capability set: what a command may keep. */
static const int nsexec_caps_kept[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FSETID, CAP_FOWNER, CAP_MKNOD,
	CAP_NET_RAW, CAP_SETGID, CAP_SETUID, CAP_SETFCAP, CAP_SETPCAP,
	CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_KILL, CAP_AUDIT_WRITE
};

static struct sock_fprog	nsexec_filter;
#ifndef NSEXEC_HELPER
static char			*nsexec_argv0;
static size_t			 nsexec_argv_len;
#endif

#ifdef NSEXEC_HELPER
/*
 * The zygote program: the command filter comes from the server, as the
 * BPF program's instructions in a memfd (fd).
 */
int
nsexec_filter_read(int fd)
{
	struct stat		 st;
	struct sock_filter	*f;
	ssize_t			 n;

	if (fstat(fd, &st) != 0 || st.st_size <= 0 ||
	    st.st_size % sizeof *f != 0 || st.st_size > 65536)
		return (-1);
	f = xmalloc(st.st_size);
	if ((n = pread(fd, f, st.st_size, 0)) != st.st_size) {
		free(f);
		return (-1);
	}
	nsexec_filter.filter = f;
	nsexec_filter.len = st.st_size / sizeof *f;
	return (0);
}
#else
/*
 * The zygote program (sandbox-mcp-nsexec, built from this file and
 * linked statically, its image part of our own): what a zygote forks
 * for each session copies its few mappings rather than the server's
 * libraries (some forty, two hundred mappings), and the session's init,
 * its fork, tears down as few when it ends. Kept in a sealed memfd, with
 * the command filter in another, both made once at start.
 */
#ifndef MFD_EXEC
#define NSEXEC_MFD_EXEC		0x0010U
#else
#define NSEXEC_MFD_EXEC		MFD_EXEC
#endif

extern const char	nsexec_image[], nsexec_image_end[];
static int		nsexec_image_fd = -1;
static int		nsexec_filter_fd = -1;

/* A sealed memfd holding len bytes of buf, or -1. */
static int
nsexec_memfd(const char *name, const void *buf, size_t len)
{
	size_t	off = 0;
	ssize_t	n;
	int	fd;

	/*
	 * Executable said out loud where the kernel knows the flag (where
	 * vm.memfd_noexec would seal it otherwise); older ones refuse it.
	 */
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING |
	    NSEXEC_MFD_EXEC);
	if (fd == -1 && errno == EINVAL)
		fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd == -1)
		return (-1);
	while (off < len) {
		if ((n = write(fd, (const char *)buf + off, len - off)) <= 0) {
			close(fd);
			return (-1);
		}
		off += n;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
		close(fd);
		return (-1);
	}
	return (fd);
}

static void
nsexec_program_init(void)
{
	nsexec_image_fd = nsexec_memfd("sandbox-mcp-nsexec", nsexec_image,
	    nsexec_image_end - nsexec_image);
	nsexec_filter_fd = nsexec_memfd("sandbox-mcp-filter",
	    nsexec_filter.filter, nsexec_filter.len *
	    sizeof *nsexec_filter.filter);
	if (nsexec_image_fd == -1 || nsexec_filter_fd == -1)
		log_warn("the zygote program");
}

/*
 * Build the command filter once (in the server): EPERM for mounting,
 * namespaces, modules, kexec, bpf, perf events, keyrings, the kernel log,
 * the clock, raw I/O ports, another process's descriptors and memory
 * advice, and device nodes (by mknod, or by a rename leaving a
 * whiteout); ENOSYS for clone3, whose flags a filter cannot read, so the
 * C library falls back to clone, whose namespace flags it can, and for
 * io_uring, whose operations a filter cannot see at all, so that programs
 * fall back to the calls it can. Also remember where our command line
 * is, for session inits to blank.
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
	    "userfaultfd", "uselib", "personality", "quotactl_fd",
	    "fanotify_init", "syslog", "sethostname", "setdomainname",
	    "settimeofday", "clock_settime", "iopl", "ioperm", "vhangup",
	    "kcmp", "pidfd_getfd", "process_madvise" };
	static const char *absent[] = { "clone3", "io_uring_setup",
	    "io_uring_enter", "io_uring_register" };
	static const unsigned long devices[] = { S_IFCHR, S_IFBLK };
	static const unsigned long families[] = { 40 /* AF_VSOCK */,
	    38 /* AF_ALG */ };
	scmp_filter_ctx	 ctx;
	size_t		 i;
	int		 sys;

	ctx = confine_filter_new(denied, sizeof denied / sizeof denied[0]);
	for (i = 0; i < sizeof devices / sizeof devices[0]; i++) {
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(mknod), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, S_IFMT,
		    devices[i])) != 0 ||
		    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(mknodat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, S_IFMT,
		    devices[i])) != 0)
			fatalx("seccomp_rule_add mknod failed");
	}
	/*
	 * A rename that leaves a whiteout makes a character device (0:0)
	 * at the old name: a device node by another door.
	 */
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(renameat2),
	    1, SCMP_A4(SCMP_CMP_MASKED_EQ, RENAME_WHITEOUT,
	    RENAME_WHITEOUT)) != 0)
		fatalx("seccomp_rule_add renameat2 failed");
	for (i = 0; i < sizeof absent / sizeof absent[0]; i++) {
		if ((sys = seccomp_syscall_resolve_name(absent[i])) ==
		    __NR_SCMP_ERROR)
			continue;
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), sys, 0) != 0)
			fatalx("seccomp_rule_add %s failed", absent[i]);
	}
	/*
	 * Socket families a command has no business with: vsock (it
	 * reaches the hypervisor's host when the machine is a virtual one)
	 * and the kernel's crypto sockets (AF_ALG); as if the kernel had
	 * none of them.
	 */
	for (i = 0; i < sizeof families / sizeof families[0]; i++) {
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
		    SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ,
		    families[i])) != 0 ||
		    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT),
		    SCMP_SYS(socketpair), 1, SCMP_A0(SCMP_CMP_EQ,
		    families[i])) != 0)
			fatalx("seccomp_rule_add socket failed");
	}
	confine_bpf(ctx, &nsexec_filter);
	nsexec_program_init();

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

#endif /* !NSEXEC_HELPER */

/* The shape of each message: its name and its fields and descriptors. */
static const struct {
	const char	*name;
	int		 min;		/* fields */
	int		 max;
	int		 fds;
} nsexec_types[NSEXEC_TYPES] = {
	[NSEXEC_BUILD] = { "build", 5, NSEXEC_FIELDS_MAX, 1 },
	[NSEXEC_READY] = { "ready", 0, 0, 0 },
	[NSEXEC_FAILED] = { "failed", 1, 1, 0 },
	[NSEXEC_BUILT] = { "built", 2, 2, 0 },
	[NSEXEC_REFUSED] = { "refused", 2, 2, 0 },
	[NSEXEC_EXEC] = { "exec", 2, 2 + 16, 2 },
	[NSEXEC_KILL] = { "kill", 2, 2, 0 },
	[NSEXEC_SEAL] = { "seal", 0, 0, 0 },
	[NSEXEC_UNSEAL] = { "unseal", 0, 0, 0 },
	[NSEXEC_FINISH] = { "finish", 0, 0, 0 },
	[NSEXEC_ROOT] = { "root", 0, 0, 1 },
	[NSEXEC_PID] = { "pid", 2, 2, 0 },
	[NSEXEC_EXIT] = { "exit", 2, 2, 0 },
	[NSEXEC_ERROR] = { "error", 2, 2, 0 },
	[NSEXEC_SEALED] = { "sealed", 1, 1, 0 },
	[NSEXEC_FINISHED] = { "finished", 0, 0, 0 },
};

/* The header of every message. */
struct nsexec_hdr {
	uint16_t	version;
	uint16_t	type;
	uint32_t	nfields;
};

const char *
nsexec_type_name(enum nsexec_type type)
{
	if (type <= 0 || type >= NSEXEC_TYPES)
		return ("unknown");
	return (nsexec_types[type].name);
}

/*
 * Send one message of a type: its fields, each ending in NUL, and its
 * descriptors. A message of the wrong shape is our own bug: fatal.
 * Returns 0 or -1 (errno set; EAGAIN when the socket is full).
 */
int
nsexec_msg_send(int sock, enum nsexec_type type, const char **fields,
    int nfields, const int *fds, int nfds)
{
	struct nsexec_hdr hdr;
	struct msghdr	 msg;
	struct iovec	 iov[NSEXEC_FIELDS_MAX + 1];
	struct cmsghdr	*cm;
	char		 cbuf[CMSG_SPACE(sizeof(int) * NSEXEC_FDS_MAX)];
	int		 i;
	ssize_t		 n;

	if (type <= 0 || type >= NSEXEC_TYPES ||
	    nfields < nsexec_types[type].min ||
	    nfields > nsexec_types[type].max ||
	    nfds != nsexec_types[type].fds)
		fatalx("%s: a %s message with %d fields and %d descriptors",
		    __func__, nsexec_type_name(type), nfields, nfds);
	memset(&hdr, 0, sizeof hdr);
	hdr.version = NSEXEC_VERSION;
	hdr.type = (uint16_t)type;
	hdr.nfields = (uint32_t)nfields;
	memset(&msg, 0, sizeof msg);
	iov[0].iov_base = &hdr;
	iov[0].iov_len = sizeof hdr;
	for (i = 0; i < nfields; i++) {
		iov[i + 1].iov_base = (void *)fields[i];
		iov[i + 1].iov_len = strlen(fields[i]) + 1;
	}
	msg.msg_iov = iov;
	msg.msg_iovlen = nfields + 1;
	if (nfds > 0) {
		memset(cbuf, 0, sizeof cbuf);
		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	} while (n == -1 && errno == EINTR);
	return (n == -1 ? -1 : 0);
}

/* Close the descriptors a message brought (those not taken). */
void
nsexec_msg_close(struct nsexec_msg *m)
{
	int	i;

	for (i = 0; i < m->nfds; i++) {
		if (m->fds[i] != -1)
			close(m->fds[i]);
		m->fds[i] = -1;
	}
	m->nfds = 0;
}

/*
 * Receive one message into buf (its fields point there). Returns 1, 0
 * at end of file, or -1 with errno: EAGAIN when none is waiting, EPROTO
 * for a message of an unknown version or type or of the wrong shape
 * (its descriptors closed), which ends the peer. Received descriptors
 * are close-on-exec.
 */
int
nsexec_msg_recv(int sock, char *buf, size_t size, struct nsexec_msg *m)
{
	struct nsexec_hdr hdr;
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	char		 cbuf[CMSG_SPACE(sizeof(int) * NSEXEC_FDS_MAX)];
	ssize_t		 n, i;
	size_t		 body;
	int		 k, fd, extra = 0;

	memset(m, 0, sizeof *m);
	memset(&msg, 0, sizeof msg);
	iov.iov_base = buf;
	iov.iov_len = size - 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n == -1 && errno == EINTR);
	if (n < 0)
		return (-1);
	/*
	 * The descriptors are ours once received, whatever the datagram
	 * holds (even none of it): each is kept to be closed, or closed.
	 */
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type !=
		    SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			    sizeof fd);
			if (m->nfds < NSEXEC_FDS_MAX)
				m->fds[m->nfds++] = fd;
			else {
				close(fd);
				extra = 1;
			}
		}
	}
	if (n == 0 && m->nfds == 0 && !extra)
		return (0);		/* the peer has closed */
	if (n == 0 || extra || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    (size_t)n < sizeof hdr)
		goto bad;
	memcpy(&hdr, buf, sizeof hdr);
	if (hdr.version != NSEXEC_VERSION || hdr.type == 0 ||
	    hdr.type >= NSEXEC_TYPES ||
	    hdr.nfields < (uint32_t)nsexec_types[hdr.type].min ||
	    hdr.nfields > (uint32_t)nsexec_types[hdr.type].max ||
	    m->nfds != nsexec_types[hdr.type].fds)
		goto bad;
	m->type = hdr.type;
	/* Exactly nfields fields, each ending in NUL. */
	body = (size_t)n - sizeof hdr;
	if (hdr.nfields > 0 && (body == 0 || buf[n - 1] != '\0'))
		goto bad;
	if (hdr.nfields == 0 && body != 0)
		goto bad;
	for (i = sizeof hdr; i < n && m->nfields < (int)hdr.nfields; i++) {
		m->f[m->nfields++] = buf + i;
		i += strlen(buf + i);
	}
	if (m->nfields != (int)hdr.nfields || i != n)
		goto bad;
	return (1);
bad:
	nsexec_msg_close(m);
	errno = EPROTO;
	return (-1);
}

/*
 * Field i of a message as an integer in [min, max]: 0, or -1 when it is
 * not one (a protocol error for the receiver).
 */
int
nsexec_msg_int(const struct nsexec_msg *m, int i, long long min,
    long long max, long long *v)
{
	const char	*errstr;

	if (i >= m->nfields)
		return (-1);
	*v = strtonum(m->f[i], min, max, &errstr);
	return (errstr == NULL ? 0 : -1);
}

/* Blank our command line and environment, and say what we are. */
static void
nsexec_rename(const struct nsexec_zygote *z, const char *name)
{
	extern char	**environ;
	char		**e;

	for (e = environ; e != NULL && *e != NULL; e++)
		explicit_bzero(*e, strlen(*e));
	if (z->argv0 != NULL && z->argv_len > 0) {
		explicit_bzero(z->argv0, z->argv_len);
		strlcpy(z->argv0, name, z->argv_len);
	}
	prctl(PR_SET_NAME, name, 0, 0, 0);
}

/*
 * Join cgroups: "0" (the writer, whatever its pid namespace calls it)
 * into each cgroup.procs.
 */
static int
nsexec_cgroups(char **procs, size_t n, char *err, size_t errlen)
{
	size_t	i;
	int	fd;

	for (i = 0; i < n; i++) {
		if ((fd = open(procs[i], O_WRONLY | O_CLOEXEC)) == -1 ||
		    write(fd, "0", 1) == -1) {
			snprintf(err, errlen, "cannot join the cgroup %s: %s",
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

#ifndef NSEXEC_HELPER
/*
 * What a box's command gets before its exec (box.c), as a sandbox's
 * does: no_new_privs, Docker's default bounding set, the command
 * filter. 0, or -1 with errno.
 */
int
nsexec_command_harden(void)
{
	return (nsexec_harden());
}
#endif

/* A command the init runs: its id, its process group, its end. */
struct nsexec_cmd {
	char	id[24];
	pid_t	pid;
	int	exited;		/* the shell has, with code */
	int	code;
	int	reported;	/* its exit has been said */
};

static volatile sig_atomic_t	nsexec_child_exited;

static void
nsexec_sigchld(int sig)
{
	nsexec_child_exited = 1;
}

/*
 * The shell's start, in a child sharing the init's memory until it execs
 * (clone with CLONE_VM and CLONE_VFORK, as posix_spawn does): no page
 * table to copy, no page to fault in. Only system calls run here, on a
 * stack of its own; a failure is left in error for the init to read.
 */
struct nsexec_spawn {
	const char	*shell;
	char		**argv;
	char		**env;
	int		*fds;
	int		 error;
};

static char	nsexec_spawn_stack[64 * 1024] __attribute__((aligned(16)));

static int
nsexec_spawn_child(void *arg)
{
	struct nsexec_spawn	*sp = arg;
	sigset_t		 none;

	setsid();
	if (dup2(sp->fds[0], STDIN_FILENO) == -1 ||
	    dup2(sp->fds[1], STDOUT_FILENO) == -1 ||
	    dup2(sp->fds[1], STDERR_FILENO) == -1)
		goto fail;
	closefrom(3);
#ifndef NSEXEC_HELPER
	/* (The zygote program runs with the usual limit already.) */
	proc_nofile_restore();
#endif
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (chdir("/workspace") != 0 || nsexec_harden() != 0)
		goto fail;
	execve(sp->shell, sp->argv, sp->env);
fail:
	sp->error = errno != 0 ? errno : EINVAL;
	_exit(127);
}

/* The init starts a command's shell. */
static pid_t
nsexec_init_exec(struct nsexec_msg *m, char *err, size_t errlen)
{
	static const char	*shell;
	struct nsexec_spawn	 sp;
	char			*argv[4], **env;
	int			 i;
	pid_t			 pid;

	/* exec: ID CMD ENV..., with stdin and output */
	if (shell == NULL)
		shell = access("/bin/bash", X_OK) == 0 ? "/bin/bash" :
		    "/bin/sh";
	env = xcalloc(m->nfields, sizeof *env);
	for (i = 2; i < m->nfields; i++)
		env[i - 2] = m->f[i];
	argv[0] = (char *)shell;
	argv[1] = (char *)"-c";
	argv[2] = m->f[1];
	argv[3] = NULL;
	memset(&sp, 0, sizeof sp);
	sp.shell = shell;
	sp.argv = argv;
	sp.env = env;
	sp.fds = m->fds;
	pid = clone(nsexec_spawn_child, nsexec_spawn_stack +
	    sizeof nsexec_spawn_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &sp);
	free(env);
	if (pid == -1) {
		snprintf(err, errlen, "clone: %s", strerror(errno));
		return (-1);
	}
	if (sp.error != 0) {
		/* It has exited; the reaping loop takes it as an orphan. */
		snprintf(err, errlen, "cannot start the shell: %s",
		    strerror(sp.error));
		return (-1);
	}
	return (pid);
}

/*
 * The session's init: pid 1 of its PID namespace. Serves the control
 * socket (fd 3) until it closes.
 */
static __dead void
nsexec_init_main(const struct nsexec_zygote *z)
{
	struct sigaction	 sa;
	struct pollfd		 pfd;
	struct nsexec_cmd	*cmds = NULL;
	sigset_t		 block, empty;
	size_t			 ncmds = 0, i;
	struct nsexec_msg	 m;
	char			*buf, err[512], num[32];
	const char		*out[4];
	struct mount_attr	 attr;
	long long		 sig;
	int			 r, status, k;
	pid_t			 pid;

	nsexec_rename(z, NSEXEC_INIT_NAME);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = nsexec_sigchld;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigemptyset(&empty);
	buf = xmalloc(NSEXEC_MSG_MAX);
	/* The server reads and writes the session's files through this. */
	if ((k = open("/workspace", O_PATH | O_DIRECTORY | O_CLOEXEC)) ==
	    -1)
		_exit(1);
	if (nsexec_msg_send(3, NSEXEC_ROOT, NULL, 0, &k, 1) != 0)
		_exit(1);
	close(k);
	pfd.fd = 3;
	pfd.events = POLLIN;
	for (;;) {
		nsexec_child_exited = 0;
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			for (i = 0; i < ncmds; i++) {
				if (cmds[i].pid == pid)
					break;
			}
			if (i == ncmds)
				continue;	/* an orphan we inherited */
			cmds[i].exited = 1;
			cmds[i].code = WIFSIGNALED(status) ? 128 +
			    WTERMSIG(status) : WEXITSTATUS(status);
		}
		/*
		 * A shell's exit is reported as soon as it is reaped: what
		 * it left in the background is not waited for here (the
		 * server waits for the end of the output, which is what
		 * keeps a command running). A command is kept after that
		 * while its process group lives, for "kill"; a group gone
		 * frees its place.
		 */
		for (i = 0; i < ncmds; i++) {
			if (!cmds[i].exited)
				continue;
			if (!cmds[i].reported) {
				snprintf(num, sizeof num, "%d", cmds[i].code);
				out[0] = cmds[i].id;
				out[1] = num;
				nsexec_msg_send(3, NSEXEC_EXIT, out, 2, NULL,
				    0);
				cmds[i].reported = 1;
			}
			if (kill(-cmds[i].pid, 0) != 0 && errno == ESRCH)
				cmds[i--] = cmds[--ncmds];
		}
		pfd.revents = 0;
		if (ppoll(&pfd, 1, NULL, &empty) == -1) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pfd.revents == 0)
			continue;
		/*
		 * The end of the socket is the server letting us go; a
		 * message we do not know is a server we cannot serve.
		 */
		r = nsexec_msg_recv(3, buf, NSEXEC_MSG_MAX, &m);
		if (r == -1 && errno == EAGAIN)
			continue;
		if (r != 1)
			_exit(0);
		if (m.type == NSEXEC_EXEC) {
			out[0] = m.f[0];
			if (ncmds >= NSEXEC_MAX_COMMANDS) {
				/* Groups that outlived their shells go. */
				for (i = 0; i < ncmds; i++) {
					if (cmds[i].reported)
						cmds[i--] = cmds[--ncmds];
				}
			}
			if (ncmds >= NSEXEC_MAX_COMMANDS)
				pid = -1, snprintf(err, sizeof err,
				    "too many commands in the session");
			else
				pid = nsexec_init_exec(&m, err, sizeof err);
			if (pid == -1) {
				out[1] = err;
				nsexec_msg_send(3, NSEXEC_ERROR, out, 2, NULL,
				    0);
			} else {
				/*
				 * A group of that number is gone: a command
				 * still listed under it is over.
				 */
				for (i = 0; i < ncmds; i++) {
					if (cmds[i].pid == pid)
						cmds[i--] = cmds[--ncmds];
				}
				cmds = xreallocarray(cmds, ncmds + 1,
				    sizeof *cmds);
				memset(&cmds[ncmds], 0, sizeof cmds[ncmds]);
				strlcpy(cmds[ncmds].id, m.f[0],
				    sizeof cmds[ncmds].id);
				cmds[ncmds++].pid = pid;
				snprintf(num, sizeof num, "%ld", (long)pid);
				out[1] = num;
				nsexec_msg_send(3, NSEXEC_PID, out, 2, NULL, 0);
			}
		} else if (m.type == NSEXEC_FINISH) {
			/*
			 * End every other process of the session and reap
			 * them all (orphans are ours), then say so: the upper
			 * directory no longer changes. We stay until let go;
			 * tearing the namespaces down is the kernel's work
			 * after that, and nobody waits for it.
			 */
			kill(-1, SIGKILL);
			for (;;) {
				pid = waitpid(-1, &status, 0);
				if (pid == -1 && errno == EINTR)
					continue;
				if (pid == -1)
					break;
				for (i = 0; i < ncmds; i++) {
					if (cmds[i].pid != pid)
						continue;
					cmds[i].exited = 1;
					cmds[i].code = WIFSIGNALED(status) ?
					    128 + WTERMSIG(status) :
					    WEXITSTATUS(status);
				}
			}
			for (i = 0; i < ncmds; i++) {
				if (cmds[i].reported)
					continue;
				snprintf(num, sizeof num, "%d", cmds[i].code);
				out[0] = cmds[i].id;
				out[1] = num;
				nsexec_msg_send(3, NSEXEC_EXIT, out, 2, NULL,
				    0);
			}
			ncmds = 0;
			nsexec_msg_send(3, NSEXEC_FINISHED, NULL, 0, NULL, 0);
		} else if (m.type == NSEXEC_KILL) {
			if (nsexec_msg_int(&m, 1, 1, 64, &sig) != 0)
				_exit(0);	/* not a signal: not ours */
			for (i = 0; i < ncmds; i++) {
				if (strcmp(cmds[i].id, m.f[0]) == 0 &&
				    kill(-cmds[i].pid, (int)sig) != 0 &&
				    !cmds[i].exited)
					kill(cmds[i].pid, (int)sig);
			}
		} else if (m.type == NSEXEC_SEAL) {
			/*
			 * /workspace read-only for a publish: nothing can
			 * open a file of it for writing any more, here or in
			 * another session holding a descriptor of it, so the
			 * inodes a publish links into a layer stay as they
			 * are. Refused (EBUSY) while a file of it is open for
			 * writing somewhere: the publish then copies.
			 */
			memset(&attr, 0, sizeof attr);
			attr.attr_set = MOUNT_ATTR_RDONLY;
			out[0] = mount_setattr(AT_FDCWD, "/workspace", 0, &attr,
			    sizeof attr) == 0 ? "1" : "0";
			nsexec_msg_send(3, NSEXEC_SEALED, out, 1, NULL, 0);
		} else if (m.type == NSEXEC_UNSEAL) {
			memset(&attr, 0, sizeof attr);
			attr.attr_clr = MOUNT_ATTR_RDONLY;
			mount_setattr(AT_FDCWD, "/workspace", 0, &attr,
			    sizeof attr);
		} else
			_exit(0);	/* a message of the other direction */
		nsexec_msg_close(&m);
	}
}

/* A mount point from mountinfo, its octal escapes undone, in place. */
static void
nsexec_unescape(char *s)
{
	char	*d = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
			    (s[3] - '0'));
			s += 4;
		} else
			*d++ = *s++;
	}
	*d = '\0';
}

/*
 * The mount points under the container's /proc (Docker's read-only
 * /proc/sys, /proc/bus, /proc/fs, /proc/irq, /proc/sysrq-trigger and its
 * masks over /proc/kcore, /proc/keys, /proc/timer_list and the like),
 * read once by the zygote from the container's first process, whose
 * mount namespace every session's is copied from.
 */
static char	*nsexec_proc_path[NSEXEC_PROC_MOUNTS];
static int	 nsexec_nproc;

/*
 * The session's own /proc, hiding what the container's hides: each
 * mount of the list is cloned before the new proc covers it and moved to
 * the same place on the new one. Without this a command could write
 * /proc/sys (core_pattern runs a program as root on the host).
 */
static int
nsexec_proc(char *err, size_t errlen)
{
	int	 tree[NSEXEC_PROC_MOUNTS], n, i, rv = -1;

	for (n = 0; n < nsexec_nproc; n++) {
		if ((tree[n] = open_tree(AT_FDCWD, nsexec_proc_path[n],
		    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) == -1) {
			snprintf(err, errlen, "cloning the mount on %.200s: %s",
			    nsexec_proc_path[n], strerror(errno));
			goto out;
		}
	}
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    NULL) != 0) {
		snprintf(err, errlen, "mounting /proc: %s", strerror(errno));
		goto out;
	}
	for (i = 0; i < n; i++) {
		/* What the new /proc lacks needs no hiding. */
		if (move_mount(tree[i], "", AT_FDCWD, nsexec_proc_path[i],
		    MOVE_MOUNT_F_EMPTY_PATH) != 0 && errno != ENOENT) {
			snprintf(err, errlen, "hiding %.200s: %s",
			    nsexec_proc_path[i], strerror(errno));
			goto out;
		}
	}
	rv = 0;
out:
	for (i = 0; i < n; i++)
		close(tree[i]);
	return (rv);
}

/*
 * Remove what directory dfd holds (an overlay's work directory: a few
 * entries, a few levels), never following a link; depth-bounded.
 */
static int
nsexec_empty(int dfd, int depth)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 sub, dup, rv = 0;

	if (depth > 8 || (dup = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) == -1)
		return (-1);
	if ((d = fdopendir(dup)) == NULL) {
		close(dup);
		return (-1);
	}
	while (rv == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name,
		    "..") == 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			rv = -1;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if ((sub = openat(dfd, de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
			    nsexec_empty(sub, depth + 1) != 0)
				rv = -1;
			if (sub != -1)
				close(sub);
			if (rv == 0 && unlinkat(dfd, de->d_name,
			    AT_REMOVEDIR) != 0)
				rv = -1;
		} else if (unlinkat(dfd, de->d_name, 0) != 0)
			rv = -1;
	}
	closedir(d);
	return (rv);
}

/*
 * A session a process that is gone left (adopt): its directory and upper
 * stay as they are; the old work directory (which a volatile overlay
 * marks as not to be mounted again) is emptied, an isolated session's
 * private mounts are set aside in the directory, to go with it, and the
 * lease is replaced whole.
 */
static int
nsexec_scratch_adopt(const char *dir, const char *lease, char *err,
    size_t errlen)
{
	struct stat	 st;
	char		 path[PATH_MAX], old[PATH_MAX], tmp[PATH_MAX];
	size_t		 len = strlen(lease);
	int		 fd;

	snprintf(path, sizeof path, "%s/upper", dir);
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "the session's changes are not in"
		    " %.200s any more", dir);
		return (-1);
	}
	/*
	 * The work directory emptied in place (its volatile mark, its
	 * index): nothing to allocate, so a full disk does not stop it.
	 */
	snprintf(path, sizeof path, "%s/work", dir);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (errno != ENOENT || mkdir(path, 0700) != 0)
			goto fail;
	} else {
		if (nsexec_empty(fd, 0) != 0) {
			close(fd);
			goto fail;
		}
		close(fd);
	}
	snprintf(path, sizeof path, "%s/private", dir);
	snprintf(old, sizeof old, "%s/private.%ld.old", dir, (long)getpid());
	if (rename(path, old) != 0 && errno != ENOENT)
		goto fail;
	snprintf(tmp, sizeof tmp, "%s/lease.json.new", dir);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0644)) == -1)
		goto fail;
	if (write(fd, lease, len) != (ssize_t)len) {
		close(fd);
		goto fail;
	}
	close(fd);
	snprintf(path, sizeof path, "%s/lease.json", dir);
	if (rename(tmp, path) != 0)
		goto fail;
	return (0);
fail:
	snprintf(err, errlen, "cannot take %.200s up again: %s", dir,
	    strerror(errno));
	return (-1);
}

/*
 * The session's directory (DIR: upper, work) and its lease, before
 * anything is mounted from the layers the lease names.
 */
static int
nsexec_scratch(const char *dir, const char *lease, char *err, size_t errlen)
{
	char	path[PATH_MAX];
	size_t	len = strlen(lease);
	int	fd;

	if (mkdir(dir, 0700) != 0) {
		snprintf(err, errlen, "cannot create %.200s: %s", dir,
		    strerror(errno));
		return (-1);
	}
	snprintf(path, sizeof path, "%s/upper", dir);
	if (mkdir(path, 0755) != 0)
		goto fail;
	snprintf(path, sizeof path, "%s/work", dir);
	if (mkdir(path, 0700) != 0)
		goto fail;
	/* A lease lives no longer than the server: no fsync. */
	snprintf(path, sizeof path, "%s/lease.json", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0644)) == -1)
		goto fail;
	if (write(fd, lease, len) != (ssize_t)len) {
		close(fd);
		goto fail;
	}
	close(fd);
	return (0);
fail:
	snprintf(err, errlen, "cannot create %.200s: %s", path,
	    strerror(errno));
	return (-1);
}

/*
 * An isolated session reaches nothing outside it. Its own network
 * namespace (loopback only) takes TCP and abstract sockets away, its own
 * IPC namespace SysV objects and message queues; what remains is the file
 * system, where a shared session may bind a socket, hold a fifo or a pty,
 * or leave a program for others to run. So the isolated session gets a
 * root of its own, built from the container's mounts (read by the zygote
 * from the container's first process): every writable directory mount,
 * the root first, becomes an overlay with the container's as its lower
 * layer and a private upper directory in the session's directory (a
 * socket or a fifo reached through an overlay is not the one bound on the
 * lower inode: connecting is refused); /dev/pts, /dev/mqueue and /dev/shm
 * are fresh instances; /proc comes whole (the init covers it with the
 * session's own); every other mount (sysfs, cgroups, the files Docker
 * binds in) is a read-only copy. The builder pivots into that root, and
 * /run and /var/tmp get an empty tmpfs each (/run keeping the names of
 * its directories).
 */
struct nsexec_mount {
	char		*path;
	char		*type;
	char		*opts;	/* the file system's, for a new one */
	unsigned int	 attr;	/* MOUNT_ATTR_RDONLY, _NOSUID, ... */
	unsigned int	 major;
	unsigned int	 minor;
};
static struct nsexec_mount	nsexec_mounts[NSEXEC_MOUNTS_MAX];
static int			nsexec_nmounts;
static char			*nsexec_mounts_error;
static int			nsexec_root_made;	/* nsexec_root's */

/* The source of the sandbox's root file system (nsexec_root). */
#define NSEXEC_ROOT_SOURCE	"sandbox-mcp-root"

/* Forget the container's mounts, to read them again. */
static void
nsexec_mounts_forget(void)
{
	int	i;

	for (i = 0; i < nsexec_nmounts; i++) {
		free(nsexec_mounts[i].path);
		free(nsexec_mounts[i].type);
		free(nsexec_mounts[i].opts);
	}
	nsexec_nmounts = 0;
	for (i = 0; i < nsexec_nproc; i++)
		free(nsexec_proc_path[i]);
	nsexec_nproc = 0;
	free(nsexec_mounts_error);
	nsexec_mounts_error = NULL;
	nsexec_root_made = 0;
}

/* Whether a mountinfo line on / is the sandbox's root of ours. */
static int
nsexec_root_ours(char **f, int nf)
{
	int	dash;

	for (dash = 6; dash < nf && strcmp(f[dash], "-") != 0; dash++)
		;
	return (dash + 2 < nf && strcmp(f[dash + 1], "overlay") == 0 &&
	    strcmp(f[dash + 2], NSEXEC_ROOT_SOURCE) == 0);
}

/* File systems that hold no socket, fifo or file of ours: copied. */
static int
nsexec_isolate_pseudo(const char *type)
{
	static const char	*types[] = { "proc", "sysfs", "cgroup",
	    "cgroup2", "securityfs", "debugfs", "tracefs", "pstore", "bpf",
	    "configfs", "fusectl", "binfmt_misc", "efivarfs", "selinuxfs",
	    "nsfs" };
	size_t			 i;

	for (i = 0; i < sizeof types / sizeof types[0]; i++) {
		if (strcmp(type, types[i]) == 0)
			return (1);
	}
	return (0);
}

/* The per-mount flags that carry over, from mountinfo's options. */
static unsigned int
nsexec_isolate_attr(char *opts)
{
	unsigned int	 attr = 0;
	char		*o;

	while ((o = strsep(&opts, ",")) != NULL) {
		if (strcmp(o, "ro") == 0)
			attr |= MOUNT_ATTR_RDONLY;
		else if (strcmp(o, "nosuid") == 0)
			attr |= MOUNT_ATTR_NOSUID;
		else if (strcmp(o, "nodev") == 0)
			attr |= MOUNT_ATTR_NODEV;
		else if (strcmp(o, "noexec") == 0)
			attr |= MOUNT_ATTR_NOEXEC;
	}
	return (attr);
}

/*
 * One line of the container's mountinfo, split into its fields, for
 * isolated sessions: every mount but the root and what lies under /proc,
 * parents before children (a child's mount point is longer than its
 * parent's). When there are too many, isolated sessions fail to build
 * and say why.
 */
static void
nsexec_isolate_add(char **f, int nf)
{
	struct nsexec_mount	 m;
	int			 dash, i;

	/*
	 * ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [OPTIONAL...]
	 * - TYPE SOURCE SUPER-OPTIONS
	 */
	for (dash = 6; dash < nf && strcmp(f[dash], "-") != 0; dash++)
		;
	if (dash + 3 >= nf || strcmp(f[4], "/") == 0 ||
	    nsexec_mounts_error != NULL)
		return;
	if (nsexec_nmounts == NSEXEC_MOUNTS_MAX) {
		xasprintf(&nsexec_mounts_error, "more than %d mounts in the"
		    " container", NSEXEC_MOUNTS_MAX);
		return;
	}
	memset(&m, 0, sizeof m);
	if (sscanf(f[2], "%u:%u", &m.major, &m.minor) != 2)
		return;
	m.path = xstrdup(f[4]);
	m.type = xstrdup(f[dash + 1]);
	m.opts = xstrdup(f[dash + 3]);
	m.attr = nsexec_isolate_attr(f[5]);
	/* A mount over another at the same place hides it. */
	for (i = 0; i < nsexec_nmounts; i++) {
		if (strcmp(nsexec_mounts[i].path, m.path) == 0)
			break;
	}
	if (i < nsexec_nmounts) {
		free(nsexec_mounts[i].path);
		free(nsexec_mounts[i].type);
		free(nsexec_mounts[i].opts);
		nsexec_mounts[i] = m;
		return;
	}
	/* Insert, keeping the order of equal lengths. */
	for (i = nsexec_nmounts; i > 0 &&
	    strlen(nsexec_mounts[i - 1].path) > strlen(m.path); i--)
		nsexec_mounts[i] = nsexec_mounts[i - 1];
	nsexec_mounts[i] = m;
	nsexec_nmounts++;
}

/*
 * Read the container's mounts once, by the zygote, from the container's
 * first process (nobody mounts in a running container): the list under
 * its /proc for every session, the rest for isolated ones.
 */
static int
nsexec_container_mounts(pid_t pid, char *err, size_t errlen)
{
	char	 path[64], *buf, *line, *next, *f[32];
	int	 fd, nf, i, rv = -1;
	size_t	 len = 0;
	ssize_t	 r;

	nsexec_mounts_forget();
	snprintf(path, sizeof path, "/proc/%ld/mountinfo", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "the container's mounts: %s",
		    strerror(errno));
		return (-1);
	}
	buf = xmalloc(NSEXEC_MOUNTINFO_MAX);
	while ((r = read(fd, buf + len, NSEXEC_MOUNTINFO_MAX - 1 - len)) > 0)
		len += r;
	close(fd);
	if (r == -1 || len == NSEXEC_MOUNTINFO_MAX - 1) {
		snprintf(err, errlen, "the container's mounts: %s", r == -1 ?
		    strerror(errno) : "too many");
		goto out;
	}
	buf[len] = '\0';
	for (line = buf; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		nf = 0;
		while (nf < (int)(sizeof f / sizeof f[0]) &&
		    (f[nf] = strsep(&line, " ")) != NULL)
			nf++;
		if (nf < 6)
			continue;
		nsexec_unescape(f[4]);
		if (strcmp(f[4], "/") == 0 && nsexec_root_ours(f, nf))
			nsexec_root_made = 1;
		if (strncmp(f[4], "/proc/", 6) != 0) {
			nsexec_isolate_add(f, nf);
			continue;
		}
		/* The sandbox's root (nsexec_root) has a copy of each. */
		for (i = 0; i < nsexec_nproc; i++) {
			if (strcmp(nsexec_proc_path[i], f[4]) == 0)
				break;
		}
		if (i < nsexec_nproc)
			continue;
		if (nsexec_nproc == NSEXEC_PROC_MOUNTS) {
			snprintf(err, errlen, "more than %d mounts under the"
			    " container's /proc", NSEXEC_PROC_MOUNTS);
			goto out;
		}
		nsexec_proc_path[nsexec_nproc++] = xstrdup(f[4]);
	}
	rv = 0;
out:
	free(buf);
	return (rv);
}

/*
 * A mount of the container's, as it stands: the root of a mount of the
 * same device at that path, reached without a symbolic link (a shared
 * session may move directories about, never a mount point). An O_PATH
 * descriptor, its type in mode.
 */
static int
nsexec_isolate_source(const struct nsexec_mount *m, mode_t *mode, char *err,
    size_t errlen)
{
	struct open_how	how;
	struct statx	stx;
	int		fd;

	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
	how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	if ((fd = syscall(SYS_openat2, AT_FDCWD, m->path, &how,
	    sizeof how)) == -1) {
		snprintf(err, errlen, "the container's mount on %.200s: %s",
		    m->path, strerror(errno));
		return (-1);
	}
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE,
	    &stx) != 0 || (~stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ||
	    stx.stx_dev_major != m->major || stx.stx_dev_minor != m->minor) {
		snprintf(err, errlen, "the container's mount on %.200s is"
		    " not there", m->path);
		close(fd);
		return (-1);
	}
	*mode = stx.stx_mode;
	return (fd);
}

/* A detached overlay of lower with upper number n of the session's. */
static int
nsexec_isolate_overlay(const char *lower, unsigned int attr, int n,
    char *err, size_t errlen)
{
	char	dir[32], upper[48], work[48];
	int	fs, t;

	snprintf(dir, sizeof dir, "private/%d", n);
	snprintf(upper, sizeof upper, "%s/upper", dir);
	snprintf(work, sizeof work, "%s/work", dir);
	if (mkdir(dir, 0700) != 0 || mkdir(upper, 0755) != 0 ||
	    mkdir(work, 0700) != 0) {
		snprintf(err, errlen, "the session's copy of %.200s: %s",
		    lower, strerror(errno));
		return (-1);
	}
	if ((fs = fsopen("overlay", FSOPEN_CLOEXEC)) == -1) {
		snprintf(err, errlen, "fsopen overlay: %s", strerror(errno));
		return (-1);
	}
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", "sandbox-mcp",
	    0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", lower, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", work, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "volatile", NULL, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0 ||
	    (t = fsmount(fs, FSMOUNT_CLOEXEC, attr & ~MOUNT_ATTR_RDONLY)) ==
	    -1) {
		snprintf(err, errlen, "the session's copy of %.200s: %s",
		    lower, strerror(errno));
		close(fs);
		return (-1);
	}
	close(fs);
	return (t);
}

/* A fresh instance of the mount's file system, with its options. */
static int
nsexec_isolate_fresh(const struct nsexec_mount *m, char *err, size_t errlen)
{
	char	*opts, *o, *v, *copy;
	int	 fs, t = -1;

	if ((fs = fsopen(m->type, FSOPEN_CLOEXEC)) == -1) {
		snprintf(err, errlen, "a new %.50s for %.200s: %s", m->type,
		    m->path, strerror(errno));
		return (-1);
	}
	opts = copy = xstrdup(m->opts);
	while ((o = strsep(&opts, ",")) != NULL) {
		if (*o == '\0' || strcmp(o, "rw") == 0 ||
		    strcmp(o, "ro") == 0 || strcmp(o, "seclabel") == 0)
			continue;
		if ((v = strchr(o, '=')) != NULL) {
			*v++ = '\0';
			if (fsconfig(fs, FSCONFIG_SET_STRING, o, v, 0) != 0)
				goto fail;
		} else if (fsconfig(fs, FSCONFIG_SET_FLAG, o, NULL, 0) != 0)
			goto fail;
	}
	if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0 ||
	    (t = fsmount(fs, FSMOUNT_CLOEXEC, m->attr)) == -1)
		goto fail;
	free(copy);
	close(fs);
	return (t);
fail:
	snprintf(err, errlen, "a new %.50s for %.200s: %s", m->type, m->path,
	    strerror(errno));
	free(copy);
	close(fs);
	return (-1);
}

/* The session's own copy of one mount of the container's, detached. */
static int
nsexec_isolate_mount(const struct nsexec_mount *m, int *n, char *err,
    size_t errlen)
{
	struct mount_attr	ma;
	mode_t			mode;
	int			src, t;

	if (strcmp(m->type, "devpts") == 0 || strcmp(m->type, "mqueue") == 0 ||
	    strcmp(m->type, "hugetlbfs") == 0 ||
	    strcmp(m->path, "/dev/shm") == 0)
		return (nsexec_isolate_fresh(m, err, errlen));
	if ((src = nsexec_isolate_source(m, &mode, err, errlen)) == -1)
		return (-1);
	if (strcmp(m->path, "/proc") == 0)
		t = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
		    AT_RECURSIVE | AT_EMPTY_PATH);
	else if (S_ISDIR(mode) && (~m->attr & MOUNT_ATTR_RDONLY) &&
	    !nsexec_isolate_pseudo(m->type)) {
		t = nsexec_isolate_overlay(m->path, m->attr, (*n)++, err,
		    errlen);
		close(src);
		return (t);
	} else {
		t = open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
		    AT_EMPTY_PATH);
		memset(&ma, 0, sizeof ma);
		ma.attr_set = MOUNT_ATTR_RDONLY;
		if (t != -1 && mount_setattr(t, "", AT_EMPTY_PATH, &ma,
		    sizeof ma) != 0) {
			close(t);
			t = -1;
		}
	}
	if (t == -1)
		snprintf(err, errlen, "copying the mount on %.200s: %s",
		    m->path, strerror(errno));
	close(src);
	return (t);
}

/*
 * An empty tmpfs on dir (a directory, not a link), its mode and owner
 * and the names, modes and owners of its directories kept.
 */
static int
nsexec_isolate_tmp(const char *dir, char *err, size_t errlen)
{
	struct {
		char	name[NAME_MAX + 1];
		mode_t	mode;
		uid_t	uid;
		gid_t	gid;
	}		 sub[NSEXEC_SKELETON_MAX];
	struct stat	 st, sst;
	struct dirent	*de;
	DIR		*d;
	char		 v[32];
	int		 fd, fs, t, i, n = 0;

	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return (0);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		goto fail;
	}
	while ((de = readdir(d)) != NULL && n < NSEXEC_SKELETON_MAX) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    fstatat(fd, de->d_name, &sst, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(sst.st_mode))
			continue;
		strlcpy(sub[n].name, de->d_name, sizeof sub[n].name);
		sub[n].mode = sst.st_mode & 07777;
		sub[n].uid = sst.st_uid;
		sub[n++].gid = sst.st_gid;
	}
	closedir(d);
	if ((fs = fsopen("tmpfs", FSOPEN_CLOEXEC)) == -1)
		goto fail;
	snprintf(v, sizeof v, "%o", (unsigned int)(st.st_mode & 07777));
	if (fsconfig(fs, FSCONFIG_SET_STRING, "mode", v, 0) != 0)
		goto fs;
	snprintf(v, sizeof v, "%u", (unsigned int)st.st_uid);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "uid", v, 0) != 0)
		goto fs;
	snprintf(v, sizeof v, "%u", (unsigned int)st.st_gid);
	if (fsconfig(fs, FSCONFIG_SET_STRING, "gid", v, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0 ||
	    (t = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID |
	    MOUNT_ATTR_NODEV)) == -1)
		goto fs;
	close(fs);
	for (i = 0; i < n; i++) {
		if (mkdirat(t, sub[i].name, 0700) != 0 ||
		    fchownat(t, sub[i].name, sub[i].uid, sub[i].gid,
		    AT_SYMLINK_NOFOLLOW) != 0 ||
		    fchmodat(t, sub[i].name, sub[i].mode, 0) != 0) {
			close(t);
			goto fail;
		}
	}
	if (move_mount(t, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) != 0) {
		close(t);
		goto fail;
	}
	close(t);
	return (0);
fs:
	close(fs);
fail:
	snprintf(err, errlen, "a private %s: %s", dir, strerror(errno));
	return (-1);
}

/*
 * Before the builder leaves the host's mounts: a detached copy of the
 * session's directory (an overlay takes its layers from the caller's
 * mounts or from a detached tree). Returns the copy's descriptor, or -1
 * with err.
 */
static int
nsexec_isolate_prepare(const char *dir, char *err, size_t errlen)
{
	int	t;

	if (nsexec_mounts_error != NULL) {
		snprintf(err, errlen, "%s", nsexec_mounts_error);
		return (-1);
	}
	if ((t = open_tree(AT_FDCWD, dir, OPEN_TREE_CLONE |
	    OPEN_TREE_CLOEXEC)) == -1) {
		snprintf(err, errlen, "cloning the session's directory: %s",
		    strerror(errno));
		return (-1);
	}
	return (t);
}

/*
 * In the session's private copy of the container's mounts: its own IPC
 * namespace and its own root, built on top of the old one (reached by
 * absolute paths, the process's root being still the old one) and
 * entered with pivot_root. Closes scratch.
 */
static int
nsexec_isolate(int scratch, char *err, size_t errlen)
{
	struct open_how	 how;
	int		 root = -1, t, to, i, n = 0, rv = -1;

	if (unshare(CLONE_NEWIPC) != 0) {
		snprintf(err, errlen, "a private IPC namespace: %s",
		    strerror(errno));
		goto out;
	}
	if (fchdir(scratch) != 0 || mkdir("private", 0700) != 0) {
		snprintf(err, errlen, "the session's directory: %s",
		    strerror(errno));
		goto out;
	}
	if ((root = nsexec_isolate_overlay("/", 0, n++, err, errlen)) == -1)
		goto out;
	if (move_mount(root, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) !=
	    0) {
		snprintf(err, errlen, "mounting the session's root: %s",
		    strerror(errno));
		goto out;
	}
	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS;
	for (i = 0; i < nsexec_nmounts; i++) {
		if ((t = nsexec_isolate_mount(&nsexec_mounts[i], &n, err,
		    errlen)) == -1)
			goto out;
		if ((to = syscall(SYS_openat2, root, nsexec_mounts[i].path + 1,
		    &how, sizeof how)) == -1 || move_mount(t, "", to, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
			snprintf(err, errlen, "mounting %.200s: %s",
			    nsexec_mounts[i].path, strerror(errno));
			if (to != -1)
				close(to);
			close(t);
			goto out;
		}
		close(to);
		close(t);
	}
	if (fchdir(root) != 0 || syscall(SYS_pivot_root, ".", ".") != 0 ||
	    umount2(".", MNT_DETACH) != 0 || chdir("/") != 0) {
		snprintf(err, errlen, "entering the session's root: %s",
		    strerror(errno));
		goto out;
	}
	if (nsexec_isolate_tmp("/run", err, errlen) != 0 ||
	    nsexec_isolate_tmp("/var/tmp", err, errlen) != 0)
		goto out;
	rv = 0;
out:
	if (root != -1)
		close(root);
	close(scratch);
	return (rv);
}

/*
 * The sandbox's root file system, on its disk. Docker's root of the
 * container is read-only (ReadonlyRootfs); what sessions write outside
 * /workspace and /tmp lands in one overlay per container whose upper
 * directory is on the sandbox's disk (ROOT/upper), capped with the rest
 * of what the sandbox makes. The container's first zygote mounts it
 * over the container's root in the container's own mount namespace, so
 * every session (and docker exec) sees it and sessions share what they
 * install; a later zygote finds it in the container's mounts (its source
 * says it is ours) and leaves it. Its lower layers are the image's
 * (Docker's overlay2 directories, so that an isolated session's overlay
 * over it stays within the kernel's two levels of stacking), or a copy
 * of the container's root for other storage drivers. The container's
 * other mounts are copied onto it, those of a disk file system (the
 * files Docker binds in: hosts, hostname, resolv.conf) read-only: every
 * path a command can write is on the sandbox's disk or in a memory file
 * system charged to the container's cgroup.
 */
static int
nsexec_root_memory(const char *type)
{
	return (strcmp(type, "tmpfs") == 0 || strcmp(type, "devpts") == 0 ||
	    strcmp(type, "mqueue") == 0 || strcmp(type, "hugetlbfs") == 0 ||
	    nsexec_isolate_pseudo(type));
}

/* Whether a mount of the container's lies under no other but the root. */
static int
nsexec_root_top(int i)
{
	const char	*path = nsexec_mounts[i].path;
	size_t		 len;
	int		 j;

	for (j = 0; j < nsexec_nmounts; j++) {
		len = strlen(nsexec_mounts[j].path);
		if (j != i && len < strlen(path) &&
		    strncmp(path, nsexec_mounts[j].path, len) == 0 &&
		    path[len] == '/')
			return (0);
	}
	return (1);
}

/* The overlay of the sandbox's root, detached (from the host's mounts). */
static int
nsexec_root_overlay(const struct nsexec_zygote *z, int lower,
    const struct stat *st, char *err, size_t errlen)
{
	char	upper[PATH_MAX], work[PATH_MAX], path[32];
	int	fs, t = -1;
	size_t	i;

	if (fchdir(4) != 0) {
		snprintf(err, errlen, "fchdir: %s", strerror(errno));
		return (-1);
	}
	snprintf(upper, sizeof upper, "%s/upper", z->root);
	snprintf(work, sizeof work, "%s/work", z->root);
	if ((mkdir(z->root, 0700) != 0 && errno != EEXIST) ||
	    (mkdir(work, 0700) != 0 && errno != EEXIST)) {
		snprintf(err, errlen, "the sandbox's root: %s",
		    strerror(errno));
		return (-1);
	}
	if (mkdir(upper, 0700) == 0 && (chown(upper, st->st_uid,
	    st->st_gid) != 0 || chmod(upper, st->st_mode & 07777) != 0)) {
		snprintf(err, errlen, "the sandbox's root: %s",
		    strerror(errno));
		return (-1);
	}
	if ((fs = fsopen("overlay", FSOPEN_CLOEXEC)) == -1) {
		snprintf(err, errlen, "fsopen overlay: %s", strerror(errno));
		return (-1);
	}
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", NSEXEC_ROOT_SOURCE,
	    0) != 0)
		goto fail;
	for (i = 0; i < z->nroot_lower; i++) {
		if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+",
		    z->root_lower[i], 0) != 0)
			goto fail;
	}
	if (lower != -1) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", lower);
		if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", path,
		    0) != 0)
			goto fail;
	}
	/* Plain layers: the upper directory is a lower one's to read. */
	if (fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", work, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "redirect_dir", "off", 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "index", "off", 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "metacopy", "off", 0) != 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0 ||
	    (t = fsmount(fs, FSMOUNT_CLOEXEC, 0)) == -1)
		goto fail;
	close(fs);
	return (t);
fail:
	snprintf(err, errlen, "the sandbox's root overlay: %s",
	    strerror(errno));
	close(fs);
	return (-1);
}

/*
 * Where a mount of the container's goes on its root (an O_PATH
 * descriptor), made when the image lacks it (runc makes its mount points
 * in Docker's layer of the container, which the root does not show: the
 * docker-init program's, for one). No symbolic link is followed.
 */
static int
nsexec_root_point(int root, const char *path, int dir)
{
	struct open_how	 how;
	char		*parent, *name;
	int		 pfd, fd, saved;

	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS;
	if ((fd = syscall(SYS_openat2, root, path + 1, &how, sizeof how)) !=
	    -1 || errno != ENOENT)
		return (fd);
	parent = xstrdup(path + 1);
	if ((name = strrchr(parent, '/')) != NULL) {
		*name++ = '\0';
		how.flags |= O_DIRECTORY;
		pfd = syscall(SYS_openat2, root, parent, &how, sizeof how);
		how.flags &= ~O_DIRECTORY;
	} else {
		name = parent;
		pfd = dup(root);
	}
	if (pfd == -1) {
		saved = errno;
		free(parent);
		errno = saved;
		return (-1);
	}
	if (dir)
		fd = mkdirat(pfd, name, 0755);
	else if ((fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0644)) != -1)
		close(fd);
	if (fd != -1)
		fd = syscall(SYS_openat2, pfd, name, &how, sizeof how);
	saved = errno;
	close(pfd);
	free(parent);
	errno = saved;
	return (fd);
}

/*
 * Make the sandbox's root (the zygote, in the host's mounts, mnt the
 * container's mount namespace). Returns 0, or -1 with err; the zygote
 * ends back in the host's mounts either way.
 */
static int
nsexec_root(const struct nsexec_zygote *z, int mnt, char *err, size_t errlen)
{
	struct open_how		 how;
	struct mount_attr	 ma;
	struct stat		 st;
	mode_t			 mode;
	int			 sub[NSEXEC_MOUNTS_MAX], host, root = -1;
	mode_t			 modes[NSEXEC_MOUNTS_MAX];
	int			 lower = -1, ov = -1, src, to, i, made = 0;
	int			 rv = -1, lock;

	for (i = 0; i < NSEXEC_MOUNTS_MAX; i++)
		sub[i] = -1;
	/*
	 * One maker at a time (the create's child, zygotes of other
	 * processes): under the lock of the root's directory, the mounts
	 * are read again, and a root made meanwhile is left.
	 */
	if (fchdir(4) != 0 || (mkdir(z->root, 0700) != 0 && errno != EEXIST) ||
	    (lock = open(z->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "the sandbox's root: %s",
		    strerror(errno));
		return (-1);
	}
	while (flock(lock, LOCK_EX) != 0) {
		if (errno != EINTR) {
			snprintf(err, errlen, "locking the sandbox's root: %s",
			    strerror(errno));
			close(lock);
			return (-1);
		}
	}
	if (nsexec_container_mounts(z->container_pid, err, errlen) != 0 ||
	    nsexec_root_made) {
		close(lock);
		return (nsexec_root_made ? 0 : -1);
	}
	if ((host = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC)) == -1 ||
	    setns(mnt, CLONE_NEWNS) != 0) {
		snprintf(err, errlen, "entering the container's mounts: %s",
		    strerror(errno));
		if (host != -1)
			close(host);
		close(lock);
		return (-1);
	}
	/* Copies of the container's mounts, before the root covers them. */
	if ((root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fstat(root, &st) != 0) {
		snprintf(err, errlen, "the container's root: %s",
		    strerror(errno));
		goto out;
	}
	for (i = 0; i < nsexec_nmounts; i++) {
		if (!nsexec_root_top(i))
			continue;
		if ((src = nsexec_isolate_source(&nsexec_mounts[i], &mode, err,
		    errlen)) == -1)
			goto out;
		modes[i] = mode;
		sub[i] = open_tree(src, "", OPEN_TREE_CLONE |
		    OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
		close(src);
		if (sub[i] == -1) {
			snprintf(err, errlen, "copying the mount on %.200s: %s",
			    nsexec_mounts[i].path, strerror(errno));
			goto out;
		}
	}
	if (z->nroot_lower == 0 && (lower = open_tree(root, "",
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)) == -1) {
		snprintf(err, errlen, "copying the container's root: %s",
		    strerror(errno));
		goto out;
	}
	if (setns(host, CLONE_NEWNS) != 0) {
		snprintf(err, errlen, "leaving the container's mounts: %s",
		    strerror(errno));
		goto out;
	}
	if ((ov = nsexec_root_overlay(z, lower, &st, err, errlen)) == -1)
		goto out;
	if (setns(mnt, CLONE_NEWNS) != 0 || move_mount(ov, "", AT_FDCWD, "/",
	    MOVE_MOUNT_F_EMPTY_PATH) != 0) {
		snprintf(err, errlen, "mounting the sandbox's root: %s",
		    strerror(errno));
		goto out;
	}
	made = 1;
	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS;
	memset(&ma, 0, sizeof ma);
	ma.attr_set = MOUNT_ATTR_RDONLY;
	for (i = 0; i < nsexec_nmounts; i++) {
		if (sub[i] == -1)
			continue;
		if ((to = nsexec_root_point(ov, nsexec_mounts[i].path,
		    S_ISDIR(modes[i]))) == -1 || move_mount(sub[i], "", to, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
			snprintf(err, errlen, "mounting %.200s on the sandbox's"
			    " root: %s", nsexec_mounts[i].path,
			    strerror(errno));
			if (to != -1)
				close(to);
			goto out;
		}
		close(to);
	}
	/* What lies on a disk of the host stays as it is. */
	for (i = 0; i < nsexec_nmounts; i++) {
		if (nsexec_root_memory(nsexec_mounts[i].type) ||
		    (nsexec_mounts[i].attr & MOUNT_ATTR_RDONLY))
			continue;
		if ((to = syscall(SYS_openat2, ov, nsexec_mounts[i].path + 1,
		    &how, sizeof how)) == -1 || mount_setattr(to, "",
		    AT_EMPTY_PATH, &ma, sizeof ma) != 0) {
			snprintf(err, errlen, "%.200s read-only: %s",
			    nsexec_mounts[i].path, strerror(errno));
			if (to != -1)
				close(to);
			goto out;
		}
		close(to);
	}
	rv = 0;
out:
	if (rv != 0 && made && setns(host, CLONE_NEWNS) == 0 &&
	    setns(mnt, CLONE_NEWNS) == 0)
		umount2("/", MNT_DETACH);
	if (setns(host, CLONE_NEWNS) != 0 && rv == 0) {
		snprintf(err, errlen, "leaving the container's mounts: %s",
		    strerror(errno));
		rv = -1;
	}
	for (i = 0; i < NSEXEC_MOUNTS_MAX; i++) {
		if (sub[i] != -1)
			close(sub[i]);
	}
	if (root != -1)
		close(root);
	if (lower != -1)
		close(lower);
	if (ov != -1)
		close(ov);
	close(host);
	close(lock);
	return (rv);
}

#ifndef NSEXEC_HELPER
/*
 * A job (a create's): make the sandbox's root before anything runs in
 * its container. Keeps fd 4, the state directory.
 */
int
nsexec_root_child(void *arg, int fd)
{
	const struct nsexec_zygote	*z = arg;
	char				 path[64], err[512];
	int				 mnt;

	snprintf(path, sizeof path, "/proc/%ld/ns/mnt",
	    (long)z->container_pid);
	if ((mnt = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "the container's"
		    " process is gone (%s)", strerror(errno));
		return (1);
	}
	if (nsexec_root(z, mnt, err, sizeof err) != 0) {
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", err);
		return (1);
	}
	return (job_answer(fd, NULL, NULL));
}
#endif

/*
 * Hold the published layers a session is built on against the reclaim
 * of a squash (layer.c) until its overlay is made: a shared flock on
 * each, then each must still be in place. The lease is on disk already,
 * so after the mount the reclaim sees it. A layer gone means the stack
 * was squashed since the server read it: NSEXEC_STALE_LAYERS, and the
 * server builds the session again on the new head.
 */
static int
nsexec_hold_lowers(const struct nsexec_msg *m, int *held, char *err,
    size_t errlen)
{
	struct stat	st, now;
	int		i, fd;

	for (i = 0; i < NSEXEC_FIELDS_MAX; i++)
		held[i] = -1;
	for (i = 5; i < m->nfields; i++) {
		if ((fd = open(m->f[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1)
			goto stale;
		held[i] = fd;
		while (flock(fd, LOCK_SH) != 0) {
			if (errno != EINTR)
				goto stale;
		}
		if (fstat(fd, &st) != 0 || lstat(m->f[i], &now) != 0 ||
		    st.st_dev != now.st_dev || st.st_ino != now.st_ino)
			goto stale;
	}
	return (0);
stale:
	snprintf(err, errlen, "%s: layer %s", NSEXEC_STALE_LAYERS, m->f[i]);
	for (i = 0; i < NSEXEC_FIELDS_MAX; i++) {
		if (held[i] != -1)
			close(held[i]);
		held[i] = -1;
	}
	return (-1);
}

/*
 * Make the session (a build message: ID ISOLATED CGROUP DIR LEASE
 * LOWER..., paths relative to the state directory, fd 4) in this
 * process, which is pid 1 of the session's PID namespace already: its
 * overlay, its mounts and its /proc. Returns 0, or -1 with err.
 */
static int
nsexec_build(const struct nsexec_msg *m, char *err, size_t errlen)
{
	int		 fs, mfd, i, held[NSEXEC_FIELDS_MAX];
	int		 adopt, isolated, scratch = -1;
	char		 upper[PATH_MAX], work[PATH_MAX];

	/* Its kind: "0" or "1" (isolated), after an "a" to take it up. */
	adopt = m->f[1][0] == 'a';
	isolated = strcmp(m->f[1] + adopt, "1") == 0;
	if (fchdir(4) != 0) {
		snprintf(err, errlen, "fchdir: %s", strerror(errno));
		return (-1);
	}
	if ((adopt ? nsexec_scratch_adopt(m->f[3], m->f[4], err, errlen) :
	    nsexec_scratch(m->f[3], m->f[4], err, errlen)) != 0)
		return (-1);
	snprintf(upper, sizeof upper, "%s/upper", m->f[3]);
	snprintf(work, sizeof work, "%s/work", m->f[3]);
	if (nsexec_hold_lowers(m, held, err, errlen) != 0)
		return (-1);
	if ((fs = fsopen("overlay", FSOPEN_CLOEXEC)) == -1) {
		snprintf(err, errlen, "fsopen overlay: %s", strerror(errno));
		return (-1);
	}
	if (fsconfig(fs, FSCONFIG_SET_STRING, "source", "sandbox-mcp",
	    0) != 0)
		goto overlay;
	for (i = 5; i < m->nfields; i++) {
		if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir+", m->f[i],
		    0) != 0)
			goto overlay;
	}
	/*
	 * volatile: the upper directory is scratch until a publish, which
	 * makes what it takes durable itself; without it, the last close of
	 * the session's mount syncs the whole host file system.
	 */
	if (fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", upper, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "workdir", work, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_SET_FLAG, "volatile", NULL, 0) != 0 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
		goto overlay;
	if ((mfd = fsmount(fs, FSMOUNT_CLOEXEC, 0)) == -1)
		goto overlay;
	close(fs);
	/* The mount has its layers and the lease names them: let go. */
	for (i = 0; i < NSEXEC_FIELDS_MAX; i++) {
		if (held[i] != -1)
			close(held[i]);
	}
	if (isolated && (scratch = nsexec_isolate_prepare(m->f[3], err,
	    errlen)) == -1)
		return (-1);
	if (setns(6, CLONE_NEWNS) != 0) {
		snprintf(err, errlen, "entering the container's mounts: %s",
		    strerror(errno));
		return (-1);
	}
	if (chdir("/") != 0 || unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		snprintf(err, errlen, "private mounts: %s", strerror(errno));
		return (-1);
	}
	if (isolated && nsexec_isolate(scratch, err, errlen) != 0)
		return (-1);
	if (mkdir("/workspace", 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir /workspace: %s", strerror(errno));
		return (-1);
	}
	if (move_mount(mfd, "", AT_FDCWD, "/workspace",
	    MOVE_MOUNT_F_EMPTY_PATH) != 0) {
		snprintf(err, errlen, "mounting /workspace: %s",
		    strerror(errno));
		return (-1);
	}
	close(mfd);
	if ((mkdir("/tmp", 01777) != 0 && errno != EEXIST) ||
	    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=1777") != 0) {
		snprintf(err, errlen, "mounting /tmp: %s", strerror(errno));
		return (-1);
	}
	if (isolated && (unshare(CLONE_NEWNET) != 0 ||
	    nsexec_loopback() != 0)) {
		snprintf(err, errlen, "isolated network: %s", strerror(errno));
		return (-1);
	}
	return (nsexec_proc(err, errlen));
overlay:
	snprintf(err, errlen, "the session's overlay: %s", strerror(errno));
	close(fs);
	return (-1);
}

/*
 * A builder: born in a PID namespace of its own (pid 1 there), a child
 * of the server, not of the zygote (CLONE_PARENT), so that it can build
 * the session and then be its init, with no second process to fork and
 * no page table to copy again; the server reaps it like any child.
 * Holds the write end of its "done" pipe until it has answered, which is
 * how the zygote counts the builds under way.
 */
struct nsexec_builder {
	const struct nsexec_zygote	*z;
	struct nsexec_msg		*m;
};

/*
 * Its stack, and the init's after it (copied on write, per builder):
 * mapped once by the zygote, with an inaccessible page below it.
 */
#define NSEXEC_BUILD_STACK	(1024 * 1024)

static int
nsexec_builder(void *arg)
{
	struct nsexec_builder	*b = arg;
	struct nsexec_msg	*m = b->m;
	const char		*out[2], *errstr;
	char			 err[512], num[32];
	ssize_t			 n;
	long long		 pid;

	/* Our pid as the server sees it: /proc is still the zygote's. */
	out[0] = m->f[0];
	if ((n = readlink("/proc/self", num, sizeof num - 1)) <= 0) {
		snprintf(err, sizeof err, "reading /proc/self: %s",
		    strerror(errno));
		goto refuse;
	}
	num[n] = '\0';
	pid = strtonum(num, 2, INT_MAX, &errstr);
	if (errstr != NULL) {
		snprintf(err, sizeof err, "/proc/self is %s", num);
		goto refuse;
	}
	if (dup2(m->fds[0], 7) == -1) {
		snprintf(err, sizeof err, "dup2: %s", strerror(errno));
		goto refuse;
	}
	/*
	 * Into the session's freezer group first: everything the init
	 * starts is born there.
	 */
	if (*m->f[2] != '\0' && nsexec_cgroups(&m->f[2], 1, err,
	    sizeof err) != 0)
		goto refuse;
	if (nsexec_build(m, err, sizeof err) != 0)
		goto refuse;
	if (dup2(7, 3) == -1) {
		snprintf(err, sizeof err, "dup2: %s", strerror(errno));
		goto refuse;
	}
	snprintf(num, sizeof num, "%lld", pid);
	out[1] = num;
	if (nsexec_msg_send(5, NSEXEC_BUILT, out, 2, NULL, 0) != 0)
		_exit(1);
	/* The zygote's socket, the done pipe and the rest go. */
	closefrom(4);
	nsexec_init_main(b->z);
refuse:
	out[1] = err;
	nsexec_msg_send(5, NSEXEC_REFUSED, out, 2, NULL, 0);
	_exit(0);
}

/* The zygote could not stand in the container: say why, and end. */
static int
nsexec_zygote_fail(const char *why)
{
	const char	*out[1] = { why };

	nsexec_msg_send(5, NSEXEC_FAILED, out, 1, NULL, 0);
	return (125);
}

/*
 * The zygote (a job): join the container once, then build sessions on
 * request. Descriptors kept: 4 = the state directory, 5 = our control
 * socket; 6 becomes the container's mount namespace. Says ready (or
 * failed, and why) on the control socket first.
 */
int
nsexec_zygote(void *arg, int report)
{
	const struct nsexec_zygote *z = arg;
	static const char	*names[] = { "uts", "ipc", "net", "mnt" };
	static const int	 types[] = { CLONE_NEWUTS, CLONE_NEWIPC,
	    CLONE_NEWNET };
	struct nsexec_msg	 m;
	struct nsexec_builder	 b;
	struct pollfd		 pfd[NSEXEC_BUILDERS_MAX + 1];
	char			*buf, err[512];
	char			 path[64];
	const char		*out[2];
	int			 fds[4], i, r, np, done[2];
	int			 building[NSEXEC_BUILDERS_MAX];
	char			*stack;
	long			 guard;
	int			 nbuild = 0, maxbuild;
	pid_t			 builder;

	close(report);
	signal(SIGPIPE, SIG_IGN);
	nsexec_rename(z, NSEXEC_ZYGOTE_NAME);
	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "/proc/%ld/ns/%s",
		    (long)z->container_pid, names[i]);
		if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
			snprintf(err, sizeof err, "the container's process is"
			    " gone (%s)", strerror(errno));
			return (nsexec_zygote_fail(err));
		}
	}
	if (nsexec_cgroups(z->cgroup_procs, z->ncgroup, err,
	    sizeof err) != 0 || nsexec_container_mounts(z->container_pid,
	    err, sizeof err) != 0)
		return (nsexec_zygote_fail(err));
	if (z->root != NULL && !nsexec_root_made && (nsexec_root(z, fds[3],
	    err, sizeof err) != 0 || nsexec_container_mounts(z->container_pid,
	    err, sizeof err) != 0))
		return (nsexec_zygote_fail(err));
	for (i = 0; i < 3; i++) {
		if (setns(fds[i], types[i]) != 0) {
			snprintf(err, sizeof err, "entering the container"
			    " (%s): %s", names[i], strerror(errno));
			return (nsexec_zygote_fail(err));
		}
		close(fds[i]);
	}
	/* The mount namespace, for builders, at fd 6. */
	if (dup2(fds[3], 6) == -1)
		return (nsexec_zygote_fail("dup2 failed"));
	close(fds[3]);
	if (nsexec_msg_send(5, NSEXEC_READY, NULL, 0, NULL, 0) != 0)
		return (125);

	/* As many builders at once as there are CPUs (measured: bench/). */
	maxbuild = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (maxbuild < 1)
		maxbuild = 1;
	if (maxbuild > NSEXEC_BUILDERS_MAX)
		maxbuild = NSEXEC_BUILDERS_MAX;

	/*
	 * The zygote has no children to reap: its builders are the
	 * server's (CLONE_PARENT).
	 */
	guard = sysconf(_SC_PAGESIZE);
	stack = mmap(NULL, guard + NSEXEC_BUILD_STACK, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED || mprotect(stack, guard, PROT_NONE) != 0)
		return (nsexec_zygote_fail("cannot map the builders' stack"));
	buf = xmalloc(NSEXEC_MSG_MAX);
	for (;;) {
		/*
		 * A build is under way while its builder holds the write
		 * end of its done pipe; requests wait while the builders
		 * are as many as the CPUs: more than that only fight over
		 * the kernel's mount lock (held by whoever the scheduler
		 * has just put aside) and finish later all together.
		 */
		for (np = 0; np < nbuild; np++) {
			pfd[np].fd = building[np];
			pfd[np].events = POLLIN;
			pfd[np].revents = 0;
		}
		if (nbuild < maxbuild) {
			pfd[np].fd = 5;
			pfd[np].events = POLLIN;
			pfd[np++].revents = 0;
		}
		if (poll(pfd, np, -1) == -1) {
			if (errno == EINTR)
				continue;
			_exit(0);
		}
		r = 0;
		for (i = 0; i < nbuild; i++) {
			if (pfd[i].revents == 0)
				building[r++] = building[i];
			else
				close(building[i]);
		}
		if (nbuild == maxbuild || pfd[nbuild].revents == 0) {
			nbuild = r;
			continue;
		}
		nbuild = r;
		r = nsexec_msg_recv(5, buf, NSEXEC_MSG_MAX, &m);
		if (r == -1 && errno == EAGAIN)
			continue;
		/* Let go, or asked what we do not do: our server is gone. */
		if (r != 1 || m.type != NSEXEC_BUILD)
			_exit(0);
		/*
		 * The builder answers on our control socket itself (a
		 * datagram each, so answers never mix), and the zygote goes
		 * back to its requests at once: sessions asked for together
		 * are built side by side.
		 */
		out[0] = m.f[0];
		if (pipe2(done, O_CLOEXEC) != 0) {
			snprintf(err, sizeof err, "cannot make a builder: %s",
			    strerror(errno));
			out[1] = err;
			nsexec_msg_send(5, NSEXEC_REFUSED, out, 2, NULL, 0);
			nsexec_msg_close(&m);
			continue;
		}
		b.z = z;
		b.m = &m;
		builder = clone(nsexec_builder, stack + guard +
		    NSEXEC_BUILD_STACK, CLONE_NEWPID | CLONE_PARENT | SIGCHLD,
		    &b);
		close(done[1]);
		nsexec_msg_close(&m);
		if (builder != -1)
			building[nbuild++] = done[0];
		else {
			close(done[0]);
			snprintf(err, sizeof err, "cannot make a builder: %s",
			    strerror(errno));
			out[1] = err;
			nsexec_msg_send(5, NSEXEC_REFUSED, out, 2, NULL, 0);
		}
	}
}

#ifndef NSEXEC_HELPER
/*
 * The descriptors a zygote job keeps after the state directory and its
 * control socket (as fds 6 and 7): the filter's and the program's. None
 * when there is no program to run.
 */
int
nsexec_program_fds(int *fds)
{
	if (nsexec_image_fd == -1 || nsexec_filter_fd == -1)
		return (0);
	fds[0] = nsexec_filter_fd;
	fds[1] = nsexec_image_fd;
	return (2);
}

/*
 * A job (the zygote's): exec the zygote program (fd 7) with the zygote's
 * arguments (NAME PID ROOT NCGROUP CGROUP... NLOWER LOWER...), the
 * filter at fd 6, an empty environment and the usual descriptor limit;
 * where the program cannot be run (no memfd, or exec refused), be the
 * zygote in this process. Keeps fd 4 (the state directory) and 5 (the
 * control socket).
 */
int
nsexec_zygote_exec(void *arg, int report)
{
	const struct nsexec_zygote *z = arg;
	char		**argv, *envp[1] = { NULL };
	size_t		  i, n = 0;

	if (nsexec_image_fd == -1 || nsexec_filter_fd == -1)
		return (nsexec_zygote(arg, report));
	argv = xcalloc(6 + z->ncgroup + z->nroot_lower, sizeof *argv);
	argv[n++] = xstrdup(NSEXEC_ZYGOTE_NAME);
	xasprintf(&argv[n++], "%ld", (long)z->container_pid);
	argv[n++] = xstrdup(z->root != NULL ? z->root : "");
	xasprintf(&argv[n++], "%zu", z->ncgroup);
	for (i = 0; i < z->ncgroup; i++)
		argv[n++] = z->cgroup_procs[i];
	xasprintf(&argv[n++], "%zu", z->nroot_lower);
	for (i = 0; i < z->nroot_lower; i++)
		argv[n++] = z->root_lower[i];
	argv[n] = NULL;
	proc_nofile_restore();
	/*
	 * Neither the report pipe (the zygote says nothing on it: its end
	 * is the job's) nor the program itself goes on into the zygote; the
	 * filter does, for the program to read.
	 */
	if (fcntl(report, F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(7, F_SETFD, FD_CLOEXEC) == -1) {
		close(6);
		close(7);
		return (nsexec_zygote(arg, report));
	}
	syscall(SYS_execveat, 7, "", argv, envp, AT_EMPTY_PATH);
	log_warn("the zygote program (the zygote runs as a fork instead)");
	close(6);
	close(7);
	return (nsexec_zygote(arg, report));
}
#endif
