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
 * HTTP/1.1 message parsing from an evbuffer: the start line and headers of
 * a request (our server) or a response (the Docker client), then the body
 * framed by Content-Length, chunked transfer coding or end of stream. Every
 * size is bounded before the bytes are kept.
 */

#ifndef HTTP_H
#define HTTP_H

#include <sys/types.h>

#include <stdint.h>

#include "compat.h"

struct evbuffer;

/* The longest chunk-size line (extensions included) or chunk end. */
#define HTTP_CHUNK_LINE_MAX	4096

enum http_msg_kind {
	HTTP_MSG_REQUEST,
	HTTP_MSG_RESPONSE
};

enum http_msg_state {
	HTTP_MSG_START,		/* waiting for the start line */
	HTTP_MSG_HEADERS,	/* reading header lines */
	HTTP_MSG_BODY,		/* Content-Length body */
	HTTP_MSG_CHUNK_SIZE,	/* chunked: size line */
	HTTP_MSG_CHUNK_DATA,	/* chunked: data */
	HTTP_MSG_CHUNK_END,	/* chunked: CRLF after data */
	HTTP_MSG_TRAILERS,	/* chunked: trailer lines */
	HTTP_MSG_UNTIL_EOF,	/* response body ends with the stream */
	HTTP_MSG_DONE,
	HTTP_MSG_ERROR
};

/* What went wrong, for the status a server answers with. */
enum http_msg_error {
	HTTP_ERR_NONE,
	HTTP_ERR_SYNTAX,	/* 400 */
	HTTP_ERR_HEADERS_TOO_LARGE, /* 431 */
	HTTP_ERR_BODY_TOO_LARGE, /* 413 */
	HTTP_ERR_VERSION,	/* 505 */
	HTTP_ERR_TRUNCATED	/* stream ended inside the message */
};

/* What one call of http_msg_parse got to. */
enum http_parse_result {
	HTTP_PARSE_MORE,	/* need more bytes */
	HTTP_PARSE_HEAD,	/* the head has just been completed */
	HTTP_PARSE_DONE,	/* the whole message is in */
	HTTP_PARSE_ERROR
};

struct http_header {
	char			*name;
	char			*value;
	TAILQ_ENTRY(http_header) entry;
};
TAILQ_HEAD(http_headers, http_header);

struct http_msg {
	enum http_msg_kind	 kind;
	enum http_msg_state	 state;
	enum http_msg_error	 error;
	char			 errbuf[128];

	char			*method;	/* requests */
	char			*target;
	int			 status;	/* responses */
	char			*reason;
	int			 minor;		/* HTTP/1.x */

	struct http_headers	 headers;
	size_t			 head_bytes;
	size_t			 max_head;

	int			 chunked;
	int64_t			 content_length; /* -1 when absent */
	uint64_t		 remaining;	/* of the body or chunk */
	uint64_t		 body_bytes;	/* so far, chunk lines in */
	uint64_t		 max_body;
	int			 no_body;	/* e.g. a reply to HEAD */
	struct evbuffer		*body;		/* decoded body bytes */
};

struct http_msg	*http_msg_new(enum http_msg_kind, size_t, uint64_t);
void		 http_msg_free(struct http_msg *);
void		 http_msg_reset(struct http_msg *);
enum http_parse_result http_msg_parse(struct http_msg *, struct evbuffer *);
enum http_parse_result http_msg_eof(struct http_msg *);
const char	*http_msg_header(struct http_msg *, const char *);
const char	*http_msg_header_last(struct http_msg *, const char *);
int		 http_msg_keepalive(struct http_msg *);
int		 http_header_has_token(const char *, const char *);
const char	*http_status_text(int);

#endif /* HTTP_H */
