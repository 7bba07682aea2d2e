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
 * The operation table: the one door into the engine. Each operation is
 * an entry (name, title, description, grant, flags, arguments, result
 * schema, handler); MCP's tools/list and the REST routes are made from
 * the table, and every call, from either surface, is checked against
 * its entry here, in the order the specification fixes, before the
 * handler runs. A handler answers through op_call_done or op_call_fail,
 * now or later, exactly once; the surface that started the call gets
 * (result, NULL) or (NULL, cause) and shapes it its own way.
 *
 * Each call is a root telemetry span "tool.<name>" whose trace id is the
 * call's request id. A call acts for a tenant: a handler takes a
 * sandbox_id through op_sandbox_hidden or op_sandbox_runtime, which
 * answer another tenant's sandbox exactly as an unknown one, at the
 * point where an unknown id is found, so ids cannot be probed.
 */

#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"

static const struct op_entry *op_table[] = {
	&op_list_docker_images_entry,
	&op_list_workspace_directories_entry,
	&op_create_sandbox_entry,
	&op_list_sandboxes_entry,
	&op_inspect_sandbox_entry,
	&op_destroy_sandbox_entry,
	&op_squash_layerstacks_entry,
	&op_export_changes_entry,
	&op_exec_command_entry,
	&op_write_command_stdin_entry,
	&op_read_command_lines_entry,
	&op_file_read_entry,
	&op_file_write_entry,
	&op_file_edit_entry,
	&op_file_blame_entry,
	&op_create_workspace_session_entry,
	&op_publish_workspace_session_entry,
	&op_destroy_workspace_session_entry,
	&op_sandbox_endpoint_entry,
	&op_events_entry,
	&op_trace_entry,
	&op_snapshot_entry,
	&op_cgroup_entry,
	&op_layerstack_entry,
	&op_sandbox_start_entry,
	&op_sandbox_exec_entry,
	&op_sandbox_status_entry,
	&op_sandbox_stop_entry,
	&op_sandbox_secrets_entry,
	&op_sandbox_procs_entry,
	&op_box_list_entry,
	&op_box_usage_entry,
	&op_box_credits_entry,
	&op_secret_put_entry,
	&op_secret_delete_entry,
};
#define OP_COUNT	(sizeof op_table / sizeof op_table[0])

/* The parsed result schemas, in table order (op_init). */
static cJSON	*op_results[OP_COUNT];

struct op_call {
	const struct op_entry	*entry;
	char			 request_id[33];
	char			*tenant;
	cJSON			*args;
	struct tspan		*span;
	op_done_cb		 done;
	void			*arg;
	void			*data;
	int			 cancelled;
	int			 starting;
	int			 finished;
	uint64_t		 started_us;
};

static size_t
op_index(const struct op_entry *oe)
{
	size_t	i;

	for (i = 0; i < OP_COUNT; i++) {
		if (op_table[i] == oe)
			return (i);
	}
	fatalx("%s: %s is not in the table", __func__, oe->name);
}

/*
 * Check the table once at start: every result schema is JSON, every
 * default is, names are unique. A broken entry is a bug: fatal.
 */
void
op_init(void)
{
	const struct op_arg	*a;
	cJSON			*d;
	size_t			 i, j;

	for (i = 0; i < OP_COUNT; i++) {
		if (op_results[i] != NULL)
			continue;
		if (op_table[i]->result == NULL || (op_results[i] =
		    cJSON_Parse(op_table[i]->result)) == NULL ||
		    !cJSON_IsObject(op_results[i]))
			fatalx("%s: the result schema of %s is not a JSON"
			    " object", __func__, op_table[i]->name);
		for (j = 0; j < i; j++) {
			if (strcmp(op_table[i]->name, op_table[j]->name) == 0)
				fatalx("%s: two operations %s", __func__,
				    op_table[i]->name);
		}
		for (a = op_table[i]->args; a->name != NULL; a++) {
			if (a->dflt == NULL)
				continue;
			if ((d = cJSON_Parse(a->dflt)) == NULL)
				fatalx("%s: %s.%s default is not JSON",
				    __func__, op_table[i]->name, a->name);
			cJSON_Delete(d);
		}
	}
}

