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
 * The telemetry writer. Spans and events are appended as NDJSON lines to
 * <state>/sandboxes/<id>/telemetry/events.ndjson for work on a sandbox and
 * to <state>/telemetry/events.ndjson for work on none. Each line is one
 * write(2) on an O_APPEND descriptor, so lines from several processes
 * sharing the state directory never interleave; the file is rotated to
 * ".1" at 8 MiB under an flock, and a line is cut to 16 KiB by dropping
 * its attributes. Telemetry never fails the work it describes: a write
 * error is logged and forgotten.
 */

#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

#define TELEMETRY_ROTATE	(8 * 1024 * 1024)
#define TELEMETRY_LINE_MAX	(16 * 1024)

struct tspan {
	char		 trace[65];
	char		 span[17];
	char		 parent[17];
	char		*name;
	char		*sandbox_id;
	uint64_t	 start_ms;
	uint64_t	 start_us;
	int		 remote;	/* parent: the caller's span */
	cJSON		*attrs;
};

static int	telemetry_warned;
static char	telemetry_client_addr[64]; /* of the request being handled */
/* The caller's W3C trace context and key name, for the same span. */
static char	telemetry_ctx_trace[33];
static char	telemetry_ctx_parent[17];
static char	telemetry_ctx_key[128];

/*
 * The address of the client whose request is being handed over (NULL
 * once it is): root spans begun meanwhile, the tool calls it makes, carry
 * it as client_addr.
 */
void
telemetry_client(const char *addr)
{
	if (addr == NULL)
		telemetry_client_addr[0] = '\0';
	else
		strlcpy(telemetry_client_addr, addr,
		    sizeof telemetry_client_addr);
}

/* Whether s is n lowercase hexadecimal digits, not all zeros. */
static int
telemetry_hex(const char *s, size_t n)
{
	size_t	i;
	int	nonzero = 0;

	for (i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return (0);
		if (s[i] != '0')
			nonzero = 1;
	}
	return (nonzero);
}

/*
 * The context of the request being handed over (NULLs once it is): the
 * caller's W3C traceparent, if any, and the name of the key it used.
 * The tool calls it makes join the caller's trace, their root span a
 * child of the caller's span, and carry the key's name. A traceparent
 * that is not one (W3C Trace Context: version-traceid-parentid-flags,
 * lowercase hexadecimal, version ff and all-zero ids invalid, a later
 * version read by its first four fields) is ignored: the call gets a
 * trace of its own.
 */
void
telemetry_context(const char *traceparent, const char *key)
{
	const char	*t = traceparent;
	size_t		 len;

	telemetry_ctx_trace[0] = telemetry_ctx_parent[0] = '\0';
	telemetry_ctx_key[0] = '\0';
	if (key != NULL)
		strlcpy(telemetry_ctx_key, key, sizeof telemetry_ctx_key);
	if (t == NULL || (len = strlen(t)) < 55 || len > 512)
		return;
	if (!(telemetry_hex(t, 2) || strncmp(t, "00", 2) == 0) ||
	    strncmp(t, "ff", 2) == 0 || t[2] != '-' || t[35] != '-' ||
	    t[52] != '-' || (len > 55 && (strncmp(t, "00", 2) == 0 ||
	    t[55] != '-')))
		return;
	if (!telemetry_hex(t + 3, 32) || !telemetry_hex(t + 36, 16) ||
	    !(telemetry_hex(t + 53, 2) || strncmp(t + 53, "00", 2) == 0))
		return;
	memcpy(telemetry_ctx_trace, t + 3, 32);
	telemetry_ctx_trace[32] = '\0';
	memcpy(telemetry_ctx_parent, t + 36, 16);
	telemetry_ctx_parent[16] = '\0';
}

/* Create the state directory's telemetry folder if it is not there. */
void
telemetry_init(void)
{
	char	*dir, *cause;

	xasprintf(&dir, "%s/telemetry", cfg->state_dir);
	if (util_mkdir_p(dir, 0750, &cause) != 0) {
		log_warnx("telemetry disabled: %s", cause);
		free(cause);
	}
	free(dir);
}

/*
 * The file a line for this sandbox (or none) goes to: file in the
 * sandbox's telemetry directory, or, when there is none (no sandbox, or
 * one gone), in the state directory's (NULL when file is a sandbox's
 * alone).
 */
