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
 * Command sessions: a shell command run in a workspace session (its init,
 * nsexec.c, forks it), its stdin pipe, its output (stdout and stderr on
 * one pipe, in order) appended to a transcript on disk, its status, and
 * the tool calls that wait on it. All pipes are on the event loop.
 *
 * A command is finished when the init reports its shell's exit and its
 * output has reached end of file: every process holding the output has
 * exited or closed it. What the shell left in the background with its
 * output sent elsewhere does not keep the command running; it lives on
 * in the session until the session ends (an automatic session's end
 * comes with this command's). On a timeout, or when a Ctrl-C ends it, the
 * whole process group gets SIGTERM, then SIGKILL after a grace. When
 * the last command of an automatic session finishes, the session's
 * processes are killed and its changes captured and published before the
 * command's terminal result is given, which then carries the publish
 * fields.
 *
 * The last finished commands of each sandbox are kept with their
 * transcripts (512 by default, oldest dropped first).
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "engine.h"
#include "sandbox-mcp.h"
#include "transcript.h"

#define COMMAND_GRACE_MS	2000	/* SIGTERM -> SIGKILL */
#define COMMAND_STDIN_WAIT_MS	2000
#define COMMAND_STDIN_HIGH	(1024 * 1024)
#define COMMAND_CMD_MAX		131071	/* MAX_ARG_STRLEN - 1 */
#define COMMAND_LOST_MS		500	/* output still open after a death */

enum command_state {
	COMMAND_STARTING,	/* waiting for its automatic session */
	COMMAND_RUNNING,
	COMMAND_FINALIZING,	/* publishing its automatic session */
	COMMAND_DONE
};

struct command_wait;
TAILQ_HEAD(command_waits, command_wait);

struct command {
	char			 id[17];
	char			 sandbox[65];
	char			 ws[17];
	struct rt_sandbox	*sb;
	struct session		*s;
	struct session_client	 client;	/* while attached to s */
	int			 attached;
	enum command_state	 state;
	char			*cmd;
	int			 started;	/* the init reported its pid */
	int			 pending_signal;
	int			 out_failed;	/* a transcript write failed */
	struct bufferevent	*in;
	struct bufferevent	*out;
	int			 in_close_when_drained;
	struct transcript	*tr;
	int			 reaped;
	int			 eof;
	int			 exit_code;
	int			 timed_out;
	int			 interrupted;
	char			*error;
	uint64_t		 start_us;
	uint64_t		 end_us;
	uint64_t		 cursor;
	long long		 timeout_ms;
	struct event		*timer;		/* timeout, then grace */
	int			 grace;
	int			 lost;		/* its session cannot report */
	int			 orphan;	/* ran in a process now gone */
	uint64_t		 orphan_start_ms; /* when it started, */
	uint64_t		 orphan_end_ms;	/* its last output */
	cJSON			*publish;	/* fields for the result */
	struct tspan		*span;		/* command.run */
	struct tspan		*sspan;		/* session.create */
	struct tspan		*pspan;		/* publish */
	struct command_waits	 waits;
	TAILQ_ENTRY(command)	 entry;
};
static TAILQ_HEAD(, command)	commands = TAILQ_HEAD_INITIALIZER(commands);

struct command_wait {
	struct command		*c;
	struct event		*timer;
	int			 stdin_wait;	/* stdin not yet taken */
	long long		 yield_ms;	/* once it is */
	command_cb		 cb;
	void			*arg;
	TAILQ_ENTRY(command_wait) entry;
};

/* A pending exec waiting for its automatic session. */
struct command_start {
	struct command		*c;
	long long		 yield_ms;
	command_cb		 cb;
	void			*arg;
	struct command_wait	**handle;
};

static void	command_finish(struct command *);
static void	command_event(struct command *, const char *, cJSON *);
static void	command_span_end(struct command *);
static void	command_count_write(struct command *);
static void	command_meta_write(struct command *);
static void	command_wait_stdin_taken(struct command_wait *);
static cJSON	*command_output(const char *, size_t);
static void	command_wake(struct command *);
static void	command_set_state(struct command *, enum command_state);
static void	command_run(struct command *, long long, command_cb, void *,
		    struct command_wait **);

/* How the command ended (once its shell has, whatever its state). */
static const char *
command_end_status(struct command *c)
{
	if (c->timed_out)
		return ("timed_out");
	if (c->interrupted && c->exit_code == 130)
		return ("cancelled");
	return (c->exit_code == 0 ? "ok" : "error");
}

static const char *
command_status(struct command *c)
{
	if (c->orphan)
		return ("lost");
	if (c->state != COMMAND_DONE)
		return ("running");
	return (command_end_status(c));
}

static unsigned int
command_running(const char *sandbox)
{
	struct command	*c;
	unsigned int	 n = 0;

	TAILQ_FOREACH(c, &commands, entry) {
		if (c->state != COMMAND_DONE &&
		    strcmp(c->sandbox, sandbox) == 0)
			n++;
	}
	return (n);
}

/* Commands running in the sandboxes of sb's tenant. */
static unsigned int
command_running_tenant(struct rt_sandbox *sb)
{
	struct command	*c;
	unsigned int	 n = 0;

	TAILQ_FOREACH(c, &commands, entry) {
		if (c->state != COMMAND_DONE && c->sb != NULL &&
		    zygote_same_tenant(c->sb, sb))
			n++;
	}
	return (n);
}

static struct command *
command_find(const char *sandbox, const char *id)
{
	struct command	*c;

	TAILQ_FOREACH(c, &commands, entry) {
		if (strcmp(c->id, id) == 0 && strcmp(c->sandbox, sandbox) == 0)
			return (c);
	}
	return (NULL);
}

static void
command_free(struct command *c)
{
	TAILQ_REMOVE(&commands, c, entry);
	if (c->timer != NULL)
		event_free(c->timer);
	if (c->in != NULL)
		bufferevent_free(c->in);
	if (c->out != NULL)
		bufferevent_free(c->out);
	if (c->tr != NULL)
		transcript_remove(c->tr);
	cJSON_Delete(c->publish);
	telemetry_span_end(c->pspan, "error");
	telemetry_span_end(c->sspan, "error");
	telemetry_span_end(c->span, c->state == COMMAND_DONE ? "completed" :
	    "error");
	free(c->error);
	free(c->cmd);
	free(c);
}

/* Keep the last finished commands of a sandbox; drop the oldest. */
static void
command_retain(const char *sandbox)
{
	struct command	*c, *c1;
	long long	 n = 0, keep = cfg_limit(LIMIT_COMMANDS_RETAINED);

	TAILQ_FOREACH(c, &commands, entry) {
		if (c->state == COMMAND_DONE &&
		    strcmp(c->sandbox, sandbox) == 0)
			n++;
	}
	TAILQ_FOREACH_SAFE(c, &commands, entry, c1) {
		if (n <= keep)
			break;
		if (c->state != COMMAND_DONE || strcmp(c->sandbox,
		    sandbox) != 0 || !TAILQ_EMPTY(&c->waits))
			continue;
		command_free(c);
		n--;
	}
}

/* Signal the command's process group, through the session's init. */
static void
command_signal(struct command *c, int sig)
{
	const char	*f[2];
	char		 num[16];

	if (c->state != COMMAND_RUNNING || !c->attached)
		return;
	if (!c->started) {
		c->pending_signal = sig;
		return;
	}
	snprintf(num, sizeof num, "%d", sig);
	f[0] = c->id;
	f[1] = num;
	if (session_send(c->s, NSEXEC_KILL, f, 2, NULL, 0) != 0)
		log_warn("command %s: signal %d", c->id, sig);
}

static void
command_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct command	*c = arg;
	struct timeval	 tv;

	if (c->state != COMMAND_RUNNING)
		return;
	tv.tv_sec = COMMAND_GRACE_MS / 1000;
	tv.tv_usec = (COMMAND_GRACE_MS % 1000) * 1000;
	switch (c->grace) {
	case 0:			/* the deadline */
		c->timed_out = 1;
		log_debug("command %s timed out after %lld ms", c->id,
		    c->timeout_ms);
		notice(c->sb != NULL ? c->sb->tenant : NULL, NOTICE_WARNING,
		    "command.timeout", c->sandbox, "command %s reached its"
		    " timeout_ms of %lld and is being killed", c->id,
		    c->timeout_ms);
		command_signal(c, SIGTERM);
		c->grace = 1;
		evtimer_add(c->timer, &tv);
		break;
	case 1:			/* the grace is over */
		command_signal(c, SIGKILL);
		c->grace = 2;
		evtimer_add(c->timer, &tv);
		break;
	default:		/* something still holds the output */
		if (c->reaped) {
			c->eof = 1;
			command_finish(c);
		} else
			evtimer_add(c->timer, &tv);
		break;
	}
}

