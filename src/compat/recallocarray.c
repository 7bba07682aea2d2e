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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

/*
 * Resize an array from oldnmemb to newnmemb elements, zeroing new space and
 * clearing the old buffer before it is released.
 */
void *
recallocarray(void *p, size_t oldnmemb, size_t newnmemb, size_t size)
{
	size_t	 oldsize, newsize;
	void	*n;

	if (p == NULL)
		return (calloc(newnmemb, size));
	if (size != 0 && (newnmemb > SIZE_MAX / size ||
	    oldnmemb > SIZE_MAX / size)) {
		errno = ENOMEM;
		return (NULL);
	}
	oldsize = oldnmemb * size;
	newsize = newnmemb * size;
	if ((n = malloc(newsize == 0 ? 1 : newsize)) == NULL)
		return (NULL);
	if (newsize > oldsize) {
		memcpy(n, p, oldsize);
		memset((char *)n + oldsize, 0, newsize - oldsize);
	} else
		memcpy(n, p, newsize);
	explicit_bzero(p, oldsize);
	free(p);
	return (n);
}
