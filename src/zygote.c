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
 * The runtime side of each sandbox in this process: its container's
 * init pid and cgroups, learnt from the Docker Engine once and checked
 * on each use, and its zygote (nsexec.c), a child that stands in the
 * container's namespaces and cgroups and builds workspace sessions on
 * request. Requests wait in order until the zygote is ready and its
 * socket has room; each is answered once, with the new session's init
 * pid or the reason there is none. Nothing here knows what a session
 * is: session.c asks and is called back.
 */

#include "config.h"

#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "engine.h"
#include "nsexec.h"
#include "sandbox-mcp.h"

static LIST_HEAD(, rt_sandbox)	zygote_sandboxes =
    LIST_HEAD_INITIALIZER(zygote_sandboxes);

/* A request for a session, from session.c, until the zygote answers. */
struct zygote_req {
	struct rt_sandbox	*sb;
	char			 id[17];
	char			**fields;	/* of the build message */
	int			 nfields;
	int			 ctl;		/* the init's end, to pass */
	int			 sent;
	int			 hold;		/* zygote_build runs */
	int			 failed;	/* errno of a send */
	zygote_cb		 cb;
	void			*arg;
	TAILQ_ENTRY(zygote_req)	 entry;
};

/* A lookup of a sandbox's container on its way. */
struct zygote_wait {
	char		 id[65];
	char		*tenant;
	rt_cb		 cb;
	void		*arg;
};

static void	zygote_flush(struct rt_sandbox *);
static void	zygote_lost(struct rt_sandbox *, const char *);

static int	zygote_state_fd = -1;

/* A descriptor of the state directory, for zygotes to build from. */
static int
zygote_state_dir(void)
{
	if (zygote_state_fd == -1)
		zygote_state_fd = open(cfg->state_dir, O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC);
	return (zygote_state_fd);
}

static void
zygote_free_cgroups(struct rt_sandbox *sb)
{
	size_t	i;

	for (i = 0; i < sb->ncgroup; i++)
		free(sb->cgroups[i]);
	free(sb->cgroups);
	sb->cgroups = NULL;
	sb->ncgroup = 0;
}

/* The cgroup.procs files of the container's init's cgroups. */
static int
zygote_cgroups(struct rt_sandbox *sb, char **cause)
{
	zygote_free_cgroups(sb);
	if ((sb->cgroups = cgroup_procs_of(sb->pid, &sb->ncgroup,
	    cause)) == NULL)
		return (-1);
	return (0);
}

/* The runtime view of a sandbox this process has, or NULL. */
struct rt_sandbox *
zygote_find(const char *id)
{
	struct rt_sandbox	*sb;

	LIST_FOREACH(sb, &zygote_sandboxes, entry) {
		if (strcmp(sb->id, id) == 0)
			return (sb);
	}
	return (NULL);
}

/* Every runtime view in turn: the first for NULL, then the next. */
struct rt_sandbox *
zygote_next(struct rt_sandbox *sb)
{
	return (sb == NULL ? LIST_FIRST(&zygote_sandboxes) :
	    LIST_NEXT(sb, entry));
}

/* Whether two sandboxes belong to the same tenant. */
int
zygote_same_tenant(struct rt_sandbox *a, struct rt_sandbox *b)
{
	return (a->tenant != NULL && b->tenant != NULL &&
	    strcmp(a->tenant, b->tenant) == 0);
}

/*
 * The sandboxes this process has sessions or a zygote in (the caller
 * frees the array and its strings).
 */
char **
zygote_ids(size_t *n)
{
	struct rt_sandbox	*sb;
	char			**ids = NULL;

	*n = 0;
	LIST_FOREACH(sb, &zygote_sandboxes, entry) {
		if (sb->zjob == NULL && LIST_EMPTY(&sb->sessions))
			continue;
		ids = xreallocarray(ids, *n + 1, sizeof *ids);
		ids[(*n)++] = xstrdup(sb->id);
	}
	return (ids);
}

