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
 * The per-sandbox routes, behind the same API key as /mcp with a grant of
 * the runtime set, for the key's tenant's sandboxes only:
 *
 *	GET /sandboxes/{id}/health		its record's and container's
 *						state
 *	ANY /sandboxes/{id}/forward/{port}/...	one request to that port
 *
 * Where a sandbox is comes from the door (the hidden sandbox_endpoint
 * operation), never from the engine directly. A forward carries one
 * request to the container's address: its head without our credentials,
 * its body by its Content-Length and nothing after it, so that a client
 * or a proxy reusing the connection never hands the next request (and
 * its API key) to the sandbox; the answer's head is rewritten to be the
 * connection's last. Only a 101 to an upgrade the client asked for
 * makes the connection a tunnel both ways, and only bytes sent after it
 * go through: any before it close the connection. The client's connection stays
 * the transport's (its limits, timers and close); this file has its
 * bytes while the forward lasts (transport_http_raw).
 */

#include "config.h"

#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "http.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"

#define FORWARD_HIGH		(1024 * 1024)
#define FORWARD_MAX_HEAD	(64 * 1024)	/* of a forwarded answer */

/* One request on a per-sandbox route, from its head to its close. */
struct forward {
	struct http_conn	*c;		/* NULL once it has closed */
	unsigned int		 cid;		/* its id, for logs */
	int			 pending;	/* the door has not answered */
	int			 forward;	/* not health */
	int			 port;
	char			 id[65];
	char			*target;	/* path and query */
	struct bufferevent	*upstream;
	int			 eof;		/* the client is done sending */
	uint64_t		 down;		/* bytes from upstream */
	int64_t			 left;		/* client bytes to pass */
	int			 upgrade;	/* the client asked for one */
	int			 head;		/* the answer's head to come */
	size_t			 held;		/* of it, counted */
};

static void	forward_up(void *);
static void	forward_drained(void *);
static void	forward_client_eof(void *);

static const struct transport_http_raw forward_raw = {
	forward_up,
	forward_drained,
	forward_client_eof
};

static void
forward_free(struct forward *f)
{
	if (f->upstream != NULL)
		bufferevent_free(f->upstream);
	free(f->target);
	free(f);
}

/* The request is over (answered, or its connection gone). */
static void
forward_done(void *arg)
{
	struct forward	*f = arg;

	f->c = NULL;
	if (!f->pending)
		forward_free(f);
}

/* A route's error as a JSON body with the status that fits its kind. */
static void
forward_error(struct forward *f, enum cause_kind kind, const char *message)
{
	cJSON	*body;
	int	 status;

	if (kind == CAUSE_NOT_FOUND)
		status = 404;
	else if (kind == CAUSE_INVALID)
		status = 400;
	else
		status = 502;
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "error", message);
	transport_http_json(f->c, status, body, NULL);
	cJSON_Delete(body);
}

/* Bytes from one side to the other, bounded by a watermark. */
static void
forward_pump(struct forward *f, struct evbuffer *from, struct evbuffer *to,
    int from_client)
{
	evbuffer_add_buffer(to, from);
	if (evbuffer_get_length(to) > FORWARD_HIGH) {
		if (from_client)
			transport_http_reading(f->c, 0);
		else
			bufferevent_disable(f->upstream, EV_READ);
	}
	transport_http_touch(f->c);
}

/*
 * Pass the client's bytes upstream, as far as the forwarded request goes:
 * its body, and nothing after it (a further request is not the
 * sandbox's to see: the connection ends), unless the sandbox has taken
 * an upgrade.
 */
