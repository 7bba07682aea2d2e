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
 * An automatic session that ends clean (nothing to publish, nothing left
 * in its upper directory or /tmp, no process) is kept, SESSION_IDLE, for
 * SESSION_KEEP_SECONDS: the next automatic session on the same stack
 * version takes it under a new id instead of building one. After a
 * publish one spare is built ahead on the new stack and kept the same
 * way. Kept sessions are in the sandbox's list but not found by id.
 */

#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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
/* How long a clean automatic session is kept for the next one. */
#define SESSION_KEEP_SECONDS	10

static LIST_HEAD(, rt_sandbox)	rt_sandboxes = LIST_HEAD_INITIALIZER(rt_sandboxes);

static void	rt_zygote_lost(struct rt_sandbox *, const char *);
static void	session_started(struct session *);
static void	session_unpark(struct session *);
static void	session_keep(struct session *);
static unsigned int session_pool_max(void);
static void	session_prepare(struct rt_sandbox *);
static void	session_new(struct rt_sandbox *, int, int, session_cb, void *,
		    struct layer_stack *, int);

struct rt_wait {
	char		 id[65];
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
	if (sb->pid != (pid_t)pid->valuedouble && sb->zjob != NULL) {
		/* A new container process: the zygote stood in the old. */
		job_cancel(sb->zjob);
		rt_zygote_lost(sb, "the container was restarted");
	}
	sb->pid = (pid_t)pid->valuedouble;
	sb->pid_start = state_process_start(sb->pid);
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
	struct stat		 st;
	char			*path;

