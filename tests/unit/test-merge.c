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
 * Three-way text merge. Every case in merge_cases[] was checked against
 * real git 2.39.5: the three texts were written to files and
 * "git merge-file -p --quiet ours base theirs" run on them; a conflict
 * means git exited non-zero, and for a clean merge the expected bytes are
 * exactly what git printed. The cases after the table test our own rules
 * (what may be merged at all), which git does not have.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "sandbox-mcp.h"
#include "unit.h"

struct merge_case {
	const char	*group;
	const char	*name;
	const char	*base;
	const char	*ours;
	const char	*theirs;
	int		 conflict;
	const char	*merged;	/* for a clean merge */
};

static const struct merge_case merge_cases[] = {
	/* Edits to separate regions merge. */
	{ "separate", "separate",
	    "1\n2\n3\n4\n5\n",
	    "1\nX\n3\n4\n5\n",
	    "1\n2\n3\nY\n5\n",
	    0, "1\nX\n3\nY\n5\n" },
	/* Insertions at both ends merge. */
	{ "separate", "separate-inserts",
	    "1\n2\n3\n",
	    "0\n1\n2\n3\n",
	    "1\n2\n3\n4\n",
	    0, "0\n1\n2\n3\n4\n" },
	/* An insertion and an edit one unchanged line apart merge. */
	{ "separate", "insert-and-edit",
	    "1\n2\n3\n",
	    "1\nA\n2\n3\n",
	    "1\n2\nB\n",
	    0, "1\nA\n2\nB\n" },
	/* Both sides edit the same line differently. */
	{ "overlap", "overlap",
	    "1\n2\n3\n",
	    "1\nX\n3\n",
	    "1\nY\n3\n",
	    1, NULL },
	/* Overlapping edits that agree on one line only. */
	{ "overlap", "overlap-partly-same",
	    "1\n2\n3\n4\n",
	    "1\nX\nY\n4\n",
	    "1\nX\nZ\n4\n",
	    1, NULL },
	/* Edits on adjacent lines (3 and 4) touch. */
	{ "touching", "adjacent",
	    "1\n2\n3\n4\n5\n",
	    "1\n2\nX\n4\n5\n",
	    "1\n2\n3\nY\n5\n",
	    1, NULL },
	/* An insertion right after an edited line touches it. */
	{ "touching", "insert-after-edit",
	    "1\n2\n3\n",
	    "1\nX\n3\n",
	    "1\n2\nI\n3\n",
	    1, NULL },
	/* Different insertions at the same place. */
	{ "touching", "insert-same-place",
	    "1\n2\n",
	    "1\nA\n2\n",
	    "1\nB\n2\n",
	    1, NULL },
	/* The same edit on both sides. */
	{ "identical", "identical-edit",
	    "1\n2\n3\n",
	    "1\nX\n3\n",
	    "1\nX\n3\n",
	    0, "1\nX\n3\n" },
	/* The same deletion on both sides, with another edit. */
	{ "identical", "identical-delete",
	    "1\n2\n3\n4\n5\n",
	    "1\n3\n4\nZ\n",
	    "1\n3\n4\n5\n",
	    0, "1\n3\n4\nZ\n" },
	/* One side unchanged gives the other. */
	{ "one-side", "ours-unchanged",
	    "a\nb\n",
	    "a\nb\n",
	    "a\nc\nd\n",
	    0, "a\nc\nd\n" },
	/* The other side unchanged. */
	{ "one-side", "theirs-unchanged",
	    "a\nb\n",
	    "z\n",
	    "a\nb\n",
	    0, "z\n" },
	/* No final newline anywhere, edits far apart. */
	{ "no-eol", "no-eol-separate",
	    "1\n2\n3\n4\n5",
	    "X\n2\n3\n4\n5",
	    "1\n2\n3\n4\nY",
	    0, "X\n2\n3\n4\nY" },
	/* Appending after a last line without newline edits it. */
	{ "no-eol", "no-eol-append",
	    "a\nb\nc\nd",
	    "a\nb\nc\nd\ne",
	    "x\nb\nc\nd",
	    0, "x\nb\nc\nd\ne" },
	/* That edit touches a change to the line before. */
	{ "no-eol", "no-eol-append-near",
	    "a\nb\nc",
	    "a\nb\nc\nd",
	    "a\nX\nc",
	    1, NULL },
	/* Adding the final newline on one side. */
	{ "no-eol", "no-eol-add-newline",
	    "a\nb\nc",
	    "a\nb\nc\n",
	    "X\nb\nc",
	    0, "X\nb\nc\n" },
	/* Both sides append the same last line. */
	{ "no-eol", "no-eol-same-append",
	    "a\nb",
	    "a\nb\nc",
	    "a\nb\nc",
	    0, "a\nb\nc" },
	/* CRLF lines merge and keep their CR. */
	{ "crlf", "crlf-separate",
	    "1\r\n2\r\n3\r\n4\r\n5\r\n",
	    "1\r\nX\r\n3\r\n4\r\n5\r\n",
	    "1\r\n2\r\n3\r\n4\r\nY\r\n",
	    0, "1\r\nX\r\n3\r\n4\r\nY\r\n" },
	/* Changing the line ends of a whole file conflicts with any edit. */
	{ "crlf", "crlf-to-lf",
	    "1\r\n2\r\n3\r\n",
	    "1\n2\n3\n",
	    "1\r\n2\r\nY\r\n",
	    1, NULL },
	/* Changing one line's end is an edit of that line. */
	{ "crlf", "crlf-one-line",
	    "1\r\n2\r\n3\r\n4\r\n",
	    "1\n2\r\n3\r\n4\r\n",
	    "1\r\n2\r\n3\r\nY\r\n",
	    0, "1\n2\r\n3\r\nY\r\n" },
	/* Both sides added the file with different text. */
	{ "empty-base", "empty-base-different",
	    "",
	    "a\n",
	    "b\n",
	    1, NULL },
	/* Both sides added the file with the same text. */
	{ "empty-base", "empty-base-same",
	    "",
	    "a\nb\n",
	    "a\nb\n",
	    0, "a\nb\n" },
	/* One side added text to an empty file. */
	{ "empty-base", "empty-base-one-side",
	    "",
	    "",
	    "a\n",
	    0, "a\n" },
	/* Added text that starts the same way. */
	{ "empty-base", "empty-base-common-start",
	    "",
	    "a\nb\n",
	    "a\nc\n",
	    1, NULL },
	/* One side empties the file, the other edits it. */
	{ "delete-all", "delete-all-vs-edit",
	    "a\nb\n",
	    "",
	    "a\nc\n",
	    1, NULL },
	/* One side empties the file, the other left it. */
	{ "delete-all", "delete-all-vs-unchanged",
	    "a\nb\n",
	    "",
	    "a\nb\n",
	    0, "" },
	/* Both sides empty the file. */
	{ "delete-all", "delete-all-both",
	    "a\nb\n",
	    "",
	    "",
	    0, "" },
	/* A deletion and an edit apart. */
	{ "separate", "delete-vs-edit-apart",
	    "1\n2\n3\n4\n",
	    "2\n3\n4\n",
	    "1\n2\n3\nY\n",
	    0, "2\n3\nY\n" },
	/* Text that looks like markers is just text. */
	{ "text", "markers-in-text",
	    "<<<<<<< a\n=======\n>>>>>>> b\n",
	    "<<<<<<< a\n=======\n>>>>>>> b\nX\n",
	    "Y\n<<<<<<< a\n=======\n>>>>>>> b\n",
	    0, "Y\n<<<<<<< a\n=======\n>>>>>>> b\nX\n" },
	/* Multibyte text. */
	{ "text", "utf8",
	    "\303\251t\303\251\nhiver\n\303\251t\303\251\n",
	    "\303\251t\303\251!\nhiver\n\303\251t\303\251\n",
	    "\303\251t\303\251\nhiver\n\303\251t\303\251?\n",
	    0, "\303\251t\303\251!\nhiver\n\303\251t\303\251?\n" },
	{ NULL, NULL, NULL, NULL, NULL, 0, NULL }
};

