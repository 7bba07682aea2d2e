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
 * Access to trees a sandbox controls (session upper directories, the
 * scratch of ended sessions, transcripts) from the host, where every
 * name, symlink and size may have been chosen by an attacker racing us:
 * everything is relative to a directory descriptor we opened ourselves,
 * never follows a symlink at any component (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, O_NOFOLLOW,
 * AT_SYMLINK_NOFOLLOW), never leaves the file system, and reads file
 * data extent by extent, so a sparse file costs what it holds, not what
 * it claims.
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include <linux/openat2.h>

#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "sandbox-mcp.h"

#define TREE_CHUNK	(256 * 1024)

int	tree_sparse(int, off_t);

/*
 * Open path (relative, any depth) beneath dirfd: no symlink, no magic
 * link, no "..", no other file system on the way. -1 with errno (ELOOP
 * for a symlink, EXDEV for an escape).
 */
int
tree_open(int dirfd, const char *path, int flags)
{
	struct open_how	how;
	int		fd;

	memset(&how, 0, sizeof how);
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
	do {
		fd = (int)syscall(SYS_openat2, dirfd, *path != '\0' ? path :
		    ".", &how, sizeof how);
	} while (fd == -1 && errno == EAGAIN);
	return (fd);
}

/*
 * Open an absolute path with no symlink and no magic link on the way: a
 * directory a caller resolved once (realpath) is opened as it was
 * judged, or not at all when a link has been put in its place since.
 */
int
tree_open_path(const char *path, int flags)
{
	struct open_how	how;
	int		fd;

	memset(&how, 0, sizeof how);
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	do {
		fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how,
		    sizeof how);
	} while (fd == -1 && errno == EAGAIN);
	return (fd);
}

/*
 * The data extents of an open regular file, one after another:
 * cb(offset, data, length) for each chunk of data; holes are skipped.
 * Returns 0, or -1 (errno set) on a read error or when cb returns -1.
 */
int
tree_extents(int fd, off_t size, int (*cb)(off_t, const char *, size_t,
    void *), void *arg)
{
	static char	*chunk;
	static int	 busy;
	char		*buf;
	off_t		 data, hole, off;
	ssize_t		 n;
	size_t		 want;
	int		 r = 0, dense;

	/*
	 * One chunk for every call (a file at a time: a walk of ten
	 * thousand small files would map and unmap one each), and one of
	 * its own for a callback that reads another file.
	 */
	if (busy)
		buf = xmalloc(TREE_CHUNK);
	else {
		if (chunk == NULL)
			chunk = xmalloc(TREE_CHUNK);
		buf = chunk;
		busy = 1;
	}
	dense = !tree_sparse(fd, size);
	for (off = 0; off < size && r == 0; off = hole) {
		if (dense) {
			data = off;
			hole = size;
		} else if ((data = lseek(fd, off, SEEK_DATA)) == -1) {
			if (errno == ENXIO)
				break;		/* only a hole is left */
			data = off;		/* no SEEK_DATA: read it all */
			hole = size;
		} else if ((hole = lseek(fd, data, SEEK_HOLE)) == -1)
			hole = size;
		if (hole > size)
			hole = size;
		for (off = data; off < hole; off += n) {
			want = hole - off > TREE_CHUNK ? TREE_CHUNK :
			    (size_t)(hole - off);
			n = pread(fd, buf, want, off);
			if (n == -1 && errno == EINTR) {
				n = 0;
				continue;
			}
			if (n <= 0) {
				if (n == 0)
					hole = off;	/* shrank meanwhile */
				else
					r = -1;
				break;
			}
			if (cb(off, buf, n, arg) != 0) {
				r = -1;
				break;
			}
		}
	}
	if (buf == chunk)
		busy = 0;
	else
		free(buf);
	return (r);
}

/*
 * A copy of an open file as leaf in dfd: its bytes (holes stay holes),
 * mode, owner and extended attributes but overlayfs's. Its descriptor,
 * or -1.
 */
