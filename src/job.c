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
 * Child processes for work too long for the event loop (copying and
 * hashing a workspace, removing a tree). A job runs a function in a
 * forked child that reports on a pipe; the parent reads the report on a
 * bufferevent (bounded) and reaps the child from the SIGCHLD handler with
 * waitpid(WNOHANG). A job is done only when the child has been reaped
 * and its pipe has reached end of file; then the callback runs once,
 * from the loop. A failed fork goes down the same path.
 *
 * A child answers once, with job_answer (a result or a cause), and
 * job.c alone reads what it wrote: the callback gets the result or the
 * cause; a child that ended without an answer, or wrote one too long or
 * malformed, becomes an internal cause naming the job.
 *
 * A helper job works on a sandbox's files: its child joins the sandbox's
 * helper control group first (cgroup.c), so what it costs is charged to
 * the sandbox and capped. Helpers are counted: at most helper-processes
 * run at once, and at most helper-per-sandbox for one sandbox; the rest
 * wait in a queue, in order, which callers keep within helper-queue
 * (job_helper_busy). Every child dies with the server (PR_SET_PDEATHSIG)
 * and can ask whether the server that forked it still lives
 * (job_parent_alive), so none commits work nobody will answer for.
 *
 * Moving a process into a control group waits, on cgroup v1, for an RCU
 * grace period (several milliseconds) unless another move came just
 * before. So a helper given as bytes (job_helper_msg) is not forked by
 * the server but by its sandbox's forker: a child of the server that
 * joined the sandbox's helper group once and forks helpers there on
 * request, each born in the group. The server sends it the function to
 * run (an address in the image both share: the forker is a fork of the
 * server, never exec'd), the bytes in a memfd and the report pipe; the
 * forker answers each helper's exit status, which stands for the
 * helper's reaping. The forker confines itself once, when it starts, as
 * the engine says (job_forker_view: to the sandbox's state and its
 * stack's base, layer_confine), so each
 * helper is born confined, and it keeps one helper forked ahead (a
 * spare), whose socket it hands to the server: the server sends the next
 * helper's job to the spare itself and tells the forker after, so that
 * neither a fork, nor the confinement, nor the forker's wake-up is paid
 * while a caller waits. Helpers started this way are queued and counted
 * as any other. A forker idle for JOB_FORKER_IDLE_SECONDS, or whose
 * sandbox is gone, is told to exit; one that dies takes its helpers (and
 * its spare) with it (they die with their parent) and they end as
 * killed.
 */

#include "config.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "sandbox-mcp.h"

#define JOB_REPORT_MAX	(4 * 1024 * 1024)
#define JOB_KEEP_MAX	8
#define JOB_MSG_MAX	(256 * 1024 * 1024)	/* a helper's bytes */
#define JOB_FORKER_IDLE_SECONDS	30
#define JOB_FORKER_KIDS_MAX	1024

/* Between the server and a forker, one datagram each. */
#define JOB_FORKER_START	1	/* with the report pipe and the memfd */
#define JOB_FORKER_CANCEL	2
#define JOB_FORKER_EXITED	3
#define JOB_FORKER_SPARE	4	/* a spare's pid, with its socket */
#define JOB_FORKER_ASSIGNED	5	/* id given to the spare pid */
struct job_forker_msg {
	uint32_t		 type;
	uint32_t		 id;
	int32_t			 status;
	int32_t			 pid;
	uintptr_t		 fn;
};

struct job_forker {
	char			*sandbox;
	pid_t			 pid;
	int			 fd;		/* -1 once told to go */
	struct event		*ev;
	struct event		*idle;
	unsigned int		 njobs;		/* helpers through it */
	int			 spare;		/* its spare's socket, or -1 */
	pid_t			 spare_pid;
	LIST_ENTRY(job_forker)	 entry;
};
static LIST_HEAD(, job_forker)	job_forkers =
    LIST_HEAD_INITIALIZER(job_forkers);
static char			job_comm[17];	/* in a forker */
static int			(*job_forker_confine)(const char *, char **);

#define JOB_REAPED	0x1
#define JOB_EOF		0x2
#define JOB_DETACHED	0x4
#define JOB_EARLY	0x8	/* the callback runs at the report's end */
#define JOB_QUEUED	0x10	/* a helper waiting for its turn */
#define JOB_RUNNING	0x20	/* a helper counted as running */

struct job {
	unsigned int		 id;
	char			*name;
	char			*sandbox;	/* a helper's, or NULL */
	char			*tenant;	/* whose sandbox it is */
	int			 (*fn)(void *, int);
	void			*fnarg;
	job_msg_fn		 mfn;		/* run by the forker */
	char			*msg;
	size_t			 msglen;
	struct job_forker	*forker;	/* running through it */
	int			 keep[JOB_KEEP_MAX];
	int			 nkeep;
	pid_t			 pid;
	int			 flags;
	int			 status;
	struct bufferevent	*bev;
	struct evbuffer		*report;
	struct event		*finish;
	int			 cut;		/* the report was too long */
	job_cb			 cb;
	void			*arg;
	LIST_ENTRY(job)		 entry;
	TAILQ_ENTRY(job)	 qentry;
};
static LIST_HEAD(, job)	jobs = LIST_HEAD_INITIALIZER(jobs);
static TAILQ_HEAD(, job) job_queue = TAILQ_HEAD_INITIALIZER(job_queue);
static unsigned int	job_next_id;
static unsigned int	job_nqueued;
static unsigned int	job_nhelpers;	/* running */
static pid_t		job_parent;	/* in a child: who forked it */

static void	job_check(struct job *);
static void	job_reaped_other(pid_t, int);
static void	job_start(struct job *);
static void	job_forker_done(struct job_forker *, struct job *);
static void	job_forker_remove(const char *);
static struct job_forker *job_forker_find(const char *);

/* How many helpers of a sandbox run now. */
static unsigned int
job_sandbox_running(const char *sandbox)
{
	struct job	*j;
	unsigned int	 n = 0;

	LIST_FOREACH(j, &jobs, entry) {
		if ((j->flags & JOB_RUNNING) && strcmp(j->sandbox, sandbox) ==
		    0)
			n++;
	}
	return (n);
}

/* How many helpers of a tenant's sandboxes run now. */
static unsigned int
job_tenant_running(const char *tenant)
{
	struct job	*j;
	unsigned int	 n = 0;

	LIST_FOREACH(j, &jobs, entry) {
		if ((j->flags & JOB_RUNNING) && strcmp(j->tenant, tenant) ==
		    0)
			n++;
	}
	return (n);
}

/*
 * Start queued helpers while there is room, in order; a sandbox, or a
 * tenant, at its share waits and the next in line goes first.
 */
static void
job_dequeue(void)
{
	struct job	*j, *j1;

	TAILQ_FOREACH_SAFE(j, &job_queue, qentry, j1) {
		if (job_nhelpers >= cfg_limit(LIMIT_HELPER_PROCESSES))
			break;
		if (job_sandbox_running(j->sandbox) >=
		    cfg_limit(LIMIT_HELPER_PER_SANDBOX) ||
		    job_tenant_running(j->tenant) >=
		    cfg_limit(LIMIT_HELPER_PER_TENANT))
			continue;
		TAILQ_REMOVE(&job_queue, j, qentry);
		job_nqueued--;
		j->flags &= ~JOB_QUEUED;
		job_start(j);
	}
}

/*
 * A helper no longer runs: its place goes to the next. The last helper
 * of a sandbox destroyed meanwhile takes the sandbox's helper group
 * along.
 */
static void
job_helper_done(struct job *j)
{
	struct job	*o;

	if (!(j->flags & JOB_RUNNING))
		return;
	j->flags &= ~JOB_RUNNING;
	job_nhelpers--;
	if (j->forker != NULL)
		job_forker_done(j->forker, j);
	job_dequeue();
	LIST_FOREACH(o, &jobs, entry) {
		if (o != j && o->sandbox != NULL && strcmp(o->sandbox,
		    j->sandbox) == 0)
			return;
	}
	if (state_record_gone(j->sandbox))
		job_forker_remove(j->sandbox);
}

/*
 * Helper groups of gone sandboxes whose last process was still leaving
 * them: tried again every JOB_GROUP_RETRY_MS (a helper's report ends
 * when its descriptors close, before the kernel takes it out of its
 * groups), JOB_GROUP_TRIES times.
 */
#define JOB_GROUP_RETRY_MS	100
#define JOB_GROUP_TRIES		100
struct job_group {
	char			*sandbox;
	int			 tries;
	LIST_ENTRY(job_group)	 entry;
};
static LIST_HEAD(, job_group)	job_groups = LIST_HEAD_INITIALIZER(job_groups);
static struct event		*job_groups_ev;

static void
job_groups_cb(evutil_socket_t fd, short events, void *arg)
{
	struct job_group	*g, *g1;
	struct timeval		 tv = { 0, JOB_GROUP_RETRY_MS * 1000 };

	LIST_FOREACH_SAFE(g, &job_groups, entry, g1) {
		if (cgroup_helper_remove(g->sandbox) == 0 ||
		    ++g->tries >= JOB_GROUP_TRIES) {
			if (g->tries >= JOB_GROUP_TRIES)
				log_warnx("the helper group of sandbox %s"
				    " stays busy; left in place", g->sandbox);
			LIST_REMOVE(g, entry);
			free(g->sandbox);
			free(g);
		}
	}
	if (!LIST_EMPTY(&job_groups))
		evtimer_add(job_groups_ev, &tv);
}

/* Remove a gone sandbox's helper group, now or a little later. */
static void
job_group_remove(const char *sandbox)
{
	struct job_group	*g;
	struct timeval		 tv = { 0, JOB_GROUP_RETRY_MS * 1000 };

	if (cgroup_helper_remove(sandbox) == 0)
		return;
	LIST_FOREACH(g, &job_groups, entry) {
		if (strcmp(g->sandbox, sandbox) == 0)
			return;
	}
	g = xcalloc(1, sizeof *g);
	g->sandbox = xstrdup(sandbox);
	LIST_INSERT_HEAD(&job_groups, g, entry);
	if (job_groups_ev == NULL && (job_groups_ev = evtimer_new(ev_base,
	    job_groups_cb, NULL)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	if (!evtimer_pending(job_groups_ev, NULL))
		evtimer_add(job_groups_ev, &tv);
}

/*
 * At start: the helper groups of ours whose sandboxes are gone (a
 * process ended while one was still busy, or was killed first) go.
 */
void
job_groups_recover(void)
{
	char	**ids;
	size_t	  n, i;

	ids = cgroup_helper_marked(&n);
	for (i = 0; i < n; i++) {
		if (!state_record_gone(ids[i])) {
			free(ids[i]);
			continue;
		}
		if (cgroup_helper_ours(ids[i])) {
			log_info("removing the helper group of sandbox %s,"
			    " which is gone", ids[i]);
			job_group_remove(ids[i]);
		} else {
			log_warnx("the helper group of sandbox %s is not the"
			    " one made here; its mark goes, the group stays",
			    ids[i]);
			cgroup_helper_unmark(ids[i]);
		}
		free(ids[i]);
	}
	free(ids);
}

/*
 * Nothing of sandbox runs or waits any more, and it is gone: its helper
 * group goes (a job that ended with its forker is freed after it).
 */
static void
job_sandbox_check(const char *sandbox)
{
	struct job	*j;

	LIST_FOREACH(j, &jobs, entry) {
		if (j->sandbox != NULL && strcmp(j->sandbox, sandbox) == 0)
			return;
	}
	if (job_forker_find(sandbox) == NULL && state_record_gone(sandbox))
		job_group_remove(sandbox);
}

static void
job_free(struct job *j)
{
	job_helper_done(j);
	LIST_REMOVE(j, entry);
	if (j->sandbox != NULL)
		job_sandbox_check(j->sandbox);
	free(j->sandbox);
	free(j->tenant);
	if (j->bev != NULL)
		bufferevent_free(j->bev);
	if (j->finish != NULL)
		event_free(j->finish);
	evbuffer_free(j->report);
	free(j->msg);
	free(j->name);
	free(j);
}

/*
 * Read a child's answer: the result (in rep, which the caller frees) or
 * the cause.
 */
static cJSON *
job_decode(struct job *j, cJSON **rep, struct cause *cause)
{
	cJSON		*result, *c, *kind, *message, *details;
	size_t		 len = evbuffer_get_length(j->report);
	const char	*text, *end;
	char		 how[64] = "";

	*rep = NULL;
	if (j->status == -1) {
		cause_set(cause, CAUSE_INTERNAL, NULL, NULL, "cannot start the"
		    " %s process", j->name);
		return (NULL);
	}
	if (len > 0 && !j->cut) {
		text = (const char *)evbuffer_pullup(j->report, len);
		*rep = cJSON_ParseWithLengthOpts(text, len, &end, 0);
		/* One answer, nothing after it. */
		if (*rep != NULL && !util_json_blank(end, text + len)) {
			cJSON_Delete(*rep);
			*rep = NULL;
		}
	}
	result = cJSON_GetObjectItem(*rep, "result");
	c = cJSON_GetObjectItem(*rep, "cause");
	kind = cJSON_GetObjectItem(c, "kind");
	message = cJSON_GetObjectItem(c, "message");
	details = cJSON_GetObjectItem(c, "details");
	if (cJSON_IsObject(*rep) && cJSON_GetArraySize(*rep) == 1 &&
	    result != NULL)
		return (result);
	if (cJSON_IsObject(*rep) && cJSON_GetArraySize(*rep) == 1 &&
	    cJSON_IsString(kind) && cJSON_IsString(message) &&
	    (details == NULL || cJSON_IsObject(details))) {
		cause_set_details(cause, cause_kind_parse(kind->valuestring),
		    details != NULL ? cJSON_Duplicate(details, 1) : NULL, "%s",
		    message->valuestring);
		return (NULL);
	}
	if (j->flags & JOB_REAPED) {
		if (WIFSIGNALED(j->status))
			snprintf(how, sizeof how, " (killed by signal %d)",
			    WTERMSIG(j->status));
		else
			snprintf(how, sizeof how, " (exit status %d)",
			    WEXITSTATUS(j->status));
	}
	if (len == 0)
		cause_set(cause, CAUSE_INTERNAL, NULL, NULL, "the %s process"
		    " ended without an answer%s", j->name, how);
	else
		cause_set(cause, CAUSE_INTERNAL, NULL, NULL, "the %s process"
		    " gave %s answer%s", j->name, j->cut ? "too long an" :
		    "a malformed", how);
	return (NULL);
}

static void
job_finish_cb(evutil_socket_t fd, short events, void *arg)
{
	struct job	*j = arg;
	struct cause	 cause = { 0 };
	cJSON		*rep, *result;

	log_trace(TRACE_JOB, "job %u %s done status=%d report=%zu", j->id,
	    j->name, j->status, evbuffer_get_length(j->report));
	if (!(j->flags & JOB_DETACHED)) {
		j->flags |= JOB_DETACHED;
		result = job_decode(j, &rep, &cause);
		j->cb(result, result != NULL ? NULL : &cause, j->arg);
		cause_clear(&cause);
		cJSON_Delete(rep);
	}
	if ((j->flags & (JOB_REAPED | JOB_EOF)) == (JOB_REAPED | JOB_EOF))
		job_free(j);
}

/*
 * Both conditions met (or, for an early job, the report complete):
 * complete from the loop.
 */
static void
job_check(struct job *j)
{
	if ((j->flags & (JOB_REAPED | JOB_EOF)) == (JOB_REAPED | JOB_EOF) ||
	    (j->flags & (JOB_EARLY | JOB_EOF | JOB_DETACHED)) ==
	    (JOB_EARLY | JOB_EOF))
		event_active(j->finish, EV_TIMEOUT, 1);
}

/*
 * Run a job's callback as soon as its report is complete (the child
 * closed it), with status 0, rather than after the child is reaped: for
 * callers that need the report only. The child is still reaped.
 */
void
job_early(struct job *j)
{
	j->flags |= JOB_EARLY;
	job_check(j);
}

static void
job_read_cb(struct bufferevent *bev, void *arg)
{
	struct job	*j = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);
	size_t		 len = evbuffer_get_length(in);

	if (j->cut || evbuffer_get_length(j->report) + len > JOB_REPORT_MAX) {
		if (!j->cut)
			log_warnx("job %u %s: report longer than %d bytes",
			    j->id, j->name, JOB_REPORT_MAX);
		j->cut = 1;
		evbuffer_drain(in, len);
		return;
	}
	evbuffer_remove_buffer(in, j->report, len);
}

static void
job_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct job	*j = arg;

	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		job_read_cb(bev, j);
		bufferevent_disable(bev, EV_READ);
		j->flags |= JOB_EOF;
		job_check(j);
	}
}

/*
 * Run fn(fnarg, fd) in a child, which answers on fd (job_answer); its
 * return value is the exit status. cb(result, NULL, arg) or cb(NULL,
 * cause, arg) runs once from the loop when the child is reaped and the
 * report complete; the result is valid during the call.
 */
struct job *
job_fork(const char *name, int (*fn)(void *, int), void *fnarg, job_cb cb,
    void *arg)
{
	return (job_fork_keep(name, fn, fnarg, NULL, 0, cb, arg));
}

/*
 * job_fork, with descriptors the child keeps: keep[i] is at 4 + i in the
 * child (the report is at 3); every other descriptor is closed.
 */
struct job *
job_fork_keep(const char *name, int (*fn)(void *, int), void *fnarg,
    const int *keep, int nkeep, job_cb cb, void *arg)
{
	return (job_helper(name, NULL, NULL, fn, fnarg, keep, nkeep, cb,
	    arg));
}

/*
 * A job working on a sandbox's files (sandbox not NULL, of tenant):
 * charged to its helper group and counted, queued when there is no room
 * yet (fnarg and
 * the kept descriptors must then stay valid until the callback, or a
 * job_cancel). With a NULL sandbox, job_fork_keep.
 */
/* A job not started yet, in the list. */
static struct job *
job_new(const char *name, int (*fn)(void *, int), void *fnarg,
    const int *keep, int nkeep, job_cb cb, void *arg)
{
	struct job	*j;

	if (nkeep > JOB_KEEP_MAX)
		fatalx("%s: %d descriptors to keep", __func__, nkeep);
	j = xcalloc(1, sizeof *j);
	j->id = ++job_next_id;
	j->name = xstrdup(name);
	j->fn = fn;
	j->fnarg = fnarg;
	if (nkeep > 0)
		memcpy(j->keep, keep, nkeep * sizeof *keep);
	j->nkeep = nkeep;
	j->cb = cb;
	j->arg = arg;
	if ((j->report = evbuffer_new()) == NULL)
		fatalx("%s: evbuffer_new", __func__);
	if ((j->finish = evtimer_new(ev_base, job_finish_cb, j)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	LIST_INSERT_HEAD(&jobs, j, entry);
	return (j);
}

/* A helper of sandbox joins the queue, and starts if there is room. */
static void
job_enqueue(struct job *j, const char *sandbox, const char *tenant)
{
	char	*cause = NULL;

	j->sandbox = xstrdup(sandbox);
	j->tenant = xstrdup(tenant != NULL ? tenant : "");
	if (cgroup_helper_prepare(sandbox, &cause) != 0) {
		log_warnx("job %s: %s", j->name, cause);
		free(cause);
	}
	j->flags |= JOB_QUEUED;
	TAILQ_INSERT_TAIL(&job_queue, j, qentry);
	job_nqueued++;
	job_dequeue();
	if (j->flags & JOB_QUEUED)
		log_trace(TRACE_JOB, "job %u %s queued (%u waiting)", j->id,
		    j->name, job_nqueued);
}

/*
 * A job working on a sandbox's files (sandbox not NULL, of tenant):
 * charged to its helper group and counted, queued when there is no room
 * yet (fnarg and the kept descriptors must then stay valid until the
 * callback, or a job_cancel). With a NULL sandbox, job_fork_keep.
 */
struct job *
job_helper(const char *name, const char *sandbox, const char *tenant,
    int (*fn)(void *, int), void *fnarg, const int *keep, int nkeep,
    job_cb cb, void *arg)
{
	struct job	*j;

	j = job_new(name, fn, fnarg, keep, nkeep, cb, arg);
	if (sandbox == NULL)
		job_start(j);
	else
		job_enqueue(j, sandbox, tenant);
	return (j);
}

/* Whether the helper queue is full: callers answer server_busy. */
int
job_helper_busy(void)
{
	return (job_nqueued >= (unsigned int)cfg_limit(LIMIT_HELPER_QUEUE));
}

/*
 * In a child: whether the server that forked it still lives (a child
 * whose server died is reparented). Checked before a commit.
 */
int
job_parent_alive(void)
{
	return (job_parent != 0 && getppid() == job_parent);
}

/* ---- a sandbox's forker ---- */

/* Send one message, with descriptors (nfds of them) or none. */
static int
job_forker_send(int fd, const struct job_forker_msg *m, const int *fds,
    int nfds)
{
	struct msghdr	 mh;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(2 * sizeof(int))];
	} cmsg;
	ssize_t		 n;

	memset(&mh, 0, sizeof mh);
	iov.iov_base = (void *)m;
	iov.iov_len = sizeof *m;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds > 0) {
		memset(&cmsg, 0, sizeof cmsg);
		mh.msg_control = cmsg.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	do {
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	} while (n == -1 && errno == EINTR);
	return (n == (ssize_t)sizeof *m ? 0 : -1);
}

/*
 * Receive one message and up to two descriptors (fds[i] -1 where none
 * came). 1: a message, 0: the peer is gone, -1: nothing now or an error.
 */
static int
job_forker_recv(int fd, struct job_forker_msg *m, int fds[2])
{
	struct msghdr	 mh;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(2 * sizeof(int))];
	} cmsg;
	ssize_t		 n;
	size_t		 i, nfds;
	int		 got[2];

	fds[0] = fds[1] = -1;
	memset(&mh, 0, sizeof mh);
	iov.iov_base = m;
	iov.iov_len = sizeof *m;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cmsg.buf;
	mh.msg_controllen = sizeof cmsg.buf;
	do {
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	} while (n == -1 && errno == EINTR);
	if (n == 0)
		return (0);
	if (n == -1)
		return (errno == EAGAIN ? -1 : 0);
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfds; i++) {
			memcpy(&got[0], CMSG_DATA(cm) + i * sizeof(int),
			    sizeof(int));
			if (i < 2 && fds[i] == -1)
				fds[i] = got[0];
			else
				close(got[0]);
		}
	}
	if (n != (ssize_t)sizeof *m || (mh.msg_flags & (MSG_TRUNC |
	    MSG_CTRUNC))) {
		for (i = 0; i < 2; i++) {
			if (fds[i] != -1)
				close(fds[i]);
			fds[i] = -1;
		}
		m->type = 0;	/* not a message of ours: ignored */
	}
	return (1);
}

