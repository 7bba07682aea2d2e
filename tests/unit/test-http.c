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
 * The HTTP/1.1 message parser, fed from evbuffers: requests as our server
 * reads them and responses as the Docker client reads them.
 */

#include "config.h"

#include <string.h>

#include <event2/buffer.h>

#include "http.h"
#include "sandbox-mcp.h"
#include "unit.h"

/* Parse text (in one go, or byte by byte) and return the final result. */
static enum http_parse_result
feed(struct http_msg *msg, const char *text, int bytewise)
{
	struct evbuffer		*in = evbuffer_new();
	enum http_parse_result	 r = HTTP_PARSE_MORE;
	size_t			 i, len = strlen(text);

	if (!bytewise) {
		evbuffer_add(in, text, len);
		do {
			r = http_msg_parse(msg, in);
		} while (r == HTTP_PARSE_HEAD);
	} else {
		for (i = 0; i < len; i++) {
			evbuffer_add(in, text + i, 1);
			do {
				r = http_msg_parse(msg, in);
			} while (r == HTTP_PARSE_HEAD);
			if (r == HTTP_PARSE_ERROR || r == HTTP_PARSE_DONE)
				break;
		}
	}
	evbuffer_free(in);
	return (r);
}

static int
test_request_simple(void)
{
	struct http_msg	*m;
	int		 bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		m = http_msg_new(HTTP_MSG_REQUEST, 65536, 1024);
		CHECK_INT(feed(m, "POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\n"
		    "Content-Type:  application/json \r\n"
		    "Content-Length: 4\r\n\r\nabcd", bytewise),
		    HTTP_PARSE_DONE);
		CHECK_STR(m->method, "POST");
		CHECK_STR(m->target, "/mcp?x=1");
		CHECK_INT(m->minor, 1);
		CHECK_STR(http_msg_header(m, "content-type"),
		    "application/json");
		CHECK_INT(evbuffer_get_length(m->body), 4);
		CHECK_INT(http_msg_keepalive(m), 1);
		http_msg_free(m);
	}
	return (0);
}

static int
test_request_no_body(void)
{
	struct http_msg	*m;

	m = http_msg_new(HTTP_MSG_REQUEST, 65536, 1024);
	CHECK_INT(feed(m, "GET /health HTTP/1.0\n\n", 0), HTTP_PARSE_DONE);
	CHECK_INT(m->minor, 0);
	CHECK_INT(http_msg_keepalive(m), 0);
	http_msg_free(m);
	return (0);
}

static int
test_request_chunked(void)
{
	struct http_msg	*m;
	char		 buf[32];
	int		 bytewise;

	for (bytewise = 0; bytewise < 2; bytewise++) {
		m = http_msg_new(HTTP_MSG_REQUEST, 65536, 1024);
		CHECK_INT(feed(m, "POST /mcp HTTP/1.1\r\nHost: a\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n"
		    "4;ext=1\r\nabcd\r\nA\r\n0123456789\r\n0\r\n"
		    "Trailer: x\r\n\r\n", bytewise), HTTP_PARSE_DONE);
		CHECK_INT(evbuffer_get_length(m->body), 14);
		evbuffer_remove(m->body, buf, 14);
		buf[14] = '\0';
		CHECK_STR(buf, "abcd0123456789");
		http_msg_free(m);
	}
	return (0);
}

static int
test_request_pipelined(void)
{
	struct http_msg	*m;
	struct evbuffer	*in = evbuffer_new();
	const char	*two = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
			    "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";

	m = http_msg_new(HTTP_MSG_REQUEST, 65536, 1024);
	evbuffer_add(in, two, strlen(two));
	CHECK_INT(http_msg_parse(m, in), HTTP_PARSE_HEAD);
	CHECK_INT(http_msg_parse(m, in), HTTP_PARSE_DONE);
	CHECK_STR(m->target, "/a");
	http_msg_reset(m);
	CHECK_INT(http_msg_parse(m, in), HTTP_PARSE_HEAD);
	CHECK_STR(m->target, "/b");
	CHECK_INT(evbuffer_get_length(in), 0);
	http_msg_free(m);
	evbuffer_free(in);
	return (0);
}

static int
test_request_limits(void)
{
	struct http_msg	*m;
	struct evbuffer	*in = evbuffer_new();
	char		 big[2048];

	/* A header block over the limit, with no end in sight. */
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
	memset(big, 'a', sizeof big);
	evbuffer_add_printf(in, "POST /mcp HTTP/1.1\r\nX-Big: ");
	evbuffer_add(in, big, sizeof big);
	CHECK_INT(http_msg_parse(m, in), HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_HEADERS_TOO_LARGE);
	http_msg_free(m);
	evbuffer_drain(in, evbuffer_get_length(in));

	/* A declared body over the limit is refused before it is read. */
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
	CHECK_INT(feed(m, "POST /mcp HTTP/1.1\r\nContent-Length: 17825792"
	    "\r\n\r\n", 0), HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_BODY_TOO_LARGE);
	http_msg_free(m);

	/* A chunked body growing over the limit. */
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 8);
	CHECK_INT(feed(m, "POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked"
	    "\r\n\r\n5\r\nabcde\r\n5\r\nabcde\r\n0\r\n\r\n", 0),
	    HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_BODY_TOO_LARGE);
	http_msg_free(m);
	evbuffer_free(in);
	return (0);
}

