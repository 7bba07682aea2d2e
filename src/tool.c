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
 * The tool table. Each tool is one entry (name, title, description, the
 * arguments of its published input schema, MCP annotations, handler);
 * tools/list is generated from the table, and every call is checked
 * against the entry's arguments, in the order the specification fixes,
 * before the handler runs. Handlers answer through tool_call_done or
 * tool_call_error, now or later, exactly once; the result envelope is
 * {"content": [], "structuredContent": ..., "isError": ...}.
 *
 * Each call is a root telemetry span "tool.<name>" whose trace id is the
 * call's request id.
 *
 * A call acts for a tenant (auth.c). The handlers take a sandbox_id
 * through tool_sandbox_get or tool_sandbox_hidden, which answer another
 * tenant's sandbox exactly as an unknown one, at the point where an
 * unknown id is found.
 */

#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

static const struct tool_entry *tool_table[] = {
	&tool_list_docker_images_entry,
	&tool_list_workspace_directories_entry,
	&tool_create_sandbox_entry,
	&tool_list_sandboxes_entry,
	&tool_inspect_sandbox_entry,
	&tool_destroy_sandbox_entry,
	&tool_exec_command_entry,
	&tool_write_command_stdin_entry,
	&tool_read_command_lines_entry,
	&tool_file_read_entry,
	&tool_file_write_entry,
	&tool_file_edit_entry,
	&tool_file_blame_entry,
	&tool_create_workspace_session_entry,
	&tool_publish_workspace_session_entry,
	&tool_destroy_workspace_session_entry,
};

struct tool_call {
	const struct tool_entry	*entry;
	char			 request_id[33];
	char			*tenant;
	cJSON			*args;
	struct tspan		*span;
	tool_done_cb		 done;
	void			*arg;
	void			*data;
	int			 cancelled;
	int			 starting;
	int			 finished;
};

static char	*tool_list_cache[2][TOOLSET_ALL + 1];

/*
 * The HTTP header a stateless-era client mirrors an argument into
 * (x-mcp-header: Mcp-Param-NAME), so that a proxy can route a call by
 * the sandbox it acts on without reading the body; NULL for none.
 */
const char *
tool_arg_header(const struct tool_arg *a)
{
	if (a->type != TOOL_ARG_STRING)
		return (NULL);
	if (strcmp(a->name, "sandbox_id") == 0)
		return ("Sandbox-Id");
	if (strcmp(a->name, "id") == 0)
		return ("Id");
	return (NULL);
}

/*
 * The input schema of a tool, generated from its argument table. The
 * stateless era's schema adds the x-mcp-header declarations; the older
 * eras' keep the published schema exactly.
 */
static cJSON *
tool_schema(const struct tool_entry *te, int era)
{
	const struct tool_arg	*a;
	cJSON			*schema, *props, *p, *req, *d;
	const char		*type;

	schema = cJSON_CreateObject();
	cJSON_AddStringToObject(schema, "type", "object");
	props = cJSON_AddObjectToObject(schema, "properties");
	req = cJSON_CreateArray();
	for (a = te->args; a != NULL && a->name != NULL; a++) {
		p = cJSON_AddObjectToObject(props, a->name);
		switch (a->type) {
		case TOOL_ARG_STRING:
		case TOOL_ARG_TEXT:
			type = "string";
			break;
		case TOOL_ARG_INTEGER:
			type = "integer";
			break;
		case TOOL_ARG_ARRAY:
			type = "array";
			break;
		case TOOL_ARG_BOOLEAN:
			type = "boolean";
			break;
		case TOOL_ARG_OBJECT:
			type = "object";
			break;
		default:
			fatalx("%s: %s.%s has type %d", __func__, te->name,
			    a->name, a->type);
		}
		cJSON_AddStringToObject(p, "type", type);
		cJSON_AddStringToObject(p, "description", a->description);
		if (era == TOOL_ERA_MODERN && tool_arg_header(a) != NULL)
			cJSON_AddStringToObject(p, "x-mcp-header",
			    tool_arg_header(a));
		if (a->type == TOOL_ARG_INTEGER && a->minimum >= 0)
			cJSON_AddNumberToObject(p, "minimum",
			    (double)a->minimum);
		if (a->dflt != NULL) {
			if ((d = cJSON_Parse(a->dflt)) == NULL)
				fatalx("%s: %s.%s default is not JSON",
				    __func__, te->name, a->name);
			cJSON_AddItemToObject(p, "default", d);
		}
		if (a->required)
			cJSON_AddItemToArray(req,
			    cJSON_CreateString(a->name));
	}
	cJSON_AddItemToObject(schema, "required", req);
	cJSON_AddFalseToObject(schema, "additionalProperties");
	return (schema);
}

