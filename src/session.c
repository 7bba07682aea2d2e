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
 * sandbox's zygote (zygote.c) and served by its init (nsexec.c).
 *
 * A session's state changes only through session_set_state, which logs
 * old -> new. Commands (command.c) attach to a session as clients: the
 * session routes its init's messages about a command to that client,
 * tells every client when the session can no longer run them, and
 * counts them as what runs in it. A session that ends is freed from the
 * loop, never under the callback that ended it (session_free_later), so
 * a chain of callbacks that ends a session can still look at it.
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
 * demand, one fewer each time a spare expires unused or goes stale; one
 * at least after an automatic session's publish), at most the pool
 * (limit session-pool, and a quarter of the profile's pids). Spares are
 * in the sandbox's list but not found by id.
 *
 * The processes of a managed session live in a freezer group of their
 * own under the container's (cgroup.c), joined by its builder before the
 * init is forked: a publish freezes them while it takes its snapshot, so
 * the tree cannot change under it. An automatic session has none: its
 * processes are gone before it publishes.
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
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "engine.h"
#include "nsexec.h"
#include "sandbox-mcp.h"

#define SESSION_SWEEP_SECONDS	5
/* How long a spare is kept for the next automatic session. */
#define SESSION_KEEP_SECONDS	10
/* How long a freeze may take before a publish gives up. */
#define SESSION_FREEZE_TRIES	5000	/* of 1 ms */
/* Descriptors kept back from sessions for everything else. */
#define SESSION_FD_RESERVE	256

/* A session: see session_use for who may do what with it. */
struct session {
	char			 id[17];
	struct rt_sandbox	*sb;
	int			 automatic;
	int			 isolated;
	enum session_state	 state;
	struct layer_stack	*lease;
	char			*lease_text;	/* for the builder to write */
	char			*dir;
	pid_t			 init;
	int			 ctl;		/* the init's control socket */
	int			 rootfd;	/* its /workspace (O_PATH) */
	struct event		*ctl_ev;
	struct zygote_req	*req;		/* the build under way */
	uint64_t		 asked_ms;	/* when it was asked for */
	session_cb		 start_cb;
	void			*start_arg;
	struct session_clients	 clients;	/* its running commands */
	unsigned int		 nclients;
	int			 publishing;
	void			(*dead_cb)(struct session *, void *);
	void			*dead_arg;
	int			 spare;		/* built ahead, not asked for */
	int			 trashed;	/* its scratch (and lease) gone */
	int			 again;		/* built again after a squash */
	int			 adopting;	/* taken up from a process gone */
	int			 adopt_lock;	/* its claim, held while it lives */
	struct event		*idle_ev;
	char			*cgroup;	/* its freezer group */
	struct event		*freeze_ev;
	int			 freeze_tries;
	struct session_publish	*sealing;	/* waits for the seal */
	int			 preseal;	/* asked with the finish */
	int			 presealed;	/* and its answer */
	int			 freeing;	/* to be freed from the loop */
	void			(*gone_cb)(void *); /* its scratch removed */
	void			*gone_arg;
	LIST_ENTRY(session)	 entry;
};

/* A seal asked for along with the finish (session_when_dead). */
#define SESSION_SEAL_NONE	0
#define SESSION_SEAL_ASKED	1
#define SESSION_SEAL_ANSWERED	2

static const char *session_state_names[] = {
	"starting", "live", "dead", "idle", "ended"
};

static void	session_set_state(struct session *, enum session_state);
static void	session_lease_event(struct session *, const char *);
static cJSON	*session_client_ids(struct session *);
static void	session_start_fail(struct session *, const char *);
static void	session_sealed(struct session *, int);
static void	session_started(struct session *);
static void	session_unpark(struct session *);
static void	session_keep(struct session *);
static unsigned int session_pool_max(void);
static void	session_prepare(struct rt_sandbox *, int);
static void	session_new(struct rt_sandbox *, int, int, session_cb, void *,
		    struct layer_stack *, int);
static void	session_build(struct rt_sandbox *, const char *, int, int, int,
		    session_cb, void *, struct layer_stack *, int);

static int	session_again;	/* the session_new being made is a retry */
static int	session_adopt_fd = -1;	/* the claim of the one being taken */
static void	(*session_gone_hook)(const char *, const char *);
static void	session_new(struct rt_sandbox *, int, int, session_cb, void *,
		    struct layer_stack *, int);

/* Sessions of this process (all sandboxes), and groups left to remove. */
static unsigned int	 session_count;
static char		**session_cgroups_left;
static size_t		 session_ncgroups_left;

struct session_start {
	struct session	*s;
	session_cb	 cb;
	void		*arg;
};

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

const char *
session_id(struct session *s)
{
	return (s->id);
}

int
session_isolated(struct session *s)
{
	return (s->isolated);
}

/* The manifest version of the stack the session stands on. */
int
session_base_version(struct session *s)
{
	return (s->lease->version);
}

/* The session's /workspace (O_PATH), or -1 once its view is gone. */
int
session_rootfd(struct session *s)
{
	return (s->rootfd);
}

/*
 * The live session id names in sb, ready for a use, or NULL with a
 * cause. The one rule for every tool that names a session:
 *
 *	read	its view is open: live, or an automatic session whose
 *		processes are gone and whose publish is under way (its view
 *		goes when the publish is visible, not before);
 *	change	as read, and not being published;
 *	exec	as read without needing the view, and not being published
 *		nor finishing (an automatic session whose last command is
 *		ending is not joined);
 *	end	(publish or destroy) found at all, managed, with no command
 *		running and no publish under way.
 */
struct session *
session_use(struct rt_sandbox *sb, const char *id, enum session_use use,
    struct cause *cause)
{
	struct session	*s;
	int		 open;

	s = session_find(sb, id);
	open = s != NULL && (s->state == SESSION_LIVE ||
	    (s->state == SESSION_DEAD && s->publishing)) &&
	    (use == SESSION_USE_EXEC || s->rootfd != -1);
	if (s == NULL || (use != SESSION_USE_END && !open)) {
		cause_set(cause, CAUSE_NOT_FOUND, "workspace_session_id", id,
		    "no workspace session %s in sandbox %s (it ended, or"
		    " another process owns it)", id, sb->id);
		return (NULL);
	}
	switch (use) {
	case SESSION_USE_READ:
		return (s);
	case SESSION_USE_CHANGE:
	case SESSION_USE_EXEC:
		if (s->publishing || (use == SESSION_USE_EXEC &&
		    s->dead_cb != NULL)) {
			cause_set(cause, CAUSE_CONFLICT,
			    "workspace_session_id", id, "workspace session %s"
			    " is being published", id);
			return (NULL);
		}
		return (s);
	case SESSION_USE_END:
		if (s->nclients > 0) {
			cause_set(cause, CAUSE_CONFLICT,
			    "workspace_session_id", id, "workspace session %s"
			    " has commands running", id);
			cause_detail_item(cause, "running_commands",
			    session_client_ids(s));
		} else if (s->publishing)
			cause_set(cause, CAUSE_CONFLICT,
			    "workspace_session_id", id, "workspace session %s"
			    " is already being published", id);
		else if (s->automatic)
			cause_set(cause, CAUSE_CONFLICT,
			    "workspace_session_id", id, "workspace session %s"
			    " is automatic: it publishes when its last command"
			    " ends", id);
		else
			return (s);
		return (NULL);
	}
	fatalx("%s: use %d", __func__, use);
}

/* Change a session's state: the one place, logged old -> new. */
static void
session_set_state(struct session *s, enum session_state state)
{
	if (s->state == state)
		return;
	log_trace(TRACE_JOB, "session %s %s -> %s", s->id,
	    session_state_names[s->state], session_state_names[state]);
	s->state = state;
}

static struct event	*session_sweep_ev;

/* Every few seconds: freezer groups whose last processes have gone. */
static void
session_sweep_cb(evutil_socket_t fd, short events, void *arg)
{
	size_t	i;

	for (i = 0; i < session_ncgroups_left; i++) {
		if (cgroup_session_remove(session_cgroups_left[i]) != 0)
			continue;
		free(session_cgroups_left[i]);
		session_cgroups_left[i--] =
		    session_cgroups_left[--session_ncgroups_left];
	}
	if (session_ncgroups_left == 0)
		evtimer_del(session_sweep_ev);
}

static void
session_free(struct session *s)
{
	struct timeval	tv = { SESSION_SWEEP_SECONDS, 0 };

	session_count--;
	if (s->gone_cb != NULL)		/* never trashed: nothing to wait for */
		s->gone_cb(s->gone_arg);
	if (s->cgroup != NULL && cgroup_session_remove(s->cgroup) != 0) {
		/* Its last processes are on their way out: later. */
		session_cgroups_left = xreallocarray(session_cgroups_left,
		    session_ncgroups_left + 1, sizeof *session_cgroups_left);
		session_cgroups_left[session_ncgroups_left++] = s->cgroup;
		s->cgroup = NULL;
		if (session_sweep_ev == NULL && (session_sweep_ev = event_new(
		    ev_base, -1, EV_PERSIST, session_sweep_cb, NULL)) == NULL)
			fatalx("%s: event_new", __func__);
		if (!evtimer_pending(session_sweep_ev, NULL))
			evtimer_add(session_sweep_ev, &tv);
	}
	free(s->cgroup);
	if (s->adopt_lock != -1)
		close(s->adopt_lock);	/* the claim goes with it */
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
	zygote_cancel(s->req);
	LIST_REMOVE(s, entry);
	layer_stack_free(s->lease);
	free(s->lease_text);
	free(s->dir);
	free(s);
}

static void
session_free_cb(evutil_socket_t fd, short events, void *arg)
{
	session_free(arg);
}

/*
 * Free an ended session from the loop, not now: whatever callback chain
 * ended it may still look at it on the way back (tmux frees its clients
 * the same way).
 */
static void
session_free_later(struct session *s)
{
	struct timeval	tv = { 0, 0 };

	if (s->freeing)
		return;
	s->freeing = 1;
	if (event_base_once(ev_base, -1, EV_TIMEOUT, session_free_cb, s,
	    &tv) != 0)
		fatalx("%s: event_base_once", __func__);
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
	s->trashed = 1;
	if (s->gone_cb != NULL) {
		trash_empty_then(s->gone_cb, s->gone_arg);
		s->gone_cb = NULL;
	} else
		trash_soon();
	/* Its lease has gone: whoever waits for that (a squash) hears. */
	if (session_gone_hook != NULL)
		session_gone_hook(s->sb->id, s->sb->tenant);
}

/*
 * Who hears that a session's scratch, lease and all, has gone: squash.c,
 * above this file, to reclaim the layers the lease pinned.
 */
void
session_on_gone(void (*fn)(const char *, const char *))
{
	session_gone_hook = fn;
}

/* An ended session goes once its init is gone and no command runs. */
static void
session_maybe_free(struct session *s)
{
	if (s->state != SESSION_ENDED || s->init > 0 || s->nclients > 0 ||
	    s->publishing || s->freeing)
		return;
	session_trash(s);
	session_free_later(s);
}

/*
 * A command attaches to the session it runs in: it hears its init's
 * messages about it (message), and that the session can no longer run
 * it (gone, with why or NULL); while attached it counts as running.
 */
void
session_attach(struct session *s, struct session_client *sc)
{
	LIST_INSERT_HEAD(&s->clients, sc, entry);
	s->nclients++;
}

/* The command has finished: it no longer holds the session. */
void
session_detach(struct session *s, struct session_client *sc)
{
	LIST_REMOVE(sc, entry);
	s->nclients--;
	session_maybe_free(s);
}

/* Tell every attached command the session cannot run it any more. */
static void
session_clients_gone(struct session *s, const char *why)
{
	struct session_client	*sc;
	int			 told = 0;

	/* A client told may detach itself: the list is walked again. */
	for (;;) {
		LIST_FOREACH(sc, &s->clients, entry) {
			if (!sc->told)
				break;
		}
		if (sc == NULL)
			break;
		sc->told = 1;
		told++;
		sc->gone(sc, why);
	}
	LIST_FOREACH(sc, &s->clients, entry)
		sc->told = 0;
	if (told > 0)
		log_debug("session %s: %d commands told it is gone", s->id,
		    told);
}

/* The running commands of a session, by id (for refusals). */
static cJSON *
session_client_ids(struct session *s)
{
	struct session_client	*sc;
	cJSON			*a;

	a = cJSON_CreateArray();
	LIST_FOREACH(sc, &s->clients, entry)
		cJSON_AddItemToArray(a, cJSON_CreateString(sc->id));
	return (a);
}

/*
 * Send a message to the session's init for a command: 0, or -1 when it
 * cannot be sent (the session has ended, errno set).
 */
int
session_send(struct session *s, enum nsexec_type type, const char **f,
    int nf, const int *fds, int nfds)
{
	if (s->ctl == -1) {
		errno = EPIPE;
		return (-1);
	}
	return (nsexec_msg_send(s->ctl, type, f, nf, fds, nfds));
}

int
session_automatic(struct session *s)
{
	return (s->automatic);
}

/* How many commands hold the session. */
unsigned int
session_clients(struct session *s)
{
	return (s->nclients);
}

int
session_ended(struct session *s)
{
	return (s->state == SESSION_ENDED);
}

struct rt_sandbox *
session_sandbox(struct session *s)
{
	return (s->sb);
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
		session_set_state(s, SESSION_DEAD);
	if (cb != NULL) {
		s->dead_cb = NULL;
		cb(s, s->dead_arg);
		return;
	}
	session_maybe_free(s);
}

/*
 * Kill every process of a session, make its /workspace read-only for the
 * publish that follows, and call cb once they are gone (the upper
 * directory then no longer changes); the session is kept.
 */
void
session_when_dead(struct session *s, void (*cb)(struct session *, void *),
    void *arg)
{
	if (s->init <= 0) {
		if (s->state == SESSION_LIVE)
			session_set_state(s, SESSION_DEAD);
		cb(s, arg);
		return;
	}
	s->dead_cb = cb;
	s->dead_arg = arg;
	/*
	 * The init ends the others and answers "finished"; its own end (and
	 * the namespaces' teardown) comes later, off the caller's path. If
	 * it cannot be asked, kill it and wait for it. The seal a publish
	 * needs next is asked for in the same breath (the init takes it
	 * once the others are gone), so that its answer comes with the
	 * finish's instead of a round trip later.
	 */
	if (session_send(s, NSEXEC_FINISH, NULL, 0, NULL, 0) != 0) {
		kill(s->init, SIGKILL);
		return;
	}
	if (session_send(s, NSEXEC_SEAL, NULL, 0, NULL, 0) == 0)
		s->preseal = SESSION_SEAL_ASKED;
}

/*
 * The init's answer to a seal, or 0 when none will come (it is gone): to
 * the publish waiting for it, or kept for the publish to come.
 */
static void
session_seal_answer(struct session *s, int sealed)
{
	if (s->preseal == SESSION_SEAL_ASKED) {
		s->preseal = SESSION_SEAL_ANSWERED;
		s->presealed = sealed;
	}
	session_sealed(s, sealed);
}

/* The init reports every other process of the session gone. */
static void
session_finished(struct session *s)
{
	void	(*cb)(struct session *, void *) = s->dead_cb;

	if (cb == NULL)
		return;
	if (s->state == SESSION_LIVE)
		session_set_state(s, SESSION_DEAD);
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
	session_set_state(s, SESSION_DEAD);
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
	static long	n;

	/* Read once: sysconf reads a file of /sys each time. */
	if (n == 0 && (n = sysconf(_SC_NPROCESSORS_ONLN)) < 1)
		n = 1;
	return ((unsigned int)n);
}

/* Into the pool, for SESSION_KEEP_SECONDS. */
static void
session_keep(struct session *s)
{
	struct timeval	tv = { SESSION_KEEP_SECONDS, 0 };

	session_set_state(s, SESSION_IDLE);
	s->sb->nidle++;
	if (s->idle_ev == NULL &&
	    (s->idle_ev = evtimer_new(ev_base, session_idle_cb, s)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	evtimer_add(s->idle_ev, &tv);
}

/*
 * Build spares on the stack as it is now until the sandbox has as many
 * as it wants (kept ones and ones on their way); spares on an older
 * stack are let go. After an automatic session's publish (next), one
 * spare at least is built on the stack it left: the agent that ran it
 * most often runs the next command at once, and that command must see
 * the layer (a spare of the stack before is no use to it).
 */
static void
session_prepare(struct rt_sandbox *sb, int next)
{
	struct session		*s, *s1;
	struct layer_stack	*head;
	unsigned int		 have = 0, want, building = 0;
	char			*cause = NULL;

	if ((sb->spares_wanted == 0 && !next) || session_pool_max() == 0)
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
	if (next && want == 0)
		want = 1;
	if (want > session_pool_max())
		want = session_pool_max();
	while (have < want && building < session_build_max() &&
	    session_full(sb, NULL) == 0) {
		session_new(sb, 1, 0, NULL, NULL, NULL, 1);
		have++;
		building++;
	}
	layer_stack_free(head);
}

/*
 * The sessions of sandbox id that have ended but whose lease is still on
 * disk (their init is going): a squash neither plans around them nor
 * reclaims before they are gone (squash.c). NULL when there are none.
 */
char **
session_leaving(const char *id, size_t *n)
{
	struct rt_sandbox	*sb;
	struct session		*s;
	char			**ids = NULL;

	*n = 0;
	if ((sb = zygote_find(id)) == NULL)
		return (NULL);
	LIST_FOREACH(s, &sb->sessions, entry) {
		if (s->state != SESSION_ENDED || s->trashed)
			continue;
		ids = xreallocarray(ids, *n + 1, sizeof *ids);
		ids[(*n)++] = xstrdup(s->id);
	}
	return (ids);
}

/* The stack of sandbox id was replaced (a squash): spares on it go. */
void
session_restack(const char *id)
{
	struct rt_sandbox	*sb;

	if ((sb = zygote_find(id)) != NULL)
		session_prepare(sb, 0);
}

/*
 * End a session for why: kill everything in it; once its init is gone,
 * remove its scratch. Its changes, if not published, are lost. The
 * commands still attached are told (with message, or NULL) that it can
 * no longer run them.
 */
static void
session_end_for(struct session *s, const char *why, const char *message)
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
		session_lease_event(s, "lease.released");
		attrs = cJSON_CreateObject();
		cJSON_AddStringToObject(attrs, "workspace_session_id", s->id);
		cJSON_AddStringToObject(attrs, "reason", why);
		telemetry_event(s->sb->id, NULL, NULL, "session.destroyed",
		    attrs);
		log_debug("session %s ended reason=%s", s->id, why);
	}
	session_set_state(s, SESSION_ENDED);
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
	session_seal_answer(s, 0);
	session_clients_gone(s, message);
	if (s->init > 0) {
		kill(s->init, SIGKILL);
		return;		/* session_init_died finishes */
	}
	session_maybe_free(s);
}

void
session_end(struct session *s, const char *why)
{
	session_end_for(s, why, NULL);
}

/*
 * End a session and call cb(arg) once its scratch is removed (the room
 * its upper directory took is free again), from the loop: what an
 * explicit destroy answers after.
 */
void
session_end_then(struct session *s, const char *why, void (*cb)(void *),
    void *arg)
{
	if (s->trashed) {
		trash_empty_then(cb, arg);
		return;
	}
	s->gone_cb = cb;
	s->gone_arg = arg;
	session_end_for(s, why, NULL);
}

/*
 * A sandbox is being destroyed, or its container has died: end every
 * session this process has in it, for reason (the PID namespace of each
 * session's init takes all of the session's processes along; their
 * commands end with message), and its zygote (sessions being made fail
 * with message), and forget the container. The container's cgroups, as
 * cgroup.procs paths, are handed to the caller (who frees them; NULL
 * when none were learnt), so that whatever is left in them can be
 * killed.
 */
char **
session_forget(const char *id, const char *reason, const char *message,
    size_t *n)
{
	struct rt_sandbox	*sb;
	struct session		*s, *s1;

	*n = 0;
	if ((sb = zygote_find(id)) == NULL)
		return (NULL);
	LIST_FOREACH_SAFE(s, &sb->sessions, entry, s1) {
		if (s->state != SESSION_STARTING)
			session_end_for(s, reason, message);
	}
	return (zygote_forget(sb, message, n));
}

/*
 * Messages from a session's init: its root, its commands' pids, exits
 * and errors, the seal and the finish. A message it should not send
 * ends the session: its init is not ours to trust.
 */
static void
session_ctl_cb(evutil_socket_t fd, short events, void *arg)
{
	struct session		*s = arg;
	struct session_client	*sc;
	struct nsexec_msg	 m;
	char			*buf;
	int			 r;

	/*
	 * An init that has died since it wrote is reaped first, so that
	 * what it said (a command's exit, say) is acted on knowing it is
	 * gone, whatever order the loop saw the two in.
	 */
	if (s->init > 0 && (s->state == SESSION_LIVE ||
	    s->state == SESSION_DEAD))
		job_reap_pid(s->init);
	buf = xmalloc(4096);
	while (s->ctl == fd) {
		r = nsexec_msg_recv(fd, buf, 4096, &m);
		if (r == -1 && errno == EAGAIN)
			break;
		if (r == 1) {
			switch (m.type) {
			case NSEXEC_ROOT:
				if (s->rootfd != -1)
					goto protocol;
				s->rootfd = m.fds[0];
				m.fds[0] = -1;
				if (s->state == SESSION_STARTING && s->init > 0)
					session_started(s);
				break;
			case NSEXEC_SEALED:
				session_seal_answer(s, strcmp(m.f[0], "1") ==
				    0);
				break;
			case NSEXEC_FINISHED:
				session_finished(s);
				break;
			case NSEXEC_PID:
			case NSEXEC_EXIT:
			case NSEXEC_ERROR:
				LIST_FOREACH(sc, &s->clients, entry) {
					if (strcmp(sc->id, m.f[0]) == 0)
						break;
				}
				/* One that ended meanwhile is not heard. */
				if (sc != NULL)
					sc->message(sc, &m);
				break;
			default:
				goto protocol;
			}
			nsexec_msg_close(&m);
			continue;
		}
		if (r == -1) {
protocol:
			nsexec_msg_close(&m);
			log_warnx("session %s: its init broke the protocol (%s"
			    " message): ending it", s->id, r == -1 ?
			    "malformed" : nsexec_type_name(m.type));
			if (s->init > 0)
				kill(s->init, SIGKILL);
		}
		/* The init is gone: its commands went with it. */
		event_free(s->ctl_ev);
		s->ctl_ev = NULL;
		close(s->ctl);
		s->ctl = -1;
		if (s->state == SESSION_STARTING) {
			session_start_fail(s, "the session's init ended");
			break;
		}
		/* A publish waiting for the seal goes on, copying. */
		session_seal_answer(s, 0);
		session_clients_gone(s, NULL);
		break;
	}
	free(buf);
}

/* The session could not be made: answer its creator and clean up. */
static void
session_start_fail(struct session *s, const char *why)
{
	session_cb	 cb = s->start_cb;
	void		*arg = s->start_arg;
	struct cause	 cause = { 0 };

	cause_set(&cause, CAUSE_FAILED, "sandbox_id", s->sb->id, "cannot"
	    " start a workspace session in sandbox %s: %s", s->sb->id, why);
	log_warnx("%s", cause.message);
	if (s->ctl_ev != NULL) {
		event_free(s->ctl_ev);
		s->ctl_ev = NULL;
	}
	if (s->ctl != -1) {
		close(s->ctl);
		s->ctl = -1;
	}
	session_set_state(s, SESSION_ENDED);
	/* The container may have been replaced: learn it again. */
	s->sb->pid = 0;
	zygote_cancel(s->req);
	s->req = NULL;
	/* Changes a gone process left stay for another try: never lost. */
	if (!s->adopting)
		session_trash(s);
	session_free_later(s);
	if (cb != NULL)
		cb(NULL, &cause, arg);
	cause_clear(&cause);
}

/* The session is live: say so, and to whom asked for it. */
/* A session's lease is taken or let go: which layers it names. */
static void
session_lease_event(struct session *s, const char *name)
{
	cJSON	*attrs;

	if (s->lease == NULL)
		return;
	attrs = cJSON_CreateObject();
	cJSON_AddStringToObject(attrs, "workspace_session_id", s->id);
	cJSON_AddNumberToObject(attrs, "manifest_version", s->lease->version);
	cJSON_AddNumberToObject(attrs, "layer_count", (double)s->lease->n);
	cJSON_AddStringToObject(attrs, "top_layer_id", s->lease->ids[0]);
	telemetry_event(s->sb->id, NULL, NULL, name, attrs);
}

static void
session_live(struct session *s)
{
	cJSON	*attrs;

	session_set_state(s, SESSION_LIVE);
	attrs = cJSON_CreateObject();
	cJSON_AddStringToObject(attrs, "workspace_session_id", s->id);
	cJSON_AddStringToObject(attrs, "network_profile", s->isolated ?
	    "isolated" : "shared");
	cJSON_AddNumberToObject(attrs, "base_manifest_version",
	    s->lease->version);
	telemetry_event(s->sb->id, NULL, NULL, "session.created", attrs);
	session_lease_event(s, "lease.acquired");
	s->start_cb(s, NULL, s->start_arg);
}

/* The init is up: the session is live. */
static void
session_started(struct session *s)
{
	/*
	 * A failed builder of an earlier session is reaped by us too: one
	 * reaped before this session was asked for is not its init.
	 */
	job_watch_since(s->init, s->asked_ms, session_init_died, s);
	if (s->spare) {
		/* Built ahead of need and not asked for yet: kept. */
		s->spare = 0;
		session_keep(s);
		session_prepare(s->sb, 0);
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
 * sessions-total in all (fewer when the descriptors we may open would
 * not serve that many: each session holds two). 0, or 1 with a
 * server_busy cause (details: the limit and the sandbox) when asked.
 */
int
session_full(struct rt_sandbox *sb, struct cause *cause)
{
	static long long	 fdmax = -1;
	struct rt_sandbox	*other;
	struct rlimit		 rl;
	unsigned int		 n;
	long long		 total;

	/* Spares are bounded by the pool, and ask for nothing. */
	if ((n = session_counted(sb)) >=
	    cfg_limit(LIMIT_SESSIONS_PER_SANDBOX)) {
		if (cause != NULL)
			cause_set(cause, CAUSE_BUSY, "limit",
			    "sessions-per-sandbox", "sandbox %s has %u"
			    " workspace sessions, the most it may have (limit"
			    " sessions-per-sandbox); end one first", sb->id, n);
		goto full;
	}
	n = 0;
	for (other = zygote_next(NULL); other != NULL;
	    other = zygote_next(other)) {
		if (zygote_same_tenant(sb, other))
			n += session_counted(other);
	}
	if (n >= cfg_limit(LIMIT_SESSIONS_PER_TENANT)) {
		if (cause != NULL)
			cause_set(cause, CAUSE_BUSY, "limit",
			    "sessions-per-tenant", "the sandboxes of tenant %s"
			    " have %u workspace sessions, the most one tenant"
			    " may have (limit sessions-per-tenant); end one"
			    " first", sb->tenant, n);
		goto full;
	}
	if (fdmax == -1)
		fdmax = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
		    rl.rlim_cur != RLIM_INFINITY ? (long long)rl.rlim_cur :
		    1048576;
	total = cfg_limit(LIMIT_SESSIONS_TOTAL);
	if (total > (fdmax - SESSION_FD_RESERVE) / 3)
		total = (fdmax - SESSION_FD_RESERVE) / 3;
	if ((long long)session_count >= total) {
		if (cause != NULL)
			cause_set(cause, CAUSE_BUSY, "limit", "sessions-total",
			    "the server has %u workspace sessions, the most it"
			    " may have (limit sessions-total, and the"
			    " descriptors it may open); try again when some"
			    " have ended", session_count);
		goto full;
	}
	return (0);
full:
	if (cause != NULL)
		cause_detail(cause, "sandbox_id", sb->id);
	return (1);
}

/*
 * Start a workspace session on the stack as it is now. cb(session) once
 * it is live, or cb(NULL, cause). An automatic one takes a kept
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
	struct cause		 c = { 0 };
	char			*cause = NULL;

	if (!automatic) {
		session_new(sb, 0, isolated, cb, arg, NULL, 0);
		return;
	}
	if ((head = layer_stack_read(sb->id, &cause)) == NULL) {
		cause_set(&c, CAUSE_INTERNAL, "sandbox_id", sb->id, "%s",
		    cause);
		cb(NULL, &c, arg);
		cause_clear(&c);
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
	session_prepare(sb, 0);
}

/*
 * A squash reclaimed a layer the head we read named, before the builder
 * held it (layer.c): the session is built again, once, on the head as it
 * is now, for whoever asked for it.
 */
static void
session_build_again(struct session *s, const char *why)
{
	struct rt_sandbox	*sb = s->sb;
	session_cb		 cb = s->start_cb;
	void			*arg = s->start_arg;
	int			 automatic = s->automatic;
	int			 isolated = s->isolated, spare = s->spare;

	log_debug("session %s: %s; building it again", s->id, why);
	s->start_cb = NULL;
	session_start_fail(s, why);
	session_again = 1;
	session_new(sb, automatic, isolated, cb, arg, NULL, spare);
	session_again = 0;
}

/*
 * The zygote has answered: the session's init runs (it says its root on
 * the control socket when it is up), or there is none, and why.
 */
static void
session_built(pid_t init, const char *why, void *arg)
{
	struct session	*s = arg;

	s->req = NULL;
	if (init <= 0) {
		if (why != NULL && strncmp(why, NSEXEC_STALE_LAYERS,
		    strlen(NSEXEC_STALE_LAYERS)) == 0 && !s->again) {
			session_build_again(s, why);
			return;
		}
		session_start_fail(s, why);
		return;
	}
	if (s->state != SESSION_STARTING)
		return;
	s->init = init;
	if (s->rootfd != -1)
		session_started(s);
}

/* A session built anew, on head (NULL: read it); a spare asks nobody. */
static void
session_new(struct rt_sandbox *sb, int automatic, int isolated,
    session_cb cb, void *arg, struct layer_stack *head, int spare)
{
	char	rnd[13], id[17];

	util_random_hex(rnd, 12);
	snprintf(id, sizeof id, "ws-%s", rnd);
	session_build(sb, id, 0, automatic, isolated, cb, arg, head, spare);
}

/*
 * Build session id: anew, or (adopt) in the directory a process that is
 * gone left, on the stack its lease names (head), its changes kept.
 */
static void
session_build(struct rt_sandbox *sb, const char *id, int adopt, int automatic,
    int isolated, session_cb cb, void *arg, struct layer_stack *head,
    int spare)
{
	struct session		*s;
	struct cause		 c = { 0 };
	char			 name[32], *cause = NULL;
	char			*procs = NULL;
	int			 sv[2], sndbuf = NSEXEC_MSG_MAX * 2;

	s = xcalloc(1, sizeof *s);
	strlcpy(s->id, id, sizeof s->id);
	s->adopting = adopt;
	s->adopt_lock = adopt ? session_adopt_fd : -1;
	session_adopt_fd = -1;
	s->sb = sb;
	s->automatic = automatic;
	s->isolated = isolated;
	s->ctl = -1;
	s->rootfd = -1;
	LIST_INIT(&s->clients);
	s->state = SESSION_STARTING;
	s->start_cb = cb;
	s->start_arg = arg;
	s->spare = spare;
	/* An adopted session stands on its own stack: never on another. */
	s->again = session_again || adopt;
	s->dir = state_where(STATE_SESSIONS, sb->id, "%s", s->id);
	LIST_INSERT_HEAD(&sb->sessions, s, entry);
	session_count++;
	/*
	 * Only a managed session is ever frozen (an automatic one's
	 * processes are gone before its publish): an automatic session has
	 * no freezer group, so its builder is not moved into one (a move
	 * waits for an RCU grace period on cgroup v1).
	 */
	if (sb->freezer != NULL && !automatic) {
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
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		xasprintf(&cause, "socketpair: %s", strerror(errno));
		goto fail;
	}
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	s->ctl = sv[0];
	util_set_nonblock(s->ctl);
	s->ctl_ev = event_new(ev_base, s->ctl, EV_READ | EV_PERSIST,
	    session_ctl_cb, s);
	if (s->ctl_ev == NULL)
		fatalx("%s: event_new", __func__);
	event_add(s->ctl_ev, NULL);
	if (s->cgroup != NULL)
		xasprintf(&procs, "%s/cgroup.procs", s->cgroup);
	s->asked_ms = now_ms();
	s->req = zygote_build(sb, s->id, s->isolated, s->adopting,
	    procs != NULL ? procs : "", s->dir, s->lease_text, s->lease, sv[1],
	    session_built, s);
	free(procs);
	return;

fail:
	session_set_state(s, SESSION_ENDED);
	if (!s->adopting)
		session_trash(s);
	session_free_later(s);
	if (cb != NULL) {
		cause_set(&c, CAUSE_INTERNAL, "sandbox_id", sb->id, "%s",
		    cause);
		cb(NULL, &c, arg);
		cause_clear(&c);
	} else
		log_warnx("a spare session in sandbox %s: %s", sb->id, cause);
	free(cause);
}

struct session_publish {
	struct session		*s;
	struct tspan		*span;		/* the publish's */
	session_publish_cb	 cb;
	void			*arg;
	struct publish_args	 a;
	char			*upper;
	char			*owner;
};

/* The end of a publish, or of its start: answer with its outcome. */
static void
session_publish_end(struct session_publish *sp, cJSON *result,
    const struct cause *cause)
{
	struct session		*s = sp->s;
	struct rt_sandbox	*sb = s->sb;
	cJSON			*attrs, *details;
	const char		*class;
	int			 automatic, published;

	if (s->cgroup != NULL && !s->automatic)
		cgroup_freeze(s->cgroup, 0);
	/* Rejected, a managed session goes on: writable again. */
	if (!s->automatic && s->ctl != -1 && cause != NULL)
		session_send(s, NSEXEC_UNSEAL, NULL, 0, NULL, 0);
	s->publishing = 0;
	if (cause != NULL) {
		details = cause->details;
		class = cJSON_GetStringValue(cJSON_GetObjectItem(details,
		    "publish_reject_class"));
		attrs = cJSON_CreateObject();
		cJSON_AddStringToObject(attrs, "workspace_session_id", s->id);
		cJSON_AddStringToObject(attrs, "reject_class", class != NULL ?
		    class : "?");
		telemetry_event(sb->id, NULL, sp->span, "publish.rejected",
		    attrs);
		notice(sb->tenant, NOTICE_WARNING, "publish.rejected", sb->id,
		    "the publish of workspace session %s was rejected (%s):"
		    " %s", s->id, class != NULL ? class : "?",
		    cause->message);
	}
	automatic = s->automatic;
	published = cJSON_IsObject(cJSON_GetObjectItem(result, "publish"));
	/*
	 * A new stack, or an automatic session over: spares for the next,
	 * on their way before the answer is.
	 */
	if (automatic || published)
		session_prepare(sb, automatic && published);
	sp->cb(s, result, cause, sp->arg);
	free(sp->upper);
	free(sp->owner);
	free(sp);
}

/* A refusal before the publishing process ran. */
static void
session_publish_refuse(struct session_publish *sp, const char *class,
    const char *message)
{
	struct cause	cause = { 0 };

	publish_rejection(&cause, "workspace_session_id", sp->s->id, class,
	    message, NULL);
	session_publish_end(sp, NULL, &cause);
	cause_clear(&cause);
}

static void
session_publish_done(cJSON *result, const struct cause *cause, void *arg)
{
	session_publish_end(arg, result, cause);
}

/* The session's processes are still: the publishing process may go. */
static void
session_publish_start(struct session_publish *sp)
{
	publish_session(&sp->a, sp->s->id, sp->s->sb->tenant, sp->span,
	    session_publish_done, sp);
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
 * cb(session, result, NULL, arg) or cb(session, NULL, cause, arg) gets
 * the outcome (publish_session).
 */
void
session_publish(struct session *s, const char *owner, struct tspan *span,
    session_publish_cb cb, void *arg)
{
	struct session_publish	*sp;
	struct rt_sandbox	*sb;
	struct dirent		*de;
	DIR			*d;
	char			*upper;
	int			 empty = 1, fd, automatic, answered;
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
		cb(s, rep, NULL, arg);
		cJSON_Delete(rep);
		if (automatic)
			session_prepare(sb, 0);
		return;
	}
	sp = xcalloc(1, sizeof *sp);
	sp->s = s;
	sp->span = span;
	sp->cb = cb;
	sp->arg = arg;
	sp->upper = upper;
	sp->owner = xstrdup(owner);
	sp->a.sandbox = s->sb->id;
	sp->a.upper = sp->upper;
	sp->a.base = s->lease;
	sp->a.owner = sp->owner;
	s->publishing = 1;
	s->sealing = sp;
	/* Sealed along with the finish: its answer, now or to come. */
	if (s->preseal != SESSION_SEAL_NONE) {
		answered = s->preseal == SESSION_SEAL_ANSWERED;
		s->preseal = SESSION_SEAL_NONE;
		if (answered)
			session_sealed(s, s->presealed);
		return;
	}
	/* First /workspace read-only (see session_sealed), by its init. */
	if (s->init > 0 && session_send(s, NSEXEC_SEAL, NULL, 0, NULL,
	    0) == 0)
		return;
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

/* In a helper of sandbox sbox: confine it to the sandbox's state. */
static int
session_measure_confine(const char *sbox, int fd)
{
	const char	*rw[1];
	char		*dir, *cause = NULL;
	int		 r;

	dir = state_where(STATE_SANDBOX, sbox, NULL);
	rw[0] = dir;
	r = confine_enter(rw, 1, NULL, 0, &cause);
	free(dir);
	if (r != 0) {
		r = job_fail(fd, CAUSE_INTERNAL, NULL, NULL, "%s", cause);
		free(cause);
		return (r != 0 ? r : 1);
	}
	return (0);
}

/*
 * In a helper of sandbox sbox: the bytes of the regular files in each of
 * n uppers, as {"bytes": [N, ...]} in order, null for one that cannot be
 * measured (gone since, or too deep). The exit status.
 */
int
session_measure_many_child(const char *sbox, char **uppers, size_t n,
    int fd)
{
	cJSON			*res, *list;
	unsigned long long	 bytes;
	size_t			 i;
	int			 r;

	if ((r = session_measure_confine(sbox, fd)) != 0)
		return (r);
	res = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(res, "bytes");
	for (i = 0; i < n; i++) {
		if (tree_size(uppers[i], &bytes) != 0)
			cJSON_AddItemToArray(list, cJSON_CreateNull());
		else
			cJSON_AddItemToArray(list,
			    cJSON_CreateNumber((double)bytes));
	}
	r = job_answer(fd, res, NULL);
	cJSON_Delete(res);
	return (r);
}

/*
 * In a helper of sandbox sbox: confine it to the sandbox's state, then
 * answer {"bytes"} of the regular files in upper (tree_size), or why it
 * cannot be measured. The exit status.
 */
int
session_measure_child(const char *sbox, const char *upper, int fd)
{
	cJSON			*res;
	unsigned long long	 bytes;
	int			 r;

	if ((r = session_measure_confine(sbox, fd)) != 0)
		return (r);
	if (tree_size(upper, &bytes) != 0)
		return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "cannot measure"
		    " the session's changes: %s", errno == ELOOP ? "its tree"
		    " is deeper than 4000 levels" : strerror(errno)));
	res = cJSON_CreateObject();
	cJSON_AddNumberToObject(res, "bytes", (double)bytes);
	r = job_answer(fd, res, NULL);
	cJSON_Delete(res);
	return (r);
}

/* The child: the bytes of regular files in the upper directory. */
static int
session_size_child(void *arg, int fd)
{
	struct session_size	*z = arg;

	return (session_measure_child(z->sandbox, z->upper, fd));
}

static void
session_size_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct session_size	*z = arg;
	unsigned long long	 bytes = 0;
	double			 v;

	v = cJSON_GetNumberValue(cJSON_GetObjectItem(result, "bytes"));
	if (cause != NULL)
		log_warnx("session %s: its size: %s", z->s->id,
		    cause->message);
	else if (v >= 0)	/* not NaN */
		bytes = (unsigned long long)v;
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

#define SESSION_LEASE_MAX	(1024 * 1024)

/*
 * The leases of the workspace sessions of sandbox sbox, of any process:
 * the one reader of lease.json. Each names its session, its lease (NULL
 * when there is none yet, or it cannot be read: too long, not JSON) and
 * whether its owner lives. With SESSION_LEASES_LIVE, only those of a
 * live owner whose stack reads, with it, up to max of them. The owner's
 * liveness is read in /proc: a confined child reads the leases before
 * its confinement. 0, or -1 with a cause when the sessions cannot be
 * listed (none: 0 leases).
 */
int
session_leases(const char *sbox, int flags, size_t max,
    struct session_leases *sl, char **cause)
{
	struct dirent		*de;
	struct session_lease	*l;
	DIR			*d;
	char			*dir, *path, *text, *msg;
	size_t			 len;
	cJSON			*lease, *v;
	int			 dfd, fd, alive;

	sl->l = NULL;
	sl->n = 0;
	dir = state_where(STATE_SESSIONS, sbox, NULL);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || (d = fdopendir(dfd)) == NULL) {
		if (dfd != -1)
			close(dfd);
		if (errno == ENOENT) {
			free(dir);
			return (0);
		}
		xasprintf(cause, "cannot read the sessions of %s: %s", sbox,
		    strerror(errno));
		free(dir);
		return (-1);
	}
	free(dir);
	while ((de = readdir(d)) != NULL && sl->n < max) {
		if (de->d_name[0] == '.' || !util_id_valid(de->d_name))
			continue;
		xasprintf(&path, "%s/lease.json", de->d_name);
		fd = openat(dirfd(d), path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		free(path);
		lease = NULL;
		if (fd != -1) {
			text = tree_read_fd(fd, SESSION_LEASE_MAX, &len);
			close(fd);
			if (text != NULL)
				lease = cJSON_ParseWithLength(text, len);
			free(text);
			if (!cJSON_IsObject(lease)) {
				cJSON_Delete(lease);
				lease = NULL;
			}
		}
		alive = lease != NULL && state_owner_alive(
		    cJSON_GetObjectItem(lease, "owner"));
		/* A managed orphan will be taken up: it counts as live. */
		if ((flags & SESSION_LEASES_LIVE) && !alive &&
		    (flags & SESSION_LEASES_ORPHANS) && lease != NULL &&
		    !cJSON_IsTrue(cJSON_GetObjectItem(lease, "automatic")))
			alive = 1;
		if ((flags & SESSION_LEASES_LIVE) && !alive) {
			cJSON_Delete(lease);
			continue;
		}
		sl->l = xreallocarray(sl->l, sl->n + 1, sizeof *sl->l);
		l = &sl->l[sl->n];
		memset(l, 0, sizeof *l);
		if (flags & SESSION_LEASES_LIVE) {
			v = cJSON_GetObjectItem(lease, "manifest_version");
			msg = NULL;
			if (cJSON_IsNumber(v))
				l->ls = layer_stack_from_json(
				    (int)v->valuedouble, cJSON_GetObjectItem(
				    lease, "layers"), &msg);
			/*
			 * A live session whose lease names no stack it can
			 * be told by: skipped, or kept as faulty for those
			 * that must not take its layers away (squash.c).
			 */
			if (l->ls == NULL && (flags & SESSION_LEASES_FAULTY)) {
				xasprintf(&l->faulty, "its lease names no"
				    " valid layer stack: %s", msg != NULL ? msg :
				    "no manifest_version");
			}
			free(msg);
			if (l->ls == NULL && l->faulty == NULL) {
				cJSON_Delete(lease);
				continue;
			}
		}
		l->ws = xstrdup(de->d_name);
		l->lease = lease;
		l->alive = alive;
		l->automatic = cJSON_IsTrue(cJSON_GetObjectItem(lease,
		    "automatic"));
		sl->n++;
	}
	closedir(d);
	return (0);
}

void
session_leases_free(struct session_leases *sl)
{
	size_t	i;

	for (i = 0; i < sl->n; i++) {
		free(sl->l[i].ws);
		free(sl->l[i].faulty);
		cJSON_Delete(sl->l[i].lease);
		layer_stack_free(sl->l[i].ls);
	}
	free(sl->l);
	sl->l = NULL;
	sl->n = 0;
}

/* Whether dir/name (or dir, name NULL) changed in the last 30 s. */
static int
session_young(const char *dir, const char *name)
{
	struct stat	 st;
	char		*path;
	int		 r;

	if (name != NULL)
		xasprintf(&path, "%s/%s", dir, name);
	else
		path = xstrdup(dir);
	r = stat(path, &st) == 0 && st.st_mtime + 30 > time(NULL);
	free(path);
	return (r);
}

/*
 * Recovery of the workspace sessions of sandbox id whose lease names a
 * process that is gone: an automatic session's scratch (its command was
 * cut short: its changes are not published) goes to the trash, and a
 * session.abandoned event says its changes are lost; a managed session
 * with a lease stays, to be taken up again (session_adopt).
 */
void
session_recover(const char *id)
{
	struct session_leases	 sl;
	struct session_lease	*l;
	char			*dir, *path, *to, *cause = NULL;
	cJSON			*attrs, *cg;
	size_t			 i;

	if (session_leases(id, 0, SIZE_MAX, &sl, &cause) != 0) {
		log_warnx("recovery: %s", cause);
		free(cause);
		return;
	}
	dir = state_where(STATE_SESSIONS, id, NULL);
	for (i = 0; i < sl.n; i++) {
		l = &sl.l[i];
		if (l->alive)
			continue;
		/*
		 * No lease yet, or one being rewritten in place: a session
		 * being made, or a kept one taken, right now?
		 */
		xasprintf(&path, "%s/%s", dir, l->ws);
		if (l->lease == NULL && (session_young(path, NULL) ||
		    session_young(path, "lease.json"))) {
			free(path);
			continue;
		}
		/* Its processes may have been frozen for a publish. */
		cg = cJSON_GetObjectItem(l->lease, "cgroup");
		if (cJSON_IsString(cg))
			cgroup_session_abandon(cg->valuestring, l->ws);
		/*
		 * A managed session's changes stay for the process that
		 * serves the sandbox next to take up (session_adopt).
		 */
		if (l->lease != NULL && !l->automatic) {
			free(path);
			continue;
		}
		to = state_trash_path(id, l->ws);
		if (rename(path, to) == 0) {
			log_info("recovery: workspace session %s of %s was"
			    " abandoned by its process; its unpublished"
			    " changes are discarded", l->ws, id);
			attrs = cJSON_CreateObject();
			cJSON_AddStringToObject(attrs, "workspace_session_id",
			    l->ws);
			telemetry_event(id, NULL, NULL, "session.abandoned",
			    attrs);
		}
		free(path);
		free(to);
	}
	free(dir);
	session_leases_free(&sl);
}

/* The sessions of this process by kind, for metrics.c. */
void
session_metrics(struct metrics_counts *mc)
{
	struct rt_sandbox	*sb;
	struct session		*s;

	for (sb = zygote_next(NULL); sb != NULL; sb = zygote_next(sb)) {
		LIST_FOREACH(s, &sb->sessions, entry) {
			if (s->state == SESSION_ENDED)
				continue;
			if (s->spare || s->state == SESSION_IDLE)
				mc->sessions_spare++;
			else if (s->automatic)
				mc->sessions_automatic++;
			else
				mc->sessions_managed++;
		}
	}
}

/*
 * Adoption. The managed sessions a process that is gone left behind (a
 * restart, a kill -9) keep their directory (session_recover leaves them):
 * the first process that serves their sandbox builds each again, under
 * its own id, on the stack its lease names, with its upper directory as
 * it was, so that its unpublished changes are there to read, change,
 * publish or destroy. Callers wait until the sandbox's orphans are live
 * (or have failed: a session that cannot be built again keeps its
 * directory for a later try, and is named in the log).
 */
struct session_adoption_wait {
	void			(*cb)(struct rt_sandbox *, void *);
	void			*arg;
};
struct session_adoption {
	size_t				 left;
	struct session_adoption_wait	*waits;
	size_t				 nwaits;
};

/*
 * The claim on a session left by a process that is gone: an exclusive
 * lock on its adopt.lock, held for as long as the session lives in the
 * process that takes it (so that two processes on one state directory
 * never both build it over one upper directory). The descriptor, or -1
 * when another process holds it.
 */
static int
session_claim(const char *sbox, const char *ws)
{
	char	*path;
	int	 fd;

	path = state_where(STATE_SESSIONS, sbox, "%s/adopt.lock", ws);
	fd = util_lock_try(path);
	free(path);
	return (fd);
}

/*
 * destroy_workspace_session of a session a process that is gone left and
 * no process has taken up (one that could not be built again: its disk
 * full, say): its directory goes to the trash, under its claim. 1 when
 * it was one, 0 when there is none such.
 */
int
session_orphan_destroy(struct rt_sandbox *sb, const char *ws)
{
	struct session_leases	 sl;
	char			*dir, *to, *cause = NULL;
	size_t			 i;
	int			 fd, found = 0;

	if (!util_id_valid(ws) || session_find(sb, ws) != NULL)
		return (0);
	if (session_leases(sb->id, 0, SIZE_MAX, &sl, &cause) != 0) {
		free(cause);
		return (0);
	}
	for (i = 0; i < sl.n; i++) {
		if (strcmp(sl.l[i].ws, ws) == 0 && !sl.l[i].alive &&
		    sl.l[i].lease != NULL && !sl.l[i].automatic)
			found = 1;
	}
	session_leases_free(&sl);
	if (!found || (fd = session_claim(sb->id, ws)) == -1)
		return (0);
	dir = state_where(STATE_SESSIONS, sb->id, "%s", ws);
	to = state_trash_path(sb->id, ws);
	found = rename(dir, to) == 0;
	close(fd);
	if (found) {
		log_info("workspace session %s of %s, left by a process that"
		    " is gone, destroyed with its changes", ws, sb->id);
		trash_soon();
		if (session_gone_hook != NULL)
			session_gone_hook(sb->id, sb->tenant);
	}
	free(dir);
	free(to);
	return (found);
}

/* One build answered (or all asked for): the last lets the callers go. */
static void
session_adoption_step(struct rt_sandbox *sb)
{
	struct session_adoption		*a = sb->adoption;
	struct session_adoption_wait	*w;
	size_t				 i, n;

	if (--a->left > 0)
		return;
	w = a->waits;
	n = a->nwaits;
	free(a);
	sb->adoption = NULL;
	for (i = 0; i < n; i++)
		w[i].cb(sb, w[i].arg);
	free(w);
}

static void
session_adopted(struct session *s, const struct cause *cause, void *arg)
{
	struct rt_sandbox		*sb = arg;
	cJSON				*attrs;

	if (s != NULL) {
		s->adopting = 0;
		log_info("workspace session %s of %s taken up again with its"
		    " changes", session_id(s), sb->id);
		attrs = cJSON_CreateObject();
		cJSON_AddStringToObject(attrs, "workspace_session_id",
		    session_id(s));
		telemetry_event(sb->id, NULL, NULL, "session.adopted", attrs);
	} else
		log_warnx("sandbox %s: a workspace session left by a process"
		    " that is gone could not be taken up again (its changes"
		    " stay for a later try): %s", sb->id, cause->message);
	session_adoption_step(sb);
}

void
session_adopt(struct rt_sandbox *sb, void (*cb)(struct rt_sandbox *, void *),
    void *arg)
{
	struct session_adoption	*a;
	struct session_leases	 sl;
	struct layer_stack	*ls;
	cJSON			*v, *np;
	char			*cause = NULL, *msg;
	size_t			 i, n = 0;
	int			 fd;

	if (sb->adoption != NULL) {
		a = sb->adoption;
		a->waits = xreallocarray(a->waits, a->nwaits + 1,
		    sizeof *a->waits);
		a->waits[a->nwaits].cb = cb;
		a->waits[a->nwaits++].arg = arg;
		return;
	}
	if (sb->adopted) {
		cb(sb, arg);
		return;
	}
	sb->adopted = 1;
	if (session_leases(sb->id, 0, SIZE_MAX, &sl, &cause) != 0) {
		log_warnx("sandbox %s: sessions left by a process that is"
		    " gone: %s", sb->id, cause);
		free(cause);
		cb(sb, arg);
		return;
	}
	a = xcalloc(1, sizeof *a);
	a->left = 1;		/* until every build has been asked for */
	a->waits = xcalloc(1, sizeof *a->waits);
	a->waits[0].cb = cb;
	a->waits[0].arg = arg;
	a->nwaits = 1;
	sb->adoption = a;
	for (i = 0; i < sl.n; i++) {
		if (sl.l[i].alive || sl.l[i].lease == NULL ||
		    sl.l[i].automatic || session_find(sb, sl.l[i].ws) != NULL)
			continue;
		v = cJSON_GetObjectItem(sl.l[i].lease, "manifest_version");
		msg = NULL;
		ls = cJSON_IsNumber(v) ? layer_stack_from_json(
		    (int)v->valuedouble, cJSON_GetObjectItem(sl.l[i].lease,
		    "layers"), &msg) : NULL;
		if (ls == NULL) {
			log_warnx("sandbox %s: workspace session %s cannot be"
			    " taken up again: its lease names no stack (%s)",
			    sb->id, sl.l[i].ws, msg != NULL ? msg : "no"
			    " version");
			free(msg);
			continue;
		}
		/* Another process taking it up holds its claim: leave it. */
		if ((fd = session_claim(sb->id, sl.l[i].ws)) == -1) {
			layer_stack_free(ls);
			continue;
		}
		np = cJSON_GetObjectItem(sl.l[i].lease, "network_profile");
		a->left++;
		n++;
		session_adopt_fd = fd;
		session_build(sb, sl.l[i].ws, 1, 0, cJSON_IsString(np) &&
		    strcmp(np->valuestring, "isolated") == 0, session_adopted,
		    sb, ls, 0);
	}
	session_leases_free(&sl);
	if (n > 0)
		log_info("sandbox %s: taking up %zu workspace session%s left"
		    " by a process that is gone", sb->id, n, n == 1 ? "" :
		    "s");
	/* The builds asked for: the last to answer lets the callers go. */
	session_adoption_step(sb);
}
