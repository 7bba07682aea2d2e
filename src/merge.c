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
 * Three-way line merge for publish, when a text file changed both in the
 * head and in the session since the session's base. Each side is diffed
 * against the base line by line (Myers' O(ND) diff, after the common
 * head and tail are set aside); the two lists of hunks, each a range of
 * base lines and the lines that replace it, are then merged in base
 * order. Two hunks conflict only when they change a base line in common,
 * when one inserts strictly inside the range the other replaces, or when
 * both insert at the same point, unless they are the same change; hunks
 * that merely touch (edits on adjacent lines, an insertion next to an
 * edited line) merge, an insertion going before an edit that starts at
 * its point. A conflict is only reported, with the first base line it
 * concerns.
 *
 * Inputs are bounded (MERGE_MAX_SIZE) and must be UTF-8 without NUL
 * bytes; anything else is a conflict. Lines are split at LF only, so a
 * CR stays part of its line and a missing final newline makes the last
 * line differ from the same line with one. The diff's work is bounded
 * too: past MERGE_DIFF_MAX differences on one side, that side's changed
 * middle is taken as one hunk (coarser, so two sides that both rewrote
 * much of a file conflict where a finer diff might merge them).
 *
 * libgit2 is initialised here once for the rest of the server (audit.c).
 */

#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <git2.h>

#include "merge.h"
#include "sandbox-mcp.h"

static int	merge_initialised;

static const char *merge_git_error(void);

/* libgit2's last error message, for a cause. */
static const char *
merge_git_error(void)
{
	const git_error	*e = git_error_last();

	if (e == NULL || e->message == NULL)
		return ("unknown error");
	return (e->message);
}

/*
 * Set libgit2 up, once. The server does it at start-up so that the
 * children it forks inherit it rather than each paying for it.
 */
int
merge_init(char **cause)
{
	if (merge_initialised)
		return (0);
	if (git_libgit2_init() < 0) {
		xasprintf(cause, "cannot initialise libgit2: %s",
		    merge_git_error());
		return (-1);
	}
	merge_initialised = 1;
	return (0);
}

/* Whether bytes can take part in a merge: bounded, no NUL, valid UTF-8. */
int
merge_mergeable(const char *buf, size_t len)
{
	if (len > MERGE_MAX_SIZE)
		return (0);
	if (len == 0)
		return (1);
	if (memchr(buf, '\0', len) != NULL)
		return (0);
	return (util_utf8_valid(buf, len));
}

/* Split text into lines, each with its LF (the last may have none). */
void
merge_split(const char *buf, size_t len, struct merge_text *t)
{
	const char	*p = buf, *end = buf + len, *nl;
	size_t		 n = 0, size = 0;
	uint64_t	 h;

	t->lines = NULL;
	t->n = 0;
	while (p < end) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end - 1;
		if (n == size) {
			size = size == 0 ? 64 : size * 2;
			t->lines = xreallocarray(t->lines, size,
			    sizeof *t->lines);
		}
		t->lines[n].p = p;
		t->lines[n].len = (size_t)(nl - p) + 1;
		/* FNV-1a: lines compare by hash first. */
		for (h = 14695981039346656037ULL; p <= nl; p++) {
			h ^= (unsigned char)*p;
			h *= 1099511628211ULL;
		}
		t->lines[n++].hash = h;
	}
	t->n = n;
}

static int
merge_line_eq(const struct merge_line *a, const struct merge_line *b)
{
	return (a->hash == b->hash && a->len == b->len &&
	    memcmp(a->p, b->p, a->len) == 0);
}

static void
merge_hunk_add(struct merge_hunks *hs, size_t b0, size_t b1, size_t n0,
    size_t n1)
{
	if (b0 == b1 && n0 == n1)
		return;
	if (hs->n == hs->size) {
		hs->size = hs->size == 0 ? 16 : hs->size * 2;
		hs->h = xreallocarray(hs->h, hs->size, sizeof *hs->h);
	}
	hs->h[hs->n].b0 = b0;
	hs->h[hs->n].b1 = b1;
	hs->h[hs->n].n0 = n0;
	hs->h[hs->n].n1 = n1;
	hs->n++;
}

/*
 * Myers' greedy diff of a[0..n) and b[0..m), the common head and tail
 * already set aside (offsets ao, bo into the whole texts): the hunks, in
 * order, added to hs. Returns -1 when more than MERGE_DIFF_MAX
 * differences would be needed. The furthest points of each round are
 * kept (2d + 1 of them for round d) to walk back along.
 */
