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
 * A child's answer, as the parent's callback gets it: a result, a cause
 * with its kind and details, and each way a child can fail to answer
 * (no answer, an exit by a signal, garbage, two answers, an answer past
 * the bound) turned into an internal cause naming the job. Real
 * children, forked by job.c and reaped from the loop.
 */

#include "config.h"

#include <sys/wait.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "sandbox-mcp.h"
#include "unit.h"

struct job_seen {
	int		 done;
	char		*result;	/* printed */
	enum cause_kind	 kind;
	char		*message;
	char		*details;	/* printed */
};

static void
job_seen_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct job_seen	*js = arg;

	js->done++;
	if (result != NULL)
		js->result = cJSON_PrintUnformatted(result);
	if (cause != NULL) {
		js->kind = cause->kind;
		js->message = xstrdup(cause->message);
		if (cause->details != NULL)
			js->details = cJSON_PrintUnformatted(cause->details);
	}
}

static void
job_sigchld_cb(evutil_socket_t fd, short events, void *arg)
{
	job_reap();
}

/* Run one child to its callback. */
static int
job_run(int (*fn)(void *, int), struct job_seen *js)
{
	struct event	*ev;
	int		 i;

	memset(js, 0, sizeof *js);
	ev = evsignal_new(ev_base, SIGCHLD, job_sigchld_cb, NULL);
	event_add(ev, NULL);
	job_fork("unit", fn, NULL, job_seen_cb, js);
	for (i = 0; i < 10000 && js->done == 0; i++)
		event_base_loop(ev_base, EVLOOP_ONCE);
	/* Whatever the job's teardown needs. */
	event_base_loop(ev_base, EVLOOP_NONBLOCK);
	event_free(ev);
	return (js->done);
}

static void
job_seen_free(struct job_seen *js)
{
	free(js->result);
	free(js->message);
	free(js->details);
}

static int
child_result(void *arg, int fd)
{
	cJSON	*r;
	int	 rc;

	r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "bytes", 42);
	rc = job_answer(fd, r, NULL);
	cJSON_Delete(r);
	return (rc);
}

static int
child_empty(void *arg, int fd)
{
	return (job_answer(fd, NULL, NULL));
}

static int
child_cause(void *arg, int fd)
{
	return (job_fail(fd, CAUSE_CONFLICT, "dest", "/x", "busy: %d", 7));
}

static int
child_silent(void *arg, int fd)
{
	return (3);
}

static int
child_killed(void *arg, int fd)
{
	kill(getpid(), SIGKILL);
	return (0);
}

static int
child_garbage(void *arg, int fd)
{
	return (job_write_all(fd, "{\"result\": ", 11) == 0 ? 0 : 1);
}

static int
child_twice(void *arg, int fd)
{
	job_answer(fd, NULL, NULL);
	return (job_answer(fd, NULL, NULL));
}

static int
child_other(void *arg, int fd)
{
	return (job_write_all(fd, "{\"error\": \"x\"}", 14) == 0 ? 0 : 1);
}

static int
child_long(void *arg, int fd)
{
	char	*buf;
	size_t	 len = 5 * 1024 * 1024;
	int	 rc;

	buf = xmalloc(len);
	memset(buf, ' ', len);
	rc = job_write_all(fd, buf, len);
	free(buf);
	return (rc == 0 ? 0 : 1);
}

static int
test_job_result(void)
{
	struct job_seen	js;

	CHECK_INT(job_run(child_result, &js), 1);
	CHECK_STR(js.result, "{\"bytes\":42}");
	CHECK(js.message == NULL);
	job_seen_free(&js);
	CHECK_INT(job_run(child_empty, &js), 1);
	CHECK_STR(js.result, "{}");
	job_seen_free(&js);
	return (0);
}

static int
test_job_cause(void)
{
	struct job_seen	js;

	CHECK_INT(job_run(child_cause, &js), 1);
	CHECK(js.result == NULL);
	CHECK_INT(js.kind, CAUSE_CONFLICT);
	CHECK_STR(js.message, "busy: 7");
	CHECK_STR(js.details, "{\"dest\":\"/x\"}");
	job_seen_free(&js);
	return (0);
}

/* Each way of not answering: an internal cause naming the job. */
static int
test_job_no_answer(void)
{
	struct {
		int		(*fn)(void *, int);
		const char	*message;
	} cases[] = {
		{ child_silent, "the unit process ended without an answer"
		    " (exit status 3)" },
		{ child_killed, "the unit process ended without an answer"
		    " (killed by signal 9)" },
		{ child_garbage, "the unit process gave a malformed answer"
		    " (exit status 0)" },
		{ child_twice, "the unit process gave a malformed answer"
		    " (exit status 0)" },
		{ child_other, "the unit process gave a malformed answer"
		    " (exit status 0)" },
		{ child_long, "the unit process gave too long an answer"
		    " (exit status 0)" },
	};
	struct job_seen	js;
	size_t		i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK_INT(job_run(cases[i].fn, &js), 1);
		CHECK(js.result == NULL);
		CHECK_INT(js.kind, CAUSE_INTERNAL);
		CHECK_STR(js.message, cases[i].message);
		job_seen_free(&js);
	}
	return (0);
}


static void
watch_cb(int status, void *arg)
{
	*(int *)arg = status;
}

/* A child of ours that has exited and been reaped as no job's. */
static pid_t
reaped_child(void)
{
	siginfo_t	si;
	pid_t		pid;

	if ((pid = fork()) == 0)
		_exit(7);
	if (pid == -1 || waitid(P_PID, pid, &si, WEXITED | WNOWAIT) != 0)
		return (-1);
	job_reap();
	return (pid);
}

/*
 * A process reaped before it was watched is told of when it is watched;
 * one reaped before the watched process was born (since) was another
 * process of that pid, and is not.
 */
static int
test_job_watch_since(void)
{
	pid_t	pid;
	int	seen;

	CHECK((pid = reaped_child()) > 0);
	seen = -1;
	job_watch_since(pid, now_ms() + 1, watch_cb, &seen);
	CHECK_INT(seen, -1);
	job_unwatch(pid);

	CHECK((pid = reaped_child()) > 0);
	seen = -1;
	job_watch_since(pid, now_ms() - 1000, watch_cb, &seen);
	CHECK(seen != -1 && WIFEXITED(seen) && WEXITSTATUS(seen) == 7);
	return (0);
}

const struct unit_case unit_job_cases[] = {
	{ "job_result", test_job_result },
	{ "job_cause", test_job_cause },
	{ "job_no_answer", test_job_no_answer },
	{ "job_watch_since", test_job_watch_since },
	{ NULL, NULL }
};
