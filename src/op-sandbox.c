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
 * The management set: discovery (list_docker_images,
 * list_workspace_directories) and the sandbox lifecycle (create_sandbox,
 * list_sandboxes, inspect_sandbox, destroy_sandbox), and the hidden
 * sandbox_endpoint that the per-sandbox HTTP routes ask. Schemas follow
 * the published tool reference; the handlers are thin and call docker.c,
 * workspace.c, sandbox.c and runtime.c. A caller sees only its tenant's
 * sandboxes and workspace roots.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"

/* What a sandbox record holds, as the tools return it. */
#define OP_ENDPOINT_SCHEMA						\
	"{\"type\": [\"object\", \"null\"],"				\
	" \"properties\": {\"host\": {\"type\": \"string\"},"		\
	" \"port\": {\"type\": \"integer\"}},"				\
	" \"required\": [\"host\", \"port\"]}"
#define OP_RECORD_SCHEMA						\
	"{\"type\": \"object\","					\
	" \"properties\": {"						\
	"  \"id\": {\"type\": \"string\"},"				\
	"  \"sandbox_id\": {\"type\": \"string\"},"			\
	"  \"workspace_root\": {\"type\": \"string\"},"			\
	"  \"state\": {\"enum\": [\"creating\", \"ready\", \"stopping\","\
	"   \"stopped\", \"failed\"]},"					\
	"  \"daemon\": " OP_ENDPOINT_SCHEMA ","				\
	"  \"daemon_http\": " OP_ENDPOINT_SCHEMA ","			\
	"  \"shared_base\": {\"type\": \"object\","			\
	"   \"properties\": {\"source\": {\"type\": [\"string\", \"null\"]},"\
	"   \"target\": {\"type\": \"string\"},"			\
	"   \"root_hash\": {\"type\": \"string\"},"			\
	"   \"readonly\": {\"type\": \"boolean\"},"			\
	"   \"bytes\": {\"type\": \"integer\"},"			\
	"   \"allocated_bytes\": {\"type\": \"integer\"},"		\
	"   \"entries\": {\"type\": \"integer\"}},"			\
	"   \"required\": [\"source\", \"target\", \"root_hash\","	\
	"   \"readonly\"]},"						\
	"  \"image\": {\"type\": \"string\"},"				\
	"  \"created_at_ms\": {\"type\": \"integer\"},"			\
	"  \"resource_profile\": {\"type\": \"object\","		\
	"   \"properties\": {\"cpus\": {\"type\": \"number\"},"		\
	"   \"memory_high\": {\"type\": \"integer\"},"			\
	"   \"memory_max\": {\"type\": \"integer\"},"			\
	"   \"pids\": {\"type\": \"integer\"},"				\
	"   \"disk\": {\"type\": [\"integer\", \"null\"]}}},"		\
	"  \"container_id\": {\"type\": [\"string\", \"null\"]},"	\
	"  \"tenant\": {\"type\": \"string\"},"				\
	"  \"error\": {\"type\": \"string\"}"				\
	" },"								\
	" \"required\": [\"id\", \"sandbox_id\", \"workspace_root\","	\
	"  \"state\","							\
	"  \"daemon\", \"daemon_http\", \"image\", \"created_at_ms\","	\
	"  \"tenant\"]}"

static void	op_list_docker_images_exec(struct op_call *);
static void	op_list_docker_images_cancel(struct op_call *);
static void	op_list_workspace_directories_exec(struct op_call *);
static void	op_list_workspace_directories_cancel(struct op_call *);
static void	op_create_sandbox_exec(struct op_call *);
static void	op_create_sandbox_cancel(struct op_call *);
static void	op_list_sandboxes_exec(struct op_call *);
static void	op_inspect_sandbox_exec(struct op_call *);
static void	op_destroy_sandbox_exec(struct op_call *);
static void	op_sandbox_endpoint_exec(struct op_call *);

