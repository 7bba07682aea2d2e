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
 * Our HTTP/1.1 client for the Docker Engine's unix socket. Debian's
 * libevent 2.1 cannot point evhttp at a unix socket, so each request opens
 * its own non-blocking connection, writes the request on a bufferevent and
 * parses the reply with http.c. Every request has a connect deadline, a
 * whole-request deadline and a reply size cap, and at most a configured
 * number run at once (the rest wait in a queue), so a slow or broken Docker
 * Engine costs memory and descriptors within bounds and never stalls the
 * loop. The completion callback always runs from the event loop, never
 * from inside docker_http_request.
 *
 * A stream (docker_http_stream, for GET /events) is a request whose 2xx
 * reply never ends: once its head is in, the body is handed to a callback
 * line by line as it comes, each line bounded, and the request ends only
 * when the Engine closes it or a line is too long. Streams do not take a
 * slot among the requests that run at once and have no whole-request
 * deadline, only the connect deadline and one for the head.
 */

#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "http.h"
#include "sandbox-mcp.h"

#define DOCKER_CONNECT_RETRY_MS	10
/* Body bytes a stream may hold beyond one line: one read's worth. */
#define DOCKER_STREAM_SLACK	(64 * 1024)

enum docker_req_state {
	DOCKER_REQ_QUEUED,
	DOCKER_REQ_CONNECTING,
	DOCKER_REQ_EXCHANGE,
	DOCKER_REQ_DONE
};

struct docker_req {
	unsigned int		 id;
	enum docker_req_state	 state;
	char			*method;
	char			*path;
	struct evbuffer		*out;
	size_t			 max_reply;

	int			 fd;
	struct bufferevent	*bev;
	struct http_msg		*msg;
	struct event		*timer;		/* deadline or retry */
	struct event		*finish;	/* deferred completion */
	uint64_t		 started_us;
	uint64_t		 connect_deadline_us;

	int			 status;
	char			*error;
	int			 cancelled;
	int			 in_callback;

	docker_cb		 cb;
	void			*arg;

	docker_line_cb		 line_cb;	/* a stream: each line */
	size_t			 max_line;
	struct evbuffer		*line;		/* the line being received */
	int			 flowing;	/* a stream's 2xx head is in */
	TAILQ_ENTRY(docker_req)	 entry;
};
TAILQ_HEAD(docker_reqs, docker_req);

static struct docker_reqs	docker_queue = TAILQ_HEAD_INITIALIZER(docker_queue);
static unsigned int		docker_running;
static unsigned int		docker_next_id;

static void	docker_http_start(struct docker_req *);
static void	docker_http_connect(struct docker_req *);
static void	docker_http_fail(struct docker_req *, const char *, ...)
		    __attribute__((__format__ (printf, 2, 3)));
static void	docker_http_complete(struct docker_req *);
static void	docker_http_free(struct docker_req *);
static void	docker_http_end(struct docker_req *);

static void
docker_http_set_state(struct docker_req *req, enum docker_req_state state)
{
	static const char *names[] = { "queued", "connecting", "exchange",
	    "done" };

	log_trace(TRACE_DOCKER, "docker request %u %s -> %s", req->id,
	    names[req->state], names[state]);
	req->state = state;
}

/* A request with its bytes to send, not yet started. */
static struct docker_req *
docker_http_new(const char *method, const char *path,
    const char *content_type, const void *body, size_t len, size_t max_reply,
    docker_cb cb, void *arg)
{
	struct docker_req	*req;

	req = xcalloc(1, sizeof *req);
	req->id = ++docker_next_id;
	req->method = xstrdup(method);
	req->path = xstrdup(path);
	req->fd = -1;
	req->cb = cb;
	req->arg = arg;
	req->max_reply = max_reply != 0 ? max_reply :
	    (size_t)cfg_limit(LIMIT_DOCKER_MAX_REPLY);
	req->started_us = mono_us();
	if ((req->out = evbuffer_new()) == NULL)
		fatalx("%s: evbuffer_new", __func__);
	evbuffer_add_printf(req->out, "%s %s HTTP/1.1\r\n"
	    "Host: docker\r\n"
	    "User-Agent: %s/%s\r\n"
	    "Connection: close\r\n", method, path, SANDBOX_MCP_NAME,
	    PACKAGE_VERSION);
	if (body != NULL) {
		evbuffer_add_printf(req->out, "Content-Type: %s\r\n"
		    "Content-Length: %zu\r\n", content_type != NULL ?
		    content_type : "application/json", len);
	} else if (strcmp(method, "POST") == 0)
		evbuffer_add_printf(req->out, "Content-Length: 0\r\n");
	evbuffer_add(req->out, "\r\n", 2);
	if (body != NULL && len != 0)
		evbuffer_add(req->out, body, len);
	req->state = DOCKER_REQ_QUEUED;
	log_trace(TRACE_DOCKER, "docker request %u %s %s", req->id, method,
	    path);
	return (req);
}

