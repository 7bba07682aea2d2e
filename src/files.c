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
 * The engine of file_read, file_write and file_edit: the path rules, a
 * streaming scan that cuts a window of whole lines out of a UTF-8 text,
 * exact edits, and the two places a file can be: a session's live view
 * (walked from the session's /workspace descriptor, one component at a
 * time, never following a symlink) and the published snapshot (resolved
 * through the layers in C, no mount). Sessionless writes and edits are
 * published as a one-file layer by publish_file_child (publish.c), which
 * uses the same checks.
 *
 * An operation on a small file runs in the server; one that reads or
 * writes more than FILES_INLINE_MAX bytes runs in a helper process of
 * the sandbox (charged to it, counted, confined to an empty root: it
 * works only through the descriptor the server hands it). A read stops
 * at the first byte that is not text; a file with a hole is not text (a
 * hole reads as NUL bytes), so a terabyte of hole costs nothing.
 */

#include "config.h"

#include <sys/stat.h>

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

#define FILES_COMPONENT_MAX	255
#define FILES_WINDOW_MAX	(256 * 1024)
#define FILES_LIMIT_MAX		2000
#define FILES_INLINE_MAX	(1024 * 1024)
#define FILES_CHUNK		(256 * 1024)

/* Fill an error; always returns NULL (for "return (files_fail(...))"). */
static void *
files_fail(struct cause *err, enum cause_kind kind, cJSON *details,
    const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	cause_setv(err, kind, details, fmt, ap);
	va_end(ap);
	return (NULL);
}

static cJSON *
files_path_details(const char *path)
{
	cJSON	*d;

	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "path", path);
	return (d);
}

/* An error in the edits argument. */
static void
files_edits_fail(struct cause *err, const char *fmt, ...)
{
	cJSON	*d;
	va_list	 ap;

	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "argument", "edits");
	va_start(ap, fmt);
	cause_setv(err, CAUSE_INVALID, d, fmt, ap);
	va_end(ap);
}

/*
 * Normalize a path given to a file tool: relative to the workspace, or
 * absolute under /workspace. "." components and repeated or trailing
 * slashes go; "" is the workspace itself. Returns the relative path, or
 * NULL with an "invalid path" message.
 */
char *
files_path(const char *in, char **message)
{
	const char	*p = in, *c;
	char		*out;
	size_t		 len, clen, o = 0;

	len = strlen(in);
	if (len == 0) {
		xasprintf(message, "invalid path: \"\" (the path is empty)");
		return (NULL);
	}
	if (len >= PATH_MAX) {
		xasprintf(message, "invalid path: %.100s... (longer than %d"
		    " bytes)", in, PATH_MAX - 1);
		return (NULL);
	}
	if (strstr(in, NUL_MARK) != NULL) {
		xasprintf(message, "invalid path: the path contains a NUL"
		    " byte");
		return (NULL);
	}
	if (!util_utf8_valid(in, len)) {
		xasprintf(message, "invalid path: the path is not UTF-8");
		return (NULL);
	}
	if (in[0] == '/') {
		if (strncmp(in, "/workspace", 10) != 0 ||
		    (in[10] != '\0' && in[10] != '/')) {
			xasprintf(message, "invalid path: %s (an absolute path"
			    " must be under /workspace)", in);
			return (NULL);
		}
		p = in + 10;
	}
	out = xmalloc(len + 1);
	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		c = p;
		while (*p != '\0' && *p != '/')
			p++;
		clen = p - c;
		if (clen == 1 && c[0] == '.')
			continue;
		if (clen == 2 && c[0] == '.' && c[1] == '.') {
			xasprintf(message, "invalid path: %s (a .. component"
			    " is not allowed)", in);
			free(out);
			return (NULL);
		}
		if (clen > FILES_COMPONENT_MAX) {
			xasprintf(message, "invalid path: %.100s... (a"
			    " component is longer than %d bytes)", in,
			    FILES_COMPONENT_MAX);
			free(out);
			return (NULL);
		}
		if (o != 0)
			out[o++] = '/';
		memcpy(out + o, c, clen);
		o += clen;
	}
	out[o] = '\0';
	return (out);
}

/* Whether a relative path has a component the layer format reserves. */
int
files_path_reserved(const char *rel)
{
	const char	*p = rel;

	while (p != NULL) {
		if (strncmp(p, ".wh.", 4) == 0)
			return (1);
		if ((p = strchr(p, '/')) != NULL)
			p++;
	}
	return (0);
}

/* Whether bytes are text we serve: UTF-8 without NUL. */
int
files_text(const char *buf, size_t len)
{
	return (memchr(buf, '\0', len) == NULL && util_utf8_valid(buf, len));
}

/*
 * The window scan: fed a file's bytes in chunks, it checks they are
 * UTF-8 text, counts lines and keeps lines [offset, offset + limit) cut
 * to whole lines within FILES_WINDOW_MAX.
 */