static void
forward_up(void *arg)
{
	struct forward	*f = arg;
	struct evbuffer	*in = transport_http_input(f->c), *out;
	unsigned char	*p;
	size_t		 n;

	if (f->upstream == NULL)
		return;
	out = bufferevent_get_output(f->upstream);
	if (f->left < 0) {
		forward_pump(f, in, out, 1);
		return;
	}
	n = evbuffer_get_length(in);
	if ((uint64_t)n > (uint64_t)f->left)
		n = (size_t)f->left;
	evbuffer_remove_buffer(in, out, n);
	f->left -= (int64_t)n;
	/* Blank lines after a body are allowed and mean nothing. */
	while (f->left == 0 && !f->upgrade && evbuffer_get_length(in) >= 2 &&
	    (p = evbuffer_pullup(in, 2)) != NULL && p[0] == '\r' &&
	    p[1] == '\n')
		evbuffer_drain(in, 2);
	/*
	 * Nothing after the request is the sandbox's, not even behind an
	 * upgrade it may yet take: a client speaks in a tunnel only once it
	 * has the 101, so bytes before it are a request of its own (or a
	 * proxy's next client's), credentials and all.
	 */
	if (f->left == 0 && evbuffer_get_length(in) != 0) {
		transport_http_close(f->c, f->upgrade ? "a request after an"
		    " upgrade's, before its answer" : "a further request on a"
		    " forward");
		return;
	}
	if (evbuffer_get_length(out) > FORWARD_HIGH)
		transport_http_reading(f->c, 0);
	transport_http_touch(f->c);
}

/*
 * The status of a sandbox's response head (n bytes, ending in an empty
 * line), or -1 when it is not one we pass on as is: a status line
 * "HTTP/1.x NNN", then header lines with a name and a colon, every line
 * ending in CRLF, and no NUL, bare CR or bare LF anywhere (a client may
 * split lines where we would not, and read our Connection and CSP lines
 * as part of something else).
 */
static int
forward_head_status(const char *head, size_t n)
{
	const char	*line, *end, *colon;
	size_t		 i;

	for (i = 0; i < n; i++) {
		if (head[i] == '\0' ||
		    (head[i] == '\r' && (i + 1 == n || head[i + 1] != '\n')) ||
		    (head[i] == '\n' && (i == 0 || head[i - 1] != '\r')))
			return (-1);
	}
	if (n < 16 || strncmp(head, "HTTP/1.", 7) != 0 ||
	    (head[7] != '0' && head[7] != '1') || head[8] != ' ' ||
	    !isdigit((unsigned char)head[9]) ||
	    !isdigit((unsigned char)head[10]) ||
	    !isdigit((unsigned char)head[11]) ||
	    (head[12] != ' ' && head[12] != '\r'))
		return (-1);
	line = strstr(head, "\r\n") + 2;
	for (; (end = strstr(line, "\r\n")) != line; line = end + 2) {
		colon = memchr(line, ':', end - line);
		if (colon == NULL || colon == line || *line == ' ' ||
		    *line == '\t')
			return (-1);
	}
	return ((head[9] - '0') * 100 + (head[10] - '0') * 10 +
	    (head[11] - '0'));
}

/*
 * The head of the sandbox's answer, taken whole before any of it reaches
 * the client. A 101 to an upgrade the client asked for opens the tunnel
 * both ways and passes unchanged; another 1xx passes and the next head
 * is awaited. Any other answer is the one answer of the connection: its
 * Connection and Keep-Alive headers give way to Connection: close, so
 * that neither a client nor a pooling proxy sends another request on it,
 * and a Content-Security-Policy keeps the page's own connections (fetch,
 * WebSocket) to its origin: a sandbox's page cannot call this server by
 * another of its names. Returns -1 once the connection is closed.
 */