static void
zygote_inspect_cb(cJSON *result, const struct cause *why, void *arg)
{
	struct zygote_wait	*w = arg;
	struct rt_sandbox	*sb;
	struct cause		 cause = { 0 };
	cJSON			*c, *st, *pid, *id;
	char			*msg;

	if (result == NULL) {
		w->cb(NULL, why, w->arg);
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
	    pid->valuedouble > INT32_MAX || !cJSON_IsString(id)) {
		cause_set(&cause, CAUSE_FAILED, "sandbox_id", w->id, "the"
		    " container of sandbox %s is %s", w->id, c == NULL ||
		    cJSON_IsNull(c) ? "missing" : "not running");
		w->cb(NULL, &cause, w->arg);
		cause_clear(&cause);
		cJSON_Delete(result);
		free(w->tenant);
		free(w);
		return;
	}
	if ((sb = zygote_find(w->id)) == NULL) {
		sb = xcalloc(1, sizeof *sb);
		strlcpy(sb->id, w->id, sizeof sb->id);
		sb->zctl = -1;
		TAILQ_INIT(&sb->reqs);
		LIST_INIT(&sb->sessions);
		LIST_INSERT_HEAD(&zygote_sandboxes, sb, entry);
	}
	free(sb->container);
	sb->container = xstrdup(id->valuestring);
	free(sb->tenant);
	sb->tenant = w->tenant;
	w->tenant = NULL;
	if (sb->zjob != NULL && sb->zpid != (pid_t)pid->valuedouble) {
		/* A new container process: the zygote stood in the old. */
		job_cancel(sb->zjob);
		zygote_lost(sb, "the container was restarted");
	}
	sb->pid = (pid_t)pid->valuedouble;
	sb->pid_start = state_process_start(sb->pid);
	free(sb->freezer);
	sb->freezer = cgroup_freezer_of(sb->pid);
	if (sandbox_root_of(sb->id, c, &sb->root, &msg) != 0 ||
	    zygote_cgroups(sb, &msg) != 0) {
		cause_set(&cause, CAUSE_FAILED, "sandbox_id", w->id, "%s", msg);
		free(msg);
		w->cb(NULL, &cause, w->arg);
		cause_clear(&cause);
		sb->pid = 0;
	} else
		w->cb(sb, NULL, w->arg);
	cJSON_Delete(result);
	free(w);
}

/*
 * The runtime view of a ready sandbox, for a runtime tool: cb(sb) or
 * cb(NULL, cause). Unknown sandbox: not_found; not ready:
 * operation_failed naming its state.
 */
