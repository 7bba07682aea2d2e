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
 * Declarations of the functions src/compat supplies when the C library
 * lacks them, and list macros glibc's <sys/queue.h> does not define.
 */

#ifndef COMPAT_H
#define COMPAT_H

#include <sys/types.h>
#include <sys/queue.h>

#include <stddef.h>

#ifndef __dead
#define __dead __attribute__((__noreturn__))
#endif
#ifndef __packed
#define __packed __attribute__((__packed__))
#endif

#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)			\
	for ((var) = TAILQ_FIRST(head);					\
	    (var) != NULL && ((tvar) = TAILQ_NEXT(var, field), 1);	\
	    (var) = (tvar))
#endif
#ifndef LIST_FOREACH_SAFE
#define LIST_FOREACH_SAFE(var, head, field, tvar)			\
	for ((var) = LIST_FIRST(head);					\
	    (var) != NULL && ((tvar) = LIST_NEXT(var, field), 1);	\
	    (var) = (tvar))
#endif

#ifndef HAVE_STRLCPY
size_t		 strlcpy(char *, const char *, size_t);
#endif
#ifndef HAVE_STRLCAT
size_t		 strlcat(char *, const char *, size_t);
#endif
#ifndef HAVE_STRTONUM
long long	 strtonum(const char *, long long, long long, const char **);
#endif
#ifndef HAVE_REALLOCARRAY
void		*reallocarray(void *, size_t, size_t);
#endif
#ifndef HAVE_RECALLOCARRAY
void		*recallocarray(void *, size_t, size_t, size_t);
#endif
#ifndef HAVE_CLOSEFROM
void		 closefrom(int);
#endif
#ifndef HAVE_FREEZERO
void		 freezero(void *, size_t);
#endif
#ifndef HAVE_EXPLICIT_BZERO
void		 explicit_bzero(void *, size_t);
#endif

#endif /* COMPAT_H */