static char *
telemetry_path(const char *sandbox_id, const char *file, int shared)
{
	char		*path, *dir;
	struct stat	 st;

	if (sandbox_id != NULL && util_id_valid(sandbox_id)) {
		xasprintf(&dir, "%s/sandboxes/%s/telemetry", cfg->state_dir,
		    sandbox_id);
		if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
			xasprintf(&path, "%s/%s", dir, file);
			free(dir);
			return (path);
		}
		free(dir);
	}
	if (!shared)
		return (NULL);
	xasprintf(&path, "%s/telemetry/%s", cfg->state_dir, file);
	return (path);
}

/*
 * Rotate the log when it has grown past the limit. The flock makes one
 * process do it; the inode check stops a second one rotating the fresh
 * file the first has just started.
 */
static int
telemetry_rotate(const char *path, int fd)
{
	struct stat	 fst, pst;
	char		*old;
	int		 nfd;

	if (flock(fd, LOCK_EX) != 0)
		return (fd);
	if (fstat(fd, &fst) == 0 && stat(path, &pst) == 0 &&
	    fst.st_ino == pst.st_ino && fst.st_dev == pst.st_dev &&
	    fst.st_size >= TELEMETRY_ROTATE) {
		xasprintf(&old, "%s.1", path);
		if (rename(path, old) != 0)
			log_warn("cannot rotate %s", path);
		free(old);
	}
	flock(fd, LOCK_UN);
	nfd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (nfd == -1)
		return (fd);
	close(fd);
	return (nfd);
}

/*
 * Descriptors kept open on the sandboxes' logs, so that a line costs an
 * lstat and a write rather than an open and a close too. One is used
 * only while the path still names its inode (a rotation by any process
 * renames it away), by the process that opened it (a forked child
 * forgets the table, whose numbers are not its own), and all are closed
 * after each run of the trash (telemetry_release), so that none holds a
 * sandbox's file system once it is taken down.
 */
#define TELEMETRY_KEPT	16

struct telemetry_kept {
	char	*path;
	int	 fd;
	dev_t	 dev;
	ino_t	 ino;
};
static struct telemetry_kept	 telemetry_kept[TELEMETRY_KEPT];
static unsigned int		 telemetry_kept_next;
static pid_t			 telemetry_kept_pid;

static void
telemetry_kept_drop(struct telemetry_kept *k, int closeit)
{
	if (k->path == NULL)
		return;
	if (closeit)
		close(k->fd);
	free(k->path);
	k->path = NULL;
	k->fd = -1;
}

/* Close every kept descriptor. */
void
telemetry_release(void)
{
	unsigned int	i;

	for (i = 0; i < TELEMETRY_KEPT; i++)
		telemetry_kept_drop(&telemetry_kept[i],
		    telemetry_kept_pid == getpid());
}

/*
 * A kept descriptor on path (an existing log of a sandbox), with what
 * lstat says of it in st; NULL when there is none to be had.
 */
static struct telemetry_kept *
telemetry_keep(const char *path, struct stat *st)
{
	struct telemetry_kept	*slot = NULL;
	struct stat		 fst;
	unsigned int		 i;
	pid_t			 self = getpid();
	int			 fd;

	if (telemetry_kept_pid != self) {
		for (i = 0; i < TELEMETRY_KEPT; i++)
			telemetry_kept_drop(&telemetry_kept[i], 0);
		telemetry_kept_pid = self;
	}
	for (i = 0; i < TELEMETRY_KEPT; i++) {
		if (telemetry_kept[i].path != NULL &&
		    strcmp(telemetry_kept[i].path, path) == 0) {
			slot = &telemetry_kept[i];
			break;
		}
	}
	if (lstat(path, st) != 0 || !S_ISREG(st->st_mode)) {
		if (slot != NULL)
			telemetry_kept_drop(slot, 1);
		return (NULL);
	}
	if (slot != NULL && slot->dev == st->st_dev && slot->ino == st->st_ino)
		return (slot);
	if (slot != NULL)
		telemetry_kept_drop(slot, 1);
	fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return (NULL);
	if (fstat(fd, &fst) != 0 || fst.st_dev != st->st_dev ||
	    fst.st_ino != st->st_ino) {
		close(fd);
		return (NULL);
	}
	if (slot == NULL) {
		slot = &telemetry_kept[telemetry_kept_next++ % TELEMETRY_KEPT];
		telemetry_kept_drop(slot, 1);
	}
	slot->path = xstrdup(path);
	slot->fd = fd;
	slot->dev = fst.st_dev;
	slot->ino = fst.st_ino;
	return (slot);
}

