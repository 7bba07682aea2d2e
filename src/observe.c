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

#include <dirent.h>
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
	/* One whole line, newest first: 1 when the answer is whole. */
	int			(*line)(struct observe_query *, const char *,
				    size_t);
	/* The files are read (or the answer is whole): answer. */
	void			(*finish)(struct observe_query *);
	char			*id;		/* the sandbox */
	char			*name;		/* events: NULL, every name */
	long long		 since_ms;	/* events: -1, any time */
	long long		 last_n;	/* events: -1, all */
	char			*trace;		/* trace: the one, or NULL */
	char			*request;	/* trace: a request id sought */
	char			*pattern;	/* trace: its lines hold it */
	const char		*need;		/* every line wanted holds it */
	int			(*stop)(struct observe_query *, const char *,
				    size_t);	/* a line would end the read */
	char			**hits;		/* observe_lines' */
	size_t			 hits_max;
	long long		 root_ms;	/* trace: its root's start */
	int			 pass;		/* trace: 1 find, 2 collect */
	struct observe_rec	*recs;		/* trace: its records */
	size_t			 recs_max;
	int			 fd[2];		/* newest first; -1: none */
	int			 cur;
	off_t			 pos;		/* of cur, unread before it */
	char			*buf;		/* a slice and a line's head */
	size_t			 keep;		/* bytes kept: a line's end */
	int			 newest;	/* cur's last slice not read */
	cJSON			*events;	/* newest first */
	long long		 nrecords;	/* in events, or recs */
	size_t			 bytes;
	int			 truncated;
	cJSON			*result;	/* layerstack: made at once */
	struct cause		 cause;		/* or why not */
	struct job		*job;		/* layerstack: a walk */
	cJSON			*upper_into;	/* gets its upper_bytes */
	char			*tenant;	/* cgroup: whose walk */
	cJSON			*upper_item;	/* cgroup: the sample now */
	double			 upper_prev;	/* and the one before, */
	int			 upper_has_prev; /* if there is one */
	const char		*file;		/* the log read */
	struct event		*ev;
	observe_cb		 cb;
	void			*arg;
};

/*
 * A record of a trace: its line as it was written (one JSON object, as
 * is), and what the tree is built from.
 */
struct observe_rec {
	char		*raw;
	int		 is_span;	/* kind "span", not "event" */
	char		*span;		/* its id, when a span has one */
	char		*parent;	/* NULL: none */
	long long	 ts;
	long long	 end;		/* ts, and dur_ms for a span */
	size_t		 seq;		/* the order read, newest first */
};

static void	observe_walk_done(const char *);

static void
observe_rec_clear(struct observe_rec *rec)
{
	free(rec->raw);
	free(rec->span);
	free(rec->parent);
}

static void
observe_recs_free(struct observe_query *q)
{
	long long	i;

	for (i = 0; q->recs != NULL && i < q->nrecords; i++)
		observe_rec_clear(&q->recs[i]);
	free(q->recs);
	q->recs = NULL;
	q->recs_max = 0;
	q->nrecords = 0;
}

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
	observe_recs_free(q);
	cJSON_Delete(q->result);
	cause_clear(&q->cause);
	if (q->job != NULL) {
		job_cancel(q->job);	/* no callback will run */
		observe_walk_done(q->id);
	}
	free(q->id);
	free(q->tenant);
	free(q->name);
	free(q->trace);
	free(q->request);
	free(q->pattern);
	free(q->hits);
	free(q->buf);
	free(q);
}

/*
 * One complete line: an event that passes the filters joins the answer.
 * Returns 1 when the answer is whole (last_n reached, or its size).
 */
static int
observe_event_line(struct observe_query *q, const char *line, size_t len)
{
	cJSON		*rec, *out, *v;
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
	/* What it adds to the answer is at most its line. */
	if (q->bytes + len > OBSERVE_ANSWER_MAX) {
		cJSON_Delete(rec);
		q->truncated = 1;
		return (1);
	}
	q->bytes += len;
	out = cJSON_CreateObject();
	for (i = 0; i < (int)(sizeof keys / sizeof keys[0]); i++) {
		v = cJSON_DetachItemFromObjectCaseSensitive(rec, keys[i]);
		if (v == NULL)
			v = cJSON_CreateNull();
		cJSON_AddItemToObject(out, keys[i], v);
	}
	cJSON_Delete(rec);
	cJSON_AddItemToArray(q->events, out);
	return (q->last_n >= 0 && ++q->nrecords >= q->last_n);
}

/*
 * The whole lines [first, end) of a slice that hold q->need, last first:
 * one search over the slice, and only the lines it hits are looked at.
 * Used when no line of the slice can end the read (its oldest one would
 * not: lines are in time order but for a few seconds).
 */
static int
observe_lines_wanted(struct observe_query *q, char *first, char *end)
{
	char	*p = first, *h, *ls, *le;
	size_t	 n = 0, need = strlen(q->need);

	while (p < end && (h = memmem(p, (size_t)(end - p), q->need,
	    need)) != NULL) {
		ls = memrchr(first, '\n', (size_t)(h - first));
		ls = ls != NULL ? ls + 1 : first;
		le = memchr(h, '\n', (size_t)(end - h));
		le = le != NULL ? le + 1 : end;
		if (n + 2 > q->hits_max) {
			q->hits_max = q->hits_max == 0 ? 64 : q->hits_max * 2;
			q->hits = xreallocarray(q->hits, q->hits_max,
			    sizeof *q->hits);
		}
		q->hits[n++] = ls;
		q->hits[n++] = le;
		p = le;
	}
	while (n > 0) {
		n -= 2;
		if (q->line(q, q->hits[n], (size_t)(q->hits[n + 1] -
		    q->hits[n])))
			return (1);
	}
	return (0);
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
	char	*end = q->buf + len, *nl, *first, *fe;

	/* The newest slice: a last line without its LF is being written. */
	if (q->newest) {
		q->newest = 0;
		while (end > q->buf && end[-1] != '\n')
			end--;
	}
	if (at_start)
		first = q->buf;
	else {
		nl = memchr(q->buf, '\n', (size_t)(end - q->buf));
		first = nl != NULL ? nl + 1 : end;
	}
	if (q->need != NULL && first < end) {
		fe = memchr(first, '\n', (size_t)(end - first));
		fe = fe != NULL ? fe + 1 : end;
		if (q->stop == NULL || !q->stop(q, first, (size_t)(fe -
		    first))) {
			if (observe_lines_wanted(q, first, end))
				return (1);
			end = first;
			goto keep;
		}
	}
	while (end > first) {
		/* end is just past a LF (or the end of the whole lines). */
		nl = memrchr(first, '\n', (size_t)(end - 1 - first));
		nl = nl != NULL ? nl + 1 : first;
		if (q->line(q, nl, (size_t)(end - nl)))
			return (1);
		end = nl;
	}
keep:
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
	q->finish(q);
}