struct files_scan {
	long long	 offset;
	long long	 limit;
	unsigned long long bytes;
	unsigned long long lines;	/* complete lines seen */
	unsigned char	 carry[4];	/* an unfinished UTF-8 sequence */
	size_t		 ncarry;
	int		 bad;		/* not UTF-8 text */
	char		*win;
	size_t		 winlen;
	size_t		 winsize;
	size_t		 linestart;	/* where the current line began */
	long long	 num;		/* whole lines in the window */
	int		 full;
	long long	 longline;	/* a first line over the window */
	int		 lastnl;	/* the last byte was \n */
};

static void
files_scan_init(struct files_scan *sc, long long offset, long long limit)
{
	memset(sc, 0, sizeof *sc);
	sc->offset = offset;
	sc->limit = limit;
}

static size_t
files_utf8_need(unsigned char c)
{
	if (c >= 0xf0)
		return (4);
	if (c >= 0xe0)
		return (3);
	if (c >= 0xc0)
		return (2);
	return (1);
}

/* Check a chunk is UTF-8, carrying a sequence cut at its end. */
static void
files_scan_utf8(struct files_scan *sc, const char *buf, size_t len)
{
	const unsigned char	*p = (const unsigned char *)buf;
	size_t			 need, take, i, k;
	unsigned char		 c;

	if (sc->bad)
		return;
	if (sc->ncarry > 0) {
		need = files_utf8_need(sc->carry[0]);
		take = need - sc->ncarry;
		if (take > len)
			take = len;
		memcpy(sc->carry + sc->ncarry, p, take);
		sc->ncarry += take;
		p += take;
		len -= take;
		if (sc->ncarry < need)
			return;
		if (!util_utf8_valid((char *)sc->carry, sc->ncarry)) {
			sc->bad = 1;
			return;
		}
		sc->ncarry = 0;
	}
	k = len;
	for (i = 1; i <= 3 && i <= len; i++) {
		c = p[len - i];
		if ((c & 0xc0) == 0x80)
			continue;
		if (c >= 0xc0 && files_utf8_need(c) > i)
			k = len - i;
		break;
	}
	if (!util_utf8_valid((const char *)p, k)) {
		sc->bad = 1;
		return;
	}
	memcpy(sc->carry, p + k, len - k);
	sc->ncarry = len - k;
}

static void
files_scan_keep(struct files_scan *sc, const char *buf, size_t len)
{
	if (sc->winlen + len > sc->winsize) {
		while (sc->winlen + len > sc->winsize)
			sc->winsize = sc->winsize == 0 ? 4096 :
			    sc->winsize * 2;
		sc->win = xrealloc(sc->win, sc->winsize + 1);
	}
	memcpy(sc->win + sc->winlen, buf, len);
	sc->winlen += len;
}

/* A line (or the start of one) of the window; nl: it ends here. */
static void
files_scan_line(struct files_scan *sc, const char *buf, size_t len, int nl)
{
	long long	line = (long long)sc->lines + 1;

	if (sc->full || line < sc->offset || line >= sc->offset + sc->limit)
		return;
	if (sc->winlen + len > FILES_WINDOW_MAX) {
		/* This line does not fit: the window ends before it. */
		if (sc->num == 0 && sc->longline == 0)
			sc->longline = line;
		sc->winlen = sc->linestart;
		sc->full = 1;
		return;
	}
	files_scan_keep(sc, buf, len);
	if (nl) {
		sc->num++;
		sc->linestart = sc->winlen;
	}
}

static void
files_scan_feed(struct files_scan *sc, const char *buf, size_t len)
{
	const char	*p = buf, *end = buf + len, *nl;

	if (len == 0)
		return;
	files_scan_utf8(sc, buf, len);
	if (memchr(buf, '\0', len) != NULL)
		sc->bad = 1;
	sc->bytes += len;
	while (p < end) {
		nl = memchr(p, '\n', end - p);
		if (nl == NULL) {
			files_scan_line(sc, p, end - p, 0);
			break;
		}
		files_scan_line(sc, p, nl + 1 - p, 1);
		sc->lines++;
		p = nl + 1;
	}
	sc->lastnl = end[-1] == '\n';
}

/* The end of the file: the result, or NULL with an error. */
static cJSON *
files_scan_end(struct files_scan *sc, const char *path,
    struct cause *err)
{
	long long	total, next;
	cJSON		*r;

