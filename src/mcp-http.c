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
 * /mcp: MCP's streamable HTTP transport, on the HTTP server of
 * transport-http.c. A POST carries JSON-RPC; in the 2025 revisions it
 * belongs to an MCP session (Mcp-Session-Id, made by initialize, ended
 * by DELETE or after session-idle), in later ones it stands alone, its
 * routing headers checked against its body. A call that has not answered
 * within HTTP_SSE_AFTER_MS answers as an event stream; in a 2025-era
 * session the stream's events are kept (within sse-resume-max) so that a
 * client that lost the connection resumes it with GET and Last-Event-ID.
 *
 * Sessions count for their API key (with no keys, their address): a key
 * holds max-sessions-per-key of them, past which its least recently used
 * idle one ends; the server holds max-sessions.
 */

#include "config.h"

#include <sys/socket.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "http.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "transport-http.h"

#define HTTP_SESSION_BUCKETS	256
#define HTTP_SESSION_SWEEP	60	/* seconds between sweeps */
#define HTTP_SSE_AFTER_MS	1000	/* a call answers as JSON within */

/*
 * A call's answer as an SSE stream: switched to when the call has not
 * answered within HTTP_SSE_AFTER_MS. In a 2025-era session its events
 * carry ids ("stream-event") and are kept until the stream is delivered,
 * so that a client that lost the connection can resume it with GET and
 * Last-Event-ID; the call runs on meanwhile. Without a session the
 * stream has no ids and ends with its connection.
 */
struct http_sse_event {
	unsigned int			 seq;
	size_t				 len;
	char				*text;	/* "id: ...\ndata: ...\n\n" */
	TAILQ_ENTRY(http_sse_event)	 entry;
};
TAILQ_HEAD(http_sse_events, http_sse_event);

struct http_stream {
	unsigned int			 id;	/* within its session */
	unsigned int			 seq;	/* of the last event */
	struct http_session		*session; /* NULL: not resumable */
	struct http_conn		*c;	/* the connection it is on */
	struct mcp_reply		*reply;	/* while the call runs */
	int				 done;	/* the answer is out */
	int				 unkept; /* over sse-resume-max */
	size_t				 kept;	/* bytes of events */
	struct http_sse_events		 events;
	TAILQ_ENTRY(http_stream)	 entry;
};
TAILQ_HEAD(http_streams, http_stream);

struct http_session {
	char				 id[33];
	struct mcp_session		*mcp;
	const struct cfg_apikey		*key;
	uint64_t			 last_ms;
	LIST_ENTRY(http_session)	 entry;
	struct http_client		*owner;	/* key, or address */
	int				 listed; /* in the table */
	TAILQ_ENTRY(http_session)	 owner_entry;
	struct http_streams		 streams; /* resumable */
	unsigned int			 next_stream;
	size_t				 kept;	/* bytes of their events */
};
LIST_HEAD(http_sessions, http_session);

static struct {
	struct http_sessions	 sessions[HTTP_SESSION_BUCKETS];
	unsigned int		 nsessions;
	struct event		*sweep;
} mcp_http;

static struct http_sessions	*mcp_http_bucket(const char *);
static struct http_session	*mcp_http_session_find(const char *);
static void	mcp_http_session_free(struct http_session *, const char *);
static void	mcp_http_sweep_cb(evutil_socket_t, short, void *);
static void	mcp_http_request(struct http_conn *, const char *);
static void	mcp_http_reply_cb(struct mcp_reply *, cJSON *, void *);
static void	mcp_http_sse_arm(struct http_conn *);
static struct http_session	*mcp_http_sse_session(struct http_conn *);
static void	mcp_http_sse_write(struct http_conn *, const char *, size_t);
static void	mcp_http_sse_head(struct http_conn *);
static void	mcp_http_sse_keepalive(struct http_conn *);
static void	mcp_http_sse_end(struct http_conn *);
static void	mcp_http_stream_unkeep(struct http_stream *);
static void	mcp_http_stream_free(struct http_stream *);
static void	mcp_http_stream_keep(struct http_stream *, char *, size_t);
static void	mcp_http_stream_event(struct http_stream *, cJSON *);
static void	mcp_http_stream_reply_cb(struct mcp_reply *, cJSON *, void *);
static void	mcp_http_push(cJSON *, void *);
static void	mcp_http_sse_start(struct http_conn *);
static void	mcp_http_stream_detach(struct http_conn *);
static void	mcp_http_stream_forget(struct http_session *);
static void	mcp_http_sse_resume(struct http_conn *);
static void	mcp_http_delete(struct http_conn *, struct http_session *);
static int	mcp_http_modern_version(struct http_conn *);
static const char	*mcp_http_single(struct http_conn *, const char *);
static int	mcp_http_header_decode(const char *, char **, size_t *);
static char	*mcp_http_header_match(struct http_conn *, const char *,
		    const cJSON *, int, int);
static cJSON	*mcp_http_modern_check(const cJSON *, const char *, void *);
static void	mcp_http_modern_reply_cb(struct mcp_reply *, cJSON *, void *);
static void	mcp_http_modern(struct http_conn *, const char *, size_t);
static struct http_client	*mcp_http_session_admit(struct http_conn *);
static void	mcp_http_body_done(struct http_conn *, void *);
static void	mcp_http_slow(struct http_conn *);
static void	mcp_http_written(struct http_conn *);
static void	mcp_http_closed(struct http_conn *);
static void	mcp_http_stop(void);

