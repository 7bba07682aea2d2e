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
 * The shared base cache: a read-only copy of a workspace under
 * <state>/base-cache/<hex>/, named by the tree's root hash so identical
 * workspaces share one copy. The root hash is "sha256:" and the SHA-256
 * over the path-sorted entries of the tree, each fed as "kind NUL path
 * NUL", then for a file "size NUL hex-sha256-of-content NUL" and for a
 * symlink "target NUL" (kinds d, f, l).
 *
 * The walk, the hash and the copy run in a child process (job.c), so the
 * loop never waits on the disk. The child hashes first and copies only
 * when no entry has that hash; the copy is hashed again as it is
 * written, and when the workspace changed in between the entry is named
 * by what was actually copied. A copy is built under .staging/ and
 * renamed into place, so a reader never sees half a tree; when two
 * creators race, the first rename wins and the other copy is dropped.
 *
 * A copy is made only when the file system of the state directory keeps
 * what the create needs besides (its disks and the reserve), so a create
 * refused for room copies nothing. A base no sandbox record names is
 * removed by the trash (trash_bases); a create holds the cache's lock
 * shared from the moment its base is picked until its record names it.
 */

#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define BASECACHE_SPECIAL_NAMED	5
#define BASECACHE_BUFSIZE	(256 * 1024)
#define BASECACHE_INODES_SPARE	1024	/* left for records and disks */

struct basecache_entry {
	char			*path;		/* relative, no leading ./ */
	char			 kind;		/* d, f or l */
	mode_t			 mode;
	uid_t			 uid;
	gid_t			 gid;
	off_t			 size;
	off_t			 walked;	/* its size when walked */
	struct timespec		 mtime;
	char			*target;	/* symlinks */
	char			 digest[65];	/* files */
};

struct basecache_walk {
	const char		*src;
	int			 root;		/* src, opened once */
	char			**hidden;	/* relative: left out */
	size_t			 nhidden;
	struct basecache_entry	*entries;
	size_t			 n;
	size_t			 size;
	unsigned long long	 bytes;
	unsigned long long	 allocated;	/* the files' st_blocks */
	unsigned long long	 max_entries;
	unsigned long long	 max_bytes;
	char			*special[BASECACHE_SPECIAL_NAMED];
	size_t			 nspecial;
	char			*error;
};

struct basecache_build {
	char			*src;
	char			**hidden;
	size_t			 nhidden;
	char			*staging;
	long long		 max_entries;
	long long		 max_bytes;
	long long		 need;		/* to stay free after a copy */
	int			 lock;		/* the cache's, shared */
	struct job		*job;
	basecache_cb		 cb;
	void			*arg;
};

/* <state>/base-cache/<hex> for a root hash "sha256:<hex>". */
char *
basecache_path(const char *root_hash)
{
	const char	*hex = strchr(root_hash, ':');

	return (state_where(STATE_BASES, NULL, "%s", hex != NULL ? hex + 1 :
	    root_hash));
}

/* The child's answer: its result, taken over. */
static int
basecache_report(int fd, cJSON *rep)
{
	int	r;

	r = job_answer(fd, rep, NULL);
	cJSON_Delete(rep);
	return (r);
}

static void
basecache_add(struct basecache_walk *w, const char *path, char kind,
    const struct stat *st)
{
	struct basecache_entry	*e;

	if (w->n == w->size) {
		w->size = w->size == 0 ? 1024 : w->size * 2;
		w->entries = xreallocarray(w->entries, w->size,
		    sizeof *w->entries);
	}
	e = &w->entries[w->n++];
	memset(e, 0, sizeof *e);
	e->path = xstrdup(path);
	e->kind = kind;
	e->mode = st->st_mode & 07777;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->size = kind == 'f' ? st->st_size : 0;
	e->walked = e->size;
	e->mtime = st->st_mtim;
}

/*
 * Walk the tree below dir (a relative path, "" for the root) without
 * following symlinks, collecting entries and refusing special files. A
 * directory's entries are read whole and it is closed before the walk
 * goes down, so a tree of any depth holds one directory open and a
 * little stack per level.
 */