/*
 * Queue a request: method, path (with query), optional body and its
 * content type, the largest reply accepted (0 for the configured cap),
 * and the callback that receives the finished request.
 */
struct docker_req *
docker_http_request(const char *method, const char *path,
    const char *content_type, const void *body, size_t len, size_t max_reply,
    docker_cb cb, void *arg)
{
	struct docker_req	*req;

	req = docker_http_new(method, path, content_type, body, len,
	    max_reply, cb, arg);
	if (docker_running < (unsigned int)cfg_limit(LIMIT_DOCKER_MAX_REQUESTS))
		docker_http_start(req);
	else
		TAILQ_INSERT_TAIL(&docker_queue, req, entry);
	return (req);
}

/*
 * Open a stream: GET path, whose 2xx reply body is handed to line_cb one
 * line at a time (without its newline; empty lines are skipped), each at
 * most max_line bytes. line_cb gets a NULL line once, when the head of a
 * 2xx reply is in: the stream is established. cb runs when the request
 * ends: with an error (docker_http_error) once the stream was
 * established or could not be, or with the status and body of a reply
 * that was not 2xx. Either callback may cancel the request.
 */
struct docker_req *
docker_http_stream(const char *path, size_t max_line, docker_line_cb line_cb,
    docker_cb cb, void *arg)
{
	struct docker_req	*req;

	req = docker_http_new("GET", path, NULL, NULL, 0,
	    max_line + DOCKER_STREAM_SLACK, cb, arg);
	req->line_cb = line_cb;
	req->max_line = max_line;
	if ((req->line = evbuffer_new()) == NULL)
		fatalx("%s: evbuffer_new", __func__);
	docker_http_start(req);
	return (req);
}

unsigned int
docker_http_inflight(void)
{
	return (docker_running);
}

static void
docker_http_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct docker_req	*req = arg;

	switch (req->state) {
	case DOCKER_REQ_CONNECTING:
		if (mono_us() >= req->connect_deadline_us)
			docker_http_fail(req, "no connection within %lld s",
			    cfg_limit(LIMIT_DOCKER_CONNECT_TIMEOUT));
		else
			docker_http_connect(req);
		break;
	case DOCKER_REQ_EXCHANGE:
		docker_http_fail(req, "no complete %s within %lld s",
		    req->line_cb != NULL ? "reply head" : "reply",
		    cfg_limit(LIMIT_DOCKER_TIMEOUT));
		break;
	default:
		fatalx("%s: timer in state %d", __func__, req->state);
	}
}

static void
docker_http_finish_cb(evutil_socket_t fd, short events, void *arg)
{
	docker_http_complete(arg);
}

/* Take a slot (a stream takes none) and begin connecting. */
static void
docker_http_start(struct docker_req *req)
{
	if (req->line_cb == NULL)
		docker_running++;
	req->timer = evtimer_new(ev_base, docker_http_timer_cb, req);
	req->finish = evtimer_new(ev_base, docker_http_finish_cb, req);
	if (req->timer == NULL || req->finish == NULL)
		fatalx("%s: evtimer_new", __func__);
	req->connect_deadline_us = mono_us() +
	    cfg_limit(LIMIT_DOCKER_CONNECT_TIMEOUT) * 1000000ULL;
	docker_http_set_state(req, DOCKER_REQ_CONNECTING);
	docker_http_connect(req);
}

/*
 * A stream's head is in: with a 2xx status the body flows from now on,
 * with no deadline. Returns -1 when the callback cancelled the request.
 */
static int
docker_http_stream_head(struct docker_req *req)
{
	if (req->msg->status < 200 || req->msg->status >= 300)
		return (0);
	req->flowing = 1;
	req->status = req->msg->status;
	evtimer_del(req->timer);
	req->in_callback = 1;
	req->line_cb(req, NULL, 0, req->arg);
	req->in_callback = 0;
	if (req->cancelled) {
		docker_http_end(req);
		return (-1);
	}
	return (0);
}

/*
 * Hand a stream's complete lines to its callback. The body decoded so
 * far moves to the line buffer, and the message's byte counts start
 * again, so the reply's limits bound what one read brings rather than
 * the stream's whole length; a line is bounded here. Returns -1 when the
 * request has ended (a line too long, or cancelled).
 */
