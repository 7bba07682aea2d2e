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
 * Workspace sessions, the server's side. A session is a private view of
 * a sandbox's workspace: an overlay whose lower layers are the stack as
 * leased when it began and whose upper directory is its own, in its own
 * mount, PID and (when isolated) network namespaces, built by the
 * sandbox's zygote and served by its init (nsexec.c). This file keeps
 * what the runtime needs of each sandbox: its container's init pid and
 * cgroups, learnt from the Docker Engine once and checked on each use,
 * and the zygote, started on first use and kept while the sandbox is.
 *
 *	<state>/sandboxes/<id>/sessions/<ws>/lease.json	the lease
 *	<state>/sandboxes/<id>/sessions/<ws>/upper/	the session's changes
 *	<state>/sandboxes/<id>/sessions/<ws>/work/	overlayfs's work dir
 *
 * Sessions belong to the process that started them: the session's control
 * socket ends its init when this process ends, and any process that finds
 * a lease whose owner is gone removes the session's scratch.
 *
 * A session that a user process has entered is never handed to another:
 * a process of another session may hold a descriptor into its mounts
 * (passed over a unix socket), and nothing can prove it does not. What
 * makes automatic sessions quick is spares instead: sessions built ahead
 * on the current stack that no user process has entered, kept
 * (SESSION_IDLE) for up to SESSION_KEEP_SECONDS, taken by the next
 * automatic sessions. A sandbox wants as many spares as its automatic
 * sessions recently needed (one more each time one had to be built on
 * demand, one fewer each time a spare expires unused), at most the pool
 * (limit session-pool, and a quarter of the profile's pids). Spares are
 * in the sandbox's list but not found by id.
 *
 * Each session's processes live in a freezer group of their own under
 * the container's (cgroup.c), joined by its builder before the init is
 * forked: a publish of a managed session freezes them while it takes its
 * snapshot, so the tree cannot change under it.
 */

#include "config.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "sandbox-mcp.h"

#define RT_SWEEP_SECONDS	5
/* How long a spare is kept for the next automatic session. */
#define SESSION_KEEP_SECONDS	10
/* How long a freeze may take before a publish gives up. */
#define SESSION_FREEZE_TRIES	5000	/* of 1 ms */
/* Descriptors kept back from sessions for everything else. */
#define SESSION_FD_RESERVE	256

static LIST_HEAD(, rt_sandbox)	rt_sandboxes = LIST_HEAD_INITIALIZER(rt_sandboxes);

static void	rt_zygote_lost(struct rt_sandbox *, const char *);
static void	session_sealed(struct session *, int);
static void	session_started(struct session *);
static void	session_unpark(struct session *);
static void	session_keep(struct session *);
static unsigned int session_pool_max(void);
static void	session_prepare(struct rt_sandbox *);
static void	session_new(struct rt_sandbox *, int, int, session_cb, void *,
		    struct layer_stack *, int);

/* Sessions of this process (all sandboxes), and groups left to remove. */
static unsigned int	 session_count;
static char		**session_cgroups_left;
static size_t		 session_ncgroups_left;

struct rt_wait {
	char		 id[65];
	char		*tenant;
	rt_cb		 cb;
	void		*arg;
};

struct session_start {
	struct session	*s;
	session_cb	 cb;
	void		*arg;
};

static void
rt_sandbox_free_cgroups(struct rt_sandbox *sb)
{
	size_t	i;

	for (i = 0; i < sb->ncgroup; i++)
		free(sb->cgroups[i]);
	free(sb->cgroups);
	sb->cgroups = NULL;
	sb->ncgroup = 0;
}

/*
 * The cgroup.procs files of a process's cgroups, from /proc/PID/cgroup
 * and the cgroup mounts of /proc/self/mountinfo (v1 hierarchies and the
 * unified one).
 */
static int
rt_sandbox_cgroups(struct rt_sandbox *sb, char **cause)
{
	FILE		*f, *m;
	char		 path[64], line[4096], mline[4096], *ctrls, *rel;
	char		*mp, *fstype, *opts, *tok, *full, *dup, *word;
	char		*save;
	int		 match;

	snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)sb->pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "cannot read %s: %s", path, strerror(errno));
		return (-1);
	}
	rt_sandbox_free_cgroups(sb);
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((ctrls = strchr(line, ':')) == NULL)
			continue;
		ctrls++;
		if ((rel = strchr(ctrls, ':')) == NULL)
			continue;
		*rel++ = '\0';
		if ((m = fopen("/proc/self/mountinfo", "re")) == NULL)
			continue;
		while (fgets(mline, sizeof mline, m) != NULL) {
			/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - TYPE SRC OPTS */
			tok = strtok_r(mline, " ", &save);
			mp = NULL;
			for (match = 0; tok != NULL && match < 4; match++) {
				tok = strtok_r(NULL, " ", &save);
				if (match == 3)
					mp = tok;
			}
			while (tok != NULL && strcmp(tok, "-") != 0)
				tok = strtok_r(NULL, " ", &save);
			fstype = strtok_r(NULL, " ", &save);
			(void)strtok_r(NULL, " ", &save);
			opts = strtok_r(NULL, " \n", &save);
			if (mp == NULL || fstype == NULL || opts == NULL)
				continue;
			if (*ctrls == '\0') {
				if (strcmp(fstype, "cgroup2") != 0)
					continue;
			} else {
				if (strcmp(fstype, "cgroup") != 0)
					continue;
				/* Every controller of the line in the options. */
				match = 1;
				dup = xstrdup(ctrls);
				for (word = strtok_r(dup, ",", &save);
				    word != NULL; word = strtok_r(NULL, ",",
				    &save)) {
					if (strstr(opts, word) == NULL)
						match = 0;
				}
				free(dup);
				if (!match)
					continue;
			}
			xasprintf(&full, "%s%s/cgroup.procs", mp, rel);
			if (access(full, W_OK) == 0) {
				sb->cgroups = xreallocarray(sb->cgroups,
				    sb->ncgroup + 1, sizeof *sb->cgroups);
				sb->cgroups[sb->ncgroup++] = full;
			} else
				free(full);
			break;
		}
		fclose(m);
	}
	fclose(f);
	return (0);
}

static struct rt_sandbox *
rt_sandbox_find(const char *id)
{
	struct rt_sandbox	*sb;

	LIST_FOREACH(sb, &rt_sandboxes, entry) {
		if (strcmp(sb->id, id) == 0)
			return (sb);
	}
	return (NULL);
}