int
tree_copy_file(int src, const struct stat *st, int dfd, const char *leaf)
{
	char	 names[4096], value[65536], *p;
	ssize_t	 n, v;
	off_t	 in = 0, out = 0, end;
	int	 fd;

	if ((fd = openat(dfd, leaf, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, st->st_mode & 07777)) == -1)
		return (-1);
	if (ftruncate(fd, st->st_size) != 0)
		goto fail;
	for (in = 0; in < st->st_size; in = end) {
		if ((in = lseek(src, in, SEEK_DATA)) == -1)
			break;			/* a hole to the end */
		if ((end = lseek(src, in, SEEK_HOLE)) == -1 ||
		    end > st->st_size)
			end = st->st_size;
		out = in;
		while (in < end) {
			n = copy_file_range(src, &in, fd, &out, end - in, 0);
			if (n == -1 && errno == EINTR)
				continue;
			if (n <= 0)
				goto fail;
		}
	}
	if (fchown(fd, st->st_uid, st->st_gid) != 0 ||
	    fchmod(fd, st->st_mode & 07777) != 0)
		goto fail;
	if ((n = flistxattr(src, names, sizeof names)) > 0) {
		for (p = names; p < names + n; p += strlen(p) + 1) {
			if (strncmp(p, "trusted.overlay.", 16) == 0)
				continue;
			if ((v = fgetxattr(src, p, value, sizeof value)) >= 0)
				fsetxattr(fd, p, value, v, 0);
		}
	}
	return (fd);
fail:
	close(fd);
	unlinkat(dfd, leaf, 0);
	return (-1);
}

/* Whether an open regular file has a hole before its end. */
int
tree_sparse(int fd, off_t size)
{
	struct stat	st;
	off_t		hole, at;

	if (size == 0)
		return (0);
	/* Blocks for every byte: no hole (the common case costs one call). */
	if (fstat(fd, &st) == 0 && (off_t)st.st_blocks * 512 >= size)
		return (0);
	/* The descriptor's offset is the caller's: put it back. */
	at = lseek(fd, 0, SEEK_CUR);
	hole = lseek(fd, 0, SEEK_HOLE);
	if (at != -1)
		lseek(fd, at, SEEK_SET);
	return (hole != -1 && hole < size);
}

struct tree_digest {
	EVP_MD_CTX	*md;
	int		 sparse;
};

static int
tree_digest_cb(off_t off, const char *buf, size_t len, void *arg)
{
	struct tree_digest	*d = arg;
	unsigned char		 hdr[16];
	int			 i;

	if (d->sparse) {
		for (i = 0; i < 8; i++) {
			hdr[i] = (unsigned char)((uint64_t)off >> (8 * i));
			hdr[8 + i] = (unsigned char)((uint64_t)len >> (8 * i));
		}
		EVP_DigestUpdate(d->md, hdr, sizeof hdr);
	}
	EVP_DigestUpdate(d->md, buf, len);
	return (0);
}

/*
 * The digest of an open regular file, in hex: the SHA-256 of its bytes;
 * for a file with holes, the SHA-256 of its data extents (each offset
 * and length, then the bytes), so that a terabyte of hole costs nothing.
 */
