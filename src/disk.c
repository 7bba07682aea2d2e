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
 * Sandbox disks: the directory of each sandbox is a file system of its
 * own, an ext4 image in a sparse file loop-mounted on it, so everything
 * a sandbox makes grow (session uppers, layers, staging, transcripts,
 * scratch, trash) is capped by the image's size, and the host loses at
 * most that.
 *
 *	<state>/sandboxes/<id>.img		the image
 *	<state>/sandboxes/<id>/			where it is mounted
 *	<state>/sandboxes/.staging/P-S-<id>.img	an image being made by the
 *						process of pid P, start S
 *
 * The mount is made in the host's mount namespace, so every process on
 * the state directory sees it. The image's flock makes "mount it unless
 * it is mounted" and "unmount and remove it" one step across processes:
 * an image is never mounted twice. The loop device is set up with
 * LO_FLAGS_AUTOCLEAR, so it goes when the file system is unmounted
 * everywhere and the last session holding it has ended. An image is
 * made under .staging and renamed into place once whole, so a killed
 * process leaves no half-made image under its real name (the trash
 * removes staging entries of dead processes). mke2fs, the loop setup,
 * mount and unmount run in child processes (job.c).
 */

#include "config.h"

#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/loop.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

#define DISK_MOUNT_FLAGS	(MS_NOSUID | MS_NODEV | MS_NOATIME)
#define DISK_COMPAT_HAS_JOURNAL	0x0004	/* ext4 s_feature_compat */
#define DISK_COMPAT_FAST_COMMIT	0x0400
/*
 * No discard: blocks the sandbox frees stay allocated in its image, so
 * that the cap reserved at its creation stays reserved.
 */
#define DISK_MOUNT_DATA		"noinit_itable,errors=remount-ro"
#define DISK_LOOP_TRIES		16

enum disk_kind {
	DISK_CREATE,
	DISK_MOUNT
};

struct disk_waiter {
	disk_cb				 cb;
	void				*arg;
	TAILQ_ENTRY(disk_waiter)	 entry;
};
TAILQ_HEAD(disk_waiters, disk_waiter);

struct disk_op {
	enum disk_kind		 kind;
	char			 id[65];
	long long		 size;
	long long		 reserve;	/* kept free on the host */
	int			 sparse;	/* capped, not reserved */
	char			*image;
	char			*mnt;
	char			*staging;
	struct job		*job;
	struct disk_waiters	 waiters;
	LIST_ENTRY(disk_op)	 entry;
};
static LIST_HEAD(, disk_op)	disk_ops = LIST_HEAD_INITIALIZER(disk_ops);

static const char *disk_mke2fs[] = { "/usr/sbin/mke2fs", "/sbin/mke2fs" };

/* The image of a sandbox; the caller frees it. */
char *
disk_image_path(const char *id)
{
	return (state_where(STATE_IMAGE, id, NULL));
}

/* Whether a path is the root of a mount (its device is not its parent's). */
static int
disk_is_mount(const char *path)
{
	struct stat	 st, pst;
	char		*parent;
	int		 r;

	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return (0);
	xasprintf(&parent, "%s/..", path);
	r = stat(parent, &pst) == 0 && (pst.st_dev != st.st_dev ||
	    pst.st_ino == st.st_ino);
	free(parent);
	return (r);
}

/* Whether a sandbox has an image of its own (made whole). */
int
disk_exists(const char *id)
{
	struct stat	 st;
	char		*path;
	int		 r;

	path = disk_image_path(id);
	r = lstat(path, &st) == 0 && S_ISREG(st.st_mode);
	free(path);
	return (r);
}

/*
 * Whether a sandbox's disk is ext4 with a journal and without fast
 * commits, as we make it: then one fsync commits every change made on
 * it before (publish.c). Read from the image's superblock (its
 * s_feature_compat, at 0x5c of the superblock at byte 1024); 0 when
 * there is no image or it cannot be read.
 */
int
disk_journal_whole(const char *id)
{
	unsigned char	 sb[2];
	unsigned char	 feat[4];
	unsigned int	 compat;
	char		*path;
	int		 fd, ok = 0;

	path = disk_image_path(id);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	free(path);
	if (fd == -1)
		return (0);
	if (pread(fd, sb, sizeof sb, 1024 + 0x38) == (ssize_t)sizeof sb &&
	    sb[0] == 0x53 && sb[1] == 0xef &&		/* the ext2 magic */
	    pread(fd, feat, sizeof feat, 1024 + 0x5c) == (ssize_t)sizeof feat) {
		compat = feat[0] | feat[1] << 8 | feat[2] << 16 |
		    (unsigned int)feat[3] << 24;
		ok = (compat & DISK_COMPAT_HAS_JOURNAL) &&
		    !(compat & DISK_COMPAT_FAST_COMMIT);
	}
	close(fd);
	return (ok);
}

