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
 * JSON-RPC framing and the MCP protocol layer: what each kind of message
 * is answered with, on a session driven directly.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "unit.h"

static cJSON	*last;
static int	 calls;

static void
collect_cb(struct mcp_reply *reply, cJSON *response, void *arg)
{
	char	*text;

	cJSON_Delete(last);
	last = NULL;
	if (response != NULL) {
		/* As a peer reads it (a tool list is carried as raw text). */
		text = util_json_print(response);
		last = cJSON_Parse(text);
		free(text);
	}
	calls++;
}

/* Send text; return the response (owned by this file) or NULL. */
static cJSON *
send_msg(struct mcp_session *s, const char *text)
{
	cJSON_Delete(last);
	last = NULL;
	calls = 0;
	if (mcp_receive(s, text, strlen(text), collect_cb, NULL) != NULL)
		return (NULL);	/* pending: not for these cases */
	return (last);
}

static int
error_code(cJSON *msg)
{
	cJSON	*e = cJSON_GetObjectItem(msg, "error");

	if (e == NULL)
		return (0);
	return (cJSON_GetObjectItem(e, "code")->valueint);
}

static struct mcp_session *
initialized(const char *version)
{
	struct mcp_session	*s;
	char			 buf[256];

	unit_setup();
	s = mcp_session_new(MCP_TRANSPORT_STDIO, TOOLSET_MANAGEMENT, NULL,
	    TENANT_LOCAL);
	snprintf(buf, sizeof buf, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
	    "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
	    "\"version\":\"1\"}}}", version);
	send_msg(s, buf);
	return (s);
}

static int
test_parse_error(void)
{
	struct mcp_session	*s = initialized("2025-06-18");
	cJSON			*r;

	/* The id its head shows is answered, so the client stops waiting. */
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":1,");
	CHECK(r != NULL);
	CHECK_INT(error_code(r), JSONRPC_PARSE_ERROR);
	CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "id")), 1);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xff\"}");
	CHECK_INT(error_code(r), JSONRPC_PARSE_ERROR);
	CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "id")), 1);
	r = send_msg(s, "{\"params\":{\"id\":5,\"a\":[1,{\"b\":\"}\"}]},"
	    " \"id\" : \"x\\\"y\", broken");
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(r, "id")),
	    "x\"y");
	/* No id to be sure of: null. */
	r = send_msg(s, "{\"params\":{\"id\":5,\"a\":[1,{broken");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
	r = send_msg(s, "[{\"id\":5,");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
	r = send_msg(s, "{\"id\":{\"a\":1},");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
	r = send_msg(s, "{\"id\":tru,");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
	/* Not quite a number: no id. */
	r = send_msg(s, "{\"id\":12abc,");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
	r = send_msg(s, "{\"id\":1.2.3,");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
	r = send_msg(s, "{\"id\":0x10,");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
	r = send_msg(s, "{\"id\":-5e-,");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
	mcp_session_free(s);
	return (0);
}

static int
test_not_request(void)
{
	struct mcp_session	*s = initialized("2025-06-18");
	cJSON			*r;

	r = send_msg(s, "42");
	CHECK_INT(error_code(r), JSONRPC_INVALID_REQUEST);
	r = send_msg(s, "{\"id\":3,\"method\":\"ping\"}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_REQUEST);
	CHECK_INT(cJSON_GetObjectItem(r, "id")->valueint, 3);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":3}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_REQUEST);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_REQUEST);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\","
	    "\"params\":[1]}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_PARAMS);
	/* A response from the peer is taken silently. */
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}");
	CHECK(r == NULL);
	CHECK_INT(calls, 1);
	mcp_session_free(s);
	return (0);
}

static int
test_before_initialize(void)
{
	struct mcp_session	*s;
	cJSON			*r;

	unit_setup();
	s = mcp_session_new(MCP_TRANSPORT_STDIO, TOOLSET_MANAGEMENT, NULL,
	    TENANT_LOCAL);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/list\"}");
	CHECK_INT(error_code(r), JSONRPC_NOT_INITIALIZED);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
	CHECK(r != NULL && cJSON_IsObject(cJSON_GetObjectItem(r, "result")));
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
	    "\"initialize\",\"params\":{}}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_PARAMS);
	mcp_session_free(s);
	return (0);
}

static int
test_initialize(void)
{
	struct mcp_session	*s;
	cJSON			*r, *res;

	unit_setup();
	s = mcp_session_new(MCP_TRANSPORT_STDIO, TOOLSET_MANAGEMENT, NULL,
	    TENANT_LOCAL);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"1999-01-01\"}}");
	res = cJSON_GetObjectItem(r, "result");
	CHECK_STR(cJSON_GetObjectItem(res, "protocolVersion")->valuestring,
	    "2025-11-25");
	CHECK_STR(cJSON_GetObjectItem(r, "id")->valuestring, "a");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(res, "capabilities"), "tools"),
	    "listChanged")));
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "serverInfo"),
	    "name")->valuestring, "sandbox-mcp");
	CHECK(cJSON_IsString(cJSON_GetObjectItem(res, "instructions")));
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_REQUEST);
	mcp_session_free(s);

	s = initialized("2025-03-26");
	CHECK_STR(mcp_session_version(s), "2025-03-26");
	mcp_session_free(s);
	return (0);
}

