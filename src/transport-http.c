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
 * The HTTP server: GET /health answers without auth; /mcp (mcp-http.c),
 * /v1/ (rest.c) and /sandboxes/ (forward.c) are handlers registered with
 * it, which it gives a request once its head has passed the Host,
 * forwarding and limit checks. Our own HTTP/1.1 server on
 * bufferevents rather than evhttp: libevent 2.1's evhttp answers an
 * oversized header block with 413 instead of 431, has one timeout for
 * every phase, no cap on open connections and no streaming request
 * bodies, all of which we need.
 *
 * Each connection is a small state machine: HEAD (header timeout; idle
 * timeout between requests), BODY (body timeout), HANDLING (the protocol
 * layer has the request; reading is bounded by a watermark), WRITING (the
 * response drains; a client that does not read times out), SSE (an
 * answer streamed as events), TUNNEL (a handler has the bytes). Limits
 * and refusals answer once with a status and close that connection
 * alone.
 *
 * Clients are counted by address (IPv6 by /64; behind a trusted proxy,
 * the address it forwards for) and by API key: an address may hold
 * max-connections-per-address connections, a key (with no keys, an
 * address) max-sessions-per-key MCP sessions, past which its least
 * recently used idle one ends. When max-connections are open, a newcomer
 * evicts the connection that has waited longest without ever passing
 * authentication, so a crowd of slow or idle strangers cannot keep the
 * listener shut.
 */

#include "config.h"

#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "http.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "transport-http.h"

#define HTTP_CLIENT_BUCKETS	1024
#define HTTP_ACCEPT_RETRY	1
#define HTTP_LINGER		5	/* s a lingering client may pause */
#define HTTP_LINGER_MAX		30	/* s it may linger in all */
#define HTTP_TUNNEL_HIGH	(1024 * 1024)
#define HTTP_TUNNEL_MAX_HEAD	(64 * 1024)	/* of a forwarded answer */


static struct {
	int			 ready;
	struct evconnlistener	*listener;
	struct evconnlistener	*metrics_listener; /* /metrics, no key */
	struct event		*accept_retry;
	int			 loopback;
	int			 sets;
	char			 bound[NI_MAXHOST + NI_MAXSERV + 4];
	char			 bound_host[NI_MAXHOST];
	int			 bound_port;
	struct http_conns	 conns;
	unsigned int		 nconns;
	unsigned int		 next_id;
	struct http_conns	 evictable; /* longest waiting first */
	int			 accepting;
	int			 full_logged;
	struct http_clients	 clients[HTTP_CLIENT_BUCKETS];
	uint32_t		 client_seed;
} http;

static void	transport_http_head(struct http_conn *);
static void	transport_http_request_done(struct http_conn *);
static void	transport_http_read_cb(struct bufferevent *, void *);
static void	transport_http_evictable(struct http_conn *);
static void	transport_http_listen_update(void);
static void	transport_http_metrics(struct http_conn *, int);
static void	transport_http_accept_cb(struct evconnlistener *,
		    evutil_socket_t, struct sockaddr *, int, void *);
static void	transport_http_accept_retry_cb(evutil_socket_t, short, void *);
static void	transport_http_accept_error_cb(struct evconnlistener *,
		    void *);
static struct evconnlistener *transport_http_bind(const struct addrinfo *,
		    const char *, char **);
static int	transport_http_bound(struct evconnlistener *, char *, size_t,
		    char *, size_t, int *);
static int	transport_http_origin_ours(const char *);

int
transport_http_active(void)
{
	return (http.listener != NULL);
}

/* The address and port the listener is bound to, for sandbox records. */
int
transport_http_endpoint(const char **host, int *port)
{
	if (http.listener == NULL || http.bound_port == 0)
		return (-1);
	*host = http.bound_host;
	*port = http.bound_port;
	return (0);
}

void
transport_http_set_state(struct http_conn *c, enum http_conn_state state)
{
	static const char *names[] = { "head", "body", "handling",
	    "writing", "linger", "tunnel", "sse" };

	log_trace(TRACE_HTTP, "http client %u %s -> %s", c->id,
	    names[c->state], names[state]);
	c->state = state;
	transport_http_evictable(c);
}

/*
 * Keep the list of connections a newcomer may evict when max-connections
 * are open: those waiting for a request, or in the middle of its head,
 * that have never passed authentication, and those reading out a body
 * that was refused (a 413 already sent); the longest waiting first.
 */
static void
transport_http_evictable(struct http_conn *c)
{
	int	want = (c->state == HTTP_CONN_HEAD && !c->authed) ||
		    c->state == HTTP_CONN_LINGER;

	if (want == c->evictable)
		return;
	c->evictable = want;
	if (want)
		TAILQ_INSERT_TAIL(&http.evictable, c, evict_entry);
	else
		TAILQ_REMOVE(&http.evictable, c, evict_entry);
	transport_http_listen_update();
}

/*
 * Accept while there is room or a connection to evict; otherwise leave
 * newcomers in the kernel's queue until one of the two holds again.
 */
static void
transport_http_listen_update(void)
{
	int	want;

	if ((http.listener == NULL && http.metrics_listener == NULL) ||
	    http.accept_retry == NULL ||
	    evtimer_pending(http.accept_retry, NULL))
		return;		/* accept failed: the timer re-enables */
	if (http.nconns < (unsigned int)cfg_limit(LIMIT_MAX_CONNECTIONS))
		http.full_logged = 0;
	want = http.nconns < (unsigned int)cfg_limit(LIMIT_MAX_CONNECTIONS) ||
	    !TAILQ_EMPTY(&http.evictable);
	if (want == http.accepting)
		return;
	http.accepting = want;
	if (http.metrics_listener != NULL) {
		if (want)
			evconnlistener_enable(http.metrics_listener);
		else
			evconnlistener_disable(http.metrics_listener);
	}
	if (http.listener == NULL)
		return;
	if (want)
		evconnlistener_enable(http.listener);
	else {
		if (!http.full_logged)
			log_info("http: %u connections open, not accepting"
			    " more until one closes or waits for a request"
			    " unauthenticated", http.nconns);
		http.full_logged = 1;
		evconnlistener_disable(http.listener);
	}
}

/* The clients table, hashed by name with a seed of our own. */
static struct http_clients *
transport_http_client_bucket(const char *name)
{
	return (&http.clients[util_hash(name, http.client_seed) %
	    HTTP_CLIENT_BUCKETS]);
}

static struct http_client *
transport_http_client_find(const char *name)
{
	struct http_client	*cl;

	LIST_FOREACH(cl, transport_http_client_bucket(name), entry) {
		if (strcmp(cl->name, name) == 0)
			return (cl);
	}
	return (NULL);
}

/* The client of that name, made if new; count something before a put. */
struct http_client *
transport_http_client_get(const char *name)
{
	struct http_client	*cl;

	if ((cl = transport_http_client_find(name)) != NULL)
		return (cl);
	cl = xcalloc(1, sizeof *cl);
	cl->name = xstrdup(name);
	TAILQ_INIT(&cl->sessions);
	LIST_INSERT_HEAD(transport_http_client_bucket(name), cl, entry);
	return (cl);
}

/* Forget a client once nothing is counted for it. */
void
transport_http_client_put(struct http_client *cl)
{
	if (cl->conns != 0 || cl->nsessions != 0)
		return;
	LIST_REMOVE(cl, entry);
	free(cl->name);
	free(cl);
}

/* How a client is named in messages: its address or its key's name. */
const char *
transport_http_client_label(struct http_client *cl)
{
	return (cl->name + 1);
}

/* Stop counting a connection (or its request) for its address. */
static void
transport_http_discharge(struct http_conn *c)
{
	if (c->client == NULL)
		return;
	c->client->conns--;
	transport_http_client_put(c->client);
	c->client = NULL;
	c->client_request = 0;
}

/*
 * The name an address is counted under: "a" and the address, IPv4 as it
 * is (an IPv4-mapped IPv6 one too), IPv6 by its /64 prefix, the block a
 * host is usually given.
 */
