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
 * One command's output: every byte is kept on disk in a directory of
 * segment files (the newest TRANSCRIPT_CAP_DEFAULT bytes or the cap given),
 * numbered in lines, and served as bounded windows of valid UTF-8. Memory
 * stays small whatever the command prints; see transcript.c for the rules
 * (lines, long lines, dropping, windows).
 *
 * The path given to transcript_open names a directory the transcript owns
 * (its parent must exist). Every char **cause may be NULL. A window's text
 * is always allocated, even when empty; a cap, max_lines or max_bytes of 0
 * means the default.
 */

#ifndef TRANSCRIPT_H
#define TRANSCRIPT_H

#include <sys/types.h>

#include <stdint.h>

#include "compat.h"

#define TRANSCRIPT_CAP_DEFAULT	(64ULL * 1024 * 1024)	/* bytes kept */
#define TRANSCRIPT_LINE_MAX	(1024 * 1024)	/* longer lines are broken */
#define TRANSCRIPT_WINDOW_LINES	200		/* window defaults */
#define TRANSCRIPT_WINDOW_BYTES	(64 * 1024)

struct transcript;

/* One window of lines [start, end); text is valid UTF-8, NUL-terminated. */
struct transcript_window {
	uint64_t	 start;		/* first line returned (may be clamped) */
	uint64_t	 end;		/* one past the last line consumed */
	uint64_t	 shown;		/* one past the last line shown */
	char		*text;		/* the caller frees it */
	size_t		 len;		/* bytes of text, without the NUL */
	uint64_t	 original_token_count; /* ceil(bytes from start / 4) */
	int		 truncated;	/* the one line was cut at max_bytes */
};

struct transcript *transcript_open(const char *, uint64_t, char **);
struct transcript *transcript_load(const char *, uint64_t, char **);
int		 transcript_append(struct transcript *, const void *, size_t,
		     char **);
void		 transcript_finish(struct transcript *);
uint64_t	 transcript_total_lines(struct transcript *);
uint64_t	 transcript_dropped_lines(struct transcript *);
uint64_t	 transcript_total_bytes(struct transcript *);
int		 transcript_window(struct transcript *, uint64_t, size_t,
		     size_t, int, struct transcript_window *, char **);
void		 transcript_free(struct transcript *);
int		 transcript_remove(struct transcript *);

#endif /* TRANSCRIPT_H */
