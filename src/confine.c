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
 * Confinement of the helper processes that touch a sandbox's files on the
 * host (publishing, large file operations, sizes, removals). The walks
 * they do are written never to follow a path the sandbox controls; this
 * is the second wall, in the OpenBSD manner, so that a mistake in one
 * still cannot reach a host file:
 *
 * - a mount namespace of its own whose root is an empty tmpfs holding
 *   only the directories the job needs, bound at their own absolute
 *   paths (the sandbox's state read-write, its base read-only), entered
 *   with pivot_root; the host's tree is detached;
 * - a capability set cut to what the file work needs (reading any file,
 *   keeping owners and modes, whiteouts, overlayfs's trusted attributes);
 * - no_new_privs and a seccomp filter refusing what file work never
 *   does: mounting, namespaces, ptrace, handles (open_by_handle_at is
 *   how a process with CAP_DAC_READ_SEARCH leaves a chroot), io_uring,
 *   bpf, keys, modules, exec, and sockets other than unix ones;
 * - resource limits: no core files, a bounded number of descriptors.
 *
 * Memory, CPU and pids are capped by the sandbox's helper control group
 * (cgroup.c), joined before this.
 */

#include "config.h"

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <seccomp.h>

#include "sandbox-mcp.h"

#define CONFINE_ROOT		"/tmp"
#define CONFINE_NOFILE		4096

/* What a helper keeps of root's capabilities. */
static const int confine_caps[] = {
	CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
	CAP_FSETID, CAP_MKNOD, CAP_SYS_ADMIN	/* trusted.* xattrs */
};

static struct sock_fprog	confine_filter;
static int			confine_entered;	/* this process */

/*
 * Build the helpers' filter once, in the server: EPERM for what file
 * work never does. Kept as a BPF program the children install.
 */
void
confine_init(void)
{
	static const char *denied[] = { "mount", "umount2", "pivot_root",
	    "chroot", "setns", "unshare", "fsopen", "fsconfig", "fsmount",
	    "move_mount", "open_tree", "fspick", "mount_setattr",
	    "open_by_handle_at", "name_to_handle_at", "ptrace",
	    "process_vm_readv", "process_vm_writev", "kcmp", "bpf",
	    "perf_event_open", "userfaultfd", "io_uring_setup",
	    "io_uring_enter", "io_uring_register", "keyctl", "add_key",
	    "request_key", "init_module", "finit_module", "delete_module",
	    "kexec_load", "kexec_file_load", "execve", "execveat",
	    "swapon", "swapoff", "reboot", "acct", "quotactl",
	    "quotactl_fd", "personality", "uselib", "lookup_dcookie",
	    "iopl", "ioperm", "syslog", "settimeofday", "clock_settime",
	    "clock_adjtime", "adjtimex", "setdomainname", "sethostname",
	    "pidfd_getfd", "pidfd_open", "memfd_secret", "vhangup" };
	scmp_filter_ctx	 ctx;
	int		 sys;

	ctx = confine_filter_new(denied, sizeof denied / sizeof denied[0]);
	if ((sys = seccomp_syscall_resolve_name("clone3")) !=
	    __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
	    sys, 0) != 0)
		fatalx("seccomp_rule_add clone3 failed");
	/* Sockets: unix ones only (the log's). */
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
	    SCMP_A0(SCMP_CMP_NE, AF_UNIX)) != 0)
		fatalx("seccomp_rule_add socket failed");
	/* mknod: whiteouts only, a character device 0:0. */
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mknodat), 1,
	    SCMP_A3(SCMP_CMP_NE, 0)) != 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(mknod), 1,
	    SCMP_A2(SCMP_CMP_NE, 0)) != 0)
		fatalx("seccomp_rule_add mknod failed");

	confine_bpf(ctx, &confine_filter);
}

/*
 * A filter allowing everything but the calls named in denied (EPERM;
 * names this libseccomp does not know are skipped) and clone with a
 * flag that makes a namespace.
 */