static int
forward_head(struct forward *f, struct evbuffer *in)
{
	struct evbuffer		*out = transport_http_output(f->c);
	struct evbuffer_ptr	 p;
	char			*head, *line, *end, *colon;
	size_t			 n;
	int			 status;

	while (f->head) {
		p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
		if (p.pos == -1) {
			if (evbuffer_get_length(in) <= FORWARD_MAX_HEAD)
				return (0);
			transport_http_close(f->c, "the sandbox's answer has"
			    " no head");
			return (-1);
		}
		n = (size_t)p.pos + 4;
		head = xmalloc(n + 1);
		evbuffer_remove(in, head, n);
		head[n] = '\0';
		if ((status = forward_head_status(head, n)) == -1) {
			free(head);
			transport_http_close(f->c, "the sandbox's answer has a"
			    " malformed head");
			return (-1);
		}
		/*
		 * A 101 before the request's body has all gone: what the
		 * client sends next could be another request, and the
		 * tunnel would take it.
		 */
		if (status == 101 && f->upgrade && f->left > 0) {
			free(head);
			transport_http_close(f->c, "the sandbox took an upgrade"
			    " before its request's body was sent");
			return (-1);
		}
		if ((status == 101 && f->upgrade) ||
		    (status >= 100 && status < 200 && status != 101)) {
			evbuffer_add(out, head, n);
			if (status == 101) {
				f->head = 0;
				f->left = -1;
				if (!f->eof) {
					transport_http_reading(f->c, 1);
					forward_up(f);
				}
			}
			free(head);
			continue;
		}
		line = head;
		end = strstr(line, "\r\n");
		evbuffer_add(out, line, end + 2 - line);
		for (line = end + 2; (end = strstr(line, "\r\n")) != NULL &&
		    end != line; line = end + 2) {
			if ((colon = memchr(line, ':', end - line)) != NULL &&
			    ((colon - line == 10 && strncasecmp(line,
			    "Connection", 10) == 0) || (colon - line == 10 &&
			    strncasecmp(line, "Keep-Alive", 10) == 0) ||
			    (colon - line == 16 && strncasecmp(line,
			    "Proxy-Connection", 16) == 0)))
				continue;
			evbuffer_add(out, line, end + 2 - line);
		}
		evbuffer_add_printf(out, "Connection: close\r\n"
		    "Content-Security-Policy: connect-src 'self';"
		    " form-action 'self'\r\n\r\n");
		f->head = 0;
		free(head);
	}
	return (0);
}

/* What went to the client has left: read the sandbox again, or end. */
static void
forward_drained(void *arg)
{
	struct forward	*f = arg;

	if (f->upstream == NULL) {
		transport_http_close(f->c, "forward done");
		return;
	}
	bufferevent_enable(f->upstream, EV_READ);
}

/*
 * Bytes from the sandbox: its answer's head first, then the rest as it
 * comes. Returns -1 once the connection is closed.
 */
static int
forward_down(struct forward *f)
{
	struct evbuffer	*in = bufferevent_get_input(f->upstream);

	f->down += evbuffer_get_length(in) - f->held;
	if (f->head && forward_head(f, in) != 0)
		return (-1);
	f->held = evbuffer_get_length(in);
	if (!f->head) {
		f->held = 0;
		forward_pump(f, in, transport_http_output(f->c), 0);
	}
	return (0);
}

static void
forward_upstream_read_cb(struct bufferevent *bev, void *arg)
{
	forward_down(arg);
}

static void
forward_upstream_write_cb(struct bufferevent *bev, void *arg)
{
	struct forward	*f = arg;

	if (f->eof && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		shutdown(bufferevent_getfd(bev), SHUT_WR);
	else if (!f->eof) {
		transport_http_reading(f->c, 1);
		forward_up(f);
	}
}

/* The client has sent all it will: pass the half-close on. */
static void
forward_client_eof(void *arg)
{
	struct forward	*f = arg;

	f->eof = 1;
	transport_http_reading(f->c, 0);
	if (f->upstream != NULL && evbuffer_get_length(
	    bufferevent_get_output(f->upstream)) == 0)
		shutdown(bufferevent_getfd(f->upstream), SHUT_WR);
}

static void
forward_upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct forward	*f = arg;
	int		 err = EVUTIL_SOCKET_ERROR();

	if (what & BEV_EVENT_CONNECTED)
		return;
	if (forward_down(f) != 0)
		return;
	bufferevent_free(f->upstream);
	f->upstream = NULL;
	if ((what & BEV_EVENT_ERROR) && f->down == 0) {
		/* Nothing came back: the client gets a 502 that says why. */
		log_debug("http client %u forward failed: %s", f->cid,
		    strerror(err));
		forward_error(f, CAUSE_FAILED, err == ECONNREFUSED ? "nothing"
		    " listens on that port in the sandbox" : "cannot reach"
		    " that port in the sandbox");
		return;
	}
	/* The upstream is done: flush what it sent, then close. */
	if (evbuffer_get_length(transport_http_output(f->c)) == 0)
		transport_http_close(f->c, "forward done");
}

