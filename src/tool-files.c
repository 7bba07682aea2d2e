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
 * The runtime set's file tools: file_read, file_write, file_edit and
 * file_blame. With workspace_session_id a call works in that session's
 * live view (files.c); without, reads see the published snapshot and
 * writes and edits are published at once as a one-file layer owned by
 * operation:<request_id> (publish_file_child in publish.c).
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

#define TOOL_FILE_LIMIT_MAX	2000

static void	tool_file_read_exec(struct tool_call *);
static void	tool_file_write_exec(struct tool_call *);
static void	tool_file_edit_exec(struct tool_call *);
static void	tool_file_blame_exec(struct tool_call *);

#define SANDBOX_ARG { "sandbox_id", TOOL_ARG_STRING, 1, -1, NULL,	\
	"Target sandbox id." }
#define PATH_ARG(what) { "path", TOOL_ARG_STRING, 1, -1, NULL,		\
	"Path of the file to " what ": relative to the workspace"	\
	" (src/a.c) or absolute under it (/workspace/src/a.c)." }

static const struct tool_arg tool_file_read_args[] = {
	SANDBOX_ARG,
	PATH_ARG("read"),
	{ "offset", TOOL_ARG_INTEGER, 0, 0, "1",
	  "First line to read, counting from 1 (0 reads as 1)." },
	{ "limit", TOOL_ARG_INTEGER, 0, 0, "2000",
	  "Most lines to read, 1 to 2000." },
	{ "workspace_session_id", TOOL_ARG_STRING, 0, -1, NULL,
	  "Workspace session whose live view to read, unpublished changes"
	  " included. Omit it to read the published snapshot." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_file_read_entry = {
	.name = "file_read",
	.title = "Read a text file",
	.description = "Read a window of lines of a UTF-8 text file: from the"
	    " published snapshot, or from a workspace session's live view."
	    " content holds the exact bytes of the lines with their own line"
	    " ends, at most 256 KiB of whole lines. When truncated is true,"
	    " continue from next_offset. Symlinks are never followed.",
	.set = TOOLSET_RUNTIME,
	.flags = TOOL_READONLY | TOOL_IDEMPOTENT,
	.args = tool_file_read_args,
	.exec = tool_file_read_exec,
};

static const struct tool_arg tool_file_write_args[] = {
	SANDBOX_ARG,
	PATH_ARG("write"),
	{ "content", TOOL_ARG_TEXT, 1, -1, NULL,
	  "The whole new content of the file." },
	{ "workspace_session_id", TOOL_ARG_STRING, 0, -1, NULL,
	  "Workspace session to write in; the change is published with the"
	  " session. Omit it to publish a layer now." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_file_write_entry = {
	.name = "file_write",
	.title = "Create or replace a file",
	.description = "Write the whole content of a file, creating it (and"
	    " its parent directories) or replacing it. In a workspace session"
	    " the write stays private until the session is published. Without"
	    " one it is published at once as a layer owned by"
	    " operation:<request_id>, returned as owner and layer_id.",
	.set = TOOLSET_RUNTIME,
	.flags = TOOL_IDEMPOTENT,
	.args = tool_file_write_args,
	.exec = tool_file_write_exec,
};

static const struct tool_arg tool_file_edit_args[] = {
	SANDBOX_ARG,
	PATH_ARG("edit"),
	{ "edits", TOOL_ARG_ARRAY, 1, -1, NULL,
	  "Exact replacements applied in order, each to the result of the"
	  " one before: [{old_string, new_string, replace_all?}]." },
	{ "workspace_session_id", TOOL_ARG_STRING, 0, -1, NULL,
	  "Workspace session to edit in; the change is published with the"
	  " session. Omit it to publish a layer now." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_file_edit_entry = {
	.name = "file_edit",
	.title = "Edit a file by exact replacements",
	.description = "Apply exact string replacements to a UTF-8 text file"
	    " of at most 4 MiB, in order. Without replace_all an old_string"
	    " must occur exactly once. If any edit fails (not found,"
	    " ambiguous, no change) nothing is written. Session and"
	    " sessionless behave as for file_write.",
	.set = TOOLSET_RUNTIME,
	.flags = 0,
	.args = tool_file_edit_args,
	.exec = tool_file_edit_exec,
};

static const struct tool_arg tool_file_blame_args[] = {
	SANDBOX_ARG,
	{ "path", TOOL_ARG_STRING, 1, -1, NULL,
	  "Path of a published file, relative to the workspace." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_file_blame_entry = {
	.name = "file_blame",
	.title = "Show who wrote each line",
	.description = "Return the owner of every line of a file's latest"
	    " published content as ranges: original (unchanged since the"
	    " base), operation:<id> (a sessionless write or edit),"
	    " workspace_session:<id> (a session's publish) or unknown. A path"
	    " never published is not_found.",
	.set = TOOLSET_RUNTIME,
	.flags = TOOL_READONLY | TOOL_IDEMPOTENT,
	.args = tool_file_blame_args,
	.exec = tool_file_blame_exec,
};

/* A file call's state. */
struct tool_file {
	struct tool_call		*tc;
	char				 sandbox[65];
	struct files_op			 op;
	struct publish_file_args	 pf;
	char				*owner;
};

static struct tool_file *
tool_file_new(struct tool_call *tc, enum files_kind kind, char *rel)
{
	struct tool_file	*tf;

	tf = xcalloc(1, sizeof *tf);
	tf->tc = tc;
	tf->op.kind = kind;
	tf->op.path = rel;
	tf->op.rootfd = -1;
	tf->op.fd = -1;
	tool_call_set_data(tc, tf);
	return (tf);
}

static void
tool_file_free(struct tool_file *tf)
{
	tool_call_set_data(tf->tc, NULL);
	layer_stack_free(tf->op.ls);
	free(tf->op.path);
	free(tf->owner);
	free(tf);
}

/* Answer an error and end the call. */
static void
tool_file_error(struct tool_file *tf, const char *kind, const char *message,
    cJSON *details)
{
	struct tool_call	*tc = tf->tc;

	tool_file_free(tf);
	tool_call_error(tc, kind, details, "%s", message);
}

static void
tool_file_done(cJSON *result, struct files_error *err, void *arg)
{
	struct tool_file	*tf = arg;
	struct tool_call	*tc = tf->tc;
	cJSON			*d;

	if (result == NULL) {
		d = err->details;
		err->details = NULL;
		tool_file_error(tf, err->kind != NULL ? err->kind :
		    TOOL_ERR_INTERNAL, err->message != NULL ? err->message :
		    "the file operation failed", d);
		return;
	}
	tool_file_free(tf);
	tool_call_done(tc, result);
}

/* The normalized path argument, or NULL after answering why not. */
static char *
tool_file_path(struct tool_call *tc, int change)
{
	char	*rel, *msg;

	if ((rel = files_path(tool_arg_string(tc, "path"), &msg)) == NULL) {
		tool_call_error(tc, TOOL_ERR_INVALID, tool_details("argument",
		    "path"), "%s", msg);
		free(msg);
		return (NULL);
	}
	if (change && files_path_reserved(rel)) {
		tool_call_error(tc, TOOL_ERR_INVALID, tool_details("argument",
		    "path"), "invalid path: %s (a component starts with"
		    " .wh., which the layer format reserves)", rel);
		free(rel);
		return (NULL);
	}
	return (rel);
}

/*
 * The live session a call names, or NULL after answering. A change is
 * refused while the session is being published. An automatic session
 * whose processes are gone is still read while its publish is under
 * way: its view goes when the publish is visible, not before.
 */
static struct session *
tool_file_session(struct tool_file *tf, struct rt_sandbox *sb, int change)
{
	const char	*id = tool_arg_string(tf->tc, "workspace_session_id");
	struct session	*s;
	char		*msg;

	s = session_find(sb, id);
	if (s == NULL || s->rootfd == -1 || (s->state != SESSION_LIVE &&
	    !(s->state == SESSION_DEAD && s->publishing))) {
		xasprintf(&msg, "no workspace session %s in sandbox %s (it"
		    " ended, or another process owns it)", id, sb->id);
		tool_file_error(tf, TOOL_ERR_NOT_FOUND, msg, tool_details(
		    "workspace_session_id", id));
		free(msg);
		return (NULL);
	}
	if (change && s->publishing) {
		xasprintf(&msg, "workspace session %s is being published",
		    id);
		tool_file_error(tf, TOOL_ERR_CONFLICT, msg, tool_details(
		    "workspace_session_id", id));
		free(msg);
		return (NULL);
	}
	return (s);
}

/*
 * Whether the helpers' queue is full: answer server_busy (1) before any
 * work is queued.
 */
static int
tool_file_busy(struct tool_file *tf)
{
	if (!job_helper_busy())
		return (0);
	tool_file_error(tf, TOOL_ERR_BUSY, "the server has too many file"
	    " operations and publishes waiting (limit helper-queue); try"
	    " again shortly", tool_details("limit", "helper-queue"));
	return (1);
}

/* Run a read, or a change in a session, once the sandbox is known. */
static void
tool_file_sb(struct rt_sandbox *sb, const char *kind, const char *message,
    cJSON *details, void *arg)
{
	struct tool_file	*tf = arg;
	struct session		*s;
	char			*cause = NULL;

	if (sb == NULL) {
		tool_file_error(tf, kind, message, details);
		return;
	}
	if (tool_file_busy(tf))
		return;
	strlcpy(tf->sandbox, sb->id, sizeof tf->sandbox);
	tf->op.sandbox = tf->sandbox;
	tf->op.tenant = sb->tenant;
	if (tool_arg_string(tf->tc, "workspace_session_id") != NULL) {
		if ((s = tool_file_session(tf, sb, tf->op.kind !=
		    FILES_READ)) == NULL)
			return;
		tf->op.rootfd = s->rootfd;
	} else if ((tf->op.ls = layer_stack_read(sb->id, &cause)) == NULL) {
		tool_file_error(tf, TOOL_ERR_FAILED, cause, tool_details(
		    "sandbox_id", sb->id));
		free(cause);
		return;
	}
	files_op(&tf->op, tool_file_done, tf);
}

static void
tool_file_read_exec(struct tool_call *tc)
{
	struct tool_file	*tf;
	long long		 offset, limit;
	char			*rel;

	if ((rel = tool_file_path(tc, 0)) == NULL)
		return;
	limit = tool_arg_integer(tc, "limit");
	if (limit < 1 || limit > TOOL_FILE_LIMIT_MAX) {
		free(rel);
		tool_call_error(tc, TOOL_ERR_INVALID, tool_details("argument",
		    "limit"), "limit must be between 1 and %d, not %lld",
		    TOOL_FILE_LIMIT_MAX, limit);
		return;
	}
	offset = tool_arg_integer(tc, "offset");
	tf = tool_file_new(tc, FILES_READ, rel);
	tf->op.offset = offset < 1 ? 1 : offset;
	tf->op.limit = limit;
	tool_sandbox_get(tc, tool_file_sb, tf);
}

/* A sessionless write or edit's child reported. */
static void
tool_file_published(int status, struct evbuffer *report, void *arg)
{
	struct tool_file	*tf = arg;
	struct tool_call	*tc = tf->tc;
	struct files_error	 err;
	size_t			 len = evbuffer_get_length(report);
	cJSON			*rep, *r, *v, *d, *attrs;
	const char		*fields[] = { "type", "path", "edits_applied",
				    "replacements", "bytes_written" };
	size_t			 i;

	rep = len != 0 ? cJSON_ParseWithLength((const char *)
	    evbuffer_pullup(report, len), len) : NULL;
	if (cJSON_GetObjectItem(rep, "error") != NULL ||
	    !cJSON_IsObject(rep)) {
		memset(&err, 0, sizeof err);
		files_unreport(rep, &err);
		tool_file_done(NULL, &err, tf);
		files_error_clear(&err);
		return;
	}
	if ((v = cJSON_GetObjectItem(rep, "reject_class")) != NULL) {
		d = tool_details("path", tf->op.path);
		cJSON_AddItemToObject(d, "publish_reject_class",
		    cJSON_Duplicate(v, 1));
		if ((v = cJSON_GetObjectItem(rep, "details")) != NULL)
			cJSON_AddItemToObject(d, "publish_reject_details",
			    cJSON_Duplicate(v, 1));
		v = cJSON_GetObjectItem(rep, "message");
		tool_file_error(tf, TOOL_ERR_FAILED, cJSON_IsString(v) ?
		    v->valuestring : "the publish was rejected", d);
		cJSON_Delete(rep);
		return;
	}
	cJSON_AddStringToObject(rep, "path", tf->op.path);
	r = cJSON_CreateObject();
	for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		if ((v = cJSON_GetObjectItem(rep, fields[i])) != NULL)
			cJSON_AddItemToObject(r, fields[i],
			    cJSON_Duplicate(v, 1));
	}
	cJSON_AddStringToObject(r, "owner", tf->owner);
	if ((v = cJSON_GetObjectItem(rep, "layer_id")) != NULL) {
		cJSON_AddItemToObject(r, "layer_id", cJSON_Duplicate(v, 1));
		attrs = cJSON_CreateObject();
		cJSON_AddItemToObject(attrs, "layer_id", cJSON_Duplicate(v, 1));
		cJSON_AddItemToObject(attrs, "manifest_version",
		    cJSON_Duplicate(cJSON_GetObjectItem(rep,
		    "manifest_version"), 1));
		cJSON_AddStringToObject(attrs, "owner", tf->owner);
		telemetry_event(tf->sandbox, NULL, tool_call_span(tc),
		    "layer.published", attrs);
	} else
		cJSON_AddNullToObject(r, "layer_id");	/* same as the head */
	cJSON_Delete(rep);
	tool_file_free(tf);
	tool_call_done(tc, r);
}

/* A write or edit, once the sandbox is known. */
static void
tool_file_change_sb(struct rt_sandbox *sb, const char *kind,
    const char *message, cJSON *details, void *arg)
{
	struct tool_file	*tf = arg;

	if (sb == NULL) {
		tool_file_error(tf, kind, message, details);
		return;
	}
	if (tool_arg_string(tf->tc, "workspace_session_id") != NULL) {
		tool_file_sb(sb, NULL, NULL, NULL, tf);
		return;
	}
	if (tool_file_busy(tf))
		return;
	strlcpy(tf->sandbox, sb->id, sizeof tf->sandbox);
	xasprintf(&tf->owner, "operation:%s", tool_call_request_id(tf->tc));
	tf->pf.sandbox = tf->sandbox;
	tf->pf.path = tf->op.path;
	tf->pf.owner = tf->owner;
	tf->pf.kind = tf->op.kind;
	tf->pf.content = tf->op.content;
	tf->pf.len = tf->op.len;
	tf->pf.edits = tf->op.edits;
	job_early(job_helper("publish-file", tf->sandbox, sb->tenant,
	    publish_file_child, &tf->pf, NULL, 0, tool_file_published, tf));
}

static void
tool_file_write_exec(struct tool_call *tc)
{
	struct tool_file	*tf;
	char			*rel;

	if ((rel = tool_file_path(tc, 1)) == NULL)
		return;
	tf = tool_file_new(tc, FILES_WRITE, rel);
	tf->op.content = tool_arg_string(tc, "content");
	tf->op.len = strlen(tf->op.content);
	tool_sandbox_get(tc, tool_file_change_sb, tf);
}

static void
tool_file_edit_exec(struct tool_call *tc)
{
	struct tool_file	*tf;
	struct files_error	 err;
	cJSON			*d;
	char			*rel;

	if ((rel = tool_file_path(tc, 1)) == NULL)
		return;
	memset(&err, 0, sizeof err);
	if (files_edits_check(tool_arg(tc, "edits"), &err) != 0) {
		free(rel);
		d = err.details;
		err.details = NULL;
		tool_call_error(tc, err.kind, d, "%s", err.message);
		files_error_clear(&err);
		return;
	}
	tf = tool_file_new(tc, FILES_EDIT, rel);
	tf->op.edits = tool_arg(tc, "edits");
	tool_sandbox_get(tc, tool_file_change_sb, tf);
}

static void
tool_file_blame_sb(struct rt_sandbox *sb, const char *kind,
    const char *message, cJSON *details, void *arg)
{
	struct tool_file	*tf = arg;
	struct tool_call	*tc = tf->tc;
	const char		*ekind;
	char			*emsg = NULL;
	cJSON			*r;

	if (sb == NULL) {
		tool_file_error(tf, kind, message, details);
		return;
	}
	if ((r = audit_blame(sb->id, tf->op.path, &ekind, &emsg)) == NULL) {
		tool_file_error(tf, ekind, emsg, tool_details("path",
		    tf->op.path));
		free(emsg);
		return;
	}
	tool_file_free(tf);
	tool_call_done(tc, r);
}

static void
tool_file_blame_exec(struct tool_call *tc)
{
	char	*rel;

	if ((rel = tool_file_path(tc, 0)) == NULL)
		return;
	tool_sandbox_get(tc, tool_file_blame_sb, tool_file_new(tc, FILES_READ,
	    rel));
}
