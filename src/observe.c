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
 * Queries over a sandbox's telemetry log (telemetry.c writes it, any
 * process of the state directory may read it): events.ndjson and the
 * rotated events.ndjson.1 before it. A query opens both once, so a
 * rotation meanwhile changes nothing it reads, takes their sizes then,
 * and reads them from the end back, one slice per loop turn, newest
 * line first: a log of many megabytes never stalls the loop, and a
 * query for the last few records reads only the end. A last line still
 * being written (no LF yet) is left out; a line longer than the writer
 * makes is skipped as damage.
 */

#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define OBSERVE_SLICE		(64 * 1024)
#define OBSERVE_LINE_MAX	(16 * 1024)	/* the writer's cut */
#define OBSERVE_ANSWER_MAX	(4 * 1024 * 1024) /* of events answered */

struct observe_query {
	char			*name;		/* NULL: every name */
	long long		 since_ms;	/* -1: any time */
	long long		 last_n;	/* -1: all */
	int			 fd[2];		/* newest first; -1: none */
	int			 cur;
	off_t			 pos;		/* of cur, unread before it */
	char			*buf;		/* a slice and a line's head */
	size_t			 keep;		/* bytes kept: a line's end */
	int			 newest;	/* cur's last slice not read */
	cJSON			*events;	/* newest first */
	size_t			 bytes;
	int			 truncated;
	struct event		*ev;
	observe_cb		 cb;
	void			*arg;
};

static void
observe_free(struct observe_query *q)
{
	int	i;

	for (i = 0; i < 2; i++) {
		if (q->fd[i] != -1)
			close(q->fd[i]);
	}
	if (q->ev != NULL)
		event_free(q->ev);
	cJSON_Delete(q->events);
	free(q->name);
	free(q->buf);
	free(q);
}

/*
 * One complete line: an event that passes the filters joins the answer.
 * Returns 1 when the answer is whole (last_n reached, or its size).
 */
static int
observe_line(struct observe_query *q, const char *line, size_t len)
{
	cJSON		*rec, *out, *v;
	char		*text;
	size_t		 tlen;
	int		 i;
	static const char *keys[] = { "ts", "trace", "parent", "name",
	    "attrs" };

	if (line == NULL || len == 0 || len > OBSERVE_LINE_MAX)
		return (0);
	/* Most lines are spans or other names: no parse for them. */
	if (memmem(line, len, "\"event\"", 7) == NULL || (q->name != NULL &&
	    memmem(line, len, q->name, strlen(q->name)) == NULL))
		return (0);
	if ((rec = cJSON_ParseWithLength(line, len)) == NULL)
		return (0);
	v = cJSON_GetObjectItemCaseSensitive(rec, "kind");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "event") != 0 ||
	    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec, "name")) ||
	    (q->name != NULL && strcmp(cJSON_GetObjectItemCaseSensitive(rec,
	    "name")->valuestring, q->name) != 0) ||
	    !cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(rec, "ts")) ||
	    (q->since_ms >= 0 && v->valuedouble < (double)q->since_ms)) {
		cJSON_Delete(rec);
		return (0);
	}
	out = cJSON_CreateObject();
	for (i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++) {
		v = cJSON_DetachItemFromObjectCaseSensitive(rec, keys[i]);
		if (v == NULL)
			v = cJSON_CreateNull();
		cJSON_AddItemToObject(out, keys[i], v);
	}
	cJSON_Delete(rec);
	text = util_json_print(out);
	tlen = strlen(text);
	free(text);
	if (q->bytes + tlen > OBSERVE_ANSWER_MAX) {
		cJSON_Delete(out);
		q->truncated = 1;
		return (1);
	}
	q->bytes += tlen;
	cJSON_AddItemToArray(q->events, out);
	return (q->last_n >= 0 &&
	    cJSON_GetArraySize(q->events) >= q->last_n);
}

/*
 * The lines of buf[0..len) that are whole, last first; what comes before
 * the first LF (a line whose head is in the part not read yet, unless
 * the file starts there) is kept for the next slice. Returns 1 when the
 * answer is whole.
 */
static int
observe_lines(struct observe_query *q, size_t len, int at_start)
{
	char	*p, *end = q->buf + len, *nl;

	/* The newest slice: a last line without its LF is being written. */
	if (q->newest) {
		q->newest = 0;
		while (end > q->buf && end[-1] != '\n')
			end--;
	}
	while (end > q->buf) {
		/* end is just past a LF (or the end of the whole lines). */
		p = end - 1;
		nl = p;
		while (nl > q->buf && nl[-1] != '\n')
			nl--;
		if (nl == q->buf && !at_start)
			break;		/* its head comes with the next slice */
		if (observe_line(q, nl, (size_t)(end - nl)))
			return (1);
		end = nl;
	}
	q->keep = (size_t)(end - q->buf);
	if (q->keep > OBSERVE_LINE_MAX)
		q->keep = 0;		/* longer than any line: damage */
	return (0);
}

