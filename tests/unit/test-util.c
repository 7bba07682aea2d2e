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

const struct unit_case unit_util_cases[] = {
	{ "util/utf8", test_utf8 },
	{ "util/utf8-scrub", test_utf8_scrub },
	{ "util/ids", test_ids },
	{ "util/encodings", test_encodings },
	{ "util/atomic-write", test_atomic_write },
	{ "util/tree-remove", test_tree_remove },
	{ NULL, NULL }
};