	if (sc->ncarry > 0)
		sc->bad = 1;
	if (sc->bad) {
		free(sc->win);
		return (files_fail(err, CAUSE_INVALID,
		    files_path_details(path), "%s is not UTF-8 text", path));
	}
	total = (long long)sc->lines;
	if (sc->bytes > 0 && !sc->lastnl) {
		/* The last line has no \n: it is whole now. */
		total++;
		if (!sc->full && total >= sc->offset &&
		    total < sc->offset + sc->limit) {
			sc->num++;
			sc->linestart = sc->winlen;
		}
	}
	if (sc->longline != 0) {
		free(sc->win);
		return (files_fail(err, CAUSE_INVALID,
		    files_path_details(path), "line %lld of %s is longer than"
		    " the %d KiB a read returns; read the file another way"
		    " (a command) or split the line", sc->longline, path,
		    FILES_WINDOW_MAX / 1024));
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "path", path);
	if (sc->win == NULL)
		sc->win = xstrdup("");
	sc->win[sc->winlen] = '\0';
	cJSON_AddStringToObject(r, "content", sc->win);
	free(sc->win);
	sc->win = NULL;
	cJSON_AddNumberToObject(r, "start_line", (double)sc->offset);
	cJSON_AddNumberToObject(r, "num_lines", (double)sc->num);
	cJSON_AddNumberToObject(r, "total_lines", (double)total);
	cJSON_AddNumberToObject(r, "bytes_read", (double)sc->winlen);
	cJSON_AddNumberToObject(r, "total_bytes", (double)sc->bytes);
	next = sc->offset + sc->num;
	if (next <= total)
		cJSON_AddNumberToObject(r, "next_offset", (double)next);
	else
		cJSON_AddNullToObject(r, "next_offset");
	cJSON_AddBoolToObject(r, "truncated", next <= total);
	return (r);
}

/*
 * A window of a text held in memory (the unit tests use it; reads of
 * files go through the same scan in chunks).
 */
cJSON *
files_window(const char *buf, size_t len, long long offset, long long limit,
    const char *path, struct cause *err)
{
	struct files_scan	sc;
	size_t			off, n;

	files_scan_init(&sc, offset < 1 ? 1 : offset, limit);
	for (off = 0; off < len; off += n) {
		n = len - off > FILES_CHUNK ? FILES_CHUNK : len - off;
		files_scan_feed(&sc, buf + off, n);
	}
	return (files_scan_end(&sc, path, err));
}

/* Scan an open file. */
static cJSON *
files_window_fd(int fd, long long offset, long long limit, const char *path,
    struct cause *err)
{
	struct files_scan	 sc;
	struct stat		 st;
	char			*buf;
	ssize_t			 n;
	off_t			 left;

	/* The file as long as it is now: one being appended to ends. */
	if (fstat(fd, &st) != 0)
		return (files_fail(err, CAUSE_FAILED, files_path_details(
		    path), "cannot read %s: %s", path, strerror(errno)));
	if (tree_sparse(fd, st.st_size))
		return (files_fail(err, CAUSE_INVALID, files_path_details(
		    path), "%s is not UTF-8 text", path));
	left = st.st_size;
	files_scan_init(&sc, offset, limit);
	buf = xmalloc(FILES_CHUNK);
	while (left > 0 && !sc.bad) {
		n = read(fd, buf, left < FILES_CHUNK ? left : FILES_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			free(buf);
			free(sc.win);
			return (files_fail(err, CAUSE_FAILED,
			    files_path_details(path), "cannot read %s: %s",
			    path, strerror(errno)));
		}
		if (n == 0)
			break;
		files_scan_feed(&sc, buf, n);
		left -= n;
	}
	free(buf);
	return (files_scan_end(&sc, path, err));
}

/* Convert bare \n line ends to \r\n. */
static char *
files_crlf(const char *s, size_t len, size_t *outlen)
{
	char	*out;
	size_t	 i, o = 0;

	out = xmalloc(len * 2 + 1);
	for (i = 0; i < len; i++) {
		if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
			out[o++] = '\r';
		out[o++] = s[i];
	}
	out[o] = '\0';
	*outlen = o;
	return (out);
}

/* Non-overlapping occurrences of needle, left to right. */
static size_t
files_count(const char *buf, size_t len, const char *needle, size_t nlen)
{
	const char	*p = buf, *end = buf + len, *hit;
	size_t		 n = 0;

	while ((size_t)(end - p) >= nlen &&
	    (hit = memmem(p, end - p, needle, nlen)) != NULL) {
		n++;
		p = hit + nlen;
	}
	return (n);
}