/* In a helper forked by the forker: read its bytes, run, exit. */
static __dead void
job_forker_helper(pid_t forker, const struct job_forker_msg *m, int report,
    int mfd)
{
	job_msg_fn	 fn = (job_msg_fn)m->fn;
	struct stat	 st;
	sigset_t	 set;
	char		*buf;
	size_t		 len, off = 0;
	ssize_t		 n;
	int		 code;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != forker)
		_exit(126);
	prctl(PR_SET_NAME, job_comm, 0, 0, 0);	/* the server's */
	job_parent = forker;
	if (fstat(mfd, &st) != 0 || st.st_size < 0 ||
	    st.st_size > JOB_MSG_MAX)
		_exit(126);
	len = st.st_size;
	if ((buf = malloc(len + 1)) == NULL)
		_exit(126);
	while (off < len) {
		n = pread(mfd, buf + off, len - off, off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(126);
		off += n;
	}
	buf[len] = '\0';
	if (dup2(report, 3) == -1)
		_exit(126);
	closefrom(4);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	code = fn(buf, len, 3);
	close(3);	/* the report ends before the teardown */
	_exit(code);
}

/*
 * A spare helper, forked by the forker ahead of need: it waits on sfd for
 * the one helper it is to be (sent by the server itself), then runs it,
 * so that no helper waits for a fork or for the forker to wake. Its
 * socket closed (the server let it go), or the forker gone, it goes.
 */