/* Run the table cases of one group; at least one must exist. */
static int
merge_check(const char *group)
{
	const struct merge_case	*c;
	char			*out, *cause = NULL;
	size_t			 outlen;
	int			 r, want, n = 0, failed = 0;

	for (c = merge_cases; c->group != NULL; c++) {
		if (strcmp(c->group, group) != 0)
			continue;
		n++;
		want = c->conflict ? 1 : 0;
		r = merge_text(c->base, strlen(c->base), c->ours,
		    strlen(c->ours), c->theirs, strlen(c->theirs), &out,
		    &outlen, &cause);
		if (r != want) {
			fprintf(stderr, "%s: expected %d, got %d%s%s\n",
			    c->name, want, r, r == -1 ? ": " : "",
			    r == -1 ? cause : "");
			free(cause);
			cause = NULL;
			failed = 1;
		} else if (r == 1 && out != NULL) {
			fprintf(stderr, "%s: output on a conflict\n", c->name);
			failed = 1;
		} else if (r == 0 && (outlen != strlen(c->merged) ||
		    memcmp(out, c->merged, outlen) != 0)) {
			fprintf(stderr, "%s: expected \"%s\", got \"%.*s\"\n",
			    c->name, c->merged, (int)outlen, out);
			failed = 1;
		}
		free(out);
	}
	CHECK(n > 0);
	return (failed);
}

#define MERGE_TEST(fn, group)						\
static int								\
test_##fn(void)								\
{									\
	return (merge_check(group));					\
}

MERGE_TEST(separate, "separate")
MERGE_TEST(overlap, "overlap")
MERGE_TEST(touching, "touching")
MERGE_TEST(identical, "identical")
MERGE_TEST(one_side, "one-side")
MERGE_TEST(no_eol, "no-eol")
MERGE_TEST(crlf, "crlf")
MERGE_TEST(empty_base, "empty-base")
MERGE_TEST(delete_all, "delete-all")
MERGE_TEST(text, "text")

