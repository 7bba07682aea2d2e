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
 * The layer stack of a sandbox, under <state>/sandboxes/<id>/stack/:
 *
 *	manifest.json	{"schema_version": 1, "version": N, "layers":
 *			[{"layer_id", "path"}, ...]}, newest first, base last
 *	layers/<id>/	published layers in overlayfs format (a deletion is
 *			a 0:0 character device, a directory that replaces
 *			what is below carries trusted.overlay.opaque=y)
 *	layers/<id>.meta.json	owner, created_at_ms, digest, bytes, paths
 *	staging/	layers being built; removed at start-up
 *	.lock		the writer lock, held only for a commit
 *	.squash		held by the one squash of the stack (squash.c)
 *
 * The manifest is replaced atomically, so readers never lock. Layers and
 * the base are never changed once committed. This file also resolves a
 * path through a stack the way overlayfs does (whiteouts, opaque
 * directories), without mounting anything.
 *
 * A squash replaces layers, and a replaced layer is reclaimed (moved to
 * the trash) once nothing can still read it. Who may, and how each is
 * kept safe:
 *
 * - a workspace session, of any process: its lease (on disk, written
 *   before its overlay is made) names its layers, and the reclaimer
 *   reads the leases of live owners;
 * - a child process reading a stack it read itself (a publish, a
 *   session's builder until its lease is on disk): layer_hold takes a
 *   shared flock on each layer's directory, then checks the directory
 *   is still in place; the reclaimer takes the exclusive lock (never
 *   waiting) before it reads the leases and moves the directory, so a
 *   layer is moved only when no child holds it, and a child that locks
 *   one being moved sees it gone and reads the manifest again;
 * - the server, resolving a path through a stack it read earlier:
 *   layer_stack_whole says whether a layer may have gone meanwhile (the
 *   manifest was replaced and a layer is missing), and the caller reads
 *   the manifest again. Only layers of an older manifest are ever
 *   reclaimed, so a stack whose manifest is still current is whole.
 */

#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define LAYER_MANIFEST_MAX	(4 * 1024 * 1024)
#define LAYER_BASE_ID		"B000001-base"

void
layer_stack_free(struct layer_stack *ls)
{
	size_t	i;

	if (ls == NULL)
		return;
	for (i = 0; i < ls->n; i++) {
		free(ls->ids[i]);
		free(ls->paths[i]);
	}
	free(ls->ids);
	free(ls->paths);
	free(ls);
}

/* A copy of a stack. */
static struct layer_stack *
layer_stack_dup(const struct layer_stack *ls)
{
	struct layer_stack	*c;
	size_t			 i;

	c = xcalloc(1, sizeof *c);
	*c = *ls;
	c->ids = xcalloc(ls->n + 1, sizeof *c->ids);
	c->paths = xcalloc(ls->n + 1, sizeof *c->paths);
	for (i = 0; i < ls->n; i++) {
		c->ids[i] = xstrdup(ls->ids[i]);
		c->paths[i] = xstrdup(ls->paths[i]);
	}
	return (c);
}

/*
 * The manifests read last, by sandbox: a manifest is only ever replaced
 * whole (a rename), so while the file at its path is the same one (the
 * same inode, size and times) a read is a copy of what was read, not an
 * open, a read and a parse. The loop reads one at every session start.
 */
#define LAYER_READ_KEPT	8

static struct {
	char			*sbox;
	struct stat		 st;
	struct layer_stack	*ls;
} layer_read_kept[LAYER_READ_KEPT];
static unsigned int	layer_read_next;

static int
layer_same_file(const struct stat *a, const struct stat *b)
{
	return (a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec);
}

/* The slot of sandbox sbox's manifest, or LAYER_READ_KEPT. */
static size_t
layer_read_slot(const char *sbox)
{
	size_t	i;

	for (i = 0; i < LAYER_READ_KEPT; i++) {
		if (layer_read_kept[i].sbox != NULL &&
		    strcmp(layer_read_kept[i].sbox, sbox) == 0)
			break;
	}
	return (i);
}

static void
layer_read_keep(const char *sbox, const struct stat *st,
    const struct layer_stack *ls)
{
	size_t	i;

	if ((i = layer_read_slot(sbox)) == LAYER_READ_KEPT)
		i = layer_read_next++ % LAYER_READ_KEPT;
	free(layer_read_kept[i].sbox);
	layer_stack_free(layer_read_kept[i].ls);
	layer_read_kept[i].sbox = xstrdup(sbox);
	layer_read_kept[i].st = *st;
	layer_read_kept[i].ls = layer_stack_dup(ls);
}

/* A stack from a JSON layers array (and its version). */
struct layer_stack *
layer_stack_from_json(int version, cJSON *layers, char **cause)
{
	struct layer_stack	*ls;
	cJSON			*l, *id, *path;
	size_t			 n;

	if (!cJSON_IsArray(layers) || (n = cJSON_GetArraySize(layers)) == 0) {
		xasprintf(cause, "the layer list is missing or empty");
		return (NULL);
	}
	ls = xcalloc(1, sizeof *ls);
	ls->version = version;
	ls->ids = xcalloc(n, sizeof *ls->ids);
	ls->paths = xcalloc(n, sizeof *ls->paths);
	cJSON_ArrayForEach(l, layers) {
		id = cJSON_GetObjectItem(l, "layer_id");
		path = cJSON_GetObjectItem(l, "path");
		if (!cJSON_IsString(id) || !cJSON_IsString(path) ||
		    !util_id_valid_layer(id->valuestring) ||
		    path->valuestring[0] != '/') {
			xasprintf(cause, "layer %zu of the list is malformed",
			    ls->n);
			layer_stack_free(ls);
			return (NULL);
		}
		ls->ids[ls->n] = xstrdup(id->valuestring);
		ls->paths[ls->n] = xstrdup(path->valuestring);
		ls->n++;
	}
	return (ls);
}

/* The layers array of a stack, for a manifest or a lease. */
cJSON *
layer_stack_json(struct layer_stack *ls)
{
	cJSON	*a, *l;
	size_t	 i;

	a = cJSON_CreateArray();
	for (i = 0; i < ls->n; i++) {
		l = cJSON_CreateObject();
		cJSON_AddStringToObject(l, "layer_id", ls->ids[i]);
		cJSON_AddStringToObject(l, "path", ls->paths[i]);
		cJSON_AddItemToArray(a, l);
	}
	return (a);
}

/* "sha256:" and the SHA-256 of the compact layers array. */
void
layer_stack_root_hash(struct layer_stack *ls, char out[72])
{
	unsigned char	 md[32];
	cJSON		*a;
	char		*text;

	a = layer_stack_json(ls);
	text = util_json_print(a);
	util_sha256(text, strlen(text), md);
	memcpy(out, "sha256:", 7);
	util_hex(md, sizeof md, out + 7);
	free(text);
	cJSON_Delete(a);
}

static struct layer_stack *layer_stack_read_file(const char *, char *,
		    struct stat *, char **);

char *
layer_manifest_path(const char *sbox)
{
	return (state_where(STATE_STACK, sbox, "manifest.json"));
}

/*
 * Where a publish puts the next manifest, made durable, before renaming
 * it into place (publish.c); a crash between the two is finished at
 * start (layer_roll_forward).
 */
char *
layer_next_path(const char *sbox)
{
	return (state_where(STATE_STACK, sbox, "manifest.next"));
}

/* Read the current manifest of a sandbox's stack. */
struct layer_stack *
layer_stack_read(const char *sbox, char **cause)
{
	struct layer_stack	*ls;
	struct stat		 st;
	char			*path;
	size_t			 i;

	path = layer_manifest_path(sbox);
	if (stat(path, &st) == 0 &&
	    (i = layer_read_slot(sbox)) < LAYER_READ_KEPT &&
	    layer_same_file(&layer_read_kept[i].st, &st)) {
		free(path);
		return (layer_stack_dup(layer_read_kept[i].ls));
	}
	if ((ls = layer_stack_read_file(sbox, path, &st, cause)) != NULL)
		layer_read_keep(sbox, &st, ls);
	return (ls);
}

/*
 * How many layers top has above below when it is below with layers on
 * top (the same ids at the same paths under them), else -1.
 */
ssize_t
layer_stack_above(const struct layer_stack *top,
    const struct layer_stack *below)
{
	size_t	i, k;

	if (top->n < below->n)
		return (-1);
	k = top->n - below->n;
	for (i = 0; i < below->n; i++) {
		if (strcmp(top->ids[k + i], below->ids[i]) != 0 ||
		    strcmp(top->paths[k + i], below->paths[i]) != 0)
			return (-1);
	}
	return ((ssize_t)k);
}

/*
 * Read a manifest of sandbox sbox from path (which it frees); what fstat
 * said of the file read in *stp when not NULL.
 */
static struct layer_stack *
layer_stack_read_file(const char *sbox, char *path, struct stat *stp,
    char **cause)
{
	struct stat	 st;
	char		*buf;
	cJSON		*m, *v;
	ssize_t		 n;
	int		 fd;
	dev_t		 mdev;
	ino_t		 mino;
	struct layer_stack *ls;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "cannot read the layer stack's manifest of"
		    " sandbox %s: %s", sbox, strerror(errno));
		free(path);
		return (NULL);
	}
	if (fstat(fd, &st) != 0 || st.st_size > LAYER_MANIFEST_MAX) {
		xasprintf(cause, "the manifest of sandbox %s is larger than %d"
		    " bytes", sbox, LAYER_MANIFEST_MAX);
		close(fd);
		free(path);
		return (NULL);
	}
	buf = xmalloc(st.st_size + 1);
	n = read(fd, buf, st.st_size);
	mdev = st.st_dev;
	mino = st.st_ino;
	close(fd);
	m = n == st.st_size ? cJSON_ParseWithLength(buf, n) : NULL;
	free(buf);
	v = cJSON_GetObjectItem(m, "version");
	if (!cJSON_IsNumber(v) || v->valuedouble < 1) {
		xasprintf(cause, "the manifest of sandbox %s is damaged", sbox);
		cJSON_Delete(m);
		free(path);
		return (NULL);
	}
	ls = layer_stack_from_json((int)v->valuedouble,
	    cJSON_GetObjectItem(m, "layers"), cause);
	if (ls != NULL) {
		ls->mdev = mdev;
		ls->mino = mino;
	}
	if (stp != NULL)
		*stp = st;
	cJSON_Delete(m);
	free(path);
	return (ls);
}

