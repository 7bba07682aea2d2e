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
 * The management set's layer maintenance (layers.md): squash_layerstacks
 * and export_changes (squash.c and export.c do the work). A caller sees
 * only its tenant's sandboxes; the sandbox must be ready, and its disk
 * is mounted first if it is not.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"

#define OP_SQUASH_SCHEMA						\
	"{\"type\": \"object\", \"properties\": {"			\
	" \"manifest_version\": {\"type\": \"integer\"},"		\
	" \"squashed_blocks\": {\"type\": \"array\", \"items\":"	\
	"  {\"type\": \"object\", \"properties\": {"			\
	"   \"squashed_layer_id\": {\"type\": \"string\"},"		\
	"   \"replaced_layer_ids\": {\"type\": \"array\","		\
	"    \"items\": {\"type\": \"string\"}, \"minItems\": 2},"	\
	"   \"replaced_layers\": {\"enum\": [\"reclaimed\","		\
	"    \"pinned\"]}},"						\
	"   \"required\": [\"squashed_layer_id\","			\
	"    \"replaced_layer_ids\", \"replaced_layers\"],"		\
	"   \"additionalProperties\": false}},"				\
	" \"swept_sessions\": {\"type\": \"array\", \"items\":"	\
	"  {\"type\": \"object\", \"properties\": {"			\
	"   \"session_id\": {\"type\": \"string\"},"			\
	"   \"disposition\": {\"enum\": [\"migrated\", \"unchanged\","	\
	"    \"pinned\"]}},"						\
	"   \"required\": [\"session_id\", \"disposition\"],"		\
	"   \"additionalProperties\": false}},"				\
	" \"blocked_reasons\": {\"type\": \"array\","			\
	"  \"items\": {\"type\": \"string\"}},"				\
	" \"faulty_sessions\": {\"type\": \"array\","			\
	"  \"items\": {\"type\": \"string\"}}},"			\
	" \"required\": [\"manifest_version\", \"squashed_blocks\","	\
	" \"swept_sessions\"], \"additionalProperties\": false}"

#define OP_EXPORT_COUNT	"{\"type\": \"integer\", \"minimum\": 0}"
#define OP_EXPORT_SCHEMA						\
	"{\"type\": \"object\", \"properties\": {"			\
	" \"manifest_version\": {\"type\": \"integer\"},"		\
	" \"format\": {\"enum\": [\"dir\", \"tar\", \"tar-zst\"]},"	\
	" \"layers_exported\": " OP_EXPORT_COUNT ","			\
	" \"files_written\": " OP_EXPORT_COUNT ","			\
	" \"symlinks_written\": " OP_EXPORT_COUNT ","			\
	" \"deletes_applied\": " OP_EXPORT_COUNT ","			\
	" \"opaque_clears\": " OP_EXPORT_COUNT ","			\
	" \"skipped_unchanged\": " OP_EXPORT_COUNT ","			\
	" \"whiteouts_emitted\": " OP_EXPORT_COUNT ","			\
	" \"bytes_written\": " OP_EXPORT_COUNT ","			\
	" \"hardlinks_written\": " OP_EXPORT_COUNT ","			\
	" \"left_out\": {\"type\": \"array\","			\
	"  \"items\": {\"type\": \"string\"}, \"maxItems\": 100},"	\
	" \"left_out_count\": " OP_EXPORT_COUNT ","			\
	" \"live_workspace_sessions\": {\"type\": \"array\","	\
	"  \"items\": {\"type\": \"string\"}}},"			\
	" \"required\": [\"manifest_version\", \"format\","		\
	" \"layers_exported\", \"files_written\", \"symlinks_written\","	\
	" \"bytes_written\"], \"additionalProperties\": false}"

static void	op_squash_exec(struct op_call *);
static void	op_export_exec(struct op_call *);

