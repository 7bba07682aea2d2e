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
 * JSON-RPC 2.0 objects: responses, errors and id checks.
 */

#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"
#include "surface.h"

/* Whether a value may be a request id (MCP: a string or a number). */
int
jsonrpc_id_valid(const cJSON *id)
{
	return (id != NULL && (cJSON_IsString(id) || cJSON_IsNumber(id)));
}

static cJSON *
jsonrpc_envelope(const cJSON *id)
{
	cJSON	*msg;

	msg = cJSON_CreateObject();
	cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
	if (jsonrpc_id_valid(id))
		cJSON_AddItemToObject(msg, "id", cJSON_Duplicate(id, 1));
	else
		cJSON_AddNullToObject(msg, "id");
	return (msg);
}

/* A response carrying result (which it takes over). */
cJSON *
jsonrpc_result(const cJSON *id, cJSON *result)
{
	cJSON	*msg;

	msg = jsonrpc_envelope(id);
	cJSON_AddItemToObject(msg, "result", result);
	return (msg);
}

/* An error response; id may be NULL (then the id is null). */
cJSON *
jsonrpc_error(const cJSON *id, int code, const char *fmt, ...)
{
	cJSON	*msg, *err;
	char	*text;
	va_list	 ap;

	va_start(ap, fmt);
	xvasprintf(&text, fmt, ap);
	va_end(ap);
	msg = jsonrpc_envelope(id);
	err = cJSON_AddObjectToObject(msg, "error");
	cJSON_AddNumberToObject(err, "code", code);
	cJSON_AddStringToObject(err, "message", text);
	free(text);
	return (msg);
}

/*
 * The id of a message that cannot be taken whole (not valid JSON, or
 * longer than the limit), when its head shows one: the top-level "id"
 * member of an object, a string or a number, met in the first
 * JSONRPC_PEEK_MAX bytes before anything that does not scan. Then the
 * error answers that id and the client does not wait for an answer that
 * will never come. NULL when there is none to be sure of.
 */
#define JSONRPC_PEEK_MAX	(64 * 1024)
#define JSONRPC_PEEK_DEPTH	64

static const char *
jsonrpc_peek_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return (p);
}

/* Past a JSON string at p (at its opening quote), or NULL. */
static const char *
jsonrpc_peek_string(const char *p, const char *e)
{
	for (p++; p < e; p++) {
		if (*p == '\\') {
			if (++p == e)
				return (NULL);
		} else if (*p == '"')
			return (p + 1);
		else if ((unsigned char)*p < 0x20)
			return (NULL);
	}
	return (NULL);
}

/* Past any JSON value at p, or NULL (depth-bounded, no recursion). */
static const char *
jsonrpc_peek_skip(const char *p, const char *e)
{
	int	depth = 0;

	do {
		p = jsonrpc_peek_ws(p, e);
		if (p == e)
			return (NULL);
		if (*p == '"') {
			if ((p = jsonrpc_peek_string(p, e)) == NULL)
				return (NULL);
		} else if (*p == '{' || *p == '[') {
			if (++depth > JSONRPC_PEEK_DEPTH)
				return (NULL);
			p++;
		} else if (*p == '}' || *p == ']') {
			if (--depth < 0)
				return (NULL);
			p++;
		} else if (*p == ',' || *p == ':')
			p++;
		else if (*p != '\0' && strchr("-0123456789tfn", *p) != NULL) {
			/* A word: at least its first byte (no step stands). */
			do
				p++;
			while (p < e && *p != '\0' &&
			    strchr("+-.0123456789eEtruefalsn", *p) != NULL);
		} else
			return (NULL);
	} while (depth > 0);
	return (p);
}

/* Whether [p, e) is a JSON number exactly (RFC 8259's grammar). */
static int
jsonrpc_peek_number(const char *p, const char *e)
{
	if (p < e && *p == '-')
		p++;
	if (p == e || *p < '0' || *p > '9')
		return (0);
	if (*p == '0')
		p++;
	else
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	if (p < e && *p == '.') {
		if (++p == e || *p < '0' || *p > '9')
			return (0);
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		if (++p < e && (*p == '+' || *p == '-'))
			p++;
		if (p == e || *p < '0' || *p > '9')
			return (0);
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	return (p == e);
}

cJSON *
jsonrpc_peek_id(const char *buf, size_t len)
{
	const char	*p = buf, *e = buf + (len < JSONRPC_PEEK_MAX ? len :
			    JSONRPC_PEEK_MAX), *k, *v;
	int		 is_id;
	cJSON		*id;
	char		*text;

	p = jsonrpc_peek_ws(p, e);
	if (p == e || *p != '{')
		return (NULL);
	p++;
	for (;;) {
		p = jsonrpc_peek_ws(p, e);
		if (p == e || *p != '"')
			return (NULL);
		k = p;
		if ((p = jsonrpc_peek_string(p, e)) == NULL)
			return (NULL);
		is_id = p - k == 4 && memcmp(k, "\"id\"", 4) == 0;
		p = jsonrpc_peek_ws(p, e);
		if (p == e || *p != ':')
			return (NULL);
		v = jsonrpc_peek_ws(p + 1, e);
		if ((p = jsonrpc_peek_skip(v, e)) == NULL)
			return (NULL);
		/* The value must end there: a comma, the brace, or the cut. */
		k = jsonrpc_peek_ws(p, e);
		if (k < e && *k != ',' && *k != '}')
			return (NULL);
		if (is_id && (*v == '"' || jsonrpc_peek_number(v, p))) {
			text = xstrndup(v, (size_t)(p - v));
			id = cJSON_Parse(text);
			free(text);
			/* A number past a double's range is no id to echo. */
			if (jsonrpc_id_valid(id) && (!cJSON_IsNumber(id) ||
			    isfinite(id->valuedouble)))
				return (id);
			cJSON_Delete(id);
			return (NULL);
		}
		p = jsonrpc_peek_ws(p, e);
		if (p == e || *p != ',')
			return (NULL);
		p++;
	}
}
