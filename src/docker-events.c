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
 * Following the Docker Engine's events: GET /events with filters, kept
 * open, each event handed to the subscriber as it comes (one JSON object
 * a line, each at most DOCKER_EVENTS_MAX_LINE bytes). When the stream
 * cannot be opened or ends (the Engine stopped or restarted, a line too
 * long or not JSON), it is opened again after a delay that doubles from
 * DOCKER_EVENTS_RETRY_MIN_MS to DOCKER_EVENTS_RETRY_MAX_MS; the delay
 * starts again from the least once a stream has lasted
 * DOCKER_EVENTS_STEADY_MS. Each time a stream is established the
 * subscriber is told so (action NULL): events may have been missed
 * before, and it should look at the present state.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "sandbox-mcp.h"

#define DOCKER_EVENTS_MAX_LINE		(64 * 1024)
#define DOCKER_EVENTS_RETRY_MIN_MS	100
#define DOCKER_EVENTS_RETRY_MAX_MS	2000
#define DOCKER_EVENTS_STEADY_MS		10000

struct docker_events {
	char			*path;
	docker_event_cb		 cb;
	void			*arg;
	struct docker_req	*req;
	struct event		*retry;
	unsigned int		 delay_ms;
	uint64_t		 up_ms;		/* when the stream began */
	int			 failing;	/* a failure has been logged */
	unsigned long long	 attempts;
};

static void	docker_events_open(struct docker_events *);

/* Why a reply or an exchange ended the stream; the caller frees it. */
static char *
docker_events_why(struct docker_req *req)
{
	struct evbuffer	*body;
	cJSON		*json = NULL;
	char		*why;
	size_t		 len;

	if (docker_http_error(req) != NULL) {
		xasprintf(&why, "%s", docker_http_error(req));
		return (why);
	}
	if ((body = docker_http_body(req)) != NULL &&
	    (len = evbuffer_get_length(body)) != 0)
		json = cJSON_ParseWithLength((const char *)evbuffer_pullup(body,
		    len), len);
	why = docker_error_message(docker_http_status(req), json);
	cJSON_Delete(json);
	return (why);
}

/* The stream has ended or could not be had: open it again later. */
static void
docker_events_again(struct docker_events *de, const char *why)
{
	struct timeval	tv;

	if (de->up_ms != 0 && now_ms() - de->up_ms >= DOCKER_EVENTS_STEADY_MS)
		de->delay_ms = DOCKER_EVENTS_RETRY_MIN_MS;
	if (!de->failing || de->up_ms != 0)
		log_warnx("cannot follow the Docker Engine's events at %s: %s;"
		    " trying again in %u ms", cfg->docker_socket, why,
		    de->delay_ms);
	else
		log_debug("cannot follow the Docker Engine's events at %s: %s;"
		    " trying again in %u ms (attempt %llu)", cfg->docker_socket,
		    why, de->delay_ms, de->attempts);
	de->failing = 1;
	de->up_ms = 0;
	tv.tv_sec = de->delay_ms / 1000;
	tv.tv_usec = (de->delay_ms % 1000) * 1000;
	evtimer_add(de->retry, &tv);
	de->delay_ms *= 2;
	if (de->delay_ms > DOCKER_EVENTS_RETRY_MAX_MS)
		de->delay_ms = DOCKER_EVENTS_RETRY_MAX_MS;
}

static void
docker_events_done_cb(struct docker_req *req, void *arg)
{
	struct docker_events	*de = arg;
	char			*why;

	de->req = NULL;
	why = docker_events_why(req);
	docker_events_again(de, why);
	free(why);
}

/* One line of the stream: an event, or NULL once it is established. */
static void
docker_events_line_cb(struct docker_req *req, const char *line, size_t len,
    void *arg)
{
	struct docker_events	*de = arg;
	cJSON			*ev, *actor, *action, *id, *attrs;

	if (line == NULL) {
		if (de->failing)
			log_info("following the Docker Engine's events at %s"
			    " again", cfg->docker_socket);
		else
			log_debug("following the Docker Engine's events at"
			    " %s", cfg->docker_socket);
		de->failing = 0;
		de->up_ms = now_ms();
		de->cb(NULL, NULL, NULL, de->arg);
		return;
	}
	ev = cJSON_ParseWithLength(line, len);
	actor = cJSON_GetObjectItemCaseSensitive(ev, "Actor");
	action = cJSON_GetObjectItemCaseSensitive(ev, "Action");
	id = cJSON_GetObjectItemCaseSensitive(actor, "ID");
	attrs = cJSON_GetObjectItemCaseSensitive(actor, "Attributes");
	if (!cJSON_IsString(action) || !cJSON_IsString(id) ||
	    !cJSON_IsObject(attrs)) {
		/* Something was missed: start again, and look again. */
		log_debug("unreadable event: %.200s", line);
		docker_http_cancel(req);
		de->req = NULL;
		cJSON_Delete(ev);
		docker_events_again(de, "the Docker Engine sent an event that"
		    " is not a JSON object with Action and Actor");
		return;
	}
	log_trace(TRACE_DOCKER, "docker event %s %.12s", action->valuestring,
	    id->valuestring);
	de->cb(action->valuestring, id->valuestring, attrs, de->arg);
	cJSON_Delete(ev);
}

static void
docker_events_retry_cb(evutil_socket_t fd, short events, void *arg)
{
	docker_events_open(arg);
}

static void
docker_events_open(struct docker_events *de)
{
	de->attempts++;
	de->req = docker_http_stream(de->path, DOCKER_EVENTS_MAX_LINE,
	    docker_events_line_cb, docker_events_done_cb, de);
}

/*
 * Follow the events that filters (the Engine's filters object, e.g.
 * {"type": ["container"]}) select. cb gets each event's action, actor id
 * and actor attributes (which it must not keep), and NULLs each time the
 * stream is established.
 */
struct docker_events *
docker_events_follow(cJSON *filters, docker_event_cb cb, void *arg)
{
	struct docker_events	*de;
	char			*text, *esc;

	de = xcalloc(1, sizeof *de);
	de->cb = cb;
	de->arg = arg;
	de->delay_ms = DOCKER_EVENTS_RETRY_MIN_MS;
	text = util_json_print(filters);
	esc = util_url_escape(text, 0);
	xasprintf(&de->path, "/events?filters=%s", esc);
	free(esc);
	free(text);
	if ((de->retry = evtimer_new(ev_base, docker_events_retry_cb,
	    de)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	docker_events_open(de);
	return (de);
}

/* Stop following: no callback runs after this. */
void
docker_events_stop(struct docker_events *de)
{
	if (de == NULL)
		return;
	docker_http_cancel(de->req);
	event_free(de->retry);
	free(de->path);
	free(de);
}

/*
 * Follow the ends (die, destroy) of the containers carrying label (a
 * "key=value" filter), as docker_events_follow does.
 */
struct docker_events *
docker_events_ended(const char *label, docker_event_cb cb, void *arg)
{
	struct docker_events	*de;
	cJSON			*filters, *list;

	filters = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(filters, "type");
	cJSON_AddItemToArray(list, cJSON_CreateString("container"));
	list = cJSON_AddArrayToObject(filters, "event");
	cJSON_AddItemToArray(list, cJSON_CreateString("die"));
	cJSON_AddItemToArray(list, cJSON_CreateString("destroy"));
	list = cJSON_AddArrayToObject(filters, "label");
	cJSON_AddItemToArray(list, cJSON_CreateString(label));
	de = docker_events_follow(filters, cb, arg);
	cJSON_Delete(filters);
	return (de);
}