/* Headers that are for this hop only and are not passed on. */
static int
forward_hop_header(const char *name)
{
	static const char *hop[] = { "Connection", "Keep-Alive",
	    "Proxy-Connection", "Proxy-Authorization", "Authorization", "TE",
	    "Trailer", "Host", "Upgrade", "X-Forwarded-For",
	    "X-Forwarded-Host", "X-Forwarded-Prefix", "X-Forwarded-Proto",
	    "X-Forwarded-Port", "X-Forwarded-Server", "X-Original-URL",
	    "X-Rewrite-URL", "Forwarded", "X-Real-IP", "Expect" };
	size_t	i;

	for (i = 0; i < sizeof hop / sizeof hop[0]; i++) {
		if (strcasecmp(name, hop[i]) == 0)
			return (1);
	}
	return (0);
}

/*
 * Connect to the sandbox and send the request head (without our
 * credentials), then everything the client sends, both ways.
 */
static void
forward_start(struct forward *f, const char *ip)
{
	struct http_msg		*req = transport_http_msg(f->c);
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&ss;
	struct http_header	*h;
	struct evbuffer		*out;
	const char		*upgrade, *host, *expect, *conn;
	char			 hbuf[256];
	socklen_t		 len;

	if (req->chunked) {
		transport_http_plain(f->c, 411, NULL);
		return;
	}
	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, ip, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(f->port);
		len = sizeof *sin;
	} else if (inet_pton(AF_INET6, ip, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(f->port);
		len = sizeof *sin6;
	} else {
		forward_error(f, CAUSE_FAILED, "the sandbox's container has no"
		    " usable network address");
		return;
	}
	f->upstream = bufferevent_socket_new(ev_base, -1,
	    BEV_OPT_CLOSE_ON_FREE);
	if (f->upstream == NULL)
		fatalx("%s: bufferevent_socket_new", __func__);
	bufferevent_setcb(f->upstream, forward_upstream_read_cb,
	    forward_upstream_write_cb, forward_upstream_event_cb, f);
	bufferevent_setwatermark(f->upstream, EV_WRITE, 0, 0);
	if (bufferevent_socket_connect(f->upstream, (struct sockaddr *)&ss,
	    (int)len) != 0) {
		bufferevent_free(f->upstream);
		f->upstream = NULL;
		forward_error(f, CAUSE_FAILED, "cannot connect to the sandbox");
		return;
	}
	util_tcp_nodelay(bufferevent_getfd(f->upstream));

	out = bufferevent_get_output(f->upstream);
	evbuffer_add_printf(out, "%s %s HTTP/1.1\r\n", req->method, f->target);
	TAILQ_FOREACH(h, &req->headers, entry) {
		if (!forward_hop_header(h->name))
			evbuffer_add_printf(out, "%s: %s\r\n", h->name,
			    h->value);
	}
	evbuffer_add_printf(out, "Host: localhost:%d\r\n", f->port);
	upgrade = http_msg_header(req, "Upgrade");
	f->left = req->content_length > 0 ? req->content_length : 0;
	/* Expect is not passed on: the client is told to go on here. */
	if (f->left > 0 && (expect = http_msg_header(req, "Expect")) !=
	    NULL && strcasecmp(expect, "100-continue") == 0)
		evbuffer_add_printf(transport_http_output(f->c),
		    "HTTP/1.1 100 Continue\r\n\r\n");
	conn = http_msg_header(req, "Connection");
	if (upgrade != NULL && http_header_has_token(conn != NULL ? conn : "",
	    "upgrade")) {
		evbuffer_add_printf(out, "Connection: Upgrade\r\n"
		    "Upgrade: %s\r\n", upgrade);
		f->upgrade = 1;
	} else
		evbuffer_add_printf(out, "Connection: close\r\n");
	f->head = 1;
	/* Who asked, and for what: a trusted proxy's word, else ours. */
	evbuffer_add_printf(out, "X-Forwarded-For: %s\r\n",
	    transport_http_client(f->c));
	if ((host = transport_http_host(f->c, hbuf, sizeof hbuf)) != NULL)
		evbuffer_add_printf(out, "X-Forwarded-Host: %s\r\n", host);
	evbuffer_add_printf(out, "X-Forwarded-Proto: %s\r\n",
	    transport_http_proto(f->c));
	evbuffer_add_printf(out, "X-Forwarded-Prefix: /sandboxes/%s/forward/%d"
	    "\r\n\r\n", f->id, f->port);

	transport_http_raw(f->c, &forward_raw, f);
	bufferevent_enable(f->upstream, EV_READ | EV_WRITE);
	/* Body bytes already read follow the head, and no more. */
	forward_up(f);
	log_debug("http client %u forward to %s:%d %.200s", f->cid, ip,
	    f->port, f->target);
}