static const struct transport_http_call mcp_http_call = {
	.slow = mcp_http_slow,
	.keepalive = mcp_http_sse_keepalive,
	.written = mcp_http_written,
	.closed = mcp_http_closed,
};

/* The session table, hashed by the first two hex digits of the id. */
static struct http_sessions *
mcp_http_bucket(const char *id)
{
	unsigned int	h = 0;
	size_t		i;

	for (i = 0; id[i] != '\0' && i < 4; i++)
		h = h * 31 + (unsigned char)id[i];
	return (&mcp_http.sessions[h % HTTP_SESSION_BUCKETS]);
}

static struct http_session *
mcp_http_session_find(const char *id)
{
	struct http_session	*s;

	if (strlen(id) != 32)
		return (NULL);
	LIST_FOREACH(s, mcp_http_bucket(id), entry) {
		if (strcmp(s->id, id) == 0)
			return (s);
	}
	return (NULL);
}

static void
mcp_http_session_free(struct http_session *s, const char *reason)
{
	log_debug("http session %.8s ended reason=%s", s->id, reason);
	mcp_http_stream_forget(s);
	if (s->listed)
		TAILQ_REMOVE(&s->owner->sessions, s, owner_entry);
	s->owner->nsessions--;
	transport_http_client_put(s->owner);
	mcp_session_free(s->mcp);
	free(s);
}

/* Drop sessions idle longer than the configured time. */
static void
mcp_http_sweep_cb(evutil_socket_t fd, short events, void *arg)
{
	struct http_session	*s, *s1;
	uint64_t		 now = now_ms(), idle;
	int			 i;

	idle = cfg_limit(LIMIT_SESSION_IDLE) * 1000ULL;
	for (i = 0; i < HTTP_SESSION_BUCKETS; i++) {
		LIST_FOREACH_SAFE(s, &mcp_http.sessions[i], entry, s1) {
			if (now - s->last_ms < idle ||
			    mcp_session_pending(s->mcp) != 0)
				continue;
			LIST_REMOVE(s, entry);
			mcp_http.nsessions--;
			mcp_http_session_free(s, "expired");
		}
	}
}

/* /mcp: MCP's streamable HTTP transport. */
static void
mcp_http_request(struct http_conn *c, const char *path)
{
	struct http_msg	*req = c->req;
	const char	*origin, *ct;
	char		 vis[128];

	c->call = &mcp_http_call;

	if (strcmp(req->method, "OPTIONS") == 0) {
		transport_http_options(c);
		return;
	}

	origin = http_msg_header(req, "Origin");
	if (transport_http_same_origin(c)) {
		log_info("http client %u refused: /mcp from a page of this"
		    " server (Origin \"%s\") %s", c->id, util_log_safe(origin !=
		    NULL ? origin : "", vis, sizeof vis),
		    transport_http_who(c));
		transport_http_refuse(c, 403, -32001, NULL, "forbidden: pages"
		    " served through the forward route may not call /mcp");
		return;
	}
	if (origin != NULL && !transport_http_origin_ok(c, origin)) {
		transport_http_origin_refuse(c, "Origin", origin);
		return;
	}
	if (transport_http_auth(c, 0) != 0)
		return;

	if (strcmp(req->method, "POST") != 0 && mcp_http_modern_version(c)) {
		transport_http_refuse(c, 405, JSONRPC_INVALID_REQUEST,
		    "Allow: POST\r\n", "method not allowed: in protocol"
		    " version %.32s /mcp takes POST only",
		    http_msg_header(req, "MCP-Protocol-Version"));
		return;
	}
	/* (A later revision's GET got 405 above: no resumption there.) */
	if (strcmp(req->method, "GET") == 0 &&
	    http_msg_header(req, "Last-Event-ID") != NULL) {
		mcp_http_sse_resume(c);
		return;
	}
	if (strcmp(req->method, "DELETE") == 0 ||
	    strcmp(req->method, "POST") == 0) {
		if (strcmp(req->method, "DELETE") == 0 && (req->chunked ||
		    req->content_length > 0)) {
			transport_http_plain(c, 400, NULL);
			return;
		}
	} else {
		transport_http_refuse(c, 405, JSONRPC_INVALID_REQUEST,
		    "Allow: POST, DELETE\r\n", "method not allowed: /mcp takes"
		    " POST and DELETE (this server pushes nothing unsolicited)");
		return;
	}
	if (strcmp(req->method, "POST") == 0) {
		ct = http_msg_header(req, "Content-Type");
		if (ct == NULL || strncasecmp(ct, "application/json", 16) != 0 ||
		    (ct[16] != '\0' && ct[16] != ';' && ct[16] != ' ')) {
			transport_http_refuse(c, 415, JSONRPC_INVALID_REQUEST,
			    NULL, "unsupported media type: POST /mcp needs"
			    " Content-Type: application/json");
			return;
		}
		if (!transport_http_accepts_json(c)) {
			transport_http_refuse(c, 406, JSONRPC_INVALID_REQUEST,
			    NULL, "not acceptable: the client must accept"
			    " application/json");
			return;
		}
		if (!req->chunked && req->content_length < 0 &&
		    req->state == HTTP_MSG_DONE) {
			transport_http_refuse(c, 400, JSONRPC_INVALID_REQUEST,
			    NULL, "bad request: the body is empty");
			return;
		}
	}
	transport_http_read_body(c, mcp_http_body_done, NULL);
}

