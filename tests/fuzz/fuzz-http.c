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
 * libFuzzer harness: the HTTP/1.1 parser on arbitrary bytes, as a request
 * and as a response, whole and split at a fuzzer-chosen point.
 */

#include "config.h"

#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>

#include "http.h"
#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fuzz_one(enum http_msg_kind kind, const uint8_t *data, size_t size,
    size_t split)
{
	struct http_msg		*msg;
	struct evbuffer		*in;
	enum http_parse_result	 r;

	msg = http_msg_new(kind, 4096, 65536);
	in = evbuffer_new();
	evbuffer_add(in, data, split);
	do {
		r = http_msg_parse(msg, in);
	} while (r == HTTP_PARSE_HEAD);
	evbuffer_add(in, data + split, size - split);
	do {
		r = http_msg_parse(msg, in);
		if (r == HTTP_PARSE_DONE && evbuffer_get_length(in) != 0) {
			http_msg_reset(msg);	/* pipelined */
			r = HTTP_PARSE_HEAD;
		}
	} while (r == HTTP_PARSE_HEAD);
	if (r == HTTP_PARSE_MORE)
		(void)http_msg_eof(msg);
	(void)http_msg_keepalive(msg);
	(void)http_msg_header(msg, "Content-Type");
	evbuffer_free(in);
	http_msg_free(msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t	split = size > 0 ? data[0] % (size + 1) : 0;

	fuzz_one(HTTP_MSG_REQUEST, data, size, split);
	fuzz_one(HTTP_MSG_RESPONSE, data, size, split);
	return (0);
}
