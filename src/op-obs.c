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
 * The observability set (observability.md): read-only views of what a
 * sandbox has done, from its telemetry log, in any process of the state
 * directory (observe.c reads). A caller sees only its tenant's
 * sandboxes; the sandbox's disk is mounted first if it is not.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"

static void	op_events_exec(struct op_call *);
static void	op_trace_exec(struct op_call *);
static void	op_layerstack_exec(struct op_call *);
static void	op_cgroup_exec(struct op_call *);
static void	op_snapshot_exec(struct op_call *);
static void	op_obs_cancel(struct op_call *);

static const struct op_arg op_events_args[] = {
	OP_SANDBOX_ARG,
	{ "name", OP_ARG_STRING, 0, -1, NULL,
	  "Keep only events with exactly this name (for example"
	  " lease.acquired).", 0, 0 },
	{ "since_ms", OP_ARG_INTEGER, 0, 0, NULL,
	  "Keep only events at this Unix time in milliseconds or later.",
	  0, 0 },
	{ "last_n", OP_ARG_INTEGER, 0, 0, NULL,
	  "Keep only the newest N matching events.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_events_entry = {
	.name = "events",
	.title = "Read a sandbox's events",
	.description = "List the events a sandbox has recorded (sessions"
	    " created and destroyed, leases, layers published and squashed,"
	    " commands started and finished, exports, limits hit), newest"
	    " first, filtered by exact name and time, at most last_n; with"
	    " no filter, every event the log retains. Each event has ts,"
	    " trace, parent, name and attrs (facts of that event). Read"
	    " only: works from any process on the state directory.",
	.set = TOOLSET_OBSERVABILITY,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_events_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"view\": {\"const\": \"events\"},"
	    " \"events\": {\"type\": \"array\", \"items\": {\"type\":"
	    "  \"object\", \"properties\": {"
	    "  \"ts\": {\"type\": \"integer\"},"
	    "  \"trace\": {\"type\": [\"string\", \"null\"]},"
	    "  \"parent\": {\"type\": [\"string\", \"null\"]},"
	    "  \"name\": {\"type\": \"string\"},"
	    "  \"attrs\": {\"type\": [\"object\", \"null\"]}},"
	    "  \"required\": [\"ts\", \"trace\", \"parent\", \"name\","
	    "  \"attrs\"]}},"
	    " \"truncated\": {\"type\": \"boolean\"}},"
	    " \"required\": [\"view\", \"events\"],"
	    " \"additionalProperties\": false}",
	.exec = op_events_exec,
	.cancel = op_obs_cancel,
};

static const struct op_arg op_trace_args[] = {
	OP_SANDBOX_ARG,
	{ "trace_id", OP_ARG_STRING, 0, -1, "\"last\"",
	  "The trace: a tool call's trace id (its request id, or the"
	  " caller's W3C trace id), or last for the tool call that started"
	  " last.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_trace_entry = {
	.name = "trace",
	.title = "Read a tool call's trace",
	.description = "Fold the spans of one trace of a sandbox (a tool call"
	    " and the steps it took: Docker calls, sessions, publishes,"
	    " commands) into a tree: each span with its offset from the"
	    " trace's start, its children and the events recorded under it."
	    " trace_id last (the default) is the tool call that started"
	    " last; an unknown trace has no spans. Read only: works from any"
	    " process on the state directory.",
	.set = TOOLSET_OBSERVABILITY,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_trace_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"view\": {\"const\": \"trace\"},"
	    " \"trace\": {\"type\": [\"string\", \"null\"]},"
	    " \"spans\": {\"type\": \"array\", \"items\": {\"type\":"
	    "  \"object\", \"properties\": {"
	    "  \"span\": {\"type\": \"object\"},"
	    "  \"offset_ms\": {\"type\": \"number\"},"
	    "  \"children\": {\"type\": \"array\"},"
	    "  \"events\": {\"type\": \"array\"}},"
	    "  \"required\": [\"span\", \"offset_ms\", \"children\","
	    "  \"events\"]}},"
	    " \"truncated\": {\"type\": \"boolean\"}},"
	    " \"required\": [\"view\", \"trace\", \"spans\"],"
	    " \"additionalProperties\": false}",
	.exec = op_trace_exec,
	.cancel = op_obs_cancel,
};

#define OP_LAYERSTACK_WINDOW_MAX	600000

static const struct op_arg op_layerstack_args[] = {
	OP_SANDBOX_ARG,
	{ "workspace_id", OP_ARG_STRING, 0, -1, NULL,
	  "A live workspace session: its lower layers and the bytes of its"
	  " changes instead of the whole stack.", 0, 0 },
	{ "window_ms", OP_ARG_INTEGER, 0, 0, "60000",
	  "How far back the trend goes, in milliseconds (at most 600000).",
	  600000, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_layerstack_entry = {
	.name = "layerstack",
	.title = "Inspect a sandbox's layer stack",
	.description = "Show the active manifest of a sandbox: its layers"
	    " newest first (the base last) with their bytes and allocated"
	    " bytes, how many live workspace sessions lease each and which"
	    " (booked_by), the totals of the stack and of every layer on"
	    " disk (also those a squash replaced and not yet reclaimed),"
	    " what is being built in staging, and a trend of the layers made"
	    " in the last window_ms. Byte counts come from the layers' meta"
	    " files, never from a walk. With workspace_id: that session's"
	    " lower layers (mounts, newest first) and the bytes of its"
	    " changes (upper_bytes). Read only: works from any process on"
	    " the state directory.",
	.set = TOOLSET_OBSERVABILITY,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_layerstack_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"view\": {\"const\": \"layerstack\"},"
	    " \"manifest_version\": {\"type\": \"integer\"},"
	    " \"root_hash\": {\"type\": \"string\"},"
	    " \"active_lease_count\": {\"type\": \"integer\"},"
	    " \"total_bytes\": {\"type\": \"integer\"},"
	    " \"total_allocated_bytes\": {\"type\": \"integer\"},"
	    " \"storage_logical_bytes\": {\"type\": \"integer\"},"
	    " \"storage_allocated_bytes\": {\"type\": \"integer\"},"
	    " \"staging_entry_count\": {\"type\": \"integer\"},"
	    " \"layers\": {\"type\": \"array\", \"items\": {\"type\":"
	    "  \"object\", \"properties\": {"
	    "  \"layer_id\": {\"type\": \"string\"},"
	    "  \"bytes\": {\"type\": [\"integer\", \"null\"]},"
	    "  \"allocated_bytes\": {\"type\": [\"integer\", \"null\"]},"
	    "  \"leased_by_workspaces\": {\"type\": \"integer\"},"
	    "  \"booked_by\": {\"type\": \"array\", \"items\":"
	    "   {\"type\": \"string\"}},"
	    "  \"created_at_ms\": {\"type\": \"integer\"}},"
	    "  \"required\": [\"layer_id\", \"bytes\", \"allocated_bytes\","
	    "  \"leased_by_workspaces\", \"booked_by\"]}},"
	    " \"trend\": {\"type\": \"array\", \"items\": {\"type\":"
	    "  \"object\", \"properties\": {"
	    "  \"ts\": {\"type\": \"integer\"},"
	    "  \"layer_id\": {\"type\": \"string\"},"
	    "  \"layer_count\": {\"type\": \"integer\"},"
	    "  \"total_bytes\": {\"type\": \"integer\"}}}},"
	    " \"workspace\": {\"type\": \"string\"},"
	    " \"mounts\": {\"type\": \"array\", \"items\":"
	    "  {\"type\": \"string\"}},"
	    " \"upper_bytes\": {\"type\": \"integer\"}},"
	    " \"required\": [\"view\"],"
	    " \"additionalProperties\": false}",
	.exec = op_layerstack_exec,
	.cancel = op_obs_cancel,
};

static const struct op_arg op_snapshot_args[] = {
	{ "sandbox_id", OP_ARG_STRING, 0, -1, NULL,
	  "The sandbox; without it, every ready sandbox the caller sees.",
	  0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

#define OP_SNAPSHOT_NODE						\
	"{\"type\": \"object\", \"properties\": {"			\
	" \"sandbox_id\": {\"type\": \"string\"},"			\
	" \"lifecycle_state\": {\"type\": \"string\"},"			\
	" \"availability\": {\"enum\": [\"available\", \"partial\","	\
	"  \"unavailable\"]},"						\
	" \"sampled_at_unix_ms\": {\"type\": \"integer\"},"		\
	" \"errors\": {\"type\": \"array\", \"items\":"			\
	"  {\"type\": \"string\"}},"					\
	" \"daemon\": {\"type\": \"object\"},"				\
	" \"resources\": {\"type\": \"object\"},"				\
	" \"workspaces\": {\"type\": \"array\"},"				\
	" \"stack\": {\"type\": \"object\"}},"				\
	" \"required\": [\"sandbox_id\", \"lifecycle_state\","		\
	" \"availability\", \"sampled_at_unix_ms\", \"errors\","		\
	" \"daemon\", \"resources\", \"workspaces\", \"stack\"]}"

const struct op_entry op_snapshot_entry = {
	.name = "snapshot",
	.title = "See a sandbox, or every one, now",
	.description = "Take a snapshot of a sandbox: its lifecycle state,"
	    " whether it can be seen whole (availability: available, partial"
	    " when a part could not be read, with errors saying which,"
	    " unavailable when its container is gone or not running), its"
	    " container's init pid on the host and its state directory"
	    " (daemon), the latest resource sample and those of the last"
	    " minute, its live workspace sessions with their network profile"
	    " and running commands, and its stack (layer count, bytes,"
	    " active leases). Without sandbox_id: every ready sandbox the"
	    " caller sees, all at once, none waited for longer than 1.5 s."
	    " Read only: works from any process on the state directory.",
	.set = TOOLSET_OBSERVABILITY,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_snapshot_args,
	.result = "{\"type\": \"object\", \"anyOf\": [" OP_SNAPSHOT_NODE ","
	    " {\"type\": \"object\", \"properties\": {"
	    "  \"sandboxes\": {\"type\": \"array\", \"items\": "
	    OP_SNAPSHOT_NODE "}},"
	    "  \"required\": [\"sandboxes\"],"
	    "  \"additionalProperties\": false}]}",
	.exec = op_snapshot_exec,
};

static const struct op_arg op_cgroup_args[] = {
	OP_SANDBOX_ARG,
	{ "scope", OP_ARG_STRING, 0, -1, "\"sandbox\"",
	  "sandbox (the container's samples), or a live workspace session's"
	  " id (the bytes of its changes, sampled every 10 s and now).", 0, 0 },
	{ "window_ms", OP_ARG_INTEGER, 0, 0, "60000",
	  "How far back the samples go, in milliseconds (at most 600000).",
	  600000, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_cgroup_entry = {
	.name = "cgroup",
	.title = "Read a sandbox's resource samples",
	.description = "List the resource samples of a sandbox's container"
	    " over the last window_ms, oldest first: CPU time (cpu_usec),"
	    " memory in use and its limit (mem_cur, mem_max) and bytes read"
	    " and written (io_rbytes, io_wbytes), taken from the Docker"
	    " Engine every 2 seconds (metrics_source docker_engine, cgroup"
	    " v1 or v2), each with the time since the sample before it and"
	    " the change of each counter (deltas). With scope a workspace"
	    " session's id: that session's disk use (upper_bytes), sampled"
	    " every 10 seconds, and a last sample taken now. Read only: works"
	    " from any process on the state directory.",
	.set = TOOLSET_OBSERVABILITY,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_cgroup_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"view\": {\"const\": \"cgroup\"},"
	    " \"scope\": {\"type\": \"string\"},"
	    " \"series\": {\"type\": \"array\", \"items\": {\"type\":"
	    "  \"object\", \"properties\": {"
	    "  \"ts\": {\"type\": \"integer\"},"
	    "  \"sample_delta_ms\": {\"type\": [\"integer\", \"null\"]},"
	    "  \"metrics\": {\"type\": \"object\"},"
	    "  \"deltas\": {\"type\": \"object\"}},"
	    "  \"required\": [\"ts\", \"sample_delta_ms\", \"metrics\"]}},"
	    " \"truncated\": {\"type\": \"boolean\"}},"
	    " \"required\": [\"view\", \"scope\", \"series\"],"
	    " \"additionalProperties\": false}",
	.exec = op_cgroup_exec,
	.cancel = op_obs_cancel,
};

static void
op_obs_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;

	op_call_set_data(oc, NULL);
	if (result == NULL)
		op_call_fail(oc, cause);
	else
		op_call_done(oc, result);
}

/* The sandbox is known and its disk mounted: read its log. */
static void
op_events_sb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;
	long long	 since = -1, last = -1;

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	cJSON_Delete(result);
	if (op_arg(oc, "since_ms") != NULL)
		since = op_arg_integer(oc, "since_ms");
	if (op_arg(oc, "last_n") != NULL)
		last = op_arg_integer(oc, "last_n");
	op_call_set_data(oc, observe_events(op_arg_string(oc, "sandbox_id"),
	    op_arg_string(oc, "name"), since, last, op_obs_cb, oc));
}

static void
op_events_exec(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "sandbox_id");

	if (op_sandbox_hidden(oc, id))
		return;
	sandbox_lookup(id, op_events_sb, oc);
}

/* The sandbox is known and its disk mounted: fold the trace. */
static void
op_trace_sb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;
	const char	*trace = op_arg_string(oc, "trace_id");

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	cJSON_Delete(result);
	op_call_set_data(oc, observe_trace(op_arg_string(oc, "sandbox_id"),
	    trace != NULL ? trace : "last", op_obs_cb, oc));
}

static void
op_trace_exec(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "sandbox_id");
	const char	*trace = op_arg_string(oc, "trace_id");

	if (trace != NULL && (strlen(trace) == 0 || strlen(trace) > 128)) {
		op_call_error(oc, CAUSE_INVALID, "trace_id", trace, "trace_id"
		    " must be from 1 to 128 characters");
		return;
	}
	if (op_sandbox_hidden(oc, id))
		return;
	sandbox_lookup(id, op_trace_sb, oc);
}

/* The sandbox is known and its disk mounted: read its stack. */
static void
op_layerstack_sb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;
	long long	 window = 60000;

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	if (op_arg(oc, "window_ms") != NULL)
		window = op_arg_integer(oc, "window_ms");
	op_call_set_data(oc, observe_layerstack(op_arg_string(oc,
	    "sandbox_id"), cJSON_GetObjectItem(result, "record"),
	    op_arg_string(oc, "workspace_id"),
	    op_call_tenant(oc), window, op_obs_cb, oc));
	cJSON_Delete(result);
}

/*
 * The checks layerstack and cgroup share: argument key, when given, is a
 * workspace session's id (or "sandbox", when that is allowed), window_ms
 * is within bounds, and the sandbox is one the caller sees. 0 when the
 * call has been answered.
 */
static int
op_obs_scoped(struct op_call *oc, const char *key, int sandbox_ok)
{
	const char	*v = op_arg_string(oc, key);

	if (v != NULL && !(sandbox_ok && strcmp(v, "sandbox") == 0) &&
	    (!util_id_valid(v) || strncmp(v, "ws-", 3) != 0)) {
		op_call_error(oc, CAUSE_INVALID, key, v, "%s must be %sa"
		    " workspace session's id (ws- and lowercase letters,"
		    " digits, - or _)", key, sandbox_ok ? "sandbox or " : "");
		return (0);
	}
	if (op_arg(oc, "window_ms") != NULL &&
	    op_arg_integer(oc, "window_ms") > OP_LAYERSTACK_WINDOW_MAX) {
		op_call_error(oc, CAUSE_INVALID, "window_ms", NULL,
		    "window_ms must be at most 600000");
		return (0);
	}
	return (!op_sandbox_hidden(oc, op_arg_string(oc, "sandbox_id")));
}

static void
op_layerstack_exec(struct op_call *oc)
{
	if (op_obs_scoped(oc, "workspace_id", 0))
		sandbox_lookup(op_arg_string(oc, "sandbox_id"),
		    op_layerstack_sb, oc);
}

/* The sandbox is known and its disk mounted: read its samples. */
static void
op_cgroup_sb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;
	const char	*scope = op_arg_string(oc, "scope");
	long long	 window = 60000;

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	cJSON_Delete(result);
	if (op_arg(oc, "window_ms") != NULL)
		window = op_arg_integer(oc, "window_ms");
	op_call_set_data(oc, observe_cgroup(op_arg_string(oc, "sandbox_id"),
	    scope != NULL ? scope : "sandbox", op_call_tenant(oc), window,
	    op_obs_cb, oc));
}

static void
op_cgroup_exec(struct op_call *oc)
{
	if (op_obs_scoped(oc, "scope", 1))
		sandbox_lookup(op_arg_string(oc, "sandbox_id"), op_cgroup_sb,
		    oc);
}

static void
op_snapshot_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_call	*oc = arg;
	cJSON		*nodes, *node;

	if (result == NULL) {
		op_call_fail(oc, cause);
		return;
	}
	/* A tenant's key is not told the state directory's path. */
	if (strcmp(op_call_tenant(oc), TENANT_LOCAL) != 0) {
		nodes = cJSON_GetObjectItem(result, "sandboxes");
		node = nodes != NULL ? nodes->child : result;
		for (; node != NULL; node = nodes != NULL ? node->next : NULL) {
			if (cJSON_GetObjectItem(cJSON_GetObjectItem(node,
			    "daemon"), "runtime_dir") != NULL)
				cJSON_ReplaceItemInObject(cJSON_GetObjectItem(
				    node, "daemon"), "runtime_dir",
				    cJSON_CreateNull());
		}
	}
	op_call_done(oc, result);
}