void
zygote_get(const char *id, rt_cb cb, void *arg)
{
	struct rt_sandbox	*sb;
	struct zygote_wait	*w;
	struct cause		 cause = { 0 };
	cJSON			*rec = NULL, *state;
	char			*tenant;

	if (!util_id_valid(id))
		cause_set(&cause, CAUSE_INVALID, "sandbox_id", id, "invalid"
		    " sandbox id: %.80s", id);
	else if ((rec = state_record_read(id)) == NULL)
		cause_set(&cause, CAUSE_NOT_FOUND, "sandbox_id", id, "no"
		    " sandbox %s", id);
	else {
		state = cJSON_GetObjectItem(rec, "state");
		if (!cJSON_IsString(state) || strcmp(state->valuestring,
		    "ready") != 0) {
			cause_set(&cause, CAUSE_FAILED, "sandbox_id", id,
			    "sandbox %s is %s, not ready", id,
			    cJSON_IsString(state) ? state->valuestring :
			    "unknown");
			cJSON_Delete(rec);
		}
	}
	if (cause.kind != CAUSE_NONE) {
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	tenant = xstrdup(sandbox_record_tenant(rec));
	cJSON_Delete(rec);
	sb = zygote_find(id);
	if (sb != NULL && sb->pid > 0 &&
	    state_process_start(sb->pid) == sb->pid_start) {
		free(sb->tenant);
		sb->tenant = tenant;
		cb(sb, NULL, arg);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->tenant = tenant;
	strlcpy(w->id, id, sizeof w->id);
	w->cb = cb;
	w->arg = arg;
	sandbox_lookup(id, zygote_inspect_cb, w);
}

static void
zygote_req_free(struct zygote_req *zr)
{
	int	i;

	TAILQ_REMOVE(&zr->sb->reqs, zr, entry);
	if (zr->ctl != -1)
		close(zr->ctl);
	for (i = 0; i < zr->nfields; i++)
		free(zr->fields[i]);
	free(zr->fields);
	free(zr);
}

/* Answer a request (pid, or 0 and why) and forget it. */
static void
zygote_answer(struct zygote_req *zr, pid_t pid, const char *why)
{
	zygote_cb	 cb = zr->cb;
	void		*arg = zr->arg;

	zygote_req_free(zr);
	cb(pid, why, arg);
}

/*
 * Forget the zygote (its job has ended or been cancelled): every
 * request not yet answered fails with why.
 */
static void
zygote_lost(struct rt_sandbox *sb, const char *why)
{
	struct zygote_req	*zr;

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
	while ((zr = TAILQ_FIRST(&sb->reqs)) != NULL)
		zygote_answer(zr, 0, why);
}

/* The request of a session id that was sent, or NULL. */
static struct zygote_req *
zygote_req_find(struct rt_sandbox *sb, const char *id)
{
	struct zygote_req	*zr;

	TAILQ_FOREACH(zr, &sb->reqs, entry) {
		if (zr->sent && strcmp(zr->id, id) == 0)
			return (zr);
	}
	return (NULL);
}

/* What the zygote says: ready, failed, and the answers to requests. */
static void
zygote_read_cb(evutil_socket_t fd, short events, void *arg)
{
	struct rt_sandbox	*sb = arg;
	struct zygote_req	*zr;
	struct nsexec_msg	 m;
	char			 buf[4096], why[512];
	long long		 pid;
	int			 r;

	for (;;) {
		r = nsexec_msg_recv(fd, buf, sizeof buf, &m);
		if (r == -1 && errno == EAGAIN)
			return;
		if (r == 0) {
			zygote_lost(sb, "the sandbox's zygote ended");
			return;
		}
		if (r == -1) {
			log_warnx("sandbox %s: the zygote broke the protocol:"
			    " %s", sb->id, strerror(errno));
			job_cancel(sb->zjob);
			zygote_lost(sb, "the sandbox's zygote broke the"
			    " protocol");
			return;
		}
		switch (m.type) {
		case NSEXEC_READY:
			sb->zready = 1;
			zygote_flush(sb);
			break;
		case NSEXEC_FAILED:
			snprintf(why, sizeof why, "%s", m.f[0]);
			job_cancel(sb->zjob);
			zygote_lost(sb, why);
			return;
		case NSEXEC_BUILT:
		case NSEXEC_REFUSED:
			if ((zr = zygote_req_find(sb, m.f[0])) == NULL)
				break;	/* given up meanwhile */
			if (m.type == NSEXEC_REFUSED)
				zygote_answer(zr, 0, m.f[1]);
			else if (nsexec_msg_int(&m, 1, 2, INT32_MAX,
			    &pid) != 0)
				zygote_answer(zr, 0, "the zygote gave a bad"
				    " pid");
			else
				zygote_answer(zr, (pid_t)pid, NULL);
			if (sb->zctl != fd)
				return;	/* the answer ended the zygote */
			break;
		default:
			log_warnx("sandbox %s: the zygote sent a %s message",
			    sb->id, nsexec_type_name(m.type));
			job_cancel(sb->zjob);
			zygote_lost(sb, "the sandbox's zygote broke the"
			    " protocol");
			return;
		}
	}
}

/* The zygote ended (it answers on its control socket, never here). */
static void
zygote_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct rt_sandbox	*sb = arg;

	log_trace(TRACE_JOB, "zygote of %s: %s", sb->id, cause != NULL ?
	    cause->message : "ended");
	zygote_lost(sb, "the sandbox's zygote ended");
}

/* Start the sandbox's zygote (requests wait until it is ready). */
static int
zygote_start(struct rt_sandbox *sb, char **cause)
{
	struct nsexec_zygote	 z;
	int			 sv[2], keep[4], nkeep;
	int			 sndbuf = NSEXEC_MSG_MAX * 4;

	if (zygote_state_dir() == -1) {
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
	z.root = sb->root.dir;
	z.root_lower = sb->root.lower;
	z.nroot_lower = sb->root.nlower;
	keep[0] = zygote_state_dir();
	keep[1] = sv[1];
	nkeep = 2 + nsexec_program_fds(&keep[2]);
	sb->zjob = job_fork_keep("zygote", nsexec_zygote_exec, &z, keep, nkeep,
	    zygote_done, sb);
	close(sv[1]);
	sb->zctl = sv[0];
	util_set_nonblock(sb->zctl);
	sb->zpid = sb->pid;
	sb->zev = event_new(ev_base, sb->zctl, EV_READ | EV_PERSIST,
	    zygote_read_cb, sb);
	if (sb->zev == NULL)
		fatalx("%s: event_new", __func__);
	event_add(sb->zev, NULL);
	return (0);
}

static void
zygote_write_cb(evutil_socket_t fd, short events, void *arg)
{
	zygote_flush(arg);
}

/*
 * Send what waits, in order, while the zygote is ready and its socket
 * has room; when it is full, wait until it has. A request that cannot
 * be sent is answered after the walk (an answer may change the list).
 */
static void
zygote_flush(struct rt_sandbox *sb)
{
	struct zygote_req	*zr;

	if (!sb->zready)
		return;
	TAILQ_FOREACH(zr, &sb->reqs, entry) {
		if (zr->sent || zr->failed != 0)
			continue;
		if (nsexec_msg_send(sb->zctl, NSEXEC_BUILD,
		    (const char **)zr->fields, zr->nfields, &zr->ctl,
		    1) != 0) {
			if (errno != EAGAIN) {
				zr->failed = errno;
				continue;
			}
			if (sb->zwev == NULL && (sb->zwev = event_new(ev_base,
			    sb->zctl, EV_WRITE, zygote_write_cb, sb)) == NULL)
				fatalx("%s: event_new", __func__);
			event_add(sb->zwev, NULL);
			break;
		}
		zr->sent = 1;
		close(zr->ctl);
		zr->ctl = -1;
	}
	for (;;) {
		TAILQ_FOREACH(zr, &sb->reqs, entry) {
			if (zr->failed != 0 && !zr->hold)
				break;
		}
		if (zr == NULL)
			break;
		zygote_answer(zr, 0, strerror(zr->failed));
	}
}

/* A path under the state directory, relative to it, or NULL. */
static const char *
zygote_relative(const char *path)
{
	size_t	len = strlen(cfg->state_dir);

	if (strncmp(path, cfg->state_dir, len) == 0 && path[len] == '/')
		return (path + len + 1);
	return (NULL);
}

/*
 * Ask the sandbox's zygote for session id: built in dir (under the
 * state directory; with adopt, the directory a process that is gone
 * left, its changes kept) on lease (its lease text written there first), in
 * the freezer group whose cgroup.procs is procs ("" for none), with ctl
 * (taken over) as its init's control socket. cb(init pid, NULL, arg)
 * once built, or cb(0, why, arg) (maybe before this returns). Returns
 * the request while it waits, NULL once answered.
 */
struct zygote_req *
zygote_build(struct rt_sandbox *sb, const char *id, int isolated, int adopt,
    const char *procs, const char *dir, const char *lease_text,
    const struct layer_stack *lease, int ctl, zygote_cb cb, void *arg)
{
	struct zygote_req	*zr;
	const char		*rel;
	char			*cause = NULL;
	size_t			 i;

	zr = xcalloc(1, sizeof *zr);
	zr->sb = sb;
	strlcpy(zr->id, id, sizeof zr->id);
	zr->ctl = ctl;
	zr->cb = cb;
	zr->arg = arg;
	TAILQ_INSERT_TAIL(&sb->reqs, zr, entry);
	if (lease->n + 5 > NSEXEC_FIELDS_MAX) {
		zygote_answer(zr, 0, "the layer stack is too deep for a"
		    " session; squash it");
		return (NULL);
	}
	zr->fields = xcalloc(lease->n + 5, sizeof *zr->fields);
	zr->fields[zr->nfields++] = xstrdup(id);
	zr->fields[zr->nfields++] = xstrdup(adopt ? (isolated ? "a1" : "a0") :
	    (isolated ? "1" : "0"));
	zr->fields[zr->nfields++] = xstrdup(procs);
	if ((rel = zygote_relative(dir)) == NULL) {
		zygote_answer(zr, 0, "the session lies outside the state"
		    " directory");
		return (NULL);
	}
	zr->fields[zr->nfields++] = xstrdup(rel);
	zr->fields[zr->nfields++] = xstrdup(lease_text);
	for (i = 0; i < lease->n; i++) {
		if ((rel = zygote_relative(lease->paths[i])) == NULL) {
			zygote_answer(zr, 0, "a layer lies outside the state"
			    " directory");
			return (NULL);
		}
		zr->fields[zr->nfields++] = xstrdup(rel);
	}
	if (sb->zjob == NULL && zygote_start(sb, &cause) != 0) {
		zygote_answer(zr, 0, cause);
		free(cause);
		return (NULL);
	}
	zr->hold = 1;
	zygote_flush(sb);
	zr->hold = 0;
	if (zr->failed != 0) {
		zygote_answer(zr, 0, strerror(zr->failed));
		return (NULL);
	}
	return (zr);
}

/* The asker has given up: its answer will not come. */
void
zygote_cancel(struct zygote_req *zr)
{
	if (zr != NULL)
		zygote_req_free(zr);
}

/*
 * The sandbox is being destroyed, or its container has died: the
 * zygote ends, requests fail with why, and what we knew of the
 * container is forgotten. Its cgroups, as cgroup.procs paths, go to the
 * caller (who frees them; NULL with none learnt).
 */
char **
zygote_forget(struct rt_sandbox *sb, const char *why, size_t *n)
{
	char	**cgroups;

	if (sb->zjob != NULL)
		job_cancel(sb->zjob);
	zygote_lost(sb, why);
	sb->pid = 0;
	cgroups = sb->cgroups;
	*n = sb->ncgroup;
	sb->cgroups = NULL;
	sb->ncgroup = 0;
	return (cgroups);
}
