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
 * The operation table and argument validation: messages and their order,
 * the generated tools/list, and the result envelope.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "unit.h"

static const struct op_arg probe_args[] = {
	{ "name", OP_ARG_STRING, 1, -1, NULL, "A name.", 0, 0 },
	{ "count", OP_ARG_INTEGER, 0, 0, "1", "A count.", 0, 0 },
	{ "items", OP_ARG_ARRAY, 0, -1, NULL, "Items.", 0, 0 },
	{ "flag", OP_ARG_BOOLEAN, 0, -1, NULL, "A flag.", 0, 0 },
	{ "format", OP_ARG_STRING, 0, -1, "\"dir\"", "A format.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

static const struct op_entry probe_entry = {
	.name = "probe",
	.title = "Probe",
	.description = "A tool for the tests.",
	.set = TOOLSET_RUNTIME,
	.args = probe_args,
};

/* Validate args (JSON text); return the message, or NULL when valid. */
static char *
validate(const char *json)
{
	static char	 out[256];
	struct cause	 cause = { 0 };
	cJSON		*args;

	args = cJSON_Parse(json);
	if (op_validate(&probe_entry, args, &cause) == 0) {
		cJSON_Delete(args);
		return (NULL);
	}
	snprintf(out, sizeof out, "%s [%s]", cause.message,
	    cJSON_GetObjectItem(cause.details, "argument")->valuestring);
	if (cause.kind != CAUSE_INVALID)
		snprintf(out, sizeof out, "kind %s",
		    cause_kind_name(cause.kind));
	cause_clear(&cause);
	cJSON_Delete(args);
	return (out);
}

static int
test_validation(void)
{
	CHECK(validate("{\"name\":\"x\"}") == NULL);
	CHECK(validate("{\"name\":\"x\",\"count\":3,\"items\":[],"
	    "\"flag\":true,\"format\":\"tar\"}") == NULL);
	CHECK(validate("{\"name\":\"x\",\"count\":null}") == NULL);
	CHECK(validate("{\"name\":\"x\",\"count\":2.0}") == NULL);
	CHECK(validate("{\"name\":\"x\",\"count\":9007199254740992}") ==
	    NULL);
	CHECK_STR(validate("{\"name\":\"x\",\"extra\":1}"),
	    "unknown argument for probe: extra [extra]");
	CHECK_STR(validate("{\"name\":7}"), "name must be a string [name]");
	CHECK_STR(validate("{\"name\":\"x\",\"count\":\"2\"}"),
	    "count must be an integer \u2265 0 [count]");
	CHECK_STR(validate("{\"name\":\"x\",\"count\":-1}"),
	    "count must be an integer \u2265 0 [count]");
	CHECK_STR(validate("{\"name\":\"x\",\"count\":1.5}"),
	    "count must be an integer \u2265 0 [count]");
	CHECK_STR(validate("{\"name\":\"x\",\"count\":1e300}"),
	    "count must be an integer \u2265 0 and at most 2^53 [count]");
	CHECK_STR(validate("{\"name\":\"x\",\"items\":{}}"),
	    "items must be an array [items]");
	CHECK_STR(validate("{\"name\":\"x\",\"flag\":1}"),
	    "flag must be a boolean [flag]");
	CHECK_STR(validate("{}"), "name is required for probe [name]");
	CHECK_STR(validate("{\"name\":null}"),
	    "name is required for probe [name]");
	CHECK_STR(validate("{\"name\":\"\"}"), "name must be non-empty [name]");
	/* Order: unknown argument before type, type before required. */
	CHECK_STR(validate("{\"count\":\"x\",\"zzz\":1}"),
	    "unknown argument for probe: zzz [zzz]");
	CHECK_STR(validate("{\"count\":\"x\"}"),
	    "count must be an integer \u2265 0 [count]");
	return (0);
}

static int
test_list(void)
{
	static const char *runtime_order[] = { "exec_command",
	    "write_command_stdin", "read_command_lines", "file_read",
	    "file_write", "file_edit", "file_blame",
	    "create_workspace_session", "publish_workspace_session",
	    "destroy_workspace_session" };
	cJSON	*list, *tools, *t, *schema, *ann;
	int	 i;

	unit_setup();
	list = mcp_tools_list_object(TOOLSET_MANAGEMENT, MCP_TOOLS_2025_03);
	tools = cJSON_GetObjectItem(list, "tools");
	CHECK_INT(cJSON_GetArraySize(tools), 8);
	/* export_changes, last: destructive (it writes dest) and idempotent. */
	t = cJSON_GetArrayItem(tools, 7);
	CHECK_STR(cJSON_GetObjectItem(t, "name")->valuestring,
	    "export_changes");
	ann = cJSON_GetObjectItem(t, "annotations");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(ann, "readOnlyHint")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ann, "destructiveHint")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ann, "idempotentHint")));
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(ann, "openWorldHint")));
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    t, "inputSchema"), "required")), 2);
	t = cJSON_GetArrayItem(tools, 0);
	CHECK_STR(cJSON_GetObjectItem(t, "name")->valuestring,
	    "list_docker_images");
	schema = cJSON_GetObjectItem(t, "inputSchema");
	CHECK_STR(cJSON_GetObjectItem(schema, "type")->valuestring, "object");
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(schema,
	    "properties")), 0);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(schema,
	    "required")), 0);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(schema,
	    "additionalProperties")));
	ann = cJSON_GetObjectItem(t, "annotations");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(ann, "readOnlyHint")));
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(ann, "destructiveHint")));
	t = cJSON_GetArrayItem(tools, 1);
	CHECK_STR(cJSON_GetObjectItem(t, "name")->valuestring,
	    "list_workspace_directories");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(t, "inputSchema"), "properties"), "path"),
	    "type")->valuestring, "string");
	cJSON_Delete(list);

	list = mcp_tools_list_object(TOOLSET_RUNTIME, MCP_TOOLS_2025_03);
	tools = cJSON_GetObjectItem(list, "tools");
	CHECK_INT(cJSON_GetArraySize(tools), 10);
	for (i = 0; i < 10; i++)
		CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(tools, i),
		    "name")->valuestring, runtime_order[i]);
	/* file_write's content may be empty; a path may not. */
	t = cJSON_GetArrayItem(tools, 4);
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(t, "inputSchema"), "properties"), "content"),
	    "type")->valuestring, "string");
	cJSON_Delete(list);
	list = mcp_tools_list_object(TOOLSET_OBSERVABILITY,
	    MCP_TOOLS_2025_03);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(list, "tools")), 5);
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
	    list, "tools"), 0), "name")->valuestring, "events");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
	    list, "tools"), 1), "name")->valuestring, "trace");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
	    list, "tools"), 2), "name")->valuestring, "snapshot");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
	    list, "tools"), 3), "name")->valuestring, "cgroup");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
	    list, "tools"), 4), "name")->valuestring, "layerstack");
	cJSON_Delete(list);
	CHECK(op_find("list_docker_images", TOOLSET_RUNTIME) == NULL);
	CHECK(op_find("list_docker_images", TOOLSET_MANAGEMENT) != NULL);
	return (0);
}

