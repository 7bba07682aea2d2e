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
 * Helpers: UTF-8 checks, identifiers, encodings, atomic writes.
 */

#include "config.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "unit.h"

static int
test_utf8(void)
{
	CHECK(util_utf8_valid("plain", 5));
	CHECK(util_utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
	CHECK(!util_utf8_valid("\xff", 1));
	CHECK(!util_utf8_valid("\xc0\xaf", 2));		/* overlong */
	CHECK(!util_utf8_valid("\xed\xa0\x80", 3));	/* surrogate */
	CHECK(!util_utf8_valid("\xf4\x90\x80\x80", 4));	/* > U+10FFFF */
	CHECK(!util_utf8_valid("\xe2\x82", 2));		/* cut */
	CHECK(util_utf8_valid("a\0b", 3));
	return (0);
}

static int
test_ids(void)
{
	char	id[70];

	CHECK(util_id_valid("sbox-0123456789ab"));
	CHECK(util_id_valid("ws_1"));
	CHECK(!util_id_valid(""));
	CHECK(!util_id_valid("../../etc"));
	CHECK(!util_id_valid("Upper"));
	CHECK(!util_id_valid("a/b"));
	memset(id, 'a', 65);
	id[65] = '\0';
	CHECK(!util_id_valid(id));
	id[64] = '\0';
	CHECK(util_id_valid(id));
	return (0);
}

static int
test_encodings(void)
{
	unsigned char	raw[] = { 0xfb, 0xff, 0x00, 0x10 };
	char		out[64];

	util_hex(raw, sizeof raw, out);
	CHECK_STR(out, "fbff0010");
	CHECK_INT(util_base64url(raw, 1, out, sizeof out), 2);
	CHECK_STR(out, "-w");
	CHECK_INT(util_base64url(raw, 2, out, sizeof out), 3);
	CHECK_STR(out, "-_8");
	CHECK_INT(util_base64url(raw, 3, out, sizeof out), 4);
	CHECK_STR(out, "-_8A");
	CHECK_INT(util_base64url(raw, 4, out, 3), -1);
	util_random_hex(out, 16);
	CHECK_INT(strlen(out), 16);
	CHECK_INT(strspn(out, "0123456789abcdef"), 16);
	return (0);
}

static int
test_atomic_write(void)
{
	char		 dir[] = "/tmp/unit-util-XXXXXX", path[128], buf[16];
	char		*cause = NULL;
	FILE		*f;
	struct stat	 st;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof path, "%s/a/b/c", dir);
	CHECK(util_mkdir_p(path, 0755, &cause) == 0);
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	snprintf(path, sizeof path, "%s/a/rec.json", dir);
	CHECK(util_write_atomic(path, "one", 3, &cause) == 0);
	CHECK(util_write_atomic(path, "two!", 4, &cause) == 0);
	f = fopen(path, "r");
	CHECK(f != NULL && fread(buf, 1, sizeof buf, f) == 4);
	fclose(f);
	CHECK(memcmp(buf, "two!", 4) == 0);
	snprintf(path, sizeof path, "%s/missing/rec.json", dir);
	CHECK(util_write_atomic(path, "x", 1, &cause) == -1);
	CHECK(strstr(cause, "cannot create") != NULL);
	free(cause);
	snprintf(path, sizeof path, "rm -rf %s", dir);
	CHECK(system(path) == 0);
	return (0);
}

/*
 * A tree a sandbox could leave: 3,000 directories deep, a symlink out
 * of it at every level, files on the way. It is removed with a handful
 * of descriptors (the limit is cut to 32 for the test), and what the
 * symlinks point at is untouched.
 */