static void
command_out_read_cb(struct bufferevent *bev, void *arg)
{
	struct command	*c = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);
	struct evbuffer_iovec v[8];
	char		*cause;
	int		 n, i;

	while (evbuffer_get_length(in) > 0) {
		n = evbuffer_peek(in, -1, NULL, v, 8);
		if (n > 8)
			n = 8;
		for (i = 0; i < n; i++) {
			/*
			 * A full disk fails every write after the first: one
			 * line per command, not one per read (the sandbox
			 * chooses how much it writes).
			 */
			if (transcript_append(c->tr, v[i].iov_base,
			    v[i].iov_len, &cause) != 0) {
				if (!c->out_failed)
					log_warnx("command %s: %s (later"
					    " failures of its output are not"
					    " logged)", c->id, cause);
				c->out_failed = 1;
				free(cause);
			}
			evbuffer_drain(in, v[i].iov_len);
		}
	}
}

static void
command_out_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct command	*c = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		command_out_read_cb(bev, c);
		bufferevent_disable(bev, EV_READ);
		c->eof = 1;
		command_finish(c);
	}
}

static void
command_in_write_cb(struct bufferevent *bev, void *arg)
{
	struct command		*c = arg;
	struct command_wait	*w, *w1;

	if (evbuffer_get_length(bufferevent_get_output(bev)) != 0)
		return;
	if (c->in_close_when_drained) {
		bufferevent_free(c->in);
		c->in = NULL;
	}
	TAILQ_FOREACH_SAFE(w, &c->waits, entry, w1) {
		if (w->stdin_wait)
			command_wait_stdin_taken(w);
	}
}

static void
command_in_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct command	*c = arg;

	/* The command closed its stdin: drop what it will never read. */
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		bufferevent_free(c->in);
		c->in = NULL;
	}
}

/* The shell (and its process group) has gone, with this status. */
static void
command_exited(struct command *c, int code, const char *error)
{
	if (c->reaped)
		return;
	c->reaped = 1;
	c->exit_code = code;
	if (error != NULL) {
		c->error = xstrdup(error);
		transcript_append(c->tr, "sandbox-mcp: ", 13, NULL);
		transcript_append(c->tr, error, strlen(error), NULL);
		transcript_append(c->tr, "\n", 1, NULL);
	}
	command_finish(c);
}

/*
 * The command's session can no longer report its exit, or has ended
 * while a background process held the command's output: the command
 * ends now, as killed (128 + SIGKILL), with why (if not NULL) at the end
 * of its output. Its result comes when its output closes, which the end
 * of its session brings at once; if something still holds the output, a
 * little later.
 */
static void
command_lost(struct command *c, const char *why)
{
	struct timeval	tv = { 0, COMMAND_LOST_MS * 1000 };

	c->lost = 1;
	if (c->timer != NULL) {
		c->grace = 2;
		evtimer_add(c->timer, &tv);
	}
	/* A shell that exited before is overruled: it ends killed too. */
	c->reaped = 0;
	command_exited(c, 128 + SIGKILL, why);
}

