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
 * transport-http.h: the insides of the HTTP server (transport-http.c)
 * that the /mcp endpoint (mcp-http.c) works with: a connection's state
 * machine, the clients limits are counted for, and the calls an endpoint
 * that keeps a call on a connection is told about. Only those two files
 * include it; every other handler goes through surface.h.
 */

#ifndef TRANSPORT_HTTP_H
#define TRANSPORT_HTTP_H

#include <netdb.h>

#define HTTP_CLIENT_NAME	80
#define HTTP_RETRY_AFTER	"5"	/* seconds, after a 503 for a cap */

enum http_conn_state {
	HTTP_CONN_HEAD,
	HTTP_CONN_BODY,
	HTTP_CONN_HANDLING,
	HTTP_CONN_WRITING,
	HTTP_CONN_LINGER,
	HTTP_CONN_TUNNEL,
	HTTP_CONN_SSE
};

struct http_session;
struct http_stream;
TAILQ_HEAD(http_session_lru, http_session);

/*
 * Whom limits are counted for: an address ("a" and the address), for its
 * connections and, with no key configured, its MCP sessions; or an API
 * key ("k" and its name), for its sessions. Kept while anything counts.
 */
struct http_client {
	char				*name;
	unsigned int			 conns;
	unsigned int			 nsessions;
	struct http_session_lru		 sessions; /* least recent use first */
	LIST_ENTRY(http_client)		 entry;
};
LIST_HEAD(http_clients, http_client);

struct http_conn {
	unsigned int			 id;
	enum http_conn_state		 state;
	struct bufferevent		*bev;
	char				 peer[NI_MAXHOST + NI_MAXSERV + 2];
	char				 peer_addr[NI_MAXHOST];
	struct http_msg			*req;
	struct event			*timer;
	int				 idle;	/* HEAD with no byte yet */
	int				 keepalive;
	int				 close_after;
	const struct cfg_apikey		*key;
	struct http_session		*pending_session; /* initialize */
	struct mcp_reply		*reply;	/* /mcp: the call running */
	uint64_t			 requests;
	TAILQ_ENTRY(http_conn)		 entry;
	char				 addr_name[HTTP_CLIENT_NAME];
	struct http_client		*client; /* the address charged */
	int				 client_request; /* for a request */
	int				 proxied; /* a trusted proxy's */
	int				 metrics_only; /* metrics-listen's */
	int				 loopback; /* its listener's address */
	uint64_t			 linger_end_ms; /* LINGER: the latest */
	int				 forwarded; /* request: by a proxy */
	char				 client_addr[64]; /* request: whose */
	int				 authed; /* a request passed auth */
	int				 evictable;
	TAILQ_ENTRY(http_conn)		 evict_entry;
	int				 modern; /* a stateless-era request */
	struct http_stream		*stream; /* an SSE answer */
	int				 chunked; /* the SSE body is */
	struct auth_memo		 auth_memo; /* its last key's verdict */
	void				(*body_done)(struct http_conn *,
					    void *);
	void				*body_arg;
	const struct transport_http_raw	*raw;	/* a handler has the bytes */
	void				*raw_arg;
	void				(*done)(void *); /* the handler's */
	void				*done_arg;
	const struct transport_http_call *call;	/* what /mcp keeps */
};
TAILQ_HEAD(http_conns, http_conn);

/*
 * What the connection tells the endpoint that keeps a call on it (set by
 * the endpoint as it takes a request; each may be NULL): the call has
 * not answered within the time the endpoint armed (slow), an event
 * stream is due a keep-alive, a response is written, the connection
 * goes.
 */
struct transport_http_call {
	void	(*slow)(struct http_conn *);
	void	(*keepalive)(struct http_conn *);
	void	(*written)(struct http_conn *);
	void	(*closed)(struct http_conn *);
};

void		 transport_http_set_state(struct http_conn *,
		     enum http_conn_state);
void		 transport_http_arm(struct http_conn *, long long);
const char	*transport_http_who(struct http_conn *);
void		 transport_http_refuse(struct http_conn *, int, int,
		     const char *, const char *, ...)
		     __attribute__((__format__ (printf, 5, 6)));
void		 transport_http_cors(struct http_conn *, struct evbuffer *);
void		 transport_http_options(struct http_conn *);
int		 transport_http_same_origin(struct http_conn *);
int		 transport_http_origin_ok(struct http_conn *, const char *);
void		 transport_http_origin_refuse(struct http_conn *,
		     const char *, const char *);
int		 transport_http_auth(struct http_conn *, int);
int		 transport_http_accepts_json(struct http_conn *);
struct http_client *transport_http_client_get(const char *);
void		 transport_http_client_put(struct http_client *);
const char	*transport_http_client_label(struct http_client *);

#endif /* TRANSPORT_HTTP_H */