static void
rt_sandbox_inspect_cb(cJSON *result, const char *kind, const char *message,
    cJSON *details, void *arg)
{
	struct rt_wait		*w = arg;
	struct rt_sandbox	*sb;
	cJSON			*c, *st, *pid, *id;
	char			*msg, *cause;

	if (result == NULL) {
		w->cb(NULL, kind, message, tool_details("sandbox_id", w->id),
		    w->arg);
		cJSON_Delete(details);
		free(w->tenant);
		free(w);
		return;
	}
	c = cJSON_GetObjectItem(result, "container");
	st = cJSON_GetObjectItem(c, "State");
	pid = cJSON_GetObjectItem(st, "Pid");
	id = cJSON_GetObjectItem(c, "Id");
	if (!cJSON_IsTrue(cJSON_GetObjectItem(st, "Running")) ||
	    !cJSON_IsNumber(pid) || pid->valuedouble <= 0 ||
	    !cJSON_IsString(id)) {
		xasprintf(&msg, "the container of sandbox %s is %s", w->id,
		    c == NULL || cJSON_IsNull(c) ? "missing" : "not running");
		w->cb(NULL, TOOL_ERR_FAILED, msg, tool_details("sandbox_id",
		    w->id), w->arg);
		free(msg);
		cJSON_Delete(result);
		free(w->tenant);
		free(w);
		return;
	}
	if ((sb = rt_sandbox_find(w->id)) == NULL) {
		sb = xcalloc(1, sizeof *sb);
		strlcpy(sb->id, w->id, sizeof sb->id);
		sb->zctl = -1;
		LIST_INIT(&sb->sessions);
		LIST_INSERT_HEAD(&rt_sandboxes, sb, entry);
	}
	free(sb->container);
	sb->container = xstrdup(id->valuestring);
	free(sb->tenant);
	sb->tenant = w->tenant;
	w->tenant = NULL;
	if (sb->zjob != NULL && sb->zpid != (pid_t)pid->valuedouble) {
		/* A new container process: the zygote stood in the old. */
		job_cancel(sb->zjob);
		rt_zygote_lost(sb, "the container was restarted");
	}
	sb->pid = (pid_t)pid->valuedouble;
	sb->pid_start = state_process_start(sb->pid);
	free(sb->freezer);
	sb->freezer = cgroup_freezer_of(sb->pid);
	if (rt_sandbox_cgroups(sb, &cause) != 0) {
		w->cb(NULL, TOOL_ERR_FAILED, cause, tool_details("sandbox_id",
		    w->id), w->arg);
		free(cause);
		sb->pid = 0;
	} else
		w->cb(sb, NULL, NULL, NULL, w->arg);
	cJSON_Delete(result);
	free(w);
}

static struct event	*rt_sweep_ev;

/*
 * Every few seconds: a sandbox whose record has gone (another process
 * destroyed it) takes our sessions and zygote in it along.
 */
static void
rt_sweep_cb(evutil_socket_t fd, short events, void *arg)
{
	struct rt_sandbox	*sb;
	size_t			 i;

	for (i = 0; i < session_ncgroups_left; i++) {
		if (cgroup_session_remove(session_cgroups_left[i]) != 0)
			continue;
		free(session_cgroups_left[i]);
		session_cgroups_left[i--] =
		    session_cgroups_left[--session_ncgroups_left];
	}
	LIST_FOREACH(sb, &rt_sandboxes, entry) {
		if (sb->zjob == NULL && LIST_EMPTY(&sb->sessions))
			continue;
		if (state_record_gone(sb->id)) {
			log_info("sandbox %s was destroyed: ending our sessions"
			    " in it", sb->id);
			rt_sandbox_forget(sb->id);
			command_forget_sandbox(sb->id);
			cgroup_helper_remove(sb->id);
		}
	}
}

static void
rt_sweep_start(void)
{
	struct timeval	tv = { RT_SWEEP_SECONDS, 0 };

	if (rt_sweep_ev != NULL)
		return;
	rt_sweep_ev = event_new(ev_base, -1, EV_PERSIST, rt_sweep_cb, NULL);
	if (rt_sweep_ev == NULL)
		fatalx("%s: event_new", __func__);
	evtimer_add(rt_sweep_ev, &tv);
}

/*
 * The runtime view of a ready sandbox, for a runtime tool: cb(sb) or
 * cb(NULL, kind, message, details). Unknown sandbox: not_found; not
 * ready: operation_failed naming its state.
 */