static int
docker_http_stream_lines(struct docker_req *req)
{
	struct evbuffer_ptr	 p;
	char			*line;
	size_t			 len;

	evbuffer_add_buffer(req->line, req->msg->body);
	req->msg->body_bytes = 0;
	req->msg->head_bytes = 0;
	for (;;) {
		p = evbuffer_search_eol(req->line, NULL, NULL, EVBUFFER_EOL_LF);
		if (p.pos == -1) {
			len = evbuffer_get_length(req->line);
			break;
		}
		len = (size_t)p.pos;
		if (len > req->max_line)
			break;
		line = xmalloc(len + 1);
		evbuffer_remove(req->line, line, len);
		evbuffer_drain(req->line, 1);
		line[len] = '\0';
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		if (len > 0) {
			req->in_callback = 1;
			req->line_cb(req, line, len, req->arg);
			req->in_callback = 0;
		}
		free(line);
		if (req->cancelled) {
			docker_http_end(req);
			return (-1);
		}
	}
	if (len > req->max_line) {
		docker_http_fail(req, "a line of the stream is longer than %zu"
		    " bytes", req->max_line);
		return (-1);
	}
	return (0);
}

static void
docker_http_read_cb(struct bufferevent *bev, void *arg)
{
	struct docker_req	*req = arg;
	enum http_parse_result	 r;

	if (req->state != DOCKER_REQ_EXCHANGE)
		return;
	r = http_msg_parse(req->msg, bufferevent_get_input(bev));
	if (r == HTTP_PARSE_HEAD) {
		log_trace(TRACE_DOCKER, "docker request %u status %d", req->id,
		    req->msg->status);
		if (req->line_cb != NULL && docker_http_stream_head(req) != 0)
			return;
		r = http_msg_parse(req->msg, bufferevent_get_input(bev));
	}
	if (req->flowing && r != HTTP_PARSE_ERROR) {
		if (docker_http_stream_lines(req) != 0)
			return;
		if (r == HTTP_PARSE_DONE)
			docker_http_fail(req, "the Docker Engine ended the"
			    " stream");
		return;
	}
	switch (r) {
	case HTTP_PARSE_DONE:
		req->status = req->msg->status;
		bufferevent_disable(bev, EV_READ);
		docker_http_set_state(req, DOCKER_REQ_DONE);
		event_active(req->finish, EV_TIMEOUT, 1);
		break;
	case HTTP_PARSE_ERROR:
		if (req->msg->error == HTTP_ERR_BODY_TOO_LARGE && req->flowing)
			docker_http_fail(req, "a line of the stream is longer"
			    " than %zu bytes", req->max_line);
		else if (req->msg->error == HTTP_ERR_BODY_TOO_LARGE)
			docker_http_fail(req, "the reply is larger than %zu"
			    " bytes", req->max_reply);
		else
			docker_http_fail(req, "malformed reply (%s)",
			    req->msg->errbuf);
		break;
	default:
		break;
	}
}

static void
docker_http_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct docker_req	*req = arg;

	if (req->state != DOCKER_REQ_EXCHANGE)
		return;
	if (what & BEV_EVENT_EOF) {
		docker_http_read_cb(bev, req);
		if (req->state != DOCKER_REQ_EXCHANGE)
			return;
		if (req->flowing) {
			docker_http_fail(req, "the Docker Engine ended the"
			    " stream");
			return;
		}
		if (http_msg_eof(req->msg) == HTTP_PARSE_DONE) {
			req->status = req->msg->status;
			docker_http_set_state(req, DOCKER_REQ_DONE);
			event_active(req->finish, EV_TIMEOUT, 1);
		} else
			docker_http_fail(req, "the connection closed before"
			    " a complete reply");
		return;
	}
	if (what & BEV_EVENT_ERROR)
		docker_http_fail(req, "%s", strerror(EVUTIL_SOCKET_ERROR()));
}

