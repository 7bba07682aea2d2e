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

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"

#define OP_FILE_LIMIT_MAX	2000

/*
 * What file_write and file_edit give: in a session, the change; without
 * one, also the owner and layer of the publish (null: that layer would
 * have been the head's top layer over again).
 */
#define OP_CHANGE_SCHEMA						\
	"{\"type\": \"object\", \"properties\": {"			\
	" \"type\": {\"enum\": [\"create\", \"update\", \"edit\"]},"	\
	" \"path\": {\"type\": \"string\"},"				\
	" \"edits_applied\": {\"type\": \"integer\", \"minimum\": 0},"	\
	" \"replacements\": {\"type\": \"integer\", \"minimum\": 0},"	\
	" \"bytes_written\": {\"type\": \"integer\", \"minimum\": 0},"	\
	" \"owner\": {\"type\": \"string\"},"				\
	" \"layer_id\": {\"type\": [\"string\", \"null\"]}},"		\
	" \"required\": [\"type\", \"path\", \"bytes_written\"],"	\
	" \"additionalProperties\": false}"

static void	op_file_read_exec(struct op_call *);
static void	op_file_write_exec(struct op_call *);
static void	op_file_edit_exec(struct op_call *);
static void	op_file_blame_exec(struct op_call *);

#define PATH_ARG(what) { "path", OP_ARG_STRING, 1, -1, NULL,		\
	"Path of the file to " what ": relative to the workspace"	\
	" (src/a.c) or absolute under it (/workspace/src/a.c).", 0, 0 }