/* Append one record as a line to file, cutting it to the line limit. */
static void
telemetry_append(const char *sandbox_id, const char *file, int shared,
    cJSON *rec)
{
	struct telemetry_kept	*k = NULL;
	struct stat		 st;
	char			*path, *text;
	size_t			 len;
	int			 fd;

	text = util_json_print(rec);
	len = strlen(text);
	if (len + 1 > TELEMETRY_LINE_MAX) {
		cJSON_DeleteItemFromObject(rec, "attrs");
		cJSON_AddItemToObject(rec, "attrs", cJSON_CreateObject());
		cJSON_AddTrueToObject(cJSON_GetObjectItem(rec, "attrs"),
		    "truncated");
		free(text);
		text = util_json_print(rec);
		len = strlen(text);
	}
	text = xrealloc(text, len + 2);
	text[len++] = '\n';
	text[len] = '\0';

	/* The sandbox's log as it was last time: one lstat to be sure. */
	if (sandbox_id != NULL && util_id_valid(sandbox_id)) {
		xasprintf(&path, "%s/sandboxes/%s/telemetry/%s",
		    cfg->state_dir, sandbox_id, file);
		if ((k = telemetry_keep(path, &st)) != NULL &&
		    st.st_size < TELEMETRY_ROTATE) {
			if (write(k->fd, text, len) != (ssize_t)len &&
			    !telemetry_warned++)
				log_warn("telemetry: cannot write %s", path);
			goto out;
		}
		if (k != NULL)
			telemetry_kept_drop(k, 1);
		free(path);
	}
	if ((path = telemetry_path(sandbox_id, file, shared)) == NULL) {
		free(text);
		return;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0640);
	if (fd == -1) {
		if (!telemetry_warned++)
			log_warn("telemetry: cannot open %s", path);
		goto out;
	}
	if (fstat(fd, &st) == 0 && st.st_size >= TELEMETRY_ROTATE)
		fd = telemetry_rotate(path, fd);
	if (write(fd, text, len) != (ssize_t)len && !telemetry_warned++)
		log_warn("telemetry: cannot write %s", path);
	close(fd);
out:
	free(path);
	free(text);
}

static void
telemetry_write(const char *sandbox_id, cJSON *rec)
{
	telemetry_append(sandbox_id, "events.ndjson", 1, rec);
}

/*
 * Append a resource sample to a sandbox's resources.ndjson (rotated as
 * the events are); nothing when the sandbox's directory is gone.
 */
void
telemetry_resources(const char *sandbox_id, cJSON *rec)
{
	telemetry_append(sandbox_id, "resources.ndjson", 0, rec);
}

/*
 * Start a span. A root span takes the trace id given (the tool call's
 * request id) or, when the caller sent its trace context
 * (telemetry_context), the caller's trace id and span as its parent,
 * with the request id as attrs.request_id; work no tool call asked for
 * gets a fresh trace id. A child inherits its parent's trace and
 * sandbox.
 */