/* The protocol layer has answered a POST. */
static void
mcp_http_reply_cb(struct mcp_reply *reply, cJSON *response, void *arg)
{
	struct http_conn	*c = arg;
	struct http_session	*s;
	char			 extra[128];

	c->reply = NULL;
	extra[0] = '\0';
	if ((s = c->pending_session) != NULL) {
		c->pending_session = NULL;
		if (mcp_session_initialized(s->mcp)) {
			LIST_INSERT_HEAD(mcp_http_bucket(s->id), s, entry);
			mcp_http.nsessions++;
			TAILQ_INSERT_TAIL(&s->owner->sessions, s, owner_entry);
			s->listed = 1;
			snprintf(extra, sizeof extra, "Mcp-Session-Id: %s\r\n",
			    s->id);
			log_debug("http session %.8s created key=%s peer=%s",
			    s->id, s->key != NULL ? s->key->name : "-",
			    c->peer);
		} else
			mcp_http_session_free(s, "initialize failed");
	}
	if (response == NULL)
		transport_http_respond(c, 202, NULL, NULL, 0,
		    extra[0] != '\0' ? extra : NULL);
	else
		transport_http_json(c, 200, response,
		    extra[0] != '\0' ? extra : NULL);
}

/*
 * A call is under way on a POST that accepts an event stream: give it
 * HTTP_SSE_AFTER_MS to answer as JSON, on the connection's own timer.
 */
static void
mcp_http_sse_arm(struct http_conn *c)
{
	struct timeval	 tv = { HTTP_SSE_AFTER_MS / 1000,
			    (HTTP_SSE_AFTER_MS % 1000) * 1000 };
	const char	*a;

	if (c->reply == NULL || c->state != HTTP_CONN_HANDLING ||
	    (a = http_msg_header(c->req, "Accept")) == NULL ||
	    !http_header_has_token(a, "text/event-stream"))
		return;
	evtimer_add(c->timer, &tv);
}

/*
 * The 2025-era session a request belongs to, when its streams are
 * resumable there; NULL otherwise.
 */
static struct http_session *
mcp_http_sse_session(struct http_conn *c)
{
	struct http_session	*s;
	const char		*sid, *v;

	if (c->modern ||
	    (sid = http_msg_header(c->req, "Mcp-Session-Id")) == NULL ||
	    (s = mcp_http_session_find(sid)) == NULL ||
	    s->key != c->key || !s->listed)
		return (NULL);
	if ((v = mcp_session_version(s->mcp)) == NULL ||
	    strncmp(v, "2025-", 5) != 0)
		return (NULL);
	return (s);
}

/* Bytes of the event stream's body, framed when it is chunked. */
static void
mcp_http_sse_write(struct http_conn *c, const char *text, size_t len)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);

	if (len == 0)
		return;
	if (c->chunked)
		evbuffer_add_printf(out, "%zx\r\n", len);
	evbuffer_add(out, text, len);
	if (c->chunked)
		evbuffer_add(out, "\r\n", 2);
}

/* The head of an event stream; the connection then carries it. */
static void
mcp_http_sse_head(struct http_conn *c)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);

	c->chunked = c->keepalive && c->req->minor >= 1;
	if (!c->chunked)
		c->keepalive = 0;
	evbuffer_add_printf(out, "HTTP/1.1 200 %s\r\n"
	    "Content-Type: text/event-stream\r\n"
	    "Cache-Control: no-store\r\n"
	    "X-Accel-Buffering: no\r\n%s", http_status_text(200),
	    c->chunked ? "Transfer-Encoding: chunked\r\n" :
	    "Connection: close\r\n");
	transport_http_cors(c, out);
	evbuffer_add(out, "\r\n", 2);
	metrics_http_response(200);
	log_debug("http client %u %s %.200s 200 event-stream%s%u peer=%s",
	    c->id, c->req->method, c->req->target, c->stream->session !=
	    NULL ? " stream=" : "", c->stream->id, c->peer);
	transport_http_set_state(c, HTTP_CONN_SSE);
	bufferevent_enable(c->bev, EV_WRITE);
	transport_http_arm(c, cfg_limit(LIMIT_SSE_KEEPALIVE));
}

/* An SSE comment, so that proxies and clients see the stream alive. */
static void
mcp_http_sse_keepalive(struct http_conn *c)
{
	static const char	 ka[] = ": keep-alive\n\n";

	mcp_http_sse_write(c, ka, sizeof ka - 1);
	transport_http_arm(c, cfg_limit(LIMIT_SSE_KEEPALIVE));
}

/* The stream's last event is written: end its body. */
static void
mcp_http_sse_end(struct http_conn *c)
{
	if (c->chunked)
		evbuffer_add(bufferevent_get_output(c->bev), "0\r\n\r\n", 5);
	c->raw = NULL;		/* a handler's bytes end with its answer */
	transport_http_set_state(c, HTTP_CONN_WRITING);
	bufferevent_enable(c->bev, EV_WRITE);
	transport_http_arm(c, cfg_limit(LIMIT_IDLE_TIMEOUT));
}

/* Forget the events a stream keeps for resumption. */
static void
mcp_http_stream_unkeep(struct http_stream *st)
{
	struct http_sse_event	*e;

	while ((e = TAILQ_FIRST(&st->events)) != NULL) {
		TAILQ_REMOVE(&st->events, e, entry);
		free(e->text);
		free(e);
	}
	if (st->session != NULL)
		st->session->kept -= st->kept;
	st->kept = 0;
	st->unkept = 1;
}

