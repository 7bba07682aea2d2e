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
 * libFuzzer harness: the MCP protocol layer on arbitrary messages, on a
 * session already initialized under 2025-03-26 (so batches are parsed).
 * Tool calls that would reach the Docker Engine or the disk are answered
 * through the normal path; those that wait are left pending and the
 * session is closed under them, which is itself a case worth fuzzing.
 */

#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fuzz_reply_cb(struct mcp_reply *reply, cJSON *response, void *arg)
{
	char	*text;

	if (response != NULL) {
		text = util_json_print(response);
		free(text);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char	 init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	    "\"2025-03-26\"}}";
	struct mcp_session	*s;
	struct mcp_reply	*reply;
	static char		 state[] = "/tmp/fuzz-jsonrpc.XXXXXX";

	if (cfg == NULL) {
		util_json_init();
		log_init(0, -1);
		cfg = cfg_new();
		free(cfg->state_dir);
		if (mkdtemp(state) == NULL)
			abort();
		cfg->state_dir = strdup(state);
		/* Docker calls fail fast: no such socket. */
		free(cfg->docker_socket);
		cfg->docker_socket = strdup("/nonexistent/docker.sock");
		ev_base = event_base_new();
	}
	s = mcp_session_new(MCP_TRANSPORT_STDIO, TOOLSET_ALL, NULL,
	    TENANT_LOCAL);
	reply = mcp_receive(s, init, sizeof init - 1, fuzz_reply_cb, NULL);
	reply = mcp_receive(s, (const char *)data, size, fuzz_reply_cb, NULL);
	if (reply != NULL)
		mcp_reply_detach(reply);
	mcp_session_free(s);
	event_base_loop(ev_base, EVLOOP_NONBLOCK);
	return (0);
}
