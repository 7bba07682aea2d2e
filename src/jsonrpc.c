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

#include <stdio.h>
#include <stdlib.h>

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