static int
basecache_walk_dir(struct basecache_walk *w, const char *rel)
{
	struct stat	 st;
	struct dirent	*de;
	DIR		*d;
	char		*full, *path, *target, **names = NULL;
	ssize_t		 n;
	size_t		 i, nnames = 0, k;
	int		 r = 0, dfd;

	/* Beneath the root, no link followed: not a tree a link joins. */
	xasprintf(&full, "%s%s%s", w->src, *rel != '\0' ? "/" : "", rel);
	if ((dfd = tree_open(w->root, rel, O_RDONLY | O_DIRECTORY)) == -1 ||
	    (d = fdopendir(dfd)) == NULL) {
		xasprintf(&w->error, "cannot read %s: %s", full,
		    errno == ELOOP ? "a symbolic link is in its place" :
		    strerror(errno));
		if (dfd != -1)
			close(dfd);
		free(full);
		return (-1);
	}
	target = xmalloc(PATH_MAX);
	/* This level's entries, then each one (directories: below). */
	while (r == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		xasprintf(&path, "%s%s%s", rel, *rel != '\0' ? "/" : "",
		    de->d_name);
		for (i = 0; i < w->nhidden; i++) {
			if (strcmp(path, w->hidden[i]) == 0)
				break;
		}
		if (i < w->nhidden) {
			free(path);	/* another tenant's root */
			continue;
		}
		if (fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) != 0) {
			xasprintf(&w->error, "cannot read %s/%s: %s", w->src,
			    path, strerror(errno));
			free(path);
			r = -1;
			break;
		}
		if (w->n >= w->max_entries) {
			xasprintf(&w->error, "the workspace has more than %llu"
			    " entries (limit base-max-entries)",
			    w->max_entries);
			free(path);
			r = -1;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			basecache_add(w, path, 'd', &st);
			names = xreallocarray(names, nnames + 1,
			    sizeof *names);
			names[nnames++] = path;
			continue;
		} else if (S_ISREG(st.st_mode)) {
			basecache_add(w, path, 'f', &st);
			w->bytes += st.st_size;
			w->allocated += (unsigned long long)st.st_blocks * 512;
			if (w->bytes > w->max_bytes) {
				xasprintf(&w->error, "the workspace holds more"
				    " than %llu bytes (limit base-max-bytes)",
				    w->max_bytes);
				r = -1;
			}
		} else if (S_ISLNK(st.st_mode)) {
			n = readlinkat(dirfd(d), de->d_name, target,
			    PATH_MAX - 1);
			if (n < 0) {
				xasprintf(&w->error, "cannot read the link"
				    " %s/%s: %s", w->src, path,
				    strerror(errno));
				r = -1;
			} else {
				target[n] = '\0';
				basecache_add(w, path, 'l', &st);
				w->entries[w->n - 1].target = xstrdup(target);
			}
		} else {
			if (w->nspecial < BASECACHE_SPECIAL_NAMED)
				w->special[w->nspecial] = xstrdup(path);
			w->nspecial++;
		}
		free(path);
	}
	closedir(d);
	free(target);
	free(full);
	for (k = 0; k < nnames; k++) {
		if (r == 0)
			r = basecache_walk_dir(w, names[k]);
		free(names[k]);
	}
	free(names);
	return (r);
}

static int
basecache_entry_cmp(const void *a, const void *b)
{
	return (strcmp(((const struct basecache_entry *)a)->path,
	    ((const struct basecache_entry *)b)->path));
}

/*
 * Copy (when dst is not NULL) or just read one file, hashing its bytes
 * into e->digest and its length into e->size.
 */