static __dead void
job_forker_spare(pid_t forker, int sfd)
{
	struct job_forker_msg	 m;
	int			 fds[2], r;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != forker)
		_exit(126);
	prctl(PR_SET_NAME, "smcp-spare", 0, 0, 0);
	close(3);	/* the server's socket is the forker's */
	for (;;) {
		if ((r = job_forker_recv(sfd, &m, fds)) == 0)
			_exit(0);
		if (r == 1 && m.type == JOB_FORKER_START && fds[0] != -1 &&
		    fds[1] != -1)
			job_forker_helper(forker, &m, fds[0], fds[1]);
		if (fds[0] != -1)
			close(fds[0]);
		if (fds[1] != -1)
			close(fds[1]);
	}
}

/*
 * Fork a spare helper and hand its socket to the server (which sends it
 * its job and says so, JOB_FORKER_ASSIGNED). Returns its pid or -1.
 */
static pid_t
job_forker_spare_new(pid_t self, int sigfd)
{
	struct job_forker_msg	 a;
	pid_t			 pid;
	int			 sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return (-1);
	if ((pid = fork()) == 0) {
		close(sv[0]);
		close(sigfd);
		job_forker_spare(self, sv[1]);
	}
	close(sv[1]);
	if (pid == -1) {
		close(sv[0]);
		return (-1);
	}
	memset(&a, 0, sizeof a);
	a.type = JOB_FORKER_SPARE;
	a.pid = pid;
	if (job_forker_send(3, &a, &sv[0], 1) != 0)
		_exit(0);
	close(sv[0]);
	return (pid);
}

