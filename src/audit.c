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
 * The audit log behind file_blame: for every file path a publish writes,
 * one record a commit, prepared before the commit (the expensive part:
 * reading and diffing, at most AUDIT_DIFF_MAX bytes of a file) and
 * appended to <sandbox>/audit/<sha256 of path>.ndjson under the stack's
 * writer lock, right after the commit. A record holds the owner of each line
 * of the new content as ranges: lines a publish adds or changes take its
 * owner; lines a line diff against the previous content finds untouched
 * keep theirs (from the previous record, or "original" when the previous
 * content came from the base). The last record of a path answers a
 * blame; a deleted path keeps it.
 *
 * Appends are not fsynced one by one: the next publish's syncfs makes
 * them durable. A power failure can lose the newest records (a blame
 * then answers from an older one, or marks lines unknown), never the
 * layers; a crash of the process loses nothing.
 */

#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <git2.h>

#include "engine.h"
#include "merge.h"
#include "sandbox-mcp.h"

#define AUDIT_DIFF_MAX		(16 * 1024 * 1024)	/* larger: no diff */
#define AUDIT_RECORD_MAX	(32 * 1024 * 1024)

static char *
audit_file(const char *sbox, const char *path)
{
	unsigned char	md[32];
	char		hex[65];

	util_sha256(path, strlen(path), md);
	util_hex(md, sizeof md, hex);
	return (state_where(STATE_AUDIT, sbox, "%s.ndjson", hex));
}

/* The number of lines of a text (a last line without \n counts). */
static size_t
audit_lines(const char *buf, size_t len)
{
	size_t	i, n = 0;

	for (i = 0; i < len; i++) {
		if (buf[i] == '\n')
			n++;
	}
	if (len > 0 && buf[len - 1] != '\n')
		n++;
	return (n);
}

/* The last line of buf[0..len) that parses as a record of path. */
static cJSON *
audit_last_in(const char *buf, size_t len, const char *path, int whole)
{
	size_t	 end = len, i;
	cJSON	*rec, *p;

	while (end > 0) {
		for (i = end; i > 0 && buf[i - 1] != '\n'; i--)
			;
		if (i == 0 && !whole)
			break;		/* may be cut: read further back */
		if (end > i) {
			rec = cJSON_ParseWithLength(buf + i, end - i);
			p = cJSON_GetObjectItem(rec, "path");
			if (cJSON_IsString(p) && strcmp(p->valuestring,
			    path) == 0 && cJSON_IsArray(cJSON_GetObjectItem(
			    rec, "ranges")))
				return (rec);
			cJSON_Delete(rec);	/* a torn write: skip it */
		}
		end = i > 0 ? i - 1 : 0;
	}
	return (NULL);
}

/*
 * The last whole record of a path, or NULL. A record cut short by a
 * crash is skipped (the next append starts on a new line).
 */
static cJSON *
audit_last(const char *sbox, const char *path)
{
	struct stat	 st;
	char		*file, *buf;
	size_t		 len;
	ssize_t		 n;
	int		 fd, whole;
	cJSON		*rec = NULL;

	file = audit_file(sbox, path);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	free(file);
	if (fd == -1)
		return (NULL);
	if (fstat(fd, &st) != 0 || st.st_size == 0) {
		close(fd);
		return (NULL);
	}
	len = st.st_size < 65536 ? (size_t)st.st_size : 65536;
	for (;;) {
		whole = len == (size_t)st.st_size;
		buf = xmalloc(len);
		n = pread(fd, buf, len, st.st_size - len);
		if (n == (ssize_t)len)
			rec = audit_last_in(buf, len, path, whole);
		free(buf);
		if (rec != NULL || n != (ssize_t)len || whole ||
		    len >= AUDIT_RECORD_MAX)
			break;
		len = len * 4 > (size_t)st.st_size ? (size_t)st.st_size :
		    len * 4;
	}
	close(fd);
	return (rec);
}

