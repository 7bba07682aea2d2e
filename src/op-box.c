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
 * The boxes set (boxes.md, "Tools"): sandbox_start, sandbox_status and
 * sandbox_stop, names, inputs and outputs as the seed froze them. A box
 * is its tenant's: another tenant's id reads as unknown.
 */

#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"

#define OP_BOX_SERVICES_MAX	32
#define OP_BOX_ID_ARG { "id", OP_ARG_STRING, 1, -1, NULL,		\
	"Box id (box-<12 hex>), as sandbox_start answered.", 0, 0 }

static void	op_sandbox_start_exec(struct op_call *);
static void	op_sandbox_status_exec(struct op_call *);
static void	op_sandbox_stop_exec(struct op_call *);
static void	op_sandbox_exec_exec(struct op_call *);
static void	op_sandbox_secrets_exec(struct op_call *);
static void	op_sandbox_procs_exec(struct op_call *);
static void	op_box_list_exec(struct op_call *);
static void	op_box_usage_exec(struct op_call *);
static void	op_box_credits_exec(struct op_call *);
static void	op_sandbox_procs_go(struct op_call *, struct box *);
static void	op_box_thaw(struct op_call *, struct box *,
		    void (*)(struct op_call *, struct box *));
static cJSON	*op_box_result(struct op_call *, cJSON *);
static void	op_secret_put_exec(struct op_call *);
static void	op_secret_delete_exec(struct op_call *);

#define OP_BOX_SECRET_MAX	(64 * 1024)
#define OP_BOX_SECRET_NAME	128

#define OP_BOX_TIMEOUT_MAX	3600
#define OP_BOX_CMD_MAX		(128 * 1024)