/* The events' answer. */
static void
observe_events_finish(struct observe_query *q)
{
	cJSON	*result;

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

/* Open the logs of sandbox id (from the newest) and start reading. */
static void
observe_start(struct observe_query *q)
{
	struct stat	 st, st1;
	char		*path, *old;
	int		 i;

	for (i = 0; i < 2; i++) {
		if (q->fd[i] != -1)
			close(q->fd[i]);
	}
	if (q->buf == NULL)
		q->buf = xmalloc(OBSERVE_SLICE + OBSERVE_LINE_MAX);
	path = state_where(STATE_SANDBOX, q->id, "telemetry/%s", q->file);
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
	q->pos = 0;
	if (q->fd[q->cur] != -1 && fstat(q->fd[q->cur], &st) == 0)
		q->pos = st.st_size;
	q->keep = 0;
	q->newest = 1;
	if (q->ev == NULL && (q->ev = event_new(ev_base, -1, 0,
	    observe_slice_cb, q)) == NULL)
		fatalx("%s: event_new", __func__);
	event_active(q->ev, EV_TIMEOUT, 1);
}

static struct observe_query *
observe_new(const char *id, observe_cb cb, void *arg)
{
	struct observe_query	*q;

	q = xcalloc(1, sizeof *q);
	q->id = xstrdup(id);
	q->file = "events.ndjson";
	q->fd[0] = q->fd[1] = -1;
	q->cb = cb;
	q->arg = arg;
	return (q);
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

	q = observe_new(id, cb, arg);
	q->line = observe_event_line;
	q->finish = observe_events_finish;
	q->name = name != NULL ? xstrdup(name) : NULL;
	q->need = q->name != NULL ? q->name : "\"event\"";
	q->since_ms = since_ms;
	q->last_n = last_n;
	q->events = cJSON_CreateArray();
	observe_start(q);
	if (last_n == 0)
		q->cur = 2;		/* nothing asked for */
	return (q);
}

/*
 * Where the value of member name starts in a line, by its text alone
 * ("name", blanks, a colon, blanks): a quick look before any parse, as
 * the writer's lines have no such text elsewhere but in attrs, which a
 * parse then checks. NULL when it is not there.
 */
static const char *
observe_member(const char *line, size_t len, const char *name)
{
	const char	*p = line, *end = line + len;
	char		 key[32];
	size_t		 klen;

	if ((klen = strlen(name)) > sizeof key - 2)
		return (NULL);
	key[0] = '"';
	memcpy(key + 1, name, klen);
	key[klen + 1] = '"';
	klen += 2;
	while ((p = memmem(p, end - p, key, klen)) != NULL) {
		p += klen;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end && *p == ':') {
			p++;
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			return (p);
		}
	}
	return (NULL);
}

/* A JSON number at p (before end), into *v; 0 when there is none. */
static int
observe_number(const char *p, const char *end, double *v)
{
	char	 num[40], *stop;
	size_t	 n;

	for (n = 0; p + n < end && n < sizeof num - 1 && strchr(
	    "-+.0123456789eE", p[n]) != NULL && p[n] != '\0'; n++)
		num[n] = p[n];
	num[n] = '\0';
	if (n == 0)
		return (0);
	*v = strtod(num, &stop);
	return (*stop == '\0');
}

/*
 * Where a line's record ends in time, without parsing it: its ts, plus
 * its dur_ms for a span; -1 when it has none.
 */
static long long
observe_line_end(const char *line, size_t len)
{
	const char	*p;
	long long	 ts;
	double		 dur;

	if ((p = observe_member(line, len, "ts")) == NULL ||
	    !observe_number(p, line + len, &dur))
		return (-1);
	ts = (long long)dur;
	if ((p = observe_member(line, len, "dur_ms")) != NULL &&
	    observe_number(p, line + len, &dur))
		ts += (long long)dur;
	return (ts);
}

/*
 * Lines are written when their record ends, by processes that may race
 * each other a little: once the lines read end this long before a root
 * span started, nothing further back can belong to what came after it.
 */
#define OBSERVE_JITTER_MS	5000
#define OBSERVE_TRACE_MAX	10000	/* records of one trace */
#define OBSERVE_REC_DEPTH	128	/* nesting of a record kept */
#define OBSERVE_TREE_DEPTH	64	/* of spans folded */

/*
 * Whether a span record is a tool call's root: no parent, or the
 * caller's span as its parent (the caller sent its trace context).
 */
static int
observe_is_root(cJSON *rec)
{
	return (cJSON_GetObjectItemCaseSensitive(rec, "parent") == NULL ||
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rec,
	    "parent_remote")));
}

/* The root span whose request id is sought: its trace. */
static int
observe_request_line(struct observe_query *q, const char *line, size_t len)
{
	cJSON	*rec, *v, *t, *attrs;
	int	 found = 0;

	if (observe_line_end(line, len) == -1 ||
	    memmem(line, len, q->pattern, strlen(q->pattern)) == NULL ||
	    (rec = cJSON_ParseWithLength(line, len)) == NULL)
		return (0);
	v = cJSON_GetObjectItemCaseSensitive(rec, "kind");
	t = cJSON_GetObjectItemCaseSensitive(rec, "trace");
	attrs = cJSON_GetObjectItemCaseSensitive(rec, "attrs");
	if (cJSON_IsString(v) && strcmp(v->valuestring, "span") == 0 &&
	    observe_is_root(rec) && cJSON_IsString(t) &&
	    t->valuestring[0] != '\0' && strlen(t->valuestring) < 128 &&
	    cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(attrs,
	    "request_id")) && strcmp(v->valuestring, q->request) == 0) {
		q->trace = xstrdup(t->valuestring);
		found = 1;
	}
	cJSON_Delete(rec);
	return (found);
}

/* Pass 1 of "last": the root span (no parent) that started last. */
static int
observe_root_line(struct observe_query *q, const char *line, size_t len)
{
	cJSON		*rec, *v, *t;
	long long	 end;

	if ((end = observe_line_end(line, len)) == -1)
		return (0);
	if (q->trace != NULL && end < q->root_ms - OBSERVE_JITTER_MS)
		return (1);
	if (memmem(line, len, "\"span\"", 6) == NULL ||
	    (memmem(line, len, "\"parent\"", 8) != NULL &&
	    memmem(line, len, "\"parent_remote\"", 15) == NULL) ||
	    (rec = cJSON_ParseWithLength(line, len)) == NULL)
		return (0);
	v = cJSON_GetObjectItemCaseSensitive(rec, "ts");
	t = cJSON_GetObjectItemCaseSensitive(rec, "trace");
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rec, "kind")) &&
	    strcmp(cJSON_GetObjectItemCaseSensitive(rec,
	    "kind")->valuestring, "span") == 0 && observe_is_root(rec) &&
	    cJSON_IsNumber(v) && cJSON_IsString(t) &&
	    t->valuestring[0] != '\0' && strlen(t->valuestring) < 128 &&
	    (q->trace == NULL || (long long)v->valuedouble > q->root_ms)) {
		free(q->trace);
		q->trace = xstrdup(t->valuestring);
		q->root_ms = (long long)v->valuedouble;
	}
	cJSON_Delete(rec);
	return (0);
}

/* Pass 2 stops at a line that ends before the root began. */
static int
observe_trace_stop(struct observe_query *q, const char *line, size_t len)
{
	long long	end;

	return (q->root_ms > 0 && (end = observe_line_end(line, len)) != -1 &&
	    end < q->root_ms - OBSERVE_JITTER_MS);
}

/*
 * Take a line as a record of trace into *rec: 0 when it is one (an
 * object whose kind is a string, its ts a number, its trace that one),
 * -1 when not. Its text is kept as it is when it scans as one line of
 * JSON that every decoder reads alike (util_json_scan) whose kind,
 * trace, span and parent need no decoding; a record that cJSON alone
 * reads (a CR for a blank, an escaped member name, bytes that are not
 * UTF-8, which become '?') is printed again and then scanned. A record
 * whose ids need escapes, that names a member twice or that is nested
 * deeper than OBSERVE_REC_DEPTH belongs to no trace.
 */