/* A message from the session's init about this command. */
static void
command_message(struct session_client *sc, const struct nsexec_msg *m)
{
	struct command	*c = sc->arg;
	long long	 code;

	switch (m->type) {
	case NSEXEC_PID:
		log_trace(TRACE_JOB, "command %s runs as pid %s", c->id,
		    m->f[1]);
		c->started = 1;
		command_event(c, "command.started", NULL);
		if (c->pending_signal != 0) {
			command_signal(c, c->pending_signal);
			c->pending_signal = 0;
		}
		break;
	case NSEXEC_EXIT:
		if (nsexec_msg_int(m, 1, 0, 255, &code) != 0)
			code = 125;
		command_exited(c, (int)code, NULL);
		break;
	case NSEXEC_ERROR:
		command_exited(c, 125, m->f[1]);
		break;
	default:
		break;
	}
}

/*
 * The session can no longer run the command (its init is gone, or it
 * ended with its sandbox): the command ends as killed, saying why.
 */
static void
command_gone(struct session_client *sc, const char *why)
{
	struct command	*c = sc->arg;

	if (c->state == COMMAND_RUNNING && !c->lost)
		command_lost(c, why);
}

/*
 * The one place a command's state changes: starting, running, maybe
 * finalizing (its automatic session publishing), done; a command never
 * goes back.
 */
static void
command_set_state(struct command *c, enum command_state state)
{
	static const char	*names[] = { "starting", "running",
	    "finalizing", "done" };

	if (state <= c->state || (state == COMMAND_FINALIZING &&
	    c->state != COMMAND_RUNNING))
		log_warnx("%s: command %s from %s to %s", __func__, c->id,
		    names[c->state], names[state]);
	else
		log_trace(TRACE_JOB, "command %s %s", c->id, names[state]);
	/* The count of running commands changes only into or out of it. */
	if (c->state == COMMAND_RUNNING || state == COMMAND_RUNNING) {
		c->state = state;
		command_count_write(c);
	} else
		c->state = state;
	if (state == COMMAND_DONE && c->span != NULL)
		command_span_end(c);
}

/*
 * How many commands run in c's session, for other processes to read
 * (snapshot): <session>/commands, replaced whole at each start and end.
 */
static void
command_count_write(struct command *c)
{
	struct command	*o;
	char		*path, text[32], *cause = NULL;
	int		 n = 0;

	if (c->ws[0] == '\0')
		return;
	TAILQ_FOREACH(o, &commands, entry) {
		if (o->state == COMMAND_RUNNING && strcmp(o->ws, c->ws) == 0 &&
		    strcmp(o->sandbox, c->sandbox) == 0)
			n++;
	}
	snprintf(text, sizeof text, "%d\n", n);
	path = state_where(STATE_SESSIONS, c->sandbox, "%s/commands", c->ws);
	if (util_write_file(path, text, strlen(text), 0, &cause) != 0) {
		log_debug("command %s: %s", c->id, cause);
		free(cause);
	}
	free(path);
}

/* An event of the command's, under its span. */
static void
command_event(struct command *c, const char *name, cJSON *attrs)
{
	if (attrs == NULL)
		attrs = cJSON_CreateObject();
	cJSON_AddStringToObject(attrs, "command_session_id", c->id);
	cJSON_AddStringToObject(attrs, "workspace_session_id", c->ws);
	telemetry_event(c->sandbox, NULL, c->span, name, attrs);
}

/*
 * The command is done: command.finished (or command.timed_out) if it
 * ran, and its span ends with how it ended.
 */
static void
command_span_end(struct command *c)
{
	const char	*status = command_end_status(c), *how;
	cJSON		*attrs;

	if (c->started || c->reaped) {
		attrs = cJSON_CreateObject();
		cJSON_AddStringToObject(attrs, "status", status);
		cJSON_AddNumberToObject(attrs, "exit_code", c->exit_code);
		if (c->end_us != 0)
			cJSON_AddNumberToObject(attrs, "duration_ms",
			    (double)(c->end_us - c->start_us) / 1000.0);
		command_event(c, c->timed_out ? "command.timed_out" :
		    "command.finished", attrs);
		how = c->timed_out ? "timed_out" : strcmp(status,
		    "cancelled") == 0 ? "cancelled" : "completed";
	} else
		how = "error";
	telemetry_span_attr_str(c->span, "workspace_session_id", c->ws);
	telemetry_span_attr_str(c->span, "status", status);
	telemetry_span_end(c->span, how);
	c->span = NULL;
}

/* The command no longer holds its session. */
static void
command_detach(struct command *c)
{
	if (!c->attached)
		return;
	c->attached = 0;
	session_detach(c->s, &c->client);
}

/* Publishing of the automatic session is done: the command is too. */
static void
command_published(struct session *s, cJSON *result, const struct cause *cause,
    void *arg)
{
	struct command	*c = arg;
	cJSON		*v, *details;

	telemetry_span_end(c->pspan, cause != NULL ? "error" : "completed");
	c->pspan = NULL;
	if (cause != NULL) {
		c->publish = cJSON_CreateObject();
		cJSON_AddTrueToObject(c->publish, "publish_rejected");
		cJSON_AddItemToObject(c->publish, "publish_reject_class",
		    cJSON_Duplicate(cJSON_GetObjectItem(cause->details,
		    "publish_reject_class"), 1));
		details = cJSON_Duplicate(cJSON_GetObjectItem(cause->details,
		    "publish_reject_details"), 1);
		if (!cJSON_IsObject(details)) {
			cJSON_Delete(details);
			details = cJSON_CreateObject();
		}
		cJSON_AddStringToObject(details, "message", cause->message);
		cJSON_AddItemToObject(c->publish, "publish_reject_details",
		    details);
	} else {
		c->publish = cJSON_CreateObject();
		cJSON_AddItemToObject(c->publish, "publish", cJSON_Duplicate(
		    cJSON_GetObjectItem(result, "publish"), 1));
		if ((v = cJSON_GetObjectItem(result, "publish_dropped")) !=
		    NULL)
			cJSON_AddItemToObject(c->publish, "publish_dropped",
			    cJSON_Duplicate(v, 1));
	}
	session_end(s, cause != NULL ? "publish rejected" : "published");
	c->s = NULL;
	command_set_state(c, COMMAND_DONE);
	command_wake(c);
	command_retain(c->sandbox);
}