/* Tell the server of a helper's end. */
static void
job_forker_exited(uint32_t id, int status)
{
	struct job_forker_msg	 a;

	memset(&a, 0, sizeof a);
	a.type = JOB_FORKER_EXITED;
	a.id = id;
	a.status = status;
	if (job_forker_send(3, &a, NULL, 0) != 0)
		_exit(0);
}

/*
 * The forker: serve the server on fd (as 3) until it closes; keep one
 * spare helper for the server to give a job to, and fork each helper
 * asked for of the forker itself; report each one's exit status, or
 * cancel it.
 */
static __dead void
job_forker_main(pid_t server)
{
	struct job_forker_msg	 m;
	struct signalfd_siginfo	 si;
	struct pollfd		 pfd[2];
	struct {
		pid_t		 pid;
		uint32_t	 id;
	}			 kids[JOB_FORKER_KIDS_MAX];
	size_t			 nkids = 0, i;
	sigset_t		 set;
	pid_t			 pid, self = getpid(), spare, gone = -1;
	int			 fds[2], status, r, gone_status = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_SETMASK, &set, NULL);
	pfd[0].fd = 3;
	pfd[0].events = POLLIN;
	if ((pfd[1].fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) ==
	    -1)
		_exit(125);
	pfd[1].events = POLLIN;
	spare = job_forker_spare_new(self, pfd[1].fd);
	for (;;) {
		if (getppid() != server)
			_exit(0);
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			_exit(125);
		}
		if (pfd[1].revents & POLLIN) {
			while (read(pfd[1].fd, &si, sizeof si) > 0)
				;
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				if (pid == spare) {
					/*
					 * Ended before the server said what
					 * it gave it, if anything: its
					 * status kept for that word. The
					 * next is forked when next asked.
					 */
					gone = spare;
					gone_status = status;
					spare = -1;
					continue;
				}
				for (i = 0; i < nkids; i++) {
					if (kids[i].pid == pid)
						break;
				}
				if (i == nkids)
					continue;
				job_forker_exited(kids[i].id, status);
				kids[i] = kids[--nkids];
			}
		}
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if ((r = job_forker_recv(3, &m, fds)) == 0)
			_exit(0);
		if (r == -1)
			continue;
		if (m.type == JOB_FORKER_CANCEL) {
			for (i = 0; i < nkids; i++) {
				if (kids[i].id == m.id)
					kill(kids[i].pid, SIGKILL);
			}
			continue;
		}
		if (m.type == JOB_FORKER_ASSIGNED) {
			/*
			 * A spare this forker announced that is not the
			 * live one has been reaped: it ended as it did,
			 * or as killed when that is no longer known.
			 */
			if (m.pid != spare || spare == -1)
				job_forker_exited(m.id, m.pid == gone &&
				    gone != -1 ? gone_status : SIGKILL);
			else if (nkids < JOB_FORKER_KIDS_MAX) {
				kids[nkids].pid = spare;
				kids[nkids].id = m.id;
				nkids++;
				spare = -1;
			} else {
				kill(spare, SIGKILL);	/* cannot be tracked */
				job_forker_exited(m.id, SIGKILL);
				spare = -1;
			}
			if (m.pid == gone)
				gone = -1;
			if (spare == -1 && nkids < JOB_FORKER_KIDS_MAX)
				spare = job_forker_spare_new(self, pfd[1].fd);
			continue;
		}
		if (m.type != JOB_FORKER_START || fds[0] == -1 ||
		    fds[1] == -1) {
			if (fds[0] != -1)
				close(fds[0]);
			if (fds[1] != -1)
				close(fds[1]);
			continue;
		}
		pid = nkids < JOB_FORKER_KIDS_MAX ? fork() : -1;
		if (pid == 0)
			job_forker_helper(self, &m, fds[0], fds[1]);
		close(fds[0]);
		close(fds[1]);
		if (pid == -1) {
			job_forker_exited(m.id, 126 << 8); /* as an exit status */
			continue;
		}
		kids[nkids].pid = pid;
		kids[nkids].id = m.id;
		nkids++;
		if (spare == -1 && nkids < JOB_FORKER_KIDS_MAX)
			spare = job_forker_spare_new(self, pfd[1].fd);
	}
}

