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
 * The child reports one JSON object: {"publish": null} when nothing
 * changed, {"layer_id", "manifest_version", "changed_paths", ...} after a
 * commit, or {"reject_class", "message", "details"}.
 */

#include "config.h"

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
#include <event2/buffer.h>
#include <openssl/evp.h>

#include "gitignore.h"
#include "merge.h"
#include "sandbox-mcp.h"

#define PUBLISH_PATHS_REPORTED	1000
#define PUBLISH_MERGE_MAX	(8 * 1024 * 1024)

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

struct publish_ctx {
	const struct publish_args *a;
	struct layer_stack	*base;
	struct layer_stack	*head;
	struct publish_capture	 cap;
	cJSON			*conflicts;
	struct gitignore	*gi;
	char			*error;
	cJSON			*extra;		/* added to the report */
};

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

/* Capture one directory of the upper tree (rel "" for the top), sorted. */
static int
publish_capture_dir(struct publish_ctx *x, const char *rel)
{
	struct layer_entry	 le;
	struct stat		 st;
	struct dirent		*de;
	DIR			*d;
	char			*dir, *path, **names = NULL, full[PATH_MAX];
	size_t			 n = 0, size = 0, i;
	int			 r = 0;

	xasprintf(&dir, "%s%s%s", x->a->upper, *rel ? "/" : "", rel);
	if ((d = opendir(dir)) == NULL) {
		xasprintf(&x->error, "cannot read %s: %s", dir,
		    strerror(errno));
		free(dir);
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
	for (i = 0; i < n; i++) {
		xasprintf(&path, "%s%s%s", rel, *rel ? "/" : "", names[i]);
		snprintf(full, sizeof full, "%s/%s", x->a->upper, path);
		if (r != 0 || lstat(full, &st) != 0) {
			free(path);
			continue;
		}
		if (S_ISREG(st.st_mode))
			publish_add(&x->cap, path, PUBLISH_WRITE, st.st_mode);
		else if (S_ISLNK(st.st_mode))
			publish_add(&x->cap, path, PUBLISH_SYMLINK, 0777);
		else if (layer_is_whiteout(&st))
			publish_add(&x->cap, path, PUBLISH_DELETE, 0);
		else if (S_ISDIR(st.st_mode)) {
			if (layer_is_opaque(full))
				publish_add(&x->cap, path, PUBLISH_OPAQUE,
				    st.st_mode);
			else {
				if (layer_resolve(x->base, path, &le,
				    &x->error) != 0) {
					r = -1;
					free(path);
					continue;
				}
				if (le.kind != LAYER_DIR)
					publish_add(&x->cap, path,
					    PUBLISH_MKDIR, st.st_mode);
				else if ((le.st.st_mode & 07777) !=
				    (st.st_mode & 07777))
					publish_add(&x->cap, path,
					    PUBLISH_MKDIR, st.st_mode);
				else
					publish_add(&x->cap, path,
					    PUBLISH_PARENT, st.st_mode);
			}
			if (publish_capture_dir(x, path) != 0)
				r = -1;
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
	free(dir);
	return (r);
}

/* A path's state in a stack, as text for the details of a conflict. */
struct publish_state {
	enum layer_kind	 kind;
	mode_t		 mode;
	off_t		 size;
	char		 digest[65];
	char		 target[PATH_MAX];
	char		 file[PATH_MAX];	/* where its bytes are */
};

static int
publish_file_digest(const char *path, char out[65], char **error)
{
	EVP_MD_CTX	*ctx;
	unsigned char	 md[32], buf[65536];
	unsigned int	 mdlen;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		xasprintf(error, "cannot read %s: %s", path, strerror(errno));
		return (-1);
	}
	if ((ctx = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_DigestInit_ex", __func__);
	while ((n = read(fd, buf, sizeof buf)) > 0)
		EVP_DigestUpdate(ctx, buf, n);
	close(fd);
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	if (n < 0) {
		xasprintf(error, "cannot read %s: %s", path, strerror(errno));
		return (-1);
	}
	util_hex(md, sizeof md, out);
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
	if (layer_resolve(ls, path, &le, error) != 0)
		return (-1);
	ps->kind = le.kind;
	ps->mode = le.st.st_mode & 07777;
	if (le.kind == LAYER_FILE) {
		ps->size = le.st.st_size;
		strlcpy(ps->file, le.path, sizeof ps->file);
		return (publish_file_digest(le.path, ps->digest, error));
	}
	if (le.kind == LAYER_SYMLINK) {
		n = readlink(le.path, ps->target, sizeof ps->target - 1);
		if (n < 0)
			n = 0;
		ps->target[n] = '\0';
	}
	return (0);
}

/* The state of a path in the session's capture. */
static int
publish_session_state(struct publish_ctx *x, struct publish_entry *e,
    struct publish_state *ps, char **error)
{
	struct stat	st;
	ssize_t		n;

	memset(ps, 0, sizeof *ps);
	snprintf(ps->file, sizeof ps->file, "%s/%s", x->a->upper, e->path);
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
		n = readlink(ps->file, ps->target, sizeof ps->target - 1);
		ps->target[n < 0 ? 0 : n] = '\0';
		return (0);
	case PUBLISH_WRITE:
		ps->kind = LAYER_FILE;
		ps->mode = e->mode;
		if (lstat(ps->file, &st) == 0)
			ps->size = st.st_size;
		return (publish_file_digest(ps->file, ps->digest, error));
	}
	return (0);
}

static int
publish_state_eq(struct publish_state *a, struct publish_state *b)
{
	if (a->kind != b->kind)
		return (0);
	switch (a->kind) {
	case LAYER_FILE:
		return (a->mode == b->mode && strcmp(a->digest, b->digest) ==
		    0);
	case LAYER_SYMLINK:
		return (strcmp(a->target, b->target) == 0);
	default:
		return (1);
	}
}

static cJSON *
publish_state_json(struct publish_state *ps)
{
	cJSON	*o;

	o = cJSON_CreateObject();
	switch (ps->kind) {
	case LAYER_ABSENT:
		cJSON_AddStringToObject(o, "kind", "absent");
		break;
	case LAYER_FILE:
		cJSON_AddStringToObject(o, "kind", "file");
		cJSON_AddNumberToObject(o, "size", (double)ps->size);
		cJSON_AddNumberToObject(o, "mode", ps->mode);
		cJSON_AddStringToObject(o, "sha256", ps->digest);
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
		cJSON_AddItemToObject(c, "base", publish_state_json(b));
	if (h != NULL)
		cJSON_AddItemToObject(c, "head", publish_state_json(h));
	if (s != NULL)
		cJSON_AddItemToObject(c, "session", publish_state_json(s));
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
	char			*anc, *slash, *bt, *ht, *st, *out, *cause;
	size_t			 bl, hl, sl, ol;
	int			 r, isdir;

	isdir = e->kind == PUBLISH_MKDIR || e->kind == PUBLISH_OPAQUE ||
	    e->kind == PUBLISH_PARENT;
	if (gitignore_ignored(x->gi, e->path, isdir))
		return (0);		/* last writer wins */

	/* An ancestor changed kind since the base: the tree moved away. */
	anc = xstrdup(e->path);
	while ((slash = strrchr(anc, '/')) != NULL) {
		*slash = '\0';
		if (publish_state(x->base, anc, &b, &x->error) != 0 ||
		    publish_state(x->head, anc, &h, &x->error) != 0) {
			free(anc);
			return (-1);
		}
		if (b.kind != h.kind) {
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
	if (publish_state(x->base, e->path, &b, &x->error) != 0 ||
	    publish_state(x->head, e->path, &h, &x->error) != 0 ||
	    publish_session_state(x, e, &s, &x->error) != 0)
		return (-1);
	if (publish_state_eq(&b, &h))
		return (0);		/* unchanged since the base */
	if (publish_state_eq(&s, &h))
		return (0);		/* both made the same change */
	if (b.kind == LAYER_ABSENT && h.kind == LAYER_DIR &&
	    s.kind == LAYER_DIR && e->kind == PUBLISH_MKDIR)
		return (0);		/* both created the directory */
	if (b.kind == LAYER_FILE && h.kind == LAYER_FILE &&
	    s.kind == LAYER_FILE) {
		bt = util_read_file(b.file, PUBLISH_MERGE_MAX, &bl);
		ht = util_read_file(h.file, PUBLISH_MERGE_MAX, &hl);
		st = util_read_file(s.file, PUBLISH_MERGE_MAX, &sl);
		r = 1;
		if (bt != NULL && ht != NULL && st != NULL &&
		    merge_mergeable(bt, bl) && merge_mergeable(ht, hl) &&
		    merge_mergeable(st, sl)) {
			cause = NULL;
			r = merge_text(bt, bl, ht, hl, st, sl, &out, &ol,
			    &cause);
			if (r == 0) {
				e->merged = out;
				e->merged_len = ol;
			} else if (r == -1) {
				x->error = cause;
			}
		}
		free(bt);
		free(ht);
		free(st);
		if (r == 1)
			publish_conflict(x, e->path, "both sides changed the"
			    " same lines", &b, &h, &s);
		return (r);
	}
	publish_conflict(x, e->path, "changed on both sides", &b, &h, &s);
	return (1);
}

/* Remove overlayfs's own attributes from a file we publish. */
static void
publish_strip_xattrs(const char *path)
{
	char	 names[4096], *p;
	ssize_t	 n;

	if ((n = llistxattr(path, names, sizeof names)) <= 0)
		return;
	for (p = names; p < names + n; p += strlen(p) + 1) {
		if (strncmp(p, "trusted.overlay.", 16) == 0)
			lremovexattr(path, p);
	}
}

static int
publish_write_file(const char *path, const char *buf, size_t len,
    mode_t mode)
{
	int	fd, r = 0;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    mode)) == -1)
		return (-1);
	if (job_write_all(fd, buf, len) != 0 || fchmod(fd, mode) != 0)
		r = -1;
	close(fd);
	return (r);
}

/* Build the layer in dir from the capture; feed its digest. */
static int
publish_build(struct publish_ctx *x, const char *dir, EVP_MD_CTX *md,
    unsigned long long *bytes)
{
	struct publish_entry	*e;
	struct stat		 st;
	char			 src[PATH_MAX], dst[PATH_MAX], target[PATH_MAX];
	char			 kind[2], size[32], digest[65];
	ssize_t			 n;
	size_t			 i;

	if (mkdir(dir, 0755) != 0) {
		xasprintf(&x->error, "cannot create %s: %s", dir,
		    strerror(errno));
		return (-1);
	}
	for (i = 0; i < x->cap.n; i++) {
		e = &x->cap.e[i];
		snprintf(src, sizeof src, "%s/%s", x->a->upper, e->path);
		snprintf(dst, sizeof dst, "%s/%s", dir, e->path);
		kind[1] = '\0';
		switch (e->kind) {
		case PUBLISH_PARENT:
		case PUBLISH_MKDIR:
		case PUBLISH_OPAQUE:
			if (mkdir(dst, e->mode) != 0 || chmod(dst,
			    e->mode) != 0)
				goto fail;
			if (e->kind == PUBLISH_OPAQUE && lsetxattr(dst,
			    "trusted.overlay.opaque", "y", 1, 0) != 0)
				goto fail;
			if (e->kind == PUBLISH_PARENT)
				continue;	/* not a change */
			kind[0] = e->kind == PUBLISH_OPAQUE ? 'o' : 'd';
			break;
		case PUBLISH_DELETE:
			if (mknod(dst, S_IFCHR | 0, makedev(0, 0)) != 0)
				goto fail;
			kind[0] = 'w';
			break;
		case PUBLISH_SYMLINK:
			n = readlink(src, target, sizeof target - 1);
			if (n < 0)
				goto fail;
			target[n] = '\0';
			if (symlink(target, dst) != 0)
				goto fail;
			kind[0] = 'l';
			break;
		case PUBLISH_WRITE:
			if (e->merged != NULL) {
				if (publish_write_file(dst, e->merged,
				    e->merged_len, e->mode) != 0)
					goto fail;
			} else if (link(src, dst) != 0) {
				goto fail;
			}
			publish_strip_xattrs(dst);
			kind[0] = 'f';
			break;
		}
		EVP_DigestUpdate(md, kind, 2);
		EVP_DigestUpdate(md, e->path, strlen(e->path) + 1);
		if (kind[0] == 'f') {
			if (lstat(dst, &st) != 0 ||
			    publish_file_digest(dst, digest, &x->error) != 0)
				goto fail;
			snprintf(size, sizeof size, "%lld",
			    (long long)st.st_size);
			EVP_DigestUpdate(md, size, strlen(size) + 1);
			EVP_DigestUpdate(md, digest, 65);
			*bytes += st.st_size;
		} else if (kind[0] == 'l')
			EVP_DigestUpdate(md, target, strlen(target) + 1);
	}
	return (0);
fail:
	if (x->error == NULL)
		xasprintf(&x->error, "cannot build the layer entry %s: %s",
		    e->path, strerror(errno));
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
	path = state_path("sandboxes/%s/stack/layers/%s.meta.json", sbox,
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

static int
publish_report(int fd, cJSON *rep)
{
	char	*text;
	int	 r;

	text = util_json_print(rep);
	r = job_write_all(fd, text, strlen(text));
	free(text);
	cJSON_Delete(rep);
	return (r == 0 ? 0 : 1);
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

/* Blame records for the files a commit wrote (errors are only logged). */
static void
publish_audit(struct publish_ctx *x, const char *sbox, const char *id,
    const char *owner, const char *dest)
{
	char	 file[PATH_MAX], *cause = NULL;
	size_t	 i;

	for (i = 0; i < x->cap.n; i++) {
		if (x->cap.e[i].kind != PUBLISH_WRITE)
			continue;
		snprintf(file, sizeof file, "%s/%s", dest, x->cap.e[i].path);
		if (audit_record(sbox, x->head, x->cap.e[i].path,
		    x->cap.e[i].prev, id, owner, file, &cause) != 0) {
			log_warnx("blame of %s: %s", x->cap.e[i].path, cause);
			free(cause);
			cause = NULL;
		}
	}
}

/*
 * Build the captured changes into a layer on top of x->head, commit it
 * (the writer lock is held and released here), record blame for every
 * file written, and report.
 */
static int
publish_commit(struct publish_ctx *x0, const char *sbox, const char *owner,
    int lock, int fd, size_t changed)
{
	struct publish_ctx	 x = *x0;
	struct layer_stack	*next;
	EVP_MD_CTX		*md;
	unsigned char		 dig[32];
	unsigned int		 diglen;
	unsigned long long	 bytes = 0;
	char			 id[20], digest[72], head_digest[72], *staging;
	char			*dest, *meta, *smeta, *text, *mtext;
	char			*smanifest, *manifest, *stack;
	cJSON			*rep, *list, *m;
	size_t			 i;
	int			 sfd = -1;

	layer_new_id(x.head->version + 1, 'L', id);
	staging = state_path("sandboxes/%s/stack/staging/%s", sbox, id);
	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_DigestInit_ex", __func__);
	if (publish_build(&x, staging, md, &bytes) != 0) {
		basecache_remove_tree(staging);
		layer_unlock(lock);
		return (publish_reject(fd, "storage_error", x.error, NULL));
	}
	EVP_DigestFinal_ex(md, dig, &diglen);
	EVP_MD_CTX_free(md);
	memcpy(digest, "sha256:", 7);
	util_hex(dig, sizeof dig, digest + 7);

	/* The same layer as the head's top: nothing to publish. */
	publish_meta_digest(sbox, x.head->ids[0], head_digest);
	if (strcmp(head_digest, digest) == 0) {
		basecache_remove_tree(staging);
		layer_unlock(lock);
		rep = cJSON_CreateObject();
		cJSON_AddNullToObject(rep, "publish");
		cJSON_AddTrueToObject(rep, "same_as_head");
		publish_extra(rep, x.extra);
		return (publish_report(fd, rep));
	}
	/*
	 * The meta file and the next manifest are written beside the layer
	 * in staging/, so that one syncfs makes all three durable before any
	 * is renamed into place; the fsync of the stack's directory after
	 * the manifest's rename then commits the renames (the file systems
	 * we run on journal them in order).
	 */
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "layer_id", id);
	cJSON_AddStringToObject(m, "owner", owner);
	cJSON_AddNumberToObject(m, "created_at_ms", (double)now_ms());
	cJSON_AddStringToObject(m, "digest", digest);
	cJSON_AddNumberToObject(m, "bytes", (double)bytes);
	cJSON_AddNumberToObject(m, "changed_paths", (double)changed);
	text = util_json_print(m);
	cJSON_Delete(m);
	dest = state_path("sandboxes/%s/stack/layers/%s", sbox, id);
	meta = state_path("sandboxes/%s/stack/layers/%s.meta.json",
	    sbox, id);
	smeta = state_path("sandboxes/%s/stack/staging/%s.meta.json", sbox,
	    id);
	smanifest = state_path("sandboxes/%s/stack/staging/%s.manifest.json",
	    sbox, id);
	manifest = layer_manifest_path(sbox);
	stack = state_path("sandboxes/%s/stack", sbox);

	next = xcalloc(1, sizeof *next);
	next->version = x.head->version + 1;
	next->n = x.head->n + 1;
	next->ids = xcalloc(next->n, sizeof *next->ids);
	next->paths = xcalloc(next->n, sizeof *next->paths);
	next->ids[0] = xstrdup(id);
	next->paths[0] = xstrdup(dest);
	for (i = 0; i < x.head->n; i++) {
		next->ids[i + 1] = xstrdup(x.head->ids[i]);
		next->paths[i + 1] = xstrdup(x.head->paths[i]);
	}
	mtext = layer_stack_text(next);

	if (util_write_file(smeta, text, strlen(text), 0, &x.error) != 0 ||
	    util_write_file(smanifest, mtext, strlen(mtext), 0,
	    &x.error) != 0) {
		free(text);
		free(mtext);
		unlink(smeta);
		basecache_remove_tree(staging);
		layer_unlock(lock);
		return (publish_reject(fd, "storage_error", x.error, NULL));
	}
	free(text);
	free(mtext);
	if ((sfd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    syncfs(sfd) != 0 || rename(staging, dest) != 0 ||
	    rename(smeta, meta) != 0) {
		if (sfd != -1)
			close(sfd);
		xasprintf(&x.error, "cannot move the layer into place: %s",
		    strerror(errno));
		unlink(smeta);
		unlink(smanifest);
		unlink(meta);
		basecache_remove_tree(staging);
		basecache_remove_tree(dest);
		layer_unlock(lock);
		return (publish_reject(fd, "storage_error", x.error, NULL));
	}
	close(sfd);
	if (rename(smanifest, manifest) != 0) {
		xasprintf(&x.error, "cannot commit the manifest: %s",
		    strerror(errno));
		unlink(smanifest);
		unlink(meta);
		basecache_remove_tree(dest);
		layer_unlock(lock);
		return (publish_reject(fd, "storage_error", x.error, NULL));
	}
	/* Renamed, the manifest is what every reader sees: published. */
	if ((sfd = open(stack, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fsync(sfd) != 0)
		log_warn("%s: the publish of %s may not survive a crash",
		    stack, id);
	if (sfd != -1)
		close(sfd);
	publish_audit(&x, sbox, id, owner, dest);
	layer_unlock(lock);

	rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "layer_id", id);
	cJSON_AddNumberToObject(rep, "manifest_version", next->version);
	list = cJSON_AddArrayToObject(rep, "changed_paths");
	for (i = 0; i < x.cap.n && cJSON_GetArraySize(list) <
	    PUBLISH_PATHS_REPORTED; i++) {
		if (x.cap.e[i].kind != PUBLISH_PARENT)
			cJSON_AddItemToArray(list,
			    cJSON_CreateString(x.cap.e[i].path));
	}
	if (changed > PUBLISH_PATHS_REPORTED)
		cJSON_AddNumberToObject(rep, "changed_path_count",
		    (double)changed);
	if (x.cap.ndropped > 0) {
		list = cJSON_AddArrayToObject(rep, "dropped");
		for (i = 0; i < x.cap.ndropped; i++)
			cJSON_AddItemToArray(list,
			    cJSON_CreateString(x.cap.dropped[i]));
	}
	publish_extra(rep, x.extra);
	return (publish_report(fd, rep));
}

/* The child: capture, validate, check, commit. */
int
publish_child(void *arg, int fd)
{
	struct publish_ctx	 x;
	struct publish_entry	*e;
	const struct publish_args *a = arg;
	const char		*class;
	cJSON			*rep, *list, *details;
	size_t			 i, changed = 0;
	int			 lock, r;

	memset(&x, 0, sizeof x);
	x.a = a;
	x.base = a->base;
	x.conflicts = cJSON_CreateArray();
	if (publish_capture_dir(&x, "") != 0)
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
			changed++;
	}
	if (changed == 0) {
		rep = cJSON_CreateObject();
		cJSON_AddNullToObject(rep, "publish");
		list = cJSON_AddArrayToObject(rep, "dropped");
		for (i = 0; i < x.cap.ndropped; i++)
			cJSON_AddItemToArray(list,
			    cJSON_CreateString(x.cap.dropped[i]));
		return (publish_report(fd, rep));
	}

	if ((lock = layer_lock(a->sandbox)) == -1)
		return (publish_reject(fd, "storage_error", "cannot take the"
		    " stack's writer lock", NULL));
	if ((x.head = layer_stack_read(a->sandbox, &x.error)) == NULL) {
		layer_unlock(lock);
		return (publish_reject(fd, "storage_error", x.error, NULL));
	}
	if (x.head->version != x.base->version) {
		x.gi = gitignore_new();
		for (i = 0; i < x.cap.n; i++)
			publish_gitignore_load(&x, x.cap.e[i].path);
		for (i = 0; i < x.cap.n; i++) {
			r = publish_check(&x, &x.cap.e[i]);
			if (r == -1) {
				layer_unlock(lock);
				return (publish_reject(fd, "storage_error",
				    x.error, NULL));
			}
		}
		gitignore_free(x.gi);
		if (cJSON_GetArraySize(x.conflicts) > 0) {
			layer_unlock(lock);
			details = cJSON_CreateObject();
			cJSON_AddItemToObject(details, "conflicts",
			    x.conflicts);
			cJSON_AddNumberToObject(details, "base_version",
			    x.base->version);
			cJSON_AddNumberToObject(details, "head_version",
			    x.head->version);
			return (publish_reject(fd, "source_conflict", "the"
			    " session's changes conflict with changes"
			    " published since it began", details));
		}
	}

	return (publish_commit(&x, a->sandbox, a->owner, lock, fd, changed));
}

/* A refusal of a sessionless write or edit. */
static int
publish_file_refuse(int fd, int lock, struct files_error *err)
{
	if (lock != -1)
		layer_unlock(lock);
	return (publish_report(fd, files_report(NULL, err)));
}

/*
 * The child of a sessionless file_write or file_edit: under the writer
 * lock, read the head, apply the change to the path's latest content
 * and commit it as a one-file layer (with the parent directories it
 * needs), so that concurrent writers queue and none loses an update.
 */
int
publish_file_child(void *arg, int fd)
{
	const struct publish_file_args	*f = arg;
	struct publish_args		 a;
	struct publish_ctx		 x;
	struct publish_entry		*e;
	struct files_error		 err;
	struct files_edit_result	 res;
	struct layer_entry		 le, pe;
	struct stat			 st;
	const char			*buf;
	char				*prefix, *p, *slash, *old, *cause = NULL;
	size_t				 len, oldlen, changed = 1, i;
	mode_t				 mode = 0644;
	int				 lock, ffd;

	memset(&x, 0, sizeof x);
	memset(&err, 0, sizeof err);
	memset(&res, 0, sizeof res);
	memset(&a, 0, sizeof a);
	a.sandbox = f->sandbox;
	a.upper = "";
	a.owner = f->owner;
	x.a = &a;
	if (f->kind == FILES_EDIT && files_edits_check(f->edits, &err) != 0)
		return (publish_file_refuse(fd, -1, &err));

	if ((lock = layer_lock(f->sandbox)) == -1)
		return (publish_reject(fd, "storage_error", "cannot take the"
		    " stack's writer lock", NULL));
	if ((x.head = layer_stack_read(f->sandbox, &x.error)) == NULL) {
		layer_unlock(lock);
		return (publish_reject(fd, "storage_error", x.error, NULL));
	}
	x.base = x.head;
	if (files_snapshot_find(x.head, f->path, &le, &err) != 0)
		return (publish_file_refuse(fd, lock, &err));
	if (f->kind == FILES_EDIT) {
		if (le.kind != LAYER_FILE) {
			err.kind = TOOL_ERR_NOT_FOUND;
			xasprintf(&err.message, "no file %s in the workspace",
			    f->path);
			err.details = tool_details("path", f->path);
			return (publish_file_refuse(fd, lock, &err));
		}
		if ((ffd = open(le.path, O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1 || fstat(ffd, &st) != 0) {
			err.kind = TOOL_ERR_FAILED;
			xasprintf(&err.message, "cannot read %s: %s", f->path,
			    strerror(errno));
			return (publish_file_refuse(fd, lock, &err));
		}
		old = files_read_text(ffd, &st, FILES_EDIT_MAX, f->path,
		    &oldlen, &err);
		close(ffd);
		if (old == NULL)
			return (publish_file_refuse(fd, lock, &err));
		if (files_edit_apply(old, oldlen, f->edits, f->path, &res,
		    &err) != 0)
			return (publish_file_refuse(fd, lock, &err));
		buf = res.out;
		len = res.outlen;
	} else {
		buf = f->content;
		len = f->len;
	}
	if (le.kind == LAYER_FILE)
		mode = le.st.st_mode & 07777;

	/* The parents: kept as they are, or made. */
	prefix = xstrdup(f->path);
	for (p = prefix, i = 0; (slash = strchr(p, '/')) != NULL;
	    p = slash + 1, i++) {
		*slash = '\0';
		/* The path's resolution found the first parents. */
		if (i < le.nparent)
			publish_add(&x.cap, prefix, PUBLISH_PARENT,
			    le.parent_mode[i]);
		else if (le.nparent < LAYER_PARENTS_MAX) {
			/* Missing from here down. */
			publish_add(&x.cap, prefix, PUBLISH_MKDIR, 0755);
			changed++;
		} else if (layer_resolve(x.head, prefix, &pe, &cause) != 0) {
			layer_unlock(lock);
			return (publish_reject(fd, "storage_error", cause,
			    NULL));
		} else
			publish_add(&x.cap, prefix, PUBLISH_PARENT,
			    pe.st.st_mode);
		*slash = '/';
	}
	publish_add(&x.cap, f->path, PUBLISH_WRITE, mode);
	e = &x.cap.e[x.cap.n - 1];
	e->merged = (char *)buf;
	e->merged_len = len;
	e->prev = &le;

	x.extra = cJSON_CreateObject();
	if (f->kind == FILES_EDIT) {
		cJSON_AddStringToObject(x.extra, "type", "edit");
		cJSON_AddNumberToObject(x.extra, "edits_applied",
		    (double)res.applied);
		cJSON_AddNumberToObject(x.extra, "replacements",
		    (double)res.replacements);
	} else
		cJSON_AddStringToObject(x.extra, "type", le.kind ==
		    LAYER_FILE ? "update" : "create");
	cJSON_AddNumberToObject(x.extra, "bytes_written", (double)len);
	return (publish_commit(&x, f->sandbox, f->owner, lock, fd, changed));
}
