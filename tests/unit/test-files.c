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
 * The file tools' engine: path normalization and refusals, the read
 * window (whole lines, the 256 KiB cut, UTF-8 across chunk boundaries),
 * exact edits with their refusals and the CRLF retry, and resolution
 * through a real layer stack on disk (whiteouts, opaque directories,
 * symlinked parents).
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "sandbox-mcp.h"
#include "unit.h"

struct path_case {
	const char	*in;
	const char	*out;		/* NULL: refused */
	const char	*why;		/* a part of the message */
};

static const struct path_case path_cases[] = {
	{ "a.c", "a.c", NULL },
	{ "src/a.c", "src/a.c", NULL },
	{ "./src//a.c/", "src/a.c", NULL },
	{ "/workspace/src/a.c", "src/a.c", NULL },
	{ "/workspace//src/./a.c", "src/a.c", NULL },
	{ "/workspace", "", NULL },
	{ "/workspace/", "", NULL },
	{ ".", "", NULL },
	{ "..a/b..", "..a/b..", NULL },
	{ ".hidden/...", ".hidden/...", NULL },
	{ "", NULL, "empty" },
	{ "..", NULL, ".. component" },
	{ "a/../b", NULL, ".. component" },
	{ "a/..", NULL, ".. component" },
	{ "/workspace/../etc/passwd", NULL, ".. component" },
	{ "/etc/passwd", NULL, "under /workspace" },
	{ "/workspacex/a", NULL, "under /workspace" },
	{ "/", NULL, "under /workspace" },
	{ "a" NUL_MARK "b", NULL, "NUL" },
	{ "bad\xff", NULL, "not UTF-8" },
	{ NULL, NULL, NULL }
};

static int
test_path(void)
{
	const struct path_case	*c;
	char			*out, *msg, *big;

	for (c = path_cases; c->in != NULL; c++) {
		msg = NULL;
		out = files_path(c->in, &msg);
		if (c->out != NULL) {
			CHECK_STR(out, c->out);
			CHECK(msg == NULL);
		} else {
			CHECK(out == NULL);
			CHECK(msg != NULL && strncmp(msg, "invalid path: ",
			    14) == 0);
			if (strstr(msg, c->why) == NULL) {
				fprintf(stderr, "%s: message \"%s\" lacks"
				    " \"%s\"\n", c->in, msg, c->why);
				return (1);
			}
		}
		free(out);
		free(msg);
	}
	/* Length bounds: a 256-byte component, a 4096-byte path. */
	big = xmalloc(5000);
	memset(big, 'a', 256);
	big[256] = '\0';
	CHECK(files_path(big, &msg) == NULL);
	CHECK(strstr(msg, "longer than 255") != NULL);
	free(msg);
	big[255] = '\0';
	out = files_path(big, &msg);
	CHECK(out != NULL && strlen(out) == 255);
	free(out);
	memset(big, 'a', 4096);
	big[4096] = '\0';
	CHECK(files_path(big, &msg) == NULL);
	CHECK(strstr(msg, "longer than 4095") != NULL);
	free(msg);
	free(big);

	CHECK(files_path_reserved(".wh.a"));
	CHECK(files_path_reserved("d/.wh..wh..opq"));
	CHECK(!files_path_reserved("d/x.wh.a"));
	CHECK(!files_path_reserved("a"));
	return (0);
}