/* Owners of n lines from a record's ranges (missing lines: unknown). */
static char **
audit_owners(cJSON *rec, size_t n)
{
	char	**o;
	cJSON	*r;
	size_t	 i, start, count;
	const char *owner;

	o = xcalloc(n + 1, sizeof *o);
	cJSON_ArrayForEach(r, cJSON_GetObjectItem(rec, "ranges")) {
		start = (size_t)cJSON_GetNumberValue(cJSON_GetObjectItem(r,
		    "start_line"));
		count = (size_t)cJSON_GetNumberValue(cJSON_GetObjectItem(r,
		    "line_count"));
		owner = cJSON_GetStringValue(cJSON_GetObjectItem(r, "owner"));
		for (i = start; i < start + count && i >= 1 && i <= n; i++)
			o[i - 1] = (char *)(owner != NULL ? owner : "unknown");
	}
	for (i = 0; i < n; i++) {
		if (o[i] == NULL)
			o[i] = (char *)"unknown";
	}
	return (o);
}

/*
 * Owners of the new content's lines: a line diff against the old content
 * maps untouched lines to their old owners; the rest are owner's.
 */
static const char **
audit_map(const char *old, size_t oldlen, char **oldown, size_t oldn,
    const char *new, size_t newlen, size_t newn, const char *owner)
{
	git_patch		*patch = NULL;
	git_diff_options	 opts;
	const git_diff_hunk	*hunk;
	const git_diff_line	*line;
	const char		**own;
	size_t			 h, l, nh, nl, lines, o = 0, n = 0, begin;
	char			*cause = NULL;

	own = xcalloc(newn + 1, sizeof *own);
	if (old == NULL || oldlen > AUDIT_DIFF_MAX || newlen >
	    AUDIT_DIFF_MAX) {
		for (n = 0; n < newn; n++)
			own[n] = owner;
		return (own);
	}
	if (merge_init(&cause) != 0) {
		free(cause);
		for (n = 0; n < newn; n++)
			own[n] = owner;
		return (own);
	}
	git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION);
	opts.context_lines = 0;
	opts.flags |= GIT_DIFF_FORCE_TEXT;
	if (git_patch_from_buffers(&patch, old, oldlen, NULL, new, newlen,
	    NULL, &opts) != 0) {
		for (n = 0; n < newn; n++)
			own[n] = owner;
		return (own);
	}
	nh = git_patch_num_hunks(patch);
	for (h = 0; h < nh; h++) {
		if (git_patch_get_hunk(&hunk, &lines, patch, h) != 0)
			break;
		/* Old lines before the hunk are untouched: owners carry. */
		begin = hunk->old_lines > 0 ? (size_t)hunk->old_start :
		    (size_t)hunk->old_start + 1;
		while (o + 1 < begin && n < newn) {
			own[n++] = o < oldn ? oldown[o] : "unknown";
			o++;
		}
		nl = git_patch_num_lines_in_hunk(patch, h);
		for (l = 0; l < nl; l++) {
			if (git_patch_get_line_in_hunk(&line, patch, h, l) != 0)
				break;
			if (line->origin == GIT_DIFF_LINE_DELETION)
				o++;
			else if (line->origin == GIT_DIFF_LINE_ADDITION &&
			    n < newn)
				own[n++] = owner;
		}
	}
	while (n < newn) {
		own[n++] = o < oldn ? oldown[o] : "unknown";
		o++;
	}
	git_patch_free(patch);
	return (own);
}

/* Owners as ranges, adjacent equal owners merged. */
static cJSON *
audit_ranges(const char **own, size_t n)
{
	cJSON	*ranges, *r;
	size_t	 i, start = 0;

	ranges = cJSON_CreateArray();
	for (i = 1; i <= n; i++) {
		if (i < n && strcmp(own[i], own[start]) == 0)
			continue;
		r = cJSON_CreateObject();
		cJSON_AddNumberToObject(r, "start_line", (double)(start + 1));
		cJSON_AddNumberToObject(r, "line_count", (double)(i - start));
		cJSON_AddStringToObject(r, "owner", own[start]);
		cJSON_AddItemToArray(ranges, r);
		start = i;
	}
	return (ranges);
}

