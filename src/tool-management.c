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
 * The management set's discovery tools: list_docker_images and
 * list_workspace_directories. Descriptions and schemas follow the
 * published tool reference; the handlers are thin and call docker.c and
 * workspace.c.
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
		if ((result = workspace_roots(&message)) == NULL) {
			tool_call_error(tc, TOOL_ERR_FAILED, NULL, "%s",
			    message);
			free(message);
			return;
		}
		tool_call_done(tc, result);
		return;
	}
	wl = workspace_list_start(path, tool_list_workspace_directories_cb,
	    tc, &kind, &message, &details);
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
