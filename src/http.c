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
 * An incremental HTTP/1.1 message parser. The caller feeds it the input
 * evbuffer whenever bytes arrive; it consumes what it can, keeps the head
 * in a struct http_msg and moves decoded body bytes into msg->body, where
 * the caller may drain them as they come (streaming) or let them collect
 * (up to max_body). Lines are CRLF-terminated (a bare LF is accepted, as
 * RFC 9112 allows a recipient to); obsolete line folding is refused.
 */

#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "http.h"
#include "log.h"
#include "xmalloc.h"

static int	http_msg_start_line(struct http_msg *, char *);
static int	http_msg_header_line(struct http_msg *, char *);
static int	http_msg_end_head(struct http_msg *);
static enum http_parse_result http_msg_fail(struct http_msg *,
		    enum http_msg_error, const char *);

/* Make a parser for a request or a response with its two limits. */
struct http_msg *
http_msg_new(enum http_msg_kind kind, size_t max_head, uint64_t max_body)
{
	struct http_msg	*msg;

	msg = xcalloc(1, sizeof *msg);
	msg->kind = kind;
	msg->max_head = max_head;
	msg->max_body = max_body;
	TAILQ_INIT(&msg->headers);
	if ((msg->body = evbuffer_new()) == NULL)
		fatalx("%s: evbuffer_new", __func__);
	msg->content_length = -1;
	return (msg);
}

/* Forget the previous message so the next one can be read. */
void
http_msg_reset(struct http_msg *msg)
{
	struct http_header	*h;

	while ((h = TAILQ_FIRST(&msg->headers)) != NULL) {
		TAILQ_REMOVE(&msg->headers, h, entry);
		free(h);	/* name and value with it */
	}
	free(msg->method);
	free(msg->target);
	free(msg->reason);
	msg->method = msg->target = msg->reason = NULL;
	msg->status = 0;
	msg->minor = 0;
	msg->state = HTTP_MSG_START;
	msg->error = HTTP_ERR_NONE;
	msg->errbuf[0] = '\0';
	msg->head_bytes = 0;
	msg->chunked = 0;
	msg->content_length = -1;
	msg->remaining = 0;
	msg->body_bytes = 0;
	msg->no_body = 0;
	evbuffer_drain(msg->body, evbuffer_get_length(msg->body));
}

void
http_msg_free(struct http_msg *msg)
{
	if (msg == NULL)
		return;
	http_msg_reset(msg);
	evbuffer_free(msg->body);
	free(msg);
}

static enum http_parse_result
http_msg_fail(struct http_msg *msg, enum http_msg_error error,
    const char *why)
{
	msg->state = HTTP_MSG_ERROR;
	msg->error = error;
	snprintf(msg->errbuf, sizeof msg->errbuf, "%s", why);
	return (HTTP_PARSE_ERROR);
}

/*
 * Take one line off the buffer if a whole one is there, at most left
 * bytes long with its end. Returns 1 with a line, 0 for more bytes, -1
 * when the line would be longer, -3 when it holds a NUL byte (a value
 * cut short there would mean one thing to us and another to a proxy);
 * *used has the bytes taken.
 */
static int
http_msg_take_line(struct evbuffer *in, size_t left, char **line,
    size_t *used)
{
	const unsigned char	*buf, *lf;
	size_t			 pos, avail = evbuffer_get_length(in);
	size_t			 n = avail < left ? avail : left;

	/*
	 * The bytes a line may span, made contiguous (a head read at once
	 * already is), and searched for its end with memchr.
	 */
	lf = NULL;
	if (n > 0) {
		if ((buf = evbuffer_pullup(in, n)) == NULL)
			fatalx("%s: evbuffer_pullup failed", __func__);
		lf = memchr(buf, '\n', n);
	}
	if (lf == NULL)
		return (avail > left ? -1 : 0);
	pos = lf - buf;
	*used = pos + 1;
	*line = xmalloc(pos + 1);
	memcpy(*line, buf, pos);
	(*line)[pos] = '\0';
	evbuffer_drain(in, pos + 1);
	if (memchr(*line, '\0', pos) != NULL) {
		free(*line);
		*line = NULL;
		return (-3);
	}
	if (pos > 0 && (*line)[pos - 1] == '\r')
		(*line)[pos - 1] = '\0';
	return (1);
}

/* A line of the head (or of the trailers), counted against max_head. */
static int
http_msg_line(struct http_msg *msg, struct evbuffer *in, char **line)
{
	size_t	used;
	int	r;

	r = http_msg_take_line(in, msg->max_head - msg->head_bytes, line,
	    &used);
	if (r == 1)
		msg->head_bytes += used;
	return (r);
}