/*
 * From 2025-06-18 each tool declares an outputSchema, made from the
 * table: an object that is the result or the error object; 2025-03-26
 * has none, and the hidden operations are never listed.
 */
static int
test_output_schema(void)
{
	cJSON	*list, *t, *os, *any;
	int	 n = 0;

	unit_setup();
	list = mcp_tools_list_object(TOOLSET_ALL, MCP_TOOLS_2025);
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(list, "tools")) {
		os = cJSON_GetObjectItem(t, "outputSchema");
		CHECK(cJSON_IsObject(os));
		CHECK_STR(cJSON_GetObjectItem(os, "type")->valuestring,
		    "object");
		any = cJSON_GetObjectItem(os, "anyOf");
		CHECK_INT(cJSON_GetArraySize(any), 2);
		CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(
		    cJSON_GetArrayItem(any, 1), "properties"), "error") !=
		    NULL);
		CHECK(strcmp(cJSON_GetObjectItem(t, "name")->valuestring,
		    "sandbox_endpoint") != 0);
		n++;
	}
	CHECK_INT(n, 29);	/* the sandbox sets' 23, the boxes set's 6 */
	cJSON_Delete(list);
	list = mcp_tools_list_object(TOOLSET_ALL, MCP_TOOLS_2025_03);
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(list, "tools"))
		CHECK(cJSON_GetObjectItem(t, "outputSchema") == NULL);
	cJSON_Delete(list);
	CHECK(op_find("sandbox_endpoint", TOOLSET_ALL) == NULL);
	return (0);
}

static int
test_envelope(void)
{
	struct cause	 cause = { 0 };
	cJSON		*env, *err;

	cause_set(&cause, CAUSE_NOT_FOUND, "path", "/x", "no such directory:"
	    " /x");
	env = mcp_tools_envelope(NULL, &cause);
	cause_clear(&cause);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(env, "isError")));
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(env, "content")), 0);
	err = cJSON_GetObjectItem(cJSON_GetObjectItem(env,
	    "structuredContent"), "error");
	CHECK_STR(cJSON_GetObjectItem(err, "kind")->valuestring, "not_found");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(err, "details"),
	    "path")->valuestring, "/x");
	cJSON_Delete(env);
	cause_set(&cause, CAUSE_FAILED, NULL, NULL, "m");
	env = mcp_tools_envelope(NULL, &cause);
	cause_clear(&cause);
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(env, "structuredContent"), "error"),
	    "details")));
	cJSON_Delete(env);
	env = mcp_tools_envelope(cJSON_CreateObject(), NULL);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(env, "isError")));
	cJSON_Delete(env);
	return (0);
}

const struct unit_case unit_op_cases[] = {
	{ "op/validation", test_validation },
	{ "op/list", test_list },
	{ "op/output-schema", test_output_schema },
	{ "op/envelope", test_envelope },
	{ NULL, NULL }
};