static void
transport_http_addr_name(const struct sockaddr *sa, char *buf, size_t len)
{
	const struct sockaddr_in6	*sin6;
	struct in6_addr			 a;
	char				 tmp[INET6_ADDRSTRLEN];

	switch (sa->sa_family) {
	case AF_INET:
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    tmp, sizeof tmp);
		snprintf(buf, len, "a%s", tmp);
		return;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			inet_ntop(AF_INET, &sin6->sin6_addr.s6_addr[12], tmp,
			    sizeof tmp);
			snprintf(buf, len, "a%s", tmp);
			return;
		}
		a = sin6->sin6_addr;
		memset(&a.s6_addr[8], 0, 8);
		inet_ntop(AF_INET6, &a, tmp, sizeof tmp);
		snprintf(buf, len, "a%s/64", tmp);
		return;
	default:
		snprintf(buf, len, "a?");
		return;
	}
}

/* Whether an address is a configured trusted-proxy. */
static int
transport_http_proxy(const char *addr)
{
	struct cfg_word	*w;

	TAILQ_FOREACH(w, &cfg->proxies, entry) {
		if (strcmp(w->word, addr) == 0)
			return (1);
	}
	return (0);
}

/*
 * One X-Forwarded-For entry, blanks and any port taken off, into addr
 * (NUL-terminated, at most len - 1 bytes).
 */
static void
transport_http_xff_entry(const char *p, size_t n, char *addr, size_t len)
{
	char	*e;
	size_t	 i;

	while (n > 0 && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(addr, p, n);
	addr[n] = '\0';
	if (addr[0] == '[' && (e = strchr(addr, ']')) != NULL) {
		*e = '\0';
		memmove(addr, addr + 1, strlen(addr + 1) + 1);
	} else if ((e = strchr(addr, ':')) != NULL &&
	    strchr(e + 1, ':') == NULL)
		*e = '\0';		/* IPv4 with a port */
	/* Only what an address (or an obfuscated name) is made of. */
	for (i = 0; addr[i] != '\0'; i++) {
		if (!isalnum((unsigned char)addr[i]) &&
		    strchr(".:_-%", addr[i]) == NULL)
			addr[i] = '?';
	}
}

/*
 * The client a trusted proxy forwards for, as an address (or the entry
 * made printable): the last X-Forwarded-For entry that is not itself a
 * trusted proxy (the peer that proxy saw; entries before it are the
 * client's own word), or the first entry when all are proxies. -1 when
 * the header names no one.
 */
static int
transport_http_xff_client(const char *xff, char *buf, size_t len)
{
	const char	*end = xff + strlen(xff), *p;
	char		 addr[64];

	buf[0] = '\0';
	while (end > xff) {
		for (p = end; p > xff && p[-1] != ','; p--)
			;
		transport_http_xff_entry(p, end - p, addr, sizeof addr);
		end = p > xff ? p - 1 : xff;
		if (addr[0] == '\0')
			continue;
		strlcpy(buf, addr, len);
		if (!transport_http_proxy(addr))
			break;
	}
	return (buf[0] == '\0' ? -1 : 0);
}

/*
 * The name the client a trusted proxy forwards for is counted under.
 * -1 when the header names no one.
 */
static int
transport_http_xff_name(const char *xff, char *buf, size_t len)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&ss;
	char			 found[64];

	if (transport_http_xff_client(xff, found, sizeof found) != 0)
		return (-1);
	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, found, &sin->sin_addr) == 1) {
		ss.ss_family = AF_INET;
		transport_http_addr_name((struct sockaddr *)&ss, buf, len);
	} else if (inet_pton(AF_INET6, found, &sin6->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
		transport_http_addr_name((struct sockaddr *)&ss, buf, len);
	} else
		snprintf(buf, len, "a%s", found);
	return (0);
}

/*
 * The value of parameter name (host, proto) in the last element of a
 * Forwarded header (RFC 7239), unquoted, into buf (cut to len - 1
 * bytes). The last element is the one the proxy next to us added; -1
 * when it has no such parameter.
 */
static int
transport_http_forwarded_param(const char *fwd, const char *name, char *buf,
    size_t len)
{
	const char	*p = fwd, *k;
	size_t		 klen, n = 0, nlen = strlen(name);
	int		 found = 0, match;

	buf[0] = '\0';
	while (*p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ';')
			p++;
		if (*p == ',') {
			found = 0;
			buf[0] = '\0';
			p++;
			continue;
		}
		k = p;
		while (*p != '\0' && *p != '=' && *p != ';' && *p != ',')
			p++;
		klen = p - k;
		if (*p != '=')
			continue;	/* no value: not a pair */
		p++;
		match = klen == nlen && strncasecmp(k, name, nlen) == 0;
		if (match) {
			found = 1;
			n = 0;
		}
		if (*p == '"') {
			for (p++; *p != '\0' && *p != '"'; p++) {
				if (*p == '\\' && p[1] != '\0')
					p++;
				if (match && n + 1 < len)
					buf[n++] = *p;
			}
			if (*p == '"')
				p++;
		} else {
			for (; *p != '\0' && *p != ';' && *p != ',' &&
			    *p != ' ' && *p != '\t'; p++) {
				if (match && n + 1 < len)
					buf[n++] = *p;
			}
		}
		if (match)
			buf[n] = '\0';
	}
	return (found ? 0 : -1);
}

/*
 * The last entry of a comma-separated header (the one the proxy next to
 * us added), blanks taken off, into buf; -1 when it is empty or does not
 * fit.
 */
static int
transport_http_last_entry(const char *v, char *buf, size_t len)
{
	const char	*p, *end;

	if ((p = strrchr(v, ',')) != NULL)
		p++;
	else
		p = v;
	while (*p == ' ' || *p == '\t')
		p++;
	end = p + strlen(p);
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end == p || (size_t)(end - p) >= len)
		return (-1);
	memcpy(buf, p, end - p);
	buf[end - p] = '\0';
	return (0);
}