/*
 * In a child: hold the published layers of a stack (the base is never
 * reclaimed) against the reclaimer until layer_hold_release; layers h
 * holds already (from a stack read before) are kept, not taken again.
 * Returns 0, 1 when a layer was reclaimed since the stack was read (read
 * the manifest again; h then holds nothing), or -1 with a cause.
 */
int
layer_hold(struct layer_stack *ls, struct layer_hold *h, char **cause)
{
	struct stat	 st, now;
	size_t		 i, k;
	int		 fd;

	for (i = 0; i + 1 < ls->n; i++) {
		for (k = 0; k < h->n; k++) {
			if (strcmp(h->paths[k], ls->paths[i]) == 0)
				break;
		}
		if (k < h->n)
			continue;
		if ((fd = open(ls->paths[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1) {
			if (errno == ENOENT)
				goto stale;
			goto fail;
		}
		h->fds = xreallocarray(h->fds, h->n + 1, sizeof *h->fds);
		h->paths = xreallocarray(h->paths, h->n + 1,
		    sizeof *h->paths);
		h->paths[h->n] = xstrdup(ls->paths[i]);
		h->fds[h->n++] = fd;
		while (flock(fd, LOCK_SH) != 0) {
			if (errno != EINTR)
				goto fail;
		}
		if (fstat(fd, &st) != 0)
			goto fail;
		if (lstat(ls->paths[i], &now) != 0) {
			if (errno == ENOENT)
				goto stale;
			goto fail;
		}
		if (now.st_dev != st.st_dev || now.st_ino != st.st_ino)
			goto stale;
	}
	return (0);
stale:
	layer_hold_release(h);
	return (1);
fail:
	xasprintf(cause, "cannot hold layer %s of the stack: %s", ls->ids[i],
	    strerror(errno));
	layer_hold_release(h);
	return (-1);
}

void
layer_hold_release(struct layer_hold *h)
{
	size_t	i;

	for (i = 0; i < h->n; i++) {
		close(h->fds[i]);
		free(h->paths[i]);
	}
	free(h->fds);
	free(h->paths);
	h->fds = NULL;
	h->paths = NULL;
	h->n = 0;
}

/*
 * In the server: whether every layer of a stack read earlier is still
 * there (checked after a resolution through it: if so, the resolution
 * saw whole layers, since a layer once moved never comes back).
 */
int
layer_stack_whole(const char *sbox, struct layer_stack *ls)
{
	struct stat	 st;
	char		*path;
	size_t		 i;
	int		 same;

	path = layer_manifest_path(sbox);
	same = lstat(path, &st) == 0 && st.st_dev == ls->mdev &&
	    st.st_ino == ls->mino;
	free(path);
	if (same)
		return (1);
	for (i = 0; i + 1 < ls->n; i++) {
		if (lstat(ls->paths[i], &st) != 0)
			return (0);
	}
	return (1);
}

/* Replace the manifest atomically (the writer lock is held). */
int
layer_stack_write(const char *sbox, struct layer_stack *ls, char **cause)
{
	char	*path, *text;
	int	 r;

	text = layer_stack_text(ls);
	path = layer_manifest_path(sbox);
	r = util_write_atomic(path, text, strlen(text), cause);
	free(path);
	free(text);
	return (r);
}

/* The manifest's text for a stack. */
char *
layer_stack_text(struct layer_stack *ls)
{
	cJSON	*m;
	char	*text;

	m = cJSON_CreateObject();
	cJSON_AddNumberToObject(m, "schema_version", 1);
	cJSON_AddNumberToObject(m, "version", ls->version);
	cJSON_AddItemToObject(m, "layers", layer_stack_json(ls));
	text = util_json_print(m);
	cJSON_Delete(m);
	return (text);
}

/* Make a new sandbox's stack: the base alone, version 1. */
int
layer_stack_init(const char *sbox, const char *base, char **cause)
{
	struct layer_stack	 ls;
	char			*ids[1], *paths[1], *dir;
	static const char	*subdirs[] = { "stack", "stack/layers",
	    "stack/staging", "sessions", "commands", "audit" };
	size_t			 i;
	int			 r;

	for (i = 0; i < sizeof subdirs / sizeof subdirs[0]; i++) {
		dir = state_where(STATE_SANDBOX, sbox, "%s", subdirs[i]);
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			xasprintf(cause, "cannot create %s: %s", dir,
			    strerror(errno));
			free(dir);
			return (-1);
		}
		free(dir);
	}
	ids[0] = (char *)LAYER_BASE_ID;
	paths[0] = (char *)base;
	ls.version = 1;
	ls.n = 1;
	ls.ids = ids;
	ls.paths = paths;
	r = layer_stack_write(sbox, &ls, cause);
	return (r);
}

/*
 * Confine the calling helper to what work on sandbox sbox's stack needs:
 * the sandbox's state read-write and the stack's base read-only (the
 * base stays the bottom of the stack for the sandbox's life).
 */
int
layer_confine(const char *sbox, char **cause)
{
	struct layer_stack	*ls;
	const char		*rw[1], *ro[1];
	char			*dir;
	int			 r;

	if ((ls = layer_stack_read(sbox, cause)) == NULL)
		return (-1);
	dir = state_where(STATE_SANDBOX, sbox, NULL);
	rw[0] = dir;
	ro[0] = ls->paths[ls->n - 1];
	r = confine_enter(rw, 1, ro, 1, cause);
	free(dir);
	layer_stack_free(ls);
	return (r);
}

/* Take the stack's writer lock (blocking: children only, or brief). */
int
layer_lock(const char *sbox)
{
	char	*path;
	int	 fd;

	path = state_where(STATE_STACK, sbox, ".lock");
	fd = util_lock_file(path);
	free(path);
	return (fd);
}

/* The writer lock if nobody holds it, else -1 (never waits). */
int
layer_lock_try(const char *sbox)
{
	char	*path;
	int	 fd;

	path = state_where(STATE_STACK, sbox, ".lock");
	fd = util_lock_try(path);
	free(path);
	return (fd);
}

void
layer_unlock(int fd)
{
	if (fd != -1)
		close(fd);
}

/* A new layer id for a manifest version: L<6 digits>-<8 hex>. */
void
layer_new_id(int version, char prefix, char out[20])
{
	char	rnd[9];

	util_random_hex(rnd, 8);
	snprintf(out, 20, "%c%06d-%s", prefix, version % 1000000, rnd);
}

/* Whether an entry of a layer directory is a whiteout (char dev 0:0). */
int
layer_is_whiteout(const struct stat *st)
{
	return (S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 &&
	    minor(st->st_rdev) == 0);
}

/* Whether an open directory carries trusted.overlay.opaque=y. */
int
layer_fd_opaque(int fd)
{
	char	v[4];

	return (fgetxattr(fd, "trusted.overlay.opaque", v, sizeof v) == 1 &&
	    v[0] == 'y');
}

/* Whether a directory carries trusted.overlay.opaque=y. */
int
layer_is_opaque(const char *path)
{
	char	v[4];
	ssize_t	n;

	n = lgetxattr(path, "trusted.overlay.opaque", v, sizeof v);
	return (n == 1 && v[0] == 'y');
}

/*
 * In a helper that resolves many paths through a stack (a publish), the
 * layers' directories are kept open, so that each lookup walks the path
 * beneath its layer only, not the layer's own absolute path again. Only
 * a helper turns it on (layer_dirs_keep): published layers never change
 * and their names are never reused, and the helper is gone soon after.
 */
#define LAYER_DIRS_MAX		1024	/* a power of two */
static struct layer_dir {
	char	*path;
	int	 fd;
}			 layer_dirs[LAYER_DIRS_MAX];
static size_t		 layer_ndirs;
static int		 layer_dirs_on;

void
layer_dirs_keep(void)
{
	layer_dirs_on = 1;
}

/* A layer's directory open (path is absolute), or -1: use the path. */
static int
layer_dir(const char *path)
{
	struct layer_dir	*d;
	uint32_t		 h;
	size_t			 i;
	int			 fd;

	if (!layer_dirs_on)
		return (-1);
	h = util_hash(path, 0);
	for (i = 0; i < LAYER_DIRS_MAX; i++) {
		d = &layer_dirs[(h + i) & (LAYER_DIRS_MAX - 1)];
		if (d->path == NULL)
			break;
		if (strcmp(d->path, path) == 0)
			return (d->fd);
	}
	/* Kept half full at most: past that, paths are used. */
	if (i == LAYER_DIRS_MAX || layer_ndirs >= LAYER_DIRS_MAX / 2)
		return (-1);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return (-1);
	d->path = xstrdup(path);
	d->fd = fd;
	layer_ndirs++;
	return (fd);
}

/* lstat of rel in layer dir (absolute; full is dir/rel). */
static int
layer_lstat(const char *dir, const char *rel, const char *full,
    struct stat *st)
{
	int	fd;

	if ((fd = layer_dir(dir)) != -1)
		return (fstatat(fd, rel, st, AT_SYMLINK_NOFOLLOW));
	return (lstat(full, st));
}

/*
 * Whether any of the top n layers of a stack holds an entry (of any
 * kind: a whiteout, an opaque directory, a file) at rel or at one of its
 * ancestors. When none does, rel resolves through the stack exactly as
 * it does through the layers below them.
 */
int
layer_touches(struct layer_stack *ls, size_t n, const char *rel)
{
	struct stat	 st;
	char		 full[PATH_MAX];
	const char	*p;
	size_t		 i;
	int		 len;

	for (i = 0; i < n && i < ls->n; i++) {
		for (p = rel;; p++) {
			if (*p != '/' && *p != '\0')
				continue;
			len = snprintf(full, sizeof full, "%s/%.*s",
			    ls->paths[i], (int)(p - rel), rel);
			if (len < 0 || len >= (int)sizeof full)
				return (1);	/* resolved the long way */
			if (layer_lstat(ls->paths[i], full +
			    strlen(ls->paths[i]) + 1, full, &st) != 0) {
				if (errno != ENOENT && errno != ENOTDIR)
					return (1);
				break;	/* nothing here, nor below it */
			}
			/* The path itself, or a parent that is no plain one. */
			if (*p == '\0' || !S_ISDIR(st.st_mode) ||
			    layer_is_opaque(full))
				return (1);
		}
	}
	return (0);
}

/*
 * Resolve a relative path through a stack as overlayfs would. Fills e:
 * kind, the layer index it came from and its path there, and its stat.
 * When a parent component is not a directory, kind is absent and blocker
 * says what it is (blocker_len: the length of its prefix of rel). The
 * modes of the parent directories found, outermost first, are in
 * parent_mode (nparent of them).
 * Returns 0 (kind may be absent), or -1 with a cause on an I/O error.
 */
int
layer_resolve(struct layer_stack *ls, const char *rel,
    struct layer_entry *e, char **cause)
{
	struct stat	 st;
	char		*copy, *p, *slash, full[PATH_MAX];
	size_t		 lowest = ls->n, i;
	int		 last, found;

	memset(e, 0, sizeof *e);
	e->kind = LAYER_ABSENT;
	copy = xstrdup(rel);
	p = copy;
	for (;;) {
		slash = strchr(p, '/');
		last = slash == NULL;
		if (!last)
			*slash = '\0';
		/* copy now holds the prefix up to this component. */
		found = 0;
		for (i = 0; i < lowest; i++) {
			if (snprintf(full, sizeof full, "%s/%s", ls->paths[i],
			    copy) >= (int)sizeof full) {
				xasprintf(cause, "path too long: %s", rel);
				free(copy);
				return (-1);
			}
			if (layer_lstat(ls->paths[i], copy, full, &st) != 0) {
				if (errno == ENOENT || errno == ENOTDIR)
					continue;
				xasprintf(cause, "cannot read %s in layer %s:"
				    " %s", copy, ls->ids[i], strerror(errno));
				free(copy);
				return (-1);
			}
			if (layer_is_whiteout(&st)) {
				if (!found)
					goto absent;
				lowest = i;	/* hides what is below */
				break;
			}
			if (!S_ISDIR(st.st_mode)) {
				if (!found) {
					if (!last) {
						e->blocker = S_ISLNK(st.st_mode) ?
						    LAYER_SYMLINK :
						    S_ISREG(st.st_mode) ?
						    LAYER_FILE : LAYER_OTHER;
						e->blocker_len = strlen(copy);
						goto absent;
					}
					e->kind = S_ISLNK(st.st_mode) ?
					    LAYER_SYMLINK : S_ISREG(st.st_mode) ?
					    LAYER_FILE : LAYER_OTHER;
					e->layer = i;
					e->st = st;
					strlcpy(e->path, full, sizeof e->path);
					free(copy);
					return (0);
				}
				lowest = i;
				break;
			}
			if (!found) {
				found = 1;
				if (!last && e->nparent < LAYER_PARENTS_MAX)
					e->parent_mode[e->nparent++] =
					    st.st_mode;
				if (last) {
					e->kind = LAYER_DIR;
					e->layer = i;
					e->st = st;
					strlcpy(e->path, full, sizeof e->path);
				}
			}
			if (layer_is_opaque(full)) {
				lowest = i + 1;
				break;
			}
		}
		if (!found)
			goto absent;
		if (last)
			break;
		*slash = '/';
		p = slash + 1;
	}
	free(copy);
	return (0);
absent:
	e->kind = LAYER_ABSENT;
	free(copy);
	return (0);
}

/*
 * A staging entry a builder made (path, open as fd): locked for as long
 * as fd stays open, so that a sweep leaves it be. 0, or -1 (errno set)
 * when a sweep took it first: the builder then makes no use of it.
 */
int
layer_staging_claim(int fd, const char *path)
{
	struct stat	st, at;

	if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &st) != 0 ||
	    lstat(path, &at) != 0)
		return (-1);
	if (st.st_ino != at.st_ino || st.st_dev != at.st_dev) {
		errno = ESTALE;
		return (-1);
	}
	return (0);
}

