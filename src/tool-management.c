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
 * list_sandboxes, inspect_sandbox, destroy_sandbox). Schemas follow the
 * published tool reference; the handlers are thin and call docker.c,
 * workspace.c and sandbox.c. A caller sees only its tenant's sandboxes
 * and workspace roots (auth.c).
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

static void	tool_list_docker_images_exec(struct tool_call *);
static void	tool_list_docker_images_cancel(struct tool_call *);
static void	tool_list_workspace_directories_exec(struct tool_call *);
static void	tool_list_workspace_directories_cancel(struct tool_call *);
static void	tool_create_sandbox_exec(struct tool_call *);
static void	tool_create_sandbox_cancel(struct tool_call *);
static void	tool_list_sandboxes_exec(struct tool_call *);
static void	tool_inspect_sandbox_exec(struct tool_call *);
static void	tool_destroy_sandbox_exec(struct tool_call *);

static const struct tool_arg tool_no_args[] = {
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_list_docker_images_entry = {
	.name = "list_docker_images",
	.title = "List local Docker images",
	.description = "List every local Docker image reference, including"
	    " the ids of untagged images, that can be used to create a"
	    " sandbox. Call it before create_sandbox when you need a valid"
	    " local image; pass the chosen string verbatim. Results may hold"
	    " tags, digests and untagged image ids. Never pulls an image and"
	    " never creates a sandbox.",
	.set = TOOLSET_MANAGEMENT,
	.flags = TOOL_READONLY | TOOL_IDEMPOTENT,
	.args = tool_no_args,
	.exec = tool_list_docker_images_exec,
	.cancel = tool_list_docker_images_cancel,
};

static const struct tool_arg tool_list_workspace_directories_args[] = {
	{ "path", TOOL_ARG_STRING, 0, -1, NULL,
	  "Absolute workspace directory, visible to the picker, to browse."
	  " Omit it to list the roots." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_list_workspace_directories_entry = {
	.name = "list_workspace_directories",
	.title = "Browse workspace directories",
	.description = "Browse the workspace directories that may be used."
	    " Without path, list the configured workspace roots; with path,"
	    " list at most 500 direct subdirectories of that directory."
	    " Browse one level per call and pass the chosen absolute path as"
	    " create_sandbox.workspace_root.",
	.set = TOOLSET_MANAGEMENT,
	.flags = TOOL_READONLY | TOOL_IDEMPOTENT,
	.args = tool_list_workspace_directories_args,
	.exec = tool_list_workspace_directories_exec,
	.cancel = tool_list_workspace_directories_cancel,
};

/* The image references of an /images/json reply, as the tool returns them. */
static void
tool_list_docker_images_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct tool_call	*tc = arg;
	cJSON			*images, *result;

	tool_call_set_data(tc, NULL);
	if (error != NULL) {
		tool_call_error(tc, TOOL_ERR_FAILED, NULL, "%s", error);
		return;
	}
	if ((images = docker_image_references(reply)) == NULL) {
		tool_call_error(tc, TOOL_ERR_FAILED, NULL, "the Docker Engine"
		    " answered the image list with something other than a"
		    " list");
		return;
	}
	result = cJSON_CreateObject();
	cJSON_AddItemToObject(result, "images", images);
	tool_call_done(tc, result);
}

static void
tool_list_docker_images_exec(struct tool_call *tc)
{
	struct docker_call	*dc;

	dc = docker_call("GET", "/images/json", "images_list", NULL,
	    tool_call_span(tc), tool_list_docker_images_cb, tc);
	tool_call_set_data(tc, dc);
}

/* Nobody waits for the list any more: drop the Docker call. */
static void
tool_list_docker_images_cancel(struct tool_call *tc)
{
	struct docker_call	*dc = tool_call_data(tc);

	if (dc == NULL)
		return;
	tool_call_set_data(tc, NULL);
	docker_call_cancel(dc);
	tool_call_error(tc, TOOL_ERR_FAILED, NULL, "the call was cancelled"
	    " before the Docker Engine answered");
}

static void
tool_list_workspace_directories_cb(cJSON *result, void *arg)
{
	struct tool_call	*tc = arg;

	tool_call_set_data(tc, NULL);
	tool_call_done(tc, result);
}

static void
tool_list_workspace_directories_exec(struct tool_call *tc)
{
	struct workspace_list	*wl;
	const char		*path, *kind;
	char			*message = NULL;
	cJSON			*result, *details = NULL;

	if ((path = tool_arg_string(tc, "path")) == NULL) {
		if ((result = workspace_roots(tool_call_tenant(tc),
		    &message)) == NULL) {
			tool_call_error(tc, TOOL_ERR_FAILED, NULL, "%s",
			    message);
			free(message);
			return;
		}
		tool_call_done(tc, result);
		return;
	}
	wl = workspace_list_start(path, tool_call_tenant(tc),
	    tool_list_workspace_directories_cb, tc, &kind, &message, &details);
	if (wl == NULL) {
		tool_call_error(tc, kind, details, "%s", message);
		free(message);
		return;
	}
	tool_call_set_data(tc, wl);
}

static void
tool_list_workspace_directories_cancel(struct tool_call *tc)
{
	struct workspace_list	*wl = tool_call_data(tc);

	if (wl == NULL)
		return;
	tool_call_set_data(tc, NULL);
	workspace_list_cancel(wl);
	tool_call_error(tc, TOOL_ERR_FAILED, NULL, "the call was cancelled"
	    " before the listing finished");
}

static const struct tool_arg tool_create_sandbox_args[] = {
	{ "image", TOOL_ARG_STRING, 1, -1, NULL,
	  "Container image to create the sandbox from." },
	{ "workspace_root", TOOL_ARG_STRING, 1, -1, NULL,
	  "Absolute host workspace directory whose copy the sandbox holds." },
	{ "count", TOOL_ARG_INTEGER, 0, 0, "1",
	  "Number of sandboxes to create (at least 1). With more than one,"
	  " they share one read-only workspace base." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_create_sandbox_entry = {
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
	.args = tool_create_sandbox_args,
	.exec = tool_create_sandbox_exec,
	.cancel = tool_create_sandbox_cancel,
};

const struct tool_entry tool_list_sandboxes_entry = {
	.name = "list_sandboxes",
	.title = "List sandboxes",
	.description = "List the sandbox records the manager knows, with"
	    " their lifecycle state and endpoint metadata, oldest first. The"
	    " main read-only source of sandbox ids. A stored endpoint does not"
	    " prove the sandbox is reachable.",
	.set = TOOLSET_MANAGEMENT,
	.flags = TOOL_READONLY | TOOL_IDEMPOTENT,
	.args = tool_no_args,
	.exec = tool_list_sandboxes_exec,
};

static const struct tool_arg tool_sandbox_id_args[] = {
	{ "sandbox_id", TOOL_ARG_STRING, 1, -1, NULL, "Sandbox id." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_inspect_sandbox_entry = {
	.name = "inspect_sandbox",
	.title = "Inspect a sandbox",
	.description = "Show one sandbox record: lifecycle state, workspace"
	    " root and endpoint metadata. Reads the manager's records only; it"
	    " does not prove the sandbox is healthy.",
	.set = TOOLSET_MANAGEMENT,
	.flags = TOOL_READONLY | TOOL_IDEMPOTENT,
	.args = tool_sandbox_id_args,
	.exec = tool_inspect_sandbox_exec,
};

const struct tool_entry tool_destroy_sandbox_entry = {
	.name = "destroy_sandbox",
	.title = "Destroy a sandbox",
	.description = "Stop and remove a sandbox: its container, its state"
	    " and its record. Check the target with inspect_sandbox first."
	    " Returns the removed record with state stopped; if the container"
	    " cannot be removed the record stays as failed for a later retry.",
	.set = TOOLSET_MANAGEMENT,
	.flags = TOOL_DESTRUCTIVE,
	.args = tool_sandbox_id_args,
	.exec = tool_destroy_sandbox_exec,
};

/* An engine answer: a result, or an error of a kind. */
static void
tool_sandbox_cb(cJSON *result, const char *kind, const char *message,
    cJSON *details, void *arg)
{
	struct tool_call	*tc = arg;

	tool_call_set_data(tc, NULL);	/* a create has ended */
	if (result != NULL)
		tool_call_done(tc, result);
	else
		tool_call_error(tc, kind, details, "%s", message);
}

static void
tool_create_sandbox_exec(struct tool_call *tc)
{
	const char	*tenant = tool_call_tenant(tc);
	long long	 count = tool_arg_integer(tc, "count"), have = 0;
	cJSON		*all, *rec;
	cJSON		*d;

	/*
	 * A tenant's sandboxes are bounded: each is a container. The local
	 * operator (standard input, or HTTP without keys) is not.
	 */
	if (strcmp(tenant, AUTH_LOCAL) == 0) {
		tool_call_set_data(tc, sandbox_create(tool_call_span(tc),
		    tool_arg_string(tc, "image"), tool_arg_string(tc,
		    "workspace_root"), count, tenant, tool_sandbox_cb, tc));
		return;
	}
	all = sandbox_list();
	cJSON_ArrayForEach(rec, cJSON_GetObjectItem(all, "sandboxes")) {
		if (strcmp(auth_record_tenant(rec), tenant) == 0)
			have++;
	}
	cJSON_Delete(all);
	if (count >= 1 && count <= cfg_limit(LIMIT_SANDBOXES_PER_CALL) &&
	    have + count > cfg_limit(LIMIT_SANDBOXES_PER_TENANT)) {
		d = tool_details("limit", "sandboxes-per-tenant");
		cJSON_AddNumberToObject(d, "sandboxes", (double)have);
		tool_call_error(tc, TOOL_ERR_BUSY, d, "tenant %s has %lld"
		    " sandboxes; %lld more would pass the most one tenant may"
		    " have (limit sandboxes-per-tenant %lld); destroy some"
		    " first", tenant, have, count,
		    cfg_limit(LIMIT_SANDBOXES_PER_TENANT));
		return;
	}
	tool_call_set_data(tc, sandbox_create(tool_call_span(tc),
	    tool_arg_string(tc, "image"), tool_arg_string(tc,
	    "workspace_root"), tool_arg_integer(tc, "count"),
	    tool_call_tenant(tc), tool_sandbox_cb, tc));
}

/*
 * The caller has cancelled: roll back what the create has made. It
 * answers (unheard) once the rollback is done.
 */
static void
tool_create_sandbox_cancel(struct tool_call *tc)
{
	struct sandbox_create	*sc = tool_call_data(tc);

	if (sc != NULL)
		sandbox_create_cancel(sc);
}

/* Every record the caller's tenant sees. */
static void
tool_list_sandboxes_exec(struct tool_call *tc)
{
	const char	*tenant = tool_call_tenant(tc);
	cJSON		*result, *list, *rec, *next;

	result = sandbox_list();
	list = cJSON_GetObjectItem(result, "sandboxes");
	for (rec = list != NULL ? list->child : NULL; rec != NULL;
	    rec = next) {
		next = rec->next;
		if (!auth_sees(tenant, auth_record_tenant(rec)))
			cJSON_Delete(cJSON_DetachItemViaPointer(list, rec));
	}
	tool_call_done(tc, result);
}

static void
tool_inspect_sandbox_exec(struct tool_call *tc)
{
	const char	*id = tool_arg_string(tc, "sandbox_id"), *kind;
	char		*message;
	cJSON		*rec;

	if (tool_sandbox_hidden(tc, id))
		return;
	if ((rec = sandbox_inspect(id, &kind, &message)) == NULL) {
		tool_call_error(tc, kind, tool_details("sandbox_id", id), "%s",
		    message);
		free(message);
		return;
	}
	tool_call_done(tc, rec);
}

static void
tool_destroy_sandbox_exec(struct tool_call *tc)
{
	const char	*id = tool_arg_string(tc, "sandbox_id");

	if (tool_sandbox_hidden(tc, id))
		return;
	sandbox_destroy(tool_call_span(tc), id, tool_sandbox_cb, tc);
}