static int
observe_rec_take(const char *line, size_t len, const char *trace,
    struct observe_rec *rec, int again)
{
	struct util_jfield	 f[6] = { { .name = "kind" }, { .name = "ts" },
	    { .name = "trace" }, { .name = "span" }, { .name = "parent" },
	    { .name = "dur_ms" } };
	cJSON			*js;
	char			*text;
	double			 ts, dur;
	int			 rc, i;

	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (util_json_scan(line, len, f, 6, OBSERVE_REC_DEPTH) != 0) {
		/* cJSON would cut the string there: left out. */
		if (again || memmem(line, len, "\\u0000", 6) != NULL ||
		    (js = cJSON_ParseWithLength(line, len)) == NULL)
			return (-1);
		text = util_utf8_scrub(util_json_print(js));
		cJSON_Delete(js);
		rc = observe_rec_take(text, strlen(text), trace, rec, 1);
		free(text);
		return (rc);
	}
	for (i = 0; i < 5; i++) {	/* kind to parent: need no decoding */
		if (f[i].value != NULL && f[i].type == cJSON_String &&
		    f[i].escaped)
			return (-1);
	}
	if (f[0].type != cJSON_String || f[0].value == NULL ||
	    f[2].value == NULL || f[2].type != cJSON_String ||
	    f[2].len != strlen(trace) + 2 ||
	    memcmp(f[2].value + 1, trace, f[2].len - 2) != 0 ||
	    util_jfield_number(&f[1], &ts) != 0 || !(ts > -1e15 && ts < 1e15))
		return (-1);
	memset(rec, 0, sizeof *rec);
	rec->raw = xstrndup(line, len);
	rec->is_span = f[0].len == 6 && memcmp(f[0].value, "\"span\"", 6) ==
	    0;
	rec->span = util_jfield_string(&f[3]);
	rec->parent = util_jfield_string(&f[4]);	/* a caller's, maybe */
	rec->ts = (long long)ts;
	rec->end = rec->ts;
	if (util_jfield_number(&f[5], &dur) == 0 && dur >= 0 && dur < 1e12)
		rec->end += (long long)dur;
	return (0);
}

/* Pass 2: every span and event of the trace. */
static int
observe_trace_line(struct observe_query *q, const char *line, size_t len)
{
	struct observe_rec	 rec;
	long long		 end;

	if (memmem(line, len, q->pattern, strlen(q->pattern)) == NULL ||
	    observe_rec_take(line, len, q->trace, &rec, 0) != 0) {
		end = observe_line_end(line, len);
		return (end != -1 && q->root_ms > 0 &&
		    end < q->root_ms - OBSERVE_JITTER_MS);
	}
	if (q->root_ms > 0 && rec.end < q->root_ms - OBSERVE_JITTER_MS) {
		observe_rec_clear(&rec);
		return (1);
	}
	/*
	 * A root of ours starts its trace: nothing older belongs to it. A
	 * trace the caller made may hold many calls: read it all.
	 */
	if (rec.is_span && rec.parent == NULL && q->root_ms == 0)
		q->root_ms = rec.ts;
	if ((size_t)q->nrecords == q->recs_max) {
		q->recs_max = q->recs_max == 0 ? 64 : q->recs_max * 2;
		q->recs = xreallocarray(q->recs, q->recs_max, sizeof *q->recs);
	}
	rec.seq = (size_t)q->nrecords;
	q->recs[q->nrecords] = rec;
	if (++q->nrecords >= OBSERVE_TRACE_MAX) {
		q->truncated = 1;
		return (1);
	}
	return (0);
}

/* A span of the tree being built, by its id. */
struct observe_node {
	struct observe_rec	 *rec;
	struct observe_rec	**events;
	size_t			  nevents;
	struct observe_node	**kids;
	size_t			  nkids;
	int			  placed;
};

static int
observe_node_cmp(const void *a, const void *b)
{
	return (strcmp(((const struct observe_node *)a)->rec->span,
	    ((const struct observe_node *)b)->rec->span));
}

static struct observe_node *
observe_node_find(struct observe_node *nodes, size_t n, const char *span)
{
	struct observe_rec	rec;
	struct observe_node	key;

	if (span == NULL)
		return (NULL);
	rec.span = (char *)span;
	key.rec = &rec;
	return (bsearch(&key, nodes, n, sizeof *nodes, observe_node_cmp));
}

/* Oldest first; of one start, in the order of the log. */
static int
observe_rec_cmp(const struct observe_rec *x, const struct observe_rec *y)
{
	if (x->ts != y->ts)
		return (x->ts < y->ts ? -1 : 1);
	return (x->seq > y->seq ? -1 : x->seq < y->seq);
}

static int
observe_recp_cmp(const void *a, const void *b)
{
	return (observe_rec_cmp(*(struct observe_rec *const *)a,
	    *(struct observe_rec *const *)b));
}

static int
observe_nodep_cmp(const void *a, const void *b)
{
	return (observe_rec_cmp((*(struct observe_node *const *)a)->rec,
	    (*(struct observe_node *const *)b)->rec));
}

/* A record's text as a raw item, which takes it over. */
static cJSON *
observe_raw(struct observe_rec *rec)
{
	cJSON	*item;

	item = cJSON_CreateRaw("");
	free(item->valuestring);	/* cJSON's free is free */
	item->valuestring = rec->raw;
	rec->raw = NULL;
	return (item);
}

/* A node's object, its children and events within, recursively. */
static cJSON *
observe_node_object(struct observe_node *nd, long long root_ms, int depth,
    int *cut)
{
	cJSON			*obj, *kids, *events;
	struct observe_node	*c;
	size_t			 i;

	obj = cJSON_CreateObject();
	cJSON_AddItemToObject(obj, "span", observe_raw(nd->rec));
	cJSON_AddNumberToObject(obj, "offset_ms", (double)(nd->rec->ts -
	    root_ms));
	kids = cJSON_AddArrayToObject(obj, "children");
	if (nd->nkids > 1)
		qsort(nd->kids, nd->nkids, sizeof *nd->kids,
		    observe_nodep_cmp);
	if (nd->nkids > 0 && depth >= OBSERVE_TREE_DEPTH)
		*cut = 1;	/* deeper spans are left out, and said so */
	for (i = 0; i < nd->nkids && depth < OBSERVE_TREE_DEPTH; i++) {
		c = nd->kids[i];
		if (c->placed)
			continue;	/* a cycle a damaged log made */
		c->placed = 1;
		cJSON_AddItemToArray(kids, observe_node_object(c, root_ms,
		    depth + 1, cut));
	}
	events = cJSON_AddArrayToObject(obj, "events");
	if (nd->nevents > 1)
		qsort(nd->events, nd->nevents, sizeof *nd->events,
		    observe_recp_cmp);
	for (i = 0; i < nd->nevents; i++)
		cJSON_AddItemToArray(events, observe_raw(nd->events[i]));
	return (obj);
}

/* The trace's answer: its spans folded into a tree. */
static void
observe_trace_answer(struct observe_query *q)
{
	struct observe_node	 *nodes, *nd, **roots;
	struct observe_rec	 *rec;
	cJSON			 *result, *list;
	size_t			  n = 0, i, nroots = 0;
	long long		  root_ms = -1, r;

	nodes = xcalloc((size_t)q->nrecords + 1, sizeof *nodes);
	for (r = 0; r < q->nrecords; r++) {
		rec = &q->recs[r];
		if (!rec->is_span || rec->span == NULL)
			continue;
		nodes[n++].rec = rec;
		if (root_ms == -1 || rec->ts < root_ms)
			root_ms = rec->ts;
	}
	if (n > 1)
		qsort(nodes, n, sizeof *nodes, observe_node_cmp);
	for (i = 0; i < n; i++) {
		if ((nd = observe_node_find(nodes, n, nodes[i].rec->parent)) ==
		    NULL)
			continue;
		if ((nd->nkids & (nd->nkids - 1)) == 0)	/* 0, 1, 2, 4 ... */
			nd->kids = xreallocarray(nd->kids, nd->nkids == 0 ?
			    1 : nd->nkids * 2, sizeof *nd->kids);
		nd->kids[nd->nkids++] = &nodes[i];
	}
	/* Events under their span; the others are the trace's own. */
	for (r = 0; r < q->nrecords; r++) {
		rec = &q->recs[r];
		if ((rec->is_span && rec->span != NULL) ||
		    (nd = observe_node_find(nodes, n, rec->parent)) == NULL)
			continue;
		if ((nd->nevents & (nd->nevents - 1)) == 0)
			nd->events = xreallocarray(nd->events, nd->nevents ==
			    0 ? 1 : nd->nevents * 2, sizeof *nd->events);
		nd->events[nd->nevents++] = rec;
	}
	roots = xcalloc(n + 1, sizeof *roots);
	for (i = 0; i < n; i++) {
		nd = &nodes[i];
		if (observe_node_find(nodes, n, nd->rec->parent) == NULL)
			roots[nroots++] = nd;
	}
	if (nroots > 1)
		qsort(roots, nroots, sizeof *roots, observe_nodep_cmp);
	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "view", "trace");
	if (q->trace != NULL)
		cJSON_AddStringToObject(result, "trace", q->trace);
	else
		cJSON_AddNullToObject(result, "trace");
	list = cJSON_AddArrayToObject(result, "spans");
	for (i = 0; i < nroots; i++) {
		roots[i]->placed = 1;
		cJSON_AddItemToArray(list, observe_node_object(roots[i],
		    root_ms, 0, &q->truncated));
	}
	if (q->truncated)
		cJSON_AddTrueToObject(result, "truncated");
	for (i = 0; i < n; i++) {
		free(nodes[i].kids);
		free(nodes[i].events);
	}
	free(nodes);
	free(roots);
	q->cb(result, NULL, q->arg);
	observe_free(q);
}