struct audit_count {
	size_t	lines;
	int	lastnl;
};

static int
audit_count_cb(off_t off, const char *buf, size_t len, void *arg)
{
	struct audit_count	*c = arg;
	const char		*p = buf, *end = buf + len, *nl;

	while ((nl = memchr(p, '\n', end - p)) != NULL) {
		c->lines++;
		p = nl + 1;
	}
	if (len > 0)
		c->lastnl = buf[len - 1] == '\n';
	return (0);
}

/*
 * The lines of a file too large to diff, counted extent by extent (a
 * hole holds no newline, and a sparse file costs what it holds).
 */
static size_t
audit_count_lines(int fd, off_t size)
{
	struct audit_count	c;
	char			last;

	memset(&c, 0, sizeof c);
	if (size == 0)
		return (0);
	tree_extents(fd, size, audit_count_cb, &c);
	/* The last line without a newline counts (a hole ends no line). */
	if (pread(fd, &last, 1, size - 1) == 1 && last != '\n')
		c.lines++;
	return (c.lines);
}

/*
 * The blame record of a file a commit is about to write, as one line of
 * text: path (relative), its new bytes open as newfd, the stack the
 * commit goes on (head) and what path resolves to there when the caller
 * knows it (prev), the layer and its owner. Only the first
 * AUDIT_DIFF_MAX bytes of a file are ever read: a larger file's lines
 * are all the owner's (whole-file ownership). NULL with a cause when
 * the new content cannot be read.
 */