struct tspan *
telemetry_span_begin(const char *trace, struct tspan *parent,
    const char *name, const char *sandbox_id)
{
	struct tspan	*ts;

	ts = xcalloc(1, sizeof *ts);
	if (parent != NULL) {
		strlcpy(ts->trace, parent->trace, sizeof ts->trace);
		strlcpy(ts->parent, parent->span, sizeof ts->parent);
		if (sandbox_id == NULL && parent->sandbox_id != NULL)
			sandbox_id = parent->sandbox_id;
	} else if (trace != NULL && telemetry_ctx_trace[0] != '\0') {
		strlcpy(ts->trace, telemetry_ctx_trace, sizeof ts->trace);
		strlcpy(ts->parent, telemetry_ctx_parent, sizeof ts->parent);
		ts->remote = 1;
	} else if (trace != NULL)
		strlcpy(ts->trace, trace, sizeof ts->trace);
	else
		util_random_hex(ts->trace, 16);	/* work of no tool call */
	util_random_hex(ts->span, 16);
	ts->name = xstrdup(name);
	if (sandbox_id != NULL)
		ts->sandbox_id = xstrdup(sandbox_id);
	ts->start_ms = now_ms();
	ts->start_us = mono_us();
	ts->attrs = cJSON_CreateObject();
	if (parent == NULL && telemetry_client_addr[0] != '\0')
		cJSON_AddStringToObject(ts->attrs, "client_addr",
		    telemetry_client_addr);
	if (parent == NULL && trace != NULL && telemetry_ctx_key[0] != '\0')
		cJSON_AddStringToObject(ts->attrs, "key", telemetry_ctx_key);
	if (ts->remote)
		cJSON_AddStringToObject(ts->attrs, "request_id", trace);
	return (ts);
}

void
telemetry_span_attr_str(struct tspan *ts, const char *key, const char *value)
{
	if (ts == NULL)
		return;
	cJSON_DeleteItemFromObject(ts->attrs, key);
	cJSON_AddStringToObject(ts->attrs, key, value);
}

void
telemetry_span_attr_int(struct tspan *ts, const char *key, long long value)
{
	if (ts == NULL)
		return;
	cJSON_DeleteItemFromObject(ts->attrs, key);
	cJSON_AddNumberToObject(ts->attrs, key, (double)value);
}

/*
 * The sandbox a span (and the children begun after this) is written
 * for, once it is known; a span keeps the first it is given.
 */
void
telemetry_span_sandbox(struct tspan *ts, const char *sandbox_id)
{
	if (ts != NULL && ts->sandbox_id == NULL && sandbox_id != NULL)
		ts->sandbox_id = xstrdup(sandbox_id);
}

const char *
telemetry_span_trace(struct tspan *ts)
{
	return (ts->trace);
}

/* End a span with its status, write it and free it. */
void
telemetry_span_end(struct tspan *ts, const char *status)
{
	cJSON	*rec;
	double	 dur;

	if (ts == NULL)
		return;
	dur = (double)(mono_us() - ts->start_us) / 1000.0;
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "kind", "span");
	cJSON_AddNumberToObject(rec, "ts", (double)ts->start_ms);
	cJSON_AddStringToObject(rec, "trace", ts->trace);
	cJSON_AddStringToObject(rec, "span", ts->span);
	if (ts->parent[0] != '\0')
		cJSON_AddStringToObject(rec, "parent", ts->parent);
	if (ts->remote)
		cJSON_AddTrueToObject(rec, "parent_remote");
	cJSON_AddStringToObject(rec, "name", ts->name);
	cJSON_AddNumberToObject(rec, "dur_ms", (double)(long long)(dur *
	    1000.0) / 1000.0);
	cJSON_AddStringToObject(rec, "status", status);
	cJSON_AddItemToObject(rec, "attrs", ts->attrs);
	ts->attrs = NULL;
	telemetry_write(ts->sandbox_id, rec);
	cJSON_Delete(rec);
	free(ts->name);
	free(ts->sandbox_id);
	free(ts);
}

/* Write an event under a span (or, with none, under the trace alone). */
void
telemetry_event(const char *sandbox_id, const char *trace,
    struct tspan *parent, const char *name, cJSON *attrs)
{
	cJSON	*rec;

	metrics_event(name);
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "kind", "event");
	cJSON_AddNumberToObject(rec, "ts", (double)now_ms());
	if (parent != NULL) {
		cJSON_AddStringToObject(rec, "trace", parent->trace);
		cJSON_AddStringToObject(rec, "parent", parent->span);
		if (sandbox_id == NULL)
			sandbox_id = parent->sandbox_id;
	} else {
		cJSON_AddStringToObject(rec, "trace", trace != NULL ? trace :
		    "");
		cJSON_AddNullToObject(rec, "parent");
	}
	cJSON_AddStringToObject(rec, "name", name);
	cJSON_AddItemToObject(rec, "attrs", attrs != NULL ? attrs :
	    cJSON_CreateObject());
	telemetry_write(sandbox_id, rec);
	cJSON_Delete(rec);
}
