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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "http.h"
#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
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
	CHECK_INT(feed(m, "GET /health HTTP/1.0\nHost: a\n\n", 0),
	    HTTP_PARSE_DONE);
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
	CHECK_INT(feed(m, "POST /mcp HTTP/1.1\r\nHost: a\r\n"
	    "Content-Length: 17825792\r\n\r\n", 0), HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_BODY_TOO_LARGE);
	http_msg_free(m);

	/* A chunked body growing over the limit. */
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 8);
	CHECK_INT(feed(m, "POST /mcp HTTP/1.1\r\nHost: a\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n5\r\nabcde"
	    "\r\n0\r\n\r\n", 0), HTTP_PARSE_ERROR);
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
		"GET / HTTP/1.1\r\nHost: a\r\nNo-Colon\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nA: b\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		    "Content-Length: 3\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		    "\r\nzz\r\n",
		"GE(T / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n",
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
	CHECK_INT(feed(m, "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 0),
	    HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_VERSION);
	http_msg_free(m);
	return (0);
}

/* A request carries exactly one Host header, whatever its version. */
static int
test_request_host(void)
{
	static const struct {
		const char		*text;
		enum http_parse_result	 want;
	} cases[] = {
		{ "GET / HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_PARSE_DONE },
		{ "GET / HTTP/1.0\r\nHost: a\r\n\r\n", HTTP_PARSE_DONE },
		{ "GET / HTTP/1.1\r\nhost: a\r\n\r\n", HTTP_PARSE_DONE },
		{ "GET / HTTP/1.1\r\n\r\n", HTTP_PARSE_ERROR },
		{ "GET / HTTP/1.0\r\n\r\n", HTTP_PARSE_ERROR },
		{ "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		    HTTP_PARSE_ERROR },
		{ "GET / HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n",
		    HTTP_PARSE_ERROR },
		{ "GET / HTTP/1.0\r\nHost: a\r\nX: 1\r\nHost: a\r\n\r\n",
		    HTTP_PARSE_ERROR },
	};
	struct http_msg	*m;
	size_t		 i;
	int		 bytewise;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		for (bytewise = 0; bytewise < 2; bytewise++) {
			m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
			if (feed(m, cases[i].text, bytewise) !=
			    cases[i].want) {
				fprintf(stderr, "case %zu: %s\n", i,
				    cases[i].text);
				return (1);
			}
			if (cases[i].want == HTTP_PARSE_ERROR)
				CHECK_INT(m->error, HTTP_ERR_SYNTAX);
			http_msg_free(m);
		}
	}
	/* A response needs none. */
	m = http_msg_new(HTTP_MSG_RESPONSE, 1024, 1024);
	CHECK_INT(feed(m, "HTTP/1.1 204 No Content\r\n\r\n", 0),
	    HTTP_PARSE_DONE);
	http_msg_free(m);
	return (0);
}

/* Content-Length is digits alone; repeated, it must agree. */
static int
test_request_content_length(void)
{
	static const struct {
		const char	*headers;
		int		 length;	/* -1: refused */
	} cases[] = {
		{ "Content-Length: 4\r\n", 4 },
		{ "Content-Length: 0004\r\n", 4 },
		{ "Content-Length:4 \r\n", 4 },
		{ "Content-Length: 4\r\ncontent-length: 4\r\n", 4 },
		{ "Content-Length: +4\r\n", -1 },
		{ "Content-Length: -1\r\n", -1 },
		{ "Content-Length: -0\r\n", -1 },
		{ "Content-Length: 4x\r\n", -1 },
		{ "Content-Length: 0x4\r\n", -1 },
		{ "Content-Length: 4 4\r\n", -1 },
		{ "Content-Length: 4,4\r\n", -1 },
		{ "Content-Length: 4, 4\r\n", -1 },
		{ "Content-Length: 4.0\r\n", -1 },
		{ "Content-Length: \r\n", -1 },
		{ "Content-Length: 1e3\r\n", -1 },
		{ "Content-Length: 99999999999999999999\r\n", -1 },
		{ "Content-Length: 4\r\nContent-Length: 5\r\n", -1 },
		{ "Content-Length: 4\r\nContent-Length: +4\r\n", -1 },
	};
	struct http_msg	*m;
	char		 text[256];
	size_t		 i;
	int		 bytewise;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(text, sizeof text, "POST / HTTP/1.1\r\nHost: a\r\n"
		    "%s\r\nabcd", cases[i].headers);
		for (bytewise = 0; bytewise < 2; bytewise++) {
			m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
			if (feed(m, text, bytewise) != (cases[i].length == -1 ?
			    HTTP_PARSE_ERROR : HTTP_PARSE_DONE)) {
				fprintf(stderr, "case %zu: %s\n", i,
				    cases[i].headers);
				return (1);
			}
			if (cases[i].length == -1)
				CHECK_INT(m->error, HTTP_ERR_SYNTAX);
			else
				CHECK_INT(evbuffer_get_length(m->body),
				    cases[i].length);
			http_msg_free(m);
		}
	}
	return (0);
}