static int
basecache_file(struct basecache_walk *w, struct basecache_entry *e,
    int dstdir, char **error)
{
	EVP_MD_CTX	*ctx;
	unsigned char	 md[32];
	unsigned int	 mdlen;
	char		*src, *buf;
	ssize_t		 n;
	off_t		 total = 0;
	int		 in, out = -1, r = -1;
	struct timespec	 times[2];
	struct stat	 st;

	xasprintf(&src, "%s/%s", w->src, e->path);
	/* (Non-blocking: a fifo put in its place does not hang the open.) */
	in = tree_open(w->root, e->path, O_RDONLY | O_NONBLOCK);
	if (in == -1 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
		xasprintf(error, "cannot read %s: %s", src, in == -1 ?
		    (errno == ELOOP ? "a symbolic link is on its path" :
		    strerror(errno)) : "it is no longer a regular file");
		if (in != -1)
			close(in);
		free(src);
		return (-1);
	}
	if (dstdir != -1) {
		out = openat(dstdir, e->path, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out == -1) {
			xasprintf(error, "cannot create the copy of %s: %s",
			    e->path, strerror(errno));
			close(in);
			free(src);
			return (-1);
		}
	}
	buf = xmalloc(BASECACHE_BUFSIZE);
	if ((ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_DigestInit_ex", __func__);
	for (;;) {
		n = read(in, buf, BASECACHE_BUFSIZE);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			xasprintf(error, "cannot read %s: %s", src,
			    strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		/*
		 * No more than the walk counted (and the room was judged
		 * on): a file that grew since is a workspace that changed
		 * too much to copy now.
		 */
		if (total + n > e->walked) {
			xasprintf(error, "%s grew past its %lld bytes while the"
			    " workspace was copied; try again once it stops"
			    " changing", e->path, (long long)e->walked);
			goto out;
		}
		EVP_DigestUpdate(ctx, buf, n);
		total += n;
		if (out != -1 && job_write_all(out, buf, n) != 0) {
			xasprintf(error, "cannot write the copy of %s: %s",
			    e->path, strerror(errno));
			goto out;
		}
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	util_hex(md, sizeof md, e->digest);
	e->size = total;
	if (out != -1) {
		times[0] = e->mtime;
		times[1] = e->mtime;
		if (fchown(out, e->uid, e->gid) != 0 ||
		    fchmod(out, e->mode) != 0 ||
		    futimens(out, times) != 0) {
			xasprintf(error, "cannot set the attributes of the copy"
			    " of %s: %s", e->path, strerror(errno));
			goto out;
		}
	}
	r = 0;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	free(src);
	close(in);
	if (out != -1)
		close(out);
	return (r);
}

/* The root hash of the entries, as "sha256:<hex>". */
static void
basecache_root_hash(struct basecache_walk *w, char out[72])
{
	EVP_MD_CTX		*ctx;
	struct basecache_entry	*e;
	unsigned char		 md[32];
	unsigned int		 mdlen;
	char			 size[32], kind[2];
	size_t			 i;

	if ((ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_DigestInit_ex", __func__);
	for (i = 0; i < w->n; i++) {
		e = &w->entries[i];
		kind[0] = e->kind;
		kind[1] = '\0';
		EVP_DigestUpdate(ctx, kind, 2);
		EVP_DigestUpdate(ctx, e->path, strlen(e->path) + 1);
		if (e->kind == 'f') {
			snprintf(size, sizeof size, "%lld",
			    (long long)e->size);
			EVP_DigestUpdate(ctx, size, strlen(size) + 1);
			EVP_DigestUpdate(ctx, e->digest, 65);
		} else if (e->kind == 'l')
			EVP_DigestUpdate(ctx, e->target,
			    strlen(e->target) + 1);
	}
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	memcpy(out, "sha256:", 7);
	util_hex(md, sizeof md, out + 7);
}


/*
 * The target of the symlink at path beneath the root, read through its
 * directory opened with no link followed; its length, or -1.
 */
static ssize_t
basecache_readlink(struct basecache_walk *w, const char *path, char *buf,
    size_t size)
{
	const char	*slash = strrchr(path, '/');
	char		*dir;
	ssize_t		 n;
	int		 dfd;

	dir = slash != NULL ? xstrndup(path, slash - path) : xstrdup("");
	dfd = tree_open(w->root, dir, O_RDONLY | O_DIRECTORY);
	free(dir);
	if (dfd == -1)
		return (-1);
	n = readlinkat(dfd, slash != NULL ? slash + 1 : path, buf, size - 1);
	close(dfd);
	if (n >= 0)
		buf[n] = '\0';
	return (n);
}

/* Copy every entry into the staging directory; fix directories last. */
static int
basecache_copy(struct basecache_walk *w, const char *staging,
    int *changed, char **error)
{
	struct basecache_entry	*e;
	struct timespec		 times[2];
	struct stat		 st;
	char			 before[65], target[PATH_MAX];
	off_t			 size;
	ssize_t			 n;
	size_t			 i;
	int			 dfd;

	if (mkdir(staging, 0700) != 0 || (dfd = open(staging, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) == -1) {
		xasprintf(error, "cannot create %s: %s", staging,
		    strerror(errno));
		return (-1);
	}
	for (i = 0; i < w->n; i++) {
		e = &w->entries[i];
		switch (e->kind) {
		case 'd':
			if (mkdirat(dfd, e->path, 0700) != 0) {
				xasprintf(error, "cannot create the copy of"
				    " %s: %s", e->path, strerror(errno));
				goto fail;
			}
			break;
		case 'f':
			memcpy(before, e->digest, sizeof before);
			size = e->size;
			if (basecache_file(w, e, dfd, error) != 0)
				goto fail;
			if (strcmp(before, e->digest) != 0 || size != e->size)
				*changed = 1;
			break;
		case 'l':
			n = basecache_readlink(w, e->path, target,
			    sizeof target);
			if (n < 0) {
				xasprintf(error, "%s vanished while the"
				    " workspace was copied", e->path);
				goto fail;
			}
			target[n] = '\0';
			if (strcmp(target, e->target) != 0) {
				free(e->target);
				e->target = xstrdup(target);
				*changed = 1;
			}
			times[0] = e->mtime;
			times[1] = e->mtime;
			if (symlinkat(e->target, dfd, e->path) != 0 ||
			    fchownat(dfd, e->path, e->uid, e->gid,
			    AT_SYMLINK_NOFOLLOW) != 0 ||
			    utimensat(dfd, e->path, times,
			    AT_SYMLINK_NOFOLLOW) != 0) {
				xasprintf(error, "cannot create the copy of"
				    " %s: %s", e->path, strerror(errno));
				goto fail;
			}
			break;
		}
	}
	/* Directories: modes and times once their contents are in. */
	for (i = w->n; i-- > 0;) {
		e = &w->entries[i];
		if (e->kind != 'd')
			continue;
		times[0] = e->mtime;
		times[1] = e->mtime;
		if (fchownat(dfd, e->path, e->uid, e->gid, 0) != 0 ||
		    fchmodat(dfd, e->path, e->mode, 0) != 0 ||
		    utimensat(dfd, e->path, times, 0) != 0) {
			xasprintf(error, "cannot set the attributes of the copy"
			    " of %s: %s", e->path, strerror(errno));
			goto fail;
		}
	}
	if (fstat(w->root, &st) == 0) {
		times[0] = st.st_mtim;
		times[1] = st.st_mtim;
		if (fchown(dfd, st.st_uid, st.st_gid) != 0 ||
		    fchmod(dfd, st.st_mode & 07777) != 0)
			log_warn("%s: attributes of %s", __func__, staging);
		futimens(dfd, times);
	}
	if (syncfs(dfd) != 0) {
		xasprintf(error, "cannot sync %s: %s", staging,
		    strerror(errno));
		goto fail;
	}
	close(dfd);
	return (0);
fail:
	close(dfd);
	return (-1);
}

/*
 * Whether a copy of the walked tree fits on the state directory's file
 * system with need bytes left free: its bytes and a block for each
 * entry (directories, links and a file's last block take room too), and
 * an inode for each. 0, or -1 with the refusal in *error.
 */
static int
basecache_room(struct basecache_walk *w, long long need, char **error)
{
	struct statvfs	sv;
	long long	room, take;

	if (fstatvfs(4, &sv) != 0)
		return (0);	/* not known: the copy's own errors tell */
	room = (long long)sv.f_bavail * (long long)sv.f_frsize;
	take = (long long)w->bytes + (long long)w->n * (long long)sv.f_frsize;
	if (room < take + need) {
		xasprintf(error, "no room to copy the workspace: its %lld MiB"
		    " (%zu entries) and the %lld MiB that must stay free (the"
		    " sandboxes' disks and the reserve, limit disk-reserve)"
		    " are more than the %lld MiB free on the file system of"
		    " the state directory; destroy sandboxes or free space",
		    (take + (1 << 20) - 1) >> 20, w->n, need >> 20,
		    room >> 20);
		return (-1);
	}
	if (sv.f_favail < (fsfilcnt_t)w->n + BASECACHE_INODES_SPARE) {
		xasprintf(error, "no room to copy the workspace: its %zu"
		    " entries need as many inodes, and the file system of the"
		    " state directory has %llu free; destroy sandboxes or free"
		    " space", w->n, (unsigned long long)sv.f_favail);
		return (-1);
	}
	return (0);
}

/* The child: walk, hash, and copy unless the cache has the tree. */
static int
basecache_child(void *arg, int fd)
{
	struct basecache_build	*b = arg;
	struct basecache_walk	 w;
	cJSON			*rep;
	char			 hash[72], *dest, *error = NULL, *list;
	size_t			 i, len;
	int			 changed = 0, reused = 0;
	struct stat		 st;
	int			 roomfd = -1;

	memset(&w, 0, sizeof w);
	w.src = b->src;
	/*
	 * The workspace as it was judged (realpath, no link in it): a link
	 * put in the place of one of its directories since, to lead the
	 * copy into another tenant's tree, fails the open.
	 */
	if ((w.root = tree_open_path(b->src, O_RDONLY | O_DIRECTORY)) == -1)
		return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "cannot read"
		    " the workspace %s: %s", b->src, errno == ELOOP ? "a"
		    " symbolic link has been put in the place of a directory"
		    " on its path" : strerror(errno)));
	w.hidden = b->hidden;
	w.nhidden = b->nhidden;
	w.max_entries = b->max_entries;
	w.max_bytes = b->max_bytes;
	if (basecache_walk_dir(&w, "") != 0)
		return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s",
		    w.error));
	if (w.nspecial > 0) {
		len = 0;
		list = xcalloc(1, 1);
		for (i = 0; i < w.nspecial && i < BASECACHE_SPECIAL_NAMED;
		    i++) {
			len += strlen(w.special[i]) + 2;
			list = xrealloc(list, len + 1);
			if (i > 0)
				strlcat(list, ", ", len + 1);
			strlcat(list, w.special[i], len + 1);
		}
		if (w.nspecial > BASECACHE_SPECIAL_NAMED)
			return (job_fail(fd, CAUSE_INVALID, NULL, NULL, "the"
			    " workspace %s holds %zu special files (sockets,"
			    " fifos or devices) that cannot be copied: %s and"
			    " %zu more", b->src, w.nspecial, list,
			    w.nspecial - BASECACHE_SPECIAL_NAMED));
		return (job_fail(fd, CAUSE_INVALID, NULL, NULL, "the"
		    " workspace %s holds special files (sockets, fifos or"
		    " devices) that cannot be copied: %s", b->src, list));
	}
	/*
	 * Too big for the room there is: refused before a byte is read
	 * (judged again under the room lock before a copy).
	 */
	if (basecache_room(&w, b->need, &error) != 0)
		return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", error));
	if (w.n > 0)
		qsort(w.entries, w.n, sizeof *w.entries, basecache_entry_cmp);
	for (i = 0; i < w.n; i++) {
		if (w.entries[i].kind == 'f' &&
		    basecache_file(&w, &w.entries[i], -1, &error) != 0)
			return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s",
			    error));
	}
	/*
	 * Shared on the descriptor the server keeps: the base picked
	 * here stays until the server has a record naming it.
	 */
	while (flock(4, LOCK_SH) != 0) {
		if (errno != EINTR)
			return (job_fail(fd, CAUSE_INTERNAL, NULL, NULL,
			    "cannot lock the base cache: %s",
			    strerror(errno)));
	}
	basecache_root_hash(&w, hash);
	dest = basecache_path(hash);
	if (stat(dest, &st) != 0 || !S_ISDIR(st.st_mode)) {
		/*
		 * A copy takes room: judged and made under the room lock,
		 * one at a time (another copy or a disk meanwhile would
		 * count the same free bytes); the cache is looked at again
		 * once it is held.
		 */
		if ((roomfd = state_room_lock()) == -1)
			return (job_fail(fd, CAUSE_INTERNAL, NULL, NULL,
			    "cannot take the room lock: %s",
			    strerror(errno)));
	}
	if (stat(dest, &st) == 0 && S_ISDIR(st.st_mode))
		reused = 1;
	else if (basecache_room(&w, b->need, &error) != 0) {
		/* Refused before a byte is copied: nothing to clean. */
		free(dest);
		return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", error));
	} else {
		if (basecache_copy(&w, b->staging, &changed, &error) != 0) {
			tree_remove_path(b->staging);
			return (job_fail(fd, CAUSE_FAILED, NULL, NULL,
			    "copying the workspace failed: %s", error));
		}
		if (changed) {
			/* Name the entry by what was copied. */
			basecache_root_hash(&w, hash);
			free(dest);
			dest = basecache_path(hash);
		}
		if (rename(b->staging, dest) != 0) {
			if (errno != EEXIST && errno != ENOTEMPTY) {
				tree_remove_path(b->staging);
				return (job_fail(fd, CAUSE_FAILED, NULL, NULL,
				    "cannot move the copy into %s: %s", dest,
				    strerror(errno)));
			}
			tree_remove_path(b->staging);
			reused = 1;	/* another creator was first */
		}
	}
	state_unlock(roomfd);
	rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "root_hash", hash);
	cJSON_AddBoolToObject(rep, "reused", reused);
	cJSON_AddBoolToObject(rep, "changed", changed);
	cJSON_AddNumberToObject(rep, "entries", (double)w.n);
	cJSON_AddNumberToObject(rep, "bytes", (double)w.bytes);
	cJSON_AddNumberToObject(rep, "allocated_bytes", (double)w.allocated);
	free(dest);
	return (basecache_report(fd, rep));
}