/* What a line of the trace holds: its id as a JSON string. */
static char *
observe_pattern(const char *trace)
{
	cJSON	*js;
	char	*json, *pattern;

	js = cJSON_CreateString(trace);
	json = util_json_print(js);
	cJSON_Delete(js);
	pattern = json;		/* the parse then checks it is the trace */
	return (pattern);
}

/* A pass over the logs is over. */
static void
observe_trace_finish(struct observe_query *q)
{
	if (q->pass == 2 && q->request == NULL && !q->truncated &&
	    q->nrecords == 0 && q->trace != NULL) {
		/*
		 * No trace of that id: maybe the request id of a call that
		 * joined its caller's trace. Find its root, then its trace.
		 */
		q->request = q->trace;
		q->trace = NULL;
		free(q->pattern);
		q->pattern = observe_pattern(q->request);
		q->need = q->pattern;
		q->stop = NULL;
		observe_recs_free(q);
		q->root_ms = 0;
		q->pass = 1;
		q->line = observe_request_line;
		observe_start(q);
		return;
	}
	if (q->pass == 1 && q->trace == NULL && q->request != NULL) {
		q->trace = q->request;		/* unknown: no spans */
		q->request = NULL;
	} else if (q->pass == 1 && q->trace != NULL) {
		/* "last" found: now its records. */
		q->pass = 2;
		q->line = observe_trace_line;
		q->root_ms = 0;
		q->nrecords = 0;
		free(q->pattern);
		q->pattern = observe_pattern(q->trace);
		q->need = q->pattern;
		q->stop = observe_trace_stop;
		observe_start(q);
		return;
	}
	if (q->pass == 1)
		observe_recs_free(q);	/* no root span at all */
	observe_trace_answer(q);
}

/*
 * The spans of trace trace_id ("last": the root span that started last)
 * in sandbox id's log, folded into a tree: {"view": "trace", "trace",
 * "spans": [{"span": {record}, "offset_ms", "children": [...],
 * "events": [...]}]}, offsets from the trace's first start; an unknown
 * trace has no spans. cb from the loop, taken over, unless
 * observe_cancel comes first.
 */
struct observe_query *
observe_trace(const char *id, const char *trace_id, observe_cb cb,
    void *arg)
{
	struct observe_query	*q;

	q = observe_new(id, cb, arg);
	q->finish = observe_trace_finish;
	if (strcmp(trace_id, "last") == 0) {
		q->pass = 1;
		q->line = observe_root_line;
	} else {
		q->pass = 2;
		q->line = observe_trace_line;
		q->trace = xstrdup(trace_id);
		q->pattern = observe_pattern(trace_id);
		q->need = q->pattern;
		q->stop = observe_trace_stop;
	}
	observe_start(q);
	return (q);
}

/* Stop a query; its callback will not run. */
void
observe_cancel(struct observe_query *q)
{
	if (q != NULL)
		observe_free(q);
}

/* ---- layerstack: the stack, its leases and sizes ---- */

#define OBSERVE_META_MAX	(64 * 1024)
#define OBSERVE_DIR_MAX		100000	/* entries counted in a directory */
#define OBSERVE_BOOKED_MAX	100	/* sessions named per layer */

/* A layer's meta file, or NULL. */
static cJSON *
observe_meta(const char *id, const char *layer)
{
	char	*path, *text;
	size_t	 len;
	cJSON	*m;

	path = state_where(STATE_LAYERS, id, "%s.meta.json", layer);
	text = util_read_file(path, OBSERVE_META_MAX, &len);
	free(path);
	if (text == NULL)
		return (NULL);
	m = cJSON_ParseWithLength(text, len);
	free(text);
	return (m);
}

/* A size from a meta file or record: a number, or null when unknown. */
static cJSON *
observe_size(cJSON *from, const char *key, double *sum)
{
	cJSON	*v = cJSON_GetObjectItem(from, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0)
		return (cJSON_CreateNull());
	*sum += v->valuedouble;
	return (cJSON_CreateNumber(v->valuedouble));
}

/* How many entries a directory holds (but . and ..), up to a bound. */
static long long
observe_count(const char *dir)
{
	struct dirent	*de;
	DIR		*d;
	long long	 n = 0;
	int		 fd;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return (0);
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return (0);
	}
	while ((de = readdir(d)) != NULL && n < OBSERVE_DIR_MAX) {
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	}
	closedir(d);
	return (n);
}

/*
 * The bytes of every layer on disk, from their meta files: those of the
 * manifest and those replaced by a squash and not yet reclaimed.
 */
static void
observe_storage(const char *id, double *logical, double *allocated)
{
	struct dirent	*de;
	DIR		*d;
	char		*dir, layer[64];
	size_t		 len;
	long long	 n = 0;
	cJSON		*m;
	int		 fd;

	dir = state_where(STATE_LAYERS, id, NULL);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	free(dir);
	if (fd == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL && n++ < OBSERVE_DIR_MAX) {
		len = strlen(de->d_name);
		if (len <= 10 || len - 10 >= sizeof layer ||
		    strcmp(de->d_name + len - 10, ".meta.json") != 0)
			continue;
		memcpy(layer, de->d_name, len - 10);
		layer[len - 10] = '\0';
		if (!util_id_valid_layer(layer) || (m = observe_meta(id,
		    layer)) == NULL)
			continue;
		cJSON_Delete(observe_size(m, "bytes", logical));
		cJSON_Delete(observe_size(m, "allocated_bytes", allocated));
		cJSON_Delete(m);
	}
	closedir(d);
}

/*
 * The layer stack of sandbox id (record: its public record, for the
 * base's sizes), as layerstack answers it: the manifest's layers newest
 * first with their sizes from their meta files and the live leases that
 * name them, totals, and a trend of the layers made in the last
 * window_ms. Synchronous and bounded: no walk of a layer.
 */
static cJSON *
observe_layerstack_view(const char *id, cJSON *record, long long window_ms,
    struct cause *cause)
{
	struct layer_stack	*ls;
	struct session_leases	 sl;
	struct session_lease	*l;
	cJSON			*result, *layers, *o, *m, *base, *booked, *trend;
	cJSON			*t;
	char			*err = NULL, hash[72], *dir;
	double			 total = 0, total_alloc = 0, slog = 0, salloc = 0;
	double			 below, *sizes;
	long long		*leased, since = (long long)now_ms() - window_ms;
	size_t			 i, j, k, nlease = 0;
	long long		 created;