/* A chunked body of n chunks of one byte each ("a"). */
static char *
chunks(int n)
{
	struct evbuffer	*b = evbuffer_new();
	char		*text;
	size_t		 len;
	int		 i;

	evbuffer_add_printf(b, "POST / HTTP/1.1\r\nHost: a\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	for (i = 0; i < n; i++)
		evbuffer_add(b, "1\r\na\r\n", 6);
	evbuffer_add_printf(b, "0\r\n\r\n");
	len = evbuffer_get_length(b);
	text = xmalloc(len + 1);
	evbuffer_remove(b, text, len);
	text[len] = '\0';
	evbuffer_free(b);
	return (text);
}

/*
 * Chunk-size lines and chunk ends are body: they count against the body
 * limit, not the header limit, and a chunk's data running past its size
 * is an error, in one buffer or byte by byte.
 */
static int
test_request_chunk_lines(void)
{
	struct http_msg	*m;
	char		*text, big[6000];
	int		 bytewise;

	/* 20,000 chunks: 120,003 bytes of body, 1 KiB of header limit. */
	text = chunks(20000);
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 128 * 1024);
	CHECK_INT(feed(m, text, 0), HTTP_PARSE_DONE);
	CHECK_INT(evbuffer_get_length(m->body), 20000);
	CHECK_INT(m->body_bytes, 120003);
	CHECK_INT(m->head_bytes, 58);
	http_msg_free(m);
	free(text);

	/* 30,000: 30,000 bytes of data, but 180,003 on the wire. */
	text = chunks(30000);
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 128 * 1024);
	CHECK_INT(feed(m, text, 0), HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_BODY_TOO_LARGE);
	http_msg_free(m);
	free(text);

	/* Exactly at the limit, and one byte over. */
	text = chunks(10);
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 63);
	CHECK_INT(feed(m, text, 1), HTTP_PARSE_DONE);
	http_msg_free(m);
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 62);
	CHECK_INT(feed(m, text, 1), HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_BODY_TOO_LARGE);
	http_msg_free(m);
	free(text);

	for (bytewise = 0; bytewise < 2; bytewise++) {
		/* A chunk-size line longer than HTTP_CHUNK_LINE_MAX. */
		memset(big, 'e', sizeof big - 1);
		big[sizeof big - 1] = '\0';
		text = NULL;
		xasprintf(&text, "POST / HTTP/1.1\r\nHost: a\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n1;%s\r\na\r\n0\r\n\r\n",
		    big);
		m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024 * 1024);
		CHECK_INT(feed(m, text, bytewise), HTTP_PARSE_ERROR);
		CHECK_INT(m->error, HTTP_ERR_SYNTAX);
		http_msg_free(m);
		free(text);

		/* Data running past the chunk's size, with and without
		 * an end of line in sight. */
		xasprintf(&text, "POST / HTTP/1.1\r\nHost: a\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n");
		m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
		CHECK_INT(feed(m, text, bytewise), HTTP_PARSE_ERROR);
		CHECK_INT(m->error, HTTP_ERR_SYNTAX);
		http_msg_free(m);
		free(text);
		xasprintf(&text, "POST / HTTP/1.1\r\nHost: a\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n1\r\na%s", big);
		m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024 * 1024);
		CHECK_INT(feed(m, text, bytewise), HTTP_PARSE_ERROR);
		CHECK_INT(m->error, HTTP_ERR_SYNTAX);
		http_msg_free(m);
		free(text);
	}
	return (0);
}

