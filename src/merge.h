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
 * Three-way line merge of text files for publish: git's rules, through
 * libgit2, and never a result with conflict markers.
 */

#ifndef MERGE_H
#define MERGE_H

#include <stddef.h>

/* Largest input, in bytes, that takes part in a merge. */
#define MERGE_MAX_SIZE	(8 * 1024 * 1024)

int	merge_init(char **);
int	merge_mergeable(const char *, size_t);
int	merge_text(const char *, size_t, const char *, size_t, const char *,
	    size_t, char **, size_t *, char **);

#endif /* MERGE_H */
