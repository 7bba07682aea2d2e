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
 * Publishing a workspace session's changes as one layer (layers.md,
 * "Publish"), in a child process: capture the upper directory, validate
 * the paths, check every changed path against what was published since
 * the session's base under the stack's writer lock (three-way line merge
 * of text files changed on both sides; paths ignored by the base's
 * .gitignore files are last writer wins), then build the layer in
 * staging, rename it into place and write the next manifest. All or
 * nothing: a rejection changes nothing.
 *
 * The child answers (job_answer) with one JSON object: {"publish": null}
 * when nothing changed, {"layer_id", "manifest_version", "changed_paths",
 * ...} after a commit, or {"reject_class", "message", "details"}; a
 * sessionless write answers a refusal of the file operation as a cause.
 * The server's side (publish_session, publish_file) reads it once, in
 * publish_outcome: the callers get a result or a cause, a layer
 * published is told (layer.published, and squash.c's autosquash).
 *
 * The upper directory is the sandbox's: any name in it may be a symlink
 * swapped in a moment ago by a process racing us (the session's own are
 * frozen while we work, but another session may hold a descriptor of
 * this one's /workspace). So the child runs confined to the sandbox's
 * state (confine.c), walks the upper directory from a descriptor one
 * component at a time without following a symlink, opens every file it
 * takes beneath that descriptor (tree.c), and links the inode it
 * examined, never a path. Messages name paths relative to the
 * workspace, never the host's.
 *
 * The stack's writer lock is held only for the commit: the checks, the
 * layer's bytes and its blame records are made against the head as it
 * was read; under the lock, if the head has not moved, the renames
 * commit it, else the work is done again on the new head (after a few
 * tries, under the lock, so a busy stack cannot starve a publish).
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "engine.h"
#include "gitignore.h"
#include "merge.h"
#include "sandbox-mcp.h"

#define PUBLISH_PATHS_REPORTED	1000
#define PUBLISH_MERGE_MAX	(8 * 1024 * 1024)
#define PUBLISH_ENTRIES_MAX	1000000
#define PUBLISH_TRIES		3	/* optimistic commits before locking */
#define PUBLISH_CLAIM_TRIES	3	/* staging directories made */
#define PUBLISH_FLUSH_MAX	256	/* files written out one by one */
#define PUBLISH_CHANGED		"the workspace changed while it was being" \
				" published; publish again"

enum publish_kind {
	PUBLISH_WRITE,		/* a regular file */
	PUBLISH_SYMLINK,
	PUBLISH_MKDIR,		/* a new directory */
	PUBLISH_OPAQUE,		/* a directory replacing what was below */
	PUBLISH_DELETE,
	PUBLISH_PARENT		/* a directory only holding changes */
};

struct publish_entry {
	char			*path;
	enum publish_kind	 kind;
	mode_t			 mode;
	char			*merged;	/* merged text, or NULL */
	size_t			 merged_len;
	struct layer_entry	*prev;		/* in the head, when known */
};

struct publish_capture {
	struct publish_entry	*e;
	size_t			 n;
	size_t			 size;
	char			**dropped;	/* fifos, sockets, devices */
	size_t			 ndropped;
};

/* A blame record made before the commit, appended under the lock. */
struct publish_audit {
	const char		*path;
	char			*line;
};

/*
 * What a helper keeps across its attempts (the base never changes): the
 * states of paths in the base, and the directories whose .gitignore it
 * has read; open addressing on the path, PUBLISH_MEMO_SLOTS slots, up to
 * half of them used (past that, no more is kept).
 */
#define PUBLISH_MEMO_SLOTS	2048	/* a power of two */
struct publish_memo {
	char			*path;		/* NULL: a free slot */
	int			 kind;
	size_t			 layer;
	mode_t			 mode;
	off_t			 size;
	dev_t			 dev;
	ino_t			 ino;
	char			*file;
	char			*target;
};

struct publish_ctx {
	const struct publish_args *a;
	int			 upperfd;	/* -1: a sessionless write */
	struct layer_stack	*base;
	struct layer_stack	*head;
	int			 fixed;		/* the base is the lease's */
	ssize_t			 newer;		/* head: newer + base, or -1 */
	struct publish_memo	*memo;		/* base states, by path */
	size_t			 nmemo;
	struct publish_memo	*gidirs;	/* .gitignore files read */
	size_t			 ngidirs;
	struct publish_capture	 cap;
	cJSON			*conflicts;
	struct gitignore	*gi;
	char			*error;
	cJSON			*extra;		/* added to the report */
	size_t			 changed;	/* paths, parents aside */
	unsigned long long	 allocated;	/* st_blocks of its files */
	struct publish_audit	*audit;
	size_t			 naudit;
	struct layer_hold	 hold;		/* the head's layers */
	int			*flush;		/* the layer's files' fds */
	size_t			 nflush;
	int			 flush_all;	/* too many: syncfs */
};

/*
 * A publishing helper is born confined: its sandbox's forker confined
 * itself once to the sandbox's state and base (layer_confine) before it
 * forked any (job.c). One that is not does nothing.
 */
static int
publish_confined(char **cause)
{
	if (confine_active())
		return (0);
	*cause = xstrdup("it was not confined by its forker");
	return (-1);
}

/* The parent directory of a relative path ("" for the top) and its leaf. */
static const char *
publish_split(const char *path, char *dir, size_t size)
{
	const char	*slash = strrchr(path, '/');

	if (slash == NULL) {
		dir[0] = '\0';
		return (path);
	}
	snprintf(dir, size, "%.*s", (int)(slash - path), path);
	return (slash + 1);
}

/* Open a directory beneath a tree's descriptor ("" is the top). */
static int
publish_open_dir(int top, const char *dir)
{
	if (*dir == '\0')
		return (fcntl(top, F_DUPFD_CLOEXEC, 0));
	return (tree_open(top, dir, O_PATH | O_DIRECTORY));
}

static void
publish_add(struct publish_capture *cap, const char *path,
    enum publish_kind kind, mode_t mode)
{
	struct publish_entry	*e;

	if (cap->n == cap->size) {
		cap->size = cap->size == 0 ? 64 : cap->size * 2;
		cap->e = xreallocarray(cap->e, cap->size, sizeof *cap->e);
	}
	e = &cap->e[cap->n++];
	memset(e, 0, sizeof *e);
	e->path = xstrdup(path);
	e->kind = kind;
	e->mode = mode & 07777;
}

static int
publish_name_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/*
 * Capture one directory of the upper tree, open as dfd (rel "" for the
 * top), sorted, descending through descriptors: a name that is a
 * directory when looked at and something else when opened has been
 * swapped, and the capture fails.
 */
static int
publish_capture_dir(struct publish_ctx *x, int dfd, const char *rel)
{
	struct layer_entry	*le;
	struct stat		 st, sst;
	struct dirent		*de;
	DIR			*d;
	char			*path, **names = NULL;
	size_t			 n = 0, size = 0, i;
	int			 r = 0, fd, sub;

	/*
	 * The walk recurses once per level a session made (a path is at
	 * most PATH_MAX long, so some two thousand levels): its frames stay
	 * small, the large entry is on the heap.
	 */
	le = xmalloc(sizeof *le);
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		xasprintf(&x->error, "cannot read the directory %s of the"
		    " session: %s", *rel ? rel : "/workspace",
		    strerror(errno));
		free(le);
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n == size) {
			size = size == 0 ? 32 : size * 2;
			names = xreallocarray(names, size, sizeof *names);
		}
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof *names, publish_name_cmp);
	for (i = 0; i < n && r == 0; i++) {
		if (x->cap.n + x->cap.ndropped >= PUBLISH_ENTRIES_MAX) {
			xasprintf(&x->error, "the session changed more than %d"
			    " paths", PUBLISH_ENTRIES_MAX);
			r = -1;
			break;
		}
		xasprintf(&path, "%s%s%s", rel, *rel ? "/" : "", names[i]);
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
			free(path);
			continue;	/* gone meanwhile */
		}
		if (S_ISREG(st.st_mode))
			publish_add(&x->cap, path, PUBLISH_WRITE, st.st_mode);
		else if (S_ISLNK(st.st_mode))
			publish_add(&x->cap, path, PUBLISH_SYMLINK, 0777);
		else if (layer_is_whiteout(&st))
			publish_add(&x->cap, path, PUBLISH_DELETE, 0);
		else if (S_ISDIR(st.st_mode)) {
			sub = openat(dfd, names[i], O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (sub == -1 || fstat(sub, &sst) != 0 ||
			    sst.st_dev != st.st_dev || sst.st_ino != st.st_ino) {
				if (sub != -1)
					close(sub);
				xasprintf(&x->error, "%s (at %s)",
				    PUBLISH_CHANGED, path);
				free(path);
				r = -1;
				break;
			}
			if (layer_resolve(x->base, path, le, &x->error) != 0) {
				close(sub);
				free(path);
				r = -1;
				break;
			}
			/*
			 * Opaque over nothing the base had (made, removed and
			 * made again by the session): it hides nothing the
			 * session saw, and merges with what others made there
			 * like any new directory.
			 */
			if (layer_fd_opaque(sub) && le->kind != LAYER_ABSENT)
				publish_add(&x->cap, path, PUBLISH_OPAQUE,
				    st.st_mode);
			else {
				if (le->kind != LAYER_DIR)
					publish_add(&x->cap, path,
					    PUBLISH_MKDIR, st.st_mode);
				else if ((le->st.st_mode & 07777) !=
				    (st.st_mode & 07777))
					publish_add(&x->cap, path,
					    PUBLISH_MKDIR, st.st_mode);
				else
					publish_add(&x->cap, path,
					    PUBLISH_PARENT, st.st_mode);
			}
			if (publish_capture_dir(x, sub, path) != 0)
				r = -1;
			close(sub);
		} else {
			x->cap.dropped = xreallocarray(x->cap.dropped,
			    x->cap.ndropped + 1, sizeof *x->cap.dropped);
			x->cap.dropped[x->cap.ndropped++] = xstrdup(path);
		}
		free(path);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(le);
	return (r);
}

/* A path's state in a stack or in the session, to compare and report. */
struct publish_state {
	enum layer_kind	 kind;
	mode_t		 mode;
	off_t		 size;
	dev_t		 dev;
	ino_t		 ino;
	int		 digested;
	char		 digest[65];
	char		 target[PATH_MAX];
	char		 file[PATH_MAX];	/* a layer's file, or "" */
	size_t		 layer;			/* where it was found */
	const char	*rel;			/* the path, relative */
};

/* The digest of a state's file, computed once, when first needed. */
static int
publish_state_digest(struct publish_ctx *x, struct publish_state *ps,
    char **error)
{
	struct stat	st;
	int		fd;

	if (ps->digested)
		return (0);
	if (ps->file[0] != '\0')
		fd = open(ps->file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
	else
		fd = tree_open(x->upperfd, ps->rel, O_RDONLY | O_NONBLOCK);
	if (fd == -1 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    tree_digest(fd, st.st_size, ps->digest) != 0) {
		xasprintf(error, ps->file[0] != '\0' ? "cannot read %s in the"
		    " layer stack: %s" : "cannot read %s in the session: %s",
		    ps->rel, fd == -1 || errno != 0 ? strerror(errno) :
		    "it is not a regular file");
		if (fd != -1)
			close(fd);
		return (-1);
	}
	close(fd);
	ps->digested = 1;
	return (0);
}

/* The state of a path in a stack (resolved through its layers). */
static int
publish_state(struct layer_stack *ls, const char *path,
    struct publish_state *ps, char **error)
{
	struct layer_entry	le;
	ssize_t			n;

	memset(ps, 0, sizeof *ps);
	ps->rel = path;
	if (layer_resolve(ls, path, &le, error) != 0)
		return (-1);
	ps->kind = le.kind;
	ps->layer = le.layer;
	ps->mode = le.st.st_mode & 07777;
	if (le.kind == LAYER_FILE) {
		ps->size = le.st.st_size;
		ps->dev = le.st.st_dev;
		ps->ino = le.st.st_ino;
		strlcpy(ps->file, le.path, sizeof ps->file);
	} else if (le.kind == LAYER_SYMLINK) {
		n = readlink(le.path, ps->target, sizeof ps->target - 1);
		if (n < 0)
			n = 0;
		ps->target[n] = '\0';
	}
	return (0);
}

/* The slot of path in a memo table (allocated on first use), or NULL. */
static struct publish_memo *
publish_memo_slot(struct publish_memo **table, const char *path)
{
	struct publish_memo	*m;
	uint32_t		 h;
	size_t			 i;

	if (*table == NULL)
		*table = xcalloc(PUBLISH_MEMO_SLOTS, sizeof **table);
	h = util_hash(path, 0);
	for (i = 0; i < PUBLISH_MEMO_SLOTS; i++) {
		m = &(*table)[(h + i) & (PUBLISH_MEMO_SLOTS - 1)];
		if (m->path == NULL || strcmp(m->path, path) == 0)
			return (m);
	}
	return (NULL);
}

/* The state of a path in the base, resolved once per helper. */
static int
publish_base_state(struct publish_ctx *x, const char *path,
    struct publish_state *ps, char **error)
{
	struct publish_memo	*m;

	m = publish_memo_slot(&x->memo, path);
	if (m != NULL && m->path != NULL) {
		memset(ps, 0, sizeof *ps);
		ps->rel = path;
		ps->kind = m->kind;
		ps->layer = m->layer;
		ps->mode = m->mode;
		ps->size = m->size;
		ps->dev = m->dev;
		ps->ino = m->ino;
		strlcpy(ps->file, m->file, sizeof ps->file);
		strlcpy(ps->target, m->target, sizeof ps->target);
		return (0);
	}
	if (publish_state(x->base, path, ps, error) != 0)
		return (-1);
	if (m != NULL && x->nmemo < PUBLISH_MEMO_SLOTS / 2) {
		m->path = xstrdup(path);
		m->kind = ps->kind;
		m->layer = ps->layer;
		m->mode = ps->mode;
		m->size = ps->size;
		m->dev = ps->dev;
		m->ino = ps->ino;
		m->file = xstrdup(ps->file);
		m->target = xstrdup(ps->target);
		x->nmemo++;
	}
	return (0);
}

/*
 * The state of a path in the head, b being its state in the base: the
 * same when the head is the base with layers on top (x->newer of them)
 * of which none holds anything at the path or above it, the common case;
 * else resolved through the head's layers.
 */
static int
publish_head_state(struct publish_ctx *x, const char *path,
    struct publish_state *b, struct publish_state *h, char **error)
{
	if (x->newer >= 0 && !layer_touches(x->head, (size_t)x->newer,
	    path)) {
		*h = *b;
		return (0);
	}
	return (publish_state(x->head, path, h, error));
}

/*
 * What path was in the head before this publish, for its blame record
 * (audit_prepare): through the base's states when the layers on top of
 * it hold nothing there; NULL when it must be resolved through the head.
 */
static const struct layer_entry *
publish_prev(struct publish_ctx *x, const char *path, struct layer_entry *le)
{
	struct publish_state	*b;
	const struct layer_entry *r = NULL;
	char			*error = NULL;

	if (x->newer < 0 || layer_touches(x->head, (size_t)x->newer, path))
		return (NULL);
	b = xmalloc(sizeof *b);
	if (publish_base_state(x, path, b, &error) == 0) {
		memset(le, 0, sizeof *le);
		le->kind = b->kind;
		le->layer = b->layer + (size_t)x->newer;
		strlcpy(le->path, b->file, sizeof le->path);
		r = le;
	}
	free(error);	/* resolved the long way, then */
	free(b);
	return (r);
}

/* Read a symlink of the session's upper directory, beneath its top. */
static ssize_t
publish_upper_readlink(struct publish_ctx *x, const char *path, char *buf,
    size_t size)
{
	char		 dir[PATH_MAX];
	const char	*leaf;
	ssize_t		 n;
	int		 dfd;

	leaf = publish_split(path, dir, sizeof dir);
	if ((dfd = publish_open_dir(x->upperfd, dir)) == -1)
		return (-1);
	n = readlinkat(dfd, leaf, buf, size - 1);
	close(dfd);
	if (n >= 0)
		buf[n] = '\0';
	return (n);
}

/* The state of a path in the session's capture. */
static int
publish_session_state(struct publish_ctx *x, struct publish_entry *e,
    struct publish_state *ps, char **error)
{
	struct stat	st;
	int		fd;

	memset(ps, 0, sizeof *ps);
	ps->rel = e->path;
	switch (e->kind) {
	case PUBLISH_DELETE:
		ps->kind = LAYER_ABSENT;
		return (0);
	case PUBLISH_MKDIR:
	case PUBLISH_OPAQUE:
	case PUBLISH_PARENT:
		ps->kind = LAYER_DIR;
		ps->mode = e->mode;
		return (0);
	case PUBLISH_SYMLINK:
		ps->kind = LAYER_SYMLINK;
		if (publish_upper_readlink(x, e->path, ps->target,
		    sizeof ps->target) == -1) {
			xasprintf(error, "%s (at %s)", PUBLISH_CHANGED,
			    e->path);
			return (-1);
		}
		return (0);
	case PUBLISH_WRITE:
		ps->kind = LAYER_FILE;
		ps->mode = e->mode;
		if ((fd = tree_open(x->upperfd, e->path, O_PATH)) == -1 ||
		    fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			if (fd != -1)
				close(fd);
			xasprintf(error, "%s (at %s)", PUBLISH_CHANGED,
			    e->path);
			return (-1);
		}
		close(fd);
		ps->size = st.st_size;
		ps->dev = st.st_dev;
		ps->ino = st.st_ino;
		return (0);
	}
	return (0);
}

/* Whether two states are the same (digests only when they must be). */
static int
publish_state_eq(struct publish_ctx *x, struct publish_state *a,
    struct publish_state *b)
{
	if (a->kind != b->kind)
		return (0);
	switch (a->kind) {
	case LAYER_FILE:
		if (a->mode != b->mode || a->size != b->size)
			return (0);
		if (a->dev == b->dev && a->ino == b->ino)
			return (1);	/* the same file of the same layer */
		if (publish_state_digest(x, a, &x->error) != 0 ||
		    publish_state_digest(x, b, &x->error) != 0)
			return (-1);
		return (strcmp(a->digest, b->digest) == 0);
	case LAYER_SYMLINK:
		return (strcmp(a->target, b->target) == 0);
	default:
		return (1);
	}
}

static cJSON *
publish_state_json(struct publish_ctx *x, struct publish_state *ps)
{
	cJSON	*o;
	char	*error = NULL;

	o = cJSON_CreateObject();
	switch (ps->kind) {
	case LAYER_ABSENT:
		cJSON_AddStringToObject(o, "kind", "absent");
		break;
	case LAYER_FILE:
		cJSON_AddStringToObject(o, "kind", "file");
		cJSON_AddNumberToObject(o, "size", (double)ps->size);
		cJSON_AddNumberToObject(o, "mode", ps->mode);
		if (publish_state_digest(x, ps, &error) == 0)
			cJSON_AddStringToObject(o, "sha256", ps->digest);
		free(error);
		break;
	case LAYER_DIR:
		cJSON_AddStringToObject(o, "kind", "directory");
		break;
	case LAYER_SYMLINK:
		cJSON_AddStringToObject(o, "kind", "symlink");
		cJSON_AddStringToObject(o, "target", ps->target);
		break;
	case LAYER_OTHER:
		cJSON_AddStringToObject(o, "kind", "other");
		break;
	}
	return (o);
}

static void
publish_conflict(struct publish_ctx *x, const char *path, const char *why,
    struct publish_state *b, struct publish_state *h,
    struct publish_state *s)
{
	cJSON	*c;

	if (cJSON_GetArraySize(x->conflicts) >= PUBLISH_PATHS_REPORTED)
		return;
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "path", path);
	cJSON_AddStringToObject(c, "reason", why);
	if (b != NULL)
		cJSON_AddItemToObject(c, "base", publish_state_json(x, b));
	if (h != NULL)
		cJSON_AddItemToObject(c, "head", publish_state_json(x, h));
	if (s != NULL)
		cJSON_AddItemToObject(c, "session", publish_state_json(x, s));
	cJSON_AddItemToArray(x->conflicts, c);
}

/*
 * Whether any layer published since the base holds something below dir
 * (so a deletion or a replacement of dir by the session would lose it).
 */
static int
publish_newer_below(struct publish_ctx *x, const char *dir)
{
	struct stat	 st;
	DIR		*d;
	struct dirent	*de;
	char		 full[PATH_MAX];
	size_t		 i, j;
	int		 found = 0;

	for (i = 0; i < x->head->n && !found; i++) {
		for (j = 0; j < x->base->n; j++) {
			if (strcmp(x->head->ids[i], x->base->ids[j]) == 0)
				break;
		}
		if (j < x->base->n)
			continue;	/* not newer than the base */
		snprintf(full, sizeof full, "%s/%s", x->head->paths[i], dir);
		if (lstat(full, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		if ((d = opendir(full)) == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0) {
				found = 1;
				break;
			}
		}
		closedir(d);
	}
	return (found);
}

/* Load the .gitignore files of the base that govern a path. */
static void
publish_gitignore_load(struct publish_ctx *x, const char *path)
{
	struct publish_memo	*m;
	struct layer_entry	 le;
	char			*dir, *slash, *gi, *text, *cause = NULL;
	size_t			 len;

	dir = xstrdup(path);
	for (;;) {
		slash = strrchr(dir, '/');
		if (slash == NULL)
			dir[0] = '\0';
		else
			*slash = '\0';
		/* Read already, and so are the ones above it. */
		m = publish_memo_slot(&x->gidirs, dir);
		if (m != NULL && m->path != NULL)
			break;
		if (m != NULL && x->ngidirs < PUBLISH_MEMO_SLOTS / 2) {
			m->path = xstrdup(dir);
			x->ngidirs++;
		}
		xasprintf(&gi, "%s%s.gitignore", dir, *dir ? "/" : "");
		if (layer_resolve(x->base, gi, &le, &cause) == 0 &&
		    le.kind == LAYER_FILE &&
		    (text = util_read_file(le.path, 1024 * 1024, &len)) != NULL) {
			gitignore_add(x->gi, dir, text, len);
			free(text);
		}
		free(cause);
		cause = NULL;
		free(gi);
		if (*dir == '\0')
			break;
	}
	free(dir);
}

/*
 * Check one changed path against the head. Returns 0 when it may be
 * published (maybe with merged text), 1 when it conflicts, -1 on error.
 */
static int
publish_check(struct publish_ctx *x, struct publish_entry *e)
{
	struct publish_state	 b, h, s;
	char			*anc, *slash, *bt, *ht, *st, *out, *why;
	size_t			 bl, hl, sl, ol, line = 0;
	int			 r, isdir;

	isdir = e->kind == PUBLISH_MKDIR || e->kind == PUBLISH_OPAQUE ||
	    e->kind == PUBLISH_PARENT;
	if (gitignore_ignored(x->gi, e->path, isdir))
		return (0);		/* last writer wins */

	/* An ancestor changed kind since the base: the tree moved away. */
	anc = xstrdup(e->path);
	while ((slash = strrchr(anc, '/')) != NULL) {
		*slash = '\0';
		if (publish_base_state(x, anc, &b, &x->error) != 0 ||
		    publish_head_state(x, anc, &b, &h, &x->error) != 0) {
			free(anc);
			return (-1);
		}
		/*
		 * A directory both sides created (the session's is one: the
		 * path lies under it) merges entry by entry.
		 */
		if (b.kind != h.kind && (b.kind != LAYER_ABSENT ||
		    h.kind != LAYER_DIR)) {
			publish_conflict(x, e->path, "a parent directory"
			    " changed since the session began", &b, &h, NULL);
			free(anc);
			return (1);
		}
	}
	free(anc);

	if (e->kind == PUBLISH_PARENT)
		return (0);
	if ((e->kind == PUBLISH_DELETE || e->kind == PUBLISH_OPAQUE) &&
	    publish_newer_below(x, e->path)) {
		publish_conflict(x, e->path, "the session removed or replaced"
		    " a directory the other side changed inside", NULL, NULL,
		    NULL);
		return (1);
	}
	if (publish_base_state(x, e->path, &b, &x->error) != 0 ||
	    publish_head_state(x, e->path, &b, &h, &x->error) != 0 ||
	    publish_session_state(x, e, &s, &x->error) != 0)
		return (-1);
	if ((r = publish_state_eq(x, &b, &h)) != 0)
		return (r == 1 ? 0 : -1);	/* unchanged since the base */
	if ((r = publish_state_eq(x, &s, &h)) != 0)
		return (r == 1 ? 0 : -1);	/* both made the same change */
	if (b.kind == LAYER_ABSENT && h.kind == LAYER_DIR &&
	    s.kind == LAYER_DIR && e->kind == PUBLISH_MKDIR)
		return (0);		/* both created the directory */
	if (b.kind == LAYER_FILE && h.kind == LAYER_FILE &&
	    s.kind == LAYER_FILE) {
		bt = util_read_file(b.file, PUBLISH_MERGE_MAX, &bl);
		ht = util_read_file(h.file, PUBLISH_MERGE_MAX, &hl);
		st = tree_read(x->upperfd, e->path, PUBLISH_MERGE_MAX, &sl);
		r = 1;
		if (bt != NULL && ht != NULL && st != NULL &&
		    merge_mergeable(bt, bl) && merge_mergeable(ht, hl) &&
		    merge_mergeable(st, sl)) {
			r = merge_text(bt, bl, ht, hl, st, sl, &out, &ol,
			    &line);
			if (r == 0) {
				e->merged = out;
				e->merged_len = ol;
			}
		}
		free(bt);
		free(ht);
		free(st);
		if (r == 1 && line > 0) {
			xasprintf(&why, "both sides changed line %zu of the"
			    " base differently", line);
			publish_conflict(x, e->path, why, &b, &h, &s);
			free(why);
		} else if (r == 1)
			publish_conflict(x, e->path, "both sides changed it,"
			    " and it cannot be merged line by line (too large,"
			    " or not UTF-8 text)", &b, &h, &s);
		return (r);
	}
	publish_conflict(x, e->path, "changed on both sides", &b, &h, &s);
	return (1);
}

/* Remove overlayfs's own attributes from a file we publish. */
static void
publish_strip_xattrs(int fd)
{
	char	 names[4096], *p;
	ssize_t	 n;

	if ((n = flistxattr(fd, names, sizeof names)) <= 0)
		return;
	for (p = names; p < names + n; p += strlen(p) + 1) {
		if (strncmp(p, "trusted.overlay.", 16) == 0)
			fremovexattr(fd, p);
	}
}

/* Write a new file of the layer; its descriptor, or -1. */
static int
publish_write_file(int dfd, const char *leaf, const char *buf, size_t len,
    mode_t mode)
{
	int	fd;

	if ((fd = openat(dfd, leaf, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode)) == -1)
		return (-1);
	if (job_write_all(fd, buf, len) != 0 || fchmod(fd, mode) != 0) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/*
 * Put the session's file at path into the layer's directory dfd: the
 * inode opened beneath the upper directory and found regular, never a
 * path; linked when the session's /workspace is sealed (no writer can
 * change it any more), copied otherwise. Its descriptor, or -1.
 */
static int
publish_link_file(struct publish_ctx *x, const char *path, int dfd,
    const char *leaf)
{
	struct stat	st;
	int		fd, copy;

	if ((fd = tree_open(x->upperfd, path, O_RDONLY | O_NONBLOCK)) == -1)
		return (-1);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return (-1);
	}
	if (x->a->copy) {
		copy = tree_copy_file(fd, &st, dfd, leaf);
		close(fd);
		return (copy);
	}
	if (linkat(fd, "", dfd, leaf, AT_EMPTY_PATH) != 0) {
		close(fd);
		return (-1);
	}
	publish_strip_xattrs(fd);
	return (fd);
}

/*
 * Durability. The sandbox's disk is ext4 as we make it (data=ordered,
 * barriers, no fast commit), whose journal commits every change to its
 * names in order, all those made before a commit in it. So a layer costs
 * one commit:
 * - a file of the layer (the session's inode, linked, or a copy) has its
 *   data written out, begun as it is linked and waited for, as are the
 *   two records' (meta, next manifest) written beside it in staging;
 * - under the writer lock the layer and its meta are renamed into
 *   layers/ (where no manifest names them yet) and the next manifest to
 *   stack/manifest.next, and one fsync of the stack's directory commits
 *   the journal: its commit flushes the device's cache first and holds
 *   all of it;
 * - only then is manifest.next renamed over manifest.json, which makes
 *   the layer visible, durable already. That rename is not waited for:
 *   the next commit holds it, and a restart after a crash puts a
 *   durable manifest.next that follows the head in place first
 *   (layer_roll_forward), so the publish answered stays published.
 * Whatever else is dirty on the disk (other sessions' files, transcripts,
 * telemetry) is not written for it, as syncfs would. A layer of more
 * files than PUBLISH_FLUSH_MAX, or on a disk not made so (the server
 * reads its superblock: disk_journal_whole), is made durable by syncfs
 * in staging, and its manifest's rename by an fsync of the stack's
 * directory before it answers.
 */
static int
publish_journaled(struct publish_ctx *x)
{
	return (x->a->journal && !x->flush_all);
}

static void
publish_flush_add(struct publish_ctx *x, int fd)
{
	if (x->flush_all || x->nflush == PUBLISH_FLUSH_MAX) {
		x->flush_all = 1;
		close(fd);
		return;
	}
	if (x->flush == NULL)
		x->flush = xcalloc(PUBLISH_FLUSH_MAX, sizeof *x->flush);
	/* Its writeback begins now, beside the build. */
	sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	x->flush[x->nflush++] = fd;
}

static void
publish_flush_forget(struct publish_ctx *x)
{
	size_t	i;

	for (i = 0; i < x->nflush; i++)
		close(x->flush[i]);
	x->nflush = 0;
	x->flush_all = 0;
}

/* A record written whole in staging, where nobody else writes. */
static int
publish_record(const char *path, const char *text)
{
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644)) == -1)
		return (-1);
	if (job_write_all(fd, text, strlen(text)) != 0) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/*
 * Write the layer's records (meta, then the next manifest) beside it in
 * staging and make the layer, its files' data and the records durable
 * (see above). 0, or -1 with errno.
 */