	if ((ls = layer_stack_read(id, &err)) == NULL) {
		cause_set(cause, CAUSE_INTERNAL, "sandbox_id", id, "%s", err);
		free(err);
		return (NULL);
	}
	if (session_leases(id, SESSION_LEASES_LIVE, 100000, &sl, &err) != 0) {
		cause_set(cause, CAUSE_INTERNAL, "sandbox_id", id, "%s", err);
		free(err);
		layer_stack_free(ls);
		return (NULL);
	}
	base = cJSON_GetObjectItem(record, "shared_base");
	leased = xcalloc(ls->n, sizeof *leased);
	sizes = xcalloc(ls->n, sizeof *sizes);
	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "view", "layerstack");
	cJSON_AddNumberToObject(result, "manifest_version", ls->version);
	layer_stack_root_hash(ls, hash);
	cJSON_AddStringToObject(result, "root_hash", hash);
	layers = cJSON_CreateArray();
	trend = cJSON_CreateArray();
	for (i = 0; i < sl.n; i++) {
		if (sl.l[i].ls != NULL)
			nlease++;
	}
	for (i = 0; i < ls->n; i++) {
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "layer_id", ls->ids[i]);
		m = i == ls->n - 1 ? NULL : observe_meta(id, ls->ids[i]);
		below = 0;
		cJSON_AddItemToObject(o, "bytes", observe_size(m != NULL ? m :
		    base, "bytes", &below));
		sizes[i] = below;
		total += below;
		cJSON_AddItemToObject(o, "allocated_bytes", observe_size(m !=
		    NULL ? m : base, "allocated_bytes", &total_alloc));
		booked = cJSON_CreateArray();
		for (j = 0; j < sl.n; j++) {
			l = &sl.l[j];
			if (l->ls == NULL)
				continue;
			for (k = 0; k < l->ls->n; k++) {
				if (strcmp(l->ls->ids[k], ls->ids[i]) == 0)
					break;
			}
			if (k == l->ls->n)
				continue;
			if (leased[i]++ < OBSERVE_BOOKED_MAX)
				cJSON_AddItemToArray(booked,
				    cJSON_CreateString(l->ws));
		}
		cJSON_AddNumberToObject(o, "leased_by_workspaces",
		    (double)leased[i]);
		cJSON_AddItemToObject(o, "booked_by", booked);
		if (m != NULL && cJSON_IsNumber(t = cJSON_GetObjectItem(m,
		    "created_at_ms")))
			cJSON_AddNumberToObject(o, "created_at_ms",
			    t->valuedouble);
		cJSON_Delete(m);
		cJSON_AddItemToArray(layers, o);
	}
	/* The trend: the stack's size as each layer of the window came. */
	below = 0;
	for (i = ls->n; i-- > 0;) {
		below += sizes[i];
		o = cJSON_GetArrayItem(layers, (int)i);
		t = cJSON_GetObjectItem(o, "created_at_ms");
		if (!cJSON_IsNumber(t) || (created = (long long)
		    t->valuedouble) < since)
			continue;
		m = cJSON_CreateObject();
		cJSON_AddNumberToObject(m, "ts", (double)created);
		cJSON_AddStringToObject(m, "layer_id", ls->ids[i]);
		cJSON_AddNumberToObject(m, "layer_count", (double)(ls->n - i));
		cJSON_AddNumberToObject(m, "total_bytes", below);
		cJSON_AddItemToArray(trend, m);
	}
	observe_storage(id, &slog, &salloc);
	cJSON_Delete(observe_size(base, "bytes", &slog));
	cJSON_Delete(observe_size(base, "allocated_bytes", &salloc));
	cJSON_AddNumberToObject(result, "active_lease_count", (double)nlease);
	cJSON_AddNumberToObject(result, "total_bytes", total);
	cJSON_AddNumberToObject(result, "total_allocated_bytes", total_alloc);
	cJSON_AddNumberToObject(result, "storage_logical_bytes", slog);
	cJSON_AddNumberToObject(result, "storage_allocated_bytes", salloc);
	dir = state_where(STATE_STACK_STAGING, id, NULL);
	cJSON_AddNumberToObject(result, "staging_entry_count",
	    (double)observe_count(dir));
	free(dir);
	cJSON_AddItemToObject(result, "layers", layers);
	cJSON_AddItemToObject(result, "trend", trend);
	free(leased);
	free(sizes);
	session_leases_free(&sl);
	layer_stack_free(ls);
	return (result);
}

/* The answer is ready: given from the loop. */
static void
observe_ready_cb(evutil_socket_t fd, short events, void *arg)
{
	struct observe_query	*q = arg;
	cJSON			*result = q->result;
	struct cause		 cause = q->cause;

	q->result = NULL;
	memset(&q->cause, 0, sizeof q->cause);
	if (result != NULL)
		q->cb(result, NULL, q->arg);
	else
		q->cb(NULL, &cause, q->arg);
	cause_clear(&cause);
	observe_free(q);
}