static void
mcp_http_stream_free(struct http_stream *st)
{
	mcp_http_stream_unkeep(st);
	if (st->session != NULL)
		TAILQ_REMOVE(&st->session->streams, st, entry);
	if (st->c != NULL)
		st->c->stream = NULL;
	if (st->reply != NULL)
		mcp_reply_detach(st->reply);	/* its answer is dropped */
	free(st);
}

/*
 * Keep an event of a session's stream within sse-resume-max for the
 * session: answers nobody has resumed go first, oldest first; when that
 * is not enough, this stream is no longer resumable.
 */
static void
mcp_http_stream_keep(struct http_stream *st, char *text, size_t len)
{
	struct http_session	*s = st->session;
	struct http_stream	*old, *old1;
	struct http_sse_event	*e;
	size_t			 max = (size_t)cfg_limit(LIMIT_SSE_RESUME_MAX);

	if (s == NULL || st->unkept) {
		free(text);
		return;
	}
	TAILQ_FOREACH_SAFE(old, &s->streams, entry, old1) {
		if (s->kept + len <= max)
			break;
		if (old != st && old->done && old->c == NULL) {
			log_info("http session %.8s stream %u dropped"
			    " unresumed: the limit sse-resume-max", s->id,
			    old->id);
			mcp_http_stream_free(old);
		}
	}
	if (s->kept + len > max) {
		log_info("http session %.8s stream %u is not resumable: the"
		    " limit sse-resume-max", s->id, st->id);
		mcp_http_stream_unkeep(st);
		free(text);
		return;
	}
	e = xcalloc(1, sizeof *e);
	e->seq = st->seq;
	e->text = text;
	e->len = len;
	TAILQ_INSERT_TAIL(&st->events, e, entry);
	st->kept += len;
	s->kept += len;
}

/*
 * One event on a stream (a JSON-RPC message, or NULL for the empty one
 * that gives a client an id to resume from): written when the stream has
 * a connection, kept when it is resumable.
 */
static void
mcp_http_stream_event(struct http_stream *st, cJSON *msg)
{
	char	*json, *text;
	int	 len;

	json = msg != NULL ? util_json_print(msg) : NULL;
	if (st->session != NULL)
		len = xasprintf(&text, "id: %u-%u\ndata: %s\n\n", st->id,
		    ++st->seq, json != NULL ? json : "");
	else
		len = xasprintf(&text, "data: %s\n\n", json);
	free(json);
	if (st->c != NULL)
		mcp_http_sse_write(st->c, text, (size_t)len);
	mcp_http_stream_keep(st, text, (size_t)len);
}

/* The call of a stream has answered (NULL: no answer, it was cancelled). */
static void
mcp_http_stream_reply_cb(struct mcp_reply *reply, cJSON *response,
    void *arg)
{
	struct http_stream	*st = arg;

	st->reply = NULL;
	if (response != NULL)
		mcp_http_stream_event(st, response);
	st->done = 1;
	if (st->c != NULL)
		mcp_http_sse_end(st->c);
	else if (st->session == NULL || st->unkept)
		mcp_http_stream_free(st);
}

/*
 * A notification for a session: it goes on the first of its streams that
 * is open for a call still running, and is dropped when none is (nothing
 * is pushed unsolicited).
 */
static void
mcp_http_push(cJSON *msg, void *arg)
{
	struct http_session	*s = arg;
	struct http_stream	*st;

	TAILQ_FOREACH(st, &s->streams, entry) {
		if (st->c != NULL && !st->done) {
			mcp_http_stream_event(st, msg);
			return;
		}
	}
	log_debug("http session %.8s: a notification dropped, no stream"
	    " open", s->id);
}

/*
 * The call has not answered in time: its answer becomes an event stream,
 * which keeps the reply from here on.
 */
static void
mcp_http_sse_start(struct http_conn *c)
{
	struct http_stream	*st;
	struct http_session	*s;

	st = xcalloc(1, sizeof *st);
	TAILQ_INIT(&st->events);
	if ((s = mcp_http_sse_session(c)) != NULL) {
		st->session = s;
		st->id = ++s->next_stream;
		TAILQ_INSERT_TAIL(&s->streams, st, entry);
	}
	st->reply = c->reply;
	c->reply = NULL;
	mcp_reply_retarget(st->reply, mcp_http_stream_reply_cb, st);
	st->c = c;
	c->stream = st;
	mcp_http_sse_head(c);
	if (s != NULL) {
		mcp_http_stream_event(st, NULL);
		mcp_session_set_push(s->mcp, mcp_http_push, s);
	}
}

/*
 * The connection of a stream closes. A resumable one waits for the
 * client to come back, its call running on; any other ends, and its
 * call is told nobody waits.
 */
static void
mcp_http_stream_detach(struct http_conn *c)
{
	struct http_stream	*st = c->stream;

	c->stream = NULL;
	st->c = NULL;
	if (st->session == NULL || st->unkept)
		mcp_http_stream_free(st);
	else
		log_debug("http session %.8s stream %u detached, %s",
		    st->session->id, st->id, st->done ? "its answer kept" :
		    "its call running");
}

/*
 * A session ends: its streams are no longer resumable. One still on a
 * connection gets its answer there; the others go with their calls.
 */
static void
mcp_http_stream_forget(struct http_session *s)
{
	struct http_stream	*st;

	while ((st = TAILQ_FIRST(&s->streams)) != NULL) {
		mcp_http_stream_unkeep(st);
		TAILQ_REMOVE(&s->streams, st, entry);
		st->session = NULL;
		if (st->c == NULL)
			mcp_http_stream_free(st);
	}
}

/*
 * GET /mcp with Last-Event-ID: the rest of a 2025-era session's stream
 * that lost its connection, its answer included; only that stream's.
 */