static void
observe_slice_cb(evutil_socket_t fd, short events, void *arg)
{
	struct observe_query	*q = arg;
	struct stat		 st;
	size_t			 want;
	ssize_t			 n;
	cJSON			*result;

	while (q->cur < 2 && q->fd[q->cur] == -1)
		q->cur++;
	if (q->cur == 2)
		goto done;
	want = q->pos > OBSERVE_SLICE ? OBSERVE_SLICE : (size_t)q->pos;
	/* The slice goes before the head of a line kept from the last. */
	memmove(q->buf + want, q->buf, q->keep);
	n = want > 0 ? pread(q->fd[q->cur], q->buf, want, q->pos - want) : 0;
	if (n != (ssize_t)want) {
		log_warn("reading the telemetry log");
		goto next_file;
	}
	q->pos -= (off_t)want;
	if (observe_lines(q, want + q->keep, q->pos == 0))
		goto done;
	if (q->pos > 0) {
		event_active(q->ev, EV_TIMEOUT, 1);
		return;
	}
next_file:
	close(q->fd[q->cur]);
	q->fd[q->cur] = -1;
	q->keep = 0;
	if (++q->cur < 2 && q->fd[q->cur] != -1 &&
	    fstat(q->fd[q->cur], &st) == 0) {
		q->pos = st.st_size;
		q->newest = 1;
		event_active(q->ev, EV_TIMEOUT, 1);
		return;
	}
done:
	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "view", "events");
	cJSON_AddItemToObject(result, "events", q->events);
	q->events = NULL;
	if (q->truncated)
		cJSON_AddTrueToObject(result, "truncated");
	q->cb(result, NULL, q->arg);
	observe_free(q);
}

/* Open a log to read; -1 when there is none, or it is not a file. */
static int
observe_open(const char *path)
{
	struct stat	st;
	int		fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return (-1);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/*
 * The events of sandbox id's log, newest first: those named name (NULL:
 * any), at since_ms or later (-1: any), at most last_n (-1: every one
 * retained), and no more than OBSERVE_ANSWER_MAX bytes of them (then
 * with "truncated": true). cb gets {"view": "events", "events": [...]}
 * from the loop, taken over, unless observe_cancel comes first.
 */
struct observe_query *
observe_events(const char *id, const char *name, long long since_ms,
    long long last_n, observe_cb cb, void *arg)
{
	struct observe_query	*q;
	struct stat		 st, st1;
	char			*path, *old;

	q = xcalloc(1, sizeof *q);
	q->name = name != NULL ? xstrdup(name) : NULL;
	q->since_ms = since_ms;
	q->last_n = last_n;
	q->cb = cb;
	q->arg = arg;
	q->events = cJSON_CreateArray();
	q->buf = xmalloc(OBSERVE_SLICE + OBSERVE_LINE_MAX);
	path = state_where(STATE_SANDBOX, id, "telemetry/events.ndjson");
	xasprintf(&old, "%s.1", path);
	q->fd[0] = observe_open(path);
	q->fd[1] = observe_open(old);
	free(path);
	free(old);
	/* Rotated between the two opens: the same file twice. */
	if (q->fd[0] != -1 && q->fd[1] != -1 && fstat(q->fd[0], &st) == 0 &&
	    fstat(q->fd[1], &st1) == 0 && st.st_ino == st1.st_ino &&
	    st.st_dev == st1.st_dev) {
		close(q->fd[1]);
		q->fd[1] = -1;
	}
	q->cur = q->fd[0] != -1 ? 0 : 1;
	if (q->fd[q->cur] != -1 && fstat(q->fd[q->cur], &st) == 0)
		q->pos = st.st_size;
	q->newest = 1;
	if ((q->ev = event_new(ev_base, -1, 0, observe_slice_cb, q)) == NULL)
		fatalx("%s: event_new", __func__);
	if (last_n == 0)
		q->cur = 2;		/* nothing asked for */
	event_active(q->ev, EV_TIMEOUT, 1);
	return (q);
}

/* Stop a query; its callback will not run. */
void
observe_cancel(struct observe_query *q)
{
	if (q != NULL)
		observe_free(q);
}