/* Check one item of an edit list; its strings and replace_all. */
static int
files_edit_item(cJSON *item, int n, const char **old, const char **new,
    int *all, struct cause *err)
{
	cJSON		*v;

	if (!cJSON_IsObject(item)) {
		files_edits_fail(err, "edit %d is not an object {old_string,"
		    " new_string, replace_all?}", n);
		return (-1);
	}
	cJSON_ArrayForEach(v, item) {
		if (strcmp(v->string, "old_string") != 0 &&
		    strcmp(v->string, "new_string") != 0 &&
		    strcmp(v->string, "replace_all") != 0) {
			files_edits_fail(err, "edit %d has an unknown"
			    " field %.100s", n, v->string);
			return (-1);
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(item, "old_string");
	if (!cJSON_IsString(v)) {
		files_edits_fail(err, "edit %d: old_string must be a string",
		    n);
		return (-1);
	}
	*old = v->valuestring;
	v = cJSON_GetObjectItemCaseSensitive(item, "new_string");
	if (!cJSON_IsString(v)) {
		files_edits_fail(err, "edit %d: new_string must be a string",
		    n);
		return (-1);
	}
	*new = v->valuestring;
	v = cJSON_GetObjectItemCaseSensitive(item, "replace_all");
	if (v != NULL && !cJSON_IsNull(v) && !cJSON_IsBool(v)) {
		files_edits_fail(err, "edit %d: replace_all must be a"
		    " boolean", n);
		return (-1);
	}
	*all = cJSON_IsTrue(v);
	if (strstr(*old, NUL_MARK) != NULL ||
	    strstr(*new, NUL_MARK) != NULL) {
		files_edits_fail(err, "edit %d: the strings must not contain"
		    " the NUL character (U+0000)", n);
		return (-1);
	}
	if (**old == '\0') {
		files_edits_fail(err, "edit %d: old_string is empty", n);
		return (-1);
	}
	if (strcmp(*old, *new) == 0) {
		files_edits_fail(err, "edit %d: old_string and new_string are"
		    " the same", n);
		return (-1);
	}
	return (0);
}

/* Check an edit list as a whole before anything is applied. */
int
files_edits_check(cJSON *edits, struct cause *err)
{
	const char	*old, *new;
	cJSON		*item;
	int		 n = 0, all;

	if (!cJSON_IsArray(edits) || cJSON_GetArraySize(edits) == 0) {
		files_edits_fail(err, "edits must be a non-empty array");
		return (-1);
	}
	/* Each edit may rewrite the whole file: their count is bounded. */
	if (cJSON_GetArraySize(edits) > FILES_EDITS_MAX) {
		files_edits_fail(err, "edits holds %d items; one file_edit"
		    " takes at most %d (split the change, or use file_write)",
		    cJSON_GetArraySize(edits), FILES_EDITS_MAX);
		return (-1);
	}
	cJSON_ArrayForEach(item, edits) {
		if (files_edit_item(item, ++n, &old, &new, &all, err) != 0)
			return (-1);
	}
	return (0);
}

/*
 * Apply an edit list to a text; the result in *out (owned by the
 * caller). Returns 0, or -1 with err filled and nothing changed.
 */
int
files_edit_apply(const char *buf, size_t len, cJSON *edits, const char *path,
    struct files_edit_result *res, struct cause *err)
{
	const char	*old0, *new0, *old, *new, *p, *hit, *end;
	char		*cur, *next, *cold = NULL, *cnew = NULL;
	size_t		 curlen, oldlen, newlen, count, nextlen, o;
	cJSON		*item;
	int		 n = 0, all, crlf;

	memset(res, 0, sizeof *res);
	if (files_edits_check(edits, err) != 0)
		return (-1);
	crlf = memmem(buf, len, "\r\n", 2) != NULL;
	cur = xmalloc(len + 1);
	memcpy(cur, buf, len);
	cur[len] = '\0';
	curlen = len;
	cJSON_ArrayForEach(item, edits) {
		files_edit_item(item, ++n, &old0, &new0, &all, err);
		old = old0;
		new = new0;
		oldlen = strlen(old);
		newlen = strlen(new);
		count = files_count(cur, curlen, old, oldlen);
		if (count == 0 && crlf && strchr(old, '\n') != NULL) {
			cold = files_crlf(old, oldlen, &oldlen);
			cnew = files_crlf(new, newlen, &newlen);
			old = cold;
			new = cnew;
			count = files_count(cur, curlen, old, oldlen);
		}
		if (count == 0) {
			files_fail(err, CAUSE_INVALID, files_path_details(
			    path), "edit %d: text not found in %s", n, path);
			goto fail;
		}
		if (count > 1 && !all) {
			files_fail(err, CAUSE_INVALID, files_path_details(
			    path), "edit %d: text found %zu times in %s; set"
			    " replace_all or add context", n, count, path);
			goto fail;
		}
		if (newlen > oldlen && (newlen - oldlen) > (FILES_EDIT_OUT_MAX -
		    curlen) / count) {
			files_fail(err, CAUSE_INVALID, files_path_details(
			    path), "edit %d: the result would be larger than"
			    " %d MiB", n, FILES_EDIT_OUT_MAX / (1024 * 1024));
			goto fail;
		}
		nextlen = curlen - count * oldlen + count * newlen;
		next = xmalloc(nextlen + 1);
		p = cur;
		end = cur + curlen;
		o = 0;
		while ((hit = memmem(p, end - p, old, oldlen)) != NULL) {
			memcpy(next + o, p, hit - p);
			o += hit - p;
			memcpy(next + o, new, newlen);
			o += newlen;
			p = hit + oldlen;
		}
		memcpy(next + o, p, end - p);
		o += end - p;
		next[o] = '\0';
		free(cur);
		cur = next;
		curlen = o;
		res->replacements += count;
		res->applied++;
		free(cold);
		free(cnew);
		cold = cnew = NULL;
	}
	if (curlen == len && memcmp(cur, buf, len) == 0) {
		files_fail(err, CAUSE_INVALID, files_path_details(path),
		    "edits made no change to %s", path);
		free(cur);
		return (-1);
	}
	res->out = cur;
	res->outlen = curlen;
	return (0);
fail:
	free(cold);
	free(cnew);
	free(cur);
	return (-1);
}

/*
 * A file in the published snapshot: resolve rel through the stack and
 * refuse what the tools refuse. Returns 0 with *le filled (kind absent
 * or file), or -1 with err.
 */
int
files_snapshot_find(struct layer_stack *ls, const char *rel,
    struct layer_entry *le, struct cause *err)
{
	char	*cause = NULL;

	if (*rel == '\0') {
		files_fail(err, CAUSE_INVALID, files_path_details("."),
		    "the workspace root is a directory");
		return (-1);
	}
	if (layer_resolve(ls, rel, le, &cause) != 0) {
		files_fail(err, CAUSE_FAILED, files_path_details(rel),
		    "cannot resolve %s: %s", rel, cause);
		free(cause);
		return (-1);
	}
	if (le->blocker == LAYER_SYMLINK) {
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%.*s is a symlink (in %s); file tools never follow"
		    " symlinks", (int)le->blocker_len, rel, rel);
		return (-1);
	}
	if (le->blocker != LAYER_ABSENT) {
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%.*s is not a directory (in %s)", (int)le->blocker_len,
		    rel, rel);
		return (-1);
	}
	switch (le->kind) {
	case LAYER_ABSENT:
	case LAYER_FILE:
		return (0);
	case LAYER_SYMLINK:
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%s is a symlink; file tools never follow symlinks", rel);
		return (-1);
	case LAYER_DIR:
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%s is a directory", rel);
		return (-1);
	case LAYER_OTHER:
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%s is not a regular file", rel);
		return (-1);
	}
	fatalx("%s: kind %d", __func__, le->kind);
}