	LIST_FOREACH(sb, &rt_sandboxes, entry) {
		if (sb->zjob == NULL && LIST_EMPTY(&sb->sessions))
			continue;
		path = state_path("sandboxes/%s.json", sb->id);
		if (stat(path, &st) != 0 && errno == ENOENT) {
			log_info("sandbox %s was destroyed: ending our sessions"
			    " in it", sb->id);
			command_forget_sandbox(sb->id);
			rt_sandbox_forget(sb->id);
		}
		free(path);
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
	char			*msg;

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
	cJSON_Delete(rec);
	sb = rt_sandbox_find(id);
	if (sb != NULL && sb->pid > 0 &&
	    state_process_start(sb->pid) == sb->pid_start) {
		cb(sb, NULL, NULL, NULL, arg);
		return;
	}
	w = xcalloc(1, sizeof *w);
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
	char	*to, name[32];

	snprintf(name, sizeof name, "%s-", s->id);
	util_random_hex(name + strlen(name), 8);
	to = state_trash_path(s->sb->id, name);
	if (rename(s->dir, to) != 0 && errno != ENOENT)
		log_warn("cannot remove %s", s->dir);
	free(to);
	sandbox_trash_soon();
}

/* An ended session goes once its init is gone and no command runs. */
static void
session_maybe_free(struct session *s)
{
	if (s->state != SESSION_ENDED || s->init > 0 || s->commands > 0)
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

	session_end(s, "kept too long unused");
}

/*
 * An automatic session whose command has finished: if it left nothing
 * behind (no process, nothing in its upper directory, /workspace's
 * attributes and an empty /tmp as they were made), its session is over
 * but the namespaces, overlay and init are kept for a while to serve the
 * next automatic session on the same stack; otherwise it ends.
 */
void
session_recycle(struct session *s, const char *why)
{
	cJSON	*attrs;

	if (!s->reusable || !s->automatic || s->state != SESSION_DEAD ||
	    s->init <= 0 || s->ctl == -1 || s->rootfd == -1 ||
	    s->commands != 0 || s->publishing || s->dead_cb != NULL ||
	    s->sb->nidle >= session_pool_max()) {
		session_end(s, why);
		return;
	}
	attrs = cJSON_CreateObject();
	cJSON_AddStringToObject(attrs, "workspace_session_id", s->id);
	cJSON_AddStringToObject(attrs, "reason", why);
	telemetry_event(s->sb->id, NULL, NULL, "session.destroyed", attrs);
	log_debug("session %s ended reason=%s; kept to serve again", s->id,
	    why);
	session_keep(s);
}

/* How many sessions a sandbox keeps: a quarter of its pids at most. */
static unsigned int
session_pool_max(void)
{
	long long	max = cfg_limit(LIMIT_SESSION_POOL);

	if (cfg->profile.pids > 0 && max > cfg->profile.pids / 4)
		max = cfg->profile.pids / 4;
	return ((unsigned int)max);
}

/* Into the pool, for SESSION_KEEP_SECONDS. */
static void
session_keep(struct session *s)
{
	struct timeval	tv = { SESSION_KEEP_SECONDS, 0 };

	s->state = SESSION_IDLE;
	s->reusable = 0;
	s->sb->nidle++;
	if (s->idle_ev == NULL &&
	    (s->idle_ev = evtimer_new(ev_base, session_idle_cb, s)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	evtimer_add(s->idle_ev, &tv);
}

/*
 * A publish has changed the stack, so every kept session is stale: build
 * one on the new stack ahead of need (one at a time), kept like a clean
 * one once it is up, so that the next automatic session need not wait
 * for a build. Nothing if the pool is off or full, or a spare is on its
 * way.
 */
static void
session_prepare(struct rt_sandbox *sb)
{
	struct session	*s;

	if (sb->nidle >= session_pool_max())
		return;
	LIST_FOREACH(s, &sb->sessions, entry) {
		if (s->spare)
			return;
	}
	session_new(sb, 1, 0, NULL, NULL, NULL, 1);
}

/*
 * End a session: kill everything in it; once its init is gone, remove
 * its scratch. Its changes, if not published, are lost.
 */
void
session_end(struct session *s, const char *why)
{
	cJSON	*attrs;

	if (s->state == SESSION_ENDED)
		return;
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

static void	rt_zygote_send(struct rt_sandbox *, struct session *);
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
			continue;
		}
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		if (nf >= 1 && strcmp(f[0], "finished") == 0) {
			s->tmp_clean = nf == 2 && strcmp(f[1], "1") == 0;
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
	struct session		*s;

	if (strcmp(line, "ready") == 0) {
		sb->zready = 1;
		LIST_FOREACH(s, &sb->sessions, entry) {
			if (s->state == SESSION_STARTING && !s->requested)
				rt_zygote_send(sb, s);
		}
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

/* Ask the zygote for the session, passing it its control socket. */
static void
rt_zygote_send(struct rt_sandbox *sb, struct session *s)
{
	const char	*f[NSEXEC_FIELDS_MAX];
	char		*dir;
	int		 sv[2], nf = 0, sndbuf = NSEXEC_MSG_MAX * 2;
	size_t		 i;

	s->requested = 1;
	if (s->lease->n + 5 > NSEXEC_FIELDS_MAX) {
		session_start_fail(s, "the layer stack is too deep for a"
		    " session; squash it");
		return;
	}
	xasprintf(&dir, "sandboxes/%s/sessions/%s", sb->id, s->id);
	f[nf++] = "session";
	f[nf++] = s->id;
	f[nf++] = s->isolated ? "1" : "0";
	f[nf++] = dir;
	f[nf++] = s->lease_text;
	for (i = 0; i < s->lease->n; i++) {
		if ((f[nf++] = rt_relative(s->lease->paths[i])) == NULL) {
			free(dir);
			session_start_fail(s, "a layer lies outside the state"
			    " directory");
			return;
		}
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		free(dir);
		session_start_fail(s, strerror(errno));
		return;
	}
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	if (nsexec_send(sb->zctl, f, nf, &sv[1], 1) != 0) {
		close(sv[0]);
		close(sv[1]);
		free(dir);
		session_start_fail(s, strerror(errno));
		return;
	}
	close(sv[1]);
	free(dir);
	free(s->lease_text);
	s->lease_text = NULL;
	s->ctl = sv[0];
	util_set_nonblock(s->ctl);
	s->ctl_ev = event_new(ev_base, s->ctl, EV_READ | EV_PERSIST,
	    session_ctl_cb, s);
	if (s->ctl_ev == NULL)
		fatalx("%s: event_new", __func__);
	event_add(s->ctl_ev, NULL);
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
	s->reusable = 0;
	s->tmp_clean = 0;
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
	char	*upper;

	/* What /workspace's own attributes are, to tell if they change. */
	xasprintf(&upper, "%s/upper", s->dir);
	s->upper_ok = stat(upper, &s->upper_st) == 0 &&
	    (s->upper_xattrs_len = listxattr(upper, s->upper_xattrs,
	    sizeof s->upper_xattrs)) != -1;
	free(upper);
	job_watch(s->init, session_init_died, s);
	if (s->spare) {
		/* Built ahead of need and not asked for yet: kept. */
		s->spare = 0;
		session_keep(s);
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
	cJSON_AddNumberToObject(lease, "created_at_ms", (double)now_ms());
	text = util_json_print(lease);
	cJSON_Delete(lease);
	return (text);
}

/*
 * A kept session on the stack at version, serving as a new automatic
 * session: it takes a new id (its directory renamed, its lease
 * rewritten in place: no new inode, no fsync, as for a new lease), and
 * is live at once. Kept sessions on another version are let go. Returns
 * 0 when none would do.
 */
static int
session_reuse(struct rt_sandbox *sb, struct layer_stack *head,
    int isolated, session_cb cb, void *arg)
{
	struct session	*s, *s1, *found = NULL;
	char		 rnd[13], *dir, *path, *text;
	size_t		 len;
	int		 fd;

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
	util_random_hex(rnd, 12);
	dir = state_path("sandboxes/%s/sessions/ws-%s", sb->id, rnd);
	if (rename(s->dir, dir) != 0) {
		log_warn("cannot rename %s", s->dir);
		free(dir);
		session_end(s, "its directory cannot be renamed");
		return (0);
	}
	session_unpark(s);
	snprintf(s->id, sizeof s->id, "ws-%s", rnd);
	free(s->dir);
	s->dir = dir;
	text = session_lease_text(s);
	len = strlen(text);
	xasprintf(&path, "%s/lease.json", s->dir);
	if ((fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)) == -1 ||
	    write(fd, text, len) != (ssize_t)len)
		log_warn("cannot rewrite %s", path);
	if (fd != -1)
		close(fd);
	free(path);
	free(text);
	s->start_cb = cb;
	s->start_arg = arg;
	session_live(s);
	return (1);
}

/*
 * Start a workspace session on the stack as it is now. cb(session) once
 * it is live, or cb(NULL, kind, message). An automatic one takes a kept
 * session on the same stack if there is one, or a spare being built on
 * it, before it builds its own.
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
	session_new(sb, 1, isolated, cb, arg, head, 0);
}

/* A session built anew, on head (NULL: read it); a spare asks nobody. */
static void
session_new(struct rt_sandbox *sb, int automatic, int isolated,
    session_cb cb, void *arg, struct layer_stack *head, int spare)
{
	struct session		*s;
	char			 rnd[13], *cause = NULL;

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

static void
session_publish_done(int status, struct evbuffer *report, void *arg)
{
	struct session_publish	*sp = arg;
	struct rt_sandbox	*sb;
	cJSON			*rep, *attrs, *v;
	size_t			 len = evbuffer_get_length(report);
	int			 published;

	rep = len != 0 ? cJSON_ParseWithLength((const char *)
	    evbuffer_pullup(report, len), len) : NULL;
	if (!cJSON_IsObject(rep)) {
		cJSON_Delete(rep);
		rep = cJSON_CreateObject();
		cJSON_AddStringToObject(rep, "reject_class", "storage_error");
		cJSON_AddStringToObject(rep, "message", "the publishing"
		    " process ended without a report");
		cJSON_AddObjectToObject(rep, "details");
	}
	sp->s->publishing = 0;
	attrs = cJSON_CreateObject();
	cJSON_AddStringToObject(attrs, "workspace_session_id", sp->s->id);
	if ((v = cJSON_GetObjectItem(rep, "layer_id")) != NULL) {
		cJSON_AddItemToObject(attrs, "layer_id", cJSON_Duplicate(v, 1));
		cJSON_AddItemToObject(attrs, "manifest_version", cJSON_Duplicate(
		    cJSON_GetObjectItem(rep, "manifest_version"), 1));
		telemetry_event(sp->s->sb->id, NULL, NULL, "layer.published",
		    attrs);
	} else if ((v = cJSON_GetObjectItem(rep, "reject_class")) != NULL) {
		cJSON_AddItemToObject(attrs, "reject_class",
		    cJSON_Duplicate(v, 1));
		telemetry_event(sp->s->sb->id, NULL, NULL, "publish.rejected",
		    attrs);
	} else
		cJSON_Delete(attrs);
	sb = sp->s->sb;
	published = cJSON_GetObjectItem(rep, "layer_id") != NULL;
	sp->cb(sp->s, rep, sp->arg);
	cJSON_Delete(rep);
	free(sp);
	if (published)
		session_prepare(sb);
}

/* The names of extended attributes on upper: as the session began? */
static int
session_xattrs_same(struct session *s, const char *upper)
{
	char	names[sizeof s->upper_xattrs];
	ssize_t	len;

	len = listxattr(upper, names, sizeof names);
	return (len != -1 && len == s->upper_xattrs_len &&
	    memcmp(names, s->upper_xattrs, len) == 0);
}

/*
 * Publish a session's changes as one layer owned by owner, in a child
 * process. cb(session, report) gets the child's report (see publish.c).
 */
void
session_publish(struct session *s, const char *owner,
    session_publish_cb cb, void *arg)
{
	struct session_publish	*sp;
	struct publish_args	 a;
	struct dirent		*de;
	DIR			*d;
	struct stat		 st;
	char			*upper;
	int			 empty = 1;
	cJSON			*rep;

	xasprintf(&upper, "%s/upper", s->dir);
	/* Nothing changed (the common case of a read-only command). */
	if ((d = opendir(upper)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0) {
				empty = 0;
				break;
			}
		}
		closedir(d);
	} else
		empty = 0;
	/*
	 * And /workspace's own attributes as they were, no extended
	 * attribute, /tmp empty: the session may serve again.
	 */
	s->reusable = empty && s->tmp_clean && s->upper_ok &&
	    stat(upper, &st) == 0 && st.st_mode == s->upper_st.st_mode &&
	    st.st_uid == s->upper_st.st_uid &&
	    st.st_gid == s->upper_st.st_gid &&
	    st.st_mtim.tv_sec == s->upper_st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == s->upper_st.st_mtim.tv_nsec &&
	    st.st_ctim.tv_sec == s->upper_st.st_ctim.tv_sec &&
	    st.st_ctim.tv_nsec == s->upper_st.st_ctim.tv_nsec &&
	    session_xattrs_same(s, upper);
	if (empty) {
		free(upper);
		rep = cJSON_CreateObject();
		cJSON_AddNullToObject(rep, "publish");
		cb(s, rep, arg);
		cJSON_Delete(rep);
		return;
	}
	a.sandbox = s->sb->id;
	a.upper = upper;
	a.base = s->lease;
	a.owner = owner;
	sp = xcalloc(1, sizeof *sp);
	sp->s = s;
	sp->cb = cb;
	sp->arg = arg;
	s->publishing = 1;
	job_fork("publish", publish_child, &a, session_publish_done, sp);
	free(upper);
}

struct session_size {
	struct session	*s;
	void		(*cb)(struct session *, unsigned long long, void *);
	void		*arg;
};

static unsigned long long	session_size_total;

static int
session_size_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (flag == FTW_F && S_ISREG(st->st_mode))
		session_size_total += st->st_size;
	return (0);
}

/* The child: the bytes of regular files in the upper directory. */
static int
session_size_child(void *arg, int fd)
{
	const char	*upper = arg;

	session_size_total = 0;
	nftw(upper, session_size_cb, 32, FTW_PHYS);
	dprintf(fd, "%llu\n", session_size_total);
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
	z->cb(z->s, bytes, z->arg);
	free(z);
}

/* How many bytes a session's changes hold (walked in a child). */
void
session_upper_size(struct session *s,
    void (*cb)(struct session *, unsigned long long, void *), void *arg)
{
	struct session_size	*z;
	char			*upper;

	z = xcalloc(1, sizeof *z);
	z->s = s;
	z->cb = cb;
	z->arg = arg;
	xasprintf(&upper, "%s/upper", s->dir);
	s->publishing = 1;	/* nothing else may start meanwhile */
	job_fork("session-size", session_size_child, upper,
	    session_size_done, z);
	free(upper);
}