/* Whether s is a plausible host[:port]: letters, digits, . - : [ ] _. */
static int
transport_http_host_valid(const char *s)
{
	size_t	n = strlen(s);

	return (n != 0 && n <= 255 && s[strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]_")] == '\0');
}

/*
 * The host the client asked for. From a trusted proxy: the last entry of
 * X-Forwarded-Host, else the host of its Forwarded header (*fwd is set);
 * otherwise, or when the proxy sends neither, Host. NULL when there is
 * none or the forwarded one is not a host[:port].
 */
static const char *
transport_http_request_host(struct http_conn *c, char *buf, size_t len,
    int *fwd)
{
	const char	*h;

	*fwd = 0;
	if (c->proxied) {
		if ((h = http_msg_header_last(c->req,
		    "X-Forwarded-Host")) != NULL) {
			*fwd = 1;
			if (transport_http_last_entry(h, buf, len) != 0)
				return (NULL);
		} else if ((h = http_msg_header_last(c->req, "Forwarded")) !=
		    NULL && transport_http_forwarded_param(h, "host", buf,
		    len) == 0)
			*fwd = 1;
		if (*fwd)
			return (transport_http_host_valid(buf) ? buf : NULL);
	}
	return (http_msg_header(c->req, "Host"));
}

/*
 * The scheme the client used: what a trusted proxy says in
 * X-Forwarded-Proto or its Forwarded header's proto when that is http or
 * https, else http (this listener has no TLS).
 */
static const char *
transport_http_request_proto(struct http_conn *c)
{
	const char	*h;
	char		 buf[16];

	if (!c->proxied)
		return ("http");
	if ((h = http_msg_header_last(c->req, "X-Forwarded-Proto")) != NULL) {
		if (transport_http_last_entry(h, buf, sizeof buf) != 0)
			return ("http");
	} else if ((h = http_msg_header_last(c->req, "Forwarded")) == NULL ||
	    transport_http_forwarded_param(h, "proto", buf, sizeof buf) != 0)
		return ("http");
	return (strcasecmp(buf, "https") == 0 ? "https" : "http");
}

/*
 * Note whom a request is for: from a trusted proxy that says (with
 * X-Forwarded-For, X-Forwarded-Host or Forwarded), the client it forwards
 * for; from anyone else, the peer.
 */
static void
transport_http_request_client(struct http_conn *c)
{
	const char	*xff;

	c->forwarded = c->proxied && (http_msg_header_last(c->req,
	    "X-Forwarded-For") != NULL || http_msg_header_last(c->req,
	    "X-Forwarded-Host") != NULL || http_msg_header_last(c->req,
	    "Forwarded") != NULL);
	if (c->proxied && (xff = http_msg_header_last(c->req,
	    "X-Forwarded-For")) != NULL && transport_http_xff_client(xff,
	    c->client_addr, sizeof c->client_addr) == 0)
		return;
	strlcpy(c->client_addr, c->peer_addr, sizeof c->client_addr);
}

/*
 * Who sent a request, for a log line: the peer, and the client a trusted
 * proxy forwards for.
 */
const char *
transport_http_who(struct http_conn *c)
{
	static char	buf[sizeof c->peer + sizeof c->client_addr + 16];

	if (c->forwarded && strcmp(c->client_addr, c->peer_addr) != 0)
		snprintf(buf, sizeof buf, "peer=%s client=%s", c->peer,
		    c->client_addr);
	else
		snprintf(buf, sizeof buf, "peer=%s", c->peer);
	return (buf);
}

void
transport_http_arm(struct http_conn *c, long long seconds)
{
	struct timeval	tv = { (time_t)seconds, 0 };

	evtimer_add(c->timer, &tv);
}

/*
 * The client address a trusted proxy reports, or NULL: X-Forwarded-For is
 * believed only from a configured trusted-proxy.
 */
static const char *
transport_http_forwarded(struct http_conn *c)
{
	const char	*xff;

	if (c->req == NULL || c->req->state == HTTP_MSG_START ||
	    (xff = http_msg_header_last(c->req, "X-Forwarded-For")) == NULL ||
	    !transport_http_proxy(c->peer_addr))
		return (NULL);
	return (xff);
}

/*
 * Count a request that came through a trusted proxy for the client it
 * forwards for (the proxy's own connections count for no one): the same
 * cap on connections per address applies, request by request. 0, or -1
 * once the request is answered with 503.
 */
static int
transport_http_charge_forwarded(struct http_conn *c)
{
	struct http_client	*cl;
	const char		*xff;
	char			 name[HTTP_CLIENT_NAME];
	cJSON			*body;

	xff = http_msg_header_last(c->req, "X-Forwarded-For");
	if (xff == NULL || transport_http_xff_name(xff, name, sizeof name) != 0)
		strlcpy(name, c->addr_name, sizeof name);
	if ((cl = transport_http_client_find(name)) != NULL && cl->conns >=
	    (unsigned int)cfg_limit(LIMIT_MAX_CONNECTIONS_PER_ADDRESS)) {
		log_debug("http client %u refused: %s has %u connections open,"
		    " the limit max-connections-per-address peer=%s", c->id,
		    name + 1, cl->conns, c->peer);
		body = cJSON_CreateObject();
		cJSON_AddStringToObject(body, "error", "too many connections"
		    " from this address: the limit max-connections-per-address"
		    " is reached");
		transport_http_json(c, 503, body, "Retry-After: "
		    HTTP_RETRY_AFTER "\r\n");
		cJSON_Delete(body);
		return (-1);
	}
	c->client = transport_http_client_get(name);
	c->client->conns++;
	c->client_request = 1;
	return (0);
}

/*
 * Send a response and move to WRITING. extra holds further header lines,
 * each ending in CRLF, or is NULL.
 */
void
transport_http_respond(struct http_conn *c, int status,
    const char *content_type, const char *body, size_t len,
    const char *extra)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);
	char		 length[48];

	if (c->close_after)
		c->keepalive = 0;
	if (c->req != NULL && c->req->state != HTTP_MSG_DONE)
		c->keepalive = 0;	/* unread body: cannot reuse */
	/* One formatting call for the status line and the fixed headers. */
	if (status != 204)
		snprintf(length, sizeof length, "Content-Length: %zu\r\n",
		    len);
	else
		length[0] = '\0';
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n%s%s%s"
	    "%sCache-Control: no-store\r\n%s", status,
	    http_status_text(status),
	    content_type != NULL ? "Content-Type: " : "",
	    content_type != NULL ? content_type : "",
	    content_type != NULL ? "\r\n" : "", length,
	    c->keepalive ? "" : "Connection: close\r\n");
	transport_http_cors(c, out);
	if (extra != NULL)
		evbuffer_add(out, extra, strlen(extra));
	evbuffer_add(out, "\r\n", 2);
	/* A reply to HEAD has the length of the body, not the body. */
	if (len != 0 && (c->req->method == NULL ||
	    strcmp(c->req->method, "HEAD") != 0))
		evbuffer_add(out, body, len);
	log_debug("http client %u %s %.200s %d peer=%s%s%.200s", c->id,
	    c->req->method != NULL ? c->req->method : "-",
	    c->req->target != NULL ? c->req->target : "-", status, c->peer,
	    transport_http_forwarded(c) != NULL ? " forwarded-for=" : "",
	    transport_http_forwarded(c) != NULL ?
	    transport_http_forwarded(c) : "");
	metrics_http_response(status);
	c->raw = NULL;		/* a handler's bytes end with its answer */
	transport_http_set_state(c, HTTP_CONN_WRITING);
	bufferevent_enable(c->bev, EV_WRITE);
	transport_http_arm(c, cfg_limit(LIMIT_IDLE_TIMEOUT));
}

void
transport_http_json(struct http_conn *c, int status, cJSON *json,
    const char *extra)
{
	char	*text;

	text = util_json_print(json);
	transport_http_respond(c, status, "application/json", text,
	    strlen(text), extra);
	free(text);
}

/* An HTTP-level refusal on /mcp, with a JSON-RPC error as the body. */
void
transport_http_refuse(struct http_conn *c, int status, int code,
    const char *extra, const char *fmt, ...)
{
	cJSON	*msg;
	char	*text;
	va_list	 ap;

	va_start(ap, fmt);
	xvasprintf(&text, fmt, ap);
	va_end(ap);
	msg = jsonrpc_error(NULL, code, "%s", text);
	transport_http_json(c, status, msg, extra);
	cJSON_Delete(msg);
	free(text);
}

/* A plain refusal outside /mcp (or before a request is understood). */
void
transport_http_plain(struct http_conn *c, int status, const char *extra)
{
	cJSON	*body;

	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "error", http_status_text(status));
	transport_http_json(c, status, body, extra);
	cJSON_Delete(body);
}

/*
 * An OAuth discovery document asked for (RFC 9728 protected resource
 * metadata, RFC 8414 server metadata): there is none, since this server
 * takes static API keys. Some hosts ask before they send a configured
 * Bearer key and show only this answer, so it says what to do.
 */
static void
transport_http_no_oauth(struct http_conn *c)
{
	cJSON	*body;

	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "error", http_status_text(404));
	cJSON_AddStringToObject(body, "error_description", "this server does"
	    " not use OAuth: it takes static API keys, sent as"
	    " \"Authorization: Bearer KEY\" (sandbox-mcp keygen makes one;"
	    " see sandbox-mcp.conf(5), api-key)");
	transport_http_json(c, 404, body, NULL);
	cJSON_Delete(body);
}

/* The response is written: read the next request, or close. */
static void
transport_http_write_cb(struct bufferevent *bev, void *arg)
{
	struct http_conn	*c = arg;

	if (c->state == HTTP_CONN_TUNNEL) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			c->raw->drained(c->raw_arg);
		return;
	}
	if (c->state != HTTP_CONN_WRITING)
		return;
	if (c->call != NULL && c->call->written != NULL)
		c->call->written(c);
	if (!c->keepalive && c->req->state != HTTP_MSG_DONE) {
		/*
		 * The client may still be sending a body we refused (413):
		 * close our side and read what comes, discarded, so that the
		 * kernel does not reset the connection under the answer
		 * before a client that sends the whole body first reads it.
		 * Each pause may last HTTP_LINGER s, the whole
		 * HTTP_LINGER_MAX s.
		 */
		c->linger_end_ms = now_ms() + HTTP_LINGER_MAX * 1000;
		shutdown(bufferevent_getfd(bev), SHUT_WR);
		bufferevent_disable(bev, EV_WRITE);
		bufferevent_setwatermark(bev, EV_READ, 0, 0);
		bufferevent_enable(bev, EV_READ);
		transport_http_set_state(c, HTTP_CONN_LINGER);
		transport_http_arm(c, HTTP_LINGER);
		return;
	}
	if (!c->keepalive) {
		transport_http_close(c, "done");
		return;
	}
	transport_http_request_done(c);
	http_msg_reset(c->req);
	c->key = NULL;
	if (c->client_request)
		transport_http_discharge(c);	/* a proxy's next client */
	transport_http_set_state(c, HTTP_CONN_HEAD);
	c->idle = 1;
	transport_http_arm(c, cfg_limit(LIMIT_IDLE_TIMEOUT));
	bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
	bufferevent_enable(c->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_input(bev)) != 0)
		transport_http_read_cb(bev, c);
}