/*
 * The operation after oe in table order (the first for NULL), hidden
 * ones skipped; NULL at the end.
 */
const struct op_entry *
op_next(const struct op_entry *oe)
{
	size_t	i = oe == NULL ? 0 : op_index(oe) + 1;

	for (; i < OP_COUNT; i++) {
		if (!(op_table[i]->flags & OP_HIDDEN))
			return (op_table[i]);
	}
	return (NULL);
}

static const struct op_entry *
op_lookup(const char *name, int sets, int hidden)
{
	size_t	i;

	for (i = 0; i < OP_COUNT; i++) {
		if ((op_table[i]->set & sets) != 0 &&
		    (hidden || !(op_table[i]->flags & OP_HIDDEN)) &&
		    strcmp(op_table[i]->name, name) == 0)
			return (op_table[i]);
	}
	return (NULL);
}

/* The listed operation of that name the sets grant, or NULL. */
const struct op_entry *
op_find(const char *name, int sets)
{
	return (op_lookup(name, sets, 0));
}

/* The same, hidden ones included (a surface's own routes name them). */
const struct op_entry *
op_find_any(const char *name, int sets)
{
	return (op_lookup(name, sets, 1));
}

/*
 * The HTTP header a stateless-era client mirrors an argument into
 * (x-mcp-header: Mcp-Param-NAME), so that a proxy can route a call by
 * the sandbox it acts on without reading the body; NULL for none.
 */
const char *
op_arg_header(const struct op_arg *a)
{
	if (a->type != OP_ARG_STRING)
		return (NULL);
	if (strcmp(a->name, "sandbox_id") == 0)
		return ("Sandbox-Id");
	if (strcmp(a->name, "id") == 0)
		return ("Id");
	return (NULL);
}

static const char *
op_type_name(const struct op_entry *oe, const struct op_arg *a)
{
	switch (a->type) {
	case OP_ARG_STRING:
	case OP_ARG_TEXT:
		return ("string");
	case OP_ARG_INTEGER:
		return ("integer");
	case OP_ARG_ARRAY:
		return ("array");
	case OP_ARG_BOOLEAN:
		return ("boolean");
	case OP_ARG_OBJECT:
		return ("object");
	}
	fatalx("%s: %s.%s has type %d", __func__, oe->name, a->name, a->type);
}

/*
 * The input schema of an operation, generated from its arguments. With
 * OP_SCHEMA_HEADERS it adds the x-mcp-header declarations of the
 * stateless era; without, it is the published schema exactly.
 */
cJSON *
op_schema(const struct op_entry *oe, int flags)
{
	const struct op_arg	*a;
	cJSON			*schema, *props, *p, *req;

	schema = cJSON_CreateObject();
	cJSON_AddStringToObject(schema, "type", "object");
	props = cJSON_AddObjectToObject(schema, "properties");
	req = cJSON_CreateArray();
	for (a = oe->args; a->name != NULL; a++) {
		p = cJSON_AddObjectToObject(props, a->name);
		cJSON_AddStringToObject(p, "type", op_type_name(oe, a));
		cJSON_AddStringToObject(p, "description", a->description);
		if ((flags & OP_SCHEMA_HEADERS) && op_arg_header(a) != NULL)
			cJSON_AddStringToObject(p, "x-mcp-header",
			    op_arg_header(a));
		if (a->type == OP_ARG_INTEGER && a->minimum >= 0)
			cJSON_AddNumberToObject(p, "minimum",
			    (double)a->minimum);
		if (a->type == OP_ARG_INTEGER && a->maximum_limit > 0)
			cJSON_AddNumberToObject(p, "maximum",
			    (double)cfg_limit(a->maximum_limit - 1));
		else if (a->type == OP_ARG_INTEGER && a->maximum > 0)
			cJSON_AddNumberToObject(p, "maximum",
			    (double)a->maximum);
		if (a->dflt != NULL)
			cJSON_AddItemToObject(p, "default",
			    cJSON_Parse(a->dflt));
		if (a->required)
			cJSON_AddItemToArray(req,
			    cJSON_CreateString(a->name));
	}
	cJSON_AddItemToObject(schema, "required", req);
	cJSON_AddFalseToObject(schema, "additionalProperties");
	return (schema);
}