int
tree_digest(int fd, off_t size, char out[65])
{
	struct tree_digest	d;
	unsigned char		md[32];
	unsigned int		mdlen;
	int			r;

	if ((d.md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(d.md, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_DigestInit_ex", __func__);
	if ((d.sparse = tree_sparse(fd, size)))
		EVP_DigestUpdate(d.md, "sparse", 6);
	r = tree_extents(fd, size, tree_digest_cb, &d);
	EVP_DigestFinal_ex(d.md, md, &mdlen);
	EVP_MD_CTX_free(d.md);
	util_hex(md, sizeof md, out);
	return (r);
}

/*
 * Read a whole regular file from an open descriptor, at most max bytes
 * (NUL-terminated); NULL when larger, not regular or unreadable.
 */
char *
tree_read_fd(int fd, size_t max, size_t *len)
{
	struct stat	 st;
	char		*buf;
	size_t		 got = 0;
	ssize_t		 n;

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (unsigned long long)st.st_size > max)
		return (NULL);
	buf = xmalloc(st.st_size + 1);
	while (got < (size_t)st.st_size) {
		n = pread(fd, buf + got, st.st_size - got, got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	if (got != (size_t)st.st_size) {
		free(buf);
		return (NULL);
	}
	buf[got] = '\0';
	*len = got;
	return (buf);
}

/* Read a regular file beneath dirfd, as tree_read_fd. */
char *
tree_read(int dirfd, const char *path, size_t max, size_t *len)
{
	char	*buf;
	int	 fd;

	if ((fd = tree_open(dirfd, path, O_RDONLY | O_NONBLOCK)) == -1)
		return (NULL);
	buf = tree_read_fd(fd, max, len);
	close(fd);
	return (buf);
}

/*
 * Empty one directory of the tree (sub, open) whose top is top: files
 * and empty directories go; a directory that holds something is moved
 * up into top under a name of its own, to be emptied in its turn. So
 * the walk never goes deeper than one level, whatever depth a sandbox
 * made: two descriptors and one directory stream at most.
 */
static int
tree_empty_one(int top, int sub, unsigned long *moved)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		 name[64];
	int		 fd, r = 0;

	if ((fd = dup(sub)) == -1)
		return (-1);
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return (-1);
	}
	rewinddir(d);	/* a dup shares its offset with the last read */
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(sub, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(sub, de->d_name, 0) != 0 &&
			    errno != ENOENT)
				r = -1;
			continue;
		}
		if (unlinkat(sub, de->d_name, AT_REMOVEDIR) == 0 ||
		    errno == ENOENT)
			continue;
		if (sub == top)
			continue;	/* emptied by the caller's next pass */
		snprintf(name, sizeof name, ".rm-%lu-%08x", (*moved)++,
		    arc4random());
		if (renameat(sub, de->d_name, top, name) != 0)
			r = -1;
	}
	closedir(d);
	return (r);
}