/*
 * Whether staging entry name (in the directory open as dfd) was left by
 * a builder that is gone: a directory no builder holds (*hold then
 * holds its lock, until the entry is moved), or a record (<id>.*) whose
 * directory is gone or held by no builder. Under the writer lock nothing
 * in staging is renamed into place, so a record without its directory
 * is a leftover.
 */
static int
layer_staging_dead(int dfd, const char *name, int *hold)
{
	char	 base[NAME_MAX + 1], *dot;
	int	 fd;

	*hold = -1;
	strlcpy(base, name, sizeof base);
	if ((dot = strchr(base, '.')) != NULL)
		*dot = '\0';
	if ((fd = openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return (errno == ENOENT || errno == ENOTDIR || errno == ELOOP);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return (0);
	}
	*hold = fd;
	return (1);
}

/*
 * Move what builders that are gone (killed, or a process that ended
 * before its publish or squash did) left in sandbox id's staging to its
 * trash, under the writer lock: taken when wait, else only when free.
 * What a live builder holds stays. The count of entries moved, or -1.
 */
int
layer_staging_sweep(const char *id, int wait)
{
	struct dirent	*de;
	DIR		*d;
	char		*dir, *to;
	int		 lock, dfd, dfd2 = -1, hold, n = 0;

	if ((lock = wait ? layer_lock(id) : layer_lock_try(id)) == -1)
		return (-1);
	/* A next manifest now is a dead publisher's, which answered none. */
	layer_roll_forward(id, 0);
	dir = state_where(STATE_STACK_STAGING, id, NULL);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(dir);
	if (dfd == -1 || (dfd2 = dup(dfd)) == -1 ||
	    (d = fdopendir(dfd2)) == NULL) {
		n = dfd == -1 && errno == ENOENT ? 0 : -1;
		if (dfd2 != -1)
			close(dfd2);
		if (dfd != -1)
			close(dfd);
		layer_unlock(lock);
		return (n);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' ||
		    !layer_staging_dead(dfd, de->d_name, &hold))
			continue;
		to = state_trash_path(id, "stg");
		if (renameat(dfd, de->d_name, AT_FDCWD, to) == 0) {
			log_info("sandbox %s: %s, left in staging by a builder"
			    " that is gone, removed", id, de->d_name);
			n++;
		}
		free(to);
		if (hold != -1)
			close(hold);
	}
	closedir(d);
	close(dfd);
	layer_unlock(lock);
	return (n);
}