static void
transport_http_read_cb(struct bufferevent *bev, void *arg)
{
	struct http_conn	*c = arg;
	struct evbuffer		*in = bufferevent_get_input(bev);
	enum http_parse_result	 r;

	if (c->state == HTTP_CONN_LINGER) {
		evbuffer_drain(in, evbuffer_get_length(in));
		if (now_ms() >= c->linger_end_ms)
			transport_http_close(c, "lingered");
		else
			transport_http_arm(c, HTTP_LINGER);
		return;
	}
	if (c->state == HTTP_CONN_TUNNEL) {
		c->raw->read(c->raw_arg);
		return;
	}
	if (c->state != HTTP_CONN_HEAD && c->state != HTTP_CONN_BODY)
		return;		/* held until the current request is done */
	if (c->state == HTTP_CONN_HEAD && c->idle &&
	    evbuffer_get_length(in) != 0) {
		c->idle = 0;
		transport_http_arm(c, cfg_limit(LIMIT_HEADER_TIMEOUT));
	}
	r = http_msg_parse(c->req, in);
	if (r == HTTP_PARSE_HEAD) {
		c->requests++;
		transport_http_head(c);
		if (c->state != HTTP_CONN_BODY)
			return;
		r = http_msg_parse(c->req, in);
	}
	switch (r) {
	case HTTP_PARSE_DONE:
		if (c->body_done != NULL)
			c->body_done(c, c->body_arg);
		break;
	case HTTP_PARSE_ERROR:
		c->keepalive = 0;
		bufferevent_disable(bev, EV_READ);
		switch (c->req->error) {
		case HTTP_ERR_HEADERS_TOO_LARGE:
			transport_http_plain(c, 431, NULL);
			break;
		case HTTP_ERR_BODY_TOO_LARGE:
			transport_http_refuse(c, 413, JSONRPC_INVALID_REQUEST,
			    NULL, "the request body is larger than the limit of"
			    " %lld bytes", cfg_limit(LIMIT_MAX_BODY));
			break;
		case HTTP_ERR_VERSION:
			transport_http_plain(c, 505, NULL);
			break;
		default:
			transport_http_plain(c, 400, NULL);
			break;
		}
		break;
	default:
		break;
	}
}

static void
transport_http_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct http_conn	*c = arg;

	if (c->state == HTTP_CONN_TUNNEL && (what & BEV_EVENT_EOF)) {
		c->raw->eof(c->raw_arg);
		return;
	}
	if (what & BEV_EVENT_EOF)
		transport_http_close(c, "eof");
	else if (what & BEV_EVENT_ERROR)
		transport_http_close(c, strerror(EVUTIL_SOCKET_ERROR()));
}

static void
transport_http_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct http_conn	*c = arg;

	switch (c->state) {
	case HTTP_CONN_HEAD:
		if (c->idle) {
			transport_http_close(c, "idle");
			break;
		}
		/* FALLTHROUGH */
	case HTTP_CONN_BODY:
		c->keepalive = 0;
		bufferevent_disable(c->bev, EV_READ);
		transport_http_plain(c, 408, NULL);
		break;
	case HTTP_CONN_WRITING:
		transport_http_close(c, "write timeout");
		break;
	case HTTP_CONN_LINGER:
		transport_http_close(c, "done");
		break;
	case HTTP_CONN_TUNNEL:
		transport_http_close(c, "tunnel idle");
		break;
	case HTTP_CONN_HANDLING:
		if (c->call != NULL && c->call->slow != NULL)
			c->call->slow(c);
		break;
	case HTTP_CONN_SSE:
		if (c->call != NULL && c->call->keepalive != NULL)
			c->call->keepalive(c);
		break;
	}
}

/* Tear a connection down: the only way one ends. */
void
transport_http_close(struct http_conn *c, const char *reason)
{
	log_trace(TRACE_HTTP, "http client %u closed reason=%s requests=%llu",
	    c->id, reason, (unsigned long long)c->requests);
	if (c->call != NULL && c->call->closed != NULL)
		c->call->closed(c);
	transport_http_request_done(c);
	if (c->evictable)
		TAILQ_REMOVE(&http.evictable, c, evict_entry);
	transport_http_discharge(c);
	TAILQ_REMOVE(&http.conns, c, entry);
	http.nconns--;
	transport_http_listen_update();
	event_free(c->timer);
	bufferevent_free(c->bev);
	http_msg_free(c->req);
	auth_memo_clear(&c->auth_memo);
	free(c);
}

/*
 * The configuration was reloaded (the old one is still there): each
 * connection that presented a key takes the same key of the new one, or
 * ends if there is none (removed, rotated, regranted or moved to another
 * tenant): its open streams and tunnels with it. Once keys are required,
 * a stream or tunnel opened without one ends too.
 */
void
transport_http_reload(void)
{
	struct http_conn	*c, *c1;
	const struct cfg_apikey	*k;

	if (!http.ready)
		return;
	TAILQ_FOREACH_SAFE(c, &http.conns, entry, c1) {
		auth_memo_clear(&c->auth_memo);
		if (c->key != NULL) {
			if ((k = auth_key_again(c->key)) != NULL) {
				c->key = k;
				continue;
			}
			log_info("http client %u closed: its API key %s was"
			    " removed or changed", c->id, c->key->name);
			transport_http_close(c, "key removed");
			continue;
		}
		if (!TAILQ_EMPTY(&cfg->apikeys) && !c->metrics_only &&
		    (c->state == HTTP_CONN_SSE || c->state == HTTP_CONN_TUNNEL)) {
			log_info("http client %u closed: API keys are now"
			    " required", c->id);
			transport_http_close(c, "keys required");
		}
	}
}

/* Whether host (no port) names the loopback interface. */
static int
transport_http_loopback_name(const char *host, size_t len)
{
	return ((len == 9 && strncasecmp(host, "localhost", 9) == 0) ||
	    (len == 9 && strncmp(host, "127.0.0.1", 9) == 0) ||
	    (len == 5 && strncmp(host, "[::1]", 5) == 0));
}

/* Split "host[:port]" (host may be "[v6]"); returns the host length. */
static size_t
transport_http_host_len(const char *hp)
{
	const char	*e;

	if (hp[0] == '[') {
		if ((e = strchr(hp, ']')) == NULL)
			return (strlen(hp));
		return ((size_t)(e - hp) + 1);
	}
	if ((e = strchr(hp, ':')) == NULL)
		return (strlen(hp));
	return ((size_t)(e - hp));
}

static int
transport_http_port_ok(const char *p)
{
	if (*p == '\0')
		return (1);
	if (*p != ':')
		return (0);
	p++;
	return (*p != '\0' && strlen(p) <= 5 && p[strspn(p, "0123456789")] ==
	    '\0');
}

/*
 * Whether host[:port] is one of the public-host names: a name alone
 * matches it with any port, a name with a port that port only, "*." and
 * a domain any name under the domain.
 */
static int
transport_http_public_name(const char *hp)
{
	struct cfg_word	*w;
	size_t		 len = transport_http_host_len(hp), wlen, slen;

	TAILQ_FOREACH(w, &cfg->public_hosts, entry) {
		wlen = strlen(w->word);
		if (strncmp(w->word, "*.", 2) == 0) {
			slen = wlen - 1;	/* ".domain" */
			if (len > slen && strncasecmp(hp + len - slen,
			    w->word + 1, slen) == 0)
				return (1);
		} else if (transport_http_host_len(w->word) < wlen) {
			if (strcasecmp(hp, w->word) == 0)
				return (1);
		} else if (len == wlen && strncasecmp(hp, w->word, len) == 0)
			return (1);
	}
	return (0);
}

/*
 * The Host guard: the host the client asked for (a trusted proxy's word
 * for it, else Host) must name loopback or a public-host. A listener on
 * another address with no public-host takes any.
 */
