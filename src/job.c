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
 */

#include "config.h"

#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
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
	job_dequeue();
	LIST_FOREACH(o, &jobs, entry) {
		if (o != j && o->sandbox != NULL && strcmp(o->sandbox,
		    j->sandbox) == 0)
			return;
	}
	if (state_record_gone(j->sandbox))
		cgroup_helper_remove(j->sandbox);
}

static void
job_free(struct job *j)
{
	job_helper_done(j);
	LIST_REMOVE(j, entry);
	free(j->sandbox);
	free(j->tenant);
	if (j->bev != NULL)
		bufferevent_free(j->bev);
	if (j->finish != NULL)
		event_free(j->finish);
	evbuffer_free(j->report);
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
struct job *
job_helper(const char *name, const char *sandbox, const char *tenant,
    int (*fn)(void *, int), void *fnarg, const int *keep, int nkeep,
    job_cb cb, void *arg)
{
	struct job	*j;
	char		*cause = NULL;

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
	if (sandbox == NULL) {
		job_start(j);
		return (j);
	}
	j->sandbox = xstrdup(sandbox);
	j->tenant = xstrdup(tenant != NULL ? tenant : "");
	if (cgroup_helper_prepare(sandbox, &cause) != 0) {
		log_warnx("job %s: %s", name, cause);
		free(cause);
	}
	j->flags |= JOB_QUEUED;
	TAILQ_INSERT_TAIL(&job_queue, j, qentry);
	job_nqueued++;
	job_dequeue();
	if (j->flags & JOB_QUEUED)
		log_trace(TRACE_JOB, "job %u %s queued (%u waiting)", j->id,
		    name, job_nqueued);
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
 * remembered for a while, so the order of the two does not matter.
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
	struct job_watch	*w, *w1;
	uint64_t		 now = now_ms();

	LIST_FOREACH_SAFE(w, &job_watches, entry, w1) {
		if (!w->reaped || w->cb != NULL)
			continue;
		if (now - w->reaped_ms > JOB_WATCH_KEEP_MS) {
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