static void
mcp_http_sse_resume(struct http_conn *c)
{
	struct http_session	*s;
	struct http_stream	*st;
	struct http_sse_event	*e;
	struct http_conn	*old;
	const char		*lei, *a, *errstr;
	char			 buf[32], *dash;
	unsigned int		 id, seq;

	transport_http_set_state(c, HTTP_CONN_HANDLING);
	evtimer_del(c->timer);
	bufferevent_setwatermark(c->bev, EV_READ, 0,
	    (size_t)cfg_limit(LIMIT_MAX_HEADER));
	if (c->req->state != HTTP_MSG_DONE) {
		c->keepalive = 0;
		transport_http_refuse(c, 400, JSONRPC_INVALID_REQUEST, NULL,
		    "bad request: GET /mcp takes no body");
		return;
	}
	if ((a = http_msg_header(c->req, "Accept")) == NULL ||
	    !http_header_has_token(a, "text/event-stream")) {
		transport_http_refuse(c, 406, JSONRPC_INVALID_REQUEST, NULL,
		    "not acceptable: resuming a stream needs Accept:"
		    " text/event-stream");
		return;
	}
	if (http_msg_header(c->req, "Mcp-Session-Id") == NULL) {
		transport_http_refuse(c, 400, JSONRPC_INVALID_REQUEST, NULL,
		    "bad request: resuming a stream needs the Mcp-Session-Id"
		    " of its session");
		return;
	}
	if ((s = mcp_http_sse_session(c)) == NULL) {
		transport_http_refuse(c, 404, -32001, NULL, "session not"
		    " found: the Mcp-Session-Id is unknown or has ended; send"
		    " initialize again");
		return;
	}
	s->last_ms = now_ms();
	lei = http_msg_header(c->req, "Last-Event-ID");
	strlcpy(buf, lei, sizeof buf);
	id = seq = 0;
	errstr = "malformed";
	if ((dash = strchr(buf, '-')) != NULL) {
		*dash++ = '\0';
		id = (unsigned int)strtonum(buf, 1, UINT_MAX, &errstr);
		if (errstr == NULL)
			seq = (unsigned int)strtonum(dash, 0, UINT_MAX,
			    &errstr);
	}
	st = NULL;
	if (errstr == NULL) {
		TAILQ_FOREACH(st, &s->streams, entry) {
			if (st->id == id)
				break;
		}
	}
	if (st == NULL || st->unkept || seq > st->seq) {
		transport_http_refuse(c, 404, JSONRPC_INVALID_REQUEST, NULL,
		    "stream not found: Last-Event-ID %.32s names no event of"
		    " a stream of this session that can be resumed (it was"
		    " delivered, dropped past sse-resume-max, or never"
		    " existed)", lei);
		return;
	}
	if ((old = st->c) != NULL) {
		/* The client has given that connection up. */
		mcp_http_stream_detach(old);
		transport_http_close(old, "stream resumed elsewhere");
	}
	st->c = c;
	c->stream = st;
	mcp_http_sse_head(c);
	log_debug("http session %.8s stream %u resumed after event %u",
	    s->id, st->id, seq);
	TAILQ_FOREACH(e, &st->events, entry) {
		if (e->seq > seq)
			mcp_http_sse_write(c, e->text, e->len);
	}
	if (st->done)
		mcp_http_sse_end(c);
}

/* End an MCP session on DELETE /mcp. */
static void
mcp_http_delete(struct http_conn *c, struct http_session *s)
{
	LIST_REMOVE(s, entry);
	mcp_http.nsessions--;
	mcp_http_session_free(s, "deleted by the client");
	transport_http_respond(c, 204, NULL, NULL, 0, NULL);
}

/*
 * Whether a request names, in MCP-Protocol-Version, a revision that is
 * not one of the 2025 ones reached through initialize: it is served in
 * the stateless era (and refused there when we do not speak it).
 */
static int
mcp_http_modern_version(struct http_conn *c)
{
	const char	*pv = http_msg_header(c->req, "MCP-Protocol-Version");

	return (pv != NULL && !mcp_version_supported(pv));
}

/* The value of a header that may appear once; "" when repeated. */
static const char *
mcp_http_single(struct http_conn *c, const char *name)
{
	struct http_header	*h;
	const char		*v = NULL;

	TAILQ_FOREACH(h, &c->req->headers, entry) {
		if (strcasecmp(h->name, name) != 0)
			continue;
		if (v != NULL)
			return ("");
		v = h->value;
	}
	return (v);
}

/*
 * Decode a header value that may use the Base64 form
 * (=?base64?DATA?=, strict: padded, standard alphabet) into *out (NUL
 * ended, to be freed). A plain value must be visible ASCII or blank.
 * Returns 0, or -1 when the value is malformed.
 */