static int
transport_http_host_ok(struct http_conn *c)
{
	const char	*host;
	char		 buf[256];
	size_t		 len;
	int		 fwd;

	if ((host = transport_http_request_host(c, buf, sizeof buf, &fwd)) ==
	    NULL)
		return (0);
	len = transport_http_host_len(host);
	if (!transport_http_port_ok(host + len))
		return (0);
	if (transport_http_loopback_name(host, len) ||
	    transport_http_public_name(host))
		return (1);
	return (!c->loopback && TAILQ_EMPTY(&cfg->public_hosts));
}

/* Refuse a request the Host guard stops. */
static void
transport_http_host_refuse(struct http_conn *c, transport_http_refuser refuse)
{
	struct cause	 cause = { 0 };
	const char	*host, *h;
	char		 buf[256], vis[128];
	int		 fwd;

	host = transport_http_request_host(c, buf, sizeof buf, &fwd);
	if (host == NULL && fwd)
		host = (h = http_msg_header_last(c->req, "X-Forwarded-Host")) !=
		    NULL ? h : http_msg_header_last(c->req, "Forwarded");
	if (host == NULL)
		host = "";
	log_info("http client %u refused: %s \"%s\" is neither loopback"
	    " nor a public-host %s", c->id, fwd ? "forwarded host" : "Host",
	    util_log_safe(host, vis, sizeof vis), transport_http_who(c));
	c->close_after = 1;
	cause_set(&cause, CAUSE_UNAUTHORIZED, NULL, NULL, "forbidden: the %s"
	    " %.100s names neither localhost nor a public-host of this server",
	    fwd ? "forwarded host" : "Host", host);
	if (refuse != NULL)
		refuse(c, 403, &cause);
	else
		transport_http_refuse(c, 403, -32001, NULL, "%s",
		    cause.message);
	cause_clear(&cause);
}

/* The host[:port] of an http or https Origin, or NULL. */
static const char *
transport_http_origin_host(const char *origin)
{
	if (strncasecmp(origin, "http://", 7) == 0)
		return (origin + 7);
	if (strncasecmp(origin, "https://", 8) == 0)
		return (origin + 8);
	return (NULL);
}

/*
 * Whether an Origin may call us (DNS-rebinding guard): an allow-origin
 * one; on a loopback listener with keys, also a loopback one, when the
 * request names a loopback host itself and no trusted proxy forwards it
 * (a page on the client's localhost calling a public name is
 * cross-origin). Without keys a page proves nothing, and any page a
 * developer's browser loads from a local dev server is on a loopback
 * origin: only the origins listed are let in, and the server's own (a
 * client naming it, as the conformance suite's DNS-rebinding check
 * does; a page of the forward route under it says so in Sec-Fetch-Site
 * and is refused for that).
 */
int
transport_http_origin_ok(struct http_conn *c, const char *origin)
{
	struct cfg_word	*w;
	const char	*hp, *host;
	char		 buf[256];
	size_t		 len;
	int		 fwd;

	TAILQ_FOREACH(w, &cfg->origins, entry) {
		if (strcasecmp(w->word, origin) == 0)
			return (1);
	}
	if (!c->loopback || c->forwarded)
		return (0);
	host = transport_http_request_host(c, buf, sizeof buf, &fwd);
	if (host == NULL || fwd || !transport_http_loopback_name(host,
	    transport_http_host_len(host)))
		return (0);
	if ((hp = transport_http_origin_host(origin)) == NULL)
		return (0);
	/* Keyless: only the very name and port the request names. */
	if (TAILQ_EMPTY(&cfg->apikeys))
		return (strcasecmp(hp, host) == 0 &&
		    transport_http_origin_ours(origin));
	len = transport_http_host_len(hp);
	return (transport_http_loopback_name(hp, len) &&
	    transport_http_port_ok(hp + len));
}

/* An Origin not allowed: logged (made safe) and answered 403. */
void
transport_http_origin_refuse(struct http_conn *c, const char *what,
    const char *origin)
{
	char	vis[128];

	log_info("http client %u refused: %s \"%s\" %s", c->id, what,
	    util_log_safe(origin, vis, sizeof vis), transport_http_who(c));
	transport_http_refuse(c, 403, -32001, NULL, "forbidden: the Origin"
	    " %.100s is not allowed", origin);
}

/*
 * Whether a request comes from a page of this very server, as the
 * browser says (Sec-Fetch-Site). The only pages served here are the
 * sandboxes' own, through the forward route, so such a page is a
 * sandbox's and may not drive /mcp, whatever origins are allowed. (A
 * page reaching the server by another of its names is cross-site; the
 * forward route's Content-Security-Policy keeps its connections home.)
 */
int
transport_http_same_origin(struct http_conn *c)
{
	const char	*site;

	site = http_msg_header(c->req, "Sec-Fetch-Site");
	return (site != NULL && strcasecmp(site, "same-origin") == 0);
}

/*
 * The CORS headers of a response to an allowed Origin (none for a
 * request without one, or with one not allowed).
 */
void
transport_http_cors(struct http_conn *c, struct evbuffer *out)
{
	const char	*origin;

	if (c->req == NULL || c->req->state == HTTP_MSG_START ||
	    (origin = http_msg_header(c->req, "Origin")) == NULL ||
	    !transport_http_origin_ok(c, origin))
		return;
	evbuffer_add_printf(out, "Access-Control-Allow-Origin: %s\r\n"
	    "Access-Control-Expose-Headers: Mcp-Session-Id\r\n"
	    "Vary: Origin%s\r\n", origin, c->req->method != NULL &&
	    strcmp(c->req->method, "OPTIONS") == 0 ?
	    ", Access-Control-Request-Headers" : "");
}

/*
 * OPTIONS /mcp, a browser's CORS preflight: no key needed. An allowed
 * Origin gets 204 with the methods and headers it may use; any other
 * gets 403 and no CORS headers. The request headers allowed are the
 * fixed ones of both MCP eras and, as CORS has no wildcard for a prefix,
 * each Mcp-Param-* header the preflight asks for.
 */