static void *
files_not_found(struct cause *err, const char *rel)
{
	return (files_fail(err, CAUSE_NOT_FOUND, files_path_details(rel),
	    "no file %s in the workspace", rel));
}

/*
 * Walk to the directory holding rel's last component in a session's
 * view, from its /workspace descriptor, one component at a time and
 * never through a symlink. With create, missing directories are made
 * (0755); refusals all come before anything is made. Returns a
 * directory descriptor and sets *leaf, or -1 with err (*missing set when
 * a parent is absent and nothing was made).
 */
static int
files_session_walk(int rootfd, const char *rel, int create,
    const char **leaf, int *missing, struct cause *err)
{
	struct stat	 st;
	char		*copy, *p, *slash;
	int		 fd, next, making = 0;

	*missing = 0;
	if ((fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0)) == -1) {
		files_fail(err, CAUSE_FAILED, NULL, "cannot use the"
		    " session's workspace: %s", strerror(errno));
		return (-1);
	}
	copy = xstrdup(rel);
	p = copy;
	while ((slash = strchr(p, '/')) != NULL) {
		*slash = '\0';
		if (!making && fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno != ENOENT) {
				files_fail(err, CAUSE_FAILED,
				    files_path_details(rel), "cannot look up"
				    " %s: %s", copy, strerror(errno));
				goto fail;
			}
			if (!create) {
				*missing = 1;
				goto fail;
			}
			making = 1;
		}
		if (making) {
			if (mkdirat(fd, p, 0755) != 0 && errno != EEXIST) {
				files_fail(err, CAUSE_FAILED,
				    files_path_details(rel), "cannot create"
				    " %s: %s", copy, strerror(errno));
				goto fail;
			}
		} else if (S_ISLNK(st.st_mode)) {
			files_fail(err, CAUSE_INVALID, files_path_details(
			    rel), "%s is a symlink (in %s); file tools never"
			    " follow symlinks", copy, rel);
			goto fail;
		} else if (!S_ISDIR(st.st_mode)) {
			files_fail(err, CAUSE_INVALID, files_path_details(
			    rel), "%s is not a directory (in %s)", copy, rel);
			goto fail;
		}
		next = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (next == -1) {
			files_fail(err, errno == ELOOP || errno == ENOTDIR ?
			    CAUSE_INVALID : CAUSE_FAILED,
			    files_path_details(rel), "cannot open %s: %s%s",
			    copy, strerror(errno), errno == ELOOP ||
			    errno == ENOTDIR ? " (it changed while being"
			    " opened; file tools never follow symlinks)" : "");
			goto fail;
		}
		close(fd);
		fd = next;
		*slash = '/';
		p = slash + 1;
	}
	*leaf = rel + (p - copy);
	free(copy);
	return (fd);