char *
audit_prepare(const char *sbox, struct layer_stack *head, const char *path,
    const struct layer_entry *prev, const char *layer_id, const char *owner,
    int newfd, char **cause)
{
	struct layer_entry	 le;
	struct stat		 st;
	unsigned char		 md[32];
	char			*new = NULL, *old = NULL, **oldown = NULL, *text;
	char			 hex[65], digest[72];
	const char		**own;
	size_t			 newlen = 0, oldlen = 0, newn, oldn = 0, i;
	cJSON			*rec, *last;

	if (fstat(newfd, &st) != 0 || !S_ISREG(st.st_mode)) {
		xasprintf(cause, "cannot read the new content of %s", path);
		return (NULL);
	}
	rec = cJSON_CreateObject();
	if (st.st_size > AUDIT_DIFF_MAX) {
		newn = audit_count_lines(newfd, st.st_size);
		if (newn > 0) {
			own = xcalloc(2, sizeof *own);
			own[0] = owner;
			text = NULL;
			cJSON_AddItemToObject(rec, "ranges",
			    cJSON_CreateArray());
			last = cJSON_CreateObject();
			cJSON_AddNumberToObject(last, "start_line", 1);
			cJSON_AddNumberToObject(last, "line_count",
			    (double)newn);
			cJSON_AddStringToObject(last, "owner", owner);
			cJSON_AddItemToArray(cJSON_GetObjectItem(rec,
			    "ranges"), last);
			free(own);
		} else
			cJSON_AddItemToObject(rec, "ranges",
			    cJSON_CreateArray());
		digest[0] = '\0';
		goto done;
	}
	if ((new = tree_read_fd(newfd, AUDIT_DIFF_MAX, &newlen)) == NULL) {
		cJSON_Delete(rec);
		xasprintf(cause, "cannot read the new content of %s", path);
		return (NULL);
	}
	newn = audit_lines(new, newlen);
	if (prev != NULL)
		le = *prev;
	else if (layer_resolve(head, path, &le, cause) != 0) {
		cJSON_Delete(rec);
		free(new);
		return (NULL);
	}
	if (le.kind == LAYER_FILE &&
	    (old = util_read_file(le.path, AUDIT_DIFF_MAX, &oldlen)) != NULL) {
		oldn = audit_lines(old, oldlen);
		util_sha256(old, oldlen, md);
		util_hex(md, sizeof md, hex);
		snprintf(digest, sizeof digest, "sha256:%s", hex);
		last = audit_last(sbox, path);
		if (last != NULL && strcmp(cJSON_GetStringValue(
		    cJSON_GetObjectItem(last, "digest")) != NULL ?
		    cJSON_GetObjectItem(last, "digest")->valuestring : "",
		    digest) == 0)
			oldown = audit_owners(last, oldn);
		else {
			oldown = xcalloc(oldn + 1, sizeof *oldown);
			for (i = 0; i < oldn; i++)
				oldown[i] = (char *)(last == NULL &&
				    strcmp(head->ids[le.layer],
				    "B000001-base") == 0 ? "original" :
				    "unknown");
		}
		/* oldown may point into last: keep it until done. */
		own = audit_map(old, oldlen, oldown, oldn, new, newlen, newn,
		    owner);
		cJSON_AddItemToObject(rec, "ranges", audit_ranges(own, newn));
		free(own);
		free(oldown);
		cJSON_Delete(last);
	} else {
		own = audit_map(NULL, 0, NULL, 0, new, newlen, newn, owner);
		cJSON_AddItemToObject(rec, "ranges", audit_ranges(own, newn));
		free(own);
	}
	util_sha256(new, newlen, md);
	util_hex(md, sizeof md, hex);
	snprintf(digest, sizeof digest, "sha256:%s", hex);
done:
	cJSON_AddStringToObject(rec, "path", path);
	cJSON_AddStringToObject(rec, "layer_id", layer_id);
	cJSON_AddStringToObject(rec, "owner", owner);
	cJSON_AddNumberToObject(rec, "ts", (double)now_ms());
	if (digest[0] != '\0')
		cJSON_AddStringToObject(rec, "digest", digest);
	cJSON_AddNumberToObject(rec, "lines", (double)newn);
	text = util_json_print(rec);
	cJSON_Delete(rec);
	text = xrealloc(text, strlen(text) + 2);
	strlcat(text, "\n", strlen(text) + 2);
	free(new);
	free(old);
	return (text);
}

/* Append a prepared record (under the writer lock, after the commit). */
int
audit_append(const char *sbox, const char *path, const char *line,
    char **cause)
{
	struct stat	 st;
	char		*file, last_byte;
	int		 fd, r = 0;

	file = audit_file(sbox, path);
	fd = open(file, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	free(file);
	/* After a torn record, start on a line of our own. */
	if (fd != -1 && fstat(fd, &st) == 0 && st.st_size > 0 &&
	    pread(fd, &last_byte, 1, st.st_size - 1) == 1 &&
	    last_byte != '\n')
		job_write_all(fd, "\n", 1);
	if (fd == -1 || job_write_all(fd, line, strlen(line)) != 0) {
		xasprintf(cause, "cannot append to the audit log of %s: %s",
		    path, strerror(errno));
		r = -1;
	}
	if (fd != -1)
		close(fd);
	return (r);
}

/* file_blame: the owners of the latest published content of a path. */
cJSON *
audit_blame(const char *sbox, const char *path, struct cause *cause)
{
	cJSON	*rec, *out, *ranges;

	if ((rec = audit_last(sbox, path)) == NULL) {
		cause_set(cause, CAUSE_NOT_FOUND, "path", path, "no audit"
		    " record for %s: it was never published (only the base"
		    " holds it, or nothing does)", path);
		return (NULL);
	}
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "path", path);
	ranges = cJSON_DetachItemFromObject(rec, "ranges");
	cJSON_AddItemToObject(out, "ranges", ranges != NULL ? ranges :
	    cJSON_CreateArray());
	cJSON_Delete(rec);
	return (out);
}