static int
mcp_http_header_decode(const char *v, char **out, size_t *outlen)
{
	static const char	 alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const char		*d, *p;
	size_t			 len, n, i, pad;
	unsigned char		*o;
	unsigned int		 acc;
	int			 k;

	for (p = v; *p != '\0'; p++) {
		if ((unsigned char)*p >= 0x7f)
			return (-1);
	}
	len = strlen(v);
	if (len < 11 || strncmp(v, "=?base64?", 9) != 0 ||
	    strcmp(v + len - 2, "?=") != 0) {
		*out = xstrdup(v);
		*outlen = len;
		return (0);
	}
	d = v + 9;
	n = len - 11;
	if (n == 0 || n % 4 != 0)
		return (-1);
	pad = d[n - 1] == '=' ? (d[n - 2] == '=' ? 2 : 1) : 0;
	o = xmalloc(n / 4 * 3 + 1);
	*outlen = 0;
	for (i = 0; i < n; i += 4) {
		acc = 0;
		for (k = 0; k < 4; k++) {
			if (i + k >= n - pad) {
				acc <<= 6;
				continue;
			}
			if (d[i + k] == '\0' || (p = strchr(alphabet,
			    d[i + k])) == NULL) {
				free(o);
				return (-1);
			}
			acc = (acc << 6) | (unsigned int)(p - alphabet);
		}
		o[(*outlen)++] = (acc >> 16) & 0xff;
		if (i + 4 < n || pad < 2)
			o[(*outlen)++] = (acc >> 8) & 0xff;
		if (i + 4 < n || pad < 1)
			o[(*outlen)++] = acc & 0xff;
	}
	o[*outlen] = '\0';
	*out = (char *)o;
	return (0);
}

/*
 * Compare a request header (after OWS trimming, which the parser does,
 * and Base64 decoding where allowed) with the body value it mirrors.
 * Returns NULL when they agree, else why not.
 */
static char *
mcp_http_header_match(struct http_conn *c, const char *name,
    const cJSON *body, int decode, int required)
{
	const char	*v, *want = NULL;
	char		*got, *end, *why = NULL, num[64];
	size_t		 len;
	double		 d;

	v = mcp_http_single(c, name);
	if (v != NULL && *v == '\0') {
		xasprintf(&why, "the %s header is empty or repeated", name);
		return (why);
	}
	if (body == NULL || cJSON_IsNull(body)) {
		if (v != NULL)
			xasprintf(&why, "the %s header is sent but the body"
			    " has no value for it", name);
		return (why);
	}
	if (cJSON_IsString(body))
		want = body->valuestring;
	else if (cJSON_IsBool(body))
		want = cJSON_IsTrue(body) ? "true" : "false";
	else if (cJSON_IsNumber(body)) {
		snprintf(num, sizeof num, "%.17g", body->valuedouble);
		want = num;
	} else
		return (NULL);	/* not mirrored; the arguments check says */
	if (v == NULL) {
		if (required || decode)
			xasprintf(&why, "the %s header is required", name);
		return (why);
	}
	if (decode) {
		if (mcp_http_header_decode(v, &got, &len) != 0) {
			xasprintf(&why, "the %s header value is malformed",
			    name);
			return (why);
		}
	} else {
		got = xstrdup(v);
		len = strlen(v);
	}
	/* Numbers compare as numbers (42.0 is 42). */
	if (cJSON_IsNumber(body) && len > 0 && len < 32) {
		d = strtod(got, &end);
		if (*end == '\0' && d == body->valuedouble) {
			free(got);
			return (NULL);
		}
	}
	if (len != strlen(want) || strcmp(got, want) != 0)
		xasprintf(&why, "the %s header value does not match the"
		    " body's %.100s", name, want);
	free(got);
	return (why);
}

/*
 * The stateless era's header checks, run by the protocol layer once the
 * request's _meta is known good: MCP-Protocol-Version, Mcp-Method and
 * Mcp-Name must mirror the body, and so must the Mcp-Param-* header of
 * each argument the tool's schema declares with x-mcp-header. Returns a
 * HeaderMismatch error, or NULL.
 */
static cJSON *
mcp_http_modern_check(const cJSON *msg, const char *version, void *arg)
{
	struct http_conn		*c = arg;
	const cJSON			*id, *method, *params, *name, *args;
	const struct op_entry		*oe;
	const struct op_arg		*a;
	cJSON				*err, *vj;
	char				*why = NULL, hname[128];
	int				 named;

	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	vj = cJSON_CreateString(version);
	why = mcp_http_header_match(c, "MCP-Protocol-Version", vj, 0, 1);
	cJSON_Delete(vj);
	if (why == NULL)
		why = mcp_http_header_match(c, "Mcp-Method", method, 0, 1);
	named = strcmp(method->valuestring, "tools/call") == 0 ||
	    strcmp(method->valuestring, "prompts/get") == 0 ||
	    strcmp(method->valuestring, "resources/read") == 0;
	name = cJSON_GetObjectItemCaseSensitive(params,
	    strcmp(method->valuestring, "resources/read") == 0 ? "uri" :
	    "name");
	if (why == NULL && named)
		why = mcp_http_header_match(c, "Mcp-Name", name, 1, 1);
	if (why == NULL && strcmp(method->valuestring, "tools/call") == 0 &&
	    cJSON_IsString(name) && (oe = op_find(name->valuestring,
	    transport_http_sets(c))) != NULL) {
		args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
		for (a = oe->args; why == NULL && a->name != NULL; a++) {
			if (op_arg_header(a) == NULL)
				continue;
			snprintf(hname, sizeof hname, "Mcp-Param-%s",
			    op_arg_header(a));
			why = mcp_http_header_match(c, hname,
			    cJSON_IsObject(args) ?
			    cJSON_GetObjectItemCaseSensitive(args, a->name) :
			    NULL, 1, 0);
		}
	}
	if (why == NULL)
		return (NULL);
	log_debug("http client %u header mismatch: %s", c->id, why);
	err = jsonrpc_error(id, MCP_ERR_HEADER_MISMATCH, "header mismatch:"
	    " %s", why);
	free(why);
	return (err);
}