static void
observe_ready(struct observe_query *q)
{
	if ((q->ev = evtimer_new(ev_base, observe_ready_cb, q)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	event_active(q->ev, EV_TIMEOUT, 1);
}

/*
 * The sandboxes whose session is being walked: one walk a sandbox at a
 * time, so that a caller cannot fill the helpers' queue shared by every
 * sandbox with walks of its own.
 */
struct observe_walk {
	char			*id;
	LIST_ENTRY(observe_walk) entry;
};
static LIST_HEAD(, observe_walk) observe_walks =
    LIST_HEAD_INITIALIZER(observe_walks);

static int
observe_walking(const char *id)
{
	struct observe_walk	*w;

	LIST_FOREACH(w, &observe_walks, entry) {
		if (strcmp(w->id, id) == 0)
			return (1);
	}
	return (0);
}

static void
observe_walk_done(const char *id)
{
	struct observe_walk	*w;

	LIST_FOREACH(w, &observe_walks, entry) {
		if (strcmp(w->id, id) == 0) {
			LIST_REMOVE(w, entry);
			free(w->id);
			free(w);
			return;
		}
	}
}

static int	observe_upper_child(void *, int);
static void	observe_upper_done(cJSON *, const struct cause *, void *);

/*
 * Walk session q->name of sandbox q->id in a helper, unless one of the
 * sandbox's is under way or the helpers' queue is full (then q answers
 * server_busy).
 */
static void
observe_walk_start(struct observe_query *q, const char *tenant)
{
	struct observe_walk	*w;
	int			 walking = observe_walking(q->id);

	if (walking || job_helper_busy()) {
		cJSON_Delete(q->result);
		q->result = NULL;
		cause_set(&q->cause, CAUSE_BUSY, "limit", walking ?
		    "walks-per-sandbox" : "helper-queue", "%s", walking ?
		    "the changes of a workspace session of this sandbox are"
		    " being measured; try again shortly" : "the server has"
		    " too many publishes and file operations waiting (limit"
		    " helper-queue); try again shortly");
		observe_ready(q);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->id = xstrdup(q->id);
	LIST_INSERT_HEAD(&observe_walks, w, entry);
	q->job = job_helper("upper-size", q->id, tenant, observe_upper_child,
	    q, NULL, 0, observe_upper_done, q);
}

/* The helper: the bytes of regular files in a session's upper. */
static int
observe_upper_child(void *arg, int fd)
{
	struct observe_query	*q = arg;
	char			*upper;
	int			 r;

	upper = state_where(STATE_SESSIONS, q->id, "%s/upper", q->name);
	r = session_measure_child(q->id, upper, fd);
	free(upper);
	return (r);
}

static void
observe_upper_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct observe_query	*q = arg;
	cJSON			*v;

	q->job = NULL;
	observe_walk_done(q->id);
	if (cause != NULL) {
		cJSON_Delete(q->result);
		q->result = NULL;
		cause_set(&q->cause, cause->kind, "workspace_session_id",
		    q->name, "workspace session %s: %s", q->name,
		    cause->message);
	} else {
		v = cJSON_GetObjectItem(result, "bytes");
		cJSON_AddNumberToObject(q->upper_into, "upper_bytes",
		    cJSON_IsNumber(v) ? v->valuedouble : 0);
		if (q->upper_item != NULL && q->upper_has_prev)
			cJSON_AddNumberToObject(cJSON_AddObjectToObject(
			    q->upper_item, "deltas"), "upper_bytes",
			    (cJSON_IsNumber(v) ? v->valuedouble : 0) -
			    q->upper_prev);
	}
	observe_ready(q);
}

/*
 * The stack a live workspace session ws of sandbox id leases (a copy),
 * or NULL with q's cause set (key names the argument).
 */
static struct layer_stack *
observe_live_lease(struct observe_query *q, const char *id, const char *ws,
    const char *key)
{
	struct session_leases	 sl;
	struct layer_stack	*ls = NULL;
	char			*err = NULL;
	size_t			 i;

	if (session_leases(id, SESSION_LEASES_LIVE, 100000, &sl, &err) != 0) {
		cause_set(&q->cause, CAUSE_INTERNAL, "sandbox_id", id, "%s",
		    err);
		free(err);
		return (NULL);
	}
	for (i = 0; i < sl.n; i++) {
		if (sl.l[i].ls != NULL && strcmp(sl.l[i].ws, ws) == 0) {
			ls = sl.l[i].ls;
			sl.l[i].ls = NULL;	/* taken over */
			break;
		}
	}
	session_leases_free(&sl);
	if (ls == NULL)
		cause_set(&q->cause, CAUSE_NOT_FOUND, key, ws, "no live"
		    " workspace session %s in sandbox %s", ws, id);
	return (ls);
}

/*
 * layerstack (observability.md) of sandbox id, record its public record:
 * without ws, the stack (observe_layerstack_view); with ws, that
 * workspace session's lower layers and the bytes of its changes, walked
 * by a helper of the sandbox's (charged to it). cb from the loop, taken
 * over, unless observe_cancel comes first.
 */
struct observe_query *
observe_layerstack(const char *id, cJSON *record, const char *ws,
    const char *tenant, long long window_ms, observe_cb cb, void *arg)
{
	struct observe_query	*q;
	struct layer_stack	*ls;
	cJSON			*mounts;
	size_t			 k;

	q = observe_new(id, cb, arg);
	if (ws == NULL) {
		q->result = observe_layerstack_view(id, record, window_ms,
		    &q->cause);
		observe_ready(q);
		return (q);
	}
	if ((ls = observe_live_lease(q, id, ws, "workspace_id")) == NULL) {
		observe_ready(q);
		return (q);
	}
	q->result = cJSON_CreateObject();
	cJSON_AddStringToObject(q->result, "view", "layerstack");
	cJSON_AddStringToObject(q->result, "workspace", ws);
	cJSON_AddNumberToObject(q->result, "manifest_version", ls->version);
	mounts = cJSON_AddArrayToObject(q->result, "mounts");
	for (k = 0; k < ls->n; k++)
		cJSON_AddItemToArray(mounts, cJSON_CreateString(ls->ids[k]));
	layer_stack_free(ls);
	q->name = xstrdup(ws);
	q->upper_into = q->result;
	observe_walk_start(q, tenant);
	return (q);
}

/* ---- cgroup: the resource samples of a window ---- */

#define OBSERVE_SAMPLES_MAX	2000

/* A sample line of the window: kept (newest first). */
static int
observe_sample_line(struct observe_query *q, const char *line, size_t len)
{
	cJSON	*rec, *ts, *scope;

	if ((rec = cJSON_ParseWithLength(line, len)) == NULL)
		return (0);
	ts = cJSON_GetObjectItemCaseSensitive(rec, "ts");
	scope = cJSON_GetObjectItemCaseSensitive(rec, "scope");
	if (!cJSON_IsNumber(ts) || !cJSON_IsString(scope) ||
	    strcmp(scope->valuestring, q->name != NULL ? q->name :
	    "sandbox") != 0 ||
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(rec,
	    "metrics"))) {
		cJSON_Delete(rec);
		return (0);
	}
	/* Samples are appended in time order: older ones end the window. */
	if ((long long)ts->valuedouble < q->since_ms) {
		cJSON_Delete(rec);
		return ((long long)ts->valuedouble < q->since_ms -
		    OBSERVE_JITTER_MS);
	}
	cJSON_AddItemToArray(q->events, rec);
	if (++q->nrecords >= OBSERVE_SAMPLES_MAX) {
		q->truncated = 1;
		return (1);
	}
	return (0);
}

/* A counter's change, when both samples have it. */
static void
observe_delta(cJSON *deltas, cJSON *now, cJSON *prev, const char *key)
{
	cJSON	*a = cJSON_GetObjectItem(now, key);
	cJSON	*b = cJSON_GetObjectItem(prev, key);

	if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
		cJSON_AddNumberToObject(deltas, key, a->valuedouble -
		    b->valuedouble);
}

static void	observe_cgroup_now(struct observe_query *, cJSON *, double);
static int	observe_walking(const char *);

static void
observe_cgroup_finish(struct observe_query *q)
{
	cJSON	*result, *series, *rec, *item, *prev = NULL, *d, *m;
	double	 ts, pts = 0;
	int	 i;

	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "view", "cgroup");
	cJSON_AddStringToObject(result, "scope", q->name != NULL ? q->name :
	    "sandbox");
	series = cJSON_AddArrayToObject(result, "series");
	/* Oldest first, each against the one before it. */
	for (i = cJSON_GetArraySize(q->events) - 1; i >= 0; i--) {
		rec = cJSON_GetArrayItem(q->events, i);
		ts = cJSON_GetNumberValue(cJSON_GetObjectItem(rec, "ts"));
		m = cJSON_GetObjectItem(rec, "metrics");
		item = cJSON_CreateObject();
		cJSON_AddNumberToObject(item, "ts", ts);
		if (prev != NULL)
			cJSON_AddNumberToObject(item, "sample_delta_ms",
			    ts - pts);
		else
			cJSON_AddNullToObject(item, "sample_delta_ms");
		cJSON_AddItemToObject(item, "metrics", cJSON_Duplicate(m, 1));
		if (prev != NULL) {
			d = cJSON_AddObjectToObject(item, "deltas");
			observe_delta(d, m, prev, "cpu_usec");
			observe_delta(d, m, prev, "mem_cur");
			observe_delta(d, m, prev, "io_rbytes");
			observe_delta(d, m, prev, "io_wbytes");
			observe_delta(d, m, prev, "upper_bytes");
		}
		cJSON_AddItemToArray(series, item);
		prev = m;
		pts = ts;
	}
	if (q->truncated)
		cJSON_AddTrueToObject(result, "truncated");
	/* A session's scope ends with a sample taken now, room allowing. */
	if (q->name != NULL && !observe_walking(q->id) &&
	    !job_helper_busy()) {
		event_free(q->ev);
		q->ev = NULL;
		q->result = result;
		if (prev != NULL && cJSON_IsNumber(cJSON_GetObjectItem(prev,
		    "upper_bytes"))) {
			q->upper_prev = cJSON_GetNumberValue(
			    cJSON_GetObjectItem(prev, "upper_bytes"));
			q->upper_has_prev = 1;
		}
		observe_cgroup_now(q, series, prev != NULL ? pts : -1);
		return;
	}
	q->cb(result, NULL, q->arg);
	observe_free(q);
}

/*
 * cgroup (observability.md) of sandbox id: the samples of scope of the
 * last window_ms (sampler.c), oldest first, each with its change since
 * the one before: scope "sandbox", the container's resources; a live
 * workspace session's id, the bytes of its changes, the sampler's and
 * last one taken now by a helper of the sandbox's (left out while a walk
 * of the sandbox is under way or the helpers' queue is full). cb from
 * the loop, taken over, unless observe_cancel comes first.
 */
