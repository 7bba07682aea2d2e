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
 * Command transcripts: lines split across appends, CRLF, invalid UTF-8,
 * window bounds, offsets and token counts, dropping past a cap, long
 * lines, and memory and disk staying bounded under a flood of output.
 */

#include "config.h"

#include <sys/resource.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transcript.h"
#include "xmalloc.h"
#include "unit.h"

#define MIB	(1024 * 1024)

static char	tdir[64];
static char	tpath[96];

/* A fresh directory for one case; the transcript lives in tpath. */
static void
tmp_setup(void)
{
	const char	*base = getenv("TMPDIR");

	if (base == NULL || *base == '\0')
		base = "/tmp";
	snprintf(tdir, sizeof tdir, "%s/transcript.XXXXXX", base);
	if (mkdtemp(tdir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(tpath, sizeof tpath, "%s/out", tdir);
}

/* Remove the transcript and the case's directory. */
static int
tmp_done(struct transcript *t)
{
	int	rv;

	rv = transcript_remove(t);
	if (rmdir(tdir) != 0)
		rv = -1;
	return (rv);
}

static struct transcript *
topen(uint64_t cap)
{
	struct transcript	*t;
	char			*cause = NULL;

	tmp_setup();
	if ((t = transcript_open(tpath, cap, &cause)) == NULL) {
		fprintf(stderr, "transcript_open: %s\n", cause);
		exit(1);
	}
	return (t);
}

static int
add(struct transcript *t, const void *buf, size_t len)
{
	char	*cause = NULL;

	if (transcript_append(t, buf, len, &cause) != 0) {
		fprintf(stderr, "transcript_append: %s\n", cause);
		free(cause);
		return (-1);
	}
	return (0);
}

static int
adds(struct transcript *t, const char *s)
{
	return (add(t, s, strlen(s)));
}

/* A window into w, whose text replaces the previous one. */
static int
win(struct transcript *t, uint64_t start, size_t lines, size_t bytes,
    int running, struct transcript_window *w)
{
	char	*cause = NULL;

	free(w->text);
	w->text = NULL;
	if (transcript_window(t, start, lines, bytes, running, w,
	    &cause) != 0) {
		fprintf(stderr, "transcript_window: %s\n", cause);
		free(cause);
		return (-1);
	}
	if (strlen(w->text) != w->len) {
		fprintf(stderr, "window length %zu, text has a NUL\n", w->len);
		return (-1);
	}
	return (0);
}

/* Whether len bytes are well-formed UTF-8. */
static int
utf8_ok(const char *p, size_t len)
{
	const unsigned char	*s = (const unsigned char *)p;
	size_t			 i = 0, n, j;
	unsigned char		 lo, hi;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		lo = 0x80;
		hi = 0xbf;
		if (s[i] >= 0xc2 && s[i] <= 0xdf)
			n = 2;
		else if (s[i] >= 0xe0 && s[i] <= 0xef)
			n = 3;
		else if (s[i] >= 0xf0 && s[i] <= 0xf4)
			n = 4;
		else
			return (0);
		if (s[i] == 0xe0)
			lo = 0xa0;
		else if (s[i] == 0xed)
			hi = 0x9f;
		else if (s[i] == 0xf0)
			lo = 0x90;
		else if (s[i] == 0xf4)
			hi = 0x8f;
		if (i + n > len)
			return (0);
		for (j = 1; j < n; j++) {
			if (s[i + j] < lo || s[i + j] > hi)
				return (0);
			lo = 0x80;
			hi = 0xbf;
		}
		i += n;
	}
	return (1);
}

/* Bytes in the files of the transcript's directory. */
static uint64_t
disk_bytes(void)
{
	DIR		*d;
	struct dirent	*de;
	struct stat	 sb;
	uint64_t	 sum = 0;

	if ((d = opendir(tpath)) == NULL)
		return (UINT64_MAX);
	while ((de = readdir(d)) != NULL) {
		/* Segments only: not where each begins (NNN.first). */
		if (strchr(de->d_name, '.') != NULL)
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, 0) == 0)
			sum += sb.st_size;
	}
	closedir(d);
	return (sum);
}