/* The session's processes are gone: capture and publish. */
static void
command_finalize_dead(struct session *s, void *arg)
{
	struct command	*c = arg;
	char		*owner;

	xasprintf(&owner, "workspace_session:%s", session_id(s));
	c->pspan = telemetry_span_begin(NULL, c->span, "publish", NULL);
	telemetry_span_attr_str(c->pspan, "workspace_session_id",
	    session_id(s));
	session_publish(s, owner, c->pspan, command_published, c);
	free(owner);
}

/* Reaped and at end of output: finished, unless a publish must come. */
static void
command_finish(struct command *c)
{
	struct session	*s = c->s;

	if (c->state != COMMAND_RUNNING || !c->reaped || !c->eof)
		return;
	c->end_us = mono_us();
	transcript_finish(c->tr);
	if (c->timer != NULL)
		evtimer_del(c->timer);
	if (c->in != NULL) {
		bufferevent_free(c->in);
		c->in = NULL;
	}
	if (c->out != NULL) {
		bufferevent_free(c->out);
		c->out = NULL;
	}
	log_debug("command %s finished status=%s exit=%d in %.3f s", c->id,
	    command_end_status(c), c->exit_code,
	    (double)(c->end_us - c->start_us) / 1e6);
	/*
	 * The automatic session's last command has ended: its processes
	 * go, its changes are published, then it ends, and only then has
	 * the command finished (its result carries the publish).
	 */
	if (c->attached && session_automatic(s) && session_clients(s) == 1 &&
	    !session_ended(s)) {
		command_detach(c);
		command_set_state(c, COMMAND_FINALIZING);
		session_when_dead(s, command_finalize_dead, c);
		return;
	}
	command_detach(c);
	c->s = NULL;
	command_set_state(c, COMMAND_DONE);
	command_wake(c);
	command_retain(c->sandbox);
}

/* The result of a command: a window from the cursor (advance) or from
 * start (read_command_lines). */
static cJSON *
command_result(struct command *c, int from_cursor, uint64_t start,
    size_t max_lines)
{
	struct transcript_window tw;
	cJSON		*r, *v;
	char		*cause = NULL;
	uint64_t	 now = mono_us(), end, total, before, after;
	int		 running = c->state != COMMAND_DONE;

	if (from_cursor)
		start = c->cursor;
	memset(&tw, 0, sizeof tw);
	if (transcript_window(c->tr, start, max_lines,
	    (size_t)cfg_limit(LIMIT_OUTPUT_WINDOW), running && from_cursor,
	    &tw, &cause) != 0) {
		log_warnx("command %s: %s", c->id, cause);
		free(cause);
		tw.start = tw.end = tw.shown = start;
	}
	if (from_cursor && tw.end > c->cursor)
		c->cursor = tw.end;
	end = c->end_us != 0 ? c->end_us : now;
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "command_session_id", c->id);
	cJSON_AddStringToObject(r, "workspace_session_id", c->ws);
	cJSON_AddStringToObject(r, "status", command_status(c));
	if (c->state == COMMAND_DONE && !c->orphan)
		cJSON_AddNumberToObject(r, "exit_code", c->timed_out ? 124 :
		    strcmp(command_status(c), "cancelled") == 0 ? 130 :
		    c->exit_code);
	else
		cJSON_AddNullToObject(r, "exit_code");
	if (c->orphan) {
		/* Its times by the clock: its process's are gone. */
		cJSON_AddNumberToObject(r, "wall_time_seconds",
		    (double)(now_ms() - c->orphan_start_ms) / 1e3);
		cJSON_AddNumberToObject(r, "command_total_time_seconds",
		    (double)(c->orphan_end_ms - c->orphan_start_ms) / 1e3);
	} else {
		/* Microseconds: a fast command takes well under a ms. */
		cJSON_AddNumberToObject(r, "wall_time_seconds",
		    (double)(now - c->start_us) / 1e6);
		cJSON_AddNumberToObject(r, "command_total_time_seconds",
		    (double)(end - c->start_us) / 1e6);
	}
	cJSON_AddNumberToObject(r, "start_offset", (double)tw.start);
	cJSON_AddNumberToObject(r, "end_offset", (double)tw.end);
	total = transcript_total_lines(c->tr);
	cJSON_AddNumberToObject(r, "total_lines", (double)total);
	/*
	 * What the window left out: lines asked for that the transcript
	 * dropped before it (its size cap), and lines after it not shown
	 * (the window's bounds); a single line cut at the byte bound
	 * truncates it too.
	 */
	before = tw.start > start ? tw.start - start : 0;
	after = total > tw.shown ? total - tw.shown : 0;
	cJSON_AddBoolToObject(r, "truncated", before > 0 || after > 0 ||
	    tw.truncated);
	cJSON_AddNumberToObject(r, "lines_omitted_before", (double)before);
	cJSON_AddNumberToObject(r, "lines_omitted_after", (double)after);
	cJSON_AddNumberToObject(r, "original_token_count",
	    (double)tw.original_token_count);
	cJSON_AddItemToObject(r, "output", command_output(tw.text, tw.len));
	if (transcript_dropped_lines(c->tr) > 0)
		cJSON_AddNumberToObject(r, "dropped_lines",
		    (double)transcript_dropped_lines(c->tr));
	free(tw.text);
	if (c->state == COMMAND_DONE && c->publish != NULL) {
		cJSON_ArrayForEach(v, c->publish)
			cJSON_AddItemToObject(r, v->string,
			    cJSON_Duplicate(v, 1));
	}
	return (r);
}

/*
 * The window's text as a JSON string. The text is valid UTF-8, but a
 * NUL byte cannot travel in our JSON strings: it becomes U+FFFD too.
 */
static cJSON *
command_output(const char *text, size_t len)
{
	cJSON	*s;
	char	*copy, *o;
	size_t	 i, nuls = 0;

	if (text == NULL)
		return (cJSON_CreateString(""));
	for (i = 0; i < len; i++) {
		if (text[i] == '\0')
			nuls++;
	}
	if (nuls == 0)
		return (cJSON_CreateString(text));
	copy = o = xmalloc(len + 2 * nuls + 1);
	for (i = 0; i < len; i++) {
		if (text[i] == '\0') {
			memcpy(o, "\xef\xbf\xbd", 3);
			o += 3;
		} else
			*o++ = text[i];
	}
	*o = '\0';
	s = cJSON_CreateString(copy);
	free(copy);
	return (s);
}