/*
 * The schema of what a call of oe gives back as its structured result:
 * the result schema of the entry, or the error object of a failure
 * ({"error": {kind, message, details}}), since a client checks whatever
 * a call returns against it.
 */
cJSON *
op_output_schema(const struct op_entry *oe)
{
	cJSON	*s, *any, *err, *props, *e, *ep, *kinds, *req;
	size_t	 i;

	op_init();
	s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "type", "object");
	any = cJSON_AddArrayToObject(s, "anyOf");
	cJSON_AddItemToArray(any, cJSON_Duplicate(op_results[op_index(oe)],
	    1));

	err = cJSON_CreateObject();
	cJSON_AddStringToObject(err, "type", "object");
	props = cJSON_AddObjectToObject(err, "properties");
	e = cJSON_AddObjectToObject(props, "error");
	cJSON_AddStringToObject(e, "type", "object");
	ep = cJSON_AddObjectToObject(e, "properties");
	kinds = cJSON_AddArrayToObject(cJSON_AddObjectToObject(ep, "kind"),
	    "enum");
	for (i = CAUSE_INVALID; i <= CAUSE_INTERNAL; i++)
		cJSON_AddItemToArray(kinds, cJSON_CreateString(
		    cause_kind_name((enum cause_kind)i)));
	cJSON_AddStringToObject(cJSON_AddObjectToObject(ep, "message"),
	    "type", "string");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(ep, "details"),
	    "type", "object");
	req = cJSON_AddArrayToObject(e, "required");
	cJSON_AddItemToArray(req, cJSON_CreateString("kind"));
	cJSON_AddItemToArray(req, cJSON_CreateString("message"));
	cJSON_AddItemToArray(req, cJSON_CreateString("details"));
	cJSON_AddFalseToObject(e, "additionalProperties");
	req = cJSON_AddArrayToObject(err, "required");
	cJSON_AddItemToArray(req, cJSON_CreateString("error"));
	cJSON_AddFalseToObject(err, "additionalProperties");
	cJSON_AddItemToArray(any, err);
	return (s);
}

static const char *
op_type_phrase(enum op_arg_type type)
{
	switch (type) {
	case OP_ARG_STRING:
	case OP_ARG_TEXT:
		return ("a string");
	case OP_ARG_INTEGER:
		return ("an integer \u2265 0");
	case OP_ARG_ARRAY:
		return ("an array");
	case OP_ARG_BOOLEAN:
		return ("a boolean");
	case OP_ARG_OBJECT:
		return ("an object");
	}
	return ("?");
}

/* Whether a JSON value is an integer we accept: integral, 0..2^53. */
static int
op_integer_ok(const cJSON *v, long long minimum)
{
	double	d;

	if (!cJSON_IsNumber(v))
		return (0);
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d > (double)JSON_MAX_INTEGER)
		return (0);
	return (d >= (double)(minimum < 0 ? 0 : minimum));
}

/* Whether an argument's value has the argument's type. */
static int
op_type_ok(const struct op_arg *a, const cJSON *v)
{
	switch (a->type) {
	case OP_ARG_STRING:
	case OP_ARG_TEXT:
		return (cJSON_IsString(v));
	case OP_ARG_INTEGER:
		return (op_integer_ok(v, a->minimum));
	case OP_ARG_ARRAY:
		return (cJSON_IsArray(v));
	case OP_ARG_BOOLEAN:
		return (cJSON_IsBool(v));
	case OP_ARG_OBJECT:
		return (cJSON_IsObject(v));
	}
	return (0);
}

/*
 * Check the arguments of a call against the entry, in the fixed order:
 * unknown argument, wrong type, missing required, empty required string.
 * An explicit null counts as absent. On failure fill cause
 * (invalid_request, details {"argument": NAME}) and return -1.
 */