/* The resident set size of this process, in KiB. */
static long
rss_kib(void)
{
	FILE	*f;
	char	 line[256];
	long	 kib = -1;

	if ((f = fopen("/proc/self/status", "r")) == NULL)
		return (-1);
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "VmRSS:", 6) == 0) {
			kib = strtol(line + 6, NULL, 10);
			break;
		}
	}
	fclose(f);
	return (kib);
}

static int
test_simple(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };

	CHECK_INT(transcript_total_lines(t), 0);
	CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "");
	CHECK_INT(w.end, 0);
	CHECK_INT(w.original_token_count, 0);

	CHECK_INT(adds(t, "a\nbb\nccc\n"), 0);
	CHECK_INT(transcript_total_lines(t), 3);
	CHECK_INT(transcript_total_bytes(t), 9);
	CHECK_INT(transcript_dropped_lines(t), 0);
	CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "a\nbb\nccc\n");
	CHECK_INT(w.start, 0);
	CHECK_INT(w.end, 3);
	CHECK_INT(w.len, 9);
	CHECK_INT(w.original_token_count, 3);
	CHECK_INT(w.truncated, 0);

	CHECK_INT(win(t, 1, 1, 0, 1, &w), 0);
	CHECK_STR(w.text, "bb\n");
	CHECK_INT(w.start, 1);
	CHECK_INT(w.end, 2);
	CHECK_INT(w.original_token_count, 2);	/* "bb\nccc\n": 7 bytes */

	CHECK_INT(win(t, 2, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "ccc\n");
	CHECK_INT(w.end, 3);
	CHECK_INT(w.original_token_count, 1);

	/* Empty lines are lines. */
	CHECK_INT(adds(t, "\n\nz\n"), 0);
	CHECK_INT(transcript_total_lines(t), 6);
	CHECK_INT(win(t, 3, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "\n\nz\n");
	CHECK_INT(w.end, 6);

	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_chunks(void)
{
	static const char	*pieces[] = {
		"hello wor", "ld\r", "\nsecond \xc3", "\xa9t\xe2\x82", "\xac",
		"\r", "\n", "\xf0\x9f", "\x98", "\x80\n", "third", " line\r",
		"\n", NULL
	};
	const char		*want = "hello world\nsecond \xc3\xa9t\xe2\x82\xac"
	    "\n\xf0\x9f\x98\x80\nthird line\n";
	struct transcript	*t;
	struct transcript_window w = { 0 };
	const char		*all;
	size_t			 i, len;
	int			 k;

	/* In the pieces above, then byte by byte. */
	for (k = 0; k < 2; k++) {
		t = topen(0);
		if (k == 0) {
			for (i = 0; pieces[i] != NULL; i++)
				CHECK_INT(adds(t, pieces[i]), 0);
		} else {
			all = "hello world\r\nsecond \xc3\xa9t\xe2\x82\xac\r\n"
			    "\xf0\x9f\x98\x80\nthird line\r\n";
			len = strlen(all);
			for (i = 0; i < len; i++)
				CHECK_INT(add(t, all + i, 1), 0);
		}
		CHECK_INT(transcript_total_lines(t), 4);
		CHECK_INT(transcript_total_bytes(t), strlen(want) + 3);
		CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
		CHECK_STR(w.text, want);
		CHECK_INT(w.end, 4);
		CHECK_INT(win(t, 1, 1, 0, 1, &w), 0);
		CHECK_STR(w.text, "second \xc3\xa9t\xe2\x82\xac\n");
		CHECK_INT(tmp_done(t), 0);
	}
	free(w.text);
	return (0);
}

static int
test_unterminated(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };
	char			*cause = NULL;

	CHECK_INT(adds(t, "one\ntwo"), 0);
	CHECK_INT(transcript_total_lines(t), 2);

	/* Running: shown, not consumed. */
	CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "one\ntwo");
	CHECK_INT(w.end, 1);
	CHECK_INT(win(t, 1, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "two");
	CHECK_INT(w.start, 1);
	CHECK_INT(w.end, 1);
	CHECK_INT(w.original_token_count, 1);

	/* Not running: consumed. */
	CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "one\ntwo");
	CHECK_INT(w.end, 2);

	/* The line grows, then ends; an unterminated \r stays. */
	CHECK_INT(adds(t, " more\r"), 0);
	CHECK_INT(win(t, 1, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "two more\r");
	CHECK_INT(w.end, 1);
	CHECK_INT(adds(t, "\nthr"), 0);
	CHECK_INT(transcript_total_lines(t), 3);
	CHECK_INT(win(t, 1, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "two more\nthr");
	CHECK_INT(w.end, 2);

	/* Only the last line is held back, and not once finished. */
	CHECK_INT(win(t, 1, 1, 0, 1, &w), 0);
	CHECK_STR(w.text, "two more\n");
	CHECK_INT(w.end, 2);
	transcript_finish(t);
	CHECK_INT(win(t, 1, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "two more\nthr");
	CHECK_INT(w.end, 3);
	CHECK_INT(transcript_total_lines(t), 3);
	CHECK(transcript_append(t, "x", 1, &cause) != 0);
	CHECK(cause != NULL && strstr(cause, "finished") != NULL);
	free(cause);

	CHECK_INT(tmp_done(t), 0);

	/* A character cut by the pipe is held back while running. */
	t = topen(0);
	CHECK_INT(adds(t, "abc\xe2\x82"), 0);
	CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "abc");
	CHECK_INT(w.end, 0);
	CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "abc\xef\xbf\xbd");
	CHECK_INT(adds(t, "\xac"), 0);
	CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "abc\xe2\x82\xac");
	CHECK_INT(adds(t, "\xf0"), 0);
	transcript_finish(t);
	CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "abc\xe2\x82\xac\xef\xbf\xbd");
	CHECK_INT(w.end, 1);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_crlf(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };

	CHECK_INT(adds(t, "a\r\nb\r\r\n\r\nc\rd\n\x1b[31mred\x1b[0m\r\n"), 0);
	CHECK_INT(transcript_total_lines(t), 5);
	CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "a\nb\r\n\nc\rd\n\x1b[31mred\x1b[0m\n");
	/* The token count is of the stored bytes, \r included. */
	CHECK_INT(w.original_token_count, (transcript_total_bytes(t) + 3) / 4);
	CHECK_INT(win(t, 2, 1, 0, 0, &w), 0);
	CHECK_STR(w.text, "\n");
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_invalid_utf8(void)
{
	static const struct {
		const char	*in;
		const char	*out;
	} cases[] = {
		{ "\xff\n", "\xef\xbf\xbd\n" },
		{ "a\xe2\x82z\n", "a\xef\xbf\xbdz\n" },	/* one subpart */
		{ "\xc0\xaf\n", "\xef\xbf\xbd\xef\xbf\xbd\n" },	/* overlong */
		{ "\xed\xa0\x80\n", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n" },
		{ "\xf4\x90\x80\x80\n",
		    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n" },
		{ "\x80\xbf\n", "\xef\xbf\xbd\xef\xbf\xbd\n" },
		{ "ok \xe2\x82\xac \xf0\x9f\x98\x80\n",
		    "ok \xe2\x82\xac \xf0\x9f\x98\x80\n" },
		{ "end\xe2\x82", "end\xef\xbf\xbd" },	/* cut by the end */
		{ NULL, NULL }
	};
	struct transcript	*t;
	struct transcript_window w = { 0 };
	char			*cause = NULL;
	size_t			 i;

	for (i = 0; cases[i].in != NULL; i++) {
		t = topen(0);
		CHECK_INT(adds(t, cases[i].in), 0);
		CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
		CHECK_STR(w.text, cases[i].out);
		CHECK(utf8_ok(w.text, w.len));
		CHECK_INT(tmp_done(t), 0);
	}

	/* A NUL byte is valid UTF-8 and kept. */
	t = topen(0);
	CHECK_INT(add(t, "a\0b\n", 4), 0);
	free(w.text);
	w.text = NULL;
	CHECK_INT(transcript_window(t, 0, 0, 0, 0, &w, &cause), 0);
	CHECK_INT(w.len, 4);
	CHECK(memcmp(w.text, "a\0b\n", 4) == 0);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_bound_lines(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };
	char			 buf[32];
	int			 i;

	for (i = 0; i < 500; i++) {
		snprintf(buf, sizeof buf, "%d\n", i);
		CHECK_INT(adds(t, buf), 0);
	}
	CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
	CHECK_INT(w.end, 200);
	CHECK(strncmp(w.text, "0\n1\n", 4) == 0);
	CHECK(w.len > 6 && strcmp(w.text + w.len - 4, "199\n") == 0);
	CHECK_INT(win(t, 200, 0, 0, 1, &w), 0);
	CHECK_INT(w.end, 400);
	CHECK_INT(win(t, 400, 0, 0, 1, &w), 0);
	CHECK_INT(w.end, 500);
	CHECK(strcmp(w.text + w.len - 4, "499\n") == 0);
	CHECK_INT(win(t, 450, 10, 0, 1, &w), 0);
	CHECK_INT(w.end, 460);
	CHECK(strncmp(w.text, "450\n", 4) == 0);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_bound_bytes(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };
	char			 line[1001];
	int			 i;

	memset(line, 'x', 1000);
	line[1000] = '\n';
	for (i = 0; i < 100; i++)
		CHECK_INT(add(t, line, sizeof line), 0);

	/* 65 lines of 1001 bytes fit 64 KiB; the 66th would not. */
	CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
	CHECK_INT(w.end, 65);
	CHECK_INT(w.len, 65 * 1001);
	CHECK_INT(w.truncated, 0);
	CHECK_INT(w.original_token_count, (100 * 1001 + 3) / 4);
	CHECK_INT(win(t, 65, 0, 0, 0, &w), 0);
	CHECK_INT(w.end, 100);

	/* Exactly full. */
	CHECK_INT(win(t, 0, 0, 2002, 0, &w), 0);
	CHECK_INT(w.end, 2);
	CHECK_INT(win(t, 0, 0, 2001, 0, &w), 0);
	CHECK_INT(w.end, 1);
	CHECK_INT(w.truncated, 0);

	/* CRLF: the dropped \r does not count against the bound. */
	transcript_remove(t);
	rmdir(tdir);
	t = topen(0);
	line[999] = '\r';
	for (i = 0; i < 10; i++)
		CHECK_INT(add(t, line, sizeof line), 0);
	CHECK_INT(win(t, 0, 0, 3000, 0, &w), 0);
	CHECK_INT(w.end, 3);
	CHECK_INT(w.len, 3000);

	/* Invalid bytes grow threefold and count as such. */
	transcript_remove(t);
	rmdir(tdir);
	t = topen(0);
	CHECK_INT(adds(t, "\xff\xff\n\xff\n"), 0);
	CHECK_INT(win(t, 0, 0, 10, 0, &w), 0);
	CHECK_STR(w.text, "\xef\xbf\xbd\xef\xbf\xbd\n");
	CHECK_INT(w.end, 1);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_huge_line(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };
	char			*big;
	size_t			 i, n = 300 * 1024;

	big = xmalloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\n';
	CHECK_INT(add(t, big, n + 1), 0);
	CHECK_INT(adds(t, "tail\n"), 0);
	CHECK_INT(transcript_total_lines(t), 2);

	/* The one line is cut to the bound, \n kept, and consumed. */
	CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
	CHECK_INT(w.truncated, 1);
	CHECK_INT(w.len, 65536);
	CHECK_INT(w.end, 1);
	CHECK(w.text[65534] == 'x' && w.text[65535] == '\n');
	CHECK_INT(w.original_token_count, (n + 1 + 5 + 3) / 4);
	CHECK_INT(win(t, 1, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "tail\n");
	CHECK_INT(w.truncated, 0);

	/* Cut at a character boundary. */
	transcript_remove(t);
	rmdir(tdir);
	t = topen(0);
	big[0] = 'x';
	for (i = 1; i + 1 < n; i += 2) {
		big[i] = '\xc3';
		big[i + 1] = '\xa9';
	}
	big[n - 1] = '\n';
	CHECK_INT(add(t, big, n), 0);
	CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
	CHECK_INT(w.truncated, 1);
	CHECK(w.len <= 65536 && w.len >= 65533);
	CHECK(w.text[w.len - 1] == '\n');
	CHECK(utf8_ok(w.text, w.len));
	CHECK_INT(w.end, 1);

	/* An unterminated huge last line, while running: not consumed. */
	transcript_remove(t);
	rmdir(tdir);
	t = topen(0);
	CHECK_INT(add(t, big, n - 1), 0);
	CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
	CHECK_INT(w.truncated, 1);
	CHECK_INT(w.end, 0);
	CHECK(w.len <= 65536 && w.text[w.len - 1] != '\n');
	CHECK(utf8_ok(w.text, w.len));
	CHECK_INT(win(t, 0, 0, 0, 0, &w), 0);
	CHECK_INT(w.end, 1);

	/* A bound of one byte still makes progress. */
	CHECK_INT(win(t, 0, 0, 1, 0, &w), 0);
	CHECK_INT(w.len, 1);
	CHECK_STR(w.text, "x");
	CHECK_INT(w.end, 1);

	free(big);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_past_end(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };

	CHECK_INT(adds(t, "a\nb\nc\n"), 0);
	CHECK_INT(win(t, 3, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "");
	CHECK_INT(w.start, 3);
	CHECK_INT(w.end, 3);
	CHECK_INT(w.original_token_count, 0);
	CHECK_INT(win(t, 1000, 0, 0, 1, &w), 0);
	CHECK_INT(w.len, 0);
	CHECK_INT(w.start, 1000);
	CHECK_INT(w.end, 1000);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

/* Lines "line N\n" appended in chunks of various sizes that cut lines. */
static int
fill_numbered(struct transcript *t, int first, int count)
{
	char	buf[8192];
	size_t	len = 0, chunk = 1;
	int	i;

	for (i = first; i < first + count; i++) {
		len += snprintf(buf + len, sizeof buf - len, "line %d\n", i);
		if (len > sizeof buf - 32) {
			if (add(t, buf, len) != 0)
				return (-1);
			len = 0;
		}
		if (len >= chunk) {
			if (add(t, buf, chunk) != 0)
				return (-1);
			memmove(buf, buf + chunk, len - chunk);
			len -= chunk;
			chunk = chunk * 7 % 4093 + 1;
		}
	}
	if (len != 0 && add(t, buf, len) != 0)
		return (-1);
	return (0);
}

static int
test_drop(void)
{
	struct transcript	*t = topen(64 * 1024);
	struct transcript_window w = { 0 };
	uint64_t		 dropped, n;
	char			 want[32];
	int			 total = 20000;

	CHECK_INT(fill_numbered(t, 0, total), 0);
	CHECK_INT(transcript_total_lines(t), total);
	dropped = transcript_dropped_lines(t);
	CHECK(dropped > 0);
	CHECK(dropped < (uint64_t)total);
	CHECK(disk_bytes() <= 64 * 1024);
	CHECK(disk_bytes() >= 32 * 1024);

	/* Before the first kept line: moved up to it. */
	CHECK_INT(win(t, 0, 5, 0, 0, &w), 0);
	CHECK_INT(w.start, dropped);
	CHECK_INT(w.end, dropped + 5);
	snprintf(want, sizeof want, "line %llu\n", (unsigned long long)dropped);
	CHECK(strncmp(w.text, want, strlen(want)) == 0);
	CHECK_INT(w.original_token_count,
	    (disk_bytes() + 3) / 4);

	/* Numbers are kept: line N reads "line N". */
	for (n = dropped; n < (uint64_t)total; n += 997) {
		CHECK_INT(win(t, n, 1, 0, 0, &w), 0);
		snprintf(want, sizeof want, "line %llu\n",
		    (unsigned long long)n);
		CHECK_STR(w.text, want);
		CHECK_INT(w.start, n);
	}
	CHECK_INT(win(t, total - 1, 0, 0, 0, &w), 0);
	snprintf(want, sizeof want, "line %d\n", total - 1);
	CHECK_STR(w.text, want);

	/* A window across segments is whole. */
	CHECK_INT(win(t, dropped, 1000, 1024 * 1024, 0, &w), 0);
	CHECK_INT(w.end, dropped + 1000);
	snprintf(want, sizeof want, "\nline %llu\n",
	    (unsigned long long)dropped + 999);
	CHECK(strcmp(w.text + w.len - strlen(want), want) == 0);

	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_index(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };
	char			 want[64];
	uint64_t		 n;
	int			 total = 300000;

	/* Enough lines for many index marks in one segment. */
	CHECK_INT(fill_numbered(t, 0, total), 0);
	CHECK_INT(transcript_total_lines(t), total);
	CHECK_INT(transcript_dropped_lines(t), 0);
	for (n = 0; n < (uint64_t)total; n += 4093) {
		CHECK_INT(win(t, n, 2, 0, 0, &w), 0);
		snprintf(want, sizeof want, "line %llu\nline %llu\n",
		    (unsigned long long)n, (unsigned long long)n + 1);
		CHECK_STR(w.text, want);
	}
	for (n = 4090; n < 4100; n++) {
		CHECK_INT(win(t, n, 1, 0, 0, &w), 0);
		snprintf(want, sizeof want, "line %llu\n",
		    (unsigned long long)n);
		CHECK_STR(w.text, want);
	}
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_long_line(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };
	char			*big;
	size_t			 i, n = 5 * MIB / 2, off;

	/* 2.5 MiB without a newline: pieces of 1 MiB, 1 MiB, 0.5 MiB. */
	big = xmalloc(n);
	memset(big, 'a', n);
	for (off = 0; off < n; off += 65536)
		CHECK_INT(add(t, big + off, n - off < 65536 ? n - off : 65536),
		    0);
	CHECK_INT(transcript_total_lines(t), 3);
	CHECK_INT(win(t, 0, 0, 3 * MIB, 1, &w), 0);
	CHECK_INT(w.end, 2);
	CHECK_INT(w.len, 2 * MIB + 2 + MIB / 2);
	CHECK(w.text[MIB] == '\n' && w.text[MIB - 1] == 'a');
	CHECK(w.text[2 * MIB + 1] == '\n' && w.text[w.len - 1] == 'a');
	CHECK_INT(w.truncated, 0);
	CHECK_INT(adds(t, "\n"), 0);
	CHECK_INT(transcript_total_lines(t), 3);
	CHECK_INT(win(t, 2, 0, MIB, 1, &w), 0);
	CHECK_INT(w.len, MIB / 2 + 1);
	CHECK_INT(w.end, 3);
	CHECK_INT(tmp_done(t), 0);

	/*
	 * "x" then "é" repeated: the 1 MiB mark falls inside a character,
	 * which moves whole to the next piece. The last bytes before the
	 * mark come one at a time.
	 */
	t = topen(0);
	big[0] = 'x';
	for (i = 1; i + 1 < n; i += 2) {
		big[i] = '\xc3';
		big[i + 1] = '\xa9';
	}
	CHECK_INT(add(t, big, MIB - 2), 0);
	for (off = MIB - 2; off < MIB + 2; off++)
		CHECK_INT(add(t, big + off, 1), 0);
	CHECK_INT(add(t, big + off, 101), 0);
	CHECK_INT(adds(t, "\n"), 0);
	CHECK_INT(transcript_total_lines(t), 2);
	CHECK_INT(win(t, 0, 0, 2 * MIB, 0, &w), 0);
	CHECK_INT(w.end, 2);
	CHECK_INT(w.len, MIB + 105);
	CHECK(w.text[MIB - 1] == '\n');
	CHECK(utf8_ok(w.text, w.len));
	CHECK(memcmp(w.text + MIB, "\xc3\xa9\xc3\xa9", 4) == 0);
	CHECK_INT(win(t, 1, 0, 0, 0, &w), 0);
	CHECK_INT(w.len, 105);
	CHECK(utf8_ok(w.text, w.len));

	free(big);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_memory(void)
{
	struct transcript	*t;
	struct transcript_window w = { 0 };
	char			*chunk;
	uint64_t		 cap = 4 * MIB, total = 200 * MIB, done, lines;
	size_t			 len = 65536, i;
	long			 before, after;
	char			 want[32];

	/* A chunk of 8-byte lines "%07u\n" that repeats every 8192 lines. */
	chunk = xmalloc(len);
	for (i = 0; i < len / 8; i++) {
		snprintf(want, sizeof want, "%07zu\n", i);
		memcpy(chunk + i * 8, want, 8);
	}

	t = topen(cap);
	before = rss_kib();
	for (done = 0; done < total; done += len) {
		CHECK_INT(add(t, chunk, len), 0);
		if (done % (16 * MIB) == 0)
			CHECK(disk_bytes() <= cap + cap / 4);
	}
	after = rss_kib();
	CHECK(before > 0 && after > 0);
	if (after - before >= 8 * 1024) {
		fprintf(stderr, "VmRSS grew from %ld KiB to %ld KiB\n", before,
		    after);
		return (1);
	}
	CHECK(disk_bytes() <= cap + cap / 4);
	CHECK(disk_bytes() >= cap - cap / 4 - 1024);

	lines = total / 8;
	CHECK_INT(transcript_total_lines(t), lines);
	CHECK_INT(transcript_total_bytes(t), total);
	CHECK(transcript_dropped_lines(t) >= lines - cap / 8);
	CHECK_INT(win(t, lines - 100, 0, 0, 0, &w), 0);
	CHECK_INT(w.end, lines);
	snprintf(want, sizeof want, "%07llu\n",
	    (unsigned long long)(lines - 100) % 8192);
	CHECK(strncmp(w.text, want, 8) == 0);
	transcript_finish(t);
	CHECK_INT(win(t, lines - 1, 0, 0, 0, &w), 0);
	CHECK_STR(w.text, "0008191\n");

	free(chunk);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

static int
test_files(void)
{
	struct transcript	*t;
	struct stat		 sb;
	char			*cause = NULL, stale[128];
	FILE			*f;

	/*
	 * Nothing is made until the first bytes come: a transcript that
	 * stays empty costs no file, and removing it is fine.
	 */
	tmp_setup();
	t = transcript_open(tpath, 0, &cause);
	CHECK(t != NULL);
	CHECK_INT(adds(t, ""), 0);
	CHECK(stat(tpath, &sb) != 0 && errno == ENOENT);
	transcript_finish(t);
	CHECK_INT(transcript_total_lines(t), 0);
	CHECK_INT(transcript_remove(t), 0);
	CHECK(stat(tpath, &sb) != 0 && errno == ENOENT);

	/* The first bytes clear segment files left in the directory. */
	CHECK_INT(mkdir(tpath, 0700), 0);
	snprintf(stale, sizeof stale, "%s/0000000007", tpath);
	CHECK((f = fopen(stale, "w")) != NULL);
	fputs("old\n", f);
	fclose(f);
	t = transcript_open(tpath, 0, &cause);
	CHECK(t != NULL);
	CHECK(stat(stale, &sb) == 0);
	CHECK_INT(adds(t, "new\n"), 0);
	CHECK(stat(stale, &sb) != 0 && errno == ENOENT);
	CHECK_INT(disk_bytes(), 4);

	/* Free leaves the files; remove deletes them and the directory. */
	transcript_finish(t);
	transcript_free(t);
	CHECK_INT(disk_bytes(), 4);
	t = transcript_open(tpath, 0, &cause);
	CHECK(t != NULL);
	CHECK_INT(adds(t, "x"), 0);
	CHECK_INT(disk_bytes(), 1);
	CHECK_INT(transcript_remove(t), 0);
	CHECK(stat(tpath, &sb) != 0 && errno == ENOENT);

	/*
	 * A path that is a file, or under a missing directory, fails at the
	 * first bytes, saying why, and stays failed.
	 */
	CHECK((f = fopen(tpath, "w")) != NULL);
	fclose(f);
	t = transcript_open(tpath, 0, &cause);
	CHECK(t != NULL);
	CHECK(transcript_append(t, "a\n", 2, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, strerror(ENOTDIR)) != NULL);
	free(cause);
	cause = NULL;
	CHECK(transcript_append(t, "b\n", 2, &cause) == -1);
	CHECK(cause != NULL);
	free(cause);
	cause = NULL;
	transcript_free(t);
	unlink(tpath);
	snprintf(stale, sizeof stale, "%s/no/such", tdir);
	t = transcript_open(stale, 0, &cause);
	CHECK(t != NULL);
	CHECK(transcript_append(t, "a\n", 2, &cause) == -1);
	CHECK(cause != NULL && strstr(cause, "mkdir") != NULL);
	free(cause);
	transcript_free(t);
	CHECK_INT(rmdir(tdir), 0);
	return (0);
}

static int
test_write_error(void)
{
	struct transcript	*t = topen(0);
	struct transcript_window w = { 0 };
	struct rlimit		 old, rl;
	void			(*oldsig)(int);
	char			*cause = NULL, *cause2 = NULL;
	int			 rv;

	CHECK_INT(adds(t, "first\nsecond\n"), 0);

	/* The file may grow to 20 bytes: the write stops after 7 of 18. */
	CHECK_INT(getrlimit(RLIMIT_FSIZE, &old), 0);
	rl = old;
	rl.rlim_cur = 20;
	oldsig = signal(SIGXFSZ, SIG_IGN);
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &rl), 0);
	rv = transcript_append(t, "third line\nfourth\n", 18, &cause);
	CHECK_INT(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, oldsig);
	CHECK_INT(rv, -1);
	CHECK(cause != NULL && strstr(cause, "write") != NULL);

	/* What was there before is intact and readable. */
	CHECK_INT(transcript_total_lines(t), 2);
	CHECK_INT(transcript_total_bytes(t), 13);
	CHECK_INT(disk_bytes(), 13);
	CHECK_INT(win(t, 0, 0, 0, 1, &w), 0);
	CHECK_STR(w.text, "first\nsecond\n");
	CHECK_INT(w.end, 2);

	/* No more bytes are taken, with the same reason. */
	CHECK_INT(transcript_append(t, "x\n", 2, &cause2), -1);
	CHECK_STR(cause2, cause);
	CHECK_INT(transcript_append(t, "x\n", 2, NULL), -1);
	free(cause);
	free(cause2);
	free(w.text);
	CHECK_INT(tmp_done(t), 0);
	return (0);
}

/*
 * A transcript left by a process that is gone, read back: the same lines
 * and windows as the one that wrote it, across several segments, a last
 * line without its newline included; an empty directory reads as empty.
 */
static int
test_load(void)
{
	struct transcript	*t = topen(256 * 1024), *l;
	struct transcript_window w = { 0 }, v = { 0 };
	char			*cause = NULL;
	uint64_t		 n;

	CHECK_INT(fill_numbered(t, 0, 20000), 0);
	CHECK_INT(add(t, "no newline", 10), 0);
	CHECK(disk_bytes() > 128 * 1024);	/* three segments or more */
	CHECK_INT(transcript_dropped_lines(t), 0);
	l = transcript_load(tpath, 256 * 1024, &cause);
	CHECK(l != NULL);
	CHECK_INT(transcript_total_lines(l), transcript_total_lines(t));
	for (n = 0; n < 20001; n += 1211) {
		CHECK_INT(win(t, n, 50, 0, 0, &w), 0);
		CHECK_INT(win(l, n, 50, 0, 0, &v), 0);
		CHECK_STR(v.text, w.text);
		CHECK_INT(v.end, w.end);
	}
	CHECK_INT(win(l, 20000, 5, 0, 0, &v), 0);
	CHECK_STR(v.text, "no newline");
	transcript_free(l);
	CHECK_INT(tmp_done(t), 0);

	/* With lines dropped, they keep their numbers when read back. */
	t = topen(64 * 1024);
	CHECK_INT(fill_numbered(t, 0, 20000), 0);
	CHECK(transcript_dropped_lines(t) > 0);
	l = transcript_load(tpath, 64 * 1024, &cause);
	CHECK(l != NULL);
	CHECK_INT(transcript_total_lines(l), 20000);
	CHECK_INT(transcript_dropped_lines(l), transcript_dropped_lines(t));
	CHECK_INT(win(l, 19990, 2, 0, 0, &v), 0);
	CHECK_STR(v.text, "line 19990\nline 19991\n");
	transcript_free(l);
	CHECK_INT(tmp_done(t), 0);

	tmp_setup();
	CHECK_INT(mkdir(tpath, 0700), 0);
	l = transcript_load(tpath, 0, &cause);
	CHECK(l != NULL);
	CHECK_INT(transcript_total_lines(l), 0);
	CHECK_INT(win(l, 0, 5, 0, 0, &v), 0);
	CHECK_STR(v.text, "");
	CHECK_INT(tmp_done(l), 0);
	return (0);
}

const struct unit_case unit_transcript_cases[] = {
	{ "transcript/simple", test_simple },
	{ "transcript/chunks", test_chunks },
	{ "transcript/unterminated", test_unterminated },
	{ "transcript/crlf", test_crlf },
	{ "transcript/invalid-utf8", test_invalid_utf8 },
	{ "transcript/bound-lines", test_bound_lines },
	{ "transcript/bound-bytes", test_bound_bytes },
	{ "transcript/huge-line", test_huge_line },
	{ "transcript/past-end", test_past_end },
	{ "transcript/drop", test_drop },
	{ "transcript/index", test_index },
	{ "transcript/long-line", test_long_line },
	{ "transcript/memory", test_memory },
	{ "transcript/files", test_files },
	{ "transcript/write-error", test_write_error },
	{ "transcript/load", test_load },
	{ NULL, NULL }
};