/* Whether a sandbox's directory has its disk mounted on it. */
int
disk_mounted(const char *id)
{
	char	*path;
	int	 r;

	path = state_where(STATE_SANDBOX, id, NULL);
	r = disk_is_mount(path);
	free(path);
	return (r);
}

/*
 * Child side: why the work failed (the first reason given), and whether
 * for want of room on the host; the child answers with them at its end.
 */
static char	disk_why[1024];
static int	disk_no_room;

static int
disk_failv(const char *fmt, va_list ap)
{
	int	saved = errno;

	if (disk_why[0] == '\0')
		vsnprintf(disk_why, sizeof disk_why, fmt, ap);
	errno = saved;
	return (1);
}

/* Child side: note why (errno kept) and fail. */
static int
disk_fail(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	disk_failv(fmt, ap);
	va_end(ap);
	return (1);
}

/* Child side: fail for want of room on the host. */
static int
disk_full(const char *fmt, ...)
{
	va_list	ap;

	disk_no_room = 1;
	va_start(ap, fmt);
	disk_failv(fmt, ap);
	va_end(ap);
	return (1);
}

/*
 * Child side: answer for the work's return value r: operation_failed
 * when the host has no room for the disk, internal_error otherwise.
 */
static int
disk_answer(struct disk_op *op, int fd, int r)
{
	static const char	*what[] = { "make", "mount" };

	if (r == 0)
		return (job_answer(fd, NULL, NULL));
	job_fail(fd, disk_no_room ? CAUSE_FAILED : CAUSE_INTERNAL,
	    "sandbox_id", op->id, "cannot %s the disk of sandbox %s: %s",
	    what[op->kind], op->id, disk_why[0] != '\0' ? disk_why :
	    "its process failed");
	return (1);
}

/*
 * Child side: run mke2fs on a new image; what it says on failure is the
 * reason.
 */
static int
disk_mkfs(const char *image)
{
	const char	*argv[] = { NULL, "-q", "-F", "-t", "ext4", "-m", "0",
	    "-O", "^fast_commit",	/* publish.c: one commit holds all */
	    "-E", "lazy_itable_init=1,lazy_journal_init=1,nodiscard,"
	    "root_owner=0:0", image, NULL };
	char		 said[512];
	pid_t		 pid;
	size_t		 i, len = 0;
	ssize_t		 n;
	int		 status, p[2];

	for (i = 0; i < sizeof disk_mke2fs / sizeof disk_mke2fs[0]; i++) {
		if (access(disk_mke2fs[i], X_OK) == 0)
			break;
	}
	if (i == sizeof disk_mke2fs / sizeof disk_mke2fs[0])
		return (disk_fail("mke2fs is not installed (Debian"
		    " package e2fsprogs)"));
	argv[0] = disk_mke2fs[i];
	if (pipe2(p, O_CLOEXEC) != 0)
		return (disk_fail("pipe: %s", strerror(errno)));
	if ((pid = fork()) == -1)
		return (disk_fail("fork: %s", strerror(errno)));
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		closefrom(STDERR_FILENO + 1);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], said + len, sizeof said - 1 - len)) != 0) {
		if (n == -1 && errno != EINTR)
			break;
		if (n > 0 && (len += n) == sizeof said - 1)
			break;
	}
	close(p[0]);
	said[len] = '\0';
	said[strcspn(said, "\n")] = '\0';
	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR)
			return (disk_fail("waitpid: %s", strerror(errno)));
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return (disk_fail("mke2fs failed (wait status %d)%s%s",
		    status, len > 0 ? ": " : "", said));
	return (0);
}