static void
command_wait_free(struct command_wait *w)
{
	TAILQ_REMOVE(&w->c->waits, w, entry);
	if (w->timer != NULL)
		event_free(w->timer);
	free(w);
}

/* Answer one waiting call with the window from the cursor. */
static void
command_wait_answer(struct command_wait *w)
{
	struct command	*c = w->c;
	command_cb	 cb = w->cb;
	void		*arg = w->arg;
	cJSON		*r;

	command_wait_free(w);
	r = command_result(c, 1, 0, TRANSCRIPT_WINDOW_LINES);
	cb(r, NULL, arg);
}

/* The command reached its end: every waiting call gets its answer. */
static void
command_wake(struct command *c)
{
	struct command_wait	*w;

	while ((w = TAILQ_FIRST(&c->waits)) != NULL)
		command_wait_answer(w);
}

static void
command_wait_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	struct command_wait	*w = arg;
	command_cb		 cb;
	void			*cbarg;
	struct cause		 cause = { 0 };

	if (!w->stdin_wait) {
		command_wait_answer(w);
		return;
	}
	/* The pipe did not take it in time; what was accepted stays. */
	cb = w->cb;
	cbarg = w->arg;
	cause_set(&cause, CAUSE_FAILED, "command_session_id", w->c->id, "the"
	    " command is not reading its stdin (%zu bytes are still waiting"
	    " to be read)", w->c->in != NULL ?
	    evbuffer_get_length(bufferevent_get_output(w->c->in)) : 0);
	command_wait_free(w);
	cb(NULL, &cause, cbarg);
	cause_clear(&cause);
}

/* The pipe has taken what was written: wait for output as usual. */
static void
command_wait_stdin_taken(struct command_wait *w)
{
	struct timeval	tv;

	w->stdin_wait = 0;
	evtimer_del(w->timer);
	if (w->c->state == COMMAND_DONE || w->yield_ms == 0) {
		command_wait_answer(w);
		return;
	}
	tv.tv_sec = w->yield_ms / 1000;
	tv.tv_usec = (w->yield_ms % 1000) * 1000;
	evtimer_add(w->timer, &tv);
}

/*
 * Write to stdin, then wait: first up to 2 s for the pipe to take the
 * bytes, then up to yield_ms for output.
 */
static void
command_wait_stdin(struct command *c, long long yield_ms, command_cb cb,
    void *arg, struct command_wait **handle)
{
	struct command_wait	*w;
	struct timeval		 tv;

	w = xcalloc(1, sizeof *w);
	w->c = c;
	w->cb = cb;
	w->arg = arg;
	w->yield_ms = yield_ms;
	w->stdin_wait = 1;
	if ((w->timer = evtimer_new(ev_base, command_wait_timer_cb, w)) ==
	    NULL)
		fatalx("%s: evtimer_new", __func__);
	tv.tv_sec = COMMAND_STDIN_WAIT_MS / 1000;
	tv.tv_usec = (COMMAND_STDIN_WAIT_MS % 1000) * 1000;
	evtimer_add(w->timer, &tv);
	TAILQ_INSERT_TAIL(&c->waits, w, entry);
	if (handle != NULL)
		*handle = w;
}

/* The caller no longer waits (notifications/cancelled): answer now. */
void
command_wait_cancel(struct command_wait *w)
{
	if (w != NULL)
		command_wait_answer(w);
}

/* Wait up to yield_ms for the command to finish, then answer. */
static void
command_wait(struct command *c, long long yield_ms, command_cb cb,
    void *arg, struct command_wait **handle)
{
	struct command_wait	*w;
	struct timeval		 tv;

	if (c->state == COMMAND_DONE || yield_ms == 0) {
		if (handle != NULL)
			*handle = NULL;
		cb(command_result(c, 1, 0, TRANSCRIPT_WINDOW_LINES), NULL,
		    arg);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->c = c;
	w->cb = cb;
	w->arg = arg;
	if ((w->timer = evtimer_new(ev_base, command_wait_timer_cb, w)) ==
	    NULL)
		fatalx("%s: evtimer_new", __func__);
	tv.tv_sec = yield_ms / 1000;
	tv.tv_usec = (yield_ms % 1000) * 1000;
	evtimer_add(w->timer, &tv);
	TAILQ_INSERT_TAIL(&c->waits, w, entry);
	if (handle != NULL)
		*handle = w;
}

/* The environment of a command. */
static char **
command_env(struct command *c)
{
	char	**env;

	env = xcalloc(8, sizeof *env);
	env[0] = xstrdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
	    "/usr/bin:/sbin:/bin");
	env[1] = xstrdup("HOME=/root");
	env[2] = xstrdup("LANG=C.UTF-8");
	env[3] = xstrdup("TERM=dumb");
	xasprintf(&env[4], "SANDBOX_ID=%s", c->sandbox);
	xasprintf(&env[5], "WORKSPACE_SESSION_ID=%s", c->ws);
	env[6] = NULL;
	return (env);
}

