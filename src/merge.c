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
 * head and in the session since the session's base. libgit2's
 * git_merge_file() runs git's xdiff merge at git's default level
 * (XDL_MERGE_ZEALOUS, what "git merge" uses): changes to separate regions
 * merge, identical changes on both sides merge, and changes that overlap
 * or touch (edits on adjacent lines, an insertion next to an edited line)
 * conflict. A conflict is only reported; the text with markers libgit2
 * builds is thrown away. Inputs are bounded (MERGE_MAX_SIZE) and must be
 * UTF-8 without NUL bytes; anything else is a conflict. Lines are split at
 * LF only, so a CR stays part of its line and a missing final newline makes
 * the last line differ from the same line with one.
 */

#include "config.h"

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
 * publish processes it forks inherit it rather than each paying for it.
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

/*
 * Merge the changes from base to ours and from base to theirs. Returns 0
 * with the merged bytes in *out (allocated, possibly of length 0) when
 * they merge cleanly, 1 when they conflict or an input cannot be merged,
 * and -1 with *cause when libgit2 fails.
 */
int
merge_text(const char *base, size_t baselen, const char *ours,
    size_t ourslen, const char *theirs, size_t theirslen, char **out,
    size_t *outlen, char **cause)
{
	git_merge_file_input	 in[3];
	git_merge_file_options	 opts;
	git_merge_file_result	 result;
	const char		*ptr[3] = { base, ours, theirs };
	size_t			 size[3] = { baselen, ourslen, theirslen };
	int			 i;

	*out = NULL;
	*outlen = 0;
	for (i = 0; i < 3; i++) {
		if (size[i] == 0)
			ptr[i] = "";
		if (!merge_mergeable(ptr[i], size[i]))
			return (1);
	}
	if (merge_init(cause) != 0)
		return (-1);

	for (i = 0; i < 3; i++) {
		if (git_merge_file_input_init(&in[i],
		    GIT_MERGE_FILE_INPUT_VERSION) != 0)
			fatalx("%s: git_merge_file_input_init", __func__);
		in[i].ptr = ptr[i];
		in[i].size = size[i];
	}
	if (git_merge_file_options_init(&opts,
	    GIT_MERGE_FILE_OPTIONS_VERSION) != 0)
		fatalx("%s: git_merge_file_options_init", __func__);
	opts.flags = GIT_MERGE_FILE_DEFAULT;

	memset(&result, 0, sizeof result);
	if (git_merge_file(&result, &in[0], &in[1], &in[2], &opts) != 0) {
		xasprintf(cause, "three-way merge failed: %s",
		    merge_git_error());
		git_merge_file_result_free(&result);
		return (-1);
	}
	if (!result.automergeable) {
		git_merge_file_result_free(&result);
		return (1);
	}
	*out = xmemdup(result.ptr, result.len);
	*outlen = result.len;
	git_merge_file_result_free(&result);
	return (0);
}
