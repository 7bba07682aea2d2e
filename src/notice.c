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
 * Notices: events of the engine that a caller should know (a publish
 * rejected, a command killed by its deadline, a sandbox that died),
 * handed to the one receiver the protocol layer registers. The engine
 * calls down into this file and never up into the protocol.
 */

#include "config.h"

#include <stdarg.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

static notice_cb	notice_receiver;

/* Register the receiver of notices (NULL: none). */
void
notice_register(notice_cb cb)
{
	notice_receiver = cb;
}

/*
 * A notice of event about sandbox_id (or NULL) for tenant's eyes, at an
 * MCP logging level (NOTICE_*), with a message. The receiver gets
 * {"event", "sandbox_id", "message"} and does not keep it.
 */
void
notice(const char *tenant, int level, const char *event,
    const char *sandbox_id, const char *fmt, ...)
{
	cJSON	*data;
	char	*msg;
	va_list	 ap;

	if (notice_receiver == NULL || tenant == NULL)
		return;
	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	data = cJSON_CreateObject();
	cJSON_AddStringToObject(data, "event", event);
	if (sandbox_id != NULL)
		cJSON_AddStringToObject(data, "sandbox_id", sandbox_id);
	cJSON_AddStringToObject(data, "message", msg);
	free(msg);
	notice_receiver(tenant, level, data);
	cJSON_Delete(data);
}