static int
test_methods(void)
{
	struct mcp_session	*s = initialized("2025-06-18");
	cJSON			*r;

	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"nope\"}");
	CHECK_INT(error_code(r), JSONRPC_METHOD_NOT_FOUND);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":"
	    "\"logging/setLevel\",\"params\":{\"level\":\"warning\"}}");
	CHECK(r != NULL && error_code(r) == 0);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":"
	    "\"logging/setLevel\",\"params\":{\"level\":\"loud\"}}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_PARAMS);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/initialized\"}");
	CHECK(r == NULL);
	CHECK_INT(calls, 1);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":"
	    "\"tools/list\",\"params\":{\"cursor\":\"x\"}}");
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    r, "result"), "tools")), 8);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":3}}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_PARAMS);
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":[]}}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_PARAMS);
	mcp_session_free(s);
	return (0);
}

static int
test_tool_errors_are_results(void)
{
	struct mcp_session	*s = initialized("2025-06-18");
	cJSON			*r, *res, *err;

	/* An unknown tool is a protocol error naming it. */
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"no_such_tool\"}}");
	CHECK_INT(error_code(r), JSONRPC_INVALID_PARAMS);
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"),
	    "message")->valuestring, "unknown tool: no_such_tool");
	/* An unknown argument is a tool error, in the result. */
	r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"list_sandboxes\","
	    "\"arguments\":{\"colour\":1}}}");
	CHECK(r != NULL && error_code(r) == 0);
	res = cJSON_GetObjectItem(r, "result");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")));
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(res, "content")), 0);
	err = cJSON_GetObjectItem(cJSON_GetObjectItem(res,
	    "structuredContent"), "error");
	CHECK_STR(cJSON_GetObjectItem(err, "kind")->valuestring,
	    "invalid_request");
	CHECK_STR(cJSON_GetObjectItem(err, "message")->valuestring,
	    "unknown argument for list_sandboxes: colour");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(err, "details"),
	    "argument")->valuestring, "colour");
	mcp_session_free(s);
	return (0);
}

static int
test_batches(void)
{
	struct mcp_session	*s;
	cJSON			*r;

	s = initialized("2025-06-18");
	r = send_msg(s, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
	CHECK_INT(error_code(r), JSONRPC_INVALID_REQUEST);
	CHECK(strstr(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"),
	    "message")->valuestring, "2025-06-18") != NULL);
	mcp_session_free(s);

	s = initialized("2025-03-26");
	r = send_msg(s, "[]");
	CHECK_INT(error_code(r), JSONRPC_INVALID_REQUEST);
	r = send_msg(s, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
	    "7,{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}]");
	CHECK(cJSON_IsArray(r));
	CHECK_INT(cJSON_GetArraySize(r), 3);
	CHECK_INT(error_code(cJSON_GetArrayItem(r, 0)), 0);
	CHECK_INT(error_code(cJSON_GetArrayItem(r, 1)),
	    JSONRPC_INVALID_REQUEST);
	CHECK_INT(error_code(cJSON_GetArrayItem(r, 2)),
	    JSONRPC_METHOD_NOT_FOUND);
	/* Notifications alone: nothing to send. */
	r = send_msg(s, "[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]");
	CHECK(r == NULL);
	CHECK_INT(calls, 1);
	r = send_msg(s, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\"}}]");
	CHECK(cJSON_IsArray(r));
	CHECK_INT(error_code(cJSON_GetArrayItem(r, 0)),
	    JSONRPC_INVALID_REQUEST);
	mcp_session_free(s);
	return (0);
}

static int
test_versions(void)
{
	CHECK(mcp_version_supported("2025-03-26"));
	CHECK(mcp_version_supported("2025-06-18"));
	CHECK(mcp_version_supported("2025-11-25"));
	CHECK(!mcp_version_supported("2024-11-05"));
	CHECK_STR(mcp_negotiate_version("2025-06-18"), "2025-06-18");
	CHECK_STR(mcp_negotiate_version("2024-11-05"), "2025-11-25");
	CHECK(mcp_message_is_initialize("{\"method\":\"initialize\"}", 24));
	CHECK(!mcp_message_is_initialize("{\"method\":\"ping\"}", 17));
	CHECK(!mcp_message_is_initialize("[{\"method\":\"initialize\"}]", 26));
	return (0);
}

const struct unit_case unit_jsonrpc_cases[] = {
	{ "jsonrpc/parse-error", test_parse_error },
	{ "jsonrpc/not-request", test_not_request },
	{ "jsonrpc/before-initialize", test_before_initialize },
	{ "jsonrpc/initialize", test_initialize },
	{ "jsonrpc/methods", test_methods },
	{ "jsonrpc/tool-errors-are-results", test_tool_errors_are_results },
	{ "jsonrpc/batches", test_batches },
	{ "jsonrpc/versions", test_versions },
	{ NULL, NULL }
};