static struct job_forker *
job_forker_find(const char *sandbox)
{
	struct job_forker	*f;

	LIST_FOREACH(f, &job_forkers, entry) {
		if (strcmp(f->sandbox, sandbox) == 0)
			return (f);
	}
	return (NULL);
}

/*
 * A forker is gone, or is told to go (its socket closed): the helpers
 * still running through it end as killed, since they die with it.
 */
static void
job_forker_close(struct job_forker *f)
{
	struct job	*j;

	if (f->fd == -1)
		return;
	event_free(f->ev);
	f->ev = NULL;
	close(f->fd);
	f->fd = -1;
	if (f->spare != -1) {
		close(f->spare);
		f->spare = -1;
	}
	evtimer_del(f->idle);
	LIST_FOREACH(j, &jobs, entry) {
		if (j->forker != f || (j->flags & JOB_REAPED))
			continue;
		j->status = SIGKILL;	/* as killed by it */
		j->flags |= JOB_REAPED;
		job_helper_done(j);
		job_check(j);
	}
}

/* The forker's process was reaped: it goes, and maybe its group. */
static void
job_forker_reaped(int status, void *arg)
{
	struct job_forker	*f = arg;
	char			*sandbox;

	log_trace(TRACE_JOB, "forker of %s pid=%ld ended status=%d",
	    f->sandbox, (long)f->pid, status);
	job_forker_close(f);
	LIST_REMOVE(f, entry);
	event_free(f->idle);
	sandbox = f->sandbox;
	free(f);
	job_sandbox_check(sandbox);
	free(sandbox);
}