static const struct op_arg op_file_read_args[] = {
	OP_SANDBOX_ARG,
	PATH_ARG("read"),
	{ "offset", OP_ARG_INTEGER, 0, 0, "1",
	  "First line to read, counting from 1 (0 reads as 1).", 0, 0 },
	{ "limit", OP_ARG_INTEGER, 0, 0, "2000",
	  "Most lines to read, 1 to 2000.", 2000, 0 },
	{ "workspace_session_id", OP_ARG_STRING, 0, -1, NULL,
	  "Workspace session whose live view to read, unpublished changes"
	  " included. Omit it to read the published snapshot.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_file_read_entry = {
	.name = "file_read",
	.title = "Read a text file",
	.description = "Read a window of lines of a UTF-8 text file: from the"
	    " published snapshot, or from a workspace session's live view."
	    " content holds the exact bytes of the lines with their own line"
	    " ends, at most 256 KiB of whole lines. When truncated is true,"
	    " continue from next_offset. Symlinks are never followed.",
	.set = TOOLSET_RUNTIME,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_file_read_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"path\": {\"type\": \"string\"},"
	    " \"content\": {\"type\": \"string\"},"
	    " \"start_line\": {\"type\": \"integer\", \"minimum\": 1},"
	    " \"num_lines\": {\"type\": \"integer\", \"minimum\": 0},"
	    " \"total_lines\": {\"type\": \"integer\", \"minimum\": 0},"
	    " \"bytes_read\": {\"type\": \"integer\", \"minimum\": 0},"
	    " \"total_bytes\": {\"type\": \"integer\", \"minimum\": 0},"
	    " \"next_offset\": {\"type\": [\"integer\", \"null\"]},"
	    " \"truncated\": {\"type\": \"boolean\"}},"
	    " \"required\": [\"path\", \"content\", \"start_line\","
	    " \"num_lines\", \"total_lines\", \"bytes_read\","
	    " \"total_bytes\", \"next_offset\", \"truncated\"],"
	    " \"additionalProperties\": false}",
	.exec = op_file_read_exec,
};

static const struct op_arg op_file_write_args[] = {
	OP_SANDBOX_ARG,
	PATH_ARG("write"),
	{ "content", OP_ARG_TEXT, 1, -1, NULL,
	  "The whole new content of the file.", 0, 0 },
	{ "workspace_session_id", OP_ARG_STRING, 0, -1, NULL,
	  "Workspace session to write in; the change is published with the"
	  " session. Omit it to publish a layer now.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_file_write_entry = {
	.name = "file_write",
	.title = "Create or replace a file",
	.description = "Write the whole content of a file, creating it (and"
	    " its parent directories) or replacing it. In a workspace session"
	    " the write stays private until the session is published. Without"
	    " one it is published at once as a layer owned by"
	    " operation:<request_id>, returned as owner and layer_id.",
	.set = TOOLSET_RUNTIME,
	.flags = OP_IDEMPOTENT,
	.args = op_file_write_args,
	.result = OP_CHANGE_SCHEMA,
	.exec = op_file_write_exec,
};

static const struct op_arg op_file_edit_args[] = {
	OP_SANDBOX_ARG,
	PATH_ARG("edit"),
	{ "edits", OP_ARG_ARRAY, 1, -1, NULL,
	  "Exact replacements applied in order, each to the result of the"
	  " one before: [{old_string, new_string, replace_all?}].", 0, 0 },
	{ "workspace_session_id", OP_ARG_STRING, 0, -1, NULL,
	  "Workspace session to edit in; the change is published with the"
	  " session. Omit it to publish a layer now.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_file_edit_entry = {
	.name = "file_edit",
	.title = "Edit a file by exact replacements",
	.description = "Apply exact string replacements to a UTF-8 text file"
	    " of at most 4 MiB, in order. Without replace_all an old_string"
	    " must occur exactly once. If any edit fails (not found,"
	    " ambiguous, no change) nothing is written. Session and"
	    " sessionless behave as for file_write.",
	.set = TOOLSET_RUNTIME,
	.flags = 0,
	.args = op_file_edit_args,
	.result = OP_CHANGE_SCHEMA,
	.exec = op_file_edit_exec,
};

static const struct op_arg op_file_blame_args[] = {
	OP_SANDBOX_ARG,
	{ "path", OP_ARG_STRING, 1, -1, NULL,
	  "Path of a published file, relative to the workspace.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_file_blame_entry = {
	.name = "file_blame",
	.title = "Show who wrote each line",
	.description = "Return the owner of every line of a file's latest"
	    " published content as ranges: original (unchanged since the"
	    " base), operation:<id> (a sessionless write or edit),"
	    " workspace_session:<id> (a session's publish) or unknown. A path"
	    " never published is not_found.",
	.set = TOOLSET_RUNTIME,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_file_blame_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"path\": {\"type\": \"string\"},"
	    " \"ranges\": {\"type\": \"array\", \"items\":"
	    " {\"type\": \"object\", \"properties\": {"
	    " \"start_line\": {\"type\": \"integer\", \"minimum\": 1},"
	    " \"line_count\": {\"type\": \"integer\", \"minimum\": 0},"
	    " \"owner\": {\"type\": \"string\"}},"
	    " \"required\": [\"start_line\", \"line_count\", \"owner\"],"
	    " \"additionalProperties\": false}}},"
	    " \"required\": [\"path\", \"ranges\"],"
	    " \"additionalProperties\": false}",
	.exec = op_file_blame_exec,
};

/* A file call's state. */
struct op_file {
	struct op_call			*oc;
	char				 sandbox[65];
	struct files_op			 op;
	struct publish_file_args	 pf;
	char				*owner;
};

static struct op_file *
op_file_new(struct op_call *oc, enum files_kind kind, char *rel)
{
	struct op_file	*of;

	of = xcalloc(1, sizeof *of);
	of->oc = oc;
	of->op.kind = kind;
	of->op.path = rel;
	of->op.rootfd = -1;
	of->op.fd = -1;
	op_call_set_data(oc, of);
	return (of);
}

static void
op_file_free(struct op_file *of)
{
	op_call_set_data(of->oc, NULL);
	layer_stack_free(of->op.ls);
	free(of->op.path);
	free(of->owner);
	free(of);
}

/* Answer a cause and end the call. */
static void
op_file_fail(struct op_file *of, const struct cause *cause)
{
	struct op_call	*oc = of->oc;

	op_file_free(of);
	op_call_fail(oc, cause);
}

static void
op_file_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_file	*of = arg;
	struct op_call	*oc = of->oc;

	if (result == NULL) {
		op_file_fail(of, cause);
		return;
	}
	op_file_free(of);
	op_call_done(oc, result);
}

/* The normalized path argument, or NULL after answering why not. */
static char *
op_file_path(struct op_call *oc, int change)
{
	char	*rel, *msg;

	if ((rel = files_path(op_arg_string(oc, "path"), &msg)) == NULL) {
		op_call_error(oc, CAUSE_INVALID, "argument", "path", "%s", msg);
		free(msg);
		return (NULL);
	}
	if (change && files_path_reserved(rel)) {
		op_call_error(oc, CAUSE_INVALID, "argument", "path", "invalid"
		    " path: %s (a component starts with .wh., which the layer"
		    " format reserves)", rel);
		free(rel);
		return (NULL);
	}
	return (rel);
}

/*
 * Whether the helpers' queue is full: answer server_busy (1) before any
 * work is queued.
 */
static int
op_file_busy(struct op_file *of)
{
	struct cause	cause = { 0 };

	if (!runtime_helpers_busy(&cause))
		return (0);
	op_file_fail(of, &cause);
	cause_clear(&cause);
	return (1);
}

/* Run a read, or a change in a session, once the sandbox is known. */
static void
op_file_sb(struct rt_sandbox *sb, const struct cause *cause, void *arg)
{
	struct op_file	*of = arg;
	struct session	*s;
	struct cause	 c = { 0 };
	const char	*ws;
	char		*msg = NULL;

	if (sb == NULL) {
		op_file_fail(of, cause);
		return;
	}
	if (op_file_busy(of))
		return;
	strlcpy(of->sandbox, sb->id, sizeof of->sandbox);
	of->op.sandbox = of->sandbox;
	of->op.tenant = sb->tenant;
	if ((ws = op_arg_string(of->oc, "workspace_session_id")) != NULL) {
		if ((s = session_use(sb, ws, of->op.kind == FILES_READ ?
		    SESSION_USE_READ : SESSION_USE_CHANGE, &c)) == NULL) {
			op_file_fail(of, &c);
			cause_clear(&c);
			return;
		}
		of->op.rootfd = session_rootfd(s);
	} else if ((of->op.ls = layer_stack_read(sb->id, &msg)) == NULL) {
		cause_set(&c, CAUSE_FAILED, "sandbox_id", sb->id, "%s", msg);
		free(msg);
		op_file_fail(of, &c);
		cause_clear(&c);
		return;
	}
	files_op(&of->op, op_file_done, of);
}

static void
op_file_read_exec(struct op_call *oc)
{
	struct op_file	*of;
	long long	 offset, limit;
	char		*rel;

	if ((rel = op_file_path(oc, 0)) == NULL)
		return;
	limit = op_arg_integer(oc, "limit");
	if (limit < 1 || limit > OP_FILE_LIMIT_MAX) {
		free(rel);
		op_call_error(oc, CAUSE_INVALID, "argument", "limit", "limit"
		    " must be between 1 and %d, not %lld", OP_FILE_LIMIT_MAX,
		    limit);
		return;
	}
	offset = op_arg_integer(oc, "offset");
	of = op_file_new(oc, FILES_READ, rel);
	of->op.offset = offset < 1 ? 1 : offset;
	of->op.limit = limit;
	op_sandbox_runtime(oc, op_file_sb, of);
}

/* A sessionless write or edit is published, or was refused. */
static void
op_file_published(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_file	*of = arg;
	struct op_call	*oc = of->oc;
	cJSON		*r, *v;
	const char	*fields[] = { "type", "path", "edits_applied",
			    "replacements", "bytes_written" };
	size_t		 i;

	if (cause != NULL) {
		op_file_fail(of, cause);
		return;
	}
	r = cJSON_CreateObject();
	for (i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		if ((v = cJSON_GetObjectItem(result, fields[i])) != NULL)
			cJSON_AddItemToObject(r, fields[i],
			    cJSON_Duplicate(v, 1));
	}
	if (cJSON_GetObjectItem(r, "path") == NULL)
		cJSON_AddStringToObject(r, "path", of->op.path);
	cJSON_AddStringToObject(r, "owner", of->owner);
	/* Null: the head's top layer already held it. */
	cJSON_AddItemToObject(r, "layer_id", cJSON_Duplicate(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(result, "publish"),
	    "layer_id"), 1));
	if (cJSON_GetObjectItem(r, "layer_id") == NULL)
		cJSON_AddNullToObject(r, "layer_id");
	op_file_free(of);
	op_call_done(oc, r);
}

/* A write or edit, once the sandbox is known. */
static void
op_file_change_sb(struct rt_sandbox *sb, const struct cause *cause,
    void *arg)
{
	struct op_file	*of = arg;

	if (sb == NULL) {
		op_file_fail(of, cause);
		return;
	}
	if (op_arg_string(of->oc, "workspace_session_id") != NULL) {
		op_file_sb(sb, NULL, of);
		return;
	}
	if (op_file_busy(of))
		return;
	strlcpy(of->sandbox, sb->id, sizeof of->sandbox);
	xasprintf(&of->owner, "operation:%s", op_call_request_id(of->oc));
	of->pf.sandbox = of->sandbox;
	of->pf.path = of->op.path;
	of->pf.owner = of->owner;
	of->pf.kind = of->op.kind;
	of->pf.content = of->op.content;
	of->pf.len = of->op.len;
	of->pf.edits = of->op.edits;
	publish_file(&of->pf, sb->tenant, op_call_span(of->oc),
	    op_file_published, of);
}

static void
op_file_write_exec(struct op_call *oc)
{
	struct op_file	*of;
	char		*rel;

	if ((rel = op_file_path(oc, 1)) == NULL)
		return;
	of = op_file_new(oc, FILES_WRITE, rel);
	of->op.content = op_arg_string(oc, "content");
	of->op.len = strlen(of->op.content);
	op_sandbox_runtime(oc, op_file_change_sb, of);
}

static void
op_file_edit_exec(struct op_call *oc)
{
	struct op_file	*of;
	struct cause	 c = { 0 };
	char		*rel;

	if ((rel = op_file_path(oc, 1)) == NULL)
		return;
	if (files_edits_check(op_arg(oc, "edits"), &c) != 0) {
		free(rel);
		op_call_fail(oc, &c);
		cause_clear(&c);
		return;
	}
	of = op_file_new(oc, FILES_EDIT, rel);
	of->op.edits = op_arg(oc, "edits");
	op_sandbox_runtime(oc, op_file_change_sb, of);
}

static void
op_file_blame_sb(struct rt_sandbox *sb, const struct cause *cause,
    void *arg)
{
	struct op_file	*of = arg;
	struct op_call	*oc = of->oc;
	struct cause	 c = { 0 };
	cJSON		*r;

	if (sb == NULL) {
		op_file_fail(of, cause);
		return;
	}
	if ((r = audit_blame(sb->id, of->op.path, &c)) == NULL) {
		op_file_fail(of, &c);
		cause_clear(&c);
		return;
	}
	op_file_free(of);
	op_call_done(oc, r);
}

static void
op_file_blame_exec(struct op_call *oc)
{
	char	*rel;

	if ((rel = op_file_path(oc, 0)) == NULL)
		return;
	op_sandbox_runtime(oc, op_file_blame_sb, op_file_new(oc, FILES_READ,
	    rel));
}