/* Read a window; 0 when the fields are as expected. */
static int
window_is(const char *text, size_t len, long long off, long long lim,
    const char *content, long long num, long long total, long long next)
{
	struct cause	 err;
	cJSON			*r, *v;

	memset(&err, 0, sizeof err);
	if ((r = files_window(text, len, off, lim, "f", &err)) == NULL) {
		fprintf(stderr, "window %lld+%lld: %s\n", off, lim,
		    err.message);
		cause_clear(&err);
		return (1);
	}
	CHECK_STR(cJSON_GetObjectItem(r, "content")->valuestring, content);
	CHECK_INT(cJSON_GetObjectItem(r, "num_lines")->valuedouble, num);
	CHECK_INT(cJSON_GetObjectItem(r, "total_lines")->valuedouble, total);
	CHECK_INT(cJSON_GetObjectItem(r, "bytes_read")->valuedouble,
	    strlen(content));
	CHECK_INT(cJSON_GetObjectItem(r, "total_bytes")->valuedouble, len);
	CHECK_INT(cJSON_GetObjectItem(r, "start_line")->valuedouble,
	    off < 1 ? 1 : off);
	v = cJSON_GetObjectItem(r, "next_offset");
	if (next == 0)
		CHECK(cJSON_IsNull(v));
	else
		CHECK_INT(v->valuedouble, next);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(r, "truncated")) ==
	    (next != 0));
	cJSON_Delete(r);
	return (0);
}

/* A window refused; 0 when the message has what. */
static int
window_refused(const char *text, size_t len, long long off, long long lim,
    const char *what)
{
	struct cause	 err;
	cJSON			*r;

	memset(&err, 0, sizeof err);
	r = files_window(text, len, off, lim, "f", &err);
	CHECK(r == NULL);
	CHECK_INT(err.kind, CAUSE_INVALID);
	if (strstr(err.message, what) == NULL) {
		fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err.message,
		    what);
		return (1);
	}
	cause_clear(&err);
	return (0);
}

static int
test_window(void)
{
	const char	*t = "one\ntwo\r\nthree\nfour";

	CHECK(window_is(t, strlen(t), 1, 2000, t, 4, 4, 0) == 0);
	CHECK(window_is(t, strlen(t), 0, 2000, t, 4, 4, 0) == 0);
	CHECK(window_is(t, strlen(t), 2, 2, "two\r\nthree\n", 2, 4, 4) == 0);
	CHECK(window_is(t, strlen(t), 4, 1, "four", 1, 4, 0) == 0);
	CHECK(window_is(t, strlen(t), 5, 10, "", 0, 4, 0) == 0);
	CHECK(window_is(t, strlen(t), 99, 10, "", 0, 4, 0) == 0);
	CHECK(window_is("", 0, 1, 10, "", 0, 0, 0) == 0);
	CHECK(window_is("\n", 1, 1, 10, "\n", 1, 1, 0) == 0);
	CHECK(window_is("a\n", 2, 2, 10, "", 0, 1, 0) == 0);
	CHECK(window_is("a\nb\n", 4, 1, 1, "a\n", 1, 2, 2) == 0);
	CHECK(window_refused("a\xc3(\n", 4, 1, 10, "not UTF-8") == 0);
	CHECK(window_refused("a\0b\n", 4, 1, 10, "not UTF-8") == 0);
	CHECK(window_refused("a\xe2\x82", 3, 1, 10, "not UTF-8") == 0);
	/* Invalid bytes far past the window still refuse the file. */
	CHECK(window_refused("a\nb\nc\xff\n", 7, 1, 1, "not UTF-8") == 0);
	return (0);
}

static int
test_window_cut(void)
{
	char	*text, *want;
	size_t	 i, len, n = 400;

	/* 400 lines of 1000 bytes: 262 whole lines fit in 256 KiB. */
	len = n * 1000;
	text = xmalloc(len + 1);
	for (i = 0; i < n; i++) {
		memset(text + i * 1000, 'a' + i % 26, 999);
		text[i * 1000 + 999] = '\n';
	}
	text[len] = '\0';
	want = xstrndup(text, 262 * 1000);
	CHECK(window_is(text, len, 1, 2000, want, 262, 400, 263) == 0);
	free(want);
	want = xstrndup(text + 262 * 1000, 138 * 1000);
	CHECK(window_is(text, len, 263, 2000, want, 138, 400, 0) == 0);
	free(want);
	free(text);

	/* One line over 256 KiB: refused, naming it; fine elsewhere. */
	len = 300 * 1024 + 4;
	text = xmalloc(len + 1);
	memcpy(text, "x\ny\n", 4);
	memset(text + 4, 'z', len - 4);
	text[len] = '\0';
	CHECK(window_refused(text, len, 3, 10, "line 3 of f is longer") == 0);
	CHECK(window_is(text, len, 1, 2, "x\ny\n", 2, 3, 3) == 0);
	/* The window stops before the long line: no refusal. */
	CHECK(window_is(text, len, 1, 10, "x\ny\n", 2, 3, 3) == 0);
	free(text);

	/* A 3-byte character astride the 256 KiB chunk boundary. */
	len = 256 * 1024 + 2;
	text = xmalloc(len + 1);
	memset(text, 'a', len);
	memcpy(text + 256 * 1024 - 1, "\xe2\x82\xac", 3);
	text[len] = '\0';
	want = xstrdup(text);
	CHECK(window_refused(text, len, 1, 1, "longer") == 0);
	text[1000] = '\n';
	want[1000] = '\n';
	want[1001] = '\0';
	CHECK(window_is(text, len, 1, 1, want, 1, 2, 2) == 0);
	free(want);
	free(text);
	return (0);
}