static void
job_forker_read_cb(evutil_socket_t fd, short events, void *arg)
{
	struct job_forker	*f = arg;
	struct job_forker_msg	 m;
	struct job		*j;
	int			 fds[2], r;

	for (;;) {
		if ((r = job_forker_recv(f->fd, &m, fds)) == -1)
			return;
		if (r == 1 && m.type == JOB_FORKER_SPARE && fds[0] != -1 &&
		    m.pid > 0) {
			/* The next helper goes to it (job_start_forked). */
			if (f->spare != -1)
				close(f->spare);
			f->spare = fds[0];
			f->spare_pid = m.pid;
			util_set_nonblock(f->spare);
			fds[0] = -1;
		}
		if (fds[0] != -1)
			close(fds[0]);
		if (fds[1] != -1)
			close(fds[1]);
		if (r == 0) {
			log_warnx("the helper forker of sandbox %s is gone",
			    f->sandbox);
			job_forker_close(f);
			return;
		}
		if (m.type != JOB_FORKER_EXITED)
			continue;
		LIST_FOREACH(j, &jobs, entry) {
			if (j->forker == f && j->id == m.id &&
			    !(j->flags & JOB_REAPED))
				break;
		}
		if (j == NULL)
			continue;
		j->status = m.status;
		j->flags |= JOB_REAPED;
		job_helper_done(j);
		job_check(j);
	}
}

static void
job_forker_idle_cb(evutil_socket_t fd, short events, void *arg)
{
	struct job_forker	*f = arg;

	if (f->njobs == 0)
		job_forker_close(f);	/* it exits on end of file */
}

/* A helper through f no longer runs: an idle forker goes in a while. */
static void
job_forker_done(struct job_forker *f, struct job *j)
{
	struct timeval	tv = { JOB_FORKER_IDLE_SECONDS, 0 };

	j->forker = NULL;
	if (f->njobs > 0 && --f->njobs == 0 && f->fd != -1)
		evtimer_add(f->idle, &tv);
}

/* The forker of a sandbox, started now if it has none (NULL: failed). */
static struct job_forker *
job_forker_get(const char *sandbox)
{
	struct job_forker	*f;
	sigset_t		 set, oset;
	pid_t			 parent = getpid(), pid;
	char			*cause;
	int			 sv[2], fd;

	if ((f = job_forker_find(sandbox)) != NULL && f->fd != -1)
		return (f);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
		log_warn("forker of sandbox %s: socketpair", sandbox);
		return (NULL);
	}
	sigfillset(&set);
	sigprocmask(SIG_BLOCK, &set, &oset);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		prctl(PR_GET_NAME, job_comm, 0, 0, 0);
		prctl(PR_SET_NAME, "smcp-forker", 0, 0, 0);
		if (cgroup_helper_join(sandbox) != 0)
			_exit(125);
		if ((fd = fcntl(sv[1], F_DUPFD, 64)) == -1 ||
		    dup2(fd, 3) == -1)
			_exit(126);
		closefrom(4);
		if ((fd = open("/dev/null", O_RDWR)) == -1 ||
		    dup2(fd, STDIN_FILENO) == -1 ||
		    dup2(fd, STDOUT_FILENO) == -1)
			_exit(126);
		if (fd > 3)
			close(fd);
		/* After the descriptors: its view has no /dev. */
		cause = NULL;
		if (job_forker_confine == NULL ||
		    job_forker_confine(sandbox, &cause) != 0) {
			log_warnx("forker of sandbox %s: cannot confine"
			    " itself: %s", sandbox, cause != NULL ? cause :
			    "no confinement was given");
			_exit(125);
		}
		signal(SIGPIPE, SIG_IGN);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		job_forker_main(parent);
	}
	sigprocmask(SIG_SETMASK, &oset, NULL);
	close(sv[1]);
	if (pid == -1) {
		log_warn("forker of sandbox %s: fork", sandbox);
		close(sv[0]);
		return (NULL);
	}
	util_set_nonblock(sv[0]);
	f = xcalloc(1, sizeof *f);
	f->sandbox = xstrdup(sandbox);
	f->pid = pid;
	f->fd = sv[0];
	f->spare = -1;
	if ((f->ev = event_new(ev_base, f->fd, EV_READ | EV_PERSIST,
	    job_forker_read_cb, f)) == NULL ||
	    (f->idle = evtimer_new(ev_base, job_forker_idle_cb, f)) == NULL)
		fatalx("%s: event_new", __func__);
	event_add(f->ev, NULL);
	LIST_INSERT_HEAD(&job_forkers, f, entry);
	job_watch(pid, job_forker_reaped, f);
	log_trace(TRACE_JOB, "forker of %s started pid=%ld", sandbox,
	    (long)pid);
	return (f);
}

/*
 * A sandbox is gone: its forker is told to go, and its helper group is
 * removed once nothing of the sandbox runs in it (now, or when the last
 * of them is reaped).
 */
static void
job_forker_remove(const char *sandbox)
{
	struct job_forker	*f;

	if ((f = job_forker_find(sandbox)) != NULL) {
		job_forker_close(f);
		return;
	}
	job_group_remove(sandbox);
}

void
job_sandbox_gone(const char *sandbox)
{
	job_forker_remove(sandbox);
}

/* Start a helper given as bytes through its sandbox's forker. */
static int
job_start_forked(struct job *j)
{
	struct job_forker_msg	 m;
	struct job_forker	*f;
	int			 fds[2], mfd, send[2], r, lost = 0;
	size_t			 off = 0;
	ssize_t			 n;

	if ((f = job_forker_get(j->sandbox)) == NULL)
		return (-1);
	if ((mfd = memfd_create("job", MFD_CLOEXEC)) == -1) {
		log_warn("job %s: memfd_create", j->name);
		return (-1);
	}
	while (off < j->msglen) {
		n = write(mfd, j->msg + off, j->msglen - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			log_warn("job %s: memfd write", j->name);
			close(mfd);
			return (-1);
		}
		off += n;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		log_warn("job %s: pipe", j->name);
		close(mfd);
		return (-1);
	}
	memset(&m, 0, sizeof m);
	m.type = JOB_FORKER_START;
	m.id = j->id;
	m.fn = (uintptr_t)j->mfn;
	send[0] = fds[1];
	send[1] = mfd;
	/*
	 * To the forker's spare if it has one (the forker is told after),
	 * else to the forker. A spare that cannot be written to is gone.
	 */
	if (f->spare != -1) {
		r = job_forker_send(f->spare, &m, send, 2);
		close(f->spare);
		f->spare = -1;
		if (r == 0) {
			m.type = JOB_FORKER_ASSIGNED;
			m.pid = f->spare_pid;
			if (job_forker_send(f->fd, &m, NULL, 0) != 0) {
				/*
				 * The forker would never report this one:
				 * not used again (its helpers end killed).
				 */
				log_warn("job %s: to the forker of %s",
				    j->name, j->sandbox);
				lost = 1;
			}
			goto sent;
		}
	}
	if (job_forker_send(f->fd, &m, send, 2) != 0) {
		log_warn("job %s: to the forker of %s", j->name, j->sandbox);
		close(fds[0]);
		close(fds[1]);
		close(mfd);
		/* A forker that cannot be written to is not used again. */
		job_forker_close(f);
		return (-1);
	}
sent:
	close(fds[1]);
	close(mfd);
	free(j->msg);
	j->msg = NULL;
	j->forker = f;
	f->njobs++;
	evtimer_del(f->idle);
	util_set_nonblock(fds[0]);
	j->bev = bufferevent_socket_new(ev_base, fds[0], BEV_OPT_CLOSE_ON_FREE);
	if (j->bev == NULL)
		fatalx("%s: bufferevent_socket_new", __func__);
	bufferevent_setcb(j->bev, job_read_cb, NULL, job_event_cb, j);
	bufferevent_enable(j->bev, EV_READ);
	log_trace(TRACE_JOB, "job %u %s started by the forker of %s", j->id,
	    j->name, j->sandbox);
	if (lost)
		job_forker_close(f);
	return (0);
}