/*
 * Recovery at start, for one sandbox: what builders that are gone left
 * in staging goes to the trash, when no publish holds the stack's lock.
 */
void
layer_recover(const char *id)
{
	int	lock;

	if ((lock = layer_lock_try(id)) != -1) {
		layer_roll_forward(id, 1);
		layer_unlock(lock);
	}
	layer_staging_sweep(id, 0);
}

/*
 * Under the writer lock: a next manifest left by a publish (made
 * durable, not yet renamed into place) is the head's successor on a
 * restart after a crash, whose renames the journal may not have kept:
 * renamed into place (forward), so that a publish that answered keeps
 * its word. Otherwise (or when not forward: its publisher was killed
 * and answered nothing) it goes. Returns whether one was put in place.
 */
int
layer_roll_forward(const char *id, int forward)
{
	struct layer_stack	*cur, *next;
	struct stat		 st;
	char			*npath, *mpath, *dir, *cause = NULL;
	int			 ok = 0;

	npath = layer_next_path(id);
	if (lstat(npath, &st) != 0) {
		free(npath);
		return (0);
	}
	cur = layer_stack_read(id, &cause);
	free(cause);
	cause = NULL;
	next = layer_stack_read_file(id, xstrdup(npath), NULL, &cause);
	free(cause);
	ok = forward && cur != NULL && next != NULL &&
	    next->version == cur->version + 1 &&
	    layer_stack_above(next, cur) == 1 &&
	    lstat(next->paths[0], &st) == 0 && S_ISDIR(st.st_mode);
	mpath = layer_manifest_path(id);
	if (ok && rename(npath, mpath) == 0) {
		log_info("sandbox %s: manifest version %d, made durable by a"
		    " publish before a crash, put in place", id,
		    next->version);
		dir = state_where(STATE_STACK, id, NULL);
		util_fsync_dir(dir);
		free(dir);
	} else {
		ok = 0;
		unlink(npath);
	}
	free(mpath);
	free(npath);
	layer_stack_free(cur);
	layer_stack_free(next);
	return (ok);
}