static const struct op_arg op_no_args[] = {
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_list_docker_images_entry = {
	.name = "list_docker_images",
	.title = "List local Docker images",
	.description = "List every local Docker image reference, including"
	    " the ids of untagged images, that can be used to create a"
	    " sandbox. Call it before create_sandbox when you need a valid"
	    " local image; pass the chosen string verbatim. Results may hold"
	    " tags, digests and untagged image ids. Never pulls an image and"
	    " never creates a sandbox.",
	.set = TOOLSET_MANAGEMENT,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_no_args,
	.result = "{\"type\": \"object\","
	    " \"properties\": {\"images\": {\"type\": \"array\","
	    " \"items\": {\"type\": \"string\"}, \"uniqueItems\": true}},"
	    " \"required\": [\"images\"], \"additionalProperties\": false}",
	.exec = op_list_docker_images_exec,
	.cancel = op_list_docker_images_cancel,
};

static const struct op_arg op_list_workspace_directories_args[] = {
	{ "path", OP_ARG_STRING, 0, -1, NULL,
	  "Absolute workspace directory, visible to the picker, to browse."
	  " Omit it to list the roots.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_list_workspace_directories_entry = {
	.name = "list_workspace_directories",
	.title = "Browse workspace directories",
	.description = "Browse the workspace directories that may be used."
	    " Without path, list the configured workspace roots; with path,"
	    " list at most 500 direct subdirectories of that directory."
	    " Browse one level per call and pass the chosen absolute path as"
	    " create_sandbox.workspace_root.",
	.set = TOOLSET_MANAGEMENT,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_list_workspace_directories_args,
	.result = "{\"type\": \"object\","
	    " \"properties\": {\"path\": {\"type\": [\"string\", \"null\"]},"
	    " \"parent\": {\"type\": [\"string\", \"null\"]},"
	    " \"truncated\": {\"type\": \"boolean\"},"
	    " \"directories\": {\"type\": \"array\", \"items\":"
	    " {\"type\": \"object\", \"properties\":"
	    " {\"name\": {\"type\": \"string\"},"
	    " \"path\": {\"type\": \"string\"}},"
	    " \"required\": [\"name\", \"path\"],"
	    " \"additionalProperties\": false}}},"
	    " \"required\": [\"path\", \"parent\", \"truncated\","
	    " \"directories\"], \"additionalProperties\": false}",
	.exec = op_list_workspace_directories_exec,
	.cancel = op_list_workspace_directories_cancel,
};

static const struct op_arg op_create_sandbox_args[] = {
	{ "image", OP_ARG_STRING, 1, -1, NULL,
	  "Container image to create the sandbox from.", 0, 0 },
	{ "workspace_root", OP_ARG_STRING, 1, -1, NULL,
	  "Absolute host workspace directory whose copy the sandbox holds.",
	  0, 0 },
	{ "count", OP_ARG_INTEGER, 0, 1, "1",
	  "Number of sandboxes to create, 1 by default, at most the"
	  " sandboxes-per-call limit (32 by default). With more than one,"
	  " they share one read-only workspace base.", 0,
	  LIMIT_SANDBOXES_PER_CALL + 1 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_create_sandbox_entry = {
	.name = "create_sandbox",
	.title = "Create sandboxes",
	.description = "Create and start one or more sandboxes: a host-side"
	    " record and a Docker container each, from a local image and a"
	    " copy of a host workspace. Pick the image and the workspace with"
	    " the discovery tools first. count=1 returns one record; more"
	    " returns {sandboxes: [record, ...]}. A batch is all or nothing:"
	    " on any failure everything this call made is removed.",
	.set = TOOLSET_MANAGEMENT,
	.flags = 0,
	.args = op_create_sandbox_args,
	.result = "{\"anyOf\": [" OP_RECORD_SCHEMA ","
	    " {\"type\": \"object\", \"properties\": {\"sandboxes\":"
	    " {\"type\": \"array\", \"minItems\": 2, \"items\": "
	    OP_RECORD_SCHEMA "}}, \"required\": [\"sandboxes\"],"
	    " \"additionalProperties\": false}]}",
	.exec = op_create_sandbox_exec,
	.cancel = op_create_sandbox_cancel,
};

const struct op_entry op_list_sandboxes_entry = {
	.name = "list_sandboxes",
	.title = "List sandboxes",
	.description = "List the sandbox records the manager knows, with"
	    " their lifecycle state and endpoint metadata, oldest first. The"
	    " main read-only source of sandbox ids. A stored endpoint does not"
	    " prove the sandbox is reachable.",
	.set = TOOLSET_MANAGEMENT,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_no_args,
	.result = "{\"type\": \"object\", \"properties\": {\"sandboxes\":"
	    " {\"type\": \"array\", \"items\": " OP_RECORD_SCHEMA "}},"
	    " \"required\": [\"sandboxes\"], \"additionalProperties\": false}",
	.exec = op_list_sandboxes_exec,
};

static const struct op_arg op_sandbox_id_args[] = {
	{ "sandbox_id", OP_ARG_STRING, 1, -1, NULL, "Sandbox id.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_inspect_sandbox_entry = {
	.name = "inspect_sandbox",
	.title = "Inspect a sandbox",
	.description = "Show one sandbox record: lifecycle state, workspace"
	    " root and endpoint metadata. Reads the manager's records only; it"
	    " does not prove the sandbox is healthy.",
	.set = TOOLSET_MANAGEMENT,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_sandbox_id_args,
	.result = OP_RECORD_SCHEMA,
	.exec = op_inspect_sandbox_exec,
};

const struct op_entry op_destroy_sandbox_entry = {
	.name = "destroy_sandbox",
	.title = "Destroy a sandbox",
	.description = "Stop and remove a sandbox: its container, its state"
	    " and its record. Check the target with inspect_sandbox first."
	    " Returns the removed record with state stopped; if the container"
	    " cannot be removed the record stays as failed for a later retry.",
	.set = TOOLSET_MANAGEMENT,
	.flags = OP_DESTRUCTIVE,
	.args = op_sandbox_id_args,
	.result = OP_RECORD_SCHEMA,
	.exec = op_destroy_sandbox_exec,
};

/*
 * Hidden: where a sandbox can be reached, for the per-sandbox HTTP
 * routes (health, forward). Granted by the runtime set.
 */
const struct op_entry op_sandbox_endpoint_entry = {
	.name = "sandbox_endpoint",
	.title = "Reach a sandbox",
	.description = "The state of a sandbox and of its container, and the"
	    " container's network address.",
	.set = TOOLSET_RUNTIME,
	.flags = OP_READONLY | OP_IDEMPOTENT | OP_HIDDEN,
	.args = op_sandbox_id_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"sandbox_id\": {\"type\": \"string\"},"
	    " \"state\": {\"type\": \"string\"},"
	    " \"container\": {\"enum\": [\"running\", \"paused\", \"exited\","
	    " \"missing\"]},"
	    " \"address\": {\"type\": [\"string\", \"null\"]}},"
	    " \"required\": [\"sandbox_id\", \"state\", \"container\","
	    " \"address\"], \"additionalProperties\": false}",
	.exec = op_sandbox_endpoint_exec,
};

static void
op_list_docker_images_cb(cJSON *result, const struct cause *cause,
    void *arg)
{
	struct op_call	*oc = arg;

	op_call_set_data(oc, NULL);
	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	op_call_done(oc, result);
}

static void
op_list_docker_images_exec(struct op_call *oc)
{
	op_call_set_data(oc, sandbox_images(op_call_span(oc),
	    op_list_docker_images_cb, oc));
}

/* Nobody waits for the list any more: drop the Engine's call. */
static void
op_list_docker_images_cancel(struct op_call *oc)
{
	struct sandbox_images	*si = op_call_data(oc);

	if (si == NULL)
		return;
	op_call_set_data(oc, NULL);
	sandbox_images_cancel(si);
	op_call_error(oc, CAUSE_FAILED, NULL, NULL, "the call was cancelled"
	    " before the Docker Engine answered");
}

static void
op_list_workspace_directories_cb(cJSON *result, void *arg)
{
	struct op_call	*oc = arg;

	op_call_set_data(oc, NULL);
	op_call_done(oc, result);
}

static void
op_list_workspace_directories_exec(struct op_call *oc)
{
	struct workspace_list	*wl;
	struct cause		 cause = { 0 };
	const char		*path;
	cJSON			*result;

	if ((path = op_arg_string(oc, "path")) == NULL) {
		if ((result = workspace_roots(op_call_tenant(oc),
		    &cause)) == NULL)
			op_call_fail(oc, &cause);
		else
			op_call_done(oc, result);
		cause_clear(&cause);
		return;
	}
	wl = workspace_list_start(path, op_call_tenant(oc),
	    op_list_workspace_directories_cb, oc, &cause);
	if (wl == NULL) {
		op_call_fail(oc, &cause);
		cause_clear(&cause);
		return;
	}
	op_call_set_data(oc, wl);
}

static void
op_list_workspace_directories_cancel(struct op_call *oc)
{
	struct workspace_list	*wl = op_call_data(oc);

	if (wl == NULL)
		return;
	op_call_set_data(oc, NULL);
	workspace_list_cancel(wl);
	op_call_error(oc, CAUSE_FAILED, NULL, NULL, "the call was cancelled"
	    " before the listing finished");
}

/*
 * A record as a tenant's key sees it: not where this server listens
 * inside its host (daemon, daemon_http: a tenant reaches it by the name
 * it called) nor the host path of the shared base. The local operator
 * sees the whole record. rec is a record, or {"sandboxes": [...]}.
 */
static void
op_sandbox_shown(struct op_call *oc, cJSON *rec)
{
	cJSON	*sb, *r;

	if (strcmp(op_call_tenant(oc), TENANT_LOCAL) == 0 || rec == NULL)
		return;
	if ((r = cJSON_GetObjectItem(rec, "sandboxes")) != NULL) {
		cJSON_ArrayForEach(sb, r)
			op_sandbox_shown(oc, sb);
		return;
	}
	if (cJSON_GetObjectItem(rec, "daemon") != NULL)
		cJSON_ReplaceItemInObject(rec, "daemon", cJSON_CreateNull());
	if (cJSON_GetObjectItem(rec, "daemon_http") != NULL)
		cJSON_ReplaceItemInObject(rec, "daemon_http",
		    cJSON_CreateNull());
	sb = cJSON_GetObjectItem(rec, "shared_base");
	if (cJSON_GetObjectItem(sb, "source") != NULL)
		cJSON_ReplaceItemInObject(sb, "source", cJSON_CreateNull());
}

/* An engine answer: a result, or a cause. */
static void
op_sandbox_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;

	op_call_set_data(oc, NULL);	/* a create has ended */
	op_sandbox_shown(oc, result);
	if (result != NULL)
		op_call_done(oc, result);
	else
		op_call_fail(oc, cause);
}

static void
op_create_sandbox_exec(struct op_call *oc)
{
	const char	*tenant = op_call_tenant(oc);
	long long	 count = op_arg_integer(oc, "count"), have = 0;
	struct cause	 cause = { 0 };
	cJSON		*all, *rec;

	/*
	 * A tenant's sandboxes are bounded: each is a container. The local
	 * operator (standard input, or HTTP without keys) is not.
	 */
	if (strcmp(tenant, TENANT_LOCAL) != 0) {
		all = sandbox_list();
		cJSON_ArrayForEach(rec, cJSON_GetObjectItem(all,
		    "sandboxes")) {
			if (strcmp(sandbox_record_tenant(rec), tenant) == 0)
				have++;
		}
		cJSON_Delete(all);
	}
	if (strcmp(tenant, TENANT_LOCAL) != 0 && count >= 1 &&
	    count <= cfg_limit(LIMIT_SANDBOXES_PER_CALL) &&
	    have + count > cfg_limit(LIMIT_SANDBOXES_PER_TENANT)) {
		cause_set(&cause, CAUSE_BUSY, "limit", "sandboxes-per-tenant",
		    "tenant %s has %lld sandboxes; %lld more would pass the"
		    " most one tenant may have (limit sandboxes-per-tenant"
		    " %lld); destroy some first", tenant, have, count,
		    cfg_limit(LIMIT_SANDBOXES_PER_TENANT));
		cause_detail_int(&cause, "sandboxes", have);
		op_call_fail(oc, &cause);
		cause_clear(&cause);
		return;
	}
	op_call_set_data(oc, sandbox_create(op_call_span(oc),
	    op_arg_string(oc, "image"), op_arg_string(oc, "workspace_root"),
	    count, tenant, op_sandbox_cb, oc));
}

/*
 * The caller has cancelled: roll back what the create has made. It
 * answers (unheard) once the rollback is done.
 */
static void
op_create_sandbox_cancel(struct op_call *oc)
{
	struct sandbox_create	*sc = op_call_data(oc);

	if (sc != NULL)
		sandbox_create_cancel(sc);
}

/* Every record the caller's tenant sees. */
static void
op_list_sandboxes_exec(struct op_call *oc)
{
	const char	*tenant = op_call_tenant(oc);
	cJSON		*result, *list, *rec, *next;

	result = sandbox_list();
	list = cJSON_GetObjectItem(result, "sandboxes");
	for (rec = list != NULL ? list->child : NULL; rec != NULL;
	    rec = next) {
		next = rec->next;
		if (!util_tenant_sees(tenant, sandbox_record_tenant(rec)))
			cJSON_Delete(cJSON_DetachItemViaPointer(list, rec));
	}
	op_sandbox_shown(oc, result);
	op_call_done(oc, result);
}

static void
op_inspect_sandbox_exec(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "sandbox_id");
	struct cause	 cause = { 0 };
	cJSON		*rec;

	if (op_sandbox_hidden(oc, id))
		return;
	if ((rec = sandbox_inspect(id, &cause)) == NULL) {
		op_call_fail(oc, &cause);
		cause_clear(&cause);
		return;
	}
	op_sandbox_shown(oc, rec);
	op_call_done(oc, rec);
}

/*
 * destroy_sandbox: the record is claimed (stopping, ours), what runs in
 * the sandbox ends, then its container and state go.
 */
static void
op_destroy_sandbox_exec(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "sandbox_id");
	struct cause	 cause = { 0 };

	if (op_sandbox_hidden(oc, id))
		return;
	if (sandbox_destroy_claim(id, &cause) != 0) {
		op_call_fail(oc, &cause);
		cause_clear(&cause);
		return;
	}
	runtime_end(id);
	sandbox_destroy(op_call_span(oc), id, op_sandbox_cb, oc);
}

/* The sandbox's endpoint, as the health route gives it. */
static void
op_sandbox_endpoint_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	op_call_done(oc, result);
}

static void
op_sandbox_endpoint_exec(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "sandbox_id");

	if (op_sandbox_hidden(oc, id))
		return;
	sandbox_endpoint(id, op_sandbox_endpoint_cb, oc);
}