/*
 * A NUL byte anywhere in the head, and anything after a chunk size but
 * blanks and extensions, are errors: a value cut short at a NUL, or a
 * size read past its junk, would mean one thing to us and another to a
 * proxy in front.
 */
static int
test_request_nul_and_junk(void)
{
	static const char	 nulhost[] = "GET / HTTP/1.1\r\nHost: a\0.evil"
	    "\r\n\r\n";
	static const char	 nulte[] = "POST / HTTP/1.1\r\nHost: a\r\n"
	    "Transfer-Encoding: chunked\0gzip\r\n\r\n1\r\na\r\n0\r\n"
	    "\r\n";
	static const char	 nulsize[] = "POST / HTTP/1.1\r\nHost: a\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n1\0\r\na\r\n0\r\n\r\n";
	const struct {
		const char	*text;
		size_t		 len;
	} nul[] = {
		{ nulhost, sizeof nulhost - 1 },
		{ nulte, sizeof nulte - 1 },
		{ nulsize, sizeof nulsize - 1 },
	};
	struct http_msg		*m;
	struct evbuffer		*in;
	enum http_parse_result	 r;
	size_t			 i;

	for (i = 0; i < sizeof nul / sizeof nul[0]; i++) {
		m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
		in = evbuffer_new();
		evbuffer_add(in, nul[i].text, nul[i].len);
		do {
			r = http_msg_parse(m, in);
		} while (r == HTTP_PARSE_HEAD);
		CHECK_INT(r, HTTP_PARSE_ERROR);
		CHECK_INT(m->error, HTTP_ERR_SYNTAX);
		evbuffer_free(in);
		http_msg_free(m);
	}
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
	CHECK_INT(feed(m, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:"
	    " chunked\r\n\r\n1 garbage\r\na\r\n0\r\n\r\n", 0),
	    HTTP_PARSE_ERROR);
	CHECK_INT(m->error, HTTP_ERR_SYNTAX);
	http_msg_free(m);
	/* Blanks before an extension are allowed, and so is the extension. */
	m = http_msg_new(HTTP_MSG_REQUEST, 1024, 1024);
	CHECK_INT(feed(m, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:"
	    " chunked\r\n\r\n1 ;name=value\r\na\r\n1\t\r\nb\r\n0\r\n"
	    "\r\n", 0), HTTP_PARSE_DONE);
	CHECK_INT(evbuffer_get_length(m->body), 2);
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

/* Every status a surface answers has its reason phrase. */
static int
test_status_text(void)
{
	static const int statuses[] = { 200, 204, 400, 401, 403, 404, 405,
	    408, 409, 413, 415, 422, 429, 431, 500, 502, 503 };
	size_t	i;

	for (i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
		CHECK(strcmp(http_status_text(statuses[i]), "Unknown") != 0);
	CHECK_STR(http_status_text(409), "Conflict");
	CHECK_STR(http_status_text(422), "Unprocessable Content");
	CHECK_STR(http_status_text(429), "Too Many Requests");
	return (0);
}

const struct unit_case unit_http_cases[] = {
	{ "http/request-simple", test_request_simple },
	{ "http/request-no-body", test_request_no_body },
	{ "http/request-chunked", test_request_chunked },
	{ "http/request-pipelined", test_request_pipelined },
	{ "http/request-limits", test_request_limits },
	{ "http/request-malformed", test_request_malformed },
	{ "http/request-host", test_request_host },
	{ "http/request-content-length", test_request_content_length },
	{ "http/request-chunk-lines", test_request_chunk_lines },
	{ "http/request-nul-and-junk", test_request_nul_and_junk },
	{ "http/response-length", test_response_length },
	{ "http/response-chunked", test_response_chunked },
	{ "http/response-eof", test_response_eof },
	{ "http/response-garbage", test_response_garbage },
	{ "http/header-tokens", test_header_tokens },
	{ "http/status-text", test_status_text },
	{ NULL, NULL }
};