/* ---- the sweep after a builder that is gone ---- */

struct layer_sweep {
	char			*id;
	char			*tenant;	/* charged for it */
	int			 again;
	LIST_ENTRY(layer_sweep)	 entry;
};
static LIST_HEAD(, layer_sweep) layer_sweeps =
    LIST_HEAD_INITIALIZER(layer_sweeps);

static void	layer_sweep_run(struct layer_sweep *);

/* The child: confined to the sandbox's directory, sweep its staging. */
static int
layer_sweep_child(void *arg, int fd)
{
	struct layer_sweep	*ls = arg;
	const char		*rw[1];
	char			*dir, *cause = NULL;
	cJSON			*rep;
	int			 n, r;

	dir = state_where(STATE_SANDBOX, ls->id, NULL);
	rw[0] = dir;
	if (confine_enter(rw, 1, NULL, 0, &cause) != 0) {
		r = job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", cause);
		free(cause);
		free(dir);
		return (r);
	}
	free(dir);
	if ((n = layer_staging_sweep(ls->id, 1)) == -1)
		return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "cannot sweep"
		    " the staging directory: %s", strerror(errno)));
	rep = cJSON_CreateObject();
	cJSON_AddNumberToObject(rep, "moved", n);
	r = job_answer(fd, rep, NULL);
	cJSON_Delete(rep);
	return (r);
}