fail:
	free(copy);
	close(fd);
	return (-1);
}

/* Check what is at a leaf: 0 (st filled, absent: *exists 0) or -1. */
static int
files_session_leaf(int dirfd, const char *leaf, const char *rel,
    struct stat *st, int *exists, struct cause *err)
{
	*exists = 0;
	if (fstatat(dirfd, leaf, st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return (0);
		files_fail(err, CAUSE_FAILED, files_path_details(rel),
		    "cannot look up %s: %s", rel, strerror(errno));
		return (-1);
	}
	*exists = 1;
	if (S_ISLNK(st->st_mode)) {
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%s is a symlink; file tools never follow symlinks", rel);
		return (-1);
	}
	if (S_ISDIR(st->st_mode)) {
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%s is a directory", rel);
		return (-1);
	}
	if (!S_ISREG(st->st_mode)) {
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%s is not a regular file", rel);
		return (-1);
	}
	return (0);
}

/* Open an existing regular file for reading, or -1 with err. */
static int
files_open(struct files_op *op, struct stat *st, struct cause *err)
{
	struct layer_entry	 le;
	struct layer_stack	*now;
	const char		*leaf;
	char			*cause = NULL;
	int			 dirfd, fd, exists, missing;

	if (op->rootfd == -1) {
		if (files_snapshot_find(op->ls, op->path, &le, err) != 0)
			return (-1);
		fd = le.kind == LAYER_ABSENT ? -1 : open(le.path, O_RDONLY |
		    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		/*
		 * A squash may have reclaimed a layer of the stack read at
		 * the call's start (layer.c): then the head again, whose
		 * view is the same or newer.
		 */
		if (!layer_stack_whole(op->sandbox, op->ls) &&
		    (now = layer_stack_read(op->sandbox, &cause)) != NULL) {
			if (fd != -1)
				close(fd);
			layer_stack_free(op->ls);
			op->ls = now;
			return (files_open(op, st, err));
		}
		free(cause);
		if (le.kind == LAYER_ABSENT) {
			files_not_found(err, op->path);
			return (-1);
		}
	} else {
		if (*op->path == '\0') {
			files_fail(err, CAUSE_INVALID, files_path_details(
			    "."), "the workspace root is a directory");
			return (-1);
		}
		dirfd = files_session_walk(op->rootfd, op->path, 0, &leaf,
		    &missing, err);
		if (dirfd == -1) {
			if (missing)
				files_not_found(err, op->path);
			return (-1);
		}
		if (files_session_leaf(dirfd, leaf, op->path, st, &exists,
		    err) != 0) {
			close(dirfd);
			return (-1);
		}
		if (!exists) {
			close(dirfd);
			files_not_found(err, op->path);
			return (-1);
		}
		fd = openat(dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
		close(dirfd);
	}
	if (fd == -1) {
		if (errno == ENOENT)
			files_not_found(err, op->path);
		else
			files_fail(err, errno == ELOOP ? CAUSE_INVALID :
			    CAUSE_FAILED, files_path_details(op->path),
			    "cannot open %s: %s", op->path, strerror(errno));
		return (-1);
	}
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		files_fail(err, CAUSE_INVALID, files_path_details(op->path),
		    "%s is not a regular file", op->path);
		return (-1);
	}
	return (fd);
}

/* Read a whole text file of at most max bytes. */
char *
files_read_text(int fd, const struct stat *st, size_t max, const char *rel,
    size_t *len, struct cause *err)
{
	char	*buf;
	size_t	 got = 0;
	ssize_t	 n;

	if ((unsigned long long)st->st_size > max) {
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%s is %lld bytes; file_edit takes files of at most %zu"
		    " MiB (use file_write)", rel, (long long)st->st_size,
		    max / (1024 * 1024));
		return (NULL);
	}
	buf = xmalloc(max + 1);
	for (;;) {
		n = read(fd, buf + got, max + 1 - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			free(buf);
			files_fail(err, CAUSE_FAILED, files_path_details(
			    rel), "cannot read %s: %s", rel, strerror(errno));
			return (NULL);
		}
		if (n == 0)
			break;
		got += n;
		if (got > max) {
			free(buf);
			files_fail(err, CAUSE_INVALID, files_path_details(
			    rel), "%s grew past %zu MiB while being read",
			    rel, max / (1024 * 1024));
			return (NULL);
		}
	}
	buf[got] = '\0';
	if (!files_text(buf, got)) {
		free(buf);
		files_fail(err, CAUSE_INVALID, files_path_details(rel),
		    "%s is not UTF-8 text", rel);
		return (NULL);
	}
	*len = got;
	return (buf);
}

/* Write a session file atomically: a temporary beside it, renamed. */
static int
files_session_put(int dirfd, const char *leaf, const char *rel,
    const char *buf, size_t len, const struct stat *old,
    struct cause *err)
{
	char	tmp[64];
	mode_t	mode = old != NULL ? old->st_mode & 07777 : 0644;
	int	fd;