static cJSON *
tool_describe(const struct tool_entry *te, int era)
{
	cJSON	*t, *ann;

	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "name", te->name);
	cJSON_AddStringToObject(t, "title", te->title);
	cJSON_AddStringToObject(t, "description", te->description);
	cJSON_AddItemToObject(t, "inputSchema", tool_schema(te, era));
	ann = cJSON_AddObjectToObject(t, "annotations");
	cJSON_AddStringToObject(ann, "title", te->title);
	cJSON_AddBoolToObject(ann, "readOnlyHint",
	    (te->flags & TOOL_READONLY) != 0);
	cJSON_AddBoolToObject(ann, "destructiveHint",
	    (te->flags & TOOL_DESTRUCTIVE) != 0);
	cJSON_AddBoolToObject(ann, "idempotentHint",
	    (te->flags & TOOL_IDEMPOTENT) != 0);
	cJSON_AddBoolToObject(ann, "openWorldHint",
	    (te->flags & TOOL_OPENWORLD) != 0);
	return (t);
}

/*
 * The tools array of tools/list, as JSON text, for the sets a peer may
 * use, in table order, in the schema form of its era. The table never
 * changes while running, so each text is built once and shared.
 */
const char *
tool_list_json(int sets, int era)
{
	cJSON	*tools;
	size_t	 i;

	sets &= TOOLSET_ALL;
	era = era == TOOL_ERA_MODERN ? TOOL_ERA_MODERN : TOOL_ERA_LEGACY;
	if (tool_list_cache[era][sets] == NULL) {
		tools = cJSON_CreateArray();
		for (i = 0; i < sizeof tool_table / sizeof tool_table[0];
		    i++) {
			if (tool_table[i]->set & sets)
				cJSON_AddItemToArray(tools,
				    tool_describe(tool_table[i], era));
		}
		tool_list_cache[era][sets] = util_json_print(tools);
		cJSON_Delete(tools);
	}
	return (tool_list_cache[era][sets]);
}

/* The tools/list result of the 2025 eras, as an object. */
cJSON *
tool_list(int sets)
{
	cJSON	*result, *tools;

	result = cJSON_CreateObject();
	if ((tools = cJSON_Parse(tool_list_json(sets,
	    TOOL_ERA_LEGACY))) == NULL)
		fatalx("%s: the tool list does not parse", __func__);
	cJSON_AddItemToObject(result, "tools", tools);
	return (result);
}

/* The entry of a tool the sets grant, or NULL. */
const struct tool_entry *
tool_find(const char *name, int sets)
{
	size_t	i;

	for (i = 0; i < sizeof tool_table / sizeof tool_table[0]; i++) {
		if ((tool_table[i]->set & sets) != 0 &&
		    strcmp(tool_table[i]->name, name) == 0)
			return (tool_table[i]);
	}
	return (NULL);
}

/* details naming one field: {"KEY": "VALUE"}. */
cJSON *
tool_details(const char *key, const char *value)
{
	cJSON	*d;

	d = cJSON_CreateObject();
	if (key != NULL)
		cJSON_AddStringToObject(d, key, value);
	return (d);
}