static void
layer_sweep_done(cJSON *rep, const struct cause *cause, void *arg)
{
	struct layer_sweep	*ls = arg;

	if (cause != NULL)
		log_warnx("sandbox %s: %s", ls->id, cause->message);
	else if (cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "moved")) > 0)
		trash_empty();
	if (ls->again) {
		ls->again = 0;
		layer_sweep_run(ls);
		return;
	}
	LIST_REMOVE(ls, entry);
	free(ls->id);
	free(ls->tenant);
	free(ls);
}

static void
layer_sweep_run(struct layer_sweep *ls)
{
	job_early(job_helper("staging-sweep", ls->id, ls->tenant,
	    layer_sweep_child, ls, NULL, 0, layer_sweep_done, ls));
}

/*
 * A publish or squash of sandbox id ended without its report (killed,
 * or out of memory): sweep its staging in a helper of the sandbox's,
 * once at a time (asked again meanwhile: once more after).
 */
void
layer_staging_sweep_start(const char *id, const char *tenant)
{
	struct layer_sweep	*ls;

	LIST_FOREACH(ls, &layer_sweeps, entry) {
		if (strcmp(ls->id, id) == 0) {
			ls->again = 1;
			return;
		}
	}
	ls = xcalloc(1, sizeof *ls);
	ls->id = xstrdup(id);
	ls->tenant = xstrdup(tenant != NULL ? tenant : TENANT_LOCAL);
	LIST_INSERT_HEAD(&layer_sweeps, ls, entry);
	layer_sweep_run(ls);
}