	snprintf(tmp, sizeof tmp, ".sandbox-mcp-write.%08x%08x",
	    arc4random(), arc4random());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	if (fd == -1) {
		files_fail(err, CAUSE_FAILED, files_path_details(rel),
		    "cannot write %s: %s", rel, strerror(errno));
		return (-1);
	}
	if (job_write_all(fd, buf, len) != 0 || fchmod(fd, mode) != 0 ||
	    (old != NULL && fchown(fd, old->st_uid, old->st_gid) != 0)) {
		files_fail(err, CAUSE_FAILED, files_path_details(rel),
		    "cannot write %s: %s", rel, strerror(errno));
		close(fd);
		unlinkat(dirfd, tmp, 0);
		return (-1);
	}
	close(fd);
	if (renameat(dirfd, tmp, dirfd, leaf) != 0) {
		files_fail(err, errno == EISDIR ? CAUSE_INVALID :
		    CAUSE_FAILED, files_path_details(rel),
		    "cannot write %s: %s", rel, strerror(errno));
		unlinkat(dirfd, tmp, 0);
		return (-1);
	}
	return (0);
}

/* file_write or file_edit in a session's view. */
static cJSON *
files_session_change(struct files_op *op, struct cause *err)
{
	struct files_edit_result res;
	struct stat		 st;
	const char		*leaf, *buf;
	char			*old = NULL;
	size_t			 len, oldlen;
	int			 dirfd, fd, exists, missing;
	cJSON			*r;

	if (*op->path == '\0')
		return (files_fail(err, CAUSE_INVALID, files_path_details(
		    "."), "the workspace root is a directory"));
	memset(&res, 0, sizeof res);
	if (op->kind == FILES_EDIT) {
		if (files_edits_check(op->edits, err) != 0)
			return (NULL);
		if ((fd = files_open(op, &st, err)) == -1)
			return (NULL);
		old = files_read_text(fd, &st, FILES_EDIT_MAX, op->path,
		    &oldlen, err);
		close(fd);
		if (old == NULL)
			return (NULL);
		if (files_edit_apply(old, oldlen, op->edits, op->path, &res,
		    err) != 0) {
			free(old);
			return (NULL);
		}
		free(old);
		buf = res.out;
		len = res.outlen;
	} else {
		buf = op->content;
		len = op->len;
	}
	dirfd = files_session_walk(op->rootfd, op->path, op->kind ==
	    FILES_WRITE, &leaf, &missing, err);
	if (dirfd == -1) {
		if (missing)
			files_not_found(err, op->path);
		free(res.out);
		return (NULL);
	}
	if (files_session_leaf(dirfd, leaf, op->path, &st, &exists,
	    err) != 0)
		goto fail;
	if (op->kind == FILES_EDIT && !exists) {
		files_not_found(err, op->path);	/* removed meanwhile */
		goto fail;
	}
	if (files_session_put(dirfd, leaf, op->path, buf, len, exists ? &st :
	    NULL, err) != 0)
		goto fail;
	close(dirfd);
	r = cJSON_CreateObject();
	if (op->kind == FILES_EDIT) {
		cJSON_AddStringToObject(r, "type", "edit");
		cJSON_AddStringToObject(r, "path", op->path);
		cJSON_AddNumberToObject(r, "edits_applied",
		    (double)res.applied);
		cJSON_AddNumberToObject(r, "replacements",
		    (double)res.replacements);
	} else {
		cJSON_AddStringToObject(r, "type", exists ? "update" :
		    "create");
		cJSON_AddStringToObject(r, "path", op->path);
	}
	cJSON_AddNumberToObject(r, "bytes_written", (double)len);
	free(res.out);
	return (r);
fail:
	close(dirfd);
	free(res.out);
	return (NULL);
}

/* Run an operation here; the result, or NULL with err. */
static cJSON *
files_op_run(struct files_op *op, struct cause *err)
{
	struct stat	st;
	cJSON		*r;
	int		fd;

	switch (op->kind) {
	case FILES_READ:
		if ((fd = op->fd) == -1 && (fd = files_open(op, &st,
		    err)) == -1)
			return (NULL);
		r = files_window_fd(fd, op->offset, op->limit, op->path, err);
		close(fd);
		op->fd = -1;
		return (r);
	case FILES_WRITE:
	case FILES_EDIT:
		if (op->rootfd == -1)
			fatalx("%s: sessionless change", __func__);
		return (files_session_change(op, err));
	}
	fatalx("%s: kind %d", __func__, op->kind);
}

/* Whether an operation moves enough bytes to run in a child. */
static int
files_op_heavy(struct files_op *op)
{
	struct cause	err;
	struct stat		st;
	int			fd;

	if (op->kind == FILES_WRITE)
		return (op->len > FILES_INLINE_MAX);
	if (op->fd != -1)
		return (fstat(op->fd, &st) == 0 && st.st_size >
		    FILES_INLINE_MAX);
	memset(&err, 0, sizeof err);
	if ((fd = files_open(op, &st, &err)) == -1) {
		cause_clear(&err);
		return (0);	/* an error answers quickly */
	}
	close(fd);
	/* An edit may rewrite the whole file once per item. */
	if (op->kind == FILES_EDIT && cJSON_IsArray(op->edits))
		return ((unsigned long long)st.st_size *
		    cJSON_GetArraySize(op->edits) > FILES_INLINE_MAX);
	return (st.st_size > FILES_INLINE_MAX);
}

/*
 * The cause a file helper answered with, as the caller gives it: a helper
 * may meet only invalid_request, not_found and conflict in its work;
 * anything else is operation_failed.
 */
void
files_helper_cause(struct cause *dst, const struct cause *src)
{
	cause_copy(dst, src);
	if (dst->kind != CAUSE_INVALID && dst->kind != CAUSE_NOT_FOUND &&
	    dst->kind != CAUSE_CONFLICT)
		dst->kind = CAUSE_FAILED;
}

static int
files_child(void *arg, int fd)
{
	struct files_op		*op = arg;
	struct cause		 err;
	cJSON			*r;
	char			*text;
	int			 rc;

	/* What the server kept for the child is at 4: nothing else. */
	if (op->kind == FILES_READ)
		op->fd = 4;
	else
		op->rootfd = 4;
	memset(&err, 0, sizeof err);
	if (confine_enter(NULL, 0, NULL, 0, &text) != 0) {
		rc = job_fail(fd, CAUSE_INTERNAL, NULL, NULL, "%s", text);
		free(text);
		return (rc != 0 ? rc : 1);
	}
	r = files_op_run(op, &err);
	rc = job_answer(fd, r, r == NULL ? &err : NULL);
	cJSON_Delete(r);
	cause_clear(&err);
	return (rc);
}

struct files_job {
	files_cb	 cb;
	void		*arg;
	int		 fd;	/* handed to the helper, closed after */
};

static void
files_child_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct files_job	*fj = arg;
	struct cause		 err;