/* Start the command in its (live) session and wait for it. */
static void
command_run(struct command *c, long long yield_ms, command_cb cb,
    void *arg, struct command_wait **handle)
{
	struct timeval	 tv;
	struct cause	 fail = { 0 };
	const char	*f[16];
	char		**env, *path, *cause, *msg;
	int		 in[2] = { -1, -1 }, out[2] = { -1, -1 }, fds[2], i, nf;

	/* Under our pid and start time, so recovery can tell ours apart. */
	path = state_where(STATE_COMMANDS, c->sandbox, "%ld-%llu",
	    (long)getpid(), state_process_start(getpid()));
	if (mkdir(path, 0700) != 0 && errno != EEXIST) {
		xasprintf(&msg, "cannot create %s: %s", path, strerror(errno));
		free(path);
		goto fail;
	}
	free(path);
	command_meta_write(c);
	path = state_where(STATE_COMMANDS, c->sandbox, "%ld-%llu/%s",
	    (long)getpid(), state_process_start(getpid()), c->id);
	c->tr = transcript_open(path, (uint64_t)cfg_limit(
	    LIMIT_TRANSCRIPT_MAX), &cause);
	free(path);
	if (c->tr == NULL) {
		xasprintf(&msg, "cannot keep the command's output: %s", cause);
		free(cause);
		goto fail;
	}
	if (session_ended(c->s)) {
		xasprintf(&msg, "the workspace session %s has ended", c->ws);
		goto fail;
	}
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
		xasprintf(&msg, "pipe: %s", strerror(errno));
		goto fail;
	}
	env = command_env(c);
	nf = 0;
	f[nf++] = c->id;
	f[nf++] = c->cmd;
	for (i = 0; env[i] != NULL; i++)
		f[nf++] = env[i];
	fds[0] = in[0];
	fds[1] = out[1];
	i = session_send(c->s, NSEXEC_EXEC, f, nf, fds, 2);
	for (nf = 0; env[nf] != NULL; nf++)
		free(env[nf]);
	free(env);
	close(in[0]);
	close(out[1]);
	if (i != 0) {
		xasprintf(&msg, "cannot start the command in the session: %s",
		    strerror(errno));
		close(in[1]);
		close(out[0]);
		goto fail_closed;
	}
	command_set_state(c, COMMAND_RUNNING);
	c->start_us = mono_us();
	c->client.id = c->id;
	c->client.message = command_message;
	c->client.gone = command_gone;
	c->client.arg = c;
	session_attach(c->s, &c->client);
	c->attached = 1;
	util_set_nonblock(in[1]);
	util_set_nonblock(out[0]);
	c->in = bufferevent_socket_new(ev_base, in[1], BEV_OPT_CLOSE_ON_FREE);
	c->out = bufferevent_socket_new(ev_base, out[0],
	    BEV_OPT_CLOSE_ON_FREE);
	if (c->in == NULL || c->out == NULL)
		fatalx("%s: bufferevent_socket_new", __func__);
	bufferevent_setcb(c->in, NULL, command_in_write_cb,
	    command_in_event_cb, c);
	bufferevent_setcb(c->out, command_out_read_cb, NULL,
	    command_out_event_cb, c);
	bufferevent_enable(c->out, EV_READ);
	bufferevent_enable(c->in, EV_WRITE);
	if ((c->timer = evtimer_new(ev_base, command_timer_cb, c)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	if (c->timeout_ms > 0) {
		tv.tv_sec = c->timeout_ms / 1000;
		tv.tv_usec = (c->timeout_ms % 1000) * 1000;
		evtimer_add(c->timer, &tv);
	}
	log_debug("command %s started in %s: %.200s", c->id, c->ws, c->cmd);
	command_wait(c, yield_ms, cb, arg, handle);
	return;
fail:
	if (in[0] != -1) {
		close(in[0]);
		close(in[1]);
	}
	if (out[0] != -1) {
		close(out[0]);
		close(out[1]);
	}
fail_closed:
	command_set_state(c, COMMAND_DONE);
	cause_set(&fail, CAUSE_INTERNAL, NULL, NULL, "%s", msg);
	cb(NULL, &fail, arg);
	cause_clear(&fail);
	free(msg);
	if (c->s != NULL && session_automatic(c->s) &&
	    session_clients(c->s) == 0)
		session_end(c->s, "its command could not start");
	command_free(c);
}

static void
command_session_ready(struct session *s, const struct cause *cause,
    void *arg)
{
	struct command_start	*st = arg;
	struct command		*c = st->c;

	telemetry_span_attr_str(c->sspan, "workspace_session_id", s != NULL ?
	    session_id(s) : "");
	telemetry_span_end(c->sspan, s != NULL ? "completed" : "error");
	c->sspan = NULL;
	if (s == NULL) {
		command_set_state(c, COMMAND_DONE);
		st->cb(NULL, cause, st->arg);
		command_free(c);
		free(st);
		return;
	}
	c->s = s;
	strlcpy(c->ws, session_id(s), sizeof c->ws);
	command_run(c, st->yield_ms, st->cb, st->arg, st->handle);
	free(st);
}

/*
 * exec_command: run cmd in the session ws (NULL: a new automatic one),
 * wait up to yield_ms and answer with the result.
 */
void
command_exec(struct rt_sandbox *sb, const char *ws, const char *cmd,
    long long timeout_ms, long long yield_ms, struct tspan *parent,
    command_cb cb, void *arg, struct command_wait **handle)
{
	struct command		*c;
	struct command_start	*st;
	struct session		*s = NULL;
	struct cause		 cause = { 0 };
	char			 rnd[13];

	if (handle != NULL)
		*handle = NULL;
	if (strlen(cmd) > COMMAND_CMD_MAX)
		cause_set(&cause, CAUSE_INVALID, "argument", "cmd", "cmd is"
		    " longer than 131071 bytes, the most one argument of a"
		    " process may hold");
	else if (cmd[strspn(cmd, " \t\r\n")] == '\0')
		cause_set(&cause, CAUSE_INVALID, "argument", "cmd", "cmd must"
		    " hold a command, not only blanks");
	else if (command_running_tenant(sb) >=
	    cfg_limit(LIMIT_COMMANDS_PER_TENANT)) {
		cause_set(&cause, CAUSE_BUSY, "limit", "commands-per-tenant",
		    "the sandboxes of tenant %s already run %lld commands"
		    " (limit commands-per-tenant)", sb->tenant,
		    cfg_limit(LIMIT_COMMANDS_PER_TENANT));
		cause_detail(&cause, "sandbox_id", sb->id);
	} else if (command_running(sb->id) >=
	    cfg_limit(LIMIT_COMMANDS_RUNNING)) {
		cause_set(&cause, CAUSE_BUSY, "limit", "commands-running",
		    "sandbox %s already runs %lld commands (limit"
		    " commands-running)", sb->id,
		    cfg_limit(LIMIT_COMMANDS_RUNNING));
		cause_detail(&cause, "sandbox_id", sb->id);
	} else if (ws == NULL)
		session_full(sb, &cause);
	else
		s = session_use(sb, ws, SESSION_USE_EXEC, &cause);
	if (cause.kind != CAUSE_NONE) {
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	c = xcalloc(1, sizeof *c);
	util_random_hex(rnd, 12);
	snprintf(c->id, sizeof c->id, "cmd-%s", rnd);
	strlcpy(c->sandbox, sb->id, sizeof c->sandbox);
	c->sb = sb;
	c->cmd = xstrdup(cmd);
	c->timeout_ms = timeout_ms;
	c->span = telemetry_span_begin(NULL, parent, "command.run", sb->id);
	telemetry_span_attr_str(c->span, "command_session_id", c->id);
	/* Starting (zero): command_set_state changes it. */
	TAILQ_INIT(&c->waits);
	TAILQ_INSERT_TAIL(&commands, c, entry);
	if (s != NULL) {
		c->s = s;
		strlcpy(c->ws, session_id(s), sizeof c->ws);
		command_run(c, yield_ms, cb, arg, handle);
		return;
	}
	st = xcalloc(1, sizeof *st);
	st->c = c;
	st->yield_ms = yield_ms;
	st->cb = cb;
	st->arg = arg;
	st->handle = handle;
	c->sspan = telemetry_span_begin(NULL, c->span, "session.create", NULL);
	session_create(sb, 1, 0, command_session_ready, st);
}

/*
 * What a command was, beside its transcript, for the process after ours
 * if ours ends while it runs: its session and when it started.
 */
static void
command_meta_write(struct command *c)
{
	cJSON	*meta;
	char	*path, *text, *cause = NULL;

	meta = cJSON_CreateObject();
	cJSON_AddStringToObject(meta, "workspace_session_id", c->ws);
	cJSON_AddNumberToObject(meta, "started_at_ms", (double)now_ms());
	text = util_json_print(meta);
	cJSON_Delete(meta);
	path = state_where(STATE_COMMANDS, c->sandbox, "%ld-%llu/%s.json",
	    (long)getpid(), state_process_start(getpid()), c->id);
	if (util_write_file(path, text, strlen(text), 0, &cause) != 0) {
		log_debug("command %s: %s", c->id, cause);
		free(cause);
	}
	free(path);
	free(text);
}

/* When a transcript directory's newest file was last written, in ms. */
static uint64_t
command_orphan_last(const char *dir, const struct stat *dst)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	uint64_t	 ms, last;

	last = (uint64_t)dst->st_mtim.tv_sec * 1000 +
	    (uint64_t)dst->st_mtim.tv_nsec / 1000000;
	if ((d = opendir(dir)) == NULL)
		return (last);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		ms = (uint64_t)st.st_mtim.tv_sec * 1000 +
		    (uint64_t)st.st_mtim.tv_nsec / 1000000;
		if (ms > last)
			last = ms;
	}
	closedir(d);
	return (last);
}