/* Apply edits given as JSON; the result or NULL (err filled). */
static char *
edit(const char *text, const char *json, struct files_edit_result *res,
    struct cause *err)
{
	cJSON	*edits;
	char	*out = NULL;

	memset(err, 0, sizeof *err);
	edits = cJSON_Parse(json);
	if (files_edit_apply(text, strlen(text), edits, "f", res, err) == 0)
		out = res->out;
	cJSON_Delete(edits);
	return (out);
}

static int
edit_refused(const char *text, const char *json, const char *what)
{
	struct files_edit_result	res;
	struct cause		err;

	CHECK(edit(text, json, &res, &err) == NULL);
	CHECK_INT(err.kind, CAUSE_INVALID);
	if (strstr(err.message, what) == NULL) {
		fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", json,
		    err.message, what);
		return (1);
	}
	cause_clear(&err);
	return (0);
}

static int
test_edit(void)
{
	struct files_edit_result	 res;
	struct cause		 err;
	char				*out;

	out = edit("a draft b draft\n", "[{\"old_string\":\"draft\","
	    "\"new_string\":\"ready\",\"replace_all\":true}]", &res, &err);
	CHECK_STR(out, "a ready b ready\n");
	CHECK_INT(res.applied, 1);
	CHECK_INT(res.replacements, 2);
	CHECK_INT(res.outlen, 16);
	free(out);

	/* In order, each on the one before. */
	out = edit("x = 1;\n", "[{\"old_string\":\"1\",\"new_string\":\"2\"},"
	    "{\"old_string\":\"x = 2\",\"new_string\":\"y = 2\"}]", &res,
	    &err);
	CHECK_STR(out, "y = 2;\n");
	CHECK_INT(res.applied, 2);
	free(out);

	/* Deleting text; non-overlapping counts. */
	out = edit("aaa\n", "[{\"old_string\":\"aa\",\"new_string\":\"\"}]",
	    &res, &err);
	CHECK_STR(out, "a\n");
	free(out);

	CHECK(edit_refused("a b a\n", "[{\"old_string\":\"a\","
	    "\"new_string\":\"c\"}]", "edit 1: text found 2 times in f;"
	    " set replace_all or add context") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"a\",\"new_string\":"
	    "\"b\"},{\"old_string\":\"zz\",\"new_string\":\"c\"}]",
	    "edit 2: text not found in f") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"a\",\"new_string\":"
	    "\"a\"}]", "edit 1: old_string and new_string are the same") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"\",\"new_string\":"
	    "\"a\"}]", "old_string is empty") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"a\",\"new_string\":"
	    "\"b\"},{\"old_string\":\"b\",\"new_string\":\"a\"}]",
	    "edits made no change to f") == 0);
	CHECK(edit_refused("a\n", "[]", "non-empty") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"a\",\"new_string\":"
	    "\"b\"},7,{\"old_string\":\"b\",\"new_string\":\"c\"}]",
	    "edit 2 is not an object") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"a\",\"new_string\":"
	    "\"b\"},{\"old_string\":1,\"new_string\":\"c\"}]",
	    "edit 2: old_string must be a string") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"a\",\"new_string\":"
	    "null}]", "edit 1: new_string must be a string") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"a\",\"new_string\":"
	    "\"b\",\"replace_all\":\"yes\"}]", "replace_all must be a"
	    " boolean") == 0);
	CHECK(edit_refused("a\n", "[{\"old_string\":\"a\",\"new_string\":"
	    "\"b\",\"other\":1}]", "unknown field other") == 0);
	return (0);
}