/*
 * A line of chunked framing (a chunk-size line or the end of a chunk's
 * data): part of the body, so its bytes count against max_body, and no
 * longer than HTTP_CHUNK_LINE_MAX. Returns 1 with a line, 0 for more
 * bytes, -1 for a line too long, -2 when the body would pass max_body.
 */
static int
http_msg_chunk_line(struct http_msg *msg, struct evbuffer *in, char **line)
{
	uint64_t	left = msg->max_body - msg->body_bytes;
	size_t		used, max = HTTP_CHUNK_LINE_MAX;
	int		r;

	if (left < max)
		max = (size_t)left;
	r = http_msg_take_line(in, max, line, &used);
	if (r == -1)
		return (left < HTTP_CHUNK_LINE_MAX ? -2 : -1);
	if (r == 1)
		msg->body_bytes += used;
	return (r);
}

static int
http_token_char(int c)
{
	return (isalnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static int
http_msg_version(struct http_msg *msg, const char *s)
{
	if (strncmp(s, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)s[7]) ||
	    s[8] != '\0')
		return (-1);
	msg->minor = s[7] - '0';
	return (0);
}

/* Parse "METHOD TARGET HTTP/1.x" or "HTTP/1.x NNN reason". */
static int
http_msg_start_line(struct http_msg *msg, char *line)
{
	char		*sp1, *sp2;
	const char	*errstr;
	size_t		 i;

	if ((sp1 = strchr(line, ' ')) == NULL)
		return (-1);
	*sp1++ = '\0';
	if (msg->kind == HTTP_MSG_REQUEST) {
		if ((sp2 = strchr(sp1, ' ')) == NULL)
			return (-1);
		*sp2++ = '\0';
		if (*line == '\0' || *sp1 == '\0')
			return (-1);
		for (i = 0; line[i] != '\0'; i++)
			if (!http_token_char((unsigned char)line[i]))
				return (-1);
		for (i = 0; sp1[i] != '\0'; i++)
			if ((unsigned char)sp1[i] <= 0x20 ||
			    (unsigned char)sp1[i] == 0x7f)
				return (-1);
		if (strncmp(sp2, "HTTP/", 5) != 0)
			return (-1);
		if (http_msg_version(msg, sp2) != 0) {
			msg->error = HTTP_ERR_VERSION;
			return (-1);
		}
		msg->method = xstrdup(line);
		msg->target = xstrdup(sp1);
	} else {
		if (http_msg_version(msg, line) != 0)
			return (-1);
		if ((sp2 = strchr(sp1, ' ')) != NULL)
			*sp2++ = '\0';
		if (strlen(sp1) != 3)
			return (-1);
		msg->status = strtonum(sp1, 100, 599, &errstr);
		if (errstr != NULL)
			return (-1);
		msg->reason = xstrdup(sp2 != NULL ? sp2 : "");
	}
	return (0);
}

/* Parse one "Name: value" line into the header list. */
static int
http_msg_header_line(struct http_msg *msg, char *line)
{
	struct http_header	*h;
	char			*colon, *v, *end;
	size_t			 i, nlen, vlen;

	if (*line == ' ' || *line == '\t')
		return (-1);		/* obsolete folding */
	if ((colon = strchr(line, ':')) == NULL || colon == line)
		return (-1);
	*colon = '\0';
	for (i = 0; line[i] != '\0'; i++)
		if (!http_token_char((unsigned char)line[i]))
			return (-1);
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	end = v + strlen(v);
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	for (i = 0; v[i] != '\0'; i++)
		if (((unsigned char)v[i] < 0x20 && v[i] != '\t') ||
		    (unsigned char)v[i] == 0x7f)
			return (-1);
	/* One allocation: the name and the value follow the header. */
	nlen = strlen(line);
	vlen = end - v;
	h = xmalloc(sizeof *h + nlen + 1 + vlen + 1);
	h->name = (char *)(h + 1);
	memcpy(h->name, line, nlen + 1);
	h->value = h->name + nlen + 1;
	memcpy(h->value, v, vlen + 1);
	TAILQ_INSERT_TAIL(&msg->headers, h, entry);
	return (0);
}

/* Decide how the body is framed once the blank line is seen. */
static int
http_msg_end_head(struct http_msg *msg)
{
	struct http_header	*h;
	const char		*te = NULL, *errstr;
	int64_t			 cl = -1, v = 0;
	int			 hosts = 0, auths = 0, origins = 0;

	TAILQ_FOREACH(h, &msg->headers, entry) {
		if (strcasecmp(h->name, "Host") == 0)
			hosts++;
		if (strcasecmp(h->name, "Authorization") == 0)
			auths++;
		if (strcasecmp(h->name, "Origin") == 0)
			origins++;
		if (strcasecmp(h->name, "Content-Length") == 0) {
			/* Digits only: no sign, no blank, no list. */
			errstr = NULL;
			if (h->value[0] == '\0' || strlen(h->value) > 18 ||
			    h->value[strspn(h->value, "0123456789")] != '\0')
				errstr = "not a number";
			else
				v = strtonum(h->value, 0, INT64_MAX, &errstr);
			if (errstr != NULL) {
				snprintf(msg->errbuf, sizeof msg->errbuf,
				    "bad Content-Length");
				return (-1);
			}
			if (cl != -1 && cl != v) {
				snprintf(msg->errbuf, sizeof msg->errbuf,
				    "conflicting Content-Length headers");
				return (-1);
			}
			cl = v;
		} else if (strcasecmp(h->name, "Transfer-Encoding") == 0) {
			if (te != NULL) {
				snprintf(msg->errbuf, sizeof msg->errbuf,
				    "repeated Transfer-Encoding");
				return (-1);
			}
			te = h->value;
		}
	}
	/* A request names exactly one host, whatever its version. */
	if (msg->kind == HTTP_MSG_REQUEST && hosts != 1) {
		snprintf(msg->errbuf, sizeof msg->errbuf, hosts == 0 ?
		    "no Host header" : "more than one Host header");
		return (-1);
	}
	/*
	 * One credential: a proxy in front may read the last of two where
	 * we would read the first, and authorize another caller than ours.
	 */
	if (msg->kind == HTTP_MSG_REQUEST && (auths > 1 || origins > 1)) {
		snprintf(msg->errbuf, sizeof msg->errbuf, "more than one %s"
		    " header", auths > 1 ? "Authorization" : "Origin");
		return (-1);
	}
	if (te != NULL) {
		if (strcasecmp(te, "chunked") != 0) {
			snprintf(msg->errbuf, sizeof msg->errbuf,
			    "unsupported Transfer-Encoding");
			return (-1);
		}
		if (cl != -1) {
			snprintf(msg->errbuf, sizeof msg->errbuf,
			    "both Content-Length and Transfer-Encoding");
			return (-1);
		}
		msg->chunked = 1;
		msg->state = HTTP_MSG_CHUNK_SIZE;
		return (0);
	}
	msg->content_length = cl;
	if (msg->kind == HTTP_MSG_RESPONSE && (msg->no_body ||
	    (msg->status >= 100 && msg->status < 200) || msg->status == 204 ||
	    msg->status == 304)) {
		msg->state = HTTP_MSG_DONE;
		return (0);
	}
	if (cl == -1) {
		if (msg->kind == HTTP_MSG_REQUEST)
			msg->state = HTTP_MSG_DONE;
		else
			msg->state = HTTP_MSG_UNTIL_EOF;
		return (0);
	}
	if ((uint64_t)cl > msg->max_body) {
		msg->error = HTTP_ERR_BODY_TOO_LARGE;
		snprintf(msg->errbuf, sizeof msg->errbuf,
		    "body of %lld bytes is over the limit of %llu bytes",
		    (long long)cl, (unsigned long long)msg->max_body);
		return (-1);
	}
	msg->remaining = cl;
	msg->state = cl == 0 ? HTTP_MSG_DONE : HTTP_MSG_BODY;
	return (0);
}

/* Move up to n body bytes from in to msg->body, enforcing max_body. */
static int
http_msg_take(struct http_msg *msg, struct evbuffer *in, uint64_t n)
{
	if (msg->body_bytes + n > msg->max_body)
		return (-1);
	evbuffer_remove_buffer(in, msg->body, n);
	msg->body_bytes += n;
	return (0);
}

/*
 * Consume what the buffer holds of the message. HTTP_PARSE_HEAD is
 * returned once, when the head completes (the caller may then inspect
 * headers, e.g. answer Expect: 100-continue, and call again).
 */
enum http_parse_result
http_msg_parse(struct http_msg *msg, struct evbuffer *in)
{
	char		*line = NULL, *ext;
	const char	*errstr;
	uint64_t	 n, size;
	size_t		 avail;
	int		 r;

	for (;;) {
		switch (msg->state) {
		case HTTP_MSG_START:
		case HTTP_MSG_HEADERS:
		case HTTP_MSG_TRAILERS:
			r = http_msg_line(msg, in, &line);
			if (r == 0)
				return (HTTP_PARSE_MORE);
			if (r == -1)
				return (http_msg_fail(msg,
				    HTTP_ERR_HEADERS_TOO_LARGE,
				    "header section is too large"));
			if (r == -3)
				return (http_msg_fail(msg, HTTP_ERR_SYNTAX,
				    "a NUL byte in the header section"));
			if (msg->state == HTTP_MSG_START) {
				if (*line == '\0' && msg->kind ==
				    HTTP_MSG_REQUEST && msg->head_bytes <= 4) {
					free(line);	/* leading CRLF */
					continue;
				}
				r = http_msg_start_line(msg, line);
				free(line);
				if (r != 0)
					return (http_msg_fail(msg,
					    msg->error == HTTP_ERR_VERSION ?
					    HTTP_ERR_VERSION : HTTP_ERR_SYNTAX,
					    "malformed start line"));
				msg->state = HTTP_MSG_HEADERS;
				continue;
			}
			if (*line == '\0') {
				free(line);
				if (msg->state == HTTP_MSG_TRAILERS) {
					msg->state = HTTP_MSG_DONE;
					return (HTTP_PARSE_DONE);
				}
				if (http_msg_end_head(msg) != 0) {
					msg->state = HTTP_MSG_ERROR;
					if (msg->error == HTTP_ERR_NONE)
						msg->error = HTTP_ERR_SYNTAX;
					return (HTTP_PARSE_ERROR);
				}
				return (HTTP_PARSE_HEAD);
			}
			if (msg->state == HTTP_MSG_TRAILERS) {
				free(line);	/* trailers are ignored */
				continue;
			}
			r = http_msg_header_line(msg, line);
			free(line);
			if (r != 0)
				return (http_msg_fail(msg, HTTP_ERR_SYNTAX,
				    "malformed header line"));
			continue;
		case HTTP_MSG_BODY:
		case HTTP_MSG_CHUNK_DATA:
			avail = evbuffer_get_length(in);
			if (avail == 0)
				return (HTTP_PARSE_MORE);
			n = avail < msg->remaining ? avail : msg->remaining;
			if (http_msg_take(msg, in, n) != 0)
				return (http_msg_fail(msg,
				    HTTP_ERR_BODY_TOO_LARGE,
				    "body is over the limit"));
			msg->remaining -= n;
			if (msg->remaining != 0)
				return (HTTP_PARSE_MORE);
			if (msg->state == HTTP_MSG_BODY) {
				msg->state = HTTP_MSG_DONE;
				return (HTTP_PARSE_DONE);
			}
			msg->state = HTTP_MSG_CHUNK_END;
			continue;
		case HTTP_MSG_CHUNK_END:
			r = http_msg_chunk_line(msg, in, &line);
			if (r == 0)
				return (HTTP_PARSE_MORE);
			if (r == -2)
				return (http_msg_fail(msg,
				    HTTP_ERR_BODY_TOO_LARGE,
				    "body is over the limit"));
			if (r < 0 || *line != '\0') {
				if (r == 1)
					free(line);
				return (http_msg_fail(msg, HTTP_ERR_SYNTAX,
				    "malformed chunk end"));
			}
			free(line);
			msg->state = HTTP_MSG_CHUNK_SIZE;
			continue;
		case HTTP_MSG_CHUNK_SIZE:
			r = http_msg_chunk_line(msg, in, &line);
			if (r == 0)
				return (HTTP_PARSE_MORE);
			if (r == -2)
				return (http_msg_fail(msg,
				    HTTP_ERR_BODY_TOO_LARGE,
				    "body is over the limit"));
			if (r == -1 || r == -3)
				return (http_msg_fail(msg, HTTP_ERR_SYNTAX,
				    r == -1 ? "chunk size line is too long" :
				    "a NUL byte in a chunk size line"));
			/* HEX [BWS] [";" extensions]: nothing else. */
			errstr = NULL;
			ext = line + strspn(line, "0123456789abcdefABCDEF");
			ext += strspn(ext, " \t");
			if (*ext != '\0' && *ext != ';')
				errstr = "bad";
			line[strspn(line, "0123456789abcdefABCDEF")] = '\0';
			if (*line == '\0' || strlen(line) > 15)
				errstr = "bad";
			size = errstr == NULL ? strtoull(line, NULL, 16) : 0;
			free(line);
			if (errstr != NULL)
				return (http_msg_fail(msg, HTTP_ERR_SYNTAX,
				    "malformed chunk size"));
			if (msg->body_bytes + size > msg->max_body)
				return (http_msg_fail(msg,
				    HTTP_ERR_BODY_TOO_LARGE,
				    "body is over the limit"));
			if (size == 0) {
				msg->state = HTTP_MSG_TRAILERS;
				continue;
			}
			msg->remaining = size;
			msg->state = HTTP_MSG_CHUNK_DATA;
			continue;
		case HTTP_MSG_UNTIL_EOF:
			avail = evbuffer_get_length(in);
			if (avail != 0 && http_msg_take(msg, in, avail) != 0)
				return (http_msg_fail(msg,
				    HTTP_ERR_BODY_TOO_LARGE,
				    "body is over the limit"));
			return (HTTP_PARSE_MORE);
		case HTTP_MSG_DONE:
			return (HTTP_PARSE_DONE);
		case HTTP_MSG_ERROR:
			return (HTTP_PARSE_ERROR);
		}
	}
}

/* The stream has ended: complete a read-to-EOF body or fail. */
enum http_parse_result
http_msg_eof(struct http_msg *msg)
{
	switch (msg->state) {
	case HTTP_MSG_UNTIL_EOF:
	case HTTP_MSG_DONE:
		msg->state = HTTP_MSG_DONE;
		return (HTTP_PARSE_DONE);
	case HTTP_MSG_ERROR:
		return (HTTP_PARSE_ERROR);
	default:
		return (http_msg_fail(msg, HTTP_ERR_TRUNCATED,
		    "connection closed before the message was complete"));
	}
}

/* The value of the first header of that name, or NULL. */
const char *
http_msg_header(struct http_msg *msg, const char *name)
{
	struct http_header	*h;

	TAILQ_FOREACH(h, &msg->headers, entry) {
		if (strcasecmp(h->name, name) == 0)
			return (h->value);
	}
	return (NULL);
}

/*
 * The last line of a header. A list header given on several lines is one
 * list (RFC 9110), and a proxy appends its entry on a line of its own:
 * its word is in the last line, whatever a client put in the first.
 */
const char *
http_msg_header_last(struct http_msg *msg, const char *name)
{
	struct http_header	*h;
	const char		*value = NULL;

	TAILQ_FOREACH(h, &msg->headers, entry) {
		if (strcasecmp(h->name, name) == 0)
			value = h->value;
	}
	return (value);
}

/* Whether a comma-separated header value lists token (any case). */
int
http_header_has_token(const char *value, const char *token)
{
	size_t		 len = strlen(token);
	const char	*p = value;

	while (p != NULL && *p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (strncasecmp(p, token, len) == 0 && (p[len] == '\0' ||
		    p[len] == ',' || p[len] == ' ' || p[len] == '\t' ||
		    p[len] == ';'))
			return (1);
		p = strchr(p, ',');
	}
	return (0);
}

/* Whether the connection stays open after this message. */
int
http_msg_keepalive(struct http_msg *msg)
{
	const char	*c = http_msg_header(msg, "Connection");

	if (c != NULL && http_header_has_token(c, "close"))
		return (0);
	if (msg->minor == 0)
		return (c != NULL && http_header_has_token(c, "keep-alive"));
	return (1);
}

const char *
http_status_text(int status)
{
	switch (status) {
	case 100: return ("Continue");
	case 200: return ("OK");
	case 202: return ("Accepted");
	case 204: return ("No Content");
	case 400: return ("Bad Request");
	case 401: return ("Unauthorized");
	case 403: return ("Forbidden");
	case 404: return ("Not Found");
	case 405: return ("Method Not Allowed");
	case 406: return ("Not Acceptable");
	case 408: return ("Request Timeout");
	case 409: return ("Conflict");
	case 411: return ("Length Required");
	case 413: return ("Content Too Large");
	case 415: return ("Unsupported Media Type");
	case 422: return ("Unprocessable Content");
	case 429: return ("Too Many Requests");
	case 431: return ("Request Header Fields Too Large");
	case 500: return ("Internal Server Error");
	case 501: return ("Not Implemented");
	case 502: return ("Bad Gateway");
	case 503: return ("Service Unavailable");
	case 504: return ("Gateway Timeout");
	case 505: return ("HTTP Version Not Supported");
	default: return ("Unknown");
	}
}