struct observe_query *
observe_cgroup(const char *id, const char *scope, const char *tenant,
    long long window_ms, observe_cb cb, void *arg)
{
	struct observe_query	*q;
	struct layer_stack	*ls;

	q = observe_new(id, cb, arg);
	if (strcmp(scope, "sandbox") != 0) {
		if ((ls = observe_live_lease(q, id, scope, "scope")) == NULL) {
			observe_ready(q);
			return (q);
		}
		layer_stack_free(ls);
		q->name = xstrdup(scope);
		q->tenant = xstrdup(tenant);
	}
	q->file = "resources.ndjson";
	q->since_ms = (long long)now_ms() - window_ms;
	q->events = cJSON_CreateArray();
	q->line = observe_sample_line;
	q->finish = observe_cgroup_finish;
	observe_start(q);
	return (q);
}

/*
 * A workspace scope's last sample, taken now (the sampler's are up to
 * SAMPLER_DISK_PERIOD_MS old), after the one at pts (-1: none).
 */
static void
observe_cgroup_now(struct observe_query *q, cJSON *series, double pts)
{
	cJSON		*item;
	uint64_t	 now = now_ms();

	item = cJSON_CreateObject();
	cJSON_AddNumberToObject(item, "ts", (double)now);
	if (pts >= 0)
		cJSON_AddNumberToObject(item, "sample_delta_ms",
		    (double)now - pts);
	else
		cJSON_AddNullToObject(item, "sample_delta_ms");
	q->upper_into = cJSON_AddObjectToObject(item, "metrics");
	cJSON_AddStringToObject(q->upper_into, "metrics_source",
	    "workspace_disk");
	q->upper_item = item;
	cJSON_AddItemToArray(series, item);
	observe_walk_start(q, q->tenant);
}

/* ---- snapshot: a sandbox node, or every ready one at once ---- */

#define OBSERVE_NODE_DEADLINE_MS	1500
#define OBSERVE_TAIL		(64 * 1024)	/* of resources.ndjson */
#define OBSERVE_HISTORY_MS	60000

struct observe_node_q {
	struct observe_snap	*snap;
	char			*id;
	cJSON			*node;
	cJSON			*errors;
	struct docker_call	*call;
	int			 done;
	int			 missing;	/* the container is gone */
};

struct observe_snap {
	struct observe_node_q	*nodes;
	size_t			 n;
	size_t			 left;
	int			 aggregate;
	struct event		*deadline;
	observe_cb		 cb;
	void			*arg;
};

/*
 * The newest resource samples: the latest, and those of the last minute;
 * and into disk, each workspace session's latest upper_bytes.
 */
static void
observe_snap_resources(struct observe_node_q *nq, cJSON *res, cJSON *disk)
{
	struct stat	 st;
	cJSON		*history, *rec, *latest = NULL, *ts, *scope, *v;
	char		*path, *buf, *line, *nl;
	off_t		 off;
	ssize_t		 got;
	long long	 since = (long long)now_ms() - OBSERVE_HISTORY_MS;
	int		 fd;

	history = cJSON_AddArrayToObject(res, "history");
	path = state_where(STATE_SANDBOX, nq->id,
	    "telemetry/resources.ndjson");
	fd = observe_open(path);
	free(path);
	if (fd == -1 || fstat(fd, &st) != 0) {
		if (fd != -1)
			close(fd);
		cJSON_AddNullToObject(res, "latest");
		return;
	}
	off = st.st_size > OBSERVE_TAIL ? st.st_size - OBSERVE_TAIL : 0;
	buf = xmalloc(OBSERVE_TAIL + 1);
	got = pread(fd, buf, st.st_size - off, off);
	close(fd);
	if (got < 0)
		got = 0;
	buf[got] = '\0';
	/* Whole lines only: after the first newline when cut, before the
	 * last one. */
	line = off > 0 && (nl = strchr(buf, '\n')) != NULL ? nl + 1 : buf;
	while ((nl = strchr(line, '\n')) != NULL) {
		*nl = '\0';
		rec = cJSON_Parse(line);
		scope = cJSON_GetObjectItem(rec, "scope");
		if (cJSON_IsString(scope) && strcmp(scope->valuestring,
		    "sandbox") != 0) {
			v = cJSON_GetObjectItem(cJSON_GetObjectItem(rec,
			    "metrics"), "upper_bytes");
			if (cJSON_IsNumber(v)) {
				cJSON_DeleteItemFromObjectCaseSensitive(disk,
				    scope->valuestring);
				cJSON_AddNumberToObject(disk,
				    scope->valuestring, v->valuedouble);
			}
			cJSON_Delete(rec);
		} else if (rec != NULL &&
		    cJSON_IsNumber(ts = cJSON_GetObjectItem(rec, "ts")) &&
		    cJSON_IsObject(cJSON_GetObjectItem(rec, "metrics"))) {
			cJSON_Delete(latest);
			latest = cJSON_Duplicate(rec, 1);
			if ((long long)ts->valuedouble >= since)
				cJSON_AddItemToArray(history, rec);
			else
				cJSON_Delete(rec);
		} else
			cJSON_Delete(rec);
		line = nl + 1;
	}
	free(buf);
	if (latest != NULL)
		cJSON_AddItemToObject(res, "latest", latest);
	else
		cJSON_AddNullToObject(res, "latest");
}

/* A session's running commands, as its process wrote them, or -1. */
static long long
observe_snap_commands(const char *id, const char *ws)
{
	char		*path, *text, *end;
	size_t		 len;
	long long	 n;

	path = state_where(STATE_SESSIONS, id, "%s/commands", ws);
	text = util_read_file(path, 64, &len);
	free(path);
	if (text == NULL)
		return (-1);
	n = strtoll(text, &end, 10);
	if (end == text || n < 0)
		n = -1;
	free(text);
	return (n);
}

/* What a node says without asking the Engine. */
static void
observe_snap_local(struct observe_node_q *nq, cJSON *rec)
{
	struct layer_stack	*ls;
	struct session_leases	 sl;
	cJSON			*node = nq->node, *o, *w, *m, *v, *disk;
	char			*err = NULL, *dir;
	double			 bytes = 0;
	long long		 running;
	size_t			 i, nlease = 0;

	v = cJSON_GetObjectItem(rec, "state");
	cJSON_AddStringToObject(node, "lifecycle_state", cJSON_IsString(v) ?
	    v->valuestring : "unknown");
	o = cJSON_AddObjectToObject(node, "daemon");
	cJSON_AddNullToObject(o, "daemon_pid");
	dir = state_where(STATE_SANDBOX, nq->id, NULL);
	cJSON_AddStringToObject(o, "runtime_dir", dir);
	free(dir);
	disk = cJSON_CreateObject();
	observe_snap_resources(nq, cJSON_AddObjectToObject(node,
	    "resources"), disk);
	w = cJSON_AddArrayToObject(node, "workspaces");
	if (session_leases(nq->id, SESSION_LEASES_LIVE, 100000, &sl,
	    &err) != 0) {
		cJSON_AddItemToArray(nq->errors, cJSON_CreateString(err));
		free(err);
		sl.n = 0;
		sl.l = NULL;
	}
	for (i = 0; i < sl.n; i++) {
		if (sl.l[i].ls == NULL)
			continue;
		nlease++;
		running = observe_snap_commands(nq->id, sl.l[i].ws);
		/* An automatic session lives for its command: else a spare. */
		if (sl.l[i].automatic && running <= 0)
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "workspace_session_id",
		    sl.l[i].ws);
		v = cJSON_GetObjectItem(sl.l[i].lease, "network_profile");
		cJSON_AddStringToObject(o, "network_profile",
		    cJSON_IsString(v) ? v->valuestring : "shared");
		cJSON_AddBoolToObject(o, "automatic", sl.l[i].automatic);
		cJSON_AddNumberToObject(o, "commands_running",
		    running < 0 ? 0 : (double)running);
		/* The sampler's latest measure (sampler.c), if any yet. */
		v = cJSON_GetObjectItemCaseSensitive(disk, sl.l[i].ws);
		if (cJSON_IsNumber(v))
			cJSON_AddNumberToObject(o, "upper_bytes",
			    v->valuedouble);
		else
			cJSON_AddNullToObject(o, "upper_bytes");
		cJSON_AddItemToArray(w, o);
	}
	cJSON_Delete(disk);
	session_leases_free(&sl);
	o = cJSON_AddObjectToObject(node, "stack");
	if ((ls = layer_stack_read(nq->id, &err)) == NULL) {
		cJSON_AddItemToArray(nq->errors, cJSON_CreateString(err));
		free(err);
		cJSON_AddNullToObject(o, "layer_count");
		cJSON_AddNullToObject(o, "layers_bytes");
	} else {
		for (i = 0; i + 1 < ls->n; i++) {
			if ((m = observe_meta(nq->id, ls->ids[i])) != NULL) {
				cJSON_Delete(observe_size(m, "bytes", &bytes));
				cJSON_Delete(m);
			}
		}
		cJSON_Delete(observe_size(cJSON_GetObjectItem(rec,
		    "shared_base"), "bytes", &bytes));
		cJSON_AddNumberToObject(o, "layer_count", (double)ls->n);
		cJSON_AddNumberToObject(o, "layers_bytes", bytes);
		layer_stack_free(ls);
	}
	cJSON_AddNumberToObject(o, "active_leases", (double)nlease);
}