/* Empty an open directory and all below it, never following a link. */
static int
tree_empty(int top)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	unsigned long	 moved = 0;
	int		 fd, sub, r, left;

	for (;;) {
		r = tree_empty_one(top, top, &moved);
		if ((fd = dup(top)) == -1)
			return (-1);
		if ((d = fdopendir(fd)) == NULL) {
			close(fd);
			return (-1);
		}
		rewinddir(d);
		left = 0;
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			if (fstatat(top, de->d_name, &st,
			    AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
				continue;
			sub = openat(top, de->d_name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (sub == -1)
				continue;
			if (tree_empty_one(top, sub, &moved) != 0)
				r = -1;
			close(sub);
			if (unlinkat(top, de->d_name, AT_REMOVEDIR) == 0)
				left = 1;	/* progress: look again */
		}
		closedir(d);
		if (!left)
			return (r);
	}
}

/*
 * Remove name, a directory beneath dirfd (or a file), and all below it,
 * never following a symlink. 0, or -1 when something was left.
 */
int
tree_remove(int dirfd, const char *name)
{
	struct stat	st;
	int		fd, r;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return (errno == ENOENT ? 0 : -1);
	if (!S_ISDIR(st.st_mode))
		return (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 :
		    -1);
	if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return (-1);
	r = tree_empty(fd);
	close(fd);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		r = -1;
	return (r);
}

/* Remove a tree by its absolute path (our own directories above it). */
int
tree_remove_path(const char *path)
{
	char	*copy, *slash;
	int	 dfd, r;

	copy = xstrdup(path);
	if ((slash = strrchr(copy, '/')) == NULL || slash[1] == '\0') {
		free(copy);
		errno = EINVAL;
		return (-1);
	}
	*slash = '\0';
	dfd = open(*copy != '\0' ? copy : "/", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	if (dfd == -1) {
		free(copy);
		return (errno == ENOENT ? 0 : -1);
	}
	r = tree_remove(dfd, slash + 1);
	close(dfd);
	free(copy);
	return (r);
}

#define TREE_SIZE_DEPTH	4000	/* a descriptor a level */

struct tree_size {
	unsigned long long	 bytes;
	struct tree_inode {
		dev_t		 dev;
		ino_t		 ino;
	}			*seen;		/* files of several names */
	size_t			 nseen;
	size_t			 size;
};

static size_t
tree_size_slot(const struct tree_size *z, dev_t dev, ino_t ino)
{
	uint64_t	h = ((uint64_t)ino * 0x9e3779b97f4a7c15ULL) ^
			    (uint64_t)dev;
	size_t		i = (size_t)(h % z->size);

	while (z->seen[i].ino != 0 && (z->seen[i].dev != dev ||
	    z->seen[i].ino != ino))
		i = (i + 1) % z->size;
	return (i);
}

/*
 * Whether a file of several names was counted already (else note it):
 * an open-addressed table of device and inode, kept under half full.
 */
static int
tree_size_seen(struct tree_size *z, const struct stat *st)
{
	struct tree_inode	*old;
	size_t			 i, osize;

	if (st->st_ino == 0)
		return (0);
	if ((z->nseen + 1) * 2 > z->size) {
		old = z->seen;
		osize = z->size;
		z->size = osize == 0 ? 64 : osize * 2;
		z->seen = xcalloc(z->size, sizeof *z->seen);
		for (i = 0; i < osize; i++) {
			if (old[i].ino != 0)
				z->seen[tree_size_slot(z, old[i].dev,
				    old[i].ino)] = old[i];
		}
		free(old);
	}
	i = tree_size_slot(z, st->st_dev, st->st_ino);
	if (z->seen[i].ino != 0)
		return (1);
	z->seen[i].dev = st->st_dev;
	z->seen[i].ino = st->st_ino;
	z->nseen++;
	return (0);
}

/*
 * The bytes of regular files below an open directory: the directory is
 * read whole and closed before the walk goes below it, so a level holds
 * one descriptor. -1 (errno set) when a part cannot be read, rather
 * than a count that leaves it out.
 */
static int
tree_size_dir(int dfd, struct tree_size *z, int depth)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		**subs = NULL;
	size_t		 nsubs = 0, i;
	int		 fd, sub, r = 0;

	if (depth > TREE_SIZE_DEPTH) {
		errno = ELOOP;
		return (-1);
	}
	if ((fd = dup(dfd)) == -1)
		return (-1);
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue;	/* gone meanwhile */
			r = -1;
			break;
		}
		if (S_ISREG(st.st_mode)) {
			if (st.st_nlink < 2 || !tree_size_seen(z, &st))
				z->bytes += st.st_size;
		} else if (S_ISDIR(st.st_mode)) {
			subs = xreallocarray(subs, nsubs + 1, sizeof *subs);
			subs[nsubs++] = xstrdup(de->d_name);
		}
	}
	closedir(d);
	for (i = 0; i < nsubs; i++) {
		if (r == 0) {
			sub = openat(dfd, subs[i], O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (sub == -1 && errno != ENOENT && errno != ENOTDIR &&
			    errno != ELOOP)
				r = -1;
			else if (sub != -1) {
				r = tree_size_dir(sub, z, depth + 1);
				close(sub);
			}
		}
		free(subs[i]);
	}
	free(subs);
	return (r);
}

/*
 * The bytes of the regular files in the tree at path, each file once
 * however many names it has, following no link: 0, or -1 (errno set)
 * when a part of it cannot be read (deeper than TREE_SIZE_DEPTH levels
 * is ELOOP).
 */
int
tree_size(const char *path, unsigned long long *bytes)
{
	struct tree_size	z;
	int			fd, r;

	memset(&z, 0, sizeof z);
	*bytes = 0;
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return (-1);
	r = tree_size_dir(fd, &z, 0);
	close(fd);
	free(z.seen);
	*bytes = z.bytes;
	return (r);
}