int
op_validate(const struct op_entry *oe, cJSON *args, struct cause *cause)
{
	const struct op_arg	*a;
	cJSON			*v;

	cJSON_ArrayForEach(v, args) {
		for (a = oe->args; a->name != NULL; a++) {
			if (strcmp(a->name, v->string) == 0)
				break;
		}
		if (a->name == NULL) {
			cause_set(cause, CAUSE_INVALID, "argument", v->string,
			    "unknown argument for %s: %.100s", oe->name,
			    v->string);
			return (-1);
		}
	}
	for (a = oe->args; a->name != NULL; a++) {
		v = cJSON_GetObjectItemCaseSensitive(args, a->name);
		if (v == NULL || cJSON_IsNull(v) || op_type_ok(a, v))
			continue;
		if (a->type == OP_ARG_INTEGER && cJSON_IsNumber(v) &&
		    v->valuedouble > (double)JSON_MAX_INTEGER)
			cause_set(cause, CAUSE_INVALID, "argument", a->name,
			    "%s must be an integer \u2265 %lld and at most 2^53",
			    a->name, a->minimum < 0 ? 0 : a->minimum);
		else if (a->type == OP_ARG_INTEGER)
			cause_set(cause, CAUSE_INVALID, "argument", a->name,
			    "%s must be an integer \u2265 %lld", a->name,
			    a->minimum < 0 ? 0 : a->minimum);
		else
			cause_set(cause, CAUSE_INVALID, "argument", a->name,
			    "%s must be %s", a->name, op_type_phrase(a->type));
		return (-1);
	}
	for (a = oe->args; a->name != NULL; a++) {
		v = cJSON_GetObjectItemCaseSensitive(args, a->name);
		if (a->required && (v == NULL || cJSON_IsNull(v))) {
			cause_set(cause, CAUSE_INVALID, "argument", a->name,
			    "%s is required for %s", a->name, oe->name);
			return (-1);
		}
	}
	for (a = oe->args; a->name != NULL; a++) {
		v = cJSON_GetObjectItemCaseSensitive(args, a->name);
		if ((a->type == OP_ARG_STRING || a->type == OP_ARG_TEXT) &&
		    cJSON_IsString(v) &&
		    strstr(v->valuestring, NUL_MARK) != NULL) {
			cause_set(cause, CAUSE_INVALID, "argument", a->name,
			    "%s must not contain the NUL character (U+0000)",
			    a->name);
			return (-1);
		}
		if (a->required && a->type == OP_ARG_STRING &&
		    v->valuestring[0] == '\0') {
			cause_set(cause, CAUSE_INVALID, "argument", a->name,
			    "%s must be non-empty", a->name);
			return (-1);
		}
	}
	return (0);
}

static void
op_call_free(struct op_call *oc)
{
	cJSON_Delete(oc->args);
	free(oc->tenant);
	free(oc);
}

/* Deliver the answer and, unless the start is still on the stack, free. */
static void
op_call_finish(struct op_call *oc, cJSON *result, const struct cause *cause)
{
	cJSON	*limit, *attrs;

	if (oc->finished)
		fatalx("%s: %s answered twice", __func__, oc->entry != NULL ?
		    oc->entry->name : "operation");
	if ((result == NULL) == (cause == NULL || cause->kind == CAUSE_NONE))
		fatalx("%s: %s answered with %s", __func__, oc->entry != NULL ?
		    oc->entry->name : "operation", result == NULL ?
		    "neither a result nor a cause" : "a result and a cause");
	oc->finished = 1;
	metrics_tool_call(oc->entry != NULL ? oc->entry->name : NULL,
	    cause != NULL ? cause->kind : CAUSE_NONE, oc->cancelled,
	    mono_us() - oc->started_us);
	if (cause != NULL) {
		telemetry_span_attr_str(oc->span, "error_kind",
		    cause_kind_name(cause->kind));
		telemetry_span_attr_str(oc->span, "error", cause->message);
		limit = cJSON_GetObjectItem(cause->details, "limit");
		if (cause->kind == CAUSE_BUSY && cJSON_IsString(limit)) {
			attrs = cJSON_CreateObject();
			cJSON_AddStringToObject(attrs, "limit",
			    limit->valuestring);
			cJSON_AddStringToObject(attrs, "op", oc->entry != NULL ?
			    oc->entry->name : "");
			cJSON_AddStringToObject(attrs, "tenant", oc->tenant);
			telemetry_event(NULL, NULL, oc->span, "limit.hit",
			    attrs);
		}
	}
	telemetry_span_end(oc->span, oc->cancelled ? "cancelled" : cause !=
	    NULL ? "error" : "completed");
	oc->span = NULL;
	oc->done(oc, result, cause, oc->arg);
	if (!oc->starting)
		op_call_free(oc);
}

