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
 * Three-way line merge of text files for publish: a change merges unless
 * the other side changed one of its base lines (or inserted at its very
 * point) differently; never a result with conflict markers.
 */

#ifndef MERGE_H
#define MERGE_H

#include <stddef.h>
#include <stdint.h>

/* Largest input, in bytes, that takes part in a merge. */
#define MERGE_MAX_SIZE	(8 * 1024 * 1024)
/* Most differences the line diff looks for on one side. */
#define MERGE_DIFF_MAX	1024

struct merge_line {
	const char	*p;
	size_t		 len;		/* with its LF, if it has one */
	uint64_t	 hash;
};
struct merge_text {
	struct merge_line *lines;
	size_t		 n;
};
/* Base lines [b0, b1) become the side's lines [n0, n1). */
struct merge_hunk {
	size_t		 b0, b1, n0, n1;
};
struct merge_hunks {
	struct merge_hunk *h;
	size_t		 n, size;
};

int	merge_init(char **);
int	merge_mergeable(const char *, size_t);
void	merge_split(const char *, size_t, struct merge_text *);
void	merge_diff(const struct merge_text *, const struct merge_text *,
	    struct merge_hunks *);
int	merge_hunks(const struct merge_text *, const struct merge_text *,
	    const struct merge_hunks *, const struct merge_text *,
	    const struct merge_hunks *, char **, size_t *, size_t *);
int	merge_text(const char *, size_t, const char *, size_t, const char *,
	    size_t, char **, size_t *, size_t *);

#endif /* MERGE_H */
