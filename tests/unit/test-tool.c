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
 * The tool table and argument validation: messages and their order, and
 * the generated tools/list.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"
#include "unit.h"

static const struct tool_arg probe_args[] = {
	{ "name", TOOL_ARG_STRING, 1, -1, NULL, "A name." },
	{ "count", TOOL_ARG_INTEGER, 0, 0, "1", "A count." },
	{ "items", TOOL_ARG_ARRAY, 0, -1, NULL, "Items." },
	{ "flag", TOOL_ARG_BOOLEAN, 0, -1, NULL, "A flag." },
	{ "format", TOOL_ARG_STRING, 0, -1, "\"dir\"", "A format." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

static const struct tool_entry probe_entry = {
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
	cJSON		*args, *details = NULL;
	char		*message = NULL;

	args = cJSON_Parse(json);
	if (tool_validate(&probe_entry, args, &message, &details) == 0) {
		cJSON_Delete(args);
		return (NULL);
	}
	snprintf(out, sizeof out, "%s [%s]", message,
	    cJSON_GetObjectItem(details, "argument")->valuestring);
	free(message);
	cJSON_Delete(details);
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
	list = tool_list(TOOLSET_MANAGEMENT);
	tools = cJSON_GetObjectItem(list, "tools");
	CHECK_INT(cJSON_GetArraySize(tools), 6);
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

	list = tool_list(TOOLSET_RUNTIME);
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
	list = tool_list(TOOLSET_OBSERVABILITY);
	CHECK_INT(cJSON_GetArraySize(cJSON_GetObjectItem(list, "tools")), 0);
	cJSON_Delete(list);
	CHECK(tool_find("list_docker_images", TOOLSET_RUNTIME) == NULL);
	CHECK(tool_find("list_docker_images", TOOLSET_MANAGEMENT) != NULL);
	return (0);
}

static int
test_error_result(void)
{
	cJSON	*sc, *err;

	sc = tool_error_result(TOOL_ERR_NOT_FOUND, tool_details("path", "/x"),
	    "no such directory: /x");
	err = cJSON_GetObjectItem(sc, "error");
	CHECK_STR(cJSON_GetObjectItem(err, "kind")->valuestring, "not_found");
	CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(err, "details"),
	    "path")->valuestring, "/x");
	cJSON_Delete(sc);
	sc = tool_error_result(TOOL_ERR_FAILED, NULL, "m");
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(cJSON_GetObjectItem(sc,
	    "error"), "details")));
	cJSON_Delete(sc);
	return (0);
}

const struct unit_case unit_tool_cases[] = {
	{ "tool/validation", test_validation },
	{ "tool/list", test_list },
	{ "tool/error-result", test_error_result },
	{ NULL, NULL }
};