/* The door has told where the sandbox is: answer the route. */
static void
forward_endpoint_cb(struct op_call *call, cJSON *result,
    const struct cause *cause, void *arg)
{
	struct forward	*f = arg;
	cJSON		*v;
	const char	*state, *container, *ip;

	f->pending = 0;
	if (f->c == NULL) {
		cJSON_Delete(result);
		forward_free(f);
		return;
	}
	if (result == NULL) {
		forward_error(f, cause->kind, cause->message);
		return;
	}
	if (!f->forward) {
		cJSON_DeleteItemFromObject(result, "address");
		transport_http_json(f->c, 200, result, NULL);
		cJSON_Delete(result);
		return;
	}
	v = cJSON_GetObjectItem(result, "state");
	state = cJSON_IsString(v) ? v->valuestring : "unknown";
	v = cJSON_GetObjectItem(result, "container");
	container = cJSON_IsString(v) ? v->valuestring : "missing";
	v = cJSON_GetObjectItem(result, "address");
	ip = cJSON_IsString(v) ? v->valuestring : NULL;
	if (strcmp(state, "ready") != 0)
		forward_error(f, CAUSE_FAILED, "the sandbox is not ready");
	else if (strcmp(container, "running") != 0)
		forward_error(f, CAUSE_FAILED, "the sandbox's container is not"
		    " running");
	else if (ip == NULL)
		forward_error(f, CAUSE_FAILED, "the sandbox's container has no"
		    " network address");
	else
		forward_start(f, ip);
	cJSON_Delete(result);
}

/*
 * Route /sandboxes/{id}/health and /sandboxes/{id}/forward/{port}/...
 * (the transport's handler for /sandboxes/).
 */
void
forward_http(struct http_conn *c, const char *path)
{
	struct http_msg	*req = transport_http_msg(c);
	struct forward	*f;
	const char	*p = path + 11, *slash, *errstr;
	char		 id[65], port[8];
	size_t		 len;
	cJSON		*args;

	if (transport_http_guard(c, TOOLSET_RUNTIME) != 0)
		return;
	if ((slash = strchr(p, '/')) == NULL || (len = slash - p) == 0 ||
	    len >= sizeof id) {
		transport_http_plain(c, 404, NULL);
		return;
	}
	memcpy(id, p, len);
	id[len] = '\0';
	f = xcalloc(1, sizeof *f);
	strlcpy(f->id, id, sizeof f->id);
	if (strcmp(slash, "/health") == 0) {
		if (strcmp(req->method, "GET") != 0 &&
		    strcmp(req->method, "HEAD") != 0) {
			free(f);
			transport_http_plain(c, 405, "Allow: GET\r\n");
			return;
		}
	} else if (strncmp(slash, "/forward/", 9) == 0) {
		p = slash + 9;
		len = strcspn(p, "/");
		if (len == 0 || len >= sizeof port) {
			free(f);
			transport_http_plain(c, 404, NULL);
			return;
		}
		memcpy(port, p, len);
		port[len] = '\0';
		f->port = (int)strtonum(port, 1, 65535, &errstr);
		if (errstr != NULL || port[strspn(port, "0123456789")] != '\0') {
			free(f);
			transport_http_plain(c, 404, NULL);
			return;
		}
		f->forward = 1;
		/* The rest of the target, query included, from the raw one. */
		p = strstr(req->target, "/forward/") + 9;
		p += strspn(p, "0123456789");
		if (*p == '/')
			f->target = xstrdup(p);
		else
			xasprintf(&f->target, "/%s", p);
	} else {
		free(f);
		transport_http_plain(c, 404, NULL);
		return;
	}
	f->c = c;
	f->cid = transport_http_id(c);
	f->pending = 1;
	transport_http_on_done(c, forward_done, f);
	transport_http_hold(c);
	/* The door answers another tenant's sandbox as an unknown one. */
	args = cJSON_CreateObject();
	cJSON_AddStringToObject(args, "sandbox_id", id);
	op_call_start("sandbox_endpoint", args, TOOLSET_RUNTIME,
	    transport_http_tenant(c), OP_CALL_HIDDEN, forward_endpoint_cb, f);
	cJSON_Delete(args);
}