void
transport_http_options(struct http_conn *c)
{
	const char	*origin, *acrh, *p, *e;
	static const char tail[] = "\r\nAccess-Control-Max-Age: 600\r\n";
	char		 extra[2048], name[72];
	size_t		 n, off;
	int		 params = 0;

	if ((origin = http_msg_header(c->req, "Origin")) == NULL) {
		transport_http_respond(c, 204, NULL, NULL, 0,
		    "Allow: GET, POST, DELETE, OPTIONS\r\n");
		return;
	}
	if (!transport_http_origin_ok(c, origin)) {
		transport_http_origin_refuse(c, "preflight from Origin",
		    origin);
		return;
	}
	off = (size_t)snprintf(extra, sizeof extra,
	    "Access-Control-Allow-Methods: GET, POST, DELETE, OPTIONS\r\n"
	    "Access-Control-Allow-Headers: Authorization, Content-Type,"
	    " Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID,"
	    " Mcp-Method, Mcp-Name");
	acrh = http_msg_header(c->req, "Access-Control-Request-Headers");
	for (p = acrh; p != NULL && *p != '\0' && params < 32; p = e) {
		p += strspn(p, " \t,");
		e = p + strcspn(p, " \t,");
		n = e - p;
		if (n <= 10 || n >= sizeof name ||
		    strncasecmp(p, "mcp-param-", 10) != 0)
			continue;
		memcpy(name, p, n);
		name[n] = '\0';
		if (name[strspn(name, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")] != '\0' ||
		    off + n + 2 + sizeof tail >= sizeof extra)
			continue;
		off += (size_t)snprintf(extra + off, sizeof extra - off, ", %s",
		    name);
		params++;
	}
	/* Room for the tail was kept above: the head always ends whole. */
	memcpy(extra + off, tail, sizeof tail);
	transport_http_respond(c, 204, NULL, NULL, 0, extra);
}

/*
 * Check the Bearer key when keys are configured. need is the set the key
 * must grant (0: any of this server's sets). Returns 0 when allowed;
 * else the status to answer (401, 403) with an unauthorized cause and,
 * in *extra, the header lines that go with it (or NULL).
 */
int
transport_http_authorize(struct http_conn *c, int need, struct cause *cause,
    const char **extra)
{
	const char	*h, *key;

	*extra = NULL;
	if (TAILQ_EMPTY(&cfg->apikeys)) {
		c->authed = 1;		/* nothing to prove */
		transport_http_evictable(c);
		return (0);
	}
	h = http_msg_header(c->req, "Authorization");
	if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0) {
		*extra = "WWW-Authenticate: Bearer realm=\"sandbox-mcp\"\r\n";
		cause_set(cause, CAUSE_UNAUTHORIZED, NULL, NULL, "unauthorized:"
		    " send Authorization: Bearer with an API key");
		return (401);
	}
	key = h + 7;
	while (*key == ' ')
		key++;
	if ((c->key = auth_lookup_memo(&c->auth_memo, key)) == NULL) {
		log_info("http client %u refused: unknown API key %s",
		    c->id, transport_http_who(c));
		*extra = "WWW-Authenticate: Bearer realm=\"sandbox-mcp\","
		    " error=\"invalid_token\"\r\n";
		cause_set(cause, CAUSE_UNAUTHORIZED, NULL, NULL, "unauthorized:"
		    " the API key is not valid");
		return (401);
	}
	if (need != 0 && (c->key->sets & need) == 0) {
		cause_set(cause, CAUSE_UNAUTHORIZED, "set", cfg_set_name(need),
		    "forbidden: the API key does not grant the %s set",
		    cfg_set_name(need));
		return (403);
	}
	if (need == 0 && (c->key->sets & http.sets) == 0) {
		cause_set(cause, CAUSE_UNAUTHORIZED, NULL, NULL, "forbidden:"
		    " the API key grants none of this server's tool sets");
		return (403);
	}
	c->authed = 1;
	transport_http_evictable(c);
	return (0);
}

/* The key check of /mcp and the sandbox routes: 0, or -1 once refused. */
int
transport_http_auth(struct http_conn *c, int need)
{
	struct cause	 cause = { 0 };
	const char	*extra;
	int		 status;

	if ((status = transport_http_authorize(c, need, &cause,
	    &extra)) == 0)
		return (0);
	transport_http_refuse(c, status, -32001, extra, "%s", cause.message);
	cause_clear(&cause);
	return (-1);
}

/*
 * For the handlers of paths (main registers them): the request, the
 * checks, the answers, and for a handler that relays bytes (forward.c),
 * the connection's bytes until it answers or the connection ends.
 */

struct http_msg *
transport_http_msg(struct http_conn *c)
{
	return (c->req);
}

unsigned int
transport_http_id(struct http_conn *c)
{
	return (c->id);
}

/* The tenant a request acts for: its key's, or the local operator. */
const char *
transport_http_tenant(struct http_conn *c)
{
	return (auth_tenant(c->key));
}

/* The name of the key a request came with, or NULL (keyless). */
const char *
transport_http_key(struct http_conn *c)
{
	return (c->key != NULL ? c->key->name : NULL);
}

/* The client a request is for: a trusted proxy's word, else the peer. */
const char *
transport_http_client(struct http_conn *c)
{
	return (c->client_addr);
}

/* The host the client asked for (a trusted proxy's word), or NULL. */
const char *
transport_http_host(struct http_conn *c, char *buf, size_t len)
{
	int	fwd;

	return (transport_http_request_host(c, buf, len, &fwd));
}

const char *
transport_http_proto(struct http_conn *c)
{
	return (transport_http_request_proto(c));
}

/* Whether the request's Origin, if it names one, may call us. */
int
transport_http_origin_allowed(struct http_conn *c)
{
	const char	*origin = http_msg_header(c->req, "Origin");

	return (origin == NULL || transport_http_origin_ok(c, origin));
}

/*
 * Whether an Origin names this server itself: a loopback name with the
 * port we listen on, or a public-host name. The only pages served under
 * those origins are sandboxes' pages, through the forward route.
 */
static int
transport_http_origin_ours(const char *origin)
{
	const char	*hp;
	char		 port[16];
	size_t		 len;

	if ((hp = transport_http_origin_host(origin)) == NULL)
		return (0);
	if (transport_http_public_name(hp))
		return (1);
	len = transport_http_host_len(hp);
	if (!transport_http_loopback_name(hp, len))
		return (0);
	snprintf(port, sizeof port, ":%d", http.bound_port);
	return (strcmp(hp + len, port) == 0 || (hp[len] == '\0' &&
	    http.bound_port == (origin[4] == 's' ? 443 : 80)));
}

/*
 * Whether a request comes from a page of ours: the browser says so
 * (Sec-Fetch-Site), or its Origin names this server by another of its
 * names (a page on http://localhost:PORT calling 127.0.0.1:PORT).
 */
int
transport_http_from_page(struct http_conn *c)
{
	const char	*origin = http_msg_header(c->req, "Origin");

	return (transport_http_same_origin(c) || (origin != NULL &&
	    transport_http_origin_ours(origin)));
}

/*
 * The Origin and key checks of a route behind the /mcp keys, answered
 * the way /mcp answers them: 0, or -1 once refused.
 */
int
transport_http_guard(struct http_conn *c, int need)
{
	const char	*origin = http_msg_header(c->req, "Origin");

	if (origin != NULL && !transport_http_origin_ok(c, origin)) {
		transport_http_origin_refuse(c, "Origin", origin);
		return (-1);
	}
	return (transport_http_auth(c, need));
}

/* The handler answers later: nothing more is read until it has. */
void
transport_http_hold(struct http_conn *c)
{
	transport_http_set_state(c, HTTP_CONN_HANDLING);
	evtimer_del(c->timer);
	bufferevent_setwatermark(c->bev, EV_READ, 0,
	    (size_t)cfg_limit(LIMIT_MAX_HEADER));
}

/*
 * fn(arg) once the request is over: its answer written, or its
 * connection gone (then the handler's answer, if any is still to come,
 * must not be given).
 */
void
transport_http_on_done(struct http_conn *c, void (*fn)(void *), void *arg)
{
	c->done = fn;
	c->done_arg = arg;
}

static void
transport_http_request_done(struct http_conn *c)
{
	void	(*fn)(void *) = c->done;

	c->done = NULL;
	c->raw = NULL;
	if (fn != NULL)
		fn(c->done_arg);
}

/*
 * The handler takes the connection's bytes both ways (ops) until it
 * answers or the connection ends; the connection is not reused.
 */
void
transport_http_raw(struct http_conn *c, const struct transport_http_raw *ops,
    void *arg)
{
	c->raw = ops;
	c->raw_arg = arg;
	c->keepalive = 0;
	transport_http_set_state(c, HTTP_CONN_TUNNEL);
	bufferevent_setwatermark(c->bev, EV_READ, 0, 0);
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

struct evbuffer *
transport_http_input(struct http_conn *c)
{
	return (bufferevent_get_input(c->bev));
}

struct evbuffer *
transport_http_output(struct http_conn *c)
{
	return (bufferevent_get_output(c->bev));
}

/* Read from the client, or stop (backpressure). */
void
transport_http_reading(struct http_conn *c, int on)
{
	if (on)
		bufferevent_enable(c->bev, EV_READ);
	else
		bufferevent_disable(c->bev, EV_READ);
}

/* Bytes moved: the idle timeout starts again. */
void
transport_http_touch(struct http_conn *c)
{
	transport_http_arm(c, cfg_limit(LIMIT_IDLE_TIMEOUT));
}

/* The sets this listener serves (--set). */
int
transport_http_served(void)
{
	return (http.sets);
}

/* The sets a request may use: ours, narrowed by its key. */
int
transport_http_sets(struct http_conn *c)
{
	return (c->key != NULL ? c->key->sets & http.sets : http.sets);
}

/* The path of the request's target (no query, no fragment), allocated. */
static char *
transport_http_path(struct http_conn *c)
{
	return (xstrndup(c->req->target, strcspn(c->req->target, "?#")));
}

static void
transport_http_health(struct http_conn *c)
{
	cJSON	*body;

	if (strcmp(c->req->method, "GET") != 0 &&
	    strcmp(c->req->method, "HEAD") != 0) {
		transport_http_plain(c, 405, "Allow: GET\r\n");
		return;
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "status", "ok");
	cJSON_AddStringToObject(body, "version", PACKAGE_VERSION);
	transport_http_json(c, 200, body, NULL);
	cJSON_Delete(body);
}

/*
 * GET /metrics (metrics.c's counts): on the listen address the key must
 * grant metrics when keys are configured; metrics-listen asks for none.
 */
static void
transport_http_metrics(struct http_conn *c, int need_key)
{
	struct http_msg		*req = c->req;
	struct metrics_counts	 mc;
	struct cause		 cause = { 0 };
	struct evbuffer	*body;
	const char	*extra;
	cJSON		*error;
	size_t		 len;
	char		*text;
	int		 status;

	if (strcmp(req->method, "GET") != 0 &&
	    strcmp(req->method, "HEAD") != 0) {
		transport_http_plain(c, 405, "Allow: GET\r\n");
		return;
	}
	if (need_key && (status = transport_http_authorize(c, TOOLSET_METRICS,
	    &cause, &extra)) != 0) {
		error = cJSON_CreateObject();
		cJSON_AddStringToObject(error, "error", status == 401 ?
		    "unauthorized" : "forbidden");
		cJSON_AddStringToObject(error, "error_description",
		    cause.message);
		transport_http_json(c, status, error, extra);
		cJSON_Delete(error);
		cause_clear(&cause);
		return;
	}
	if ((body = evbuffer_new()) == NULL)
		fatalx("%s: evbuffer_new", __func__);
	memset(&mc, 0, sizeof mc);
	mc.http_connections = http.nconns;
	op_metrics(&mc);
	metrics_render(body, &mc);
	len = evbuffer_get_length(body);
	text = xmalloc(len);
	evbuffer_remove(body, text, len);
	evbuffer_free(body);
	transport_http_respond(c, 200, "text/plain; version=0.0.4;"
	    " charset=utf-8", text, len, NULL);
	free(text);
}

/* Whether the client accepts a JSON answer (no Accept: anything). */
int
transport_http_accepts_json(struct http_conn *c)
{
	const char	*a = http_msg_header(c->req, "Accept");

	if (a == NULL)
		return (1);
	return (http_header_has_token(a, "application/json") ||
	    http_header_has_token(a, "application/*") ||
	    http_header_has_token(a, "*/*"));
}

/*
 * The paths this listener serves and who serves them: /health here, the
 * rest as main registers them (an exact path, or a prefix ending in /).
 */
#define HTTP_HANDLERS_MAX	8
static struct {
	const char		*path;
	transport_http_handler	 fn;
	transport_http_refuser	 refuse;	/* NULL: as /mcp refuses */
	void			(*stop)(void);
} http_handlers[HTTP_HANDLERS_MAX];
static size_t	http_nhandlers;

/*
 * Serve path (exact) or everything under it (a prefix ending in /). A
 * request refused before it reaches fn (its Host) is answered by refuse,
 * in the handler's own error form. stop (may be NULL) drops what the
 * handler keeps when the listener stops, after every connection.
 */
void
transport_http_register(const char *path, transport_http_handler fn,
    transport_http_refuser refuse, void (*stop)(void))
{
	if (http_nhandlers == HTTP_HANDLERS_MAX)
		fatalx("%s: too many handlers", __func__);
	http_handlers[http_nhandlers].path = path;
	http_handlers[http_nhandlers].fn = fn;
	http_handlers[http_nhandlers].refuse = refuse;
	http_handlers[http_nhandlers++].stop = stop;
}

/* The handler of a path, or -1. */
static int
transport_http_handler_of(const char *path)
{
	size_t	i, n;

	for (i = 0; i < http_nhandlers; i++) {
		n = strlen(http_handlers[i].path);
		if (http_handlers[i].path[n - 1] == '/' ?
		    strncmp(path, http_handlers[i].path, n) == 0 :
		    strcmp(path, http_handlers[i].path) == 0)
			return ((int)i);
	}
	return (-1);
}

/*
 * The head of a request is in: the checks every path has, then route.
 * The path is the target's whole (its length is bounded by the request
 * line's), so a handler never routes a cut one.
 */
static void
transport_http_head(struct http_conn *c)
{
	char	*path;
	int	 h;

	c->keepalive = http_msg_keepalive(c->req);
	c->modern = 0;		/* until its body says otherwise */
	c->body_done = NULL;
	path = transport_http_path(c);
	h = transport_http_handler_of(path);
	transport_http_request_client(c);
	if (c->proxied && transport_http_charge_forwarded(c) != 0)
		goto out;
	if (!transport_http_host_ok(c))
		transport_http_host_refuse(c, h != -1 ?
		    http_handlers[h].refuse : NULL);
	else if (strcmp(path, "/health") == 0)
		transport_http_health(c);
	else if (strcmp(path, "/metrics") == 0)
		transport_http_metrics(c, !c->metrics_only);
	else if (c->metrics_only)
		transport_http_plain(c, 404, NULL);
	else if (h != -1)
		http_handlers[h].fn(c, path);
	else if (strncmp(path, "/.well-known/oauth-", 19) == 0)
		transport_http_no_oauth(c);
	else
		transport_http_plain(c, 404, NULL);
out:
	free(path);
}

/*
 * The request's body is wanted: read it (under the body timeout) and
 * call done once it is whole; at once when it already is.
 */
void
transport_http_read_body(struct http_conn *c,
    void (*done)(struct http_conn *, void *), void *arg)
{
	const char	*expect;

	if (c->req->state == HTTP_MSG_DONE) {
		done(c, arg);
		return;
	}
	c->body_done = done;
	c->body_arg = arg;
	expect = http_msg_header(c->req, "Expect");
	if (expect != NULL && strcasecmp(expect, "100-continue") == 0)
		evbuffer_add_printf(bufferevent_get_output(c->bev),
		    "HTTP/1.1 100 Continue\r\n\r\n");
	transport_http_set_state(c, HTTP_CONN_BODY);
	transport_http_arm(c, cfg_limit(LIMIT_BODY_TIMEOUT));
}

/*
 * Answer a connection we do not take with 503 and close it. The request
 * is not read; what has come of it is discarded first, so that the
 * close does not reset the answer away.
 */
static void
transport_http_refuse_fd(evutil_socket_t fd, const char *why)
{
	char	buf[512], drain[4096];
	int	len, i;

	len = snprintf(buf, sizeof buf, "HTTP/1.1 503 %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n"
	    "Cache-Control: no-store\r\nRetry-After: %s\r\n"
	    "Connection: close\r\n\r\n{\"error\":\"%s\"}",
	    http_status_text(503), strlen(why) + 12, HTTP_RETRY_AFTER, why);
	metrics_http_response(503);
	if (len > 0 && (size_t)len < sizeof buf &&
	    write(fd, buf, len) != len)
		log_debug("http: a refused connection took no answer");
	shutdown(fd, SHUT_WR);
	for (i = 0; i < 4 && read(fd, drain, sizeof drain) > 0; i++)
		;
	evutil_closesocket(fd);
}

/*
 * A new connection: refused when its address has its share of
 * connections; when max-connections are open it takes the place of the
 * one that has waited longest unauthenticated, or is refused if there is
 * none (the listener is then off until there is).
 */
static void
transport_http_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct http_conn	*c, *victim;
	struct http_client	*cl;
	char			 host[NI_MAXHOST], serv[NI_MAXSERV];
	char			 name[HTTP_CLIENT_NAME];
	int			 proxied;

	if (getnameinfo(sa, salen, host, sizeof host, serv, sizeof serv,
	    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		strlcpy(host, "?", sizeof host);
		strlcpy(serv, "?", sizeof serv);
	}
	transport_http_addr_name(sa, name, sizeof name);
	proxied = transport_http_proxy(host);
	if (!proxied && (cl = transport_http_client_find(name)) != NULL &&
	    cl->conns >= (unsigned int)cfg_limit(
	    LIMIT_MAX_CONNECTIONS_PER_ADDRESS)) {
		log_debug("http: refused a connection from %s:%s: %u open from"
		    " %s, the limit max-connections-per-address", host, serv,
		    cl->conns, name + 1);
		transport_http_refuse_fd(fd, "too many connections from this"
		    " address: the limit max-connections-per-address is"
		    " reached");
		return;
	}
	if (http.nconns >= (unsigned int)cfg_limit(LIMIT_MAX_CONNECTIONS)) {
		if ((victim = TAILQ_FIRST(&http.evictable)) == NULL) {
			log_debug("http: refused a connection from %s:%s: the"
			    " limit max-connections", host, serv);
			transport_http_refuse_fd(fd, "server busy: the limit"
			    " max-connections is reached");
			transport_http_listen_update();
			return;
		}
		log_debug("http client %u evicted for a new connection:"
		    " max-connections reached peer=%s", victim->id,
		    victim->peer);
		transport_http_close(victim, "evicted");
	}

	c = xcalloc(1, sizeof *c);
	c->id = ++http.next_id;
	strlcpy(c->peer_addr, host, sizeof c->peer_addr);
	snprintf(c->peer, sizeof c->peer, "%s:%s", host, serv);
	strlcpy(c->addr_name, name, sizeof c->addr_name);
	c->proxied = proxied;
	c->metrics_only = l == http.metrics_listener;
	/* metrics-listen is on loopback whatever the other listener is. */
	c->loopback = c->metrics_only || http.loopback;
	metrics_http_accepted();
	if (!proxied) {
		c->client = transport_http_client_get(name);
		c->client->conns++;
	}
	if (util_tcp_nodelay(fd) != 0)
		log_warn("http client %u: TCP_NODELAY", c->id);
	c->bev = bufferevent_socket_new(ev_base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL)
		fatalx("%s: bufferevent_socket_new", __func__);
	c->req = http_msg_new(HTTP_MSG_REQUEST,
	    (size_t)cfg_limit(LIMIT_MAX_HEADER),
	    (uint64_t)cfg_limit(LIMIT_MAX_BODY));
	if ((c->timer = evtimer_new(ev_base, transport_http_timer_cb, c)) ==
	    NULL)
		fatalx("%s: evtimer_new", __func__);
	bufferevent_setcb(c->bev, transport_http_read_cb,
	    transport_http_write_cb, transport_http_event_cb, c);
	bufferevent_enable(c->bev, EV_READ);
	c->state = HTTP_CONN_HEAD;
	c->idle = 0;
	transport_http_arm(c, cfg_limit(LIMIT_HEADER_TIMEOUT));
	TAILQ_INSERT_TAIL(&http.conns, c, entry);
	http.nconns++;
	transport_http_evictable(c);
	transport_http_listen_update();
	log_trace(TRACE_HTTP, "http client %u connected peer=%s", c->id,
	    c->peer);
}

static void
transport_http_accept_retry_cb(evutil_socket_t fd, short events, void *arg)
{
	transport_http_listen_update();
}

/* accept(2) failed, e.g. out of descriptors: back off and retry. */
static void
transport_http_accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct timeval	tv = { HTTP_ACCEPT_RETRY, 0 };
	int		err = EVUTIL_SOCKET_ERROR();

	log_warnx("http: accept: %s; pausing for %d s", strerror(err),
	    HTTP_ACCEPT_RETRY);
	if (http.listener != NULL)
		evconnlistener_disable(http.listener);
	if (http.metrics_listener != NULL)
		evconnlistener_disable(http.metrics_listener);
	http.accepting = 0;
	evtimer_add(http.accept_retry, &tv);
}

/* What both listeners share, made by the first to start. */
static void
transport_http_init(void)
{
	int	i;

	if (http.ready)
		return;
	http.ready = 1;
	TAILQ_INIT(&http.conns);
	TAILQ_INIT(&http.evictable);
	for (i = 0; i < HTTP_CLIENT_BUCKETS; i++)
		LIST_INIT(&http.clients[i]);
	http.client_seed = arc4random();
	http.accepting = 1;
	http.accept_retry = evtimer_new(ev_base,
	    transport_http_accept_retry_cb, NULL);
	if (http.accept_retry == NULL)
		fatalx("%s: event_new", __func__);
}

/*
 * Listen on a loopback "ADDRESS:PORT" for /metrics (and /health) with no
 * key (cfg.c refuses another address). It does not hold the process: it
 * serves while the transports do.
 */
int
transport_http_metrics_start(const char *listen, char **cause)
{
	struct addrinfo	*res;
	char		 name[NI_MAXHOST + NI_MAXSERV + 4], host[NI_MAXHOST];
	int		 port;

	if ((res = cfg_listen_resolve(listen, cause)) == NULL)
		return (-1);
	http.metrics_listener = transport_http_bind(res, listen, cause);
	freeaddrinfo(res);
	if (http.metrics_listener == NULL)
		return (-1);
	if (transport_http_bound(http.metrics_listener, name, sizeof name,
	    host, sizeof host, &port) != 0)
		strlcpy(name, listen, sizeof name);
	log_info("serving metrics on http://%s/metrics (no key)", name);
	return (0);
}

/*
 * A listener on res (listen as the user wrote it, for the cause) that
 * accepts while the connections have room: NULL and a cause when the
 * address cannot be bound.
 */
static struct evconnlistener *
transport_http_bind(const struct addrinfo *res, const char *listen,
    char **cause)
{
	struct evconnlistener	*l;

	transport_http_init();
	l = evconnlistener_new_bind(ev_base, transport_http_accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    511, res->ai_addr, (int)res->ai_addrlen);
	if (l == NULL) {
		xasprintf(cause, "cannot listen on %s: %s", listen,
		    strerror(errno));
		return (NULL);
	}
	evconnlistener_set_error_cb(l, transport_http_accept_error_cb);
	if (!http.accepting)
		evconnlistener_disable(l);
	return (l);
}

/*
 * Where a listener is bound, numeric: "host:port" ("[v6]:port") into
 * name, the host alone into host, the port into *port. 0, or -1.
 */
static int
transport_http_bound(struct evconnlistener *l, char *name, size_t len,
    char *host, size_t hostlen, int *port)
{
	struct sockaddr_storage	 ss;
	socklen_t		 sslen = sizeof ss;
	char			 p[NI_MAXSERV];

	if (getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&ss,
	    &sslen) != 0 || getnameinfo((struct sockaddr *)&ss, sslen, host,
	    hostlen, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		return (-1);
	snprintf(name, len, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
	    host, p);
	*port = (int)strtonum(p, 0, 65535, NULL);
	return (0);
}

/*
 * Listen on "ADDRESS:PORT" ([v6]:port for IPv6) and serve the sets. A
 * non-loopback address needs at least one API key.
 */
int
transport_http_start(const char *listen, int sets, char **cause)
{
	struct addrinfo	*res;

	if ((res = cfg_listen_resolve(listen, cause)) == NULL)
		return (-1);
	http.loopback = util_sockaddr_loopback(res->ai_addr);
	if (!http.loopback && TAILQ_EMPTY(&cfg->apikeys)) {
		xasprintf(cause, "refusing to listen on %s, which is not a"
		    " loopback address, with no api-key configured", listen);
		freeaddrinfo(res);
		return (-1);
	}
	http.sets = sets;
	http.listener = transport_http_bind(res, listen, cause);
	freeaddrinfo(res);
	if (http.listener == NULL)
		return (-1);
	if (transport_http_bound(http.listener, http.bound, sizeof http.bound,
	    http.bound_host, sizeof http.bound_host, &http.bound_port) != 0)
		http.bound_port = 0;
	log_info("listening on http://%s/mcp sets=0x%x auth=%s", http.bound,
	    sets, TAILQ_EMPTY(&cfg->apikeys) ? "none" : "api-key");
	proc_hold();
	return (0);
}

/*
 * Stop listening and drop every connection; then each handler drops what
 * it keeps beyond a connection (MCP sessions).
 */
void
transport_http_stop(void)
{
	struct http_conn	*c;
	size_t			 i;

	if (http.metrics_listener != NULL) {
		evconnlistener_free(http.metrics_listener);
		http.metrics_listener = NULL;
	}
	if (http.listener == NULL)
		return;
	evconnlistener_free(http.listener);
	http.listener = NULL;
	event_free(http.accept_retry);
	http.accept_retry = NULL;
	while ((c = TAILQ_FIRST(&http.conns)) != NULL)
		transport_http_close(c, "shutdown");
	for (i = 0; i < http_nhandlers; i++) {
		if (http_handlers[i].stop != NULL)
			http_handlers[i].stop();
	}
	proc_release();
}