/* The error form of structuredContent; details is taken over. */
cJSON *
tool_error_result(const char *kind, cJSON *details, const char *message)
{
	cJSON	*sc, *err;

	sc = cJSON_CreateObject();
	err = cJSON_AddObjectToObject(sc, "error");
	cJSON_AddStringToObject(err, "kind", kind);
	cJSON_AddStringToObject(err, "message", message);
	cJSON_AddItemToObject(err, "details", details != NULL ? details :
	    cJSON_CreateObject());
	return (sc);
}

static const char *
tool_type_phrase(int type)
{
	switch (type) {
	case TOOL_ARG_STRING:
	case TOOL_ARG_TEXT:
		return ("a string");
	case TOOL_ARG_INTEGER:
		return ("an integer \u2265 0");
	case TOOL_ARG_ARRAY:
		return ("an array");
	case TOOL_ARG_BOOLEAN:
		return ("a boolean");
	case TOOL_ARG_OBJECT:
		return ("an object");
	}
	return ("?");
}

/* Whether a JSON value is an integer we accept: integral, 0..2^53. */
static int
tool_integer_ok(const cJSON *v, long long minimum)
{
	double	d;

	if (!cJSON_IsNumber(v))
		return (0);
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d > (double)JSON_MAX_INTEGER)
		return (0);
	return (d >= (double)(minimum < 0 ? 0 : minimum));
}

/*
 * Check the arguments of a call against the entry, in the fixed order:
 * unknown argument, wrong type, missing required, empty required string.
 * An explicit null counts as absent. On failure fill *message and
 * *details and return -1.
 */
int
tool_validate(const struct tool_entry *te, cJSON *args, char **message,
    cJSON **details)
{
	const struct tool_arg	*a;
	cJSON			*v;
	int			 ok;

	cJSON_ArrayForEach(v, args) {
		for (a = te->args; a != NULL && a->name != NULL; a++) {
			if (strcmp(a->name, v->string) == 0)
				break;
		}
		if (a == NULL || a->name == NULL) {
			xasprintf(message, "unknown argument for %s: %.100s",
			    te->name, v->string);
			*details = tool_details("argument", v->string);
			return (-1);
		}
	}
	for (a = te->args; a != NULL && a->name != NULL; a++) {
		v = cJSON_GetObjectItemCaseSensitive(args, a->name);
		if (v == NULL || cJSON_IsNull(v))
			continue;
		switch (a->type) {
		case TOOL_ARG_STRING:
		case TOOL_ARG_TEXT:
			ok = cJSON_IsString(v);
			break;
		case TOOL_ARG_INTEGER:
			ok = tool_integer_ok(v, a->minimum);
			break;
		case TOOL_ARG_ARRAY:
			ok = cJSON_IsArray(v);
			break;
		case TOOL_ARG_BOOLEAN:
			ok = cJSON_IsBool(v);
			break;
		case TOOL_ARG_OBJECT:
			ok = cJSON_IsObject(v);
			break;
		default:
			ok = 0;
			break;
		}
		if (!ok) {
			if (a->type == TOOL_ARG_INTEGER && cJSON_IsNumber(v) &&
			    v->valuedouble > (double)JSON_MAX_INTEGER)
				xasprintf(message, "%s must be an integer"
				    " \u2265 0 and at most 2^53", a->name);
			else
				xasprintf(message, "%s must be %s", a->name,
				    tool_type_phrase(a->type));
			*details = tool_details("argument", a->name);
			return (-1);
		}
	}
	for (a = te->args; a != NULL && a->name != NULL; a++) {
		v = cJSON_GetObjectItemCaseSensitive(args, a->name);
		if (!a->required)
			continue;
		if (v == NULL || cJSON_IsNull(v)) {
			xasprintf(message, "%s is required for %s", a->name,
			    te->name);
			*details = tool_details("argument", a->name);
			return (-1);
		}
	}
	for (a = te->args; a != NULL && a->name != NULL; a++) {
		v = cJSON_GetObjectItemCaseSensitive(args, a->name);
		if ((a->type == TOOL_ARG_STRING || a->type == TOOL_ARG_TEXT) &&
		    cJSON_IsString(v) &&
		    strstr(v->valuestring, TOOL_NUL_MARK) != NULL) {
			xasprintf(message, "%s must not contain the NUL"
			    " character (U+0000)", a->name);
			*details = tool_details("argument", a->name);
			return (-1);
		}
		if (a->required && a->type == TOOL_ARG_STRING &&
		    v->valuestring[0] == '\0') {
			xasprintf(message, "%s must be non-empty", a->name);
			*details = tool_details("argument", a->name);
			return (-1);
		}
	}
	return (0);
}

