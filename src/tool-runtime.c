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
 * destroy_workspace_session). Every tool takes sandbox_id first; the
 * handlers find the sandbox's runtime view (of the caller's tenant's
 * sandboxes only, tool_sandbox_get), then call command.c or session.c.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

#define TOOL_YIELD_DEFAULT	1000
#define TOOL_YIELD_MAX		600000

static void	tool_exec_command_exec(struct tool_call *);
static void	tool_write_command_stdin_exec(struct tool_call *);
static void	tool_read_command_lines_exec(struct tool_call *);
static void	tool_create_workspace_session_exec(struct tool_call *);
static void	tool_publish_workspace_session_exec(struct tool_call *);
static void	tool_destroy_workspace_session_exec(struct tool_call *);
static void	tool_runtime_cancel(struct tool_call *);

#define SANDBOX_ARG { "sandbox_id", TOOL_ARG_STRING, 1, -1, NULL,	\
	"Target sandbox id." }

static const struct tool_arg tool_exec_command_args[] = {
	SANDBOX_ARG,
	{ "workspace_session_id", TOOL_ARG_STRING, 0, -1, NULL,
	  "Existing workspace session to run in. Omit it to run in a new"
	  " session whose finalize policy is publish_then_destroy." },
	{ "cmd", TOOL_ARG_STRING, 1, -1, NULL, "Shell command text." },
	{ "timeout_ms", TOOL_ARG_INTEGER, 0, 0, NULL,
	  "Command timeout in milliseconds." },
	{ "yield_time_ms", TOOL_ARG_INTEGER, 0, 0, NULL,
	  "How long to wait for output first, in milliseconds." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_exec_command_entry = {
	.name = "exec_command",
	.title = "Run a command in a sandbox",
	.description = "Start a shell command in a workspace session. Without"
	    " workspace_session_id it runs in an automatic session"
	    " (publish_then_destroy): when the command ends, the session's"
	    " file changes are captured and published as one layer, then the"
	    " session is destroyed. If status is running, keep"
	    " command_session_id for read_command_lines and"
	    " write_command_stdin.",
	.set = TOOLSET_RUNTIME,
	.flags = TOOL_OPENWORLD,
	.args = tool_exec_command_args,
	.exec = tool_exec_command_exec,
	.cancel = tool_runtime_cancel,
};

static const struct tool_arg tool_write_command_stdin_args[] = {
	SANDBOX_ARG,
	{ "command_session_id", TOOL_ARG_STRING, 1, -1, NULL,
	  "Command session id returned by exec_command." },
	{ "stdin", TOOL_ARG_TEXT, 1, -1, NULL,
	  "Text to write to stdin." },
	{ "yield_time_ms", TOOL_ARG_INTEGER, 0, 0, NULL,
	  "How long to wait for output after writing." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_write_command_stdin_entry = {
	.name = "write_command_stdin",
	.title = "Write to a running command",
	.description = "Append text to the stdin of a running command"
	    " session and return a bounded output window. stdin is written"
	    " verbatim: line-oriented programs need an explicit newline. A"
	    " lone \\u0003 interrupts the command (Ctrl-C) and a lone \\u0004"
	    " closes its stdin (Ctrl-D).",
	.set = TOOLSET_RUNTIME,
	.flags = TOOL_OPENWORLD,
	.args = tool_write_command_stdin_args,
	.exec = tool_write_command_stdin_exec,
	.cancel = tool_runtime_cancel,
};

static const struct tool_arg tool_read_command_lines_args[] = {
	SANDBOX_ARG,
	{ "command_session_id", TOOL_ARG_STRING, 1, -1, NULL,
	  "Command session id returned by exec_command." },
	{ "start_offset", TOOL_ARG_INTEGER, 0, 0, "0",
	  "First line offset to read, 0 by default." },
	{ "limit", TOOL_ARG_INTEGER, 0, 0, "200",
	  "Most lines to return, 200 by default, at most 1000." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_read_command_lines_entry = {
	.name = "read_command_lines",
	.title = "Read command output",
	.description = "Read the output of a command session by stable line"
	    " offsets. Start at offset 0, then continue from end_offset until"
	    " it equals total_lines. The command may still be running; status"
	    " and offsets are a snapshot. Reading never changes a session.",
	.set = TOOLSET_RUNTIME,
	.flags = TOOL_READONLY | TOOL_IDEMPOTENT,
	.args = tool_read_command_lines_args,
	.exec = tool_read_command_lines_exec,
};

static const struct tool_arg tool_create_workspace_session_args[] = {
	SANDBOX_ARG,
	{ "network_profile", TOOL_ARG_STRING, 0, -1, "\"shared\"",
	  "shared (the sandbox's network) or isolated (loopback only)." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_create_workspace_session_entry = {
	.name = "create_workspace_session",
	.title = "Create a workspace session",
	.description = "Create a managed workspace session: a private view of"
	    " the sandbox's workspace over the layers published so far. Run"
	    " commands in it with exec_command; its changes stay private until"
	    " publish_workspace_session, or are dropped by"
	    " destroy_workspace_session.",
	.set = TOOLSET_RUNTIME,
	.flags = 0,
	.args = tool_create_workspace_session_args,
	.exec = tool_create_workspace_session_exec,
};

static const struct tool_arg tool_workspace_session_args[] = {
	SANDBOX_ARG,
	{ "workspace_session_id", TOOL_ARG_STRING, 1, -1, NULL,
	  "Workspace session id returned by create_workspace_session." },
	{ NULL, 0, 0, -1, NULL, NULL }
};

const struct tool_entry tool_publish_workspace_session_entry = {
	.name = "publish_workspace_session",
	.title = "Publish a workspace session",
	.description = "Publish a managed session's changes as one layer and"
	    " destroy the session. If the changes conflict with what others"
	    " published since the session began, nothing is published, the"
	    " session stays, and the error says which paths conflict so they"
	    " can be fixed and the publish retried.",
	.set = TOOLSET_RUNTIME,
	.flags = 0,
	.args = tool_workspace_session_args,
	.exec = tool_publish_workspace_session_exec,
};

const struct tool_entry tool_destroy_workspace_session_entry = {
	.name = "destroy_workspace_session",
	.title = "Discard a workspace session",
	.description = "Destroy a managed session and discard its unpublished"
	    " changes. Refused while a command of the session runs.",
	.set = TOOLSET_RUNTIME,
	.flags = TOOL_DESTRUCTIVE,
	.args = tool_workspace_session_args,
	.exec = tool_destroy_workspace_session_exec,
};

/* A runtime call's state: its tool call and what it may wait on. */
struct tool_rt {
	struct tool_call	*tc;
	struct command_wait	*wait;
	struct session		*s;
};

static struct tool_rt *
tool_rt_new(struct tool_call *tc)
{
	struct tool_rt	*rt;

	rt = xcalloc(1, sizeof *rt);
	rt->tc = tc;
	tool_call_set_data(tc, rt);
	return (rt);
}

/* An engine answer ends the call. */
static void
tool_rt_done(cJSON *result, const char *kind, const char *message,
    cJSON *details, void *arg)
{
	struct tool_rt		*rt = arg;
	struct tool_call	*tc = rt->tc;

	tool_call_set_data(tc, NULL);
	free(rt);
	if (result != NULL)
		tool_call_done(tc, result);
	else
		tool_call_error(tc, kind, details, "%s", message != NULL ?
		    message : "the operation failed");
}

/* The peer stopped waiting: answer now with what there is. */
static void
tool_runtime_cancel(struct tool_call *tc)
{
	struct tool_rt	*rt = tool_call_data(tc);

	if (rt != NULL && rt->wait != NULL) {
		struct command_wait	*w = rt->wait;

		rt->wait = NULL;
		command_wait_cancel(w);
	}
}

static long long
tool_rt_yield(struct tool_call *tc)
{
	long long	y = tool_arg_integer(tc, "yield_time_ms");

	if (y < 0)
		return (TOOL_YIELD_DEFAULT);
	return (y > TOOL_YIELD_MAX ? TOOL_YIELD_MAX : y);
}

static void
tool_exec_command_sb(struct rt_sandbox *sb, const char *kind,
    const char *message, cJSON *details, void *arg)
{
	struct tool_rt		*rt = arg;
	struct tool_call	*tc = rt->tc;
	long long		 timeout;

	if (sb == NULL) {
		tool_rt_done(NULL, kind, message, details, rt);
		return;
	}
	timeout = tool_arg_integer(tc, "timeout_ms");
	command_exec(sb, tool_arg_string(tc, "workspace_session_id"),
	    tool_arg_string(tc, "cmd"), timeout < 0 ? 0 : timeout,
	    tool_rt_yield(tc), tool_rt_done, rt, &rt->wait);
}

static void
tool_exec_command_exec(struct tool_call *tc)
{
	tool_sandbox_get(tc, tool_exec_command_sb, tool_rt_new(tc));
}

static void
tool_write_command_stdin_sb(struct rt_sandbox *sb, const char *kind,
    const char *message, cJSON *details, void *arg)
{
	struct tool_rt		*rt = arg;
	struct tool_call	*tc = rt->tc;

	if (sb == NULL) {
		tool_rt_done(NULL, kind, message, details, rt);
		return;
	}
	command_stdin(sb, tool_arg_string(tc, "command_session_id"),
	    tool_arg_string(tc, "stdin"), tool_rt_yield(tc), tool_rt_done,
	    rt, &rt->wait);
}

static void
tool_write_command_stdin_exec(struct tool_call *tc)
{
	tool_sandbox_get(tc, tool_write_command_stdin_sb, tool_rt_new(tc));
}

static void
tool_read_command_lines_sb(struct rt_sandbox *sb, const char *kind,
    const char *message, cJSON *details, void *arg)
{
	struct tool_rt		*rt = arg;
	struct tool_call	*tc = rt->tc;

	if (sb == NULL) {
		tool_rt_done(NULL, kind, message, details, rt);
		return;
	}
	command_read(sb, tool_arg_string(tc, "command_session_id"),
	    tool_arg_integer(tc, "start_offset"), tool_arg_integer(tc,
	    "limit"), tool_rt_done, rt);
}

static void
tool_read_command_lines_exec(struct tool_call *tc)
{
	tool_sandbox_get(tc, tool_read_command_lines_sb, tool_rt_new(tc));
}

static void
tool_create_workspace_session_started(struct session *s, const char *kind,
    const char *message, void *arg)
{
	struct tool_rt	*rt = arg;
	cJSON		*r;

	if (s == NULL) {
		tool_rt_done(NULL, kind, message, NULL, rt);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "workspace_session_id", s->id);
	cJSON_AddStringToObject(r, "network_profile", s->isolated ?
	    "isolated" : "shared");
	cJSON_AddStringToObject(r, "finalize_policy", "none");
	cJSON_AddNumberToObject(r, "base_manifest_version", s->lease->version);
	tool_rt_done(r, NULL, NULL, NULL, rt);
}

static void
tool_create_workspace_session_sb(struct rt_sandbox *sb, const char *kind,
    const char *message, cJSON *details, void *arg)
{
	struct tool_rt	*rt = arg;
	const char	*np, *limit;
	char		*msg;
	cJSON		*d;

	if (sb == NULL) {
		tool_rt_done(NULL, kind, message, details, rt);
		return;
	}
	np = tool_arg_string(rt->tc, "network_profile");
	if (np != NULL && strcmp(np, "shared") != 0 &&
	    strcmp(np, "isolated") != 0) {
		tool_rt_done(NULL, TOOL_ERR_INVALID, "network_profile must be"
		    " shared or isolated", tool_details("argument",
		    "network_profile"), rt);
		return;
	}
	if (session_full(sb, &limit, &msg)) {
		d = tool_details("limit", limit);
		cJSON_AddStringToObject(d, "sandbox_id", sb->id);
		tool_rt_done(NULL, TOOL_ERR_BUSY, msg, d, rt);
		free(msg);
		return;
	}
	session_create(sb, 0, np != NULL && strcmp(np, "isolated") == 0,
	    tool_create_workspace_session_started, rt);
}

static void
tool_create_workspace_session_exec(struct tool_call *tc)
{
	tool_sandbox_get(tc, tool_create_workspace_session_sb,
	    tool_rt_new(tc));
}

/*
 * The managed session a call names, ready for publish or destroy; NULL
 * after answering with the reason it is not.
 */
static struct session *
tool_rt_session(struct tool_rt *rt, struct rt_sandbox *sb)
{
	const char	*id = tool_arg_string(rt->tc, "workspace_session_id");
	struct session	*s;
	cJSON		*d;
	char		*msg;

	if ((s = session_find(sb, id)) == NULL) {
		xasprintf(&msg, "no workspace session %s in sandbox %s (it"
		    " ended, or another process owns it)", id, sb->id);
		tool_rt_done(NULL, TOOL_ERR_NOT_FOUND, msg, tool_details(
		    "workspace_session_id", id), rt);
		free(msg);
		return (NULL);
	}
	if (s->commands > 0 || s->publishing || s->automatic) {
		d = tool_details("workspace_session_id", id);
		if (s->commands > 0) {
			cJSON_AddItemToObject(d, "running_commands",
			    command_running_in(sb->id, id));
			xasprintf(&msg, "workspace session %s has commands"
			    " running", id);
		} else if (s->publishing)
			xasprintf(&msg, "workspace session %s is already"
			    " being published", id);
		else
			xasprintf(&msg, "workspace session %s is automatic:"
			    " it publishes when its last command ends", id);
		tool_rt_done(NULL, TOOL_ERR_CONFLICT, msg, d, rt);
		free(msg);
		return (NULL);
	}
	return (s);
}

static void
tool_publish_workspace_session_done(struct session *s, cJSON *rep,
    void *arg)
{
	struct tool_rt	*rt = arg;
	cJSON		*r, *p, *v, *d;

	if ((v = cJSON_GetObjectItem(rep, "reject_class")) != NULL) {
		d = tool_details("workspace_session_id", s->id);
		cJSON_AddStringToObject(d, "publish_reject_class",
		    v->valuestring);
		if ((p = cJSON_GetObjectItem(rep, "details")) != NULL)
			cJSON_AddItemToObject(d, "publish_reject_details",
			    cJSON_Duplicate(p, 1));
		v = cJSON_GetObjectItem(rep, "message");
		tool_rt_done(NULL, TOOL_ERR_FAILED, cJSON_IsString(v) ?
		    v->valuestring : "the publish was rejected", d, rt);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "workspace_session_id", s->id);
	if (cJSON_GetObjectItem(rep, "layer_id") != NULL)
		cJSON_AddItemToObject(r, "publish", session_publish_fields(rep));
	else
		cJSON_AddNullToObject(r, "publish");
	if ((v = cJSON_GetObjectItem(rep, "dropped")) != NULL &&
	    cJSON_GetArraySize(v) > 0)
		cJSON_AddItemToObject(r, "publish_dropped",
		    cJSON_Duplicate(v, 1));
	cJSON_AddTrueToObject(r, "destroyed");
	session_end(s, "published");
	tool_rt_done(r, NULL, NULL, NULL, rt);
}

static void
tool_publish_workspace_session_sb(struct rt_sandbox *sb, const char *kind,
    const char *message, cJSON *details, void *arg)
{
	struct tool_rt	*rt = arg;
	struct session	*s;
	char		*owner;

	if (sb == NULL) {
		tool_rt_done(NULL, kind, message, details, rt);
		return;
	}
	if ((s = tool_rt_session(rt, sb)) == NULL)
		return;
	if (job_helper_busy()) {
		tool_rt_done(NULL, TOOL_ERR_BUSY, "the server has too many"
		    " publishes and file operations waiting (limit"
		    " helper-queue); try again shortly", tool_details("limit",
		    "helper-queue"), rt);
		return;
	}
	xasprintf(&owner, "workspace_session:%s", s->id);
	session_publish(s, owner, tool_publish_workspace_session_done, rt);
	free(owner);
}

static void
tool_publish_workspace_session_exec(struct tool_call *tc)
{
	tool_sandbox_get(tc, tool_publish_workspace_session_sb,
	    tool_rt_new(tc));
}

static void
tool_destroy_workspace_session_sized(struct session *s,
    unsigned long long bytes, void *arg)
{
	struct tool_rt	*rt = arg;
	cJSON		*r;

	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "workspace_session_id", s->id);
	cJSON_AddTrueToObject(r, "destroyed");
	cJSON_AddNumberToObject(r, "discarded_bytes", (double)bytes);
	session_end(s, "destroyed");
	tool_rt_done(r, NULL, NULL, NULL, rt);
}

static void
tool_destroy_workspace_session_sb(struct rt_sandbox *sb, const char *kind,
    const char *message, cJSON *details, void *arg)
{
	struct tool_rt	*rt = arg;
	struct session	*s;

	if (sb == NULL) {
		tool_rt_done(NULL, kind, message, details, rt);
		return;
	}
	if ((s = tool_rt_session(rt, sb)) == NULL)
		return;
	session_upper_size(s, tool_destroy_workspace_session_sized, rt);
}

static void
tool_destroy_workspace_session_exec(struct tool_call *tc)
{
	tool_sandbox_get(tc, tool_destroy_workspace_session_sb,
	    tool_rt_new(tc));
}
