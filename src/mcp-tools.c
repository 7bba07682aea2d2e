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
 * The operation table seen as MCP tools: tools/list made from the table
 * (the input schema, the annotations, and from 2025-06-18 on the
 * outputSchema of each result), and a call's (result, cause) made into
 * the tool result envelope {"content": [], "structuredContent": ...,
 * "isError": ...}, where a cause becomes {"error": {kind, message,
 * details}}: a tool failure is a result, never a JSON-RPC error.
 */

#include "config.h"

#include <stdlib.h>

#include <cjson/cJSON.h>

#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"

static char	*mcp_tools_cache[MCP_TOOLS_ERAS][TOOLSET_ALL + 1];

/* One tool of tools/list, in the form of an era. */
static cJSON *
mcp_tools_describe(const struct op_entry *oe, int era)
{
	cJSON	*t, *ann;

	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "name", oe->name);
	cJSON_AddStringToObject(t, "title", oe->title);
	cJSON_AddStringToObject(t, "description", oe->description);
	cJSON_AddItemToObject(t, "inputSchema", op_schema(oe, era ==
	    MCP_TOOLS_MODERN ? OP_SCHEMA_HEADERS : 0));
	if (era != MCP_TOOLS_2025_03)
		cJSON_AddItemToObject(t, "outputSchema", op_output_schema(oe));
	ann = cJSON_AddObjectToObject(t, "annotations");
	cJSON_AddStringToObject(ann, "title", oe->title);
	cJSON_AddBoolToObject(ann, "readOnlyHint",
	    (oe->flags & OP_READONLY) != 0);
	cJSON_AddBoolToObject(ann, "destructiveHint",
	    (oe->flags & OP_DESTRUCTIVE) != 0);
	cJSON_AddBoolToObject(ann, "idempotentHint",
	    (oe->flags & OP_IDEMPOTENT) != 0);
	cJSON_AddBoolToObject(ann, "openWorldHint",
	    (oe->flags & OP_OPENWORLD) != 0);
	return (t);
}

/*
 * The tools array of tools/list, as JSON text, for the sets a peer may
 * use, in table order, in the form of its era (MCP_TOOLS_*). The table
 * changes only with the configuration's limits, so each text is built
 * once and shared until a reload (mcp_tools_forget).
 */
const char *
mcp_tools_list_json(int sets, int era)
{
	const struct op_entry	*oe;
	cJSON			*tools;

	sets &= TOOLSET_ALL;
	if (era < 0 || era >= MCP_TOOLS_ERAS)
		fatalx("%s: era %d", __func__, era);
	if (mcp_tools_cache[era][sets] == NULL) {
		tools = cJSON_CreateArray();
		for (oe = op_next(NULL); oe != NULL; oe = op_next(oe)) {
			if (oe->set & sets)
				cJSON_AddItemToArray(tools,
				    mcp_tools_describe(oe, era));
		}
		mcp_tools_cache[era][sets] = util_json_print(tools);
		cJSON_Delete(tools);
	}
	return (mcp_tools_cache[era][sets]);
}

/* The configuration changed (a limit sets a maximum): build them again. */
void
mcp_tools_forget(void)
{
	int	era, sets;

	for (era = 0; era < MCP_TOOLS_ERAS; era++) {
		for (sets = 0; sets <= TOOLSET_ALL; sets++) {
			free(mcp_tools_cache[era][sets]);
			mcp_tools_cache[era][sets] = NULL;
		}
	}
}

/* The tools/list result of an era, as an object. */
cJSON *
mcp_tools_list_object(int sets, int era)
{
	cJSON	*result, *tools;

	result = cJSON_CreateObject();
	if ((tools = cJSON_Parse(mcp_tools_list_json(sets, era))) == NULL)
		fatalx("%s: the tool list does not parse", __func__);
	cJSON_AddItemToObject(result, "tools", tools);
	return (result);
}

/* The envelope of an answer: the result (taken over), or the cause. */
cJSON *
mcp_tools_envelope(cJSON *result, const struct cause *cause)
{
	cJSON	*env, *sc;

	env = cJSON_CreateObject();
	cJSON_AddArrayToObject(env, "content");
	if (result != NULL)
		sc = result;
	else {
		sc = cJSON_CreateObject();
		cJSON_AddItemToObject(sc, "error", cause_json(cause));
	}
	cJSON_AddItemToObject(env, "structuredContent", sc);
	cJSON_AddBoolToObject(env, "isError", result == NULL);
	return (env);
}