/*
 * Start a call of operation name with args (NULL for none) for a caller
 * granted sets, acting for tenant; flags OP_CALL_HIDDEN lets a hidden
 * operation answer. done receives (result, NULL) or (NULL, cause) exactly
 * once; the result is done's. Returns the call while it is running, or
 * NULL when it has already answered.
 */
struct op_call *
op_call_start(const char *name, cJSON *args, int sets, const char *tenant,
    int flags, op_done_cb done, void *arg)
{
	struct op_call	*oc;
	struct cause	 cause = { 0 };
	char		*sname;

	if (tenant == NULL)
		fatalx("%s: a call of %s with no tenant", __func__, name);
	oc = xcalloc(1, sizeof *oc);
	oc->tenant = xstrdup(tenant);
	oc->done = done;
	oc->arg = arg;
	oc->starting = 1;
	oc->started_us = mono_us();
	util_random_hex(oc->request_id, 16);
	oc->args = args != NULL ? cJSON_Duplicate(args, 1) :
	    cJSON_CreateObject();
	oc->entry = op_lookup(name, sets, (flags & OP_CALL_HIDDEN) != 0);

	xasprintf(&sname, "tool.%.64s", name);
	oc->span = telemetry_span_begin(oc->request_id, NULL, sname, NULL);
	free(sname);
	telemetry_span_attr_str(oc->span, "op", name);
	telemetry_span_attr_str(oc->span, "tenant", tenant);

	if (oc->entry == NULL)
		cause_set(&cause, CAUSE_INVALID, "tool", name, "unknown tool:"
		    " %.100s", name);
	else
		op_validate(oc->entry, oc->args, &cause);
	if (cause.kind != CAUSE_NONE)
		op_call_finish(oc, NULL, &cause);
	else
		oc->entry->exec(oc);
	cause_clear(&cause);

	oc->starting = 0;
	if (oc->finished) {
		op_call_free(oc);
		return (NULL);
	}
	return (oc);
}

/* The caller no longer waits: let the operation end a wait early. */
void
op_call_cancel(struct op_call *oc)
{
	if (oc->cancelled || oc->finished)
		return;
	oc->cancelled = 1;
	if (oc->entry->cancel != NULL)
		oc->entry->cancel(oc);
}

/* Answer with a result (taken over). */
void
op_call_done(struct op_call *oc, cJSON *result)
{
	op_call_finish(oc, result, NULL);
}

/* Answer with a cause (the caller's; copied as needed). */
void
op_call_fail(struct op_call *oc, const struct cause *cause)
{
	op_call_finish(oc, NULL, cause);
}

/* Answer with an error of kind, {key: value} its details (key NULL: {}). */
void
op_call_error(struct op_call *oc, enum cause_kind kind, const char *key,
    const char *value, const char *fmt, ...)
{
	struct cause	 cause = { 0 };
	va_list		 ap;

	va_start(ap, fmt);
	cause_vset(&cause, kind, key, value, fmt, ap);
	va_end(ap);
	op_call_finish(oc, NULL, &cause);
	cause_clear(&cause);
}

const char *
op_call_name(struct op_call *oc)
{
	return (oc->entry->name);
}

const char *
op_call_request_id(struct op_call *oc)
{
	return (oc->request_id);
}

/* The tenant the call acts for. */
const char *
op_call_tenant(struct op_call *oc)
{
	return (oc->tenant);
}

struct tspan *
op_call_span(struct op_call *oc)
{
	return (oc->span);
}

void *
op_call_data(struct op_call *oc)
{
	return (oc->data);
}

void
op_call_set_data(struct op_call *oc, void *data)
{
	oc->data = data;
}

int
op_call_cancelled(struct op_call *oc)
{
	return (oc->cancelled);
}

/* An argument's value, or NULL when absent (or null). */
cJSON *
op_arg(struct op_call *oc, const char *name)
{
	cJSON	*v;

	v = cJSON_GetObjectItemCaseSensitive(oc->args, name);
	return (cJSON_IsNull(v) ? NULL : v);
}