void
rt_sandbox_get(const char *id, rt_cb cb, void *arg)
{
	struct rt_sandbox	*sb;
	struct rt_wait		*w;
	cJSON			*rec, *state;
	char			*msg, *tenant;

	rt_sweep_start();
	if (!util_id_valid(id)) {
		xasprintf(&msg, "invalid sandbox id: %.80s", id);
		cb(NULL, TOOL_ERR_INVALID, msg, tool_details("sandbox_id", id),
		    arg);
		free(msg);
		return;
	}
	if ((rec = state_record_read(id)) == NULL) {
		xasprintf(&msg, "no sandbox %s", id);
		cb(NULL, TOOL_ERR_NOT_FOUND, msg, tool_details("sandbox_id",
		    id), arg);
		free(msg);
		return;
	}
	state = cJSON_GetObjectItem(rec, "state");
	if (!cJSON_IsString(state) || strcmp(state->valuestring, "ready") !=
	    0) {
		xasprintf(&msg, "sandbox %s is %s, not ready", id,
		    cJSON_IsString(state) ? state->valuestring : "unknown");
		cJSON_Delete(rec);
		cb(NULL, TOOL_ERR_FAILED, msg, tool_details("sandbox_id", id),
		    arg);
		free(msg);
		return;
	}
	tenant = xstrdup(auth_record_tenant(rec));
	cJSON_Delete(rec);
	sb = rt_sandbox_find(id);
	if (sb != NULL && sb->pid > 0 &&
	    state_process_start(sb->pid) == sb->pid_start) {
		free(sb->tenant);
		sb->tenant = tenant;
		cb(sb, NULL, NULL, NULL, arg);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->tenant = tenant;
	strlcpy(w->id, id, sizeof w->id);
	w->cb = cb;
	w->arg = arg;
	sandbox_lookup(id, rt_sandbox_inspect_cb, w);
}

/* A session of this process by id, in any state. */
static struct session *
session_find_any(struct rt_sandbox *sb, const char *id)
{
	struct session	*s;

	LIST_FOREACH(s, &sb->sessions, entry) {
		if (strcmp(s->id, id) == 0)
			return (s);
	}
	return (NULL);
}

/* A live session of this process by id, or NULL. */
struct session *
session_find(struct rt_sandbox *sb, const char *id)
{
	struct session	*s;

	LIST_FOREACH(s, &sb->sessions, entry) {
		if (strcmp(s->id, id) == 0 && s->state != SESSION_ENDED &&
		    s->state != SESSION_IDLE)
			return (s);
	}
	return (NULL);
}

static void
session_free(struct session *s)
{
	session_count--;
	if (s->cgroup != NULL && cgroup_session_remove(s->cgroup) != 0) {
		/* Its last processes are on their way out: later. */
		session_cgroups_left = xreallocarray(session_cgroups_left,
		    session_ncgroups_left + 1, sizeof *session_cgroups_left);
		session_cgroups_left[session_ncgroups_left++] = s->cgroup;
		s->cgroup = NULL;
	}
	free(s->cgroup);
	if (s->freeze_ev != NULL)
		event_free(s->freeze_ev);
	if (s->idle_ev != NULL)
		event_free(s->idle_ev);
	if (s->ctl_ev != NULL)
		event_free(s->ctl_ev);
	if (s->ctl != -1)
		close(s->ctl);
	if (s->rootfd != -1)
		close(s->rootfd);
	LIST_REMOVE(s, entry);
	layer_stack_free(s->lease);
	free(s->lease_text);
	free(s->dir);
	free(s);
}

/* Remove the scratch once the init is gone (rename now, rm in a child). */
static void
session_trash(struct session *s)
{
	char	*to;

	to = state_trash_path(s->sb->id, s->id);
	if (rename(s->dir, to) != 0 && errno != ENOENT)
		log_warn("cannot remove %s", s->dir);
	free(to);
	sandbox_trash_soon();
}

/* An ended session goes once its init is gone and no command runs. */
static void
session_maybe_free(struct session *s)
{
	if (s->state != SESSION_ENDED || s->init > 0 || s->commands > 0 ||
	    s->publishing)
		return;
	session_trash(s);
	session_free(s);
}

/* A command of the session has finished. */
void
session_command_done(struct session *s)
{
	if (s->commands > 0)
		s->commands--;
	session_maybe_free(s);
}

/* The init has exited (killed by us, or the container went away). */
static void
session_init_died(int status, void *arg)
{
	struct session	*s = arg;
	void		(*cb)(struct session *, void *) = s->dead_cb;

	log_trace(TRACE_JOB, "session %s init %ld exited status=%d", s->id,
	    (long)s->init, status);
	s->init = 0;
	if (s->state == SESSION_IDLE) {
		session_end(s, "its init ended");
		return;
	}
	if (s->state != SESSION_ENDED)
		s->state = SESSION_DEAD;
	if (cb != NULL) {
		s->dead_cb = NULL;
		cb(s, s->dead_arg);
		return;
	}
	session_maybe_free(s);
}

/*
 * Kill every process of a session and call cb once they are gone (the
 * upper directory then no longer changes); the session is kept.
 */
void
session_when_dead(struct session *s, void (*cb)(struct session *, void *),
    void *arg)
{
	const char	*out[1] = { "finish" };

	if (s->init <= 0) {
		if (s->state == SESSION_LIVE)
			s->state = SESSION_DEAD;
		cb(s, arg);
		return;
	}
	s->dead_cb = cb;
	s->dead_arg = arg;
	/*
	 * The init ends the others and answers "finished"; its own end (and
	 * the namespaces' teardown) comes later, off the caller's path. If
	 * it cannot be asked, kill it and wait for it.
	 */
	if (s->ctl == -1 || nsexec_send(s->ctl, out, 1, NULL, 0) != 0)
		kill(s->init, SIGKILL);
}

/* The init reports every other process of the session gone. */
static void
session_finished(struct session *s)
{
	void	(*cb)(struct session *, void *) = s->dead_cb;

	if (cb == NULL)
		return;
	if (s->state == SESSION_LIVE)
		s->state = SESSION_DEAD;
	s->dead_cb = NULL;
	cb(s, s->dead_arg);
}

/* A kept session leaves the pool (to serve again, or to go). */
static void
session_unpark(struct session *s)
{
	if (s->state != SESSION_IDLE)
		return;
	evtimer_del(s->idle_ev);
	s->sb->nidle--;
	s->state = SESSION_DEAD;
}

static void
session_idle_cb(evutil_socket_t fd, short events, void *arg)
{
	struct session	*s = arg;

	/* Not needed for a while: the sandbox wants one spare fewer. */
	if (s->sb->spares_wanted > 0)
		s->sb->spares_wanted--;
	session_end(s, "kept too long unused");
}

/* How many spares a sandbox keeps: a quarter of its pids at most. */
static unsigned int
session_pool_max(void)
{
	long long	max = cfg_limit(LIMIT_SESSION_POOL);

	if (cfg->profile.pids > 0 && max > cfg->profile.pids / 4)
		max = cfg->profile.pids / 4;
	return ((unsigned int)max);
}

/* How many spares may be on their way at once: the builders' count. */
static unsigned int
session_build_max(void)
{
	long	n = sysconf(_SC_NPROCESSORS_ONLN);

	return (n < 1 ? 1 : (unsigned int)n);
}

/* Into the pool, for SESSION_KEEP_SECONDS. */
static void
session_keep(struct session *s)
{
	struct timeval	tv = { SESSION_KEEP_SECONDS, 0 };

	s->state = SESSION_IDLE;
	s->sb->nidle++;
	if (s->idle_ev == NULL &&
	    (s->idle_ev = evtimer_new(ev_base, session_idle_cb, s)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	evtimer_add(s->idle_ev, &tv);
}

/*
 * Build spares on the stack as it is now until the sandbox has as many
 * as it wants (kept ones and ones on their way); spares on an older
 * stack are let go.
 */
static void
session_prepare(struct rt_sandbox *sb)
{
	struct session		*s, *s1;
	struct layer_stack	*head;
	unsigned int		 have = 0, want, building = 0;
	char			*cause = NULL;

	if (sb->spares_wanted == 0 || session_pool_max() == 0)
		return;
	if ((head = layer_stack_read(sb->id, &cause)) == NULL) {
		log_warnx("spare sessions of sandbox %s: %s", sb->id, cause);
		free(cause);
		return;
	}
	LIST_FOREACH_SAFE(s, &sb->sessions, entry, s1) {
		if (s->state != SESSION_IDLE && !(s->spare &&
		    s->state == SESSION_STARTING))
			continue;
		if (s->lease->version != head->version) {
			/*
			 * Stale before it served: one fewer is wanted (a
			 * stack that changes often needs few spares).
			 */
			if (s->state == SESSION_IDLE) {
				if (sb->spares_wanted > 0)
					sb->spares_wanted--;
				session_end(s, "the stack has changed");
			}
			continue;
		}
		have++;
		if (s->state == SESSION_STARTING)
			building++;
	}
	/*
	 * Spares are built a few at a time (no more than the zygote's
	 * builders), so that sessions asked for now are not kept waiting
	 * behind them; each one up calls this again.
	 */
	want = sb->spares_wanted;
	if (want > session_pool_max())
		want = session_pool_max();
	while (have < want && building < session_build_max() &&
	    session_full(sb, NULL, NULL) == 0) {
		session_new(sb, 1, 0, NULL, NULL, NULL, 1);
		have++;
		building++;
	}
	layer_stack_free(head);
}

/*
 * End a session: kill everything in it; once its init is gone, remove
 * its scratch. Its changes, if not published, are lost.
 */
void
session_end(struct session *s, const char *why)
{
	cJSON	*attrs;

	if (s->state == SESSION_ENDED) {
		/* Maybe it waited for a publish that is now over. */
		session_maybe_free(s);
		return;
	}
	if (s->state == SESSION_IDLE) {
		/* Its session ended (and said so) when it was kept. */
		session_unpark(s);
		log_debug("kept session %s let go reason=%s", s->id, why);
	} else {
		attrs = cJSON_CreateObject();
		cJSON_AddStringToObject(attrs, "workspace_session_id", s->id);
		cJSON_AddStringToObject(attrs, "reason", why);
		telemetry_event(s->sb->id, NULL, NULL, "session.destroyed",
		    attrs);
		log_debug("session %s ended reason=%s", s->id, why);
	}
	s->state = SESSION_ENDED;
	if (s->rootfd != -1) {
		close(s->rootfd);
		s->rootfd = -1;
	}
	if (s->ctl_ev != NULL) {
		event_free(s->ctl_ev);
		s->ctl_ev = NULL;
	}
	if (s->ctl != -1) {
		close(s->ctl);
		s->ctl = -1;
	}
	/* A publish waiting for the seal goes on, copying. */
	session_sealed(s, 0);
	if (s->init > 0) {
		kill(s->init, SIGKILL);
		return;		/* session_init_died finishes */
	}
	session_maybe_free(s);
}

/*
 * A sandbox is being destroyed: end every session this process has in
 * it and forget what we knew of its container.
 */
void
rt_sandbox_forget(const char *id)
{
	struct rt_sandbox	*sb;
	struct session		*s, *s1;

	if ((sb = rt_sandbox_find(id)) == NULL)
		return;
	LIST_FOREACH_SAFE(s, &sb->sessions, entry, s1) {
		if (s->state != SESSION_STARTING)
			session_end(s, "sandbox destroyed");
	}
	if (sb->zjob != NULL)
		job_cancel(sb->zjob);
	rt_zygote_lost(sb, "the sandbox is being destroyed");
	sb->pid = 0;
}

/*
 * The container of a sandbox has died: end every session this process
 * has in it, for reason (the PID namespace of each session's init takes
 * all of the session's processes along), and its zygote (sessions being
 * made fail with why), and forget the container. The container's
 * cgroups, as cgroup.procs paths, are handed to the caller (who frees
 * them; NULL when none were learnt), so that whatever is left in them
 * can be killed.
 */
char **
rt_sandbox_lost(const char *id, const char *reason, const char *why,
    size_t *n)
{
	struct rt_sandbox	*sb;
	struct session		*s, *s1;
	char			**cgroups;

	*n = 0;
	if ((sb = rt_sandbox_find(id)) == NULL)
		return (NULL);
	LIST_FOREACH_SAFE(s, &sb->sessions, entry, s1) {
		if (s->state != SESSION_STARTING)
			session_end(s, reason);
	}
	if (sb->zjob != NULL)
		job_cancel(sb->zjob);
	rt_zygote_lost(sb, why);
	sb->pid = 0;
	cgroups = sb->cgroups;
	*n = sb->ncgroup;
	sb->cgroups = NULL;
	sb->ncgroup = 0;
	return (cgroups);
}

static int	rt_zygote_send(struct rt_sandbox *, struct session *);
static void	rt_zygote_wait(struct rt_sandbox *);
static void	rt_zygote_write_cb(evutil_socket_t, short, void *);
static void	session_start_fail(struct session *, const char *);

static int	rt_state_fd = -1;

/* A descriptor of the state directory, for zygotes to build from. */
static int
rt_state_dir(void)
{
	if (rt_state_fd == -1)
		rt_state_fd = open(cfg->state_dir, O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
	return (rt_state_fd);
}

/* Messages from a session's init: command pids, exits and errors. */
static void
session_ctl_cb(evutil_socket_t fd, short events, void *arg)
{
	struct session	*s = arg;
	char		*buf, *f[NSEXEC_FIELDS_MAX];
	int		 nf, fds[NSEXEC_FDS_MAX], nfds, i;

	buf = xmalloc(4096);
	for (;;) {
		nf = nsexec_recv(fd, buf, 4096, f, fds, &nfds);
		if (nf == 1 && strcmp(f[0], "root") == 0 && nfds == 1 &&
		    s->rootfd == -1) {
			s->rootfd = fds[0];
			nfds = 0;
			if (s->state == SESSION_STARTING && s->init > 0)
				session_started(s);
			if (s->ctl_ev == NULL)
				break;		/* it ended at once */
			continue;
		}
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		if (nf == 2 && strcmp(f[0], "sealed") == 0) {
			session_sealed(s, strcmp(f[1], "1") == 0);
			if (s->ctl_ev == NULL)
				break;		/* the session ended */
			continue;
		}
		if (nf >= 1 && strcmp(f[0], "finished") == 0) {
			session_finished(s);
			if (s->ctl_ev == NULL)
				break;		/* the session was freed */
			continue;
		}
		if (nf > 0) {
			command_session_message(s, f, nf);
			continue;
		}
		if (nf == -1 && errno == EAGAIN)
			break;
		/* The init is gone: its commands went with it. */
		event_free(s->ctl_ev);
		s->ctl_ev = NULL;
		close(s->ctl);
		s->ctl = -1;
		if (s->state == SESSION_STARTING) {
			free(buf);
			session_start_fail(s, "the session's init ended");
			return;
		}
		/* A publish waiting for the seal goes on, copying. */
		session_sealed(s, 0);
		command_session_gone(s);
		break;
	}
	free(buf);
}

/* Forget the zygote: its sessions in the making fail. */
static void
rt_zygote_lost(struct rt_sandbox *sb, const char *why)
{
	struct session	*s, *s1;

	if (sb->zev != NULL) {
		event_free(sb->zev);
		sb->zev = NULL;
	}
	if (sb->zwev != NULL) {
		event_free(sb->zwev);
		sb->zwev = NULL;
	}
	if (sb->zctl != -1) {
		close(sb->zctl);
		sb->zctl = -1;
	}
	sb->zready = 0;
	sb->zjob = NULL;
	LIST_FOREACH_SAFE(s, &sb->sessions, entry, s1) {
		if (s->state == SESSION_STARTING)
			session_start_fail(s, why);
	}
}

/* The zygote's answers to "session" requests. */
static void
rt_zygote_cb(evutil_socket_t fd, short events, void *arg)
{
	struct rt_sandbox	*sb = arg;
	struct session		*s;
	char			 buf[4096], *f[NSEXEC_FIELDS_MAX], *msg;
	const char		*errstr;
	int			 nf, fds[NSEXEC_FDS_MAX], nfds, i;

	for (;;) {
		nf = nsexec_recv(fd, buf, sizeof buf, f, fds, &nfds);
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		if (nf == -1 && errno == EAGAIN)
			return;
		if (nf <= 0) {
			rt_zygote_lost(sb, "the sandbox's zygote ended");
			return;
		}
		if (nf != 4 || strcmp(f[0], "session") != 0)
			continue;
		s = session_find_any(sb, f[1]);
		if (s == NULL || s->state != SESSION_STARTING)
			continue;
		if (strcmp(f[2], "ok") != 0) {
			xasprintf(&msg, "%s", f[3]);
			session_start_fail(s, msg);
			free(msg);
			continue;
		}
		s->init = (pid_t)strtonum(f[3], 1, INT32_MAX, &errstr);
		if (errstr != NULL) {
			session_start_fail(s, "the zygote gave a bad pid");
			continue;
		}
		if (s->rootfd != -1)
			session_started(s);
	}
}

static void
rt_zygote_line(const char *line, void *arg)
{
	struct rt_sandbox	*sb = arg;

	if (strcmp(line, "ready") == 0) {
		sb->zready = 1;
		rt_zygote_write_cb(-1, 0, sb);
	} else if (strncmp(line, "error ", 6) == 0)
		rt_zygote_lost(sb, line + 6);
}

static void
rt_zygote_done(int status, struct evbuffer *report, void *arg)
{
	struct rt_sandbox	*sb = arg;

	log_trace(TRACE_JOB, "zygote of %s exited status=%d", sb->id, status);
	rt_zygote_lost(sb, "the sandbox's zygote ended");
}

/* Start the sandbox's zygote (sessions wait until it is ready). */
static int
rt_zygote_start(struct rt_sandbox *sb, char **cause)
{
	struct nsexec_zygote	 z;
	int			 sv[2], keep[2], sndbuf = NSEXEC_MSG_MAX * 4;

	if (rt_state_dir() == -1) {
		xasprintf(cause, "cannot open %s: %s", cfg->state_dir,
		    strerror(errno));
		return (-1);
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (-1);
	}
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	memset(&z, 0, sizeof z);
	z.container_pid = sb->pid;
	z.cgroup_procs = sb->cgroups;
	z.ncgroup = sb->ncgroup;
	z.argv0 = nsexec_argv(&z.argv_len);
	keep[0] = rt_state_dir();
	keep[1] = sv[1];
	sb->zjob = job_fork_keep("zygote", nsexec_zygote, &z, keep, 2,
	    rt_zygote_done, sb);
	job_on_line(sb->zjob, rt_zygote_line, sb);
	close(sv[1]);
	sb->zctl = sv[0];
	util_set_nonblock(sb->zctl);
	sb->zpid = sb->pid;
	sb->zev = event_new(ev_base, sb->zctl, EV_READ | EV_PERSIST,
	    rt_zygote_cb, sb);
	if (sb->zev == NULL)
		fatalx("%s: event_new", __func__);
	event_add(sb->zev, NULL);
	return (0);
}

/* A path under the state directory, relative to it, for the zygote. */
static const char *
rt_relative(const char *path)
{
	size_t	len = strlen(cfg->state_dir);

	if (strncmp(path, cfg->state_dir, len) == 0 && path[len] == '/')
		return (path + len + 1);
	return (NULL);
}

/* The zygote's socket has room again: send what waits, in order. */
static void
rt_zygote_write_cb(evutil_socket_t fd, short events, void *arg)
{
	struct rt_sandbox	*sb = arg;
	struct session		*s, **pending = NULL;
	size_t			 n = 0, i;

	/* Oldest first: the list holds the newest at its head. */
	LIST_FOREACH(s, &sb->sessions, entry) {
		if (s->state == SESSION_STARTING && !s->requested) {
			pending = xreallocarray(pending, n + 1,
			    sizeof *pending);
			pending[n++] = s;
		}
	}
	for (i = n; i > 0; i--) {
		if (rt_zygote_send(sb, pending[i - 1]) == 1)
			break;		/* full again: wait again */
	}
	free(pending);
}

/* Wait until the zygote's socket can take another request. */
static void
rt_zygote_wait(struct rt_sandbox *sb)
{
	if (sb->zwev == NULL && (sb->zwev = event_new(ev_base, sb->zctl,
	    EV_WRITE, rt_zygote_write_cb, sb)) == NULL)
		fatalx("%s: event_new", __func__);
	if (!event_pending(sb->zwev, EV_WRITE, NULL))
		event_add(sb->zwev, NULL);
}

/*
 * Ask the zygote for the session, passing it its control socket: 0 when
 * asked, 1 when it must wait for room, -1 when the session failed (and
 * is gone).
 */
static int
rt_zygote_send(struct rt_sandbox *sb, struct session *s)
{
	const char	*f[NSEXEC_FIELDS_MAX];
	char		*dir, *procs = NULL;
	int		 sv[2], nf = 0, sndbuf = NSEXEC_MSG_MAX * 2;
	size_t		 i;

	s->requested = 1;
	if (s->lease->n + 6 > NSEXEC_FIELDS_MAX) {
		session_start_fail(s, "the layer stack is too deep for a"
		    " session; squash it");
		return (-1);
	}
	xasprintf(&dir, "sandboxes/%s/sessions/%s", sb->id, s->id);
	f[nf++] = "session";
	f[nf++] = s->id;
	f[nf++] = s->isolated ? "1" : "0";
	if (s->cgroup != NULL)
		xasprintf(&procs, "%s/cgroup.procs", s->cgroup);
	f[nf++] = procs != NULL ? procs : "";
	f[nf++] = dir;
	f[nf++] = s->lease_text;
	for (i = 0; i < s->lease->n; i++) {
		if ((f[nf++] = rt_relative(s->lease->paths[i])) == NULL) {
			free(dir);
			free(procs);
			session_start_fail(s, "a layer lies outside the state"
			    " directory");
			return (-1);
		}
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		free(dir);
		free(procs);
		session_start_fail(s, strerror(errno));
		return (-1);
	}
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	if (nsexec_send(sb->zctl, f, nf, &sv[1], 1) != 0) {
		close(sv[0]);
		close(sv[1]);
		free(dir);
		free(procs);
		if (errno == EAGAIN) {
			/* The zygote is behind: send it when it has room. */
			s->requested = 0;
			rt_zygote_wait(sb);
			return (1);
		}
		session_start_fail(s, strerror(errno));
		return (-1);
	}
	close(sv[1]);
	free(dir);
	free(procs);
	free(s->lease_text);
	s->lease_text = NULL;
	s->ctl = sv[0];
	util_set_nonblock(s->ctl);
	s->ctl_ev = event_new(ev_base, s->ctl, EV_READ | EV_PERSIST,
	    session_ctl_cb, s);
	if (s->ctl_ev == NULL)
		fatalx("%s: event_new", __func__);
	event_add(s->ctl_ev, NULL);
	return (0);
}

/* The session could not be made: answer its creator and clean up. */
static void
session_start_fail(struct session *s, const char *why)
{
	session_cb	 cb = s->start_cb;
	void		*arg = s->start_arg;
	char		*msg;

	xasprintf(&msg, "cannot start a workspace session in sandbox %s: %s",
	    s->sb->id, why);
	log_warnx("%s", msg);
	if (s->ctl_ev != NULL) {
		event_free(s->ctl_ev);
		s->ctl_ev = NULL;
	}
	if (s->ctl != -1) {
		close(s->ctl);
		s->ctl = -1;
	}
	s->state = SESSION_ENDED;
	/* The container may have been replaced: learn it again. */
	s->sb->pid = 0;
	session_trash(s);
	session_free(s);
	if (cb != NULL)
		cb(NULL, TOOL_ERR_FAILED, msg, arg);
	free(msg);
}

/* The session is live: say so, and to whom asked for it. */
static void
session_live(struct session *s)
{
	cJSON	*attrs;

	s->state = SESSION_LIVE;
	attrs = cJSON_CreateObject();
	cJSON_AddStringToObject(attrs, "workspace_session_id", s->id);
	cJSON_AddStringToObject(attrs, "network_profile", s->isolated ?
	    "isolated" : "shared");
	cJSON_AddNumberToObject(attrs, "base_manifest_version",
	    s->lease->version);
	telemetry_event(s->sb->id, NULL, NULL, "session.created", attrs);
	s->start_cb(s, NULL, NULL, s->start_arg);
}

/* The init is up: the session is live. */
static void
session_started(struct session *s)
{
	job_watch(s->init, session_init_died, s);
	if (s->spare) {
		/* Built ahead of need and not asked for yet: kept. */
		s->spare = 0;
		session_keep(s);
		session_prepare(s->sb);
		return;
	}
	session_live(s);
}

/* The lease of a session: what it stands on, and whose it is. */
static char *
session_lease_text(struct session *s)
{
	cJSON	*lease;
	char	*text;

	lease = cJSON_CreateObject();
	cJSON_AddStringToObject(lease, "workspace_session_id", s->id);
	cJSON_AddNumberToObject(lease, "manifest_version", s->lease->version);
	cJSON_AddItemToObject(lease, "layers", layer_stack_json(s->lease));
	cJSON_AddItemToObject(lease, "owner", state_owner_self());
	cJSON_AddStringToObject(lease, "network_profile", s->isolated ?
	    "isolated" : "shared");
	cJSON_AddBoolToObject(lease, "automatic", s->automatic);
	if (s->cgroup != NULL)
		cJSON_AddStringToObject(lease, "cgroup", s->cgroup);
	cJSON_AddNumberToObject(lease, "created_at_ms", (double)now_ms());
	text = util_json_print(lease);
	cJSON_Delete(lease);
	return (text);
}

/*
 * A spare on the stack at version, serving as a new automatic session:
 * no user process has entered it, and its id was never given out, so it
 * is live at once as it is. Spares on another version are let go.
 * Returns 0 when none would do.
 */
static int
session_reuse(struct rt_sandbox *sb, struct layer_stack *head,
    int isolated, session_cb cb, void *arg)
{
	struct session	*s, *s1, *found = NULL;

	LIST_FOREACH_SAFE(s, &sb->sessions, entry, s1) {
		if (s->state != SESSION_IDLE)
			continue;
		if (s->lease->version != head->version) {
			session_end(s, "the stack has changed");
			continue;
		}
		if (found == NULL && s->isolated == isolated)
			found = s;
	}
	if ((s = found) == NULL)
		return (0);
	session_unpark(s);
	s->start_cb = cb;
	s->start_arg = arg;
	session_live(s);
	return (1);
}

/* Whether two sandboxes belong to the same tenant. */
int
rt_sandbox_same_tenant(struct rt_sandbox *a, struct rt_sandbox *b)
{
	return (a->tenant != NULL && b->tenant != NULL &&
	    strcmp(a->tenant, b->tenant) == 0);
}

/* Sessions of a sandbox that count against the limits (spares do not). */
static unsigned int
session_counted(struct rt_sandbox *sb)
{
	struct session	*s;
	unsigned int	 n = 0;

	LIST_FOREACH(s, &sb->sessions, entry) {
		if (s->state != SESSION_ENDED && s->state != SESSION_IDLE &&
		    !s->spare)
			n++;
	}
	return (n);
}

/*
 * Whether a sandbox can take no more sessions of this process: at most
 * sessions-per-sandbox in it, sessions-per-tenant in its tenant's, and
 * sessions-total in all (fewer when the
 * descriptors we may open would not serve that many: each session holds
 * two). 0, or 1 with the limit's name and a message when asked.
 */
int
session_full(struct rt_sandbox *sb, const char **limit, char **message)
{
	static long long	 fdmax = -1;
	struct rt_sandbox	*other;
	struct rlimit		 rl;
	unsigned int		 n;
	long long		 total;

	/* Spares are bounded by the pool, and ask for nothing. */
	if ((n = session_counted(sb)) >= cfg_limit(LIMIT_SESSIONS_PER_SANDBOX)) {
		if (limit != NULL) {
			*limit = "sessions-per-sandbox";
			xasprintf(message, "sandbox %s has %u workspace"
			    " sessions, the most it may have (limit"
			    " sessions-per-sandbox); end one first", sb->id, n);
		}
		return (1);
	}
	n = 0;
	LIST_FOREACH(other, &rt_sandboxes, entry) {
		if (rt_sandbox_same_tenant(sb, other))
			n += session_counted(other);
	}
	if (n >= cfg_limit(LIMIT_SESSIONS_PER_TENANT)) {
		if (limit != NULL) {
			*limit = "sessions-per-tenant";
			xasprintf(message, "the sandboxes of tenant %s have %u"
			    " workspace sessions, the most one tenant may have"
			    " (limit sessions-per-tenant); end one first",
			    sb->tenant, n);
		}
		return (1);
	}
	if (fdmax == -1)
		fdmax = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY ? (long long)rl.rlim_cur :
		    1048576;
	total = cfg_limit(LIMIT_SESSIONS_TOTAL);
	if (total > (fdmax - SESSION_FD_RESERVE) / 3)
		total = (fdmax - SESSION_FD_RESERVE) / 3;
	if ((long long)session_count >= total) {
		if (limit != NULL) {
			*limit = "sessions-total";
			xasprintf(message, "the server has %u workspace sessions,"
			    " the most it may have (limit sessions-total, and"
			    " the descriptors it may open); try again when"
			    " some have ended", session_count);
		}
		return (1);
	}
	return (0);
}

/*
 * Start a workspace session on the stack as it is now. cb(session) once
 * it is live, or cb(NULL, kind, message). An automatic one takes a kept
 * spare on the same stack if there is one, or a spare being built on it,
 * before it builds its own. Spares taken are built again when the
 * automatic session is over, on the stack its publish leaves (built at
 * once, most would be stale by then).
 */
void
session_create(struct rt_sandbox *sb, int automatic, int isolated,
    session_cb cb, void *arg)
{
	struct session		*s;
	struct layer_stack	*head;
	char			*cause = NULL;

	if (!automatic) {
		session_new(sb, 0, isolated, cb, arg, NULL, 0);
		return;
	}
	if ((head = layer_stack_read(sb->id, &cause)) == NULL) {
		cb(NULL, TOOL_ERR_INTERNAL, cause, arg);
		free(cause);
		return;
	}
	if (sb->nidle > 0 && session_reuse(sb, head, isolated, cb, arg)) {
		layer_stack_free(head);
		return;
	}
	LIST_FOREACH(s, &sb->sessions, entry) {
		if (s->spare && s->state == SESSION_STARTING &&
		    s->isolated == isolated &&
		    s->lease->version == head->version) {
			s->spare = 0;
			s->start_cb = cb;
			s->start_arg = arg;
			layer_stack_free(head);
			return;
		}
	}
	/* None was ready: the sandbox wants one more from now on. */
	if (sb->spares_wanted < session_pool_max())
		sb->spares_wanted++;
	session_new(sb, 1, isolated, cb, arg, head, 0);
	session_prepare(sb);
}

/* A session built anew, on head (NULL: read it); a spare asks nobody. */
static void
session_new(struct rt_sandbox *sb, int automatic, int isolated,
    session_cb cb, void *arg, struct layer_stack *head, int spare)
{
	struct session		*s;
	char			 rnd[13], name[32], *cause = NULL;

	s = xcalloc(1, sizeof *s);
	util_random_hex(rnd, 12);
	snprintf(s->id, sizeof s->id, "ws-%s", rnd);
	s->sb = sb;
	s->automatic = automatic;
	s->isolated = isolated;
	s->ctl = -1;
	s->rootfd = -1;
	s->state = SESSION_STARTING;
	s->start_cb = cb;
	s->start_arg = arg;
	s->spare = spare;
	s->dir = state_path("sandboxes/%s/sessions/%s", sb->id, s->id);
	LIST_INSERT_HEAD(&sb->sessions, s, entry);
	session_count++;
	if (sb->freezer != NULL) {
		snprintf(name, sizeof name, "smcp-%s", s->id);
		if ((s->cgroup = cgroup_session_create(sb->freezer, name,
		    &cause)) == NULL)
			goto fail;
	}

	if ((s->lease = head) == NULL &&
	    (s->lease = layer_stack_read(sb->id, &cause)) == NULL)
		goto fail;
	/*
	 * The builder makes the session's directory (upper, work) and
	 * writes this lease before it mounts anything: directories are
	 * made side by side in builders, not one after another here.
	 */
	s->lease_text = session_lease_text(s);

	if (sb->zjob == NULL && rt_zygote_start(sb, &cause) != 0)
		goto fail;
	if (sb->zready)
		rt_zygote_send(sb, s);
	return;

fail:
	s->state = SESSION_ENDED;
	session_trash(s);
	session_free(s);
	if (cb != NULL)
		cb(NULL, TOOL_ERR_INTERNAL, cause, arg);
	else
		log_warnx("a spare session in sandbox %s: %s", sb->id, cause);
	free(cause);
}

struct session_publish {
	struct session		*s;
	session_publish_cb	 cb;
	void			*arg;
	struct publish_args	 a;
	char			*upper;
	char			*owner;
};

/* The "publish" object of a result, from a committed publish's report. */
cJSON *
session_publish_fields(cJSON *rep)
{
	cJSON	*p, *v;

	p = cJSON_CreateObject();
	cJSON_AddItemToObject(p, "layer_id", cJSON_Duplicate(
	    cJSON_GetObjectItem(rep, "layer_id"), 1));
	cJSON_AddItemToObject(p, "manifest_version", cJSON_Duplicate(
	    cJSON_GetObjectItem(rep, "manifest_version"), 1));
	cJSON_AddItemToObject(p, "changed_paths", cJSON_Duplicate(
	    cJSON_GetObjectItem(rep, "changed_paths"), 1));
	if ((v = cJSON_GetObjectItem(rep, "changed_path_count")) != NULL)
		cJSON_AddItemToObject(p, "changed_path_count",
		    cJSON_Duplicate(v, 1));
	return (p);
}

/* The end of a publish, or of its start: answer with rep (consumed). */
static void
session_publish_end(struct session_publish *sp, cJSON *rep)
{
	struct session		*s = sp->s;
	struct rt_sandbox	*sb = s->sb;
	cJSON			*attrs, *v;
	int			 published;

	if (s->cgroup != NULL && !s->automatic)
		cgroup_freeze(s->cgroup, 0);
	/* Rejected, a managed session goes on: writable again. */
	if (!s->automatic && s->ctl != -1 &&
	    cJSON_GetObjectItem(rep, "reject_class") != NULL) {
		const char	*out[1] = { "unseal" };

		nsexec_send(s->ctl, out, 1, NULL, 0);
	}
	s->publishing = 0;
	attrs = cJSON_CreateObject();
	cJSON_AddStringToObject(attrs, "workspace_session_id", s->id);
	if ((v = cJSON_GetObjectItem(rep, "layer_id")) != NULL) {
		cJSON_AddItemToObject(attrs, "layer_id", cJSON_Duplicate(v, 1));
		cJSON_AddItemToObject(attrs, "manifest_version", cJSON_Duplicate(
		    cJSON_GetObjectItem(rep, "manifest_version"), 1));
		telemetry_event(sb->id, NULL, NULL, "layer.published", attrs);
	} else if ((v = cJSON_GetObjectItem(rep, "reject_class")) != NULL) {
		cJSON_AddItemToObject(attrs, "reject_class",
		    cJSON_Duplicate(v, 1));
		telemetry_event(sb->id, NULL, NULL, "publish.rejected", attrs);
		notice(sb->tenant, NOTICE_WARNING, "publish.rejected", sb->id,
		    "the publish of workspace session %s was rejected (%s):"
		    " %s", s->id, cJSON_IsString(v) ? v->valuestring : "?",
		    cJSON_IsString(cJSON_GetObjectItem(rep, "message")) ?
		    cJSON_GetObjectItem(rep, "message")->valuestring : "");
	} else
		cJSON_Delete(attrs);
	published = cJSON_GetObjectItem(rep, "layer_id") != NULL ||
	    s->automatic;
	sp->cb(s, rep, sp->arg);
	cJSON_Delete(rep);
	free(sp->upper);
	free(sp->owner);
	free(sp);
	/* A new stack, or an automatic session over: spares for the next. */
	if (published)
		session_prepare(sb);
}

/* A refusal before the publishing process ran. */
static void
session_publish_refuse(struct session_publish *sp, const char *class,
    const char *message)
{
	cJSON	*rep;

	rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "reject_class", class);
	cJSON_AddStringToObject(rep, "message", message);
	cJSON_AddObjectToObject(rep, "details");
	session_publish_end(sp, rep);
}

static void
session_publish_done(int status, struct evbuffer *report, void *arg)
{
	struct session_publish	*sp = arg;
	cJSON			*rep;
	size_t			 len = evbuffer_get_length(report);

	rep = len != 0 ? cJSON_ParseWithLength((const char *)
	    evbuffer_pullup(report, len), len) : NULL;
	if (!cJSON_IsObject(rep)) {
		cJSON_Delete(rep);
		rep = cJSON_CreateObject();
		cJSON_AddStringToObject(rep, "reject_class", "storage_error");
		cJSON_AddStringToObject(rep, "message", "the publishing"
		    " process ended without a report (it may have run out of"
		    " the memory or time its sandbox's helpers may use)");
		cJSON_AddObjectToObject(rep, "details");
	}
	session_publish_end(sp, rep);
}

/* The session's processes are still: the publishing process may go. */
static void
session_publish_start(struct session_publish *sp)
{
	/* Answered as soon as the report is whole; the reap comes after. */
	job_early(job_helper("publish", sp->s->sb->id, sp->s->sb->tenant,
	    publish_child, &sp->a, NULL, 0, session_publish_done, sp));
}

/* Wait for the session's freezer group to report every process frozen. */
static void
session_freeze_cb(evutil_socket_t fd, short events, void *arg)
{
	struct session_publish	*sp = arg;
	struct session		*s = sp->s;
	struct timeval		 tv = { 0, 1000 };
	int			 r;

	r = cgroup_frozen(s->cgroup);
	if (r == 1) {
		session_publish_start(sp);
		return;
	}
	if (r == -1 || ++s->freeze_tries >= SESSION_FREEZE_TRIES) {
		log_warnx("session %s: its processes could not be frozen for"
		    " a publish", s->id);
		session_publish_refuse(sp, "capture_failed", "the session's"
		    " processes could not be stopped for the publish (one may"
		    " be stuck in the kernel); try again");
		return;
	}
	evtimer_add(s->freeze_ev, &tv);
}

/*
 * Publish a session's changes as one layer owned by owner, in a helper
 * process (publish.c). The processes of a managed session are frozen
 * first and thawed once the publish is over, so the tree it captures
 * cannot change under it (an automatic session's are gone already).
 * cb(session, report) gets the report.
 */
void
session_publish(struct session *s, const char *owner,
    session_publish_cb cb, void *arg)
{
	static const char	*seal[1] = { "seal" };
	struct session_publish	*sp;
	struct rt_sandbox	*sb;
	struct dirent		*de;
	DIR			*d;
	char			*upper;
	int			 empty = 1, fd, automatic;
	cJSON			*rep;

	xasprintf(&upper, "%s/upper", s->dir);
	/* Nothing changed (the common case of a read-only command). */
	if ((fd = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0) {
				empty = 0;
				break;
			}
		}
		closedir(d);
	} else {
		if (fd != -1)
			close(fd);
		empty = 0;
	}
	if (empty) {
		free(upper);
		rep = cJSON_CreateObject();
		cJSON_AddNullToObject(rep, "publish");
		sb = s->sb;
		automatic = s->automatic;
		cb(s, rep, arg);
		cJSON_Delete(rep);
		if (automatic)
			session_prepare(sb);
		return;
	}
	sp = xcalloc(1, sizeof *sp);
	sp->s = s;
	sp->cb = cb;
	sp->arg = arg;
	sp->upper = upper;
	sp->owner = xstrdup(owner);
	sp->a.sandbox = s->sb->id;
	sp->a.upper = sp->upper;
	sp->a.base = s->lease;
	sp->a.owner = sp->owner;
	s->publishing = 1;
	/* First /workspace read-only (see session_sealed), by its init. */
	if (s->init > 0 && s->ctl != -1 && nsexec_send(s->ctl, seal, 1,
	    NULL, 0) == 0) {
		s->sealing = sp;
		return;
	}
	s->sealing = sp;
	session_sealed(s, 0);
}

/*
 * The session's /workspace is read-only now (sealed), or could not be
 * made so: a file of it is open for writing somewhere, maybe in another
 * session that holds a descriptor of it. Sealed, no process can change
 * an inode of the upper directory any more, so the publish links them
 * into the layer; otherwise it copies them, so that no writer anywhere
 * can change a published layer. Then the processes of a managed session
 * are frozen and the publishing process starts.
 */
static void
session_sealed(struct session *s, int sealed)
{
	struct session_publish	*sp = s->sealing;

	if (sp == NULL)
		return;
	s->sealing = NULL;
	sp->a.copy = !sealed;
	if (s->cgroup == NULL || s->automatic) {
		session_publish_start(sp);
		return;
	}
	if (cgroup_freeze(s->cgroup, 1) != 0) {
		session_publish_refuse(sp, "capture_failed", "the session's"
		    " processes could not be stopped for the publish");
		return;
	}
	s->freeze_tries = 0;
	if (s->freeze_ev != NULL)
		event_free(s->freeze_ev);	/* a past publish's */
	if ((s->freeze_ev = evtimer_new(ev_base, session_freeze_cb,
	    sp)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	session_freeze_cb(-1, 0, sp);
}

struct session_size {
	struct session		*s;
	void			(*cb)(struct session *, unsigned long long,
				    void *);
	void			*arg;
	char			*sandbox;
	char			*upper;
};

/* The child: the bytes of regular files in the upper directory. */
static int
session_size_child(void *arg, int fd)
{
	struct session_size	*z = arg;
	const char		*rw[1];
	char			*dir, *cause = NULL;
	int			 r;

	dir = state_path("sandboxes/%s", z->sandbox);
	rw[0] = dir;
	r = confine_enter(rw, 1, NULL, 0, &cause);
	free(dir);
	if (r != 0) {
		log_warnx("session size: %s", cause);
		return (1);
	}
	dprintf(fd, "%llu\n", tree_size(z->upper));
	return (0);
}

static void
session_size_done(int status, struct evbuffer *report, void *arg)
{
	struct session_size	*z = arg;
	size_t			 len = evbuffer_get_length(report);
	char			*text;
	unsigned long long	 bytes = 0;

	if (len != 0) {
		text = xstrndup((const char *)evbuffer_pullup(report, len),
		    len);
		bytes = strtoull(text, NULL, 10);
		free(text);
	}
	z->s->publishing = 0;
	z->cb(z->s, bytes, z->arg);
	free(z->sandbox);
	free(z->upper);
	free(z);
}

/* How many bytes a session's changes hold (walked in a helper). */
void
session_upper_size(struct session *s,
    void (*cb)(struct session *, unsigned long long, void *), void *arg)
{
	struct session_size	*z;

	z = xcalloc(1, sizeof *z);
	z->s = s;
	z->cb = cb;
	z->arg = arg;
	z->sandbox = xstrdup(s->sb->id);
	xasprintf(&z->upper, "%s/upper", s->dir);
	s->publishing = 1;	/* nothing else may start meanwhile */
	job_early(job_helper("session-size", s->sb->id, s->sb->tenant,
	    session_size_child, z, NULL, 0, session_size_done, z));
}