/*
 * The protocol layer has answered a stateless-era POST. The status
 * follows the error: 404 for a method we do not have, 400 for a request
 * we refuse as malformed, mismatched or of a version we do not speak.
 */
static void
mcp_http_modern_reply_cb(struct mcp_reply *reply, cJSON *response,
    void *arg)
{
	struct http_conn	*c = arg;
	cJSON			*err, *code;
	int			 status = 200;

	c->reply = NULL;
	if (response == NULL) {
		transport_http_respond(c, 202, NULL, NULL, 0, NULL);
		return;
	}
	err = cJSON_GetObjectItemCaseSensitive(response, "error");
	code = cJSON_GetObjectItemCaseSensitive(err, "code");
	if (cJSON_IsNumber(code)) {
		switch (code->valueint) {
		case JSONRPC_METHOD_NOT_FOUND:
			status = 404;
			break;
		case JSONRPC_PARSE_ERROR:
		case JSONRPC_INVALID_REQUEST:
		case JSONRPC_INVALID_PARAMS:
		case MCP_ERR_HEADER_MISMATCH:
		case MCP_ERR_MISSING_CAPABILITY:
		case MCP_ERR_UNSUPPORTED_VERSION:
			status = 400;
			break;
		}
	}
	transport_http_json(c, status, response, NULL);
}

/*
 * A POST of the stateless era (2026-07-28): no MCP session and no
 * Mcp-Session-Id. The API key, its grants and its tenant were checked
 * for this very request (transport_http_auth); the protocol layer checks
 * _meta and, through mcp_http_modern_check, the headers.
 */
static void
mcp_http_modern(struct http_conn *c, const char *body, size_t len)
{
	c->modern = 1;
	telemetry_client(c->client_addr);
	c->reply = mcp_receive_stateless(MCP_TRANSPORT_HTTP,
	    transport_http_sets(c), c->key != NULL ? c->key->name : NULL,
	    auth_tenant(c->key), body, len, mcp_http_modern_check, c,
	    mcp_http_modern_reply_cb, c);
	telemetry_client(NULL);
	mcp_http_sse_arm(c);
}

/*
 * Count one more MCP session for the request's key (with no key
 * configured, for its client address). Past max-sessions-per-key the
 * least recently used idle session of that same key ends; when none is
 * idle, or the server holds max-sessions, the request gets 503. Returns
 * the client the new session counts for, or NULL once answered.
 */
static struct http_client *
mcp_http_session_admit(struct http_conn *c)
{
	struct http_client	*owner;
	struct http_session	*s;
	char			*name;
	unsigned int		 cap, max;

	if (c->key != NULL) {
		xasprintf(&name, "k%s", c->key->name);
		owner = transport_http_client_get(name);
		free(name);
	} else if ((owner = c->client) == NULL)
		owner = transport_http_client_get(c->addr_name);
	owner->nsessions++;	/* counted first: it is kept while we look */
	cap = (unsigned int)cfg_limit(LIMIT_MAX_SESSIONS_PER_KEY);
	if (owner->nsessions > cap) {
		TAILQ_FOREACH(s, &owner->sessions, owner_entry) {
			if (mcp_session_pending(s->mcp) == 0)
				break;
		}
		if (s == NULL) {
			owner->nsessions--;
			transport_http_refuse(c, 503, JSONRPC_INTERNAL_ERROR,
			    "Retry-After: " HTTP_RETRY_AFTER "\r\n",
			    "server busy: the %s %s has %u MCP sessions open,"
			    " the limit max-sessions-per-key, and each has a"
			    " call running; end one with DELETE /mcp or try"
			    " again later", c->key != NULL ? "API key" :
			    "address", transport_http_client_label(owner),
			    owner->nsessions);
			transport_http_client_put(owner);
			return (NULL);
		}
		LIST_REMOVE(s, entry);
		mcp_http.nsessions--;
		mcp_http_session_free(s, "max-sessions-per-key reached,"
		    " least recently used");
	}
	max = (unsigned int)cfg_limit(LIMIT_MAX_SESSIONS);
	if (mcp_http.nsessions >= max)
		mcp_http_sweep_cb(-1, 0, NULL);
	if (mcp_http.nsessions >= max) {
		owner->nsessions--;
		transport_http_refuse(c, 503, JSONRPC_INTERNAL_ERROR,
		    "Retry-After: 60\r\n", "server busy: the limit of %lld"
		    " open sessions is reached", cfg_limit(LIMIT_MAX_SESSIONS));
		transport_http_client_put(owner);
		return (NULL);
	}
	return (owner);
}