/* Child side: attach an image to a free loop device; its fd, or -1. */
static int
disk_loop(int ifd, const char *image, char *dev, size_t devsize)
{
	struct loop_config	lc;
	int			ctl, lfd = -1, n, tries, flags;

	if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) == -1) {
		disk_fail("cannot open /dev/loop-control: %s",
		    strerror(errno));
		return (-1);
	}
	flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
	for (tries = 0; tries < DISK_LOOP_TRIES; tries++) {
		if ((n = ioctl(ctl, LOOP_CTL_GET_FREE)) < 0) {
			disk_fail("no free loop device: %s",
			    strerror(errno));
			break;
		}
		snprintf(dev, devsize, "/dev/loop%d", n);
		if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) == -1) {
			if (errno == ENOENT || errno == ENXIO)
				continue;	/* removed meanwhile */
			disk_fail("cannot open %s: %s", dev,
			    strerror(errno));
			break;
		}
		memset(&lc, 0, sizeof lc);
		lc.fd = ifd;
		lc.info.lo_flags = flags;
		strlcpy((char *)lc.info.lo_file_name, image,
		    sizeof lc.info.lo_file_name);
		if (ioctl(lfd, LOOP_CONFIGURE, &lc) == 0)
			break;
		if (errno == EINVAL && (flags & LO_FLAGS_DIRECT_IO)) {
			/* The host file system cannot do direct I/O. */
			flags &= ~LO_FLAGS_DIRECT_IO;
			tries--;
		} else if (errno != EBUSY) {
			disk_fail("cannot set up %s: %s", dev,
			    strerror(errno));
			close(lfd);
			lfd = -1;
			break;
		}
		close(lfd);	/* taken by another process meanwhile */
		lfd = -1;
	}
	if (lfd == -1 && tries == DISK_LOOP_TRIES)
		disk_fail("no free loop device after %d tries", tries);
	close(ctl);
	return (lfd);
}

/*
 * Child side: whether a loop device is attached to the image already: a
 * file system unmounted lazily (by hand) lives on while something holds
 * it, and a second mount of the same image would corrupt both.
 */
static int
disk_attached(const char *image)
{
	struct dirent	*de;
	DIR		*d;
	char		 real[PATH_MAX], path[PATH_MAX], back[PATH_MAX + 16];
	ssize_t		 n;
	int		 bfd, found = 0;

	if (realpath(image, real) == NULL || (d = opendir("/sys/block")) ==
	    NULL)
		return (0);
	while (!found && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "loop", 4) != 0)
			continue;
		snprintf(path, sizeof path, "/sys/block/%s/loop/backing_file",
		    de->d_name);
		if ((bfd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;	/* not attached */
		n = read(bfd, back, sizeof back - 1);
		close(bfd);
		if (n <= 0)
			continue;
		back[n] = '\0';
		back[strcspn(back, "\n")] = '\0';
		found = strcmp(back, real) == 0;
	}
	closedir(d);
	return (found);
}

/*
 * Child side: mount an image on its directory unless it is mounted
 * there already, under the image's lock.
 */