static void
observe_snap_free(struct observe_snap *sn)
{
	size_t	i;

	for (i = 0; i < sn->n; i++) {
		docker_call_cancel(sn->nodes[i].call);
		cJSON_Delete(sn->nodes[i].node);
		cJSON_Delete(sn->nodes[i].errors);
		free(sn->nodes[i].id);
	}
	free(sn->nodes);
	if (sn->deadline != NULL)
		event_free(sn->deadline);
	free(sn);
}

/* Every node has answered, or the deadline has come: answer. */
static void
observe_snap_answer(struct observe_snap *sn)
{
	struct observe_node_q	*nq;
	cJSON			*result, *list = NULL, *node;
	const char		*avail;
	size_t			 i;

	result = cJSON_CreateObject();
	if (sn->aggregate)
		list = cJSON_AddArrayToObject(result, "sandboxes");
	for (i = 0; i < sn->n; i++) {
		nq = &sn->nodes[i];
		if (!nq->done) {
			docker_call_cancel(nq->call);
			nq->call = NULL;
			cJSON_AddItemToArray(nq->errors, cJSON_CreateString(
			    "the container's inspection did not answer within"
			    " 1.5 s"));
		}
		avail = nq->missing ? "unavailable" : cJSON_GetArraySize(
		    nq->errors) > 0 ? "partial" : "available";
		node = nq->node;
		nq->node = NULL;
		cJSON_AddStringToObject(node, "availability", avail);
		cJSON_AddItemToObject(node, "errors", nq->errors);
		nq->errors = NULL;
		if (sn->aggregate)
			cJSON_AddItemToArray(list, node);
		else {
			cJSON_Delete(result);
			result = node;
		}
	}
	sn->cb(result, NULL, sn->arg);
	observe_snap_free(sn);
}

static void
observe_snap_deadline(evutil_socket_t fd, short events, void *arg)
{
	observe_snap_answer(arg);
}

static void
observe_snap_inspect(cJSON *reply, const char *error, int status, void *arg)
{
	struct observe_node_q	*nq = arg;
	struct observe_snap	*sn = nq->snap;
	cJSON			*st, *pid, *daemon;
	char			*msg;

	nq->call = NULL;
	nq->done = 1;
	st = cJSON_GetObjectItem(reply, "State");
	pid = cJSON_GetObjectItem(st, "Pid");
	daemon = cJSON_GetObjectItem(nq->node, "daemon");
	if (status == 404) {
		nq->missing = 1;
		cJSON_AddItemToArray(nq->errors, cJSON_CreateString("the"
		    " sandbox's container is gone"));
	} else if (error != NULL) {
		xasprintf(&msg, "the container could not be inspected: %s",
		    error);
		cJSON_AddItemToArray(nq->errors, cJSON_CreateString(msg));
		free(msg);
	} else if (!cJSON_IsTrue(cJSON_GetObjectItem(st, "Running")) ||
	    !cJSON_IsNumber(pid) || pid->valueint <= 0) {
		nq->missing = 1;
		cJSON_AddItemToArray(nq->errors, cJSON_CreateString("the"
		    " sandbox's container is not running"));
	} else
		cJSON_ReplaceItemInObject(daemon, "daemon_pid",
		    cJSON_CreateNumber(pid->valueint));
	if (--sn->left == 0) {
		event_del(sn->deadline);
		observe_snap_answer(sn);
	}
}

/*
 * snapshot (observability.md) of the n sandboxes ids: one node when
 * aggregate is 0, else {"sandboxes": [node, ...]} of those that are
 * ready. Each node is read
 * from the state directory at once, its container inspected on the
 * Engine, all at the same time, each given OBSERVE_NODE_DEADLINE_MS:
 * a node whose inspection has not answered by then says so and is
 * partial. cb from the loop, taken over.
 */
void
observe_snapshot(char **ids, size_t n, int aggregate, observe_cb cb,
    void *arg)
{
	struct observe_snap	*sn;
	struct observe_node_q	*nq;
	struct timeval		 tv = { OBSERVE_NODE_DEADLINE_MS / 1000,
	    (OBSERVE_NODE_DEADLINE_MS % 1000) * 1000 };
	cJSON			*rec, *cid, *state;
	char			*path;
	size_t			 i;

	sn = xcalloc(1, sizeof *sn);
	sn->nodes = xcalloc(n + 1, sizeof *sn->nodes);
	sn->aggregate = aggregate;
	sn->cb = cb;
	sn->arg = arg;
	if ((sn->deadline = evtimer_new(ev_base, observe_snap_deadline,
	    sn)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	for (i = 0; i < n; i++) {
		rec = state_record_read(ids[i]);
		cid = cJSON_GetObjectItem(rec, "container_id");
		state = cJSON_GetObjectItem(rec, "state");
		/* The aggregate holds the ready sandboxes alone. */
		if (aggregate && (!cJSON_IsString(state) ||
		    strcmp(state->valuestring, "ready") != 0)) {
			cJSON_Delete(rec);
			continue;
		}
		nq = &sn->nodes[sn->n++];
		nq->snap = sn;
		nq->id = xstrdup(ids[i]);
		nq->node = cJSON_CreateObject();
		nq->errors = cJSON_CreateArray();
		cJSON_AddStringToObject(nq->node, "sandbox_id", ids[i]);
		cJSON_AddNumberToObject(nq->node, "sampled_at_unix_ms",
		    (double)now_ms());
		observe_snap_local(nq, rec);
		if (rec == NULL || !cJSON_IsString(cid) ||
		    !util_id_valid(cid->valuestring) ||
		    !cJSON_IsString(state) || strcmp(state->valuestring,
		    "ready") != 0) {
			nq->done = 1;
			nq->missing = 1;
			cJSON_AddItemToArray(nq->errors, cJSON_CreateString(
			    "the sandbox is not ready"));
		} else {
			sn->left++;
			xasprintf(&path, "/containers/%s/json",
			    cid->valuestring);
			nq->call = docker_call("GET", path, NULL, NULL, NULL,
			    observe_snap_inspect, nq);
			free(path);
		}
		cJSON_Delete(rec);
	}
	if (sn->left == 0) {
		/* Nothing to wait for: from the loop all the same. */
		event_active(sn->deadline, EV_TIMEOUT, 1);
		return;
	}
	evtimer_add(sn->deadline, &tv);
}
