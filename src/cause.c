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
 * The engine's one error currency: a kind, a sentence a person can act
 * on, and details naming the field or id at fault. Whatever fails below
 * the door fills a struct cause; only the surfaces turn it into an MCP
 * envelope or an HTTP status. A cause passed to a callback belongs to
 * the caller and lives for the call: a receiver that keeps it copies it.
 */

#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

static const char *cause_names[] = {
	"",				/* CAUSE_NONE */
	"invalid_request",		/* CAUSE_INVALID */
	"not_found",			/* CAUSE_NOT_FOUND */
	"operation_failed",		/* CAUSE_FAILED */
	"conflict",			/* CAUSE_CONFLICT */
	"server_busy",			/* CAUSE_BUSY */
	"unauthorized",			/* CAUSE_UNAUTHORIZED */
	"internal_error",		/* CAUSE_INTERNAL */
};

/* The name of a kind, as the error objects spell it. */
const char *
cause_kind_name(enum cause_kind kind)
{
	if ((unsigned int)kind >= sizeof cause_names / sizeof cause_names[0])
		fatalx("%s: kind %d", __func__, kind);
	return (cause_names[kind]);
}

/* The kind a name spells; an unknown name is operation_failed. */
enum cause_kind
cause_kind_parse(const char *name)
{
	size_t	i;

	for (i = 1; name != NULL && i < sizeof cause_names /
	    sizeof cause_names[0]; i++) {
		if (strcmp(name, cause_names[i]) == 0)
			return ((enum cause_kind)i);
	}
	return (CAUSE_FAILED);
}

void
cause_clear(struct cause *c)
{
	if (c == NULL)
		return;
	free(c->message);
	cJSON_Delete(c->details);
	c->kind = CAUSE_NONE;
	c->message = NULL;
	c->details = NULL;
}

/* Set a cause from a va_list; details (NULL: none) are taken over. */
void
cause_setv(struct cause *c, enum cause_kind kind, cJSON *details,
    const char *fmt, va_list ap)
{
	if (kind == CAUSE_NONE)
		fatalx("%s: a cause of no kind", __func__);
	cause_clear(c);
	c->kind = kind;
	xvasprintf(&c->message, fmt, ap);
	util_utf8_scrub(c->message);	/* it is said in JSON */
	c->details = details != NULL ? details : cJSON_CreateObject();
}

/*
 * Set a cause of kind with a message; key (when not NULL) and value are
 * its first detail. Whatever it held before is dropped.
 */
void
cause_set(struct cause *c, enum cause_kind kind, const char *key,
    const char *value, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	cause_vset(c, kind, key, value, fmt, ap);
	va_end(ap);
}

/* cause_set from a va_list. */
void
cause_vset(struct cause *c, enum cause_kind kind, const char *key,
    const char *value, const char *fmt, va_list ap)
{
	cJSON	*d;
	char	*v;

	d = cJSON_CreateObject();
	if (key != NULL) {
		v = xstrdup(value != NULL ? value : "");
		cJSON_AddStringToObject(d, key, util_utf8_scrub(v));
		free(v);
	}
	cause_setv(c, kind, d, fmt, ap);
}

/* Set a cause with a details object of the caller's (taken over). */
void
cause_set_details(struct cause *c, enum cause_kind kind, cJSON *details,
    const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	cause_setv(c, kind, details, fmt, ap);
	va_end(ap);
}

/* One more detail: a string, a number, or any item (taken over). */
void
cause_detail(struct cause *c, const char *key, const char *value)
{
	cause_detail_item(c, key, cJSON_CreateString(value));
}

void
cause_detail_int(struct cause *c, const char *key, long long value)
{
	cause_detail_item(c, key, cJSON_CreateNumber((double)value));
}

void
cause_detail_item(struct cause *c, const char *key, cJSON *item)
{
	if (c->details == NULL)
		c->details = cJSON_CreateObject();
	cJSON_DeleteItemFromObjectCaseSensitive(c->details, key);
	cJSON_AddItemToObject(c->details, key, item);
}

/* dst becomes a copy of src (dst's old contents dropped). */
void
cause_copy(struct cause *dst, const struct cause *src)
{
	cause_clear(dst);
	dst->kind = src->kind;
	dst->message = xstrdup(src->message != NULL ? src->message : "");
	dst->details = src->details != NULL ?
	    cJSON_Duplicate(src->details, 1) : cJSON_CreateObject();
}

/* dst takes over what src holds; src is left clear. */
void
cause_move(struct cause *dst, struct cause *src)
{
	cause_clear(dst);
	*dst = *src;
	src->kind = CAUSE_NONE;
	src->message = NULL;
	src->details = NULL;
}

/* {"kind", "message", "details"}: the error object of every surface. */
cJSON *
cause_json(const struct cause *c)
{
	cJSON	*e;

	e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "kind", cause_kind_name(c->kind));
	cJSON_AddStringToObject(e, "message", c->message != NULL ?
	    c->message : "");
	cJSON_AddItemToObject(e, "details", c->details != NULL ?
	    cJSON_Duplicate(c->details, 1) : cJSON_CreateObject());
	return (e);
}

/*
 * A cause read back from an error object (a helper's report): 0, or -1
 * when e is not one (c is then left as it was).
 */
int
cause_from_json(struct cause *c, const cJSON *e)
{
	const cJSON	*k, *m, *d;

	k = cJSON_GetObjectItemCaseSensitive(e, "kind");
	m = cJSON_GetObjectItemCaseSensitive(e, "message");
	d = cJSON_GetObjectItemCaseSensitive(e, "details");
	if (!cJSON_IsString(k) || !cJSON_IsString(m))
		return (-1);
	cause_set_details(c, cause_kind_parse(k->valuestring),
	    cJSON_IsObject(d) ? cJSON_Duplicate(d, 1) : NULL, "%s",
	    m->valuestring);
	return (0);
}