	if (fj->fd != -1)
		close(fj->fd);
	memset(&err, 0, sizeof err);
	if (cause != NULL) {
		files_helper_cause(&err, cause);
		fj->cb(NULL, &err, fj->arg);
	} else
		fj->cb(cJSON_Duplicate(result, 1), &err, fj->arg);
	cause_clear(&err);
	free(fj);
}

/*
 * Run a read, or a write or edit in a session: here when it is small,
 * in a child otherwise. cb(result, err, arg) runs exactly once (maybe
 * before this returns); the result is the callback's.
 */
void
files_op(struct files_op *op, files_cb cb, void *arg)
{
	struct cause	 err;
	struct files_job	*fj;
	cJSON			*r;
	struct stat		 st;
	int			 keep;

	memset(&err, 0, sizeof err);
	op->fd = -1;
	if (op->kind == FILES_READ &&
	    (op->fd = files_open(op, &st, &err)) == -1) {
		cb(NULL, &err, arg);
		cause_clear(&err);
		return;
	}
	if (!files_op_heavy(op)) {
		r = files_op_run(op, &err);
		cb(r, &err, arg);
		cause_clear(&err);
		return;
	}
	fj = xcalloc(1, sizeof *fj);
	fj->cb = cb;
	fj->arg = arg;
	/* The helper may wait its turn: it gets a descriptor of its own. */
	if (op->fd != -1) {
		fj->fd = op->fd;
		op->fd = -1;
	} else if ((fj->fd = fcntl(op->rootfd, F_DUPFD_CLOEXEC, 0)) == -1) {
		free(fj);
		files_fail(&err, CAUSE_FAILED, NULL, "cannot use the"
		    " session's workspace: %s", strerror(errno));
		cb(NULL, &err, arg);
		cause_clear(&err);
		return;
	}
	keep = fj->fd;
	job_early(job_helper("file", op->sandbox, op->tenant, files_child, op,
	    &keep, 1, files_child_done, fj));
}
