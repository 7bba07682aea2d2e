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
 * surface.h: the front ends. Framing, HTTP, API keys, Origin and Host
 * checks and limits; MCP in both eras and REST over the same door
 * (op.h); per-sandbox forwarding. A surface reaches the engine only
 * through the operation table and never includes engine.h.
 */

#ifndef SURFACE_H
#define SURFACE_H

#include "op.h"
#include "sandbox-mcp.h"

/* auth.c */
#define AUTH_MEMO_MAX		128	/* longer keys are not remembered */
struct auth_memo {		/* the last key one peer presented */
	const struct cfg_apikey	*key;	/* NULL: nothing remembered */
	unsigned long		 generation;
	size_t			 len;
	char			 bytes[AUTH_MEMO_MAX];
};
const struct cfg_apikey *auth_lookup(const char *);
const struct cfg_apikey *auth_lookup_memo(struct auth_memo *, const char *);
void		 auth_memo_clear(struct auth_memo *);
int		 auth_keygen(const char *, int, const char *);
const char	*auth_tenant(const struct cfg_apikey *);
const struct cfg_apikey *auth_key_again(const struct cfg_apikey *);

/* jsonrpc.c */
#define JSONRPC_PARSE_ERROR	-32700
#define JSONRPC_INVALID_REQUEST	-32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS	-32602
#define JSONRPC_INTERNAL_ERROR	-32603
#define JSONRPC_NOT_INITIALIZED	-32002
#define MCP_ERR_HEADER_MISMATCH	-32020
#define MCP_ERR_MISSING_CAPABILITY -32021
#define MCP_ERR_UNSUPPORTED_VERSION -32022
struct cJSON	*jsonrpc_error(const struct cJSON *, int, const char *, ...)
		     __attribute__((__format__ (printf, 3, 4)));
struct cJSON	*jsonrpc_result(const struct cJSON *, struct cJSON *);
int		 jsonrpc_id_valid(const struct cJSON *);
struct cJSON	*jsonrpc_peek_id(const char *, size_t);

/* mcp.c */
#define MCP_TRANSPORT_STDIO	0
#define MCP_TRANSPORT_HTTP	1
struct mcp_session;
struct mcp_reply;
typedef void (*mcp_reply_cb)(struct mcp_reply *, struct cJSON *, void *);
typedef struct cJSON *(*mcp_check_cb)(const struct cJSON *, const char *,
		     void *);
#define MCP_MSG_OTHER		0
#define MCP_MSG_INITIALIZE	1
#define MCP_MSG_MODERN		2
struct mcp_session *mcp_session_new(int, int, const char *, const char *);
void		 mcp_session_free(struct mcp_session *);
int		 mcp_session_sets(struct mcp_session *);
const char	*mcp_session_key(struct mcp_session *);
const char	*mcp_session_tenant(struct mcp_session *);
const char	*mcp_session_version(struct mcp_session *);
int		 mcp_session_initialized(struct mcp_session *);
unsigned int	 mcp_session_pending(struct mcp_session *);
struct mcp_reply *mcp_receive(struct mcp_session *, const char *, size_t,
		     mcp_reply_cb, void *);
void		 mcp_reply_detach(struct mcp_reply *);
void		 mcp_reply_retarget(struct mcp_reply *, mcp_reply_cb, void *);
typedef void (*mcp_push_cb)(struct cJSON *, void *);
void		 mcp_session_set_push(struct mcp_session *, mcp_push_cb, void *);
int		 mcp_message_is_initialize(const char *, size_t);
struct mcp_reply *mcp_receive_stateless(int, int, const char *, const char *,
		     const char *, size_t, mcp_check_cb, void *, mcp_reply_cb,
		     void *);
int		 mcp_message_era(const char *, size_t);
int		 mcp_version_supported(const char *);
const char	*mcp_negotiate_version(const char *);

/* mcp-tools.c */
#define MCP_TOOLS_2025_03	0	/* no structured results */
#define MCP_TOOLS_2025		1	/* outputSchema */
#define MCP_TOOLS_MODERN	2	/* outputSchema, x-mcp-header */
#define MCP_TOOLS_ERAS		3
const char	*mcp_tools_list_json(int, int);
void		 mcp_tools_forget(void);
struct cJSON	*mcp_tools_list_object(int, int);
struct cJSON	*mcp_tools_envelope(struct cJSON *, const struct cause *);

/* mcp-http.c */
void		 mcp_http_init(void);
void		 mcp_http_reload(void);

/* transport-stdio.c */
void		 transport_stdio_start(int, const char *);
int		 transport_stdio_active(void);

/* transport-http.c */
struct http_conn;
struct http_msg;
typedef void (*transport_http_handler)(struct http_conn *, const char *);
typedef void (*transport_http_refuser)(struct http_conn *, int,
		     const struct cause *);
struct transport_http_raw {	/* a handler that has the bytes */
	void		(*read)(void *);	/* the client's bytes are in */
	void		(*drained)(void *);	/* what it was sent has gone */
	void		(*eof)(void *);		/* it has sent all it will */
};
int		 transport_http_start(const char *, int, char **);
int		 transport_http_metrics_start(const char *, char **);
void		 transport_http_reload(void);
int		 transport_http_active(void);
int		 transport_http_endpoint(const char **, int *);
void		 transport_http_stop(void);
void		 transport_http_register(const char *, transport_http_handler,
		     transport_http_refuser, void (*)(void));
struct http_msg	*transport_http_msg(struct http_conn *);
unsigned int	 transport_http_id(struct http_conn *);
const char	*transport_http_tenant(struct http_conn *);
const char	*transport_http_key(struct http_conn *);
int		 transport_http_sets(struct http_conn *);
int		 transport_http_served(void);
const char	*transport_http_client(struct http_conn *);
const char	*transport_http_host(struct http_conn *, char *, size_t);
const char	*transport_http_proto(struct http_conn *);
int		 transport_http_origin_allowed(struct http_conn *);
int		 transport_http_from_page(struct http_conn *);
int		 transport_http_authorize(struct http_conn *, int,
		     struct cause *, const char **);
int		 transport_http_guard(struct http_conn *, int);
void		 transport_http_read_body(struct http_conn *,
		     void (*)(struct http_conn *, void *), void *);
void		 transport_http_hold(struct http_conn *);
void		 transport_http_on_done(struct http_conn *, void (*)(void *),
		     void *);
void		 transport_http_respond(struct http_conn *, int, const char *,
		     const char *, size_t, const char *);
void		 transport_http_json(struct http_conn *, int, struct cJSON *,
		     const char *);
void		 transport_http_plain(struct http_conn *, int, const char *);
void		 transport_http_raw(struct http_conn *,
		     const struct transport_http_raw *, void *);
struct evbuffer	*transport_http_input(struct http_conn *);
struct evbuffer	*transport_http_output(struct http_conn *);
void		 transport_http_reading(struct http_conn *, int);
void		 transport_http_touch(struct http_conn *);
void		 transport_http_close(struct http_conn *, const char *);

/* rest.c */
void		 rest_init(void);
void		 rest_http(struct http_conn *, const char *);
void		 rest_refuse(struct http_conn *, int, const struct cause *);
const char	*rest_route(const char *, const char *, struct cJSON **);
char		*rest_decode(const char *, size_t, int);
int		 rest_status(enum cause_kind);

/* forward.c */
void		 forward_http(struct http_conn *, const char *);

#endif /* SURFACE_H */
