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

#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "compat.h"

/*
 * Convert a decimal string to a number within [minval, maxval]; on failure
 * return 0 and set *errstrp to "invalid", "too small" or "too large".
 */
long long
strtonum(const char *s, long long minval, long long maxval,
    const char **errstrp)
{
	long long	 v;
	char		*end;
	int		 saved = errno;

	if (errstrp != NULL)
		*errstrp = NULL;
	if (minval > maxval || s == NULL || *s == '\0')
		goto invalid;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0' || end == s)
		goto invalid;
	if ((v == LLONG_MIN && errno == ERANGE) || v < minval) {
		if (errstrp != NULL)
			*errstrp = "too small";
		errno = ERANGE;
		return (0);
	}
	if ((v == LLONG_MAX && errno == ERANGE) || v > maxval) {
		if (errstrp != NULL)
			*errstrp = "too large";
		errno = ERANGE;
		return (0);
	}
	errno = saved;
	return (v);

invalid:
	if (errstrp != NULL)
		*errstrp = "invalid";
	errno = EINVAL;
	return (0);
}
