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
 * The runtime set: command sessions (exec_command, write_command_stdin,
 * read_command_lines) and managed workspace sessions
 * (create_workspace_session, publish_workspace_session,
 * destroy_workspace_session). Every operation takes sandbox_id first;
 * the handlers find the sandbox's runtime view (of the caller's
 * tenant's sandboxes only, op_sandbox_runtime), then call command.c or
 * session.c, which decide whether a session may be used (session_use).
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"

#define OP_YIELD_DEFAULT	1000
#define OP_YIELD_MAX		600000

/* The "publish" object of a result (publish.c, publish_outcome). */
#define OP_PUBLISH_SCHEMA						\
	"{\"type\": [\"object\", \"null\"], \"properties\": {"		\
	" \"layer_id\": {\"type\": \"string\"},"			\
	" \"manifest_version\": {\"type\": \"integer\"},"		\
	" \"changed_paths\": {\"type\": \"array\","			\
	" \"items\": {\"type\": \"string\"}},"				\
	" \"changed_path_count\": {\"type\": \"integer\"}},"		\
	" \"required\": [\"layer_id\", \"manifest_version\","		\
	" \"changed_paths\"], \"additionalProperties\": false}"
#define OP_STRINGS_SCHEMA						\
	"{\"type\": \"array\", \"items\": {\"type\": \"string\"}}"

/* What exec_command, write_command_stdin and read_command_lines give. */
#define OP_COMMAND_SCHEMA						\
	"{\"type\": \"object\", \"properties\": {"			\
	" \"command_session_id\": {\"type\": \"string\"},"		\
	" \"workspace_session_id\": {\"type\": \"string\"},"		\
	" \"status\": {\"enum\": [\"running\", \"ok\", \"error\","	\
	" \"timed_out\", \"cancelled\", \"lost\"]},"			\
	" \"exit_code\": {\"type\": [\"integer\", \"null\"]},"		\
	" \"wall_time_seconds\": {\"type\": \"number\", \"minimum\": 0},"\
	" \"command_total_time_seconds\": {\"type\": \"number\","	\
	" \"minimum\": 0},"						\
	" \"start_offset\": {\"type\": \"integer\", \"minimum\": 0},"	\
	" \"end_offset\": {\"type\": \"integer\", \"minimum\": 0},"	\
	" \"total_lines\": {\"type\": \"integer\", \"minimum\": 0},"	\
	" \"original_token_count\": {\"type\": \"integer\","		\
	" \"minimum\": 0},"						\
	" \"output\": {\"type\": \"string\"},"				\
	" \"dropped_lines\": {\"type\": \"integer\", \"minimum\": 0},"	\
	" \"truncated\": {\"type\": \"boolean\"},"			\
	" \"lines_omitted_before\": {\"type\": \"integer\","		\
	" \"minimum\": 0},"						\
	" \"lines_omitted_after\": {\"type\": \"integer\","		\
	" \"minimum\": 0},"						\
	" \"publish\": " OP_PUBLISH_SCHEMA ","				\
	" \"publish_rejected\": {\"const\": true},"			\
	" \"publish_reject_class\": {\"type\": \"string\"},"		\
	" \"publish_reject_details\": {\"type\": \"object\"},"		\
	" \"publish_dropped\": " OP_STRINGS_SCHEMA "},"		\
	" \"required\": [\"command_session_id\","			\
	" \"workspace_session_id\", \"status\", \"exit_code\","		\
	" \"wall_time_seconds\", \"command_total_time_seconds\","	\
	" \"start_offset\", \"end_offset\", \"total_lines\","		\
	" \"original_token_count\", \"output\", \"truncated\","		\
	" \"lines_omitted_before\", \"lines_omitted_after\"],"		\
	" \"additionalProperties\": false}"

static void	op_exec_command_exec(struct op_call *);
static void	op_write_command_stdin_exec(struct op_call *);
static void	op_read_command_lines_exec(struct op_call *);
static void	op_create_workspace_session_exec(struct op_call *);
static void	op_publish_workspace_session_exec(struct op_call *);
static void	op_destroy_workspace_session_exec(struct op_call *);
static void	op_runtime_cancel(struct op_call *);


