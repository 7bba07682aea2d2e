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
 * The .gitignore files of one workspace version, and whether a path is
 * ignored by them as git(1) decides it (gitignore(5)). Used by publish to
 * let ignored paths skip the conflict check.
 */

#ifndef GITIGNORE_H
#define GITIGNORE_H

#include <stddef.h>

/* A line longer than this many bytes is skipped. */
#define GITIGNORE_MAX_LINE	4096

/*
 * Bounds on one set, over all its files. Past either bound the set is
 * marked overflowed and then ignores nothing, so every path gets the full
 * conflict check rather than a partial set of rules deciding.
 */
#define GITIGNORE_MAX_RULES	10000
#define GITIGNORE_MAX_BYTES	(1024 * 1024)

struct gitignore;

struct gitignore	*gitignore_new(void);
void			 gitignore_add(struct gitignore *, const char *,
			     const char *, size_t);
int			 gitignore_ignored(struct gitignore *, const char *,
			     int);
int			 gitignore_overflowed(struct gitignore *);
void			 gitignore_free(struct gitignore *);

#endif /* GITIGNORE_H */