void *
confine_filter_new(const char *const *denied, size_t n)
{
	static const unsigned long nsflags[] = { CLONE_NEWNS, CLONE_NEWUTS,
	    CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
	    CLONE_NEWCGROUP, 0x80 /* CLONE_NEWTIME */ };
	scmp_filter_ctx	 ctx;
	size_t		 i;
	int		 sys;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		fatalx("seccomp_init failed");
	for (i = 0; i < n; i++) {
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
	return (ctx);
}

/*
 * The BPF program of a libseccomp filter (released), for children to
 * install with PR_SET_SECCOMP; exported through a pipe, it is small.
 */
void
confine_bpf(void *filter, struct sock_fprog *prog)
{
	scmp_filter_ctx	 ctx = filter;
	size_t		 size = 0;
	ssize_t		 n;
	char		*buf;
	int		 pipefd[2];

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
		fatalx("a seccomp program has a bad size %zu", size);
	prog->len = size / sizeof(struct sock_filter);
	prog->filter = (struct sock_filter *)buf;
}

/* mkdir -p of an absolute path under root (a directory descriptor). */
static int
confine_mkdirs(int root, const char *path)
{
	char	*copy, *p, *slash;
	int	 fd, next;

	if ((fd = dup(root)) == -1)
		return (-1);
	copy = xstrdup(path);
	for (p = copy; *p == '/'; p++)
		;
	while (*p != '\0') {
		if ((slash = strchr(p, '/')) != NULL)
			*slash = '\0';
		if (mkdirat(fd, p, 0755) != 0 && errno != EEXIST)
			goto fail;
		next = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (next == -1)
			goto fail;
		close(fd);
		fd = next;
		if (slash == NULL)
			break;
		for (p = slash + 1; *p == '/'; p++)
			;
	}
	free(copy);
	close(fd);
	return (0);
fail:
	free(copy);
	close(fd);
	return (-1);
}

/* Cut the capability sets to confine_caps. */
static int
confine_caps_drop(void)
{
	struct __user_cap_header_struct	hdr;
	struct __user_cap_data_struct	data[2];
	size_t				i;
	int				cap, keep;

	for (cap = 0; cap <= CAP_LAST_CAP; cap++) {
		keep = 0;
		for (i = 0; i < sizeof confine_caps / sizeof confine_caps[0];
		    i++) {
			if (confine_caps[i] == cap)
				keep = 1;
		}
		if (!keep && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 &&
		    errno != EINVAL)
			return (-1);
	}
	memset(&hdr, 0, sizeof hdr);
	memset(data, 0, sizeof data);
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	for (i = 0; i < sizeof confine_caps / sizeof confine_caps[0]; i++) {
		cap = confine_caps[i];
		data[cap / 32].effective |= 1U << (cap % 32);
		data[cap / 32].permitted |= 1U << (cap % 32);
	}
	if (syscall(SYS_capset, &hdr, data) != 0)
		return (-1);
	/* No ambient or inheritable capability is left to pass on. */
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	return (0);
}

/*
 * Confine the calling helper (a forked child; never the server): only
 * the directories of rw (read-write) and ro (read-only) stay visible, at
 * their own paths. Returns 0, or -1 with a cause.
 */
int
confine_enter(const char *const *rw, size_t nrw, const char *const *ro,
    size_t nro, char **cause)
{
	struct rlimit	 rl;
	int		 trees[16], root, i, n = 0;
	const char	*path;
	size_t		 k;

	if (nrw + nro > sizeof trees / sizeof trees[0]) {
		xasprintf(cause, "too many directories to confine to");
		return (-1);
	}
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		xasprintf(cause, "a private mount namespace: %s",
		    strerror(errno));
		return (-1);
	}
	/* Take each tree before the tmpfs may hide its path. */
	for (k = 0; k < nrw + nro; k++) {
		path = k < nrw ? rw[k] : ro[k - nrw];
		trees[n] = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE |
		    OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW);
		if (trees[n] == -1) {
			xasprintf(cause, "cannot take directory %zu of its"
			    " view: %s", k + 1, strerror(errno));
			goto fail;
		}
		n++;
	}
	if (mount("tmpfs", CONFINE_ROOT, "tmpfs", MS_NOSUID | MS_NODEV |
	    MS_NOEXEC, "size=64k,mode=0755") != 0 ||
	    (root = open(CONFINE_ROOT, O_PATH | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		xasprintf(cause, "the confined root: %s", strerror(errno));
		goto fail;
	}
	for (k = 0; k < (size_t)n; k++) {
		path = k < nrw ? rw[k] : ro[k - nrw];
		if (confine_mkdirs(root, path) != 0 ||
		    move_mount(trees[k], "", root, path + 1,
		    MOVE_MOUNT_F_EMPTY_PATH) != 0) {
			xasprintf(cause, "cannot place directory %zu of its"
			    " view: %s", k + 1, strerror(errno));
			close(root);
			goto fail;
		}
		if (k >= nrw) {
			struct mount_attr	attr;

			memset(&attr, 0, sizeof attr);
			attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
			    MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
			if (mount_setattr(trees[k], "", AT_EMPTY_PATH |
			    AT_RECURSIVE, &attr, sizeof attr) != 0) {
				xasprintf(cause, "cannot make directory %zu of"
				    " its view read-only: %s", k + 1,
				    strerror(errno));
				close(root);
				goto fail;
			}
		}
	}
	close(root);
	if (mkdir(CONFINE_ROOT "/.old", 0700) != 0 ||
	    syscall(SYS_pivot_root, CONFINE_ROOT, CONFINE_ROOT "/.old") != 0 ||
	    chdir("/") != 0 || umount2("/.old", MNT_DETACH) != 0 ||
	    rmdir("/.old") != 0) {
		xasprintf(cause, "cannot enter the confined root: %s",
		    strerror(errno));
		goto fail;
	}
	for (i = 0; i < n; i++)
		close(trees[i]);

	rl.rlim_cur = rl.rlim_max = 0;
	setrlimit(RLIMIT_CORE, &rl);
	rl.rlim_cur = rl.rlim_max = CONFINE_NOFILE;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    confine_caps_drop() != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &confine_filter) != 0) {
		xasprintf(cause, "cannot drop privileges: %s",
		    strerror(errno));
		return (-1);
	}
	confine_entered = 1;
	return (0);
fail:
	for (i = 0; i < n; i++)
		close(trees[i]);
	return (-1);
}

/* Whether this process (or the one it was forked from) is confined. */
int
confine_active(void)
{
	return (confine_entered);
}