static int
test_request_malformed(void)
{
	static const char *bad[] = {
		"GARBAGE\r\n\r\n",
		"GET\r\n\r\n",
		"GET / HTTP/1.1\r\nNo-Colon\r\n\r\n",
		"GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
		"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		    "Content-Length: 3\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"GE(T / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
		NULL
	};
	struct http_msg	*m;
	int		 i;

	for (i = 0; bad[i] != NULL; i++) {
		m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
		if (feed(m, bad[i], 0) != HTTP_PARSE_ERROR) {
			fprintf(stderr, "accepted: %s\n", bad[i]);
			return (1);
		}
		http_msg_free(m);
	}
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
	CHECK_INT(feed(m, "GET / HTTP/2.0\r\n\r\n", 0), HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_VERSION);
	http_msg_free(m);
	return (0);
}

static int
test_response_length(void)
{
	struct http_msg	*m;

	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 1024);
	CHECK_INT(feed(m, "HTTP/1.1 200 OK\r\nContent-Type: application/json"
	    "\r\nContent-Length: 2\r\n\r\n[]", 1), HTTP_PARSE_DONE);
	CHECK_INT(m->status, 200);
	CHECK_STR(m->reason, "OK");
	CHECK_INT(evbuffer_get_length(m->body), 2);
	http_msg_free(m);

	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 1024);
	CHECK_INT(feed(m, "HTTP/1.1 204 No Content\r\n\r\n", 0),
	    HTTP_PARSE_DONE);
	CHECK_INT(m->status, 204);
	http_msg_free(m);
	return (0);
}

static int
test_response_chunked(void)
{
	struct http_msg	*m;

	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 1024);
	CHECK_INT(feed(m, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n1\r\n[\r\n1\r\n]\r\n0\r\n\r\n", 1), HTTP_PARSE_DONE);
	CHECK_INT(evbuffer_get_length(m->body), 2);
	http_msg_free(m);
	return (0);
}

static int
test_response_eof(void)
{
	struct http_msg	*m;

	/* No length: the body runs to the end of the stream. */
	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 1024);
	CHECK_INT(feed(m, "HTTP/1.0 200 OK\r\n\r\nhello", 0),
	    HTTP_PARSE_MORE);
	CHECK_INT(http_msg_eof(m), HTTP_PARSE_DONE);
	CHECK_INT(evbuffer_get_length(m->body), 5);
	http_msg_free(m);

	/* A stream cut inside a Content-Length body is truncated. */
	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 1024);
	CHECK_INT(feed(m, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
	    0), HTTP_PARSE_MORE);
	CHECK_INT(http_msg_eof(m), HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_TRUNCATED);
	http_msg_free(m);

	/* Cut inside the head. */
	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 1024);
	CHECK_INT(feed(m, "HTTP/1.1 200 OK\r\nContent-", 0), HTTP_PARSE_MORE);
	CHECK_INT(http_msg_eof(m), HTTP_PARSE_ERROR);
	http_msg_free(m);
	return (0);
}

static int
test_response_garbage(void)
{
	struct http_msg	*m;

	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 1024);
	CHECK_INT(feed(m, "\x16\x03\x01garbage\r\n\r\n", 0),
	    HTTP_PARSE_ERROR);
	http_msg_free(m);
	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 1024);
	CHECK_INT(feed(m, "HTTP/1.1 2000 OK\r\n\r\n", 0), HTTP_PARSE_ERROR);
	http_msg_free(m);
	m = http_msg_new(HTTP_MSG_RESPONSE, 65536, 4);
	CHECK_INT(feed(m, "HTTP/1.1 200 OK\r\n\r\nlonger than four", 0),
	    HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_BODY_TOO_LARGE);
	http_msg_free(m);
	return (0);
}

static int
test_header_tokens(void)
{
	CHECK(http_header_has_token("keep-alive, Upgrade", "upgrade"));
	CHECK(http_header_has_token("application/json, text/event-stream",
	    "text/event-stream"));
	CHECK(http_header_has_token("application/json;q=0.9",
	    "application/json"));
	CHECK(!http_header_has_token("application/jsonx", "application/json"));
	CHECK(!http_header_has_token("", "close"));
	return (0);
}

const struct unit_case unit_http_cases[] = {
	{ "http/request-simple", test_request_simple },
	{ "http/request-no-body", test_request_no_body },
	{ "http/request-chunked", test_request_chunked },
	{ "http/request-pipelined", test_request_pipelined },
	{ "http/request-limits", test_request_limits },
	{ "http/request-malformed", test_request_malformed },
	{ "http/response-length", test_response_length },
	{ "http/response-chunked", test_response_chunked },
	{ "http/response-eof", test_response_eof },
	{ "http/response-garbage", test_response_garbage },
	{ "http/header-tokens", test_header_tokens },
	{ NULL, NULL }
};