/* The whole request is in: hand it to the protocol layer. */
static void
mcp_http_body_done(struct http_conn *c, void *arg)
{
	struct http_msg		*req = c->req;
	struct http_session	*s = NULL;
	struct http_client	*owner;
	const char		*sid, *pv;
	const char		*body;
	size_t			 len;

	transport_http_set_state(c, HTTP_CONN_HANDLING);
	evtimer_del(c->timer);
	/* Bound what a pipelining client can queue meanwhile. */
	bufferevent_setwatermark(c->bev, EV_READ, 0,
	    (size_t)cfg_limit(LIMIT_MAX_HEADER));

	sid = http_msg_header(req, "Mcp-Session-Id");
	len = evbuffer_get_length(req->body);
	body = len != 0 ? (const char *)evbuffer_pullup(req->body, len) : "";
	if (strcmp(req->method, "POST") == 0 &&
	    (mcp_http_modern_version(c) || (sid == NULL &&
	    http_msg_header(req, "MCP-Protocol-Version") == NULL &&
	    mcp_message_era(body, len) == MCP_MSG_MODERN))) {
		mcp_http_modern(c, body, len);
		return;
	}
	if (sid != NULL) {
		s = mcp_http_session_find(sid);
		if (s == NULL || s->key != c->key) {
			transport_http_refuse(c, 404, -32001, NULL,
			    "session not found: the Mcp-Session-Id is unknown"
			    " or has ended; send initialize again");
			return;
		}
		s->last_ms = now_ms();
		TAILQ_REMOVE(&s->owner->sessions, s, owner_entry);
		TAILQ_INSERT_TAIL(&s->owner->sessions, s, owner_entry);
	}
	if (strcmp(req->method, "DELETE") == 0) {
		if (s == NULL) {
			transport_http_refuse(c, 400, JSONRPC_INVALID_REQUEST,
			    NULL, "bad request: DELETE /mcp needs an"
			    " Mcp-Session-Id header");
			return;
		}
		mcp_http_delete(c, s);
		return;
	}

	if (s == NULL) {
		if (!mcp_message_is_initialize(body, len)) {
			transport_http_refuse(c, 400, JSONRPC_INVALID_REQUEST,
			    NULL, "bad request: an Mcp-Session-Id header is"
			    " required (send initialize first to get one)");
			return;
		}
		if ((owner = mcp_http_session_admit(c)) == NULL)
			return;
		s = xcalloc(1, sizeof *s);
		TAILQ_INIT(&s->streams);
		s->owner = owner;
		util_random_hex(s->id, 32);
		s->key = c->key;
		s->last_ms = now_ms();
		s->mcp = mcp_session_new(MCP_TRANSPORT_HTTP,
		    transport_http_sets(c), c->key != NULL ? c->key->name :
		    NULL, auth_tenant(c->key));
		c->pending_session = s;
	} else if ((pv = http_msg_header(req, "MCP-Protocol-Version")) !=
	    NULL && !mcp_version_supported(pv)) {
		transport_http_refuse(c, 400, JSONRPC_INVALID_REQUEST, NULL,
		    "bad request: unsupported MCP-Protocol-Version %.32s", pv);
		return;
	}
	telemetry_client(c->client_addr);
	c->reply = mcp_receive(s->mcp, body, len, mcp_http_reply_cb, c);
	telemetry_client(NULL);
	mcp_http_sse_arm(c);
}

/* The call has not answered in time: its answer becomes a stream. */
static void
mcp_http_slow(struct http_conn *c)
{
	if (c->reply != NULL)
		mcp_http_sse_start(c);
}

/* A response is written: a stream's last event is delivered. */
static void
mcp_http_written(struct http_conn *c)
{
	if (c->stream != NULL)
		mcp_http_stream_free(c->stream);
}

/* The connection goes: its call, its stream, a session being made. */
static void
mcp_http_closed(struct http_conn *c)
{
	if (c->reply != NULL) {
		mcp_reply_detach(c->reply);
		c->reply = NULL;
	}
	if (c->stream != NULL)
		mcp_http_stream_detach(c);
	if (c->pending_session != NULL) {
		mcp_http_session_free(c->pending_session,
		    "client closed during initialize");
		c->pending_session = NULL;
	}
}

/*
 * The configuration was reloaded (the old one is still there): a session
 * opened with a key that is no longer the same one ends, and so does one
 * opened with no key once keys are required. Its streams have ended with
 * their connections already (transport_http_reload).
 */
void
mcp_http_reload(void)
{
	struct http_session		*s, *s1;
	const struct cfg_apikey		*k;
	int				 i;

	for (i = 0; i < HTTP_SESSION_BUCKETS; i++) {
		LIST_FOREACH_SAFE(s, &mcp_http.sessions[i], entry, s1) {
			if (s->key != NULL &&
			    (k = auth_key_again(s->key)) != NULL) {
				s->key = k;
				continue;
			}
			if (s->key == NULL && TAILQ_EMPTY(&cfg->apikeys))
				continue;
			log_info("http session %.8s ended: %s", s->id,
			    s->key != NULL ? "its API key was removed or"
			    " changed" : "API keys are now required");
			LIST_REMOVE(s, entry);
			mcp_http.nsessions--;
			mcp_http_session_free(s, "key removed");
		}
	}
}

/* The listener stops: every session goes. */
static void
mcp_http_stop(void)
{
	struct http_session	*s;
	int			 i;

	for (i = 0; i < HTTP_SESSION_BUCKETS; i++) {
		while ((s = LIST_FIRST(&mcp_http.sessions[i])) != NULL) {
			LIST_REMOVE(s, entry);
			mcp_http_session_free(s, "shutdown");
		}
	}
	mcp_http.nsessions = 0;
	if (mcp_http.sweep != NULL) {
		event_free(mcp_http.sweep);
		mcp_http.sweep = NULL;
	}
}

/* Serve /mcp on the HTTP listener, sweeping idle sessions. */
void
mcp_http_init(void)
{
	struct timeval	tv = { HTTP_SESSION_SWEEP, 0 };
	int		i;

	for (i = 0; i < HTTP_SESSION_BUCKETS; i++)
		LIST_INIT(&mcp_http.sessions[i]);
	if ((mcp_http.sweep = event_new(ev_base, -1, EV_PERSIST,
	    mcp_http_sweep_cb, NULL)) == NULL)
		fatalx("%s: event_new", __func__);
	evtimer_add(mcp_http.sweep, &tv);
	transport_http_register("/mcp", mcp_http_request, NULL,
	    mcp_http_stop);
}