static int
test_tree_remove(void)
{
	char		 dir[] = "/tmp/smcp-unit-tree.XXXXXX", path[256];
	char		 outside[300];
	struct rlimit	 rl, old;
	struct stat	 st;
	int		 fd, next, i, f;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(outside, sizeof outside, "%s/outside", dir);
	CHECK(mkdir(outside, 0755) == 0);
	snprintf(path, sizeof path, "%s/outside/keep", dir);
	CHECK((f = open(path, O_CREAT | O_WRONLY, 0644)) != -1);
	close(f);
	snprintf(path, sizeof path, "%s/t", dir);
	CHECK(mkdir(path, 0755) == 0);
	CHECK((fd = open(path, O_RDONLY | O_DIRECTORY)) != -1);
	for (i = 0; i < 3000; i++) {
		CHECK(symlinkat(outside, fd, "link") == 0);
		CHECK((f = openat(fd, "file", O_CREAT | O_WRONLY, 0644)) !=
		    -1);
		close(f);
		CHECK(mkdirat(fd, "d", 0755) == 0);
		CHECK((next = openat(fd, "d", O_RDONLY | O_DIRECTORY)) != -1);
		close(fd);
		fd = next;
	}
	close(fd);
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	rl = old;
	rl.rlim_cur = 32;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	snprintf(path, sizeof path, "%s/t", dir);
	i = tree_remove_path(path);
	setrlimit(RLIMIT_NOFILE, &old);
	CHECK_INT(i, 0);
	CHECK(lstat(path, &st) == -1);
	snprintf(path, sizeof path, "%s/outside/keep", dir);
	CHECK(lstat(path, &st) == 0);
	snprintf(path, sizeof path, "rm -rf %s", dir);
	CHECK(system(path) == 0);
	return (0);
}

/* Invalid UTF-8 scrubbed to '?', byte for byte; valid text untouched. */
static int
test_utf8_scrub(void)
{
	char	buf[64];

	strlcpy(buf, "f\xff\nx\"", sizeof buf);
	CHECK_STR(util_utf8_scrub(buf), "f?\nx\"");
	strlcpy(buf, "\xc3\xa9t\xc3\xa9 \xe2\x82\xac", sizeof buf);
	CHECK_STR(util_utf8_scrub(buf), "\xc3\xa9t\xc3\xa9 \xe2\x82\xac");
	strlcpy(buf, "a\xc3(b\xed\xa0\x80" "c\xf0\x9f\x98", sizeof buf);
	CHECK_STR(util_utf8_scrub(buf), "a?(b???c???");
	CHECK(util_utf8_valid(buf, strlen(buf)));
	CHECK(util_utf8_scrub(NULL) == NULL);
	return (0);
}

/*
 * The scan of a record line: what it takes is one JSON object, which
 * cJSON parses to the same members; what it refuses includes whatever
 * would not fit on one line of a stream.
 */