static void
basecache_free(struct basecache_build *b)
{
	size_t	i;

	for (i = 0; i < b->nhidden; i++)
		free(b->hidden[i]);
	free(b->hidden);
	free(b->src);
	free(b->staging);
	if (b->lock != -1)
		close(b->lock);
	free(b);
}

static void
basecache_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct basecache_build	*b = arg;
	struct cause		 c = { 0 };
	cJSON			*v;
	int			 hold;

	b->job = NULL;
	v = cJSON_GetObjectItem(result, "root_hash");
	if (cause != NULL)
		b->cb(NULL, -1, NULL, cause, b->arg);
	else if (!cJSON_IsString(v)) {
		cause_set(&c, CAUSE_INTERNAL, NULL, NULL, "the process that"
		    " copies the workspace gave no root hash");
		b->cb(NULL, -1, NULL, &c, b->arg);
		cause_clear(&c);
	} else {
		log_debug("base %s for %s reused=%d entries=%.0f",
		    v->valuestring, b->src, cJSON_IsTrue(cJSON_GetObjectItem(
		    result, "reused")), cJSON_GetNumberValue(
		    cJSON_GetObjectItem(result, "entries")));
		hold = b->lock;		/* the caller's now */
		b->lock = -1;
		b->cb(v->valuestring, hold, result, NULL, b->arg);
	}
	basecache_free(b);
}