static int
publish_durable(struct publish_ctx *x, int sfd, const char *smeta,
    const char *meta, const char *smanifest, const char *manifest)
{
	size_t	i;
	int	mfd, nfd = -1, r = -1, save;

	if ((mfd = publish_record(smeta, meta)) == -1 ||
	    (nfd = publish_record(smanifest, manifest)) == -1)
		goto out;
	if (!publish_journaled(x)) {
		r = syncfs(sfd);
		goto out;
	}
	for (i = 0; i < x->nflush; i++) {
		if (sync_file_range(x->flush[i], 0, 0,
		    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		    SYNC_FILE_RANGE_WAIT_AFTER) != 0)
			goto out;
	}
	if (sync_file_range(mfd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
	    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0 ||
	    sync_file_range(nfd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE |
	    SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0)
		goto out;
	r = 0;
out:
	save = errno;
	if (mfd != -1)
		close(mfd);
	if (nfd != -1)
		close(nfd);
	errno = save;
	return (r);
}

/*
 * Build the layer in staging (a directory we made, open as sfd) from the
 * capture, every entry made beneath its parent's descriptor; feed the
 * layer's digest and prepare the blame records of the files written.
 */
static int
publish_build(struct publish_ctx *x, int sfd, const char *id,
    const char *owner, EVP_MD_CTX *md, unsigned long long *bytes)
{
	struct publish_entry	*e;
	struct layer_entry	 prev;
	struct stat		 st;
	char			 dir[PATH_MAX], last[PATH_MAX], target[PATH_MAX];
	char			 kind[2], size[32], digest[65], *line, *cause;
	const char		*leaf;
	size_t			 i;
	int			 dfd = -1, fd = -1;

	for (i = 0; i < x->cap.n; i++) {
		e = &x->cap.e[i];
		leaf = publish_split(e->path, dir, sizeof dir);
		/* Entries are sorted: siblings come one after another. */
		if (dfd == -1 || strcmp(dir, last) != 0) {
			if (dfd != -1)
				close(dfd);
			if ((dfd = publish_open_dir(sfd, dir)) == -1)
				goto fail;
			strlcpy(last, dir, sizeof last);
		}
		kind[1] = '\0';
		switch (e->kind) {
		case PUBLISH_PARENT:
		case PUBLISH_MKDIR:
		case PUBLISH_OPAQUE:
			if (mkdirat(dfd, leaf, e->mode) != 0 ||
			    (fd = openat(dfd, leaf, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC)) == -1 ||
			    fchmod(fd, e->mode) != 0)
				goto fail;
			if (e->kind == PUBLISH_OPAQUE && fsetxattr(fd,
			    "trusted.overlay.opaque", "y", 1, 0) != 0)
				goto fail;
			close(fd);
			fd = -1;
			if (e->kind == PUBLISH_PARENT)
				continue;	/* not a change */
			kind[0] = e->kind == PUBLISH_OPAQUE ? 'o' : 'd';
			break;
		case PUBLISH_DELETE:
			if (mknodat(dfd, leaf, S_IFCHR | 0, makedev(0, 0)) != 0)
				goto fail;
			kind[0] = 'w';
			break;
		case PUBLISH_SYMLINK:
			if (x->upperfd == -1 || publish_upper_readlink(x,
			    e->path, target, sizeof target) == -1 ||
			    symlinkat(target, dfd, leaf) != 0)
				goto fail;
			kind[0] = 'l';
			break;
		case PUBLISH_WRITE:
			if (e->merged != NULL)
				fd = publish_write_file(dfd, leaf, e->merged,
				    e->merged_len, e->mode);
			else
				fd = publish_link_file(x, e->path, dfd, leaf);
			if (fd == -1)
				goto fail;
			kind[0] = 'f';
			break;
		}
		EVP_DigestUpdate(md, kind, 2);
		EVP_DigestUpdate(md, e->path, strlen(e->path) + 1);
		if (kind[0] == 'f') {
			if (fstat(fd, &st) != 0 ||
			    tree_digest(fd, st.st_size, digest) != 0)
				goto fail;
			snprintf(size, sizeof size, "%lld",
			    (long long)st.st_size);
			EVP_DigestUpdate(md, size, strlen(size) + 1);
			EVP_DigestUpdate(md, digest, 65);
			*bytes += st.st_size;
			x->allocated += (unsigned long long)st.st_blocks * 512;
			cause = NULL;
			line = audit_prepare(x->a->sandbox, x->head, e->path,
			    e->prev != NULL ? e->prev : publish_prev(x,
			    e->path, &prev), id, owner, fd, &cause);
			if (line == NULL) {
				log_warnx("blame of %s: %s", e->path, cause);
				free(cause);
			} else {
				x->audit = xreallocarray(x->audit,
				    x->naudit + 1, sizeof *x->audit);
				x->audit[x->naudit].path = e->path;
				x->audit[x->naudit++].line = line;
			}
			publish_flush_add(x, fd);
			fd = -1;
		} else if (kind[0] == 'l')
			EVP_DigestUpdate(md, target, strlen(target) + 1);
	}
	if (dfd != -1)
		close(dfd);
	return (0);
fail:
	if (x->error == NULL)
		xasprintf(&x->error, "cannot build the layer entry %s: %s%s",
		    e->path, strerror(errno), x->upperfd != -1 ?
		    " (if the session's files changed meanwhile, publish"
		    " again)" : "");
	if (fd != -1)
		close(fd);
	if (dfd != -1)
		close(dfd);
	return (-1);
}

/* The digest recorded in a layer's meta file, or "". */
static void
publish_meta_digest(const char *sbox, const char *layer, char out[72])
{
	char	*path, *text;
	size_t	 len;
	cJSON	*m, *d;

	out[0] = '\0';
	path = state_where(STATE_LAYERS, sbox, "%s.meta.json",
	    layer);
	text = util_read_file(path, 65536, &len);
	free(path);
	if (text == NULL)
		return;
	m = cJSON_ParseWithLength(text, len);
	d = cJSON_GetObjectItem(m, "digest");
	if (cJSON_IsString(d))
		strlcpy(out, d->valuestring, 72);
	cJSON_Delete(m);
	free(text);
}

/* Move the items of extra into a report. */
static void
publish_extra(cJSON *rep, cJSON *extra)
{
	cJSON	*it;

	if (extra == NULL)
		return;
	while ((it = extra->child) != NULL) {
		cJSON_DetachItemViaPointer(extra, it);
		cJSON_AddItemToObject(rep, it->string, it);
	}
	cJSON_Delete(extra);
}

/*
 * The child's answer (taken over): a publish, nothing to publish or a
 * rejection are each an outcome of the publish, its result.
 */
static int
publish_report(int fd, cJSON *rep)
{
	int	r;

	r = job_answer(fd, rep, NULL);
	cJSON_Delete(rep);
	return (r);
}

static int
publish_reject(int fd, const char *class, const char *message,
    cJSON *details)
{
	cJSON	*rep;

	rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "reject_class", class);
	cJSON_AddStringToObject(rep, "message", message);
	cJSON_AddItemToObject(rep, "details", details != NULL ? details :
	    cJSON_CreateObject());
	return (publish_report(fd, rep));
}

/* Whether a path may be published (no .wh. names); 0 or a class. */
static const char *
publish_validate(struct publish_entry *e)
{
	const char	*p = e->path;

	if (!util_utf8_valid(e->path, strlen(e->path)))
		return ("invalid_path");
	while (p != NULL) {
		if (strncmp(p, ".wh.", 4) == 0)
			return ("protected_path");
		if ((p = strchr(p, '/')) != NULL)
			p++;
	}
	return (NULL);
}

/* Forget what an attempt on one head made (merges, blame records). */
static void
publish_attempt_clear(struct publish_ctx *x)
{
	size_t	i;

	for (i = 0; i < x->naudit; i++)
		free(x->audit[i].line);
	free(x->audit);
	x->audit = NULL;
	x->naudit = 0;
	if (x->upperfd != -1) {
		for (i = 0; i < x->cap.n; i++) {
			free(x->cap.e[i].merged);
			x->cap.e[i].merged = NULL;
		}
	}
	free(x->error);
	x->error = NULL;
	x->allocated = 0;
}

/* Remove what a commit left in staging. */
static void
publish_unstage(const char *staging, const char *smeta,
    const char *smanifest)
{
	tree_remove_path(staging);
	unlink(smeta);
	unlink(smanifest);
}

#define PUBLISH_RETRY	(-2)

/*
 * Build the captured changes into a layer on top of x->head and commit
 * it: everything but the renames happens before the writer lock is
 * taken (unless *lockp holds it already); under it, a head that moved
 * meanwhile means PUBLISH_RETRY (nothing left behind), else the renames,
 * the blame records, and the report. The lock is released here.
 */
static int
publish_commit(struct publish_ctx *x, int *lockp, int fd)
{
	const char		*sbox = x->a->sandbox, *owner = x->a->owner;
	struct layer_stack	*next, *now;
	EVP_MD_CTX		*md;
	unsigned char		 dig[32];
	unsigned int		 diglen;
	unsigned long long	 bytes = 0;
	char			 id[20], digest[72], head_digest[72], *staging;
	char			*dest, *meta, *smeta, *text, *mtext, *cause;
	char			*smanifest, *manifest, *stack, *next_path;
	const char		*what;
	cJSON			*rep, *list, *m;
	size_t			 i;
	int			 sfd = -1, r, same, moved;

	/*
	 * Locked until it is in place, or gone: a sweep leaves it be. A
	 * sweep that took the directory between its mkdir and its lock (it
	 * cannot tell it from a dead builder's) costs a new id, not the
	 * publish.
	 */
	for (i = 0; i < PUBLISH_CLAIM_TRIES; i++) {
		layer_new_id(x->head->version + 1, 'L', id);
		staging = state_where(STATE_STACK_STAGING, sbox, "%s", id);
		if (mkdir(staging, 0755) == 0 && (sfd = open(staging,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1 &&
		    layer_staging_claim(sfd, staging) == 0)
			break;
		if (sfd != -1)
			close(sfd);
		sfd = -1;
		free(staging);
		staging = NULL;
	}
	dest = state_where(STATE_LAYERS, sbox, "%s", id);
	meta = state_where(STATE_LAYERS, sbox, "%s.meta.json",
	    id);
	smeta = state_where(STATE_STACK_STAGING, sbox,
	    "%s.meta.json", id);
	smanifest = state_where(STATE_STACK_STAGING, sbox,
	    "%s.manifest.json", id);
	manifest = layer_manifest_path(sbox);
	next_path = layer_next_path(sbox);
	stack = state_where(STATE_STACK, sbox, NULL);
	next = NULL;

	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_DigestInit_ex", __func__);
	if (staging == NULL) {
		xasprintf(&x->error, "cannot make the layer in staging: %s",
		    strerror(errno));
		EVP_MD_CTX_free(md);
		r = publish_reject(fd, "storage_error", x->error, NULL);
		goto out;
	}
	if (publish_build(x, sfd, id, owner, md, &bytes) != 0) {
		EVP_MD_CTX_free(md);
		r = publish_reject(fd, x->upperfd != -1 ? "capture_failed" :
		    "storage_error", x->error, NULL);
		goto out;
	}
	EVP_DigestFinal_ex(md, dig, &diglen);
	EVP_MD_CTX_free(md);
	memcpy(digest, "sha256:", 7);
	util_hex(dig, sizeof dig, digest + 7);
	publish_meta_digest(sbox, x->head->ids[0], head_digest);
	same = strcmp(head_digest, digest) == 0;

	/*
	 * The meta file and the next manifest are written beside the layer
	 * in staging/, their data and the layer's written out before the
	 * lock is taken (publish_durable, and see above).
	 */
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "layer_id", id);
	cJSON_AddStringToObject(m, "owner", owner);
	cJSON_AddNumberToObject(m, "created_at_ms", (double)now_ms());
	cJSON_AddStringToObject(m, "digest", digest);
	cJSON_AddNumberToObject(m, "bytes", (double)bytes);
	cJSON_AddNumberToObject(m, "allocated_bytes", (double)x->allocated);
	cJSON_AddNumberToObject(m, "changed_paths", (double)x->changed);
	text = util_json_print(m);
	cJSON_Delete(m);
	next = xcalloc(1, sizeof *next);
	next->version = x->head->version + 1;
	next->n = x->head->n + 1;
	next->ids = xcalloc(next->n, sizeof *next->ids);
	next->paths = xcalloc(next->n, sizeof *next->paths);
	next->ids[0] = xstrdup(id);
	next->paths[0] = xstrdup(dest);
	for (i = 0; i < x->head->n; i++) {
		next->ids[i + 1] = xstrdup(x->head->ids[i]);
		next->paths[i + 1] = xstrdup(x->head->paths[i]);
	}
	mtext = layer_stack_text(next);
	if (!same && publish_durable(x, sfd, smeta, text, smanifest,
	    mtext) != 0) {
		free(text);
		free(mtext);
		xasprintf(&x->error, "cannot write the layer's records: %s",
		    strerror(errno));
		r = publish_reject(fd, "storage_error", x->error, NULL);
		goto out;
	}
	free(text);
	free(mtext);

	/* Under the lock: has the head moved since we read it? */
	if (*lockp == -1 && (*lockp = layer_lock(sbox)) == -1) {
		r = publish_reject(fd, "storage_error", "cannot take the"
		    " stack's writer lock", NULL);
		goto out;
	}
	if ((now = layer_stack_read(sbox, &x->error)) == NULL) {
		r = publish_reject(fd, "storage_error", x->error, NULL);
		goto out;
	}
	moved = now->version != x->head->version;
	layer_stack_free(now);
	if (moved) {
		r = PUBLISH_RETRY;
		goto out;
	}
	if (same) {
		/* The same layer as the head's top: nothing to publish. */
		rep = cJSON_CreateObject();
		cJSON_AddNullToObject(rep, "publish");
		cJSON_AddTrueToObject(rep, "same_as_head");
		publish_extra(rep, x->extra);
		x->extra = NULL;
		r = publish_report(fd, rep);
		goto out;
	}
	/* The server that asked is gone: nobody would answer for it. */
	if (!job_parent_alive()) {
		r = 1;
		goto out;
	}
	what = NULL;
	if (rename(staging, dest) != 0 || rename(smeta, meta) != 0)
		what = "cannot move the layer into place";
	else {
		close(sfd);
		sfd = -1;
	}
	if (what == NULL && publish_journaled(x) &&
	    (rename(smanifest, next_path) != 0 || (sfd = open(stack,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 || fsync(sfd) != 0))
		what = "cannot make the layer durable";
	if (what == NULL && rename(publish_journaled(x) ? next_path :
	    smanifest, manifest) != 0)
		what = "cannot commit the manifest";
	if (what != NULL) {
		/*
		 * Nothing of it is visible: what was moved goes, and a next
		 * manifest made durable goes durably, so that no restart
		 * puts in place a publish that answered an error.
		 */
		xasprintf(&x->error, "%s: %s", what, strerror(errno));
		if (unlink(next_path) == 0 && sfd != -1)
			fsync(sfd);
		unlink(meta);
		tree_remove_path(dest);
		r = publish_reject(fd, "storage_error", x->error, NULL);
		goto out;
	}
	/* Renamed, the manifest is what every reader sees: published. */
	if (!publish_journaled(x) && ((sfd = open(stack, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) == -1 || fsync(sfd) != 0))
		log_warnx("sandbox %s: the publish of %s may not survive a"
		    " crash", sbox, id);
	for (i = 0; i < x->naudit; i++) {
		cause = NULL;
		if (audit_append(sbox, x->audit[i].path, x->audit[i].line,
		    &cause) != 0) {
			log_warnx("blame of %s: %s", x->audit[i].path, cause);
			free(cause);
		}
	}
	layer_unlock(*lockp);
	*lockp = -1;

	rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "layer_id", id);
	cJSON_AddNumberToObject(rep, "manifest_version", next->version);
	cJSON_AddNumberToObject(rep, "stack_depth", (double)(next->n - 1));
	list = cJSON_AddArrayToObject(rep, "changed_paths");
	for (i = 0; i < x->cap.n && cJSON_GetArraySize(list) <
	    PUBLISH_PATHS_REPORTED; i++) {
		if (x->cap.e[i].kind != PUBLISH_PARENT)
			cJSON_AddItemToArray(list,
			    cJSON_CreateString(x->cap.e[i].path));
	}
	if (x->changed > PUBLISH_PATHS_REPORTED)
		cJSON_AddNumberToObject(rep, "changed_path_count",
		    (double)x->changed);
	if (x->cap.ndropped > 0) {
		list = cJSON_AddArrayToObject(rep, "dropped");
		for (i = 0; i < x->cap.ndropped; i++)
			cJSON_AddItemToArray(list,
			    cJSON_CreateString(x->cap.dropped[i]));
	}
	publish_extra(rep, x->extra);
	x->extra = NULL;
	r = publish_report(fd, rep);
	/* Committed: nothing of it is left in staging. */
	free(staging);
	staging = NULL;
out:
	publish_flush_forget(x);
	if (staging != NULL)
		publish_unstage(staging, smeta, smanifest);
	if (sfd != -1)
		close(sfd);
	if (*lockp != -1) {
		layer_unlock(*lockp);
		*lockp = -1;
	}
	layer_stack_free(next);
	free(staging);
	free(dest);
	free(meta);
	free(smeta);
	free(smanifest);
	free(manifest);
	free(next_path);
	free(stack);
	return (r);
}

/*
 * Commit on the head as it is now, and again each time another publish
 * commits first; from the PUBLISH_TRIES'th attempt on, the writer lock
 * is taken before the head is read, so a busy stack cannot starve this
 * one. prepare readies each attempt on x->head: 0 to commit, or -1
 * once it has reported (the child's exit code in *code).
 */
static int
publish_attempts(struct publish_ctx *x, int fd, int (*prepare)(struct
    publish_ctx *, int, void *, int *), void *arg)
{
	const char	*sbox = x->a->sandbox;
	int		 lock = -1, attempt, r, code;

	for (attempt = 0;; attempt++) {
		if (attempt >= PUBLISH_TRIES && lock == -1 &&
		    (lock = layer_lock(sbox)) == -1)
			return (publish_reject(fd, "storage_error", "cannot"
			    " take the stack's writer lock", NULL));
		publish_attempt_clear(x);
		/* What was held stays held (layer_hold). */
		layer_stack_free(x->head);
		if ((x->head = layer_stack_read(sbox, &x->error)) == NULL) {
			layer_unlock(lock);
			return (publish_reject(fd, "storage_error", x->error,
			    NULL));
		}
		/*
		 * Its layers, held until we exit; one reclaimed since the
		 * read (a squash replaced it) means a newer head: again.
		 * Under the writer lock nothing is reclaimed.
		 */
		if ((r = layer_hold(x->head, &x->hold, &x->error)) == 1)
			continue;
		/* The head as the base with layers on top: how many. */
		x->newer = x->fixed ? layer_stack_above(x->head, x->base) :
		    -1;
		if (r == -1) {
			layer_unlock(lock);
			return (publish_reject(fd, "storage_error", x->error,
			    NULL));
		}
		if (prepare(x, fd, arg, &code) != 0) {
			layer_unlock(lock);
			return (code);
		}
		if ((r = publish_commit(x, &lock, fd)) != PUBLISH_RETRY)
			return (r);
	}
}

/*
 * Check the capture against the head (when it moved since the base):
 * 0 when it may be published, -1 once a conflict (*code 0) or an error
 * (*code 1) is reported.
 */
static int
publish_check_all(struct publish_ctx *x, int fd, void *arg, int *code)
{
	cJSON	*details;
	size_t	 i;

	if (x->head->version == x->base->version)
		return (0);
	if (x->gi == NULL) {
		x->gi = gitignore_new();
		for (i = 0; i < x->cap.n; i++)
			publish_gitignore_load(x, x->cap.e[i].path);
	}
	cJSON_Delete(x->conflicts);
	x->conflicts = cJSON_CreateArray();
	for (i = 0; i < x->cap.n; i++) {
		if (publish_check(x, &x->cap.e[i]) == -1) {
			publish_reject(fd, x->upperfd != -1 ?
			    "capture_failed" : "storage_error", x->error,
			    NULL);
			*code = 1;
			return (-1);
		}
	}
	if (cJSON_GetArraySize(x->conflicts) == 0)
		return (0);
	details = cJSON_CreateObject();
	cJSON_AddItemToObject(details, "conflicts", x->conflicts);
	x->conflicts = NULL;
	cJSON_AddNumberToObject(details, "base_version", x->base->version);
	cJSON_AddNumberToObject(details, "head_version", x->head->version);
	publish_reject(fd, "source_conflict", "the session's changes conflict"
	    " with changes published since it began", details);
	*code = 0;
	return (-1);
}

/* The child: capture, validate, then check and commit on the head. */
static int
publish_child(const struct publish_args *arg, int fd)
{
	struct publish_ctx	 x;
	struct publish_entry	*e;
	const struct publish_args *a = arg;
	const char		*class;
	char			*msg;
	cJSON			*rep, *list, *details;
	size_t			 i;

	memset(&x, 0, sizeof x);
	x.a = a;
	x.base = a->base;
	x.fixed = 1;	/* its base states are kept across attempts */
	x.upperfd = -1;
	if (publish_confined(&x.error) != 0) {
		xasprintf(&msg, "cannot confine the publishing process: %s",
		    x.error);
		return (publish_reject(fd, "storage_error", msg, NULL));
	}
	layer_dirs_keep();
	if ((x.upperfd = open(a->upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		xasprintf(&msg, "cannot read the session's changes: %s",
		    strerror(errno));
		return (publish_reject(fd, "capture_failed", msg, NULL));
	}
	if (publish_capture_dir(&x, x.upperfd, "") != 0)
		return (publish_reject(fd, "capture_failed", x.error, NULL));
	for (i = 0; i < x.cap.n; i++) {
		e = &x.cap.e[i];
		if ((class = publish_validate(e)) != NULL) {
			details = cJSON_CreateObject();
			cJSON_AddStringToObject(details, "path",
			    util_utf8_valid(e->path, strlen(e->path)) ?
			    e->path : "(not UTF-8)");
			return (publish_reject(fd, class, strcmp(class,
			    "protected_path") == 0 ? "a path component starts"
			    " with .wh., which the layer format reserves" :
			    "a path is not UTF-8", details));
		}
		if (e->kind != PUBLISH_PARENT)
			x.changed++;
	}
	if (x.changed == 0) {
		rep = cJSON_CreateObject();
		cJSON_AddNullToObject(rep, "publish");
		list = cJSON_AddArrayToObject(rep, "dropped");
		for (i = 0; i < x.cap.ndropped; i++)
			cJSON_AddItemToArray(list,
			    cJSON_CreateString(x.cap.dropped[i]));
		return (publish_report(fd, rep));
	}
	return (publish_attempts(&x, fd, publish_check_all, NULL));
}

/* A refusal of a sessionless write or edit. */
static int
publish_file_refuse(int fd, struct cause *err)
{
	return (job_answer(fd, NULL, err));
}

/* A sessionless write or edit, and its path as the head has it. */
struct publish_file_attempt {
	const struct publish_file_args	*f;
	struct layer_entry		 le;
};

/*
 * One attempt of a sessionless write or edit on x->head: the new content
 * (an edit applies to the path's content in that head) and the entries
 * of a one-file layer with the parents it needs. Returns 0, or -1 after
 * reporting a refusal.
 */
static int
publish_file_prepare(struct publish_ctx *x, int fd, void *arg, int *code)
{
	struct publish_file_attempt	*fa = arg;
	const struct publish_file_args	*f = fa->f;
	struct layer_entry		*le = &fa->le;
	struct publish_entry		*e;
	struct cause		 err;
	struct files_edit_result	 res;
	struct layer_entry		 pe;
	struct stat			 st;
	const char			*buf;
	char				*prefix, *p, *slash, *old;
	size_t				 len, oldlen, i;
	mode_t				 mode = 0644;
	int				 ffd;

	*code = 0;		/* a refusal is an answer */
	x->base = x->head;
	memset(&err, 0, sizeof err);
	memset(&res, 0, sizeof res);
	for (i = 0; i < x->cap.n; i++) {
		if (x->cap.e[i].kind == PUBLISH_WRITE &&
		    x->cap.e[i].merged != f->content)
			free(x->cap.e[i].merged);
		free(x->cap.e[i].path);
	}
	x->cap.n = 0;
	x->changed = 1;
	if (files_snapshot_find(x->head, f->path, le, &err) != 0) {
		publish_file_refuse(fd, &err);
		return (-1);
	}
	if (f->kind == FILES_EDIT) {
		if (le->kind != LAYER_FILE) {
			cause_set(&err, CAUSE_NOT_FOUND, "path", f->path, "no"
			    " file %s in the workspace", f->path);
			publish_file_refuse(fd, &err);
			return (-1);
		}
		if ((ffd = open(le->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC)) == -1 || fstat(ffd, &st) != 0) {
			cause_set(&err, CAUSE_FAILED, NULL, NULL, "cannot read"
			    " %s: %s", f->path, strerror(errno));
			if (ffd != -1)
				close(ffd);
			publish_file_refuse(fd, &err);
			return (-1);
		}
		old = files_read_text(ffd, &st, FILES_EDIT_MAX, f->path,
		    &oldlen, &err);
		close(ffd);
		if (old == NULL) {
			publish_file_refuse(fd, &err);
			return (-1);
		}
		if (files_edit_apply(old, oldlen, f->edits, f->path, &res,
		    &err) != 0) {
			free(old);
			publish_file_refuse(fd, &err);
			return (-1);
		}
		free(old);
		buf = res.out;
		len = res.outlen;
	} else {
		buf = f->content;
		len = f->len;
	}
	if (le->kind == LAYER_FILE)
		mode = le->st.st_mode & 07777;

	/* The parents: kept as they are, or made. */
	prefix = xstrdup(f->path);
	for (p = prefix, i = 0; (slash = strchr(p, '/')) != NULL;
	    p = slash + 1, i++) {
		*slash = '\0';
		/* The path's resolution found the first parents. */
		if (i < le->nparent)
			publish_add(&x->cap, prefix, PUBLISH_PARENT,
			    le->parent_mode[i]);
		else if (le->nparent < LAYER_PARENTS_MAX) {
			/* Missing from here down. */
			publish_add(&x->cap, prefix, PUBLISH_MKDIR, 0755);
			x->changed++;
		} else if (layer_resolve(x->head, prefix, &pe,
		    &x->error) != 0) {
			free(prefix);
			free(res.out);
			publish_reject(fd, "storage_error", x->error, NULL);
			return (-1);
		} else
			publish_add(&x->cap, prefix, PUBLISH_PARENT,
			    pe.st.st_mode);
		*slash = '/';
	}
	free(prefix);
	publish_add(&x->cap, f->path, PUBLISH_WRITE, mode);
	e = &x->cap.e[x->cap.n - 1];
	e->merged = (char *)buf;
	e->merged_len = len;
	e->prev = le;

	cJSON_Delete(x->extra);
	x->extra = cJSON_CreateObject();
	if (f->kind == FILES_EDIT) {
		cJSON_AddStringToObject(x->extra, "type", "edit");
		cJSON_AddNumberToObject(x->extra, "edits_applied",
		    (double)res.applied);
		cJSON_AddNumberToObject(x->extra, "replacements",
		    (double)res.replacements);
	} else
		cJSON_AddStringToObject(x->extra, "type", le->kind ==
		    LAYER_FILE ? "update" : "create");
	cJSON_AddNumberToObject(x->extra, "bytes_written", (double)len);
	return (0);
}

/*
 * The child of a sessionless file_write or file_edit: apply the change to
 * the path's latest content and commit it as a one-file layer (with the
 * parent directories it needs); when another publish commits first, the
 * change is applied again to what it published, so that concurrent
 * writers never lose an update.
 */
static int
publish_file_child(const struct publish_file_args *arg, int fd)
{
	struct publish_file_attempt	 fa;
	const struct publish_file_args	*f = arg;
	struct publish_args		 a;
	struct publish_ctx		 x;
	struct cause		 err;
	char				*msg;

	memset(&x, 0, sizeof x);
	memset(&err, 0, sizeof err);
	memset(&a, 0, sizeof a);
	memset(&fa, 0, sizeof fa);
	a.sandbox = f->sandbox;
	a.upper = "";
	a.owner = f->owner;
	a.journal = f->journal;
	x.a = &a;
	x.upperfd = -1;
	fa.f = f;
	if (f->kind == FILES_EDIT && files_edits_check(f->edits, &err) != 0)
		return (publish_file_refuse(fd, &err));
	if (publish_confined(&x.error) != 0) {
		xasprintf(&msg, "cannot confine the publishing process: %s",
		    x.error);
		return (publish_reject(fd, "storage_error", msg, NULL));
	}
	layer_dirs_keep();
	return (publish_attempts(&x, fd, publish_file_prepare, &fa));
}

/*
 * The children as the sandbox's forker runs them (job_helper_msg): the
 * arguments arrive as bytes, made by publish_session_msg and
 * publish_file_msg below.
 */
static int
publish_child_msg(const char *msg, size_t len, int fd)
{
	struct publish_args	 a;
	cJSON			*o, *v;
	char			*cause = NULL;

	memset(&a, 0, sizeof a);
	if ((o = cJSON_ParseWithLength(msg, len)) == NULL)
		return (publish_reject(fd, "storage_error", "the publish's"
		    " arguments are malformed", NULL));
	a.sandbox = cJSON_GetStringValue(cJSON_GetObjectItem(o, "sandbox"));
	a.upper = cJSON_GetStringValue(cJSON_GetObjectItem(o, "upper"));
	a.owner = cJSON_GetStringValue(cJSON_GetObjectItem(o, "owner"));
	a.copy = cJSON_IsTrue(cJSON_GetObjectItem(o, "copy"));
	a.journal = cJSON_IsTrue(cJSON_GetObjectItem(o, "journal"));
	v = cJSON_GetObjectItem(o, "version");
	if (a.sandbox == NULL || a.upper == NULL || a.owner == NULL ||
	    !cJSON_IsNumber(v) || (a.base = layer_stack_from_json(
	    v->valueint, cJSON_GetObjectItem(o, "layers"), &cause)) == NULL)
		return (publish_reject(fd, "storage_error", "the publish's"
		    " arguments are malformed", NULL));
	return (publish_child(&a, fd));
}

static int
publish_file_child_msg(const char *msg, size_t len, int fd)
{
	struct publish_file_args	 f;
	size_t				 jlen = strlen(msg);
	cJSON				*o, *v;

	memset(&f, 0, sizeof f);
	if (jlen >= len || (o = cJSON_ParseWithLength(msg, jlen)) == NULL)
		return (publish_reject(fd, "storage_error", "the write's"
		    " arguments are malformed", NULL));
	f.sandbox = cJSON_GetStringValue(cJSON_GetObjectItem(o, "sandbox"));
	f.path = cJSON_GetStringValue(cJSON_GetObjectItem(o, "path"));
	f.owner = cJSON_GetStringValue(cJSON_GetObjectItem(o, "owner"));
	f.journal = cJSON_IsTrue(cJSON_GetObjectItem(o, "journal"));
	v = cJSON_GetObjectItem(o, "kind");
	f.edits = cJSON_GetObjectItem(o, "edits");
	if (cJSON_IsNull(f.edits))
		f.edits = NULL;
	f.content = msg + jlen + 1;
	f.len = len - jlen - 1;
	if (cJSON_IsFalse(cJSON_GetObjectItem(o, "content")))
		f.content = NULL;
	if (f.sandbox == NULL || f.path == NULL || f.owner == NULL ||
	    !cJSON_IsNumber(v))
		return (publish_reject(fd, "storage_error", "the write's"
		    " arguments are malformed", NULL));
	f.kind = v->valueint;
	return (publish_file_child(&f, fd));
}

/* ---- the server's side ---- */

/* Told of every layer published (squash.c's autosquash). */
static void	(*publish_layer_fn)(const char *, const char *, cJSON *);

struct publish_job {
	char		*sandbox;
	char		*tenant;
	char		*owner;
	char		*session;	/* named by a rejection, or NULL */
	char		*path;		/* a sessionless write's */
	struct tspan	*span;
	int		 file;		/* a sessionless write or edit */
	publish_cb	 cb;
	void		*arg;
};

static void
publish_job_free(struct publish_job *pj)
{
	free(pj->sandbox);
	free(pj->tenant);
	free(pj->owner);
	free(pj->session);
	free(pj->path);
	free(pj);
}

/*
 * Call fn(sandbox, tenant, report) after each layer published: the
 * report says how deep the stack has grown.
 */
void
publish_on_layer(void (*fn)(const char *, const char *, cJSON *))
{
	publish_layer_fn = fn;
}

/*
 * A rejection, as a cause: operation_failed with the reject class and
 * its details (taken over; NULL for none), and key: value first when
 * key is not NULL.
 */
void
publish_rejection(struct cause *cause, const char *key, const char *value,
    const char *class, const char *message, cJSON *details)
{
	cause_set(cause, CAUSE_FAILED, key, value, "%s", message);
	cause_detail(cause, "publish_reject_class", class);
	cause_detail_item(cause, "publish_reject_details", details != NULL ?
	    details : cJSON_CreateObject());
}

/*
 * The outcome of a publish, from its child's report: the result
 *
 *	{"publish": {"layer_id", "manifest_version", "changed_paths"[,
 *	 "changed_path_count"]} or null when nothing was published,
 *	 "publish_dropped": [what was not published] when there is some,
 *	 and a sessionless write's fields (type, path, edits_applied,
 *	 replacements, bytes_written)}
 *
 * or a rejection (publish_rejection). A layer published is told
 * (layer.published, and to the function publish_on_layer set: an
 * autosquash may start).
 */
static cJSON *
publish_outcome(struct publish_job *pj, cJSON *rep, struct cause *cause)
{
	static const char	*fields[] = { "type", "path", "edits_applied",
	    "replacements", "bytes_written" };
	cJSON			*result, *p, *v, *attrs;
	size_t			 i;

	if ((v = cJSON_GetObjectItem(rep, "reject_class")) != NULL) {
		p = cJSON_GetObjectItem(rep, "message");
		publish_rejection(cause, pj->session != NULL ?
		    "workspace_session_id" : "path", pj->session != NULL ?
		    pj->session : pj->path, cJSON_IsString(v) ? v->valuestring :
		    "storage_error", cJSON_IsString(p) ? p->valuestring :
		    "the publish was rejected", cJSON_Duplicate(
		    cJSON_GetObjectItem(rep, "details"), 1));
		return (NULL);
	}
	result = cJSON_CreateObject();
	if ((v = cJSON_GetObjectItem(rep, "layer_id")) != NULL) {
		p = cJSON_AddObjectToObject(result, "publish");
		cJSON_AddItemToObject(p, "layer_id", cJSON_Duplicate(v, 1));
		cJSON_AddItemToObject(p, "manifest_version", cJSON_Duplicate(
		    cJSON_GetObjectItem(rep, "manifest_version"), 1));
		cJSON_AddItemToObject(p, "changed_paths", cJSON_Duplicate(
		    cJSON_GetObjectItem(rep, "changed_paths"), 1));
		if ((v = cJSON_GetObjectItem(rep, "changed_path_count")) !=
		    NULL)
			cJSON_AddItemToObject(p, "changed_path_count",
			    cJSON_Duplicate(v, 1));
		attrs = cJSON_CreateObject();
		if (pj->session != NULL)
			cJSON_AddStringToObject(attrs, "workspace_session_id",
			    pj->session);
		cJSON_AddItemToObject(attrs, "layer_id", cJSON_Duplicate(
		    cJSON_GetObjectItem(p, "layer_id"), 1));
		cJSON_AddItemToObject(attrs, "manifest_version",
		    cJSON_Duplicate(cJSON_GetObjectItem(p,
		    "manifest_version"), 1));
		cJSON_AddStringToObject(attrs, "owner", pj->owner);
		telemetry_event(pj->sandbox, NULL, pj->span, "layer.published",
		    attrs);
		if (publish_layer_fn != NULL)
			publish_layer_fn(pj->sandbox, pj->tenant, rep);
	} else
		cJSON_AddNullToObject(result, "publish");
	if ((v = cJSON_GetObjectItem(rep, "dropped")) != NULL &&
	    cJSON_GetArraySize(v) > 0)
		cJSON_AddItemToObject(result, "publish_dropped",
		    cJSON_Duplicate(v, 1));
	for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		if ((v = cJSON_GetObjectItem(rep, fields[i])) != NULL)
			cJSON_AddItemToObject(result, fields[i],
			    cJSON_Duplicate(v, 1));
	}
	return (result);
}

static void
publish_job_done(cJSON *rep, const struct cause *why, void *arg)
{
	struct publish_job	*pj = arg;
	struct cause		 cause = { 0 };
	cJSON			*result = NULL;

	/* Ended without its report: what it had in staging is left. */
	if (why != NULL && why->kind == CAUSE_INTERNAL)
		layer_staging_sweep_start(pj->sandbox, pj->tenant);
	if (why != NULL && pj->file)
		files_helper_cause(&cause, why);	/* a refusal */
	else if (why != NULL)
		publish_rejection(&cause, pj->session != NULL ?
		    "workspace_session_id" : "path", pj->session != NULL ?
		    pj->session : pj->path, "storage_error", why->message,
		    NULL);
	else
		result = publish_outcome(pj, rep, &cause);
	pj->cb(result, result != NULL ? NULL : &cause, pj->arg);
	cJSON_Delete(result);
	cause_clear(&cause);
	publish_job_free(pj);
}

static struct publish_job *
publish_job_new(const char *sandbox, const char *tenant, const char *owner,
    publish_cb cb, void *arg)
{
	struct publish_job	*pj;

	pj = xcalloc(1, sizeof *pj);
	pj->sandbox = xstrdup(sandbox);
	pj->tenant = tenant != NULL ? xstrdup(tenant) : NULL;
	pj->owner = xstrdup(owner);
	pj->cb = cb;
	pj->arg = arg;
	return (pj);
}

/*
 * Publish a session's changes (a, which stays valid until the callback,
 * naming the session), in a helper of the sandbox's, answered as soon as
 * the report is whole: cb(result, NULL, arg) or cb(NULL, cause, arg),
 * the outcome of publish_outcome; a publishing process that ended
 * without a report is a storage_error rejection.
 */
void
publish_session(const struct publish_args *a, const char *session,
    const char *tenant, struct tspan *span, publish_cb cb, void *arg)
{
	struct publish_job	*pj;
	cJSON			*o;
	char			*msg;

	pj = publish_job_new(a->sandbox, tenant, a->owner, cb, arg);
	pj->session = xstrdup(session);
	pj->span = span;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sandbox", a->sandbox);
	cJSON_AddStringToObject(o, "upper", a->upper);
	cJSON_AddStringToObject(o, "owner", a->owner);
	cJSON_AddBoolToObject(o, "copy", a->copy);
	cJSON_AddBoolToObject(o, "journal", disk_journal_whole(a->sandbox));
	cJSON_AddNumberToObject(o, "version", a->base->version);
	cJSON_AddItemToObject(o, "layers", layer_stack_json(a->base));
	msg = util_json_print(o);
	cJSON_Delete(o);
	job_early(job_helper_msg("publish", a->sandbox, tenant,
	    publish_child_msg, msg, strlen(msg), publish_job_done, pj));
	free(msg);
}

/*
 * A sessionless write or edit (f stays valid until the callback), as
 * publish_session; a refusal of the file operation is its cause
 * (files_helper_cause), a rejection names the path.
 */
void
publish_file(const struct publish_file_args *f, const char *tenant,
    struct tspan *span, publish_cb cb, void *arg)
{
	struct publish_job	*pj;
	cJSON			*o;
	char			*head, *msg;
	size_t			 hlen, len;

	pj = publish_job_new(f->sandbox, tenant, f->owner, cb, arg);
	pj->path = xstrdup(f->path);
	pj->span = span;
	pj->file = 1;
	/* The arguments as JSON, a NUL, then the content's bytes. */
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "sandbox", f->sandbox);
	cJSON_AddStringToObject(o, "path", f->path);
	cJSON_AddStringToObject(o, "owner", f->owner);
	cJSON_AddBoolToObject(o, "journal", disk_journal_whole(f->sandbox));
	cJSON_AddNumberToObject(o, "kind", f->kind);
	cJSON_AddBoolToObject(o, "content", f->content != NULL);
	cJSON_AddItemToObject(o, "edits", f->edits != NULL ?
	    cJSON_Duplicate(f->edits, 1) : cJSON_CreateNull());
	head = util_json_print(o);
	cJSON_Delete(o);
	hlen = strlen(head);
	len = hlen + 1 + (f->content != NULL ? f->len : 0);
	msg = xmalloc(len);
	memcpy(msg, head, hlen + 1);
	if (f->content != NULL)
		memcpy(msg + hlen + 1, f->content, f->len);
	free(head);
	job_early(job_helper_msg("publish-file", f->sandbox, tenant,
	    publish_file_child_msg, msg, len, publish_job_done, pj));
	free(msg);
}