static int
test_json_scan(void)
{
	struct util_jfield	 f[3] = { { .name = "kind" }, { .name = "ts" },
	    { .name = "a" } };
	const char		*good[] = {
		"{}", " {\"kind\":\"span\",\"ts\":12}\t",
		"{\"a\":[1,-2.5e3,true,false,null,{\"kind\":\"x\"}],"
		    "\"kind\" : \"e\\\"v\\u00e9\"}",
		"{\"ts\":0.001,\"kind\":\"a\",\"x\":1,\"x\":2}",
		"{\"a\":\"\\ud83d\\ude00\",\"b\":1e300,\"c\":\"\xc3\xa9\"}",
	};
	const char		*bad[] = {
		"", "[]", "{", "{\"a\":}", "{\"a\":1,}", "{\"a\" 1}",
		"{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":tru}",
		"{\"a\":\"x\ty\"}", "{\"a\":\"\\x\"}", "{\"a\":\"\\u12g4\"}",
		"{\"a\":1}\r", "{\"a\":\n1}", "{\"a\":1} x", "{\"a\":1}{}",
		"{\"a\":[1 2]}", "{\"a\":\"unended}",
		/* What decoders read in different ways. */
		"{\"kind\":1,\"kind\":2}", "{\"k\\u0061\":1}",
		"{\"a\":\"\\u0000\"}", "{\"a\":\"\\ud800\"}",
		"{\"a\":\"\\udc00\\ud800\"}", "{\"a\":\"\\ud800x\"}",
		"{\"a\":1e400}", "{\"a\":-1E+999}", "{\"a\":\"\xff\"}",
	};
	char			 deep[2 * CJSON_NESTING_LIMIT + 8], text[64], *s;
	cJSON			*j;
	double			 v;
	size_t			 i, n, taken = 0;
	unsigned int		 seed = 7;

	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		CHECK(util_json_scan(good[i], strlen(good[i]), f, 3,
		    CJSON_NESTING_LIMIT) == 0);
		CHECK((j = cJSON_Parse(good[i])) != NULL);
		cJSON_Delete(j);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(util_json_scan(bad[i], strlen(bad[i]), f, 3,
		    CJSON_NESTING_LIMIT) == -1);
	/* Fields: top-level only, the first of two, text as written. */
	CHECK(util_json_scan(good[2], strlen(good[2]), f, 3,
	    CJSON_NESTING_LIMIT) == 0);
	CHECK(f[0].type == cJSON_String && f[0].escaped);
	CHECK(util_jfield_string(&f[0]) == NULL);	/* needs decoding */
	CHECK(f[1].value == NULL);
	CHECK(f[2].type == cJSON_Array && f[2].len == 39);
	CHECK(util_json_scan(good[3], strlen(good[3]), f, 3,
	    CJSON_NESTING_LIMIT) == 0);
	CHECK_STR(s = util_jfield_string(&f[0]), "a");
	free(s);
	CHECK(util_jfield_number(&f[1], &v) == 0 && v == 0.001);
	CHECK(util_jfield_number(&f[0], &v) == -1);
	/* Depth: what cJSON parses is scanned, one level more is not. */
	for (n = CJSON_NESTING_LIMIT - 1; n <= CJSON_NESTING_LIMIT; n++) {
		strlcpy(deep, "{\"a\":", sizeof deep);
		for (i = 0; i < n; i++)
			deep[5 + i] = '[';
		for (i = 0; i < n; i++)
			deep[5 + n + i] = ']';
		deep[5 + 2 * n] = '}';
		deep[6 + 2 * n] = '\0';
		j = cJSON_Parse(deep);
		CHECK((j != NULL) == (n < CJSON_NESTING_LIMIT));
		cJSON_Delete(j);
		CHECK(util_json_scan(deep, strlen(deep), f, 3,
		    CJSON_NESTING_LIMIT) ==
		    (n < CJSON_NESTING_LIMIT ? 0 : -1));
	}
	/* Random texts: whatever the scan takes, cJSON takes too. */
	for (i = 0; i < 200000; i++) {
		const char	 alpha[] = "{}[]\":,0123-.eE tfnrul\\a";
		size_t		 k, len = 2 + rand_r(&seed) % 14;

		text[0] = '{';
		for (k = 1; k < len; k++)
			text[k] = alpha[rand_r(&seed) % (sizeof alpha - 1)];
		text[len] = '\0';
		if (util_json_scan(text, len, f, 3, CJSON_NESTING_LIMIT) != 0)
			continue;
		CHECK((j = cJSON_Parse(text)) != NULL);
		cJSON_Delete(j);
		taken++;
	}
	CHECK(taken > 100);
	return (0);
}

/* Numbers print as few digits as read back the same double. */
static int
test_json_number(void)
{
	const double	 exact[] = { 0, -0.5, 0.001, 12.345, -7.25, 1e-7,
	    123456789.125, 1e300, -9007199254740991.0, 0.1 + 0.2 };
	const char	*spelled[] = { "0", "-0.5", "0.001", "12.345", "-7.25",
	    "1e-07", "123456789.125", "1e+300", "-9007199254740991",
	    "0.30000000000000004" };
	unsigned int	 seed = 11;
	cJSON		*j;
	char		*s;
	double		 d;
	size_t		 i;

	for (i = 0; i < sizeof exact / sizeof exact[0]; i++) {
		j = cJSON_CreateNumber(exact[i]);
		s = util_json_print(j);
		CHECK_STR(s, spelled[i]);
		free(s);
		cJSON_Delete(j);
	}
	for (i = 0; i < 100000; i++) {
		d = (double)rand_r(&seed) / (1 + rand_r(&seed) % 5000);
		if (i % 3 == 0)
			d = (double)(rand_r(&seed) % 100000000) / 1000.0;
		if (i % 5 == 0)
			d = -d;
		j = cJSON_CreateNumber(d);
		s = util_json_print(j);
		CHECK(strtod(s, NULL) == d);
		free(s);
		cJSON_Delete(j);
	}
	return (0);
}