/* What merge_mergeable() accepts: bounded UTF-8 without NUL bytes. */
static int
test_mergeable(void)
{
	char	*big;

	CHECK_INT(merge_mergeable("", 0), 1);
	CHECK_INT(merge_mergeable(NULL, 0), 1);
	CHECK_INT(merge_mergeable("a\nb\n", 4), 1);
	CHECK_INT(merge_mergeable("\303\251\r\n", 4), 1);
	CHECK_INT(merge_mergeable("a\0b", 3), 0);
	CHECK_INT(merge_mergeable("\303(", 2), 0);	/* bad continuation */
	CHECK_INT(merge_mergeable("\300\257", 2), 0);	/* overlong */
	CHECK_INT(merge_mergeable("\355\240\200", 3), 0);	/* surrogate */
	CHECK_INT(merge_mergeable("\303", 1), 0);	/* truncated */
	big = xmalloc(MERGE_MAX_SIZE + 1);
	memset(big, 'a', MERGE_MAX_SIZE + 1);
	CHECK_INT(merge_mergeable(big, MERGE_MAX_SIZE), 1);
	CHECK_INT(merge_mergeable(big, MERGE_MAX_SIZE + 1), 0);
	free(big);
	return (0);
}

/* An input that cannot be merged is a conflict, whatever the others. */
static int
test_unmergeable(void)
{
	char	*out, *cause = NULL, *big;
	size_t	 outlen;

	CHECK_INT(merge_text("a\n", 2, "a\0\n", 3, "a\n", 2, &out, &outlen,
	    &cause), 1);
	CHECK(out == NULL);
	CHECK_INT(merge_text("\377\n", 2, "a\n", 2, "a\n", 2, &out, &outlen,
	    &cause), 1);
	CHECK(out == NULL);
	big = xmalloc(MERGE_MAX_SIZE + 1);
	memset(big, '\n', MERGE_MAX_SIZE + 1);
	CHECK_INT(merge_text("\n", 1, "\n", 1, big, MERGE_MAX_SIZE + 1, &out,
	    &outlen, &cause), 1);
	CHECK(out == NULL);
	free(big);
	CHECK(cause == NULL);
	return (0);
}

/* Empty inputs may be NULL; a clean empty result is allocated. */
static int
test_empty(void)
{
	char	*out, *cause = NULL;
	size_t	 outlen;

	CHECK_INT(merge_text(NULL, 0, "a\n", 2, NULL, 0, &out, &outlen,
	    &cause), 0);
	CHECK_INT(outlen, 2);
	CHECK(memcmp(out, "a\n", 2) == 0);
	free(out);
	CHECK_INT(merge_text(NULL, 0, NULL, 0, NULL, 0, &out, &outlen,
	    &cause), 0);
	CHECK(out != NULL);
	CHECK_INT(outlen, 0);
	free(out);
	return (0);
}

/* A large file: edits at both ends merge, edits on adjacent lines not. */
static int
test_large(void)
{
	char	*base, *ours, *theirs, *out, *cause = NULL, *p;
	size_t	 i, n = 20000, len, outlen;

	len = n * 8;
	base = xmalloc(len + 1);
	for (i = 0, p = base; i < n; i++)
		p += sprintf(p, "l%06zu\n", i);
	ours = xstrdup(base);
	theirs = xstrdup(base);
	ours[1] = 'X';
	theirs[len - 2] = 'Y';
	CHECK_INT(merge_text(base, len, ours, len, theirs, len, &out, &outlen,
	    &cause), 0);
	CHECK_INT(outlen, len);
	CHECK(out[1] == 'X' && out[len - 2] == 'Y');
	CHECK(memcmp(out + 8, base + 8, len - 16) == 0);
	free(out);
	theirs[len - 2] = '9';
	theirs[9] = 'Z';	/* the line right after ours' edit */
	CHECK_INT(merge_text(base, len, ours, len, theirs, len, &out, &outlen,
	    &cause), 1);
	free(theirs);
	free(ours);
	free(base);
	return (0);
}

const struct unit_case unit_merge_cases[] = {
	{ "merge/separate", test_separate },
	{ "merge/overlap", test_overlap },
	{ "merge/touching", test_touching },
	{ "merge/identical", test_identical },
	{ "merge/one-side", test_one_side },
	{ "merge/no-final-newline", test_no_eol },
	{ "merge/crlf", test_crlf },
	{ "merge/empty-base", test_empty_base },
	{ "merge/delete-all", test_delete_all },
	{ "merge/text", test_text },
	{ "merge/mergeable", test_mergeable },
	{ "merge/unmergeable", test_unmergeable },
	{ "merge/empty", test_empty },
	{ "merge/large", test_large },
	{ NULL, NULL }
};