static int
merge_myers(const struct merge_line *a, size_t n, const struct merge_line *b,
    size_t m, size_t ao, size_t bo, struct merge_hunks *hs)
{
	int32_t			**trace, *v, *prev;
	long			  d, k, x, y, pk, px, py, dmax, j, found = -1;
	size_t			  i, nh = hs->n;
	struct merge_hunk	 *t, swap;

	dmax = (long)(n + m) < MERGE_DIFF_MAX ? (long)(n + m) :
	    MERGE_DIFF_MAX;
	trace = xcalloc(dmax + 1, sizeof *trace);
	for (d = 0; d <= dmax && found == -1; d++) {
		v = trace[d] = xcalloc(2 * d + 1, sizeof *v);
		prev = d > 0 ? trace[d - 1] : NULL;	/* k at prev[k + d - 1] */
		for (k = -d; k <= d; k += 2) {
			if (d == 0)
				x = 0;
			else if (k == -d || (k != d && prev[k - 1 + d - 1] <
			    prev[k + 1 + d - 1]))
				x = prev[k + 1 + d - 1];
			else
				x = prev[k - 1 + d - 1] + 1;
			y = x - k;
			while (x < (long)n && y < (long)m &&
			    merge_line_eq(&a[x], &b[y])) {
				x++;
				y++;
			}
			v[k + d] = (int32_t)x;
			if (x >= (long)n && y >= (long)m) {
				found = d;
				break;
			}
		}
	}
	if (found == -1) {
		for (d = 0; d <= dmax; d++)
			free(trace[d]);
		free(trace);
		return (-1);
	}
	/* Back from (n, m), one edit a round, last first. */
	x = (long)n;
	y = (long)m;
	for (d = found; d > 0; d--) {
		prev = trace[d - 1];
		k = x - y;
		if (k == -d || (k != d && prev[k - 1 + d - 1] <
		    prev[k + 1 + d - 1]))
			pk = k + 1;		/* down: a line of b inserted */
		else
			pk = k - 1;		/* right: a line of a deleted */
		px = prev[pk + d - 1];
		py = px - pk;
		if (pk == k + 1)
			merge_hunk_add(hs, ao + px, ao + px, bo + py,
			    bo + py + 1);
		else
			merge_hunk_add(hs, ao + px, ao + px + 1, bo + py,
			    bo + py);
		x = px;
		y = py;
	}
	for (d = 0; d <= dmax; d++)
		free(trace[d]);
	free(trace);
	/* In order, and edits that follow each other as one hunk. */
	t = hs->h + nh;
	for (i = 0; i < (hs->n - nh) / 2; i++) {
		swap = t[i];
		t[i] = t[hs->n - nh - 1 - i];
		t[hs->n - nh - 1 - i] = swap;
	}
	for (i = 1, j = 0; i < hs->n - nh; i++) {
		if (t[i].b0 == t[j].b1 && t[i].n0 == t[j].n1) {
			t[j].b1 = t[i].b1;
			t[j].n1 = t[i].n1;
		} else
			t[++j] = t[i];
	}
	if (hs->n > nh)
		hs->n = nh + j + 1;
	return (0);
}

/*
 * The hunks that turn base into side: what differs between their common
 * head and tail, diffed line by line, or as one hunk past the bound.
 */
void
merge_diff(const struct merge_text *base, const struct merge_text *side,
    struct merge_hunks *hs)
{
	size_t	head = 0, tail = 0;

	memset(hs, 0, sizeof *hs);
	while (head < base->n && head < side->n &&
	    merge_line_eq(&base->lines[head], &side->lines[head]))
		head++;
	while (tail < base->n - head && tail < side->n - head &&
	    merge_line_eq(&base->lines[base->n - 1 - tail],
	    &side->lines[side->n - 1 - tail]))
		tail++;
	if (head + tail == base->n && head + tail == side->n)
		return;
	if (merge_myers(base->lines + head, base->n - head - tail,
	    side->lines + head, side->n - head - tail, head, head, hs) != 0) {
		hs->n = 0;
		merge_hunk_add(hs, head, base->n - tail, head,
		    side->n - tail);
	}
}

/* Whether two hunks make the same change. */
static int
merge_hunk_same(const struct merge_hunk *x, const struct merge_text *xt,
    const struct merge_hunk *y, const struct merge_text *yt)
{
	size_t	i;

	if (x->b0 != y->b0 || x->b1 != y->b1 ||
	    x->n1 - x->n0 != y->n1 - y->n0)
		return (0);
	for (i = 0; i < x->n1 - x->n0; i++) {
		if (!merge_line_eq(&xt->lines[x->n0 + i],
		    &yt->lines[y->n0 + i]))
			return (0);
	}
	return (1);
}

/*
 * Whether two hunks of different sides touch the same base lines: a
 * line in common, an insertion strictly inside the other's range, or
 * insertions at the same point.
 */