static const struct op_arg op_sandbox_start_args[] = {
	{ "services", OP_ARG_ARRAY, 1, -1, NULL,
	  "The box's services, [{name, port}]: each name (a DNS label)"
	  " resolves inside the box, and inside its own containers, to the"
	  " box itself; port is where the service listens (1-65535). May be"
	  " empty.", 0, 0 },
	{ "externalBaseUrl", OP_ARG_STRING, 0, -1, NULL,
	  "Start every service in external mode, forwarded to this base URL"
	  " (not available on this server yet: the call says so).", 0, 0 },
	{ "secrets", OP_ARG_ARRAY, 0, -1, NULL,
	  "Names of the tenant's secrets (see sandbox_secrets) to give the"
	  " box's commands as environment variables.", 0, 0 },
	{ "idleTimeoutMin", OP_ARG_INTEGER, 0, 1, NULL,
	  "Stop the box after this many minutes without a tool call on it."
	  " Absent: no idle stop.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_sandbox_start_entry = {
	.name = "sandbox_start",
	.title = "Start a box",
	.description = "Start a box: a whole Linux machine for this task, with"
	    " git, Node, Go, Python, build tools, a display :99 with"
	    " Chromium, and a Docker-compatible engine with compose of its"
	    " own. Answers once it is ready, with its id. Boxes count"
	    " against the tenant's plan; stop them with sandbox_stop.",
	.set = TOOLSET_BOXES,
	.flags = OP_OPENWORLD,
	.args = op_sandbox_start_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"id\": {\"type\": \"string\"},"
	    " \"sceneUrl\": {\"type\": [\"string\", \"null\"]},"
	    " \"takeoverUrl\": {\"type\": [\"string\", \"null\"]},"
	    " \"status\": {\"type\": \"string\"},"
	    " \"startedFrom\": {\"enum\": [\"spare\", \"cold\"]}},"
	    " \"required\": [\"id\", \"sceneUrl\", \"takeoverUrl\", \"status\","
	    " \"startedFrom\"]}",
	.exec = op_sandbox_start_exec,
};

static const struct op_arg op_sandbox_exec_args[] = {
	OP_BOX_ID_ARG,
	{ "cmd", OP_ARG_STRING, 1, -1, NULL,
	  "Shell command, run by bash -lc as the box user.", 0, 0 },
	{ "cwd", OP_ARG_STRING, 0, -1, NULL,
	  "Directory to run in, relative to the box's work directory /work"
	  " (or an absolute path under it); default /work.", 0, 0 },
	{ "timeoutSec", OP_ARG_INTEGER, 0, 1, "60",
	  "Seconds before the command's process group is killed (exit code"
	  " 124, timedOut true); at most 3600.", OP_BOX_TIMEOUT_MAX, 0 },
	{ "background", OP_ARG_BOOLEAN, 0, -1, "false",
	  "Answer at once with a bgId; the output goes to"
	  " /work/.sbx/<bgId>.log.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_sandbox_exec_entry = {
	.name = "sandbox_exec",
	.title = "Run a command in a box",
	.description = "Run a shell command in a box as its unprivileged user,"
	    " in /work or a directory under it, with DISPLAY=:99 and"
	    " DOCKER_HOST set to the box's own engine (docker and"
	    " docker-compose work). Answers with its stdout and stderr (the"
	    " last 16 KiB of each) and exitCode once it ends; with"
	    " background, at once with a bgId.",
	.set = TOOLSET_BOXES,
	.flags = OP_DESTRUCTIVE | OP_OPENWORLD,
	.args = op_sandbox_exec_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"stdout\": {\"type\": \"string\"},"
	    " \"stderr\": {\"type\": \"string\"},"
	    " \"exitCode\": {\"type\": [\"integer\", \"null\"]},"
	    " \"timedOut\": {\"type\": \"boolean\"},"
	    " \"truncated\": {\"type\": \"boolean\"},"
	    " \"stdoutTruncated\": {\"type\": \"boolean\"},"
	    " \"stderrTruncated\": {\"type\": \"boolean\"},"
	    " \"bgId\": {\"type\": \"string\"}},"
	    " \"required\": [\"stdout\", \"stderr\", \"exitCode\"]}",
	.exec = op_sandbox_exec_exec,
};

static const struct op_arg op_sandbox_procs_args[] = {
	OP_BOX_ID_ARG,
	{ "action", OP_ARG_STRING, 0, -1, "\"list\"",
	  "list (the box's background jobs), wait (for bgId's end, at most"
	  " timeoutSec) or stop (kill bgId's process group).", 0, 0 },
	{ "bgId", OP_ARG_STRING, 0, -1, NULL,
	  "The background job (bg-<8 hex>) to wait for or stop.", 0, 0 },
	{ "timeoutSec", OP_ARG_INTEGER, 0, 0, "60",
	  "wait: seconds to wait at most (0: answer at once); at most"
	  " 3600.", OP_BOX_TIMEOUT_MAX, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

#define OP_BOX_JOB_SCHEMA						\
	"{\"type\": \"object\", \"properties\": {"			\
	" \"bgId\": {\"type\": \"string\"},"				\
	" \"cmd\": {\"type\": \"string\"},"				\
	" \"running\": {\"type\": \"boolean\"},"			\
	" \"exitCode\": {\"type\": [\"integer\", \"null\"]},"		\
	" \"stopped\": {\"type\": \"boolean\"},"			\
	" \"startedAt\": {\"type\": \"integer\"},"			\
	" \"endedAt\": {\"type\": [\"integer\", \"null\"]},"		\
	" \"log\": {\"type\": \"string\"}},"				\
	" \"required\": [\"bgId\", \"running\", \"exitCode\"]}"

const struct op_entry op_sandbox_procs_entry = {
	.name = "sandbox_procs",
	.title = "A box's background jobs",
	.description = "The background jobs of a box (sandbox_exec with"
	    " background): list them, wait for one to end (at most"
	    " timeoutSec), or stop one (its process group is killed). Their"
	    " output is in /work/.sbx/<bgId>.log.",
	.set = TOOLSET_BOXES,
	.flags = OP_DESTRUCTIVE,
	.args = op_sandbox_procs_args,
	.result = "{\"anyOf\": [{\"type\": \"object\", \"properties\":"
	    " {\"jobs\": {\"type\": \"array\", \"items\": "
	    OP_BOX_JOB_SCHEMA "}}, \"required\": [\"jobs\"]}, "
	    OP_BOX_JOB_SCHEMA "]}",
	.exec = op_sandbox_procs_exec,
};

static const struct op_arg op_no_args[] = {
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_sandbox_secrets_entry = {
	.name = "sandbox_secrets",
	.title = "The tenant's secrets",
	.description = "The names of the tenant's secrets (set by a person"
	    " through the REST API), never their values. Name them in"
	    " sandbox_start's secrets to give them to a box's commands as"
	    " environment variables.",
	.set = TOOLSET_BOXES,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_no_args,
	.result = "{\"type\": \"object\", \"properties\": {\"secrets\":"
	    " {\"type\": \"array\", \"items\": {\"type\": \"string\"}}},"
	    " \"required\": [\"secrets\"]}",
	.exec = op_sandbox_secrets_exec,
};

/* GET /v1/boxes: REST only. */
const struct op_entry op_box_list_entry = {
	.name = "box_list",
	.title = "List boxes",
	.description = "The tenant's boxes, newest first, ended ones"
	    " included.",
	.set = TOOLSET_BOXES,
	.flags = OP_READONLY | OP_IDEMPOTENT | OP_HIDDEN,
	.args = op_no_args,
	.result = "{\"type\": \"object\", \"properties\": {\"boxes\":"
	    " {\"type\": \"array\", \"items\": {\"type\": \"object\"}}},"
	    " \"required\": [\"boxes\"]}",
	.exec = op_box_list_exec,
};

static const struct op_arg op_box_usage_args[] = {
	{ "box", OP_ARG_STRING, 0, -1, NULL, "Only this box's events.", 0,
	  0 },
	{ "kind", OP_ARG_STRING, 0, -1, NULL, "Only events of this kind"
	  " (box_minute, call).", 0, 0 },
	{ "since", OP_ARG_INTEGER, 0, 0, "0", "Only events from this time"
	  " on (milliseconds since 1970).", 0, 0 },
	{ "limit", OP_ARG_INTEGER, 0, 1, "1000", "The most events, newest"
	  " first (at most 10000).", 10000, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

/* GET /v1/usage: REST only. */
const struct op_entry op_box_usage_entry = {
	.name = "box_usage",
	.title = "Usage",
	.description = "The tenant's usage events, newest first: one per"
	    " running box-minute and one per metered call.",
	.set = TOOLSET_BOXES,
	.flags = OP_READONLY | OP_IDEMPOTENT | OP_HIDDEN,
	.args = op_box_usage_args,
	.result = "{\"type\": \"object\", \"properties\": {\"usage\":"
	    " {\"type\": \"array\", \"items\": {\"type\": \"object\"}}},"
	    " \"required\": [\"usage\"]}",
	.exec = op_box_usage_exec,
};

/* GET /v1/credits: REST only. */
const struct op_entry op_box_credits_entry = {
	.name = "box_credits",
	.title = "Credits",
	.description = "The tenant's credits left (null: no limit) and the"
	    " prices.",
	.set = TOOLSET_BOXES,
	.flags = OP_READONLY | OP_IDEMPOTENT | OP_HIDDEN,
	.args = op_no_args,
	.result = "{\"type\": \"object\", \"properties\": {\"balance\":"
	    " {\"type\": [\"number\", \"null\"]}}, \"required\":"
	    " [\"balance\"]}",
	.exec = op_box_credits_exec,
};

static const struct op_arg op_secret_put_args[] = {
	{ "name", OP_ARG_STRING, 1, -1, NULL, "The secret's name, an"
	  " environment variable's: letters, digits and _, not starting with"
	  " a digit, at most 128.", 0, 0 },
	{ "value", OP_ARG_TEXT, 1, -1, NULL, "Its value: text, at most 64"
	  " KiB, with no NUL.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

/* PUT /v1/secrets/{name}: REST only. */
const struct op_entry op_secret_put_entry = {
	.name = "secret_put",
	.title = "Set a secret",
	.description = "Set one of the tenant's secrets; its value is never"
	    " shown again.",
	.set = TOOLSET_BOXES,
	.flags = OP_IDEMPOTENT | OP_HIDDEN,
	.args = op_secret_put_args,
	.result = "{\"type\": \"object\", \"properties\": {\"name\":"
	    " {\"type\": \"string\"}}, \"required\": [\"name\"]}",
	.exec = op_secret_put_exec,
};

static const struct op_arg op_secret_name_args[] = {
	{ "name", OP_ARG_STRING, 1, -1, NULL, "The secret's name.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

/* DELETE /v1/secrets/{name}: REST only. */
const struct op_entry op_secret_delete_entry = {
	.name = "secret_delete",
	.title = "Remove a secret",
	.description = "Remove one of the tenant's secrets.",
	.set = TOOLSET_BOXES,
	.flags = OP_DESTRUCTIVE | OP_IDEMPOTENT | OP_HIDDEN,
	.args = op_secret_name_args,
	.result = "{\"type\": \"object\", \"properties\": {\"name\":"
	    " {\"type\": \"string\"}, \"removed\": {\"type\":"
	    " \"boolean\"}}, \"required\": [\"name\", \"removed\"]}",
	.exec = op_secret_delete_exec,
};

static const struct op_arg op_box_id_args[] = {
	OP_BOX_ID_ARG,
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_sandbox_status_entry = {
	.name = "sandbox_status",
	.title = "A box's status",
	.description = "The state of a box (starting, ready, stopping,"
	    " terminated, interrupted), the health of its display and of its"
	    " container engine, its services, and why it ended when it has.",
	.set = TOOLSET_BOXES,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_box_id_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"id\": {\"type\": \"string\"},"
	    " \"state\": {\"enum\": [\"starting\", \"ready\", \"stopping\","
	    " \"terminated\", \"interrupted\"]},"
	    " \"boxd\": {\"type\": \"object\"},"
	    " \"wiring\": {\"type\": \"array\"},"
	    " \"takeoverUrl\": {\"type\": [\"string\", \"null\"]},"
	    " \"interrupted\": {\"type\": [\"string\", \"null\"]},"
	    " \"reason\": {\"type\": [\"string\", \"null\"]},"
	    " \"registry\": {\"type\": [\"object\", \"null\"]}},"
	    " \"required\": [\"id\", \"state\", \"boxd\", \"wiring\","
	    " \"takeoverUrl\", \"interrupted\", \"registry\"]}",
	.exec = op_sandbox_status_exec,
};

const struct op_entry op_sandbox_stop_entry = {
	.name = "sandbox_stop",
	.title = "Stop a box",
	.description = "Stop a box: its container, network and disk (its work"
	    " directory included) are removed; its record stays, terminated.",
	.set = TOOLSET_BOXES,
	.flags = OP_DESTRUCTIVE | OP_IDEMPOTENT,
	.args = op_box_id_args,
	.result = "{\"type\": \"object\", \"properties\": {\"ok\":"
	    " {\"type\": \"boolean\"}}, \"required\": [\"ok\"]}",
	.exec = op_sandbox_stop_exec,
};

/* Whether name is a DNS label: 1 to 63 of a-z, 0-9, -, not at an end. */
static int
op_box_label(const char *name)
{
	size_t	n = strlen(name), i;

	if (n == 0 || n > 63 || name[0] == '-' || name[n - 1] == '-')
		return (0);
	for (i = 0; i < n; i++) {
		if (!islower((unsigned char)name[i]) &&
		    !isdigit((unsigned char)name[i]) && name[i] != '-')
			return (0);
	}
	return (1);
}

/* The services argument, checked: its copy, or NULL once answered. */
static cJSON *
op_box_services(struct op_call *oc)
{
	cJSON		*in = op_arg(oc, "services"), *s, *name, *port, *out;
	cJSON		*o, *t;
	int		 i = 0;

	if (cJSON_GetArraySize(in) > OP_BOX_SERVICES_MAX) {
		op_call_error(oc, CAUSE_INVALID, "argument", "services",
		    "services: at most %d services", OP_BOX_SERVICES_MAX);
		return (NULL);
	}
	out = cJSON_CreateArray();
	cJSON_ArrayForEach(s, in) {
		name = cJSON_GetObjectItem(s, "name");
		port = cJSON_GetObjectItem(s, "port");
		if (!cJSON_IsObject(s) || !cJSON_IsString(name) ||
		    !op_box_label(name->valuestring)) {
			op_call_error(oc, CAUSE_INVALID, "argument",
			    "services", "services[%d].name must be a DNS"
			    " label: 1 to 63 lowercase letters, digits and"
			    " dashes, not starting or ending with a dash", i);
			cJSON_Delete(out);
			return (NULL);
		}
		if (!cJSON_IsNumber(port) || port->valuedouble !=
		    (double)port->valueint || port->valueint < 1 ||
		    port->valueint > 65535) {
			op_call_error(oc, CAUSE_INVALID, "argument",
			    "services", "services[%d].port must be a whole"
			    " number from 1 to 65535", i);
			cJSON_Delete(out);
			return (NULL);
		}
		cJSON_ArrayForEach(t, out) {
			if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t,
			    "name")), name->valuestring) == 0) {
				op_call_error(oc, CAUSE_INVALID, "argument",
				    "services", "services: the name \"%s\" is"
				    " given twice", name->valuestring);
				cJSON_Delete(out);
				return (NULL);
			}
		}
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", name->valuestring);
		cJSON_AddNumberToObject(o, "port", port->valueint);
		cJSON_AddStringToObject(o, "mode", "box");
		cJSON_AddItemToArray(out, o);
		i++;
	}
	return (out);
}

static void
op_sandbox_start_cb(struct box *b, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;
	cJSON		*r;

	if (b == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "id", b->id);
	/* No scene route nor takeover page is served yet. */
	cJSON_AddNullToObject(r, "sceneUrl");
	cJSON_AddNullToObject(r, "takeoverUrl");
	cJSON_AddStringToObject(r, "status", box_state_name(b->state));
	cJSON_AddStringToObject(r, "startedFrom", "cold");
	op_call_done(oc, r);
}

static void
op_sandbox_start_exec(struct op_call *oc)
{
	cJSON		*services, *secrets = op_arg(oc, "secrets"), *s, *n;
	cJSON		*names = NULL;
	char		*cause = NULL;
	long long	 idle = 0;

	if (op_arg(oc, "externalBaseUrl") != NULL) {
		op_call_error(oc, CAUSE_INVALID, "argument", "externalBaseUrl",
		    "externalBaseUrl: services forwarded to an external base"
		    " URL are not available on this server; start the box"
		    " without it (every service then resolves to the box)");
		return;
	}
	if (cJSON_GetArraySize(secrets) > 0 && (names = box_secret_names(
	    op_call_tenant(oc), &cause)) == NULL) {
		op_call_error(oc, CAUSE_INTERNAL, NULL, NULL, "%s", cause);
		free(cause);
		return;
	}
	cJSON_ArrayForEach(s, secrets) {
		cJSON_ArrayForEach(n, names) {
			if (cJSON_IsString(s) && strcmp(n->valuestring,
			    s->valuestring) == 0)
				break;
		}
		if (n == NULL) {
			op_call_error(oc, CAUSE_INVALID, "argument", "secrets",
			    "secrets: no secret named \"%s\" exists for this"
			    " tenant (sandbox_secrets lists them)",
			    cJSON_IsString(s) ? s->valuestring : "(not a"
			    " string)");
			cJSON_Delete(names);
			return;
		}
	}
	cJSON_Delete(names);
	if (op_arg(oc, "idleTimeoutMin") != NULL)
		idle = op_arg_integer(oc, "idleTimeoutMin");
	if (idle > 60 * 24 * 365) {
		op_call_error(oc, CAUSE_INVALID, "argument", "idleTimeoutMin",
		    "idleTimeoutMin: at most %d minutes (a year)",
		    60 * 24 * 365);
		return;
	}
	if ((services = op_box_services(oc)) == NULL)
		return;
	box_start(op_call_tenant(oc), services, secrets, (int)idle,
	    op_call_span(oc), op_sandbox_start_cb, oc);
	cJSON_Delete(services);
}

/* The caller's box by the id argument, or NULL once answered. */
static struct box *
op_box(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "id");
	struct box	*b;

	if ((b = box_find(id, op_call_tenant(oc))) == NULL) {
		op_call_error(oc, CAUSE_NOT_FOUND, "id", id, "no box %s", id);
		return (NULL);
	}
	box_touch(b);
	return (b);
}

static void	op_sandbox_status_go(struct op_call *, struct box *);

static void
op_sandbox_status_exec(struct op_call *oc)
{
	struct box	*b;

	if ((b = op_box(oc)) == NULL)
		return;
	op_box_thaw(oc, b, op_sandbox_status_go);
}

static void
op_sandbox_status_go(struct op_call *oc, struct box *b)
{
	cJSON		*r, *s, *w;

	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "id", b->id);
	cJSON_AddStringToObject(r, "state", box_state_name(b->state));
	cJSON_AddItemToObject(r, "boxd", box_boxd(b));
	w = cJSON_AddArrayToObject(r, "wiring");
	cJSON_ArrayForEach(s, b->services)
		cJSON_AddItemToArray(w, cJSON_Duplicate(s, 1));
	cJSON_AddNullToObject(r, "takeoverUrl");
	if (b->state == BOX_INTERRUPTED && b->reason != NULL)
		cJSON_AddStringToObject(r, "interrupted", b->reason);
	else
		cJSON_AddNullToObject(r, "interrupted");
	if (b->reason != NULL)
		cJSON_AddStringToObject(r, "reason", b->reason);
	else
		cJSON_AddNullToObject(r, "reason");
	cJSON_AddNullToObject(r, "registry");
	op_call_done(oc, op_box_result(oc, r));
}

static void
op_sandbox_stop_cb(struct box *b, void *arg)
{
	struct op_call	*oc = arg;
	cJSON		*r;

	r = cJSON_CreateObject();
	cJSON_AddTrueToObject(r, "ok");
	op_call_done(oc, r);
}

static void
op_sandbox_stop_exec(struct op_call *oc)
{
	struct box	*b;
	cJSON		*r;

	if ((b = op_box(oc)) == NULL)
		return;
	switch (b->state) {
	case BOX_STARTING:
		op_call_error(oc, CAUSE_CONFLICT, "id", b->id, "box %s is"
		    " starting: stop it once sandbox_start has answered",
		    b->id);
		return;
	case BOX_STOPPING:
		op_call_error(oc, CAUSE_CONFLICT, "id", b->id, "box %s is"
		    " being stopped already", b->id);
		return;
	case BOX_TERMINATED:
	case BOX_INTERRUPTED:
		r = cJSON_CreateObject();
		cJSON_AddTrueToObject(r, "ok");
		op_call_done(oc, r);
		return;
	case BOX_READY:
	case BOX_FROZEN:	/* removed as it is */
		break;
	}
	box_stop(b, "stopped", op_sandbox_stop_cb, oc);
}

/*
 * The call's marks: the box it works on was thawed for it (its result
 * says so), and what it continues with once the box is thawed.
 */
static int	op_box_thawed_mark;

static void
op_box_thawed(struct box *b, int thawed, const struct cause *cause,
    void *arg)
{
	struct op_call	*oc = arg;
	void		(*then)(struct op_call *, struct box *);

	then = (void (*)(struct op_call *, struct box *))op_call_data(oc);
	op_call_set_data(oc, thawed ? &op_box_thawed_mark : NULL);
	if (cause != NULL) {
		op_call_fail(oc, cause);
		return;
	}
	then(oc, b);
}

/* Continue the call with then(oc, b) once box b is thawed. */
static void
op_box_thaw(struct op_call *oc, struct box *b, void (*then)(struct op_call *,
    struct box *))
{
	op_call_set_data(oc, (void *)then);
	box_thaw(b, op_box_thawed, oc);
}

/* A result, saying the box was thawed for the call when it was. */
static cJSON *
op_box_result(struct op_call *oc, cJSON *r)
{
	if (op_call_data(oc) == &op_box_thawed_mark)
		cJSON_AddTrueToObject(r, "thawed");
	return (r);
}

/* Answer that box b cannot run a command now: its state, and why. */
static void
op_box_not_ready(struct op_call *oc, struct box *b)
{
	op_call_error(oc, CAUSE_CONFLICT, "id", b->id, "box %s is %s%s%s",
	    b->id, box_state_name(b->state), b->reason != NULL ? ": " : "",
	    b->reason != NULL ? b->reason : "");
}

/*
 * cwd as a path relative to /work: "" for /work itself; NULL when it
 * leaves /work (an absolute path elsewhere, a .. component).
 */
static const char *
op_box_cwd(const char *cwd)
{
	const char	*p;
	size_t		 n;

	if (strcmp(cwd, "/work") == 0)
		return ("");
	if (strncmp(cwd, "/work/", 6) == 0)
		cwd += 6;
	else if (*cwd == '/')
		return (NULL);
	for (p = cwd; *p != '\0'; p += n + (p[n] == '/')) {
		n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return (NULL);
	}
	return (cwd);
}

static void
op_sandbox_exec_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;

	if (result == NULL)
		op_call_fail(oc, cause);
	else
		op_call_done(oc, op_box_result(oc, cJSON_Duplicate(result,
		    1)));
}

static void
op_sandbox_exec_go(struct op_call *oc, struct box *b)
{
	const char	*cwd = "";

	if (b->state != BOX_READY) {
		op_box_not_ready(oc, b);
		return;
	}
	if (op_arg(oc, "cwd") != NULL)
		cwd = op_box_cwd(op_arg_string(oc, "cwd"));
	box_exec(b, op_arg_string(oc, "cmd"), cwd, (int)op_arg_integer(oc,
	    "timeoutSec"), cJSON_IsTrue(op_arg(oc, "background")),
	    op_sandbox_exec_cb, oc);
}

static void
op_sandbox_exec_exec(struct op_call *oc)
{
	struct box	*b;
	const char	*c;
	long long	 timeout = op_arg_integer(oc, "timeoutSec");

	if (op_arg(oc, "cwd") != NULL) {
		c = op_arg_string(oc, "cwd");
		if (op_box_cwd(c) == NULL) {
			op_call_error(oc, CAUSE_INVALID, "argument", "cwd",
			    "cwd must be a directory under /work (relative to"
			    " it, or absolute under it, with no .."
			    " component): %s", c);
			return;
		}
	}
	if (timeout < 1 || timeout > OP_BOX_TIMEOUT_MAX) {
		op_call_error(oc, CAUSE_INVALID, "argument", "timeoutSec",
		    "timeoutSec must be from 1 to %d seconds: %lld",
		    OP_BOX_TIMEOUT_MAX, timeout);
		return;
	}
	if (strlen(op_arg_string(oc, "cmd")) == 0) {
		op_call_error(oc, CAUSE_INVALID, "argument", "cmd",
		    "cmd is empty");
		return;
	}
	/* The most one argument of an exec may be (MAX_ARG_STRLEN). */
	if (strlen(op_arg_string(oc, "cmd")) >= OP_BOX_CMD_MAX) {
		op_call_error(oc, CAUSE_INVALID, "argument", "cmd", "cmd is"
		    " %zu bytes; at most %d", strlen(op_arg_string(oc, "cmd")),
		    OP_BOX_CMD_MAX - 1);
		return;
	}
	if ((b = op_box(oc)) == NULL)
		return;
	if (b->state != BOX_READY && b->state != BOX_FROZEN) {
		op_box_not_ready(oc, b);
		return;
	}
	op_box_thaw(oc, b, op_sandbox_exec_go);
}

/* Whether name is a secret's name: an environment variable's. */
static int
op_box_secret_name(const char *name)
{
	size_t	n = strlen(name), i;

	if (n == 0 || n > OP_BOX_SECRET_NAME || isdigit((unsigned char)*name))
		return (0);
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return (0);
	}
	return (1);
}

static void
op_sandbox_secrets_exec(struct op_call *oc)
{
	cJSON	*names, *r;
	char	*cause = NULL;

	if ((names = box_secret_names(op_call_tenant(oc), &cause)) == NULL) {
		op_call_error(oc, CAUSE_INTERNAL, NULL, NULL, "%s", cause);
		free(cause);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "secrets", names);
	op_call_done(oc, r);
}

static void
op_secret_put_exec(struct op_call *oc)
{
	const char	*name = op_arg_string(oc, "name");
	const char	*value = op_arg_string(oc, "value");
	size_t		 len = strlen(value);
	cJSON		*r;
	char		*cause = NULL;

	if (!op_box_secret_name(name)) {
		op_call_error(oc, CAUSE_INVALID, "argument", "name", "name must"
		    " be an environment variable's: letters, digits and _, not"
		    " starting with a digit, 1 to %d", OP_BOX_SECRET_NAME);
		return;
	}
	if (len > OP_BOX_SECRET_MAX) {
		op_call_error(oc, CAUSE_INVALID, "argument", "value", "value"
		    " is %zu bytes; at most %d", len, OP_BOX_SECRET_MAX);
		return;
	}
	if (memchr(value, '\0', len) != NULL || strstr(value, NUL_MARK) !=
	    NULL) {
		op_call_error(oc, CAUSE_INVALID, "argument", "value", "value"
		    " holds a NUL character");
		return;
	}
	if (box_secret_put(op_call_tenant(oc), name, value, len,
	    &cause) != 0) {
		op_call_error(oc, CAUSE_INTERNAL, NULL, NULL, "%s", cause);
		free(cause);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "name", name);
	op_call_done(oc, r);
}

static void
op_secret_delete_exec(struct op_call *oc)
{
	const char	*name = op_arg_string(oc, "name");
	cJSON		*r;
	char		*cause = NULL;
	int		 n;

	if ((n = box_secret_remove(op_call_tenant(oc), name, &cause)) < 0) {
		op_call_error(oc, CAUSE_INTERNAL, NULL, NULL, "%s", cause);
		free(cause);
		return;
	}
	if (n == 0) {
		op_call_error(oc, CAUSE_NOT_FOUND, "name", name, "no secret"
		    " named %s", name);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "name", name);
	cJSON_AddTrueToObject(r, "removed");
	op_call_done(oc, r);
}

static void
op_sandbox_procs_exec(struct op_call *oc)
{
	struct box	*b;
	const char	*action = op_arg_string(oc, "action");
	const char	*bg = op_arg_string(oc, "bgId");
	long long	 timeout = op_arg_integer(oc, "timeoutSec");

	if (action == NULL)
		action = "list";
	if (strcmp(action, "list") != 0 && strcmp(action, "wait") != 0 &&
	    strcmp(action, "stop") != 0) {
		op_call_error(oc, CAUSE_INVALID, "argument", "action", "action"
		    " must be list, wait or stop: %.64s", action);
		return;
	}
	if (strcmp(action, "list") != 0 && bg == NULL) {
		op_call_error(oc, CAUSE_INVALID, "argument", "bgId", "%s needs"
		    " bgId, the background job's id", action);
		return;
	}
	if (timeout < 0 || timeout > OP_BOX_TIMEOUT_MAX) {
		op_call_error(oc, CAUSE_INVALID, "argument", "timeoutSec",
		    "timeoutSec must be from 0 to %d seconds: %lld",
		    OP_BOX_TIMEOUT_MAX, timeout);
		return;
	}
	if ((b = op_box(oc)) == NULL)
		return;
	op_box_thaw(oc, b, op_sandbox_procs_go);
}

static void
op_sandbox_procs_go(struct op_call *oc, struct box *b)
{
	const char	*action = op_arg_string(oc, "action");
	cJSON		*r;

	if (action == NULL || strcmp(action, "list") == 0) {
		r = cJSON_CreateObject();
		cJSON_AddItemToObject(r, "jobs", box_procs_list(b));
		op_call_done(oc, op_box_result(oc, r));
		return;
	}
	box_procs_wait(b, op_arg_string(oc, "bgId"), (int)op_arg_integer(oc,
	    "timeoutSec"), strcmp(action, "stop") == 0, op_sandbox_exec_cb,
	    oc);
}

static void
op_box_list_exec(struct op_call *oc)
{
	cJSON	*r;

	r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "boxes", box_list_json(op_call_tenant(oc)));
	op_call_done(oc, r);
}

static void
op_box_usage_exec(struct op_call *oc)
{
	cJSON		*list, *r;
	char		*cause = NULL;
	long long	 limit = op_arg_integer(oc, "limit");
	long long	 since = op_arg_integer(oc, "since");

	if (limit < 1 || limit > 10000 || since < 0) {
		op_call_error(oc, CAUSE_INVALID, "argument", limit < 1 ||
		    limit > 10000 ? "limit" : "since", "limit must be from 1 to"
		    " 10000 and since 0 or more");
		return;
	}
	if ((list = box_usage(op_call_tenant(oc), op_arg_string(oc, "box"),
	    op_arg_string(oc, "kind"), (uint64_t)since, (int)limit,
	    &cause)) == NULL) {
		op_call_error(oc, CAUSE_INTERNAL, NULL, NULL, "%s", cause);
		free(cause);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "usage", list);
	op_call_done(oc, r);
}

static void
op_box_credits_exec(struct op_call *oc)
{
	op_call_done(oc, box_credits(op_call_tenant(oc)));
}
