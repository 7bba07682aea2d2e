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
 * Docker Engine API calls with JSON in and out, each traced as a child
 * span "docker.<name>" of the tool call that made it. Callers get the
 * parsed reply, or a message a person can act on: "cannot reach the Docker
 * Engine at PATH: REASON" when the exchange failed, or the Engine's own
 * message with the HTTP status when it refused.
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>

#include "sandbox-mcp.h"

struct docker_call {
	struct docker_req	*req;
	struct tspan		*span;
	docker_json_cb		 cb;
	void			*arg;
};

/* The Engine's {"message": ...} or a generic sentence for a status. */
char *
docker_error_message(int status, cJSON *reply)
{
	cJSON	*m;
	char	*s;

	m = cJSON_GetObjectItemCaseSensitive(reply, "message");
	if (cJSON_IsString(m) && m->valuestring[0] != '\0')
		xasprintf(&s, "the Docker Engine refused the request (HTTP %d):"
		    " %s", status, m->valuestring);
	else
		xasprintf(&s, "the Docker Engine refused the request (HTTP %d)",
		    status);
	return (s);
}

static void
docker_call_cb(struct docker_req *req, void *arg)
{
	struct docker_call	*dc = arg;
	struct evbuffer		*body;
	cJSON			*json = NULL;
	const char		*err;
	char			*msg = NULL;
	size_t			 len;
	int			 status = docker_http_status(req);

	if ((err = docker_http_error(req)) != NULL) {
		xasprintf(&msg, "cannot reach the Docker Engine at %s: %s",
		    cfg->docker_socket, err);
		status = 0;
	} else {
		body = docker_http_body(req);
		len = evbuffer_get_length(body);
		if (len != 0) {
			json = cJSON_ParseWithLength(
			    (const char *)evbuffer_pullup(body, len), len);
			if (json == NULL && status >= 200 && status < 300)
				xasprintf(&msg, "cannot reach the Docker Engine"
				    " at %s: the reply is not JSON",
				    cfg->docker_socket);
		}
		if (msg == NULL && (status < 200 || status >= 300))
			msg = docker_error_message(status, json);
	}
	telemetry_span_attr_int(dc->span, "http_status", status);
	if (msg != NULL)
		telemetry_span_attr_str(dc->span, "error", msg);
	telemetry_span_end(dc->span, msg != NULL ? "error" : "completed");
	dc->cb(msg == NULL ? json : NULL, msg, status, dc->arg);
	cJSON_Delete(json);
	free(msg);
	free(dc);
}

/*
 * Call the Engine. name labels the span; body (may be NULL) is sent as
 * JSON. The callback gets the parsed reply on success (it must not keep
 * it), or NULL and a message.
 */
struct docker_call *
docker_call(const char *method, const char *path, const char *name,
    cJSON *body, struct tspan *parent, docker_json_cb cb, void *arg)
{
	struct docker_call	*dc;
	char			*text = NULL, *sname;

	dc = xcalloc(1, sizeof *dc);
	dc->cb = cb;
	dc->arg = arg;
	/* A call of no name (a periodic sample) leaves no span. */
	if (name != NULL) {
		xasprintf(&sname, "docker.%s", name);
		dc->span = telemetry_span_begin(NULL, parent, sname, NULL);
		free(sname);
	}
	telemetry_span_attr_str(dc->span, "method", method);
	telemetry_span_attr_str(dc->span, "path", path);
	if (body != NULL)
		text = util_json_print(body);
	dc->req = docker_http_request(method, path, "application/json", text,
	    text != NULL ? strlen(text) : 0, 0, docker_call_cb, dc);
	free(text);
	return (dc);
}

/* Abandon a call: its callback will not run. */
void
docker_call_cancel(struct docker_call *dc)
{
	if (dc == NULL)
		return;
	docker_http_cancel(dc->req);
	telemetry_span_end(dc->span, "cancelled");
	free(dc);
}

static int
docker_string_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/*
 * Every reference an /images/json reply names: repo tags but
 * <none>:<none>, repo digests but <none>@<none>, and the id of each image
 * with no tag; sorted, without duplicates. NULL when the reply is not a
 * list.
 */
cJSON *
docker_image_references(cJSON *reply)
{
	cJSON		*img, *v, *s, *out;
	const char	**refs = NULL;
	size_t		 n = 0, size = 0, i;
	int		 tagged;

	if (!cJSON_IsArray(reply))
		return (NULL);
	cJSON_ArrayForEach(img, reply) {
		tagged = 0;
		for (i = 0; i < 2; i++) {
			v = cJSON_GetObjectItemCaseSensitive(img, i == 0 ?
			    "RepoTags" : "RepoDigests");
			cJSON_ArrayForEach(s, v) {
				if (!cJSON_IsString(s) ||
				    strcmp(s->valuestring, "<none>:<none>") ==
				    0 || strcmp(s->valuestring,
				    "<none>@<none>") == 0)
					continue;
				if (n == size) {
					size = size == 0 ? 64 : size * 2;
					refs = xreallocarray(refs, size,
					    sizeof *refs);
				}
				refs[n++] = s->valuestring;
				if (i == 0)
					tagged = 1;
			}
		}
		v = cJSON_GetObjectItemCaseSensitive(img, "Id");
		if (!tagged && cJSON_IsString(v)) {
			if (n == size) {
				size = size == 0 ? 64 : size * 2;
				refs = xreallocarray(refs, size, sizeof *refs);
			}
			refs[n++] = v->valuestring;
		}
	}
	if (n > 0)
		qsort(refs, n, sizeof *refs, docker_string_cmp);
	out = cJSON_CreateArray();
	for (i = 0; i < n; i++) {
		if (i > 0 && strcmp(refs[i], refs[i - 1]) == 0)
			continue;
		cJSON_AddItemToArray(out, cJSON_CreateString(refs[i]));
	}
	free(refs);
	return (out);
}

/*
 * The state of a container (an inspection, or NULL when it is gone) in
 * the words of the health route: running, paused, exited or missing.
 */
const char *
docker_container_status(cJSON *container)
{
	cJSON		*st;
	const char	*s;

	if (!cJSON_IsObject(container))
		return ("missing");
	st = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
	    container, "State"), "Status");
	s = cJSON_IsString(st) ? st->valuestring : "";
	if (strcmp(s, "running") == 0 || strcmp(s, "restarting") == 0)
		return ("running");
	if (strcmp(s, "paused") == 0)
		return ("paused");
	return ("exited");
}

/* A container's address on its network (from an inspection), or NULL. */
const char *
docker_container_address(cJSON *container)
{
	cJSON	*ns, *v, *net;

	ns = cJSON_GetObjectItemCaseSensitive(container, "NetworkSettings");
	v = cJSON_GetObjectItemCaseSensitive(ns, "IPAddress");
	if (cJSON_IsString(v) && v->valuestring[0] != '\0')
		return (v->valuestring);
	cJSON_ArrayForEach(net, cJSON_GetObjectItemCaseSensitive(ns,
	    "Networks")) {
		v = cJSON_GetObjectItemCaseSensitive(net, "IPAddress");
		if (cJSON_IsString(v) && v->valuestring[0] != '\0')
			return (v->valuestring);
	}
	return (NULL);
}
