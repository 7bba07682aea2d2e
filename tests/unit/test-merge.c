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
 * Three-way text merge, line-granular. The cases in merge_cases[] that
 * git would also merge were checked against real git 2.39.5 ("git
 * merge-file -p --quiet ours base theirs"): the expected bytes are
 * exactly what git printed. The "touching" group is where we differ:
 * git conflicts on edits that merely touch (adjacent lines, an insertion
 * next to an edit); we merge them, and conflict only on a base line both
 * sides changed differently or on different insertions at one point. A
 * random test then checks merge_text against a reference written the
 * slow way, line by line, on thousands of small texts.
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
	/* Edits on adjacent lines (3 and 4) merge. */
	{ "touching", "adjacent",
	    "1\n2\n3\n4\n5\n",
	    "1\n2\nX\n4\n5\n",
	    "1\n2\n3\nY\n5\n",
	    0, "1\n2\nX\nY\n5\n" },
	/* Five sides' worth: lines 1 and 2 of ten, one each. */
	{ "touching", "adjacent-first-lines",
	    "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
	    "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n",
	    "1\ntwo\n3\n4\n5\n6\n7\n8\n9\n10\n",
	    0, "one\ntwo\n3\n4\n5\n6\n7\n8\n9\n10\n" },
	/* An insertion right after an edited line merges after it. */
	{ "touching", "insert-after-edit",
	    "1\n2\n3\n",
	    "1\nX\n3\n",
	    "1\n2\nI\n3\n",
	    0, "1\nX\nI\n3\n" },
	/* An insertion right before an edited line merges before it. */
	{ "touching", "insert-before-edit",
	    "1\n2\n3\n",
	    "1\n2\nX\n",
	    "1\n2\nI\n3\n",
	    0, "1\n2\nI\nX\n" },
	/* An insertion inside a range the other side replaced. */
	{ "touching", "insert-inside-edit",
	    "1\n2\n3\n4\n",
	    "1\nX\nY\n4\n",
	    "1\n2\nI\n3\n4\n",
	    1, NULL },
	/* A line deleted on one side, the next edited on the other. */
	{ "touching", "delete-next-to-edit",
	    "1\n2\n3\n4\n",
	    "1\n3\n4\n",
	    "1\n2\nX\n4\n",
	    0, "1\nX\n4\n" },
	/* A line deleted on one side, edited on the other. */
	{ "touching", "delete-vs-edit",
	    "1\n2\n3\n",
	    "1\n3\n",
	    "1\nX\n3\n",
	    1, NULL },
	/* The same insertion at the same point. */
	{ "touching", "insert-same-place-same",
	    "1\n2\n",
	    "1\nA\n2\n",
	    "1\nA\n2\n",
	    0, "1\nA\n2\n" },
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
	/* That edit merges with a change to the line before. */
	{ "no-eol", "no-eol-append-near",
	    "a\nb\nc",
	    "a\nb\nc\nd",
	    "a\nX\nc",
	    0, "a\nX\nc\nd" },
	/* But not with a change to the same last line. */
	{ "no-eol", "no-eol-append-same",
	    "a\nb\nc",
	    "a\nb\nc\nd",
	    "a\nb\nC",
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
	char			*out;
	size_t			 outlen, line;
	int			 r, want, n = 0, failed = 0;

	for (c = merge_cases; c->group != NULL; c++) {
		if (strcmp(c->group, group) != 0)
			continue;
		n++;
		want = c->conflict ? 1 : 0;
		r = merge_text(c->base, strlen(c->base), c->ours,
		    strlen(c->ours), c->theirs, strlen(c->theirs), &out,
		    &outlen, &line);
		if (r != want) {
			fprintf(stderr, "%s: expected %d, got %d\n", c->name,
			    want, r);
			failed = 1;
		} else if (r == 1 && line == 0) {
			fprintf(stderr, "%s: a conflict names no line\n",
			    c->name);
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
	char	*out, *big;
	size_t	 outlen, line;

	CHECK_INT(merge_text("a\n", 2, "a\0\n", 3, "a\n", 2, &out, &outlen,
	    &line), 1);
	CHECK(out == NULL);
	CHECK_INT(merge_text("\377\n", 2, "a\n", 2, "a\n", 2, &out, &outlen,
	    &line), 1);
	CHECK(out == NULL);
	big = xmalloc(MERGE_MAX_SIZE + 1);
	memset(big, '\n', MERGE_MAX_SIZE + 1);
	CHECK_INT(merge_text("\n", 1, "\n", 1, big, MERGE_MAX_SIZE + 1, &out,
	    &outlen, &line), 1);
	CHECK(out == NULL);
	CHECK_INT(line, 0);	/* not a line's conflict */
	free(big);
	return (0);
}

/* Empty inputs may be NULL; a clean empty result is allocated. */
static int
test_empty(void)
{
	char	*out;
	size_t	 outlen, line;

	CHECK_INT(merge_text(NULL, 0, "a\n", 2, NULL, 0, &out, &outlen,
	    &line), 0);
	CHECK_INT(outlen, 2);
	CHECK(memcmp(out, "a\n", 2) == 0);
	free(out);
	CHECK_INT(merge_text(NULL, 0, NULL, 0, NULL, 0, &out, &outlen,
	    &line), 0);
	CHECK(out != NULL);
	CHECK_INT(outlen, 0);
	free(out);
	return (0);
}

/*
 * A large file: edits at both ends merge, and so do edits on adjacent
 * lines; the same line edited differently is a conflict, at its line.
 */
static int
test_large(void)
{
	char	*base, *ours, *theirs, *out, *p;
	size_t	 i, n = 20000, len, outlen, line;

	len = n * 8;
	base = xmalloc(len + 1);
	for (i = 0, p = base; i < n; i++)
		p += sprintf(p, "l%06zu\n", i);
	ours = xstrdup(base);
	theirs = xstrdup(base);
	ours[1] = 'X';
	theirs[len - 2] = 'Y';
	CHECK_INT(merge_text(base, len, ours, len, theirs, len, &out, &outlen,
	    &line), 0);
	CHECK_INT(outlen, len);
	CHECK(out[1] == 'X' && out[len - 2] == 'Y');
	CHECK(memcmp(out + 8, base + 8, len - 16) == 0);
	free(out);
	theirs[len - 2] = '9';
	theirs[9] = 'Z';	/* the line right after ours' edit */
	CHECK_INT(merge_text(base, len, ours, len, theirs, len, &out, &outlen,
	    &line), 0);
	CHECK(out[1] == 'X' && out[9] == 'Z');
	free(out);
	theirs[2] = 'W';	/* ours' line, differently */
	CHECK_INT(merge_text(base, len, ours, len, theirs, len, &out, &outlen,
	    &line), 1);
	CHECK_INT(line, 1);
	free(theirs);
	free(ours);
	free(base);
	return (0);
}

/* Whether two hunks replace the same base lines with the same lines. */
static int
reference_same(const struct merge_hunk *x, const struct merge_text *xt,
    const struct merge_hunk *y, const struct merge_text *yt)
{
	size_t	i;

	if (x->b0 != y->b0 || x->b1 != y->b1 ||
	    x->n1 - x->n0 != y->n1 - y->n0)
		return (0);
	for (i = 0; i < x->n1 - x->n0; i++) {
		if (xt->lines[x->n0 + i].len != yt->lines[y->n0 + i].len ||
		    memcmp(xt->lines[x->n0 + i].p, yt->lines[y->n0 + i].p,
		    xt->lines[x->n0 + i].len) != 0)
			return (0);
	}
	return (1);
}

/*
 * The reference: the same two diffs merged the slow way, base line by
 * base line and insertion point by insertion point. Returns 1 on a
 * conflict, else 0 with the text in out (len).
 */
static int
merge_reference(const struct merge_text *b, const struct merge_text *side[2],
    const struct merge_hunks *hs[2], char *out, size_t *len)
{
	int		 chg[2][16], ins[2][17], s, c0, c1, i0, i1;
	size_t		 p, k, i;

	for (s = 0; s < 2; s++) {
		for (p = 0; p <= b->n; p++) {
			ins[s][p] = -1;
			if (p < b->n)
				chg[s][p] = -1;
		}
		for (k = 0; k < hs[s]->n; k++) {
			if (hs[s]->h[k].b0 == hs[s]->h[k].b1)
				ins[s][hs[s]->h[k].b0] = (int)k;
			for (p = hs[s]->h[k].b0; p < hs[s]->h[k].b1; p++)
				chg[s][p] = (int)k;
		}
	}
	*len = 0;
	for (p = 0; p <= b->n; p++) {
		/* The insertion point before line p. */
		for (s = 0; s < 2; s++) {
			if (ins[s][p] != -1 && p > 0 && p < b->n &&
			    chg[!s][p - 1] != -1 &&
			    chg[!s][p - 1] == chg[!s][p])
				return (1);	/* inside the other's range */
		}
		i0 = ins[0][p];
		i1 = ins[1][p];
		if (i0 != -1 && i1 != -1) {
			if (!reference_same(&hs[0]->h[i0], side[0],
			    &hs[1]->h[i1], side[1]))
				return (1);
			i1 = -1;
		}
		for (s = 0; s < 2; s++) {
			k = s == 0 ? (size_t)i0 : (size_t)i1;
			if ((s == 0 ? i0 : i1) == -1)
				continue;
			for (i = hs[s]->h[k].n0; i < hs[s]->h[k].n1; i++) {
				memcpy(out + *len, side[s]->lines[i].p,
				    side[s]->lines[i].len);
				*len += side[s]->lines[i].len;
			}
		}
		if (p == b->n)
			break;
		/* Line p. */
		c0 = chg[0][p];
		c1 = chg[1][p];
		if (c0 != -1 && c1 != -1) {
			if (!reference_same(&hs[0]->h[c0], side[0],
			    &hs[1]->h[c1], side[1]))
				return (1);
			c1 = -1;
		}
		if (c0 == -1 && c1 == -1) {
			memcpy(out + *len, b->lines[p].p, b->lines[p].len);
			*len += b->lines[p].len;
			continue;
		}
		s = c0 != -1 ? 0 : 1;
		k = (size_t)(s == 0 ? c0 : c1);
		if (hs[s]->h[k].b0 != p)
			continue;	/* written at its first line */
		for (i = hs[s]->h[k].n0; i < hs[s]->h[k].n1; i++) {
			memcpy(out + *len, side[s]->lines[i].p,
			    side[s]->lines[i].len);
			*len += side[s]->lines[i].len;
		}
	}
	return (0);
}

/* A small random text of lines a, b and c, maybe with no final LF. */
static size_t
merge_random_text(unsigned int *seed, char *buf, size_t maxlines)
{
	size_t	n, i, len = 0;

	n = (size_t)(rand_r(seed) % (maxlines + 1));
	for (i = 0; i < n; i++) {
		buf[len++] = "abc"[rand_r(seed) % 3];
		buf[len++] = '\n';
	}
	if (len > 0 && rand_r(seed) % 8 == 0)
		len--;
	return (len);
}

/* A side: the base with a few random edits. */
static size_t
merge_random_edit(unsigned int *seed, const char *base, size_t blen,
    char *buf)
{
	size_t	len = 0, i = 0;
	int	op;

	while (i < blen) {
		op = rand_r(seed) % 6;
		if (op == 0)			/* delete a line */
			while (i < blen && base[i++] != '\n')
				;
		else if (op == 1) {		/* insert one */
			buf[len++] = "abcd"[rand_r(seed) % 4];
			buf[len++] = '\n';
		} else if (op == 2) {		/* replace one */
			while (i < blen && base[i++] != '\n')
				;
			buf[len++] = "abcd"[rand_r(seed) % 4];
			buf[len++] = '\n';
		} else				/* keep one */
			while (i < blen && (buf[len++] = base[i++]) != '\n')
				;
	}
	if (rand_r(seed) % 4 == 0) {
		buf[len++] = "abcd"[rand_r(seed) % 4];
		buf[len++] = '\n';
	}
	return (len);
}

/*
 * Random small texts: merge_text agrees with the reference on whether
 * they conflict and on every byte of the merge; a clean merge is the
 * same both ways round, and one side unchanged gives the other.
 */
static int
test_random(void)
{
	struct merge_text	 t[3];
	struct merge_hunks	 h[2];
	const struct merge_text	*sides[2];
	const struct merge_hunks *hs[2];
	char			 base[64], ours[160], theirs[160], ref[512];
	char			*out, *out2;
	size_t			 bl, ol, tl, outlen, outlen2, reflen, line;
	unsigned int		 seed = 20261207;
	int			 i, r, rr, clean = 0, conflicts = 0;

	for (i = 0; i < 20000; i++) {
		bl = merge_random_text(&seed, base, 12);
		ol = merge_random_edit(&seed, base, bl, ours);
		tl = merge_random_edit(&seed, base, bl, theirs);
		merge_split(base, bl, &t[0]);
		merge_split(ours, ol, &t[1]);
		merge_split(theirs, tl, &t[2]);
		merge_diff(&t[0], &t[1], &h[0]);
		merge_diff(&t[0], &t[2], &h[1]);
		sides[0] = &t[1];
		sides[1] = &t[2];
		hs[0] = &h[0];
		hs[1] = &h[1];
		rr = merge_reference(&t[0], sides, hs, ref, &reflen);
		r = merge_text(base, bl, ours, ol, theirs, tl, &out, &outlen,
		    &line);
		if (r != rr || (r == 0 && (outlen != reflen ||
		    memcmp(out, ref, reflen) != 0))) {
			fprintf(stderr, "case %d: base \"%.*s\" ours \"%.*s\""
			    " theirs \"%.*s\": got %d \"%.*s\", the reference"
			    " %d \"%.*s\"\n", i, (int)bl, base, (int)ol, ours,
			    (int)tl, theirs, r, r == 0 ? (int)outlen : 0,
			    r == 0 ? out : "", rr, rr == 0 ? (int)reflen : 0,
			    ref);
			return (1);
		}
		CHECK(r == 0 || line >= 1);
		CHECK_INT(merge_text(base, bl, theirs, tl, ours, ol, &out2,
		    &outlen2, &line), r);
		if (r == 0) {
			CHECK(outlen2 == outlen &&
			    memcmp(out2, out, outlen) == 0);
			clean++;
		} else
			conflicts++;
		free(out);
		free(out2);
		CHECK_INT(merge_text(base, bl, ours, ol, base, bl, &out,
		    &outlen, &line), 0);
		CHECK(outlen == ol && memcmp(out, ours, ol) == 0);
		free(out);
		free(h[0].h);
		free(h[1].h);
		free(t[0].lines);
		free(t[1].lines);
		free(t[2].lines);
	}
	/* Both outcomes were exercised. */
	CHECK(clean > 1000 && conflicts > 1000);
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
	{ "merge/random", test_random },
	{ NULL, NULL }
};