static const struct op_arg op_exec_command_args[] = {
	OP_SANDBOX_ARG,
	{ "workspace_session_id", OP_ARG_STRING, 0, -1, NULL,
	  "Existing workspace session to run in. Omit it to run in a new"
	  " session whose finalize policy is publish_then_destroy.", 0, 0 },
	{ "cmd", OP_ARG_STRING, 1, -1, NULL,
	  "Shell command text, run by /bin/sh -c in /workspace.", 0, 0 },
	{ "timeout_ms", OP_ARG_INTEGER, 0, 0, "0",
	  "Deadline in milliseconds, after which the command is killed"
	  " (status timed_out); 0, the default, means none.", 0, 0 },
	{ "yield_time_ms", OP_ARG_INTEGER, 0, 0, "1000",
	  "How long to wait for the command to finish before answering, in"
	  " milliseconds: 1000 by default, at most 600000 (a larger value"
	  " is reduced to it); the command runs on after the answer.",
	  600000, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_exec_command_entry = {
	.name = "exec_command",
	.title = "Run a command in a sandbox",
	.description = "Start a shell command in a workspace session. Without"
	    " workspace_session_id it runs in an automatic session"
	    " (publish_then_destroy): when the command ends, the session's"
	    " file changes are captured and published as one layer, then the"
	    " session is destroyed. If status is running, keep"
	    " command_session_id for read_command_lines and"
	    " write_command_stdin. truncated says the output window left"
	    " lines out (lines_omitted_after of them after it):"
	    " read_command_lines reads the rest, or the last lines with"
	    " tail.",
	.set = TOOLSET_RUNTIME,
	.flags = OP_OPENWORLD,
	.args = op_exec_command_args,
	.result = OP_COMMAND_SCHEMA,
	.exec = op_exec_command_exec,
	.cancel = op_runtime_cancel,
};

static const struct op_arg op_write_command_stdin_args[] = {
	OP_SANDBOX_ARG,
	{ "command_session_id", OP_ARG_STRING, 1, -1, NULL,
	  "Command session id returned by exec_command.", 0, 0 },
	{ "stdin", OP_ARG_TEXT, 1, -1, NULL,
	  "Text to write to stdin.", 0, 0 },
	{ "yield_time_ms", OP_ARG_INTEGER, 0, 0, "1000",
	  "How long to wait for output after writing, in milliseconds: 1000"
	  " by default, at most 600000 (a larger value is reduced to it).",
	  600000, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_write_command_stdin_entry = {
	.name = "write_command_stdin",
	.title = "Write to a running command",
	.description = "Append text to the stdin of a running command"
	    " session and return a bounded output window. stdin is written"
	    " verbatim: line-oriented programs need an explicit newline. A"
	    " lone \\u0003 interrupts the command (Ctrl-C) and a lone \\u0004"
	    " closes its stdin (Ctrl-D).",
	.set = TOOLSET_RUNTIME,
	.flags = OP_OPENWORLD,
	.args = op_write_command_stdin_args,
	.result = OP_COMMAND_SCHEMA,
	.exec = op_write_command_stdin_exec,
	.cancel = op_runtime_cancel,
};

static const struct op_arg op_read_command_lines_args[] = {
	OP_SANDBOX_ARG,
	{ "command_session_id", OP_ARG_STRING, 1, -1, NULL,
	  "Command session id returned by exec_command.", 0, 0 },
	{ "start_offset", OP_ARG_INTEGER, 0, 0, "0",
	  "First line offset to read, 0 by default.", 0, 0 },
	{ "limit", OP_ARG_INTEGER, 0, 0, "200",
	  "Most lines to return, 200 by default, at most 1000 (0 reads"
	  " one).", 1000, 0 },
	{ "tail", OP_ARG_INTEGER, 0, 1, NULL,
	  "Read the last N lines instead (at most 1000): the window ends"
	  " where the output does, and start_offset and limit are not"
	  " used.", 1000, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_read_command_lines_entry = {
	.name = "read_command_lines",
	.title = "Read command output",
	.description = "Read the output of a command session by stable line"
	    " offsets. Start at offset 0, then continue from end_offset until"
	    " it equals total_lines, or ask for the last lines with tail."
	    " truncated says the window left lines out (lines_omitted_before"
	    " were dropped from the transcript, lines_omitted_after remain to"
	    " read). The command may still be running; status and offsets"
	    " are a snapshot. Reading never changes a session.",
	.set = TOOLSET_RUNTIME,
	.flags = OP_READONLY | OP_IDEMPOTENT,
	.args = op_read_command_lines_args,
	.result = OP_COMMAND_SCHEMA,
	.exec = op_read_command_lines_exec,
};

static const struct op_arg op_create_workspace_session_args[] = {
	OP_SANDBOX_ARG,
	{ "network_profile", OP_ARG_STRING, 0, -1, "\"shared\"",
	  "shared (the sandbox's network) or isolated (loopback only).", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_create_workspace_session_entry = {
	.name = "create_workspace_session",
	.title = "Create a workspace session",
	.description = "Create a managed workspace session: a private view of"
	    " the sandbox's workspace over the layers published so far. Run"
	    " commands in it with exec_command; its changes stay private until"
	    " publish_workspace_session, or are dropped by"
	    " destroy_workspace_session.",
	.set = TOOLSET_RUNTIME,
	.flags = 0,
	.args = op_create_workspace_session_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"workspace_session_id\": {\"type\": \"string\"},"
	    " \"network_profile\": {\"enum\": [\"shared\", \"isolated\"]},"
	    " \"finalize_policy\": {\"const\": \"none\"},"
	    " \"base_manifest_version\": {\"type\": \"integer\","
	    " \"minimum\": 0}},"
	    " \"required\": [\"workspace_session_id\", \"network_profile\","
	    " \"finalize_policy\", \"base_manifest_version\"],"
	    " \"additionalProperties\": false}",
	.exec = op_create_workspace_session_exec,
};

static const struct op_arg op_workspace_session_args[] = {
	OP_SANDBOX_ARG,
	{ "workspace_session_id", OP_ARG_STRING, 1, -1, NULL,
	  "Workspace session id returned by create_workspace_session.", 0, 0 },
	{ NULL, 0, 0, -1, NULL, NULL, 0, 0 }
};

const struct op_entry op_publish_workspace_session_entry = {
	.name = "publish_workspace_session",
	.title = "Publish a workspace session",
	.description = "Publish a managed session's changes as one layer and"
	    " destroy the session. If the changes conflict with what others"
	    " published since the session began, nothing is published, the"
	    " session stays, and the error says which paths conflict so they"
	    " can be fixed and the publish retried.",
	.set = TOOLSET_RUNTIME,
	.flags = 0,
	.args = op_workspace_session_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"workspace_session_id\": {\"type\": \"string\"},"
	    " \"publish\": " OP_PUBLISH_SCHEMA ","
	    " \"publish_dropped\": " OP_STRINGS_SCHEMA ","
	    " \"destroyed\": {\"const\": true}},"
	    " \"required\": [\"workspace_session_id\", \"publish\","
	    " \"destroyed\"], \"additionalProperties\": false}",
	.exec = op_publish_workspace_session_exec,
};

const struct op_entry op_destroy_workspace_session_entry = {
	.name = "destroy_workspace_session",
	.title = "Discard a workspace session",
	.description = "Destroy a managed session and discard its unpublished"
	    " changes. Refused while a command of the session runs.",
	.set = TOOLSET_RUNTIME,
	.flags = OP_DESTRUCTIVE,
	.args = op_workspace_session_args,
	.result = "{\"type\": \"object\", \"properties\": {"
	    " \"workspace_session_id\": {\"type\": \"string\"},"
	    " \"destroyed\": {\"const\": true},"
	    " \"discarded_bytes\": {\"type\": [\"integer\", \"null\"],"
	    "  \"minimum\": 0}},"
	    " \"required\": [\"workspace_session_id\", \"destroyed\","
	    " \"discarded_bytes\"], \"additionalProperties\": false}",
	.exec = op_destroy_workspace_session_exec,
};

/* A runtime call's state: its call and what it may wait on. */
struct op_rt {
	struct op_call		*oc;
	struct command_wait	*wait;
	cJSON			*result;	/* once the engine is done */
};

static struct op_rt *
op_rt_new(struct op_call *oc)
{
	struct op_rt	*rt;

	rt = xcalloc(1, sizeof *rt);
	rt->oc = oc;
	op_call_set_data(oc, rt);
	return (rt);
}

/* An engine answer ends the call. */
static void
op_rt_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct op_rt	*rt = arg;
	struct op_call	*oc = rt->oc;

	op_call_set_data(oc, NULL);
	free(rt);
	if (result != NULL)
		op_call_done(oc, result);
	else
		op_call_fail(oc, cause);
}

/* The caller stopped waiting: answer now with what there is. */
static void
op_runtime_cancel(struct op_call *oc)
{
	struct op_rt		*rt = op_call_data(oc);
	struct command_wait	*w;

	if (rt != NULL && (w = rt->wait) != NULL) {
		rt->wait = NULL;
		command_wait_cancel(w);
	}
}

static long long
op_rt_yield(struct op_call *oc)
{
	long long	y = op_arg_integer(oc, "yield_time_ms");

	if (y < 0)
		return (OP_YIELD_DEFAULT);
	return (y > OP_YIELD_MAX ? OP_YIELD_MAX : y);
}

static void
op_exec_command_sb(struct rt_sandbox *sb, const struct cause *cause,
    void *arg)
{
	struct op_rt	*rt = arg;
	struct op_call	*oc = rt->oc;
	long long	 timeout;

	if (sb == NULL) {
		op_rt_done(NULL, cause, rt);
		return;
	}
	timeout = op_arg_integer(oc, "timeout_ms");
	command_exec(sb, op_arg_string(oc, "workspace_session_id"),
	    op_arg_string(oc, "cmd"), timeout < 0 ? 0 : timeout,
	    op_rt_yield(oc), op_call_span(oc), op_rt_done, rt, &rt->wait);
}

static void
op_exec_command_exec(struct op_call *oc)
{
	op_sandbox_runtime(oc, op_exec_command_sb, op_rt_new(oc));
}

static void
op_write_command_stdin_sb(struct rt_sandbox *sb, const struct cause *cause,
    void *arg)
{
	struct op_rt	*rt = arg;
	struct op_call	*oc = rt->oc;

	if (sb == NULL) {
		op_rt_done(NULL, cause, rt);
		return;
	}
	command_stdin(sb, op_arg_string(oc, "command_session_id"),
	    op_arg_string(oc, "stdin"), op_rt_yield(oc), op_rt_done, rt,
	    &rt->wait);
}

static void
op_write_command_stdin_exec(struct op_call *oc)
{
	op_sandbox_runtime(oc, op_write_command_stdin_sb, op_rt_new(oc));
}

static void
op_read_command_lines_sb(struct rt_sandbox *sb, const struct cause *cause,
    void *arg)
{
	struct op_rt	*rt = arg;
	struct op_call	*oc = rt->oc;

	if (sb == NULL) {
		op_rt_done(NULL, cause, rt);
		return;
	}
	command_read(sb, op_arg_string(oc, "command_session_id"),
	    op_arg_integer(oc, "start_offset"), op_arg_integer(oc, "limit"),
	    op_arg_integer(oc, "tail"), op_rt_done, rt);
}

static void
op_read_command_lines_exec(struct op_call *oc)
{
	op_sandbox_runtime(oc, op_read_command_lines_sb, op_rt_new(oc));
}

static void
op_create_workspace_session_started(struct session *s,
    const struct cause *cause, void *arg)
{
	struct op_rt	*rt = arg;
	cJSON		*r;

	if (s == NULL) {
		op_rt_done(NULL, cause, rt);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "workspace_session_id", session_id(s));
	cJSON_AddStringToObject(r, "network_profile", session_isolated(s) ?
	    "isolated" : "shared");
	cJSON_AddStringToObject(r, "finalize_policy", "none");
	cJSON_AddNumberToObject(r, "base_manifest_version",
	    session_base_version(s));
	op_rt_done(r, NULL, rt);
}

static void
op_create_workspace_session_sb(struct rt_sandbox *sb,
    const struct cause *cause, void *arg)
{
	struct op_rt	*rt = arg;
	struct cause	 c = { 0 };
	const char	*np;

	if (sb == NULL) {
		op_rt_done(NULL, cause, rt);
		return;
	}
	np = op_arg_string(rt->oc, "network_profile");
	if (np != NULL && strcmp(np, "shared") != 0 &&
	    strcmp(np, "isolated") != 0)
		cause_set(&c, CAUSE_INVALID, "argument", "network_profile",
		    "network_profile must be shared or isolated");
	else if (session_full(sb, &c) == 0) {
		session_create(sb, 0, np != NULL && strcmp(np,
		    "isolated") == 0, op_create_workspace_session_started, rt);
		return;
	}
	op_rt_done(NULL, &c, rt);
	cause_clear(&c);
}

static void
op_create_workspace_session_exec(struct op_call *oc)
{
	op_sandbox_runtime(oc, op_create_workspace_session_sb, op_rt_new(oc));
}

/*
 * The managed session a call names, ready for publish or destroy; NULL
 * after answering with the reason it is not.
 */
static struct session *
op_rt_session(struct op_rt *rt, struct rt_sandbox *sb)
{
	struct session	*s;
	struct cause	 c = { 0 };

	if ((s = session_use(sb, op_arg_string(rt->oc,
	    "workspace_session_id"), SESSION_USE_END, &c)) == NULL) {
		op_rt_done(NULL, &c, rt);
		cause_clear(&c);
	}
	return (s);
}

static void
op_publish_workspace_session_done(struct session *s, cJSON *result,
    const struct cause *cause, void *arg)
{
	struct op_rt	*rt = arg;
	cJSON		*r, *v;

	if (cause != NULL) {
		op_rt_done(NULL, cause, rt);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "workspace_session_id", session_id(s));
	cJSON_AddItemToObject(r, "publish", cJSON_Duplicate(
	    cJSON_GetObjectItem(result, "publish"), 1));
	if ((v = cJSON_GetObjectItem(result, "publish_dropped")) != NULL)
		cJSON_AddItemToObject(r, "publish_dropped",
		    cJSON_Duplicate(v, 1));
	cJSON_AddTrueToObject(r, "destroyed");
	session_end(s, "published");
	op_rt_done(r, NULL, rt);
}

static void
op_publish_workspace_session_sb(struct rt_sandbox *sb,
    const struct cause *cause, void *arg)
{
	struct op_rt	*rt = arg;
	struct session	*s;
	struct cause	 c = { 0 };
	char		*owner;

	if (sb == NULL) {
		op_rt_done(NULL, cause, rt);
		return;
	}
	if ((s = op_rt_session(rt, sb)) == NULL)
		return;
	if (runtime_helpers_busy(&c)) {
		op_rt_done(NULL, &c, rt);
		cause_clear(&c);
		return;
	}
	xasprintf(&owner, "workspace_session:%s", session_id(s));
	session_publish(s, owner, op_call_span(rt->oc),
	    op_publish_workspace_session_done, rt);
	free(owner);
}

static void
op_publish_workspace_session_exec(struct op_call *oc)
{
	op_sandbox_runtime(oc, op_publish_workspace_session_sb,
	    op_rt_new(oc));
}

/* The session's files are off the disk: answer. */
static void
op_destroy_workspace_session_gone(void *arg)
{
	struct op_rt	*rt = arg;

	op_rt_done(rt->result, NULL, rt);
}

static void
op_destroy_workspace_session_sized(struct session *s,
    unsigned long long bytes, void *arg)
{
	struct op_rt	*rt = arg;
	cJSON		*r;

	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "workspace_session_id", session_id(s));
	cJSON_AddTrueToObject(r, "destroyed");
	cJSON_AddNumberToObject(r, "discarded_bytes", (double)bytes);
	rt->result = r;
	session_end_then(s, "destroyed", op_destroy_workspace_session_gone,
	    rt);
}

static void
op_destroy_workspace_session_sb(struct rt_sandbox *sb,
    const struct cause *cause, void *arg)
{
	struct op_rt	*rt = arg;
	struct session	*s;
	cJSON		*r;

	if (sb == NULL) {
		op_rt_done(NULL, cause, rt);
		return;
	}
	/* One left by a process that is gone, never taken up: it goes. */
	if (session_orphan_destroy(sb, op_arg_string(rt->oc,
	    "workspace_session_id"))) {
		r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "workspace_session_id",
		    op_arg_string(rt->oc, "workspace_session_id"));
		cJSON_AddTrueToObject(r, "destroyed");
		cJSON_AddNullToObject(r, "discarded_bytes");
		op_rt_done(r, NULL, rt);
		return;
	}
	if ((s = op_rt_session(rt, sb)) == NULL)
		return;
	session_upper_size(s, op_destroy_workspace_session_sized, rt);
}

static void
op_destroy_workspace_session_exec(struct op_call *oc)
{
	op_sandbox_runtime(oc, op_destroy_workspace_session_sb,
	    op_rt_new(oc));
}