static int
merge_hunks_meet(const struct merge_hunk *x, const struct merge_hunk *y)
{
	int	xins = x->b0 == x->b1, yins = y->b0 == y->b1;

	if (xins && yins)
		return (x->b0 == y->b0);
	if (xins)
		return (y->b0 < x->b0 && x->b0 < y->b1);
	if (yins)
		return (x->b0 < y->b0 && y->b0 < x->b1);
	return (x->b0 < y->b1 && y->b0 < x->b1);
}

/* Whether hunk x goes before hunk y (which it does not meet). */
static int
merge_hunk_before(const struct merge_hunk *x, const struct merge_hunk *y)
{
	if (x->b0 != y->b0)
		return (x->b0 < y->b0);
	return (x->b0 == x->b1);	/* the insertion first */
}

static void
merge_out(char **out, size_t *len, size_t *size, const char *p, size_t n)
{
	if (*len + n > *size) {
		*size = (*len + n) * 2 + 64;
		*out = xrealloc(*out, *size);
	}
	memcpy(*out + *len, p, n);
	*len += n;
}

/*
 * Merge the hunks of ours (o) and theirs (t), both against base. 0 with
 * the text in *out (allocated), or 1 on a conflict, *line the first base
 * line (1-based) it concerns.
 */
int
merge_hunks(const struct merge_text *base, const struct merge_text *ours,
    const struct merge_hunks *o, const struct merge_text *theirs,
    const struct merge_hunks *t, char **out, size_t *outlen, size_t *line)
{
	const struct merge_hunk	*h;
	const struct merge_text	*ht;
	size_t			 i = 0, j = 0, pos = 0, size = 0, k;

	*out = NULL;
	*outlen = 0;
	while (i < o->n || j < t->n) {
		if (i < o->n && j < t->n &&
		    merge_hunks_meet(&o->h[i], &t->h[j])) {
			if (!merge_hunk_same(&o->h[i], ours, &t->h[j],
			    theirs)) {
				*line = (o->h[i].b0 > t->h[j].b0 ?
				    o->h[i].b0 : t->h[j].b0) + 1;
				free(*out);
				*out = NULL;
				*outlen = 0;
				return (1);
			}
			h = &o->h[i++];
			ht = ours;
			j++;
		} else if (j >= t->n || (i < o->n &&
		    merge_hunk_before(&o->h[i], &t->h[j]))) {
			h = &o->h[i++];
			ht = ours;
		} else {
			h = &t->h[j++];
			ht = theirs;
		}
		for (; pos < h->b0; pos++)
			merge_out(out, outlen, &size, base->lines[pos].p,
			    base->lines[pos].len);
		for (k = h->n0; k < h->n1; k++)
			merge_out(out, outlen, &size, ht->lines[k].p,
			    ht->lines[k].len);
		pos = h->b1;
	}
	for (; pos < base->n; pos++)
		merge_out(out, outlen, &size, base->lines[pos].p,
		    base->lines[pos].len);
	if (*out == NULL)
		*out = xmalloc(1);	/* empty, but a result */
	return (0);
}

/*
 * Merge the changes from base to ours and from base to theirs. Returns 0
 * with the merged bytes in *out (allocated, possibly of length 0) when
 * they merge cleanly, 1 when they conflict (*line, when not NULL, the
 * first base line concerned, 1-based; 0 when an input cannot be merged
 * at all).
 */
int
merge_text(const char *base, size_t baselen, const char *ours,
    size_t ourslen, const char *theirs, size_t theirslen, char **out,
    size_t *outlen, size_t *line)
{
	struct merge_text	 t[3];
	struct merge_hunks	 ho, ht;
	const char		*ptr[3] = { base, ours, theirs };
	size_t			 size[3] = { baselen, ourslen, theirslen };
	size_t			 at = 0;
	int			 i, r;

	*out = NULL;
	*outlen = 0;
	if (line != NULL)
		*line = 0;
	for (i = 0; i < 3; i++) {
		if (size[i] == 0)
			ptr[i] = "";
		if (!merge_mergeable(ptr[i], size[i]))
			return (1);
	}
	for (i = 0; i < 3; i++)
		merge_split(ptr[i], size[i], &t[i]);
	merge_diff(&t[0], &t[1], &ho);
	merge_diff(&t[0], &t[2], &ht);
	r = merge_hunks(&t[0], &t[1], &ho, &t[2], &ht, out, outlen, &at);
	if (r == 1 && line != NULL)
		*line = at;
	free(ho.h);
	free(ht.h);
	for (i = 0; i < 3; i++)
		free(t[i].lines);
	return (r);
}