static const struct op_arg op_squash_args[] = {
	{ "sandbox_id", OP_ARG_STRING, 1, -1, NULL, "Sandbox ID.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_squash_layerstacks_entry = {
	.name = "squash_layerstacks",
	.title = "Squash a sandbox's layer stack",
	.description = "Flatten each run of two or more adjacent published"
	    " layers of a sandbox's stack into one layer, newest wins, so the"
	    " stack gets short again; the base and the top layer of every"
	    " live workspace session stay. The published view does not change"
	    " by one byte. Replaced layers are reclaimed, or stay pinned"
	    " while a live session stands on them (blocked_reasons says"
	    " which). One squash per sandbox at a time; publishes meanwhile"
	    " wait for the stack's writer lock and never fail because of it.",
	.set = TOOLSET_MANAGEMENT,
	.flags = OP_IDEMPOTENT,
	.args = op_squash_args,
	.result = OP_SQUASH_SCHEMA,
	.exec = op_squash_exec,
};

static const struct op_arg op_export_args[] = {
	{ "sandbox_id", OP_ARG_STRING, 1, -1, NULL, "Sandbox ID.", 0, 0 },
	{ "dest", OP_ARG_STRING, 1, -1, NULL, "Absolute host path: a"
	  " directory for dir (made when its parent exists), a file for an"
	  " archive. It must lie under the workspace root the sandbox was"
	  " copied from or under an export root of the server's"
	  " configuration.", 0, 0 },
	{ "format", OP_ARG_STRING, 0, -1, "\"dir\"", "dir (apply the"
	  " changes to the directory dest), tar (a pax archive) or tar-zst"
	  " (the same, zstd-compressed).", 0, 0 },
	{ "include_git_config", OP_ARG_BOOLEAN, 0, -1, "false", "Also export"
	  " what git runs or reads as configuration inside a git directory"
	  " (.git/config, .git/hooks/, info/attributes, a .git file). Left"
	  " out by default, and listed in left_out: a hook or a"
	  " core.fsmonitor the sandbox wrote would run on the host the next"
	  " time someone uses git in dest.", 0, 0 },
	{ "keep_setid", OP_ARG_BOOLEAN, 0, -1, "false", "Keep set-user-ID"
	  " and set-group-ID bits in a tar or tar-zst. Stripped by default:"
	  " unpacked as root, a file the sandbox made as root with mode 4755"
	  " would be a set-id root program. A dir export never keeps them.",
	  0, 0 },
	{ "max_bytes", OP_ARG_INTEGER, 0, 1, NULL, "Refuse the export, writing"
	  " nothing, when its files hold more bytes of data than this (names"
	  " that share a file count once: they are written as hard links)."
	  " Default: the size of the sandbox's disk.", 0, 0 },
	{ "max_entries", OP_ARG_INTEGER, 0, 1, NULL, "Refuse the export,"
	  " writing nothing, when it has more entries (files, links,"
	  " directories, deletions) than this. Default: the number of inodes"
	  " of the sandbox's disk.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_export_changes_entry = {
	.name = "export_changes",
	.title = "Export a sandbox's published changes to the host",
	.description = "Fold every layer published above the sandbox's base"
	    " into one set of changes and deliver it at dest on the host: dir"
	    " applies it to a directory (deletions and replaced directories"
	    " included, files already equal left alone), tar and tar-zst"
	    " write an archive with OCI whiteouts (.wh.<name>,"
	    " .wh..wh..opq), replaced atomically. dest must be under the"
	    " workspace root the sandbox was copied from or an export root"
	    " of the server; no symlink on the way to it is followed. Live"
	    " workspace sessions' unpublished changes are not exported. What"
	    " git runs inside a git directory (.git/config, .git/hooks/) is"
	    " left out unless include_git_config, and set-id bits are"
	    " stripped unless keep_setid.",
	.set = TOOLSET_MANAGEMENT,
	.flags = OP_DESTRUCTIVE | OP_IDEMPOTENT,
	.args = op_export_args,
	.result = OP_EXPORT_SCHEMA,
	.exec = op_export_exec,
};

static void
op_squash_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	op_call_done(oc, cJSON_Duplicate(result, 1));
}

/* The sandbox is known and its disk mounted: squash if it is ready. */
static void
op_squash_sb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;
	const char	*id = op_arg_string(oc, "sandbox_id");
	struct cause	 c = { 0 };
	cJSON		*state;

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	state = cJSON_GetObjectItem(cJSON_GetObjectItem(result, "record"),
	    "state");
	if (!cJSON_IsString(state) || strcmp(state->valuestring,
	    "ready") != 0) {
		op_call_error(oc, CAUSE_FAILED, "sandbox_id", id, "sandbox %s"
		    " is %s, not ready: its stack cannot be squashed", id,
		    cJSON_IsString(state) ? state->valuestring : "unknown");
		cJSON_Delete(result);
		return;
	}
	cJSON_Delete(result);
	/* Not cancelled: the squash is bounded, and answers when done. */
	if (squash_start(id, op_call_tenant(oc), op_squash_cb, oc,
	    &c) == NULL) {
		op_call_fail(oc, &c);
		cause_clear(&c);
	}
}

static void
op_squash_exec(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "sandbox_id");

	if (op_sandbox_hidden(oc, id))
		return;
	sandbox_lookup(id, op_squash_sb, oc);
}

/* The sandbox is known and its disk mounted: export if it is ready. */
static void
op_export_sb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call		*oc = arg;
	const char		*id = op_arg_string(oc, "sandbox_id");
	struct cause		 c = { 0 };
	const char		*format = op_arg_string(oc, "format");
	struct export_opts	 o;
	cJSON		*record, *state, *root;

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	record = cJSON_GetObjectItem(result, "record");
	state = cJSON_GetObjectItem(record, "state");
	if (!cJSON_IsString(state) || strcmp(state->valuestring,
	    "ready") != 0) {
		op_call_error(oc, CAUSE_FAILED, "sandbox_id", id, "sandbox %s"
		    " is %s, not ready: its changes cannot be exported", id,
		    cJSON_IsString(state) ? state->valuestring : "unknown");
		cJSON_Delete(result);
		return;
	}
	root = cJSON_GetObjectItem(record, "workspace_root");
	memset(&o, 0, sizeof o);
	o.dest = op_arg_string(oc, "dest");
	o.format = format != NULL ? format : "dir";
	if (cJSON_IsTrue(op_arg(oc, "keep_setid")))
		o.flags |= EXPORT_KEEP_SETID;
	if (cJSON_IsTrue(op_arg(oc, "include_git_config")))
		o.flags |= EXPORT_GIT_CONFIG;
	if (op_arg(oc, "max_bytes") != NULL)
		o.max_bytes = (unsigned long long)op_arg_integer(oc,
		    "max_bytes");
	if (op_arg(oc, "max_entries") != NULL)
		o.max_entries = (unsigned long long)op_arg_integer(oc,
		    "max_entries");
	/* Not cancelled: the export is bounded, and answers when done. */
	if (export_start(id, op_call_tenant(oc), cJSON_IsString(root) ?
	    root->valuestring : NULL, &o, op_squash_cb, oc, &c) == NULL) {
		op_call_fail(oc, &c);
		cause_clear(&c);
	}
	cJSON_Delete(result);
}

static void
op_export_exec(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "sandbox_id");

	if (op_sandbox_hidden(oc, id))
		return;
	sandbox_lookup(id, op_export_sb, oc);
}