/* A whole file's text (at most 64 KiB), or "" when there is none. */
static char *
test_slurp(const char *path)
{
	static char	buf[65536];
	ssize_t		n;
	int		fd;

	buf[0] = '\0';
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (buf);
	n = read(fd, buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return (buf);
}

static int
test_fd_count(void)
{
	char	path[64];
	int	fd, n = 0;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return (n);
}

/*
 * A sandbox's log is appended through a kept descriptor: a rotation by
 * another process (a rename) is seen at the next line, which goes to
 * the new file; a file removed is let go; the kept descriptors are few
 * and telemetry_release closes them.
 */
static int
test_telemetry_kept(void)
{
	const char	*id = "sbox-0123456789ab";
	char		*dir, *file, *old;
	cJSON		*rec;
	int		 fd, before, i;

	xasprintf(&dir, "%s/sandboxes/%s/telemetry", cfg->state_dir, id);
	CHECK(util_mkdir_p(dir, 0700, NULL) == 0);
	xasprintf(&file, "%s/resources.ndjson", dir);
	xasprintf(&old, "%s/resources.ndjson.1", dir);
	before = test_fd_count();

	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "n", "a");
	telemetry_resources(id, rec);		/* made, not kept yet */
	cJSON_ReplaceItemInObject(rec, "n", cJSON_CreateString("b"));
	telemetry_resources(id, rec);		/* kept from now on */
	CHECK_STR(test_slurp(file), "{\"n\":\"a\"}\n{\"n\":\"b\"}\n");
	CHECK_INT(test_fd_count(), before + 1);

	/* Rotated away by someone else: the next line starts a new file. */
	CHECK(rename(file, old) == 0);
	cJSON_ReplaceItemInObject(rec, "n", cJSON_CreateString("c"));
	telemetry_resources(id, rec);
	cJSON_ReplaceItemInObject(rec, "n", cJSON_CreateString("d"));
	telemetry_resources(id, rec);
	CHECK_STR(test_slurp(old), "{\"n\":\"a\"}\n{\"n\":\"b\"}\n");
	CHECK_STR(test_slurp(file), "{\"n\":\"c\"}\n{\"n\":\"d\"}\n");
	CHECK_INT(test_fd_count(), before + 1);

	/* A symlink put in its place is not followed, and nothing kept. */
	CHECK(unlink(file) == 0);
	CHECK(symlink(old, file) == 0);
	telemetry_resources(id, rec);
	CHECK_STR(test_slurp(old), "{\"n\":\"a\"}\n{\"n\":\"b\"}\n");
	CHECK_INT(test_fd_count(), before);
	CHECK(unlink(file) == 0);

	/* Many lines, one descriptor; none after a release. */
	for (i = 0; i < 100; i++)
		telemetry_resources(id, rec);
	CHECK_INT(test_fd_count(), before + 1);
	telemetry_release();
	CHECK_INT(test_fd_count(), before);
	CHECK((fd = open(file, O_RDONLY)) != -1);
	close(fd);

	cJSON_Delete(rec);
	free(old);
	free(file);
	free(dir);
	return (0);
}

const struct unit_case unit_util_cases[] = {
	{ "util/json-scan", test_json_scan },
	{ "util/json-number", test_json_number },
	{ "util/utf8", test_utf8 },
	{ "util/utf8-scrub", test_utf8_scrub },
	{ "util/ids", test_ids },
	{ "util/encodings", test_encodings },
	{ "util/atomic-write", test_atomic_write },
	{ "util/tree-remove", test_tree_remove },
	{ "util/telemetry-kept", test_telemetry_kept },
	{ NULL, NULL }
};