/* Try to connect; a full listen backlog is retried until the deadline. */
static void
docker_http_connect(struct docker_req *req)
{
	struct sockaddr_un	 sun;
	struct timeval		 tv;
	uint64_t		 left;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strlcpy(sun.sun_path, cfg->docker_socket, sizeof sun.sun_path);
	if (req->fd == -1) {
		req->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
		if (req->fd == -1) {
			docker_http_fail(req, "%s", strerror(errno));
			return;
		}
	}
	if (connect(req->fd, (struct sockaddr *)&sun, sizeof sun) != 0 &&
	    errno != EISCONN) {
		if (errno == EAGAIN || errno == EINTR) {
			tv.tv_sec = 0;
			tv.tv_usec = DOCKER_CONNECT_RETRY_MS * 1000;
			evtimer_add(req->timer, &tv);
			return;
		}
		docker_http_fail(req, "%s", strerror(errno));
		return;
	}

	req->bev = bufferevent_socket_new(ev_base, req->fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (req->bev == NULL)
		fatalx("%s: bufferevent_socket_new", __func__);
	req->fd = -1;
	req->msg = http_msg_new(HTTP_MSG_RESPONSE,
	    (size_t)cfg_limit(LIMIT_MAX_HEADER), req->max_reply);
	if (strcmp(req->method, "HEAD") == 0)
		req->msg->no_body = 1;
	bufferevent_setcb(req->bev, docker_http_read_cb, NULL,
	    docker_http_event_cb, req);
	bufferevent_write_buffer(req->bev, req->out);
	bufferevent_enable(req->bev, EV_READ | EV_WRITE);
	docker_http_set_state(req, DOCKER_REQ_EXCHANGE);

	left = cfg_limit(LIMIT_DOCKER_TIMEOUT) * 1000000ULL;
	tv.tv_sec = left / 1000000;
	tv.tv_usec = left % 1000000;
	evtimer_add(req->timer, &tv);
}

/* End the exchange with an error; the callback runs from the loop. */
static void
docker_http_fail(struct docker_req *req, const char *fmt, ...)
{
	va_list	ap;

	if (req->state == DOCKER_REQ_DONE)
		return;
	va_start(ap, fmt);
	free(req->error);
	xvasprintf(&req->error, fmt, ap);
	va_end(ap);
	log_debug("docker request %u %s %s failed: %s", req->id, req->method,
	    req->path, req->error);
	if (req->bev != NULL)
		bufferevent_disable(req->bev, EV_READ | EV_WRITE);
	docker_http_set_state(req, DOCKER_REQ_DONE);
	event_active(req->finish, EV_TIMEOUT, 1);
}

/* Hand the result to the caller, free the request, start a queued one. */
static void
docker_http_complete(struct docker_req *req)
{
	struct docker_req	*next;

	log_trace(TRACE_DOCKER, "docker request %u finished status=%d in %llu"
	    " us", req->id, req->status, (unsigned long long)(mono_us() -
	    req->started_us));
	metrics_docker_call(req->error != NULL || req->status >= 500);
	if (!req->cancelled && req->cb != NULL) {
		req->in_callback = 1;
		req->cb(req, req->arg);
		req->in_callback = 0;
	}
	if (req->line_cb != NULL) {
		docker_http_free(req);
		return;
	}
	docker_running--;
	docker_http_free(req);
	if ((next = TAILQ_FIRST(&docker_queue)) != NULL) {
		TAILQ_REMOVE(&docker_queue, next, entry);
		docker_http_start(next);
	}
}

/*
 * Forget a request: its callback will not run. Safe from inside that
 * callback (then it only marks the request).
 */
void
docker_http_cancel(struct docker_req *req)
{
	if (req == NULL)
		return;
	req->cancelled = 1;
	if (req->in_callback)
		return;
	if (req->state == DOCKER_REQ_QUEUED) {
		TAILQ_REMOVE(&docker_queue, req, entry);
		docker_http_free(req);
		return;
	}
	docker_http_end(req);
}

/* End the exchange now; the request is freed from the loop. */
static void
docker_http_end(struct docker_req *req)
{
	if (req->state == DOCKER_REQ_DONE)
		return;
	if (req->bev != NULL)
		bufferevent_disable(req->bev, EV_READ | EV_WRITE);
	docker_http_set_state(req, DOCKER_REQ_DONE);
	event_active(req->finish, EV_TIMEOUT, 1);
}

static void
docker_http_free(struct docker_req *req)
{
	if (req->timer != NULL)
		event_free(req->timer);
	if (req->finish != NULL)
		event_free(req->finish);
	if (req->bev != NULL)
		bufferevent_free(req->bev);
	if (req->fd != -1)
		close(req->fd);
	http_msg_free(req->msg);
	if (req->line != NULL)
		evbuffer_free(req->line);
	evbuffer_free(req->out);
	free(req->error);
	free(req->method);
	free(req->path);
	free(req);
}

int
docker_http_status(struct docker_req *req)
{
	return (req->status);
}

/* Why the exchange failed, or NULL when a whole reply came back. */
const char *
docker_http_error(struct docker_req *req)
{
	return (req->error);
}

struct evbuffer *
docker_http_body(struct docker_req *req)
{
	return (req->msg != NULL ? req->msg->body : NULL);
}
