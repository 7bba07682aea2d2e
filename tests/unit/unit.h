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
 * The unit test binary: a table of named cases, each a function that
 * returns 0 on success. Checks print what was expected and what came.
 */

#ifndef UNIT_H
#define UNIT_H

#include <stdio.h>
#include <string.h>

struct unit_case {
	const char	*name;
	int		(*fn)(void);
};

extern const struct unit_case unit_http_cases[];
extern const struct unit_case unit_jsonrpc_cases[];
extern const struct unit_case unit_cfg_cases[];
extern const struct unit_case unit_op_cases[];
extern const struct unit_case unit_docker_cases[];
extern const struct unit_case unit_util_cases[];
extern const struct unit_case unit_transcript_cases[];
extern const struct unit_case unit_gitignore_cases[];
extern const struct unit_case unit_merge_cases[];
extern const struct unit_case unit_files_cases[];
extern const struct unit_case unit_job_cases[];
extern const struct unit_case unit_rest_cases[];
extern const struct unit_case unit_nsexec_cases[];
extern const struct unit_case unit_layer_cases[];
extern const struct unit_case unit_fold_cases[];
extern const struct unit_case unit_store_cases[];

void	unit_setup(void);
int	unit_tree_build(const char *, const char **);
int	unit_tree_remove(const char *);

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: check failed: %s\n",		\
		    __FILE__, __LINE__, #cond);				\
		return (1);						\
	}								\
} while (0)

#define CHECK_INT(got, want) do {					\
	long long _g = (long long)(got), _w = (long long)(want);	\
	if (_g != _w) {							\
		fprintf(stderr, "%s:%d: %s: expected %lld, got %lld\n",	\
		    __FILE__, __LINE__, #got, _w, _g);			\
		return (1);						\
	}								\
} while (0)

#define CHECK_STR(got, want) do {					\
	const char *_g = (got), *_w = (want);				\
	if (_g == NULL || strcmp(_g, _w) != 0) {			\
		fprintf(stderr, "%s:%d: %s: expected \"%s\", got \"%s\"\n", \
		    __FILE__, __LINE__, #got, _w,			\
		    _g != NULL ? _g : "(null)");			\
		return (1);						\
	}								\
} while (0)

#endif /* UNIT_H */