/*
 * A command of a process that is gone (a restart, a kill -9): found by
 * its id among the commands that process left (command_recover keeps
 * them), it is done, "lost", and its transcript as far as it got reads
 * like any finished command's. NULL when there is none.
 */
static struct command *
command_orphan(struct rt_sandbox *sb, const char *id)
{
	struct command		*c = NULL;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;
	cJSON			*meta, *v;
	char			*dir, *path, *text, *cause = NULL;
	long			 pid;
	unsigned long long	 start;
	size_t			 len;

	if (strncmp(id, "cmd-", 4) != 0 || strlen(id) != 16 ||
	    id[4 + strspn(id + 4, "0123456789abcdef")] != '\0')
		return (NULL);
	dir = state_where(STATE_COMMANDS, sb->id, NULL);
	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return (NULL);
	}
	while (c == NULL && (de = readdir(d)) != NULL) {
		if (sscanf(de->d_name, "%ld-%llu", &pid, &start) != 2 ||
		    state_process_start(pid) == start)
			continue;
		xasprintf(&path, "%s/%s/%s", dir, de->d_name, id);
		if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
			free(path);
			continue;
		}
		c = xcalloc(1, sizeof *c);
		if ((c->tr = transcript_load(path, (uint64_t)cfg_limit(
		    LIMIT_TRANSCRIPT_MAX), &cause)) == NULL) {
			log_warnx("command %s: %s", id, cause);
			free(cause);
			free(path);
			free(c);
			c = NULL;
			continue;
		}
		c->orphan_end_ms = command_orphan_last(path, &st);
		c->orphan_start_ms = c->orphan_end_ms;
		free(path);
		xasprintf(&path, "%s/%s/%s.json", dir, de->d_name, id);
		text = util_read_file(path, 4096, &len);
		free(path);
		meta = text != NULL ? cJSON_ParseWithLength(text, len) : NULL;
		free(text);
		if (cJSON_IsString(v = cJSON_GetObjectItem(meta,
		    "workspace_session_id")))
			strlcpy(c->ws, v->valuestring, sizeof c->ws);
		if (cJSON_IsNumber(v = cJSON_GetObjectItem(meta,
		    "started_at_ms")) && v->valuedouble > 0)
			c->orphan_start_ms = (uint64_t)v->valuedouble;
		cJSON_Delete(meta);
		/* The file clock is coarse: never an end before the start. */
		if (c->orphan_end_ms < c->orphan_start_ms)
			c->orphan_end_ms = c->orphan_start_ms;
	}
	closedir(d);
	free(dir);
	if (c == NULL)
		return (NULL);
	strlcpy(c->id, id, sizeof c->id);
	strlcpy(c->sandbox, sb->id, sizeof c->sandbox);
	c->orphan = 1;
	c->state = COMMAND_DONE;
	c->cmd = xstrdup("");
	TAILQ_INIT(&c->waits);
	TAILQ_INSERT_TAIL(&commands, c, entry);
	log_info("command %s of %s ran in a process that is gone: its"
	    " transcript is read back", id, sb->id);
	command_retain(sb->id);
	return (command_find(sb->id, id));
}