/*
 * How a forker confines itself when it starts, before it forks any
 * helper: fn(sandbox, &cause), 0 or -1. Without it no forker starts.
 */
void
job_forker_view(int (*fn)(const char *, char **))
{
	job_forker_confine = fn;
}

/*
 * A helper of sandbox (of tenant) that runs fn(msg, len, fd) in a
 * process born in the sandbox's helper group (its forker's child), msg
 * being a copy of the len bytes given (NUL-terminated for the child);
 * otherwise as job_helper.
 */
struct job *
job_helper_msg(const char *name, const char *sandbox, const char *tenant,
    job_msg_fn fn, const void *msg, size_t len, job_cb cb, void *arg)
{
	struct job	*j;
	char		*copy;

	if (len > JOB_MSG_MAX)
		fatalx("%s: %zu bytes", __func__, len);
	copy = xmalloc(len + 1);
	memcpy(copy, msg, len);
	copy[len] = '\0';
	j = job_new(name, NULL, NULL, NULL, 0, cb, arg);
	j->mfn = fn;
	j->msg = copy;
	j->msglen = len;
	job_enqueue(j, sandbox, tenant);
	return (j);
}

/* Fork a job's child now. */
static void
job_start(struct job *j)
{
	int		 fds[2], code, i, tmp[JOB_KEEP_MAX + 1];
	sigset_t	 set, oset;
	pid_t		 parent = getpid();

	if (j->sandbox != NULL) {
		j->flags |= JOB_RUNNING;
		job_nhelpers++;
	}
	if (j->mfn != NULL) {
		if (job_start_forked(j) != 0) {
			j->status = -1;
			j->flags |= JOB_REAPED | JOB_EOF;
			job_helper_done(j);
			job_check(j);
		}
		return;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		log_warn("job %s: pipe", j->name);
		j->status = -1;
		j->flags |= JOB_REAPED | JOB_EOF;
		job_helper_done(j);
		job_check(j);
		return;
	}
	sigfillset(&set);
	sigprocmask(SIG_BLOCK, &set, &oset);
	j->pid = fork();
	if (j->pid == 0) {
		/*
		 * The child: plain system calls only, then _exit. It dies
		 * with the server; it keeps stderr for logs and the report
		 * pipe (as fd 3), and nothing of the parent's clients:
		 * stdin and stdout become /dev/null.
		 */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(126);
		job_parent = parent;
		if (j->sandbox != NULL && cgroup_helper_join(j->sandbox) != 0)
			_exit(125);
		close(fds[0]);
		tmp[0] = fcntl(fds[1], F_DUPFD, 64);
		for (i = 0; i < j->nkeep; i++)
			tmp[i + 1] = fcntl(j->keep[i], F_DUPFD, 64);
		for (i = 0; i <= j->nkeep; i++) {
			if (tmp[i] == -1 || dup2(tmp[i], 3 + i) == -1)
				_exit(126);
		}
		fds[1] = 3;
		closefrom(4 + j->nkeep);
		if ((code = open("/dev/null", O_RDWR)) != -1) {
			dup2(code, STDIN_FILENO);
			dup2(code, STDOUT_FILENO);
			if (code > 3)
				close(code);
		}
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigprocmask(SIG_SETMASK, &oset, NULL);
		code = j->fn(j->fnarg, fds[1]);
		close(fds[1]);	/* the report ends before the teardown */
		_exit(code);
	}
	sigprocmask(SIG_SETMASK, &oset, NULL);
	close(fds[1]);
	if (j->pid == -1) {
		log_warn("job %s: fork", j->name);
		close(fds[0]);
		j->status = -1;
		j->flags |= JOB_REAPED | JOB_EOF;
		job_helper_done(j);
		job_check(j);
		return;
	}
	util_set_nonblock(fds[0]);
	j->bev = bufferevent_socket_new(ev_base, fds[0], BEV_OPT_CLOSE_ON_FREE);
	if (j->bev == NULL)
		fatalx("%s: bufferevent_socket_new", __func__);
	bufferevent_setcb(j->bev, job_read_cb, NULL, job_event_cb, j);
	bufferevent_enable(j->bev, EV_READ);
	log_trace(TRACE_JOB, "job %u %s started pid=%ld", j->id, j->name,
	    (long)j->pid);
}

/* Reap every child that has exited (from the SIGCHLD event). */
void
job_reap(void)
{
	struct job	*j;
	pid_t		 pid;
	int		 status;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid == 0 || (pid == -1 && errno != EINTR))
			break;
		if (pid == -1)
			continue;
		LIST_FOREACH(j, &jobs, entry) {
			if (j->pid == pid && !(j->flags & JOB_REAPED))
				break;
		}
		if (j == NULL) {
			job_reaped_other(pid, status);
			continue;
		}
		j->status = status;
		j->flags |= JOB_REAPED;
		job_helper_done(j);
		job_check(j);
	}
}

/*
 * Reap one child now if it has exited, running its job's completion or
 * its watcher (below) as job_reap would: for a caller that is about to
 * act on a child's last words and must know first whether it is gone.
 * Returns whether it was reaped. Never waits.
 */