/*
 * Make sure the base for a workspace (a canonical directory) is in the
 * cache, without the nhidden paths of hidden (relative, taken over: the
 * roots of other tenants below it), leaving need bytes free besides a
 * copy. cb(root_hash, hold, NULL, arg) on success, from the loop: hold
 * keeps the base from the sweep of unused ones (trash.c) until the
 * caller has a record naming it and closes it (state_unlock). Else
 * cb(NULL, -1, cause, arg), or NULL at once with a cause.
 */
struct basecache_build *
basecache_ensure(const char *src, char **hidden, size_t nhidden,
    long long need, basecache_cb cb, void *arg, struct cause *cause)
{
	struct basecache_build	*b;
	char			 rnd[9];
	int			 lock;
	size_t			 i;

	if ((lock = state_bases_lock()) == -1) {
		cause_set(cause, CAUSE_INTERNAL, NULL, NULL, "cannot open the"
		    " lock of the base cache: %s", strerror(errno));
		for (i = 0; i < nhidden; i++)
			free(hidden[i]);
		free(hidden);
		return (NULL);
	}
	b = xcalloc(1, sizeof *b);
	b->lock = lock;
	b->need = need;
	b->src = xstrdup(src);
	b->hidden = hidden;
	b->nhidden = nhidden;
	b->cb = cb;
	b->arg = arg;
	b->max_entries = cfg_limit(LIMIT_BASE_MAX_ENTRIES);
	b->max_bytes = cfg_limit(LIMIT_BASE_MAX_BYTES);
	util_random_hex(rnd, 8);
	b->staging = state_where(STATE_BASE_STAGING, NULL, "%ld-%llu-%s",
	    (long)getpid(), state_process_start(getpid()), rnd);
	b->job = job_fork_keep("basecache", basecache_child, b, &b->lock, 1,
	    basecache_done, b);
	return (b);
}

/* Abandon a build; its callback will not run. */
void
basecache_cancel(struct basecache_build *b)
{
	if (b == NULL)
		return;
	job_cancel(b->job);
	basecache_free(b);
}