static int
test_edit_crlf(void)
{
	struct files_edit_result	 res;
	struct cause		 err;
	const char			*json;
	char				*out, *big;
	size_t				 i;

	out = edit("one\r\ntwo\r\nthree\r\n", "[{\"old_string\":"
	    "\"one\\ntwo\\n\",\"new_string\":\"1\\n2\\n\"}]", &res, &err);
	CHECK_STR(out, "1\r\n2\r\nthree\r\n");
	free(out);
	/* The retry converts only bare \n: an old_string's \r\n stays. */
	out = edit("a\r\nb\r\n", "[{\"old_string\":\"a\\r\\nb\\n\","
	    "\"new_string\":\"c\\n\"}]", &res, &err);
	CHECK_STR(out, "c\r\n");
	free(out);
	/* Exact bytes first: an old_string with \r\n matches as is. */
	out = edit("a\r\nb\n", "[{\"old_string\":\"b\\n\",\"new_string\":"
	    "\"c\\n\"}]", &res, &err);
	CHECK_STR(out, "a\r\nc\n");
	free(out);

	/* A result over 16 MiB is refused. */
	big = xmalloc(1024 * 1024 + 1);
	memset(big, 'a', 1024 * 1024);
	big[1024 * 1024] = '\0';
	json = "[{\"old_string\":\"a\",\"new_string\":"
	    "\"0123456789abcdefgh\",\"replace_all\":true}]";
	CHECK(edit_refused(big, json, "larger than 16 MiB") == 0);
	for (i = 0; i < 10; i++)
		big[i * 1000] = 'b';
	out = edit(big, "[{\"old_string\":\"b\",\"new_string\":\"c\","
	    "\"replace_all\":true}]", &res, &err);
	CHECK(out != NULL && out[0] == 'c' && out[9000] == 'c');
	CHECK_INT(res.replacements, 10);
	free(out);
	free(big);
	return (0);
}

/* Create a file with content under dir. */
static int
put(const char *dir, const char *rel, const char *text)
{
	char	*path;
	FILE	*f;

	xasprintf(&path, "%s/%s", dir, rel);
	f = fopen(path, "w");
	free(path);
	if (f == NULL)
		return (-1);
	fputs(text, f);
	return (fclose(f));
}

static int
find_is(struct layer_stack *ls, const char *rel, enum layer_kind kind,
    size_t layer, const char *refusal)
{
	struct layer_entry	le;
	struct cause	err;
	int			r;

	memset(&err, 0, sizeof err);
	r = files_snapshot_find(ls, rel, &le, &err);
	if (refusal != NULL) {
		CHECK(r == -1);
		if (strstr(err.message, refusal) == NULL) {
			fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n",
			    rel, err.message, refusal);
			return (1);
		}
		cause_clear(&err);
		return (0);
	}
	CHECK(r == 0);
	CHECK_INT(le.kind, kind);
	if (kind != LAYER_ABSENT)
		CHECK_INT(le.layer, layer);
	return (0);
}