/* A string argument (validated), or NULL when absent. */
const char *
op_arg_string(struct op_call *oc, const char *name)
{
	cJSON	*v = op_arg(oc, name);

	return (v != NULL ? v->valuestring : NULL);
}

/* An integer argument (validated), or its default, or -1 with neither. */
long long
op_arg_integer(struct op_call *oc, const char *name)
{
	const struct op_arg	*a;
	cJSON			*v = op_arg(oc, name);

	if (v != NULL)
		return ((long long)v->valuedouble);
	for (a = oc->entry->args; a->name != NULL; a++) {
		if (strcmp(a->name, name) == 0 && a->dflt != NULL)
			return (strtoll(a->dflt, NULL, 10));
	}
	return (-1);
}

/* Whether a caller of one tenant sees what another owns. */
int
op_tenant_sees(const char *caller, const char *owner)
{
	return (util_tenant_sees(caller, owner));
}

/*
 * Whether id names a sandbox of a tenant the call's tenant does not see
 * (1), else 0 (an invalid or unknown id is left to the usual checks).
 * The call's span goes to the log of a sandbox the caller sees (never to
 * another tenant's), unless it only reads that log (the observability
 * set): reading does not change what it reads, and "last" stays the
 * last thing done.
 */
int
op_sandbox_unseen(struct op_call *oc, const char *id)
{
	char	*owner;
	int	 unseen;

	if ((owner = sandbox_tenant(id)) == NULL)
		return (0);
	unseen = strcmp(oc->tenant, TENANT_LOCAL) != 0 &&
	    !util_tenant_sees(oc->tenant, owner);
	free(owner);
	if (!unseen && oc->entry->set != TOOLSET_OBSERVABILITY)
		telemetry_span_sandbox(oc->span, id);
	return (unseen);
}

/*
 * If id names a sandbox of a tenant the call's tenant does not see,
 * answer exactly as for an unknown id (not_found, {"sandbox_id": id})
 * and return 1; else return 0 and let the handler go on.
 */
int
op_sandbox_hidden(struct op_call *oc, const char *id)
{
	if (!op_sandbox_unseen(oc, id))
		return (0);
	op_call_error(oc, CAUSE_NOT_FOUND, "sandbox_id", id, "no sandbox %s",
	    id);
	return (1);
}


struct op_rt_wait {
	rt_cb	 cb;
	void	*arg;
};
static void	op_sandbox_runtime_got(struct rt_sandbox *,
		    const struct cause *, void *);
static void	op_sandbox_runtime_adopted(struct rt_sandbox *, void *);

/*
 * The runtime view of the call's sandbox_id (zygote_get), with
 * another tenant's sandbox answered to cb as an unknown one.
 */
void
op_sandbox_runtime(struct op_call *oc, rt_cb cb, void *arg)
{
	const char		*id = op_arg_string(oc, "sandbox_id");
	struct cause		 cause = { 0 };
	struct op_rt_wait	*w;

	if (op_sandbox_unseen(oc, id)) {
		cause_set(&cause, CAUSE_NOT_FOUND, "sandbox_id", id, "no"
		    " sandbox %s", id);
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->arg = arg;
	zygote_get(id, op_sandbox_runtime_got, w);
}

/*
 * The sandbox is served here: the sessions a process that is gone left
 * in it are taken up first (once), so that a call naming one finds it.
 */
static void
op_sandbox_runtime_got(struct rt_sandbox *sb, const struct cause *cause,
    void *arg)
{
	struct op_rt_wait	*w = arg;

	if (sb == NULL) {
		w->cb(NULL, cause, w->arg);
		free(w);
		return;
	}
	session_adopt(sb, op_sandbox_runtime_adopted, w);
}

static void
op_sandbox_runtime_adopted(struct rt_sandbox *sb, void *arg)
{
	struct op_rt_wait	*w = arg;

	w->cb(sb, NULL, w->arg);
	free(w);
}

/* The engine's gauges for GET /metrics (the surface does not reach it). */
void
op_metrics(struct metrics_counts *mc)
{
	session_metrics(mc);
	command_metrics(mc);
}