static void
tool_call_free(struct tool_call *tc)
{
	cJSON_Delete(tc->args);
	free(tc->tenant);
	free(tc);
}

/* Deliver the envelope and, unless the start is still on the stack, free. */
static void
tool_call_finish(struct tool_call *tc, cJSON *sc, int is_error)
{
	cJSON	*env, *err;

	if (tc->finished)
		fatalx("%s: %s answered twice", __func__,
		    tc->entry != NULL ? tc->entry->name : "tool");
	tc->finished = 1;
	if (is_error) {
		err = cJSON_GetObjectItem(sc, "error");
		telemetry_span_attr_str(tc->span, "error_kind",
		    cJSON_GetObjectItem(err, "kind")->valuestring);
		telemetry_span_attr_str(tc->span, "error",
		    cJSON_GetObjectItem(err, "message")->valuestring);
	}
	telemetry_span_end(tc->span, tc->cancelled ? "cancelled" : is_error ?
	    "error" : "completed");
	tc->span = NULL;

	env = cJSON_CreateObject();
	cJSON_AddArrayToObject(env, "content");
	cJSON_AddItemToObject(env, "structuredContent", sc);
	cJSON_AddBoolToObject(env, "isError", is_error);
	tc->done(tc, env, tc->arg);
	if (!tc->starting)
		tool_call_free(tc);
}

/*
 * Start a call of tool name with args (NULL for none) for a peer granted
 * sets, acting for tenant. done receives the envelope exactly once.
 * Returns the call while it is running, or NULL when it has already
 * answered.
 */
struct tool_call *
tool_call_start(const char *name, cJSON *args, int sets, const char *tenant,
    tool_done_cb done, void *arg)
{
	struct tool_call	*tc;
	cJSON			*details = NULL;
	char			*message = NULL, *sname;

	if (tenant == NULL)
		fatalx("%s: a call of %s with no tenant", __func__, name);
	tc = xcalloc(1, sizeof *tc);
	tc->tenant = xstrdup(tenant);
	tc->done = done;
	tc->arg = arg;
	tc->starting = 1;
	util_random_hex(tc->request_id, 16);
	tc->args = args != NULL ? cJSON_Duplicate(args, 1) :
	    cJSON_CreateObject();
	tc->entry = tool_find(name, sets);

	xasprintf(&sname, "tool.%.64s", name);
	tc->span = telemetry_span_begin(tc->request_id, NULL, sname, NULL);
	free(sname);
	telemetry_span_attr_str(tc->span, "op", name);

	if (tc->entry == NULL) {
		xasprintf(&message, "unknown tool: %.100s", name);
		tool_call_finish(tc, tool_error_result(TOOL_ERR_INVALID,
		    tool_details("tool", name), message), 1);
	} else if (tool_validate(tc->entry, tc->args, &message,
	    &details) != 0) {
		tool_call_finish(tc, tool_error_result(TOOL_ERR_INVALID,
		    details, message), 1);
	} else
		tc->entry->exec(tc);
	free(message);

	tc->starting = 0;
	if (tc->finished) {
		tool_call_free(tc);
		return (NULL);
	}
	return (tc);
}