static int
test_snapshot(void)
{
	struct layer_stack	 ls;
	char			 top[] = "/tmp/unit-files.XXXXXX", d[3][PATH_MAX];
	char			*paths[3], *ids[3] = { "L2", "L1", "B" };
	char			 cmd[PATH_MAX + 16];
	int			 i;

	CHECK(mkdtemp(top) != NULL);
	for (i = 0; i < 3; i++) {
		snprintf(d[i], sizeof d[i], "%s/%d", top, i);
		CHECK(mkdir(d[i], 0755) == 0);
		paths[i] = d[i];
	}
	/* The base: src/a.c, src/b.c, gone/x, opq/old, dir/ */
	CHECK(mkdir(strcat(strcpy(cmd, d[2]), "/src"), 0755) == 0);
	CHECK(put(d[2], "src/a.c", "a\n") == 0);
	CHECK(put(d[2], "src/b.c", "b\n") == 0);
	CHECK(mkdir(strcat(strcpy(cmd, d[2]), "/gone"), 0755) == 0);
	CHECK(put(d[2], "gone/x", "x\n") == 0);
	CHECK(mkdir(strcat(strcpy(cmd, d[2]), "/opq"), 0755) == 0);
	CHECK(put(d[2], "opq/old", "o\n") == 0);
	/* L1: deletes gone/ and src/b.c, links etc to /etc, opq opaque. */
	CHECK(mknod(strcat(strcpy(cmd, d[1]), "/gone"), S_IFCHR | 0,
	    makedev(0, 0)) == 0);
	CHECK(mkdir(strcat(strcpy(cmd, d[1]), "/src"), 0755) == 0);
	CHECK(mknod(strcat(strcpy(cmd, d[1]), "/src/b.c"), S_IFCHR | 0,
	    makedev(0, 0)) == 0);
	CHECK(symlink("/etc", strcat(strcpy(cmd, d[1]), "/etc")) == 0);
	CHECK(mkdir(strcat(strcpy(cmd, d[1]), "/opq"), 0755) == 0);
	CHECK(lsetxattr(cmd, "trusted.overlay.opaque", "y", 1, 0) == 0);
	CHECK(put(d[1], "opq/new", "n\n") == 0);
	CHECK(put(d[1], "plain", "p\n") == 0);
	/* L2: gone/ again, fresh; a.c replaced. */
	CHECK(mkdir(strcat(strcpy(cmd, d[0]), "/gone"), 0755) == 0);
	CHECK(put(d[0], "gone/y", "y\n") == 0);
	CHECK(mkdir(strcat(strcpy(cmd, d[0]), "/src"), 0755) == 0);
	CHECK(put(d[0], "src/a.c", "A\n") == 0);

	ls.version = 3;
	ls.n = 3;
	ls.ids = ids;
	ls.paths = paths;
	CHECK(find_is(&ls, "src/a.c", LAYER_FILE, 0, NULL) == 0);
	CHECK(find_is(&ls, "src/b.c", LAYER_ABSENT, 0, NULL) == 0);
	CHECK(find_is(&ls, "gone/x", LAYER_ABSENT, 0, NULL) == 0);
	CHECK(find_is(&ls, "gone/y", LAYER_FILE, 0, NULL) == 0);
	CHECK(find_is(&ls, "opq/old", LAYER_ABSENT, 0, NULL) == 0);
	CHECK(find_is(&ls, "opq/new", LAYER_FILE, 1, NULL) == 0);
	CHECK(find_is(&ls, "src/new.c", LAYER_ABSENT, 0, NULL) == 0);
	CHECK(find_is(&ls, "etc/passwd", 0, 0, "etc is a symlink (in"
	    " etc/passwd)") == 0);
	CHECK(find_is(&ls, "etc", 0, 0, "etc is a symlink") == 0);
	CHECK(find_is(&ls, "plain/x", 0, 0, "plain is not a directory") == 0);
	CHECK(find_is(&ls, "src", 0, 0, "src is a directory") == 0);
	CHECK(find_is(&ls, "", 0, 0, "is a directory") == 0);

	snprintf(cmd, sizeof cmd, "rm -rf %s", top);
	CHECK(system(cmd) == 0);
	return (0);
}

const struct unit_case unit_files_cases[] = {
	{ "files/path", test_path },
	{ "files/window", test_window },
	{ "files/window-cut", test_window_cut },
	{ "files/edit", test_edit },
	{ "files/edit-crlf", test_edit_crlf },
	{ "files/snapshot", test_snapshot },
	{ NULL, NULL }
};