static int
disk_mount_image(const char *image, const char *mnt)
{
	struct stat	 st;
	char		 dev[64];
	int		 ifd, lfd, bfd, r = 1;

	/*
	 * Two opens: the loop device keeps the file it is given, and with
	 * it any lock taken through that open.
	 */
	if ((ifd = open(image, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		return (disk_fail("cannot open the image: %s",
		    strerror(errno)));
	while (flock(ifd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			disk_fail("cannot lock the image: %s",
			    strerror(errno));
			goto out;
		}
	}
	if (fstat(ifd, &st) != 0 || st.st_nlink == 0) {
		disk_fail("the disk was removed");
		goto out;
	}
	if (disk_is_mount(mnt)) {
		r = 0;
		goto out;
	}
	if (disk_attached(image)) {
		disk_fail("the image is in use by a file system that was"
		    " unmounted but is still held open; it can be mounted again"
		    " once that is gone");
		goto out;
	}
	if ((bfd = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		disk_fail("cannot open the image: %s", strerror(errno));
		goto out;
	}
	lfd = disk_loop(bfd, image, dev, sizeof dev);
	close(bfd);
	if (lfd == -1)
		goto out;
	if (mount(dev, mnt, "ext4", DISK_MOUNT_FLAGS, DISK_MOUNT_DATA) != 0) {
		disk_fail("cannot mount the image: %s", strerror(errno));
		close(lfd);	/* autoclear: the loop device goes */
		goto out;
	}
	close(lfd);		/* the mount keeps it */
	r = 0;
out:
	close(ifd);		/* releases the lock */
	return (r);
}

/* The room left on the file system of the state directory. */
static long long
disk_room(int ifd)
{
	struct statvfs	sv;

	if (fstatvfs(ifd, &sv) != 0)
		return (-1);
	return ((long long)sv.f_bavail * (long long)sv.f_frsize);
}

/*
 * Child side: the whole cap, allocated for the image now, so that the
 * host can always honour it: a sandbox's writes never need room the
 * host may no longer have (which would turn its disk read-only), and
 * caps granted never add up past the file system. Refused, with nothing
 * left, when the cap and the operator's reserve do not fit (disk_full).
 */
static int
disk_reserve(int ifd, struct disk_op *op)
{
	long long	room;
	int		r;

	room = disk_room(ifd);
	/* A sparse disk is capped, not reserved: made while the reserve is. */
	if (op->sparse) {
		if (room >= 0 && room < op->reserve)
			return (disk_full("no room for the disk: %lld"
			    " MiB are free on the file system of the state"
			    " directory, under the reserve of %lld MiB (limit"
			    " disk-reserve)", room >> 20, op->reserve >> 20));
		if (ftruncate(ifd, (off_t)op->size) != 0)
			return (disk_fail("cannot size the image: %s",
			    strerror(errno)));
		return (0);
	}
	if (room >= 0 && room < op->size + op->reserve)
		return (disk_full("no room for the sandbox's disk: its cap"
		    " of %lld MiB and the reserve of %lld MiB (limit"
		    " disk-reserve) are more than the %lld MiB free on the file"
		    " system of the state directory; destroy sandboxes, free"
		    " space, or lower profile disk", op->size >> 20,
		    op->reserve >> 20, room >> 20));
	do {
		r = posix_fallocate(ifd, 0, (off_t)op->size);
	} while (r == EINTR);
	if (r == EOPNOTSUPP || r == EINVAL) {
		/* A file system without it: sized, not reserved. */
		if (ftruncate(ifd, (off_t)op->size) != 0)
			return (disk_fail("cannot size the image: %s",
			    strerror(errno)));
		return (0);
	}
	if (r == ENOSPC)
		return (disk_full("no room for the sandbox's disk: its cap"
		    " of %lld MiB does not fit on the file system of the state"
		    " directory (others took the room meanwhile)",
		    op->size >> 20));
	if (r != 0)
		return (disk_fail("cannot reserve the image: %s",
		    strerror(r)));
	/* Creates at once: the last to take the room gives it back. */
	room = disk_room(ifd);
	if (room >= 0 && room < op->reserve)
		return (disk_full("no room for the sandbox's disk: with"
		    " it, %lld MiB would be left on the file system of the"
		    " state directory, under the reserve of %lld MiB (limit"
		    " disk-reserve)", room >> 20, op->reserve >> 20));
	return (0);
}

static int
disk_make(struct disk_op *op)
{
	int	ifd, r = 1, room;

	if ((ifd = open(op->staging, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1)
		return (disk_fail("cannot create the image: %s",
		    strerror(errno)));
	/* Judged and taken under the room lock, one at a time. */
	if ((room = state_room_lock()) == -1) {
		disk_fail("cannot take the room lock: %s", strerror(errno));
		goto fail;
	}
	r = disk_reserve(ifd, op);
	state_unlock(room);
	if (r != 0)
		goto fail;
	r = 1;
	if (disk_mkfs(op->staging) != 0)
		goto fail;
	if (fsync(ifd) != 0) {
		disk_fail("fsync: %s", strerror(errno));
		goto fail;
	}
	close(ifd);
	ifd = -1;
	if (rename(op->staging, op->image) != 0) {
		disk_fail("cannot move the image into place: %s",
		    strerror(errno));
		goto fail;
	}
	if (disk_mount_image(op->image, op->mnt) != 0) {
		/*
		 * Not mounted: the sandbox may be gone (this child's parent
		 * was killed, and its sandbox destroyed meanwhile). Nothing
		 * would remove the image then.
		 */
		if (!disk_is_mount(op->mnt))
			unlink(op->image);
		return (1);
	}
	if (chmod(op->mnt, 0700) != 0)
		return (disk_fail("chmod: %s", strerror(errno)));
	return (0);
fail:
	if (ifd != -1)
		close(ifd);
	unlink(op->staging);
	return (r);
}

static int
disk_create_child(void *arg, int fd)
{
	struct disk_op	*op = arg;

	return (disk_answer(op, fd, disk_make(op)));
}

static int
disk_mount_child(void *arg, int fd)
{
	struct disk_op	*op = arg;

	return (disk_answer(op, fd, disk_mount_image(op->image, op->mnt)));
}

static void
disk_op_free(struct disk_op *op)
{
	struct disk_waiter	*w;

	while ((w = TAILQ_FIRST(&op->waiters)) != NULL) {
		TAILQ_REMOVE(&op->waiters, w, entry);
		free(w);
	}
	LIST_REMOVE(op, entry);
	free(op->image);
	free(op->mnt);
	free(op->staging);
	free(op);
}

static void
disk_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct disk_op		*op = arg;
	struct disk_waiter	*w;

	op->job = NULL;
	if (cause != NULL)
		log_warnx("%s", cause->message);
	else
		log_debug("%s: disk of %s mounted", __func__, op->id);
	while ((w = TAILQ_FIRST(&op->waiters)) != NULL) {
		TAILQ_REMOVE(&op->waiters, w, entry);
		w->cb(cause, w->arg);
		free(w);
	}
	disk_op_free(op);
}

static struct disk_op *
disk_op_find(const char *id)
{
	struct disk_op	*op;

	LIST_FOREACH(op, &disk_ops, entry) {
		if (op->job != NULL && strcmp(op->id, id) == 0)
			return (op);
	}
	return (NULL);
}

static void
disk_op_wait(struct disk_op *op, disk_cb cb, void *arg)
{
	struct disk_waiter	*w;

	w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->arg = arg;
	TAILQ_INSERT_TAIL(&op->waiters, w, entry);
}

static void
disk_op_start(enum disk_kind kind, const char *id, long long size,
    int sparse, disk_cb cb, void *arg)
{
	static int	(*fns[])(void *, int) = { disk_create_child,
	    disk_mount_child };
	static const char *names[] = { "disk-create", "disk-mount" };
	struct disk_op	*op;

	op = xcalloc(1, sizeof *op);
	op->kind = kind;
	strlcpy(op->id, id, sizeof op->id);
	op->size = size;
	op->sparse = sparse;
	op->reserve = cfg_limit(LIMIT_DISK_RESERVE);
	op->image = disk_image_path(id);
	op->mnt = state_where(STATE_SANDBOX, id, NULL);
	op->staging = state_where(STATE_STAGING, NULL, "%ld-%llu-%s.img",
	    (long)getpid(), state_process_start(getpid()), id);
	TAILQ_INIT(&op->waiters);
	LIST_INSERT_HEAD(&disk_ops, op, entry);
	disk_op_wait(op, cb, arg);
	op->job = job_fork(names[kind], fns[kind], op, disk_done, op);
}

/*
 * Make a sandbox's (or a box's) disk of size bytes and mount it on its
 * directory (which exists, empty); cb(NULL) once it is there, or
 * cb(error). Its room is reserved on the host, unless sparse (a box's:
 * boxes are many and large, and share the room).
 */
void
disk_create(const char *id, long long size, int sparse, disk_cb cb,
    void *arg)
{
	disk_op_start(DISK_CREATE, id, size, sparse, cb, arg);
}

/*
 * Make sure a sandbox's disk is mounted (after a reboot it is not):
 * cb(NULL) at once when it is, or when there is no image to mount (a
 * sandbox made without a disk); otherwise once a child has mounted it.
 * Callers asking meanwhile share one child.
 */
void
disk_ensure(const char *id, disk_cb cb, void *arg)
{
	struct disk_op	*op;

	if ((op = disk_op_find(id)) != NULL) {
		disk_op_wait(op, cb, arg);
		return;
	}
	if (!disk_exists(id) || disk_mounted(id)) {
		cb(NULL, arg);
		return;
	}
	disk_op_start(DISK_MOUNT, id, 0, 0, cb, arg);
}

/* Whether a sandbox has a disk, made or mounted (even half made). */
int
disk_present(const char *id)
{
	return (disk_exists(id) || disk_mounted(id));
}

/*
 * Child side (the trash): take down the disk of a sandbox whose record
 * and lock are gone. The file system is detached from the tree lazily
 * (sessions of other processes may still hold it; the loop device goes
 * with the last of them), the directory goes to the trash and the
 * image is removed, all under the image's lock. Returns 0, or -1 with
 * an error for the report.
 */
int
disk_teardown(const char *id, char **error)
{
	char	*image, *mnt, *trash;
	int	 ifd, r = -1;

	image = disk_image_path(id);
	mnt = state_where(STATE_SANDBOX, id, NULL);
	ifd = open(image, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (ifd == -1 && errno != ENOENT) {
		xasprintf(error, "cannot open %s: %s", image, strerror(errno));
		goto out;
	}
	while (ifd != -1 && flock(ifd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			xasprintf(error, "cannot lock %s: %s", image,
			    strerror(errno));
			goto out;
		}
	}
	while (disk_is_mount(mnt)) {
		if (umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) != 0) {
			xasprintf(error, "cannot unmount %s: %s", mnt,
			    strerror(errno));
			goto out;
		}
	}
	if ((trash = state_sandbox_trash(id, error)) == NULL)
		goto out;
	free(trash);
	if (ifd != -1 && unlink(image) != 0 && errno != ENOENT) {
		xasprintf(error, "cannot remove %s: %s", image,
		    strerror(errno));
		goto out;
	}
	r = 0;
out:
	if (ifd != -1)
		close(ifd);	/* releases the lock */
	free(mnt);
	free(image);
	return (r);
}