int
job_reap_pid(pid_t pid)
{
	struct job	*j;
	pid_t		 r;
	int		 status;

	do {
		r = waitpid(pid, &status, WNOHANG);
	} while (r == -1 && errno == EINTR);
	if (r != pid)
		return (0);
	LIST_FOREACH(j, &jobs, entry) {
		if (j->pid == pid && !(j->flags & JOB_REAPED))
			break;
	}
	if (j == NULL) {
		job_reaped_other(pid, status);
		return (1);
	}
	j->status = status;
	j->flags |= JOB_REAPED;
	job_helper_done(j);
	job_check(j);
	return (1);
}

/*
 * A process that is not a job but ends up our child (an orphan adopted
 * because we are a subreaper, such as a session's init): cb(status, arg)
 * runs once when it is reaped. A process reaped before it was watched is
 * remembered for a while, so the order of the two does not matter; one
 * reaped before since (ms, 0: any time), when the process watched was
 * not born yet, was another that had its pid, and is forgotten.
 */
#define JOB_WATCH_KEEP_MS	10000

struct job_watch {
	pid_t			 pid;
	int			 status;
	int			 reaped;
	uint64_t		 reaped_ms;
	void			(*cb)(int, void *);
	void			*arg;
	LIST_ENTRY(job_watch)	 entry;
};
static LIST_HEAD(, job_watch)	job_watches = LIST_HEAD_INITIALIZER(job_watches);

void
job_watch(pid_t pid, void (*cb)(int, void *), void *arg)
{
	job_watch_since(pid, 0, cb, arg);
}

void
job_watch_since(pid_t pid, uint64_t since, void (*cb)(int, void *),
    void *arg)
{
	struct job_watch	*w, *w1;
	uint64_t		 now = now_ms();

	LIST_FOREACH_SAFE(w, &job_watches, entry, w1) {
		if (!w->reaped || w->cb != NULL)
			continue;
		if (now - w->reaped_ms > JOB_WATCH_KEEP_MS ||
		    (w->pid == pid && w->reaped_ms < since)) {
			/* Too old to be this process: its pid was reused. */
			LIST_REMOVE(w, entry);
			free(w);
			continue;
		}
		if (w->pid == pid) {
			LIST_REMOVE(w, entry);
			cb(w->status, arg);
			free(w);
			return;
		}
	}
	w = xcalloc(1, sizeof *w);
	w->pid = pid;
	w->cb = cb;
	w->arg = arg;
	LIST_INSERT_HEAD(&job_watches, w, entry);
}

/* Stop watching a pid (its callback will not run). */
void
job_unwatch(pid_t pid)
{
	struct job_watch	*w;

	LIST_FOREACH(w, &job_watches, entry) {
		if (w->pid == pid && w->cb != NULL) {
			w->cb = NULL;
			w->arg = NULL;
			if (w->reaped) {
				LIST_REMOVE(w, entry);
				free(w);
			}
			return;
		}
	}
}

/* A reaped pid that is not a job: run its watcher or remember it. */
static void
job_reaped_other(pid_t pid, int status)
{
	struct job_watch	*w;
	int			 n = 0;

	LIST_FOREACH(w, &job_watches, entry) {
		if (w->pid == pid && !w->reaped) {
			LIST_REMOVE(w, entry);
			if (w->cb != NULL)
				w->cb(status, w->arg);
			free(w);
			return;
		}
		n++;
	}
	if (n > 4096)
		return;		/* nobody will ask: do not grow */
	w = xcalloc(1, sizeof *w);
	w->pid = pid;
	w->status = status;
	w->reaped = 1;
	w->reaped_ms = now_ms();
	LIST_INSERT_HEAD(&job_watches, w, entry);
}

/* Stop waiting for a job: kill the child; no callback will run. */
void
job_cancel(struct job *j)
{
	if (j == NULL)
		return;
	j->flags |= JOB_DETACHED;
	if (j->flags & JOB_QUEUED) {
		/* Never started: it goes at once, with no callback. */
		TAILQ_REMOVE(&job_queue, j, qentry);
		job_nqueued--;
		j->flags &= ~JOB_QUEUED;
		job_free(j);
		return;
	}
	if (j->forker != NULL && !(j->flags & JOB_REAPED)) {
		struct job_forker_msg	m;

		memset(&m, 0, sizeof m);
		m.type = JOB_FORKER_CANCEL;
		m.id = j->id;
		if (j->forker->fd != -1 &&
		    job_forker_send(j->forker->fd, &m, NULL, 0) != 0)
			job_forker_close(j->forker);
		return;
	}
	if (j->pid > 0 && !(j->flags & JOB_REAPED))
		kill(j->pid, SIGKILL);
}

/*
 * In a child: answer, once, with result (NULL: an empty object) or,
 * when cause is not NULL, with the cause. 0, or 1 (an exit status) when
 * it could not be written.
 */
int
job_answer(int fd, cJSON *result, const struct cause *cause)
{
	cJSON	*o, *c;
	char	*text;
	int	 r;

	o = cJSON_CreateObject();
	if (cause != NULL) {
		c = cJSON_AddObjectToObject(o, "cause");
		cJSON_AddStringToObject(c, "kind",
		    cause_kind_name(cause->kind));
		cJSON_AddStringToObject(c, "message", cause->message);
		if (cause->details != NULL)
			cJSON_AddItemReferenceToObject(c, "details",
			    cause->details);
	} else if (result != NULL)
		cJSON_AddItemReferenceToObject(o, "result", result);
	else
		cJSON_AddObjectToObject(o, "result");
	text = util_json_print(o);
	cJSON_Delete(o);
	r = job_write_all(fd, text, strlen(text));
	free(text);
	return (r == 0 ? 0 : 1);
}

/*
 * In a child: answer with a cause of kind, its details {key: value} when
 * key is not NULL. As job_answer.
 */
int
job_fail(int fd, enum cause_kind kind, const char *key, const char *value,
    const char *fmt, ...)
{
	struct cause	cause = { 0 };
	va_list		ap;
	int		r;

	va_start(ap, fmt);
	cause_vset(&cause, kind, key, value, fmt, ap);
	va_end(ap);
	r = job_answer(fd, NULL, &cause);
	cause_clear(&cause);
	return (r);
}

/* Write all of buf to a descriptor (children report this way). */
int
job_write_all(int fd, const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return (-1);
		p += n;
		len -= n;
	}
	return (0);
}

pid_t
job_pid(struct job *j)
{
	return (j->pid);
}


/* Helpers running and queued, and forkers, for metrics.c. */
void
job_metrics(struct metrics_counts *mc)
{
	struct job_forker	*f;

	mc->helpers_running += job_nhelpers;
	mc->helpers_queued += job_nqueued;
	LIST_FOREACH(f, &job_forkers, entry)
		mc->forkers++;
}