static struct command *
command_lookup(struct rt_sandbox *sb, const char *id, command_cb cb,
    void *arg)
{
	struct command	*c;
	struct cause	 cause = { 0 };

	if ((c = command_find(sb->id, id)) == NULL)
		c = command_orphan(sb, id);
	if (c == NULL || c->state == COMMAND_STARTING) {
		cause_set(&cause, CAUSE_NOT_FOUND, "command_session_id", id,
		    "no command session %s in sandbox %s", id, sb->id);
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return (NULL);
	}
	return (c);
}

/*
 * write_command_stdin: write data (a lone Ctrl-C interrupts the process
 * group, a lone Ctrl-D closes stdin, an empty string writes nothing),
 * then wait like exec_command.
 */
void
command_stdin(struct rt_sandbox *sb, const char *id, const char *data,
    long long yield_ms, command_cb cb, void *arg,
    struct command_wait **handle)
{
	struct command	*c;
	struct cause	 cause = { 0 };
	size_t		 len = strlen(data);

	if (handle != NULL)
		*handle = NULL;
	if ((c = command_lookup(sb, id, cb, arg)) == NULL)
		return;
	/* Nothing to write: wait, also while its session publishes. */
	if (len == 0 && c->state == COMMAND_FINALIZING) {
		command_wait(c, yield_ms, cb, arg, handle);
		return;
	}
	if (c->state != COMMAND_RUNNING) {
		cause_set(&cause, CAUSE_FAILED, "command_session_id", id,
		    "command %s has already finished", id);
		cause_detail(&cause, "status", command_status(c));
	} else if (strcmp(data, "\003") == 0) {
		c->interrupted = 1;
		command_signal(c, SIGINT);
	} else if (strcmp(data, "\004") == 0) {
		if (c->in != NULL) {
			if (evbuffer_get_length(bufferevent_get_output(
			    c->in)) == 0) {
				bufferevent_free(c->in);
				c->in = NULL;
			} else
				c->in_close_when_drained = 1;
		}
	} else if (len > 0 && c->in == NULL)
		cause_set(&cause, CAUSE_FAILED, "command_session_id", id,
		    "command %s has closed its stdin", id);
	else if (len > 0 && evbuffer_get_length(bufferevent_get_output(
	    c->in)) > COMMAND_STDIN_HIGH)
		cause_set(&cause, CAUSE_FAILED, "command_session_id", id,
		    "the command is not reading its stdin (%zu bytes are still"
		    " waiting)", evbuffer_get_length(bufferevent_get_output(
		    c->in)));
	else if (len > 0) {
		bufferevent_write(c->in, data, len);
		command_wait_stdin(c, yield_ms, cb, arg, handle);
		return;
	}
	if (cause.kind != CAUSE_NONE) {
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	command_wait(c, yield_ms, cb, arg, handle);
}

/* read_command_lines: a window from start, without touching the cursor. */
void
command_read(struct rt_sandbox *sb, const char *id, long long start,
    long long limit, long long tail, command_cb cb, void *arg)
{
	struct command	*c;
	uint64_t	 total;

	if ((c = command_lookup(sb, id, cb, arg)) == NULL)
		return;
	/* The last tail lines: the window ends where the output does. */
	if (tail > 0) {
		if (tail > 1000)
			tail = 1000;
		total = transcript_total_lines(c->tr);
		start = total > (uint64_t)tail ? (long long)(total - tail) : 0;
		limit = tail;
	}
	if (limit < 1)
		limit = 1;
	if (limit > 1000)
		limit = 1000;
	cb(command_result(c, 0, (uint64_t)start, (size_t)limit), NULL, arg);
}

/*
 * A sandbox is being destroyed and this process's sessions in it have
 * ended (their commands with them, saying so: session_forget): the
 * finished commands nobody waits on go.
 */
void
command_forget_sandbox(const char *sandbox)
{
	struct command	*c, *c1;

	TAILQ_FOREACH_SAFE(c, &commands, entry, c1) {
		if (strcmp(c->sandbox, sandbox) == 0 &&
		    c->state == COMMAND_DONE && TAILQ_EMPTY(&c->waits))
			command_free(c);
	}
}

/*
 * Recovery at start, for one sandbox: the commands of processes that
 * have ended (commands/PID-START) stay, so that the next process can say
 * how far each got (command_orphan), for the COMMAND_ORPHANS_KEPT
 * processes that ended last; older ones go to the trash.
 */
#define COMMAND_ORPHANS_KEPT	8

struct command_dead {
	char	*name;
	time_t	 mtime;
};

static int
command_dead_cmp(const void *a, const void *b)
{
	const struct command_dead	*x = a, *y = b;

	return (x->mtime > y->mtime ? -1 : x->mtime < y->mtime);
}

void
command_recover(const char *id)
{
	struct command_dead	*dead = NULL;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;
	char			*dir, *path, *to;
	long			 pid;
	unsigned long long	 start;
	size_t			 n = 0, i;

	dir = state_where(STATE_COMMANDS, id, NULL);
	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || sscanf(de->d_name, "%ld-%llu",
		    &pid, &start) != 2 || state_process_start(pid) == start ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) !=
		    0)
			continue;
		dead = xreallocarray(dead, n + 1, sizeof *dead);
		dead[n].name = xstrdup(de->d_name);
		dead[n++].mtime = st.st_mtime;
	}
	closedir(d);
	if (n > 0)
		qsort(dead, n, sizeof *dead, command_dead_cmp);
	for (i = 0; i < n; i++) {
		if (i >= COMMAND_ORPHANS_KEPT) {
			xasprintf(&path, "%s/%s", dir, dead[i].name);
			to = state_trash_path(id, "cmd");
			if (rename(path, to) != 0)
				log_warn("recovery: %s", path);
			free(path);
			free(to);
		}
		free(dead[i].name);
	}
	free(dead);
	free(dir);
}

/* The commands of this process still running, for metrics.c. */
void
command_metrics(struct metrics_counts *mc)
{
	struct command	*c;

	TAILQ_FOREACH(c, &commands, entry) {
		if (c->state != COMMAND_DONE)
			mc->commands_running++;
	}
}