/* The peer no longer waits: let the tool end a wait early. */
void
tool_call_cancel(struct tool_call *tc)
{
	if (tc->cancelled || tc->finished)
		return;
	tc->cancelled = 1;
	if (tc->entry->cancel != NULL)
		tc->entry->cancel(tc);
}

/* Answer with a result object (taken over). */
void
tool_call_done(struct tool_call *tc, cJSON *result)
{
	tool_call_finish(tc, result, 0);
}

/* Answer with an error of a kind; details (taken over) may be NULL. */
void
tool_call_error(struct tool_call *tc, const char *kind, cJSON *details,
    const char *fmt, ...)
{
	char	*message;
	va_list	 ap;

	va_start(ap, fmt);
	xvasprintf(&message, fmt, ap);
	va_end(ap);
	tool_call_finish(tc, tool_error_result(kind, details, message), 1);
	free(message);
}

const char *
tool_call_name(struct tool_call *tc)
{
	return (tc->entry->name);
}

const char *
tool_call_request_id(struct tool_call *tc)
{
	return (tc->request_id);
}

/* The tenant the call acts for. */
const char *
tool_call_tenant(struct tool_call *tc)
{
	return (tc->tenant);
}

/*
 * If the call's sandbox_id names another tenant's sandbox, answer as for
 * an unknown id and return 1; else return 0 and let the handler go on.
 */
int
tool_sandbox_hidden(struct tool_call *tc, const char *id)
{
	char	*message;

	if (!auth_sandbox_hidden(tc->tenant, id, &message))
		return (0);
	tool_call_error(tc, TOOL_ERR_NOT_FOUND, tool_details("sandbox_id", id),
	    "%s", message);
	free(message);
	return (1);
}

/*
 * The runtime view of the call's sandbox_id (rt_sandbox_get), with
 * another tenant's sandbox answered to cb as an unknown one.
 */
void
tool_sandbox_get(struct tool_call *tc, rt_cb cb, void *arg)
{
	const char	*id = tool_arg_string(tc, "sandbox_id");
	char		*message;

	if (auth_sandbox_hidden(tc->tenant, id, &message)) {
		cb(NULL, TOOL_ERR_NOT_FOUND, message, tool_details("sandbox_id",
		    id), arg);
		free(message);
		return;
	}
	rt_sandbox_get(id, cb, arg);
}

struct tspan *
tool_call_span(struct tool_call *tc)
{
	return (tc->span);
}

void *
tool_call_data(struct tool_call *tc)
{
	return (tc->data);
}

void
tool_call_set_data(struct tool_call *tc, void *data)
{
	tc->data = data;
}

int
tool_call_cancelled(struct tool_call *tc)
{
	return (tc->cancelled);
}

/* An argument's value, or NULL when absent (or null). */
cJSON *
tool_arg(struct tool_call *tc, const char *name)
{
	cJSON	*v;

	v = cJSON_GetObjectItemCaseSensitive(tc->args, name);
	return (cJSON_IsNull(v) ? NULL : v);
}

/* A string argument (validated), or NULL when absent. */
const char *
tool_arg_string(struct tool_call *tc, const char *name)
{
	cJSON	*v = tool_arg(tc, name);

	return (v != NULL ? v->valuestring : NULL);
}

/* An integer argument (validated), or its default, or -1 with neither. */
long long
tool_arg_integer(struct tool_call *tc, const char *name)
{
	const struct tool_arg	*a;
	cJSON			*v = tool_arg(tc, name);

	if (v != NULL)
		return ((long long)v->valuedouble);
	for (a = tc->entry->args; a != NULL && a->name != NULL; a++) {
		if (strcmp(a->name, name) == 0 && a->dflt != NULL)
			return (strtoll(a->dflt, NULL, 10));
	}
	return (-1);
}