static void
op_snapshot_exec(struct op_call *oc)
{
	const char	*id = op_arg_string(oc, "sandbox_id");
	char		**ids, **seen, *one[1];
	cJSON		*rec;
	size_t		 n, i, nseen = 0;

	if (id != NULL) {
		if (op_sandbox_hidden(oc, id))
			return;
		if ((rec = state_record_read(id)) == NULL) {
			op_call_error(oc, CAUSE_NOT_FOUND, "sandbox_id", id,
			    "no sandbox %s", id);
			return;
		}
		cJSON_Delete(rec);
		one[0] = (char *)id;
		observe_snapshot(one, 1, 0, op_snapshot_cb, oc);
		return;
	}
	ids = state_sandbox_ids(&n);
	seen = xcalloc(n + 1, sizeof *seen);
	for (i = 0; i < n; i++) {
		if (!op_sandbox_unseen(oc, ids[i]))
			seen[nseen++] = ids[i];
	}
	observe_snapshot(seen, nseen, 1, op_snapshot_cb, oc);
	for (i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	free(seen);
}

/* Nobody waits any more: stop reading. */
static void
op_obs_cancel(struct op_call *oc)
{
	struct observe_query	*q = op_call_data(oc);

	if (q == NULL)
		return;
	op_call_set_data(oc, NULL);
	observe_cancel(q);
	op_call_error(oc, CAUSE_FAILED, NULL, NULL, "the call was cancelled"
	    " before the log was read");
}
