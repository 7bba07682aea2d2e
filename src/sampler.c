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
 * The resource sampler (observability.md, "cgroup"): every
 * SAMPLER_PERIOD_MS, each ready sandbox of the state directory is asked
 * for its container's statistics (GET /containers/{id}/stats, one shot,
 * on the loop like every Engine call) and the sample is appended to the
 * sandbox's telemetry/resources.ndjson:
 *
 *	{"ts", "scope": "sandbox", "metrics": {"metrics_source":
 *	 "docker_engine", "cgroup": "v1|v2", "cpu_usec", "mem_cur",
 *	 "mem_max", "io_rbytes", "io_wbytes"}}
 *
 * One process samples a sandbox: the one holding the exclusive flock of
 * <state>/telemetry/<id>.sampler, taken without waiting and kept while
 * the sandbox is there, so that several processes on one state directory
 * neither sample twice nor leave a sandbox unsampled when one ends (the
 * lock is not in the sandbox's directory: a descriptor there would keep
 * its disk mounted when it is destroyed). A
 * sandbox whose last sample has not come back is skipped, so a slow
 * Engine never has more than one request per sandbox waiting.
 *
 * Every SAMPLER_DISK_PERIOD_MS the same process also measures the
 * changes of each live managed workspace session of the sandbox (at most
 * SAMPLER_DISK_MAX of them) and appends one disk sample each:
 *
 *	{"ts", "scope": WORKSPACE_SESSION_ID, "metrics": {"metrics_source":
 *	 "workspace_disk", "upper_bytes"}}
 *
 * The uppers are the sandbox's, written by its commands: they are walked
 * by one confined helper charged to the sandbox (job_helper), never by
 * the loop, one walk per sandbox at a time, and not at all while the
 * helpers' queue is full.
 *
 * The statistics are read as the docker CLI reads them, on cgroup v1 and
 * v2 alike: memory in use without the inactive file cache
 * (total_inactive_file on v1, inactive_file on v2), the limit as the
 * maximum, and the bytes read and written summed over the devices of
 * io_service_bytes_recursive (ops Read and Write on v1, read and write
 * on v2).
 */

#include "config.h"

#include <sys/queue.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define SAMPLER_PERIOD_MS	2000
#define SAMPLER_DISK_PERIOD_MS	10000
#define SAMPLER_DISK_MAX	256

struct sampler_node {
	char			*id;
	int			 lock;		/* -1: another process samples */
	struct docker_call	*call;		/* a sample under way */
	int			 seen;
	struct job		*walk;		/* disk samples under way */
	uint64_t		 walked_ms;	/* when the last one began */
	char			**ws;		/* the sessions it measures */
	char			**uppers;
	size_t			 nws;
	LIST_ENTRY(sampler_node) entry;
};
static LIST_HEAD(, sampler_node) sampler_nodes =
    LIST_HEAD_INITIALIZER(sampler_nodes);
static struct event	*sampler_ev;

static double
sampler_number(cJSON *o, const char *a, const char *b, const char *c)
{
	cJSON	*v = cJSON_GetObjectItem(o, a);

	if (b != NULL)
		v = cJSON_GetObjectItem(v, b);
	if (c != NULL)
		v = cJSON_GetObjectItem(v, c);
	return (cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble :
	    0);
}

/* The sample a stats reply makes (the Engine's fields, v1 and v2). */
static cJSON *
sampler_sample(cJSON *reply)
{
	cJSON	*rec, *m, *mem, *io, *e, *op;
	double	 usage, inactive, rbytes = 0, wbytes = 0;
	int	 v1;

	mem = cJSON_GetObjectItem(reply, "memory_stats");
	v1 = cJSON_GetObjectItem(cJSON_GetObjectItem(mem, "stats"),
	    "total_inactive_file") != NULL;
	usage = sampler_number(mem, "usage", NULL, NULL);
	inactive = sampler_number(mem, "stats", v1 ? "total_inactive_file" :
	    "inactive_file", NULL);
	if (inactive < usage)
		usage -= inactive;
	io = cJSON_GetObjectItem(cJSON_GetObjectItem(reply, "blkio_stats"),
	    "io_service_bytes_recursive");
	if (!cJSON_IsArray(io))
		io = NULL;
	cJSON_ArrayForEach(e, io) {
		op = cJSON_GetObjectItem(e, "op");
		if (!cJSON_IsString(op))
			continue;
		if (strcasecmp(op->valuestring, "read") == 0)
			rbytes += sampler_number(e, "value", NULL, NULL);
		else if (strcasecmp(op->valuestring, "write") == 0)
			wbytes += sampler_number(e, "value", NULL, NULL);
	}
	rec = cJSON_CreateObject();
	cJSON_AddNumberToObject(rec, "ts", (double)now_ms());
	cJSON_AddStringToObject(rec, "scope", "sandbox");
	m = cJSON_AddObjectToObject(rec, "metrics");
	cJSON_AddStringToObject(m, "metrics_source", "docker_engine");
	cJSON_AddStringToObject(m, "cgroup", v1 ? "v1" : "v2");
	cJSON_AddNumberToObject(m, "cpu_usec", (double)(long long)(
	    sampler_number(reply, "cpu_stats", "cpu_usage", "total_usage") /
	    1000));
	cJSON_AddNumberToObject(m, "mem_cur", usage);
	cJSON_AddNumberToObject(m, "mem_max", sampler_number(mem, "limit",
	    NULL, NULL));
	cJSON_AddNumberToObject(m, "io_rbytes", rbytes);
	cJSON_AddNumberToObject(m, "io_wbytes", wbytes);
	return (rec);
}

static void
sampler_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct sampler_node	*n = arg;
	cJSON			*rec;

	n->call = NULL;
	if (error != NULL || !cJSON_IsObject(reply)) {
		log_debug("sandbox %s: no resource sample: %s", n->id,
		    error != NULL ? error : "not an object");
		return;
	}
	rec = sampler_sample(reply);
	telemetry_resources(n->id, rec);
	cJSON_Delete(rec);
}

static char *
sampler_lock_path(const char *id)
{
	char	*path;

	xasprintf(&path, "%s/telemetry/%s.sampler", cfg->state_dir, id);
	return (path);
}

static void
sampler_walk_free(struct sampler_node *n)
{
	size_t	i;

	for (i = 0; i < n->nws; i++) {
		free(n->ws[i]);
		free(n->uppers[i]);
	}
	free(n->ws);
	free(n->uppers);
	n->ws = n->uppers = NULL;
	n->nws = 0;
}

/* The helper: the bytes of each session's upper. */
static int
sampler_walk_child(void *arg, int fd)
{
	struct sampler_node	*n = arg;

	return (session_measure_many_child(n->id, n->uppers, n->nws, fd));
}

static void
sampler_walk_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct sampler_node	*n = arg;
	cJSON			*list, *v, *rec, *m;
	size_t			 i;

	n->walk = NULL;
	if (cause != NULL)
		log_debug("sandbox %s: no disk samples: %s", n->id,
		    cause->message);
	list = cJSON_GetObjectItem(result, "bytes");
	for (i = 0; cause == NULL && i < n->nws; i++) {
		v = cJSON_GetArrayItem(list, (int)i);
		if (!cJSON_IsNumber(v) || v->valuedouble < 0)
			continue;
		rec = cJSON_CreateObject();
		cJSON_AddNumberToObject(rec, "ts", (double)now_ms());
		cJSON_AddStringToObject(rec, "scope", n->ws[i]);
		m = cJSON_AddObjectToObject(rec, "metrics");
		cJSON_AddStringToObject(m, "metrics_source", "workspace_disk");
		cJSON_AddNumberToObject(m, "upper_bytes", v->valuedouble);
		telemetry_resources(n->id, rec);
		cJSON_Delete(rec);
	}
	sampler_walk_free(n);
}

/*
 * Measure the live managed sessions of a sandbox this process samples,
 * when the period has passed and no walk of it is under way.
 */
static void
sampler_walk(struct sampler_node *n, cJSON *rec)
{
	struct session_leases	 sl;
	char			*err;
	size_t			 i;
	uint64_t		 now = now_ms();

	if (n->walk != NULL || now < n->walked_ms + SAMPLER_DISK_PERIOD_MS ||
	    job_helper_busy())
		return;
	n->walked_ms = now;
	if (session_leases(n->id, SESSION_LEASES_LIVE, SAMPLER_DISK_MAX, &sl,
	    &err) != 0) {
		log_debug("sandbox %s: no disk samples: %s", n->id, err);
		free(err);
		return;
	}
	for (i = 0; i < sl.n; i++) {
		if (sl.l[i].automatic || sl.l[i].ls == NULL)
			continue;
		n->ws = xreallocarray(n->ws, n->nws + 1, sizeof *n->ws);
		n->uppers = xreallocarray(n->uppers, n->nws + 1,
		    sizeof *n->uppers);
		n->ws[n->nws] = xstrdup(sl.l[i].ws);
		n->uppers[n->nws++] = state_where(STATE_SESSIONS, n->id,
		    "%s/upper", sl.l[i].ws);
	}
	session_leases_free(&sl);
	if (n->nws == 0)
		return;
	n->walk = job_helper("disk-sample", n->id, sandbox_record_tenant(rec),
	    sampler_walk_child, n, NULL, 0, sampler_walk_done, n);
}

static void
sampler_free(struct sampler_node *n)
{
	char	*path;

	LIST_REMOVE(n, entry);
	docker_call_cancel(n->call);
	job_cancel(n->walk);
	sampler_walk_free(n);
	if (n->lock != -1) {
		/* The sandbox is gone: so is its lock. */
		if (state_record_gone(n->id)) {
			path = sampler_lock_path(n->id);
			unlink(path);
			free(path);
		}
		close(n->lock);
	}
	free(n->id);
	free(n);
}

/* Whether this process samples the sandbox (it holds the lock). */
static int
sampler_mine(struct sampler_node *n)
{
	char	*path;
	int	 fd;

	if (n->lock != -1)
		return (1);
	path = sampler_lock_path(n->id);
	fd = util_lock_try(path);
	free(path);
	if (fd == -1)
		return (0);
	n->lock = fd;
	return (1);
}

static void
sampler_tick(evutil_socket_t fd, short events, void *arg)
{
	struct sampler_node	*n, *n1;
	cJSON			*rec, *state, *cid;
	char			**ids, *path;
	size_t			 nids, i;

	LIST_FOREACH(n, &sampler_nodes, entry)
		n->seen = 0;
	ids = state_sandbox_ids(&nids);
	for (i = 0; i < nids; i++) {
		if ((rec = state_record_read(ids[i])) == NULL)
			continue;
		state = cJSON_GetObjectItem(rec, "state");
		cid = cJSON_GetObjectItem(rec, "container_id");
		if (!cJSON_IsString(state) || strcmp(state->valuestring,
		    "ready") != 0 || !cJSON_IsString(cid) ||
		    !util_id_valid(cid->valuestring)) {
			cJSON_Delete(rec);
			continue;
		}
		LIST_FOREACH(n, &sampler_nodes, entry) {
			if (strcmp(n->id, ids[i]) == 0)
				break;
		}
		if (n == NULL) {
			n = xcalloc(1, sizeof *n);
			n->id = xstrdup(ids[i]);
			n->lock = -1;
			LIST_INSERT_HEAD(&sampler_nodes, n, entry);
		}
		n->seen = 1;
		if (n->call == NULL && sampler_mine(n)) {
			xasprintf(&path, "/containers/%s/stats?stream=false"
			    "&one-shot=true", cid->valuestring);
			n->call = docker_call("GET", path, NULL, NULL, NULL,
			    sampler_cb, n);
			free(path);
		}
		if (n->lock != -1)
			sampler_walk(n, rec);
		cJSON_Delete(rec);
	}
	for (i = 0; i < nids; i++)
		free(ids[i]);
	free(ids);
	LIST_FOREACH_SAFE(n, &sampler_nodes, entry, n1) {
		if (!n->seen)
			sampler_free(n);	/* gone, or not ready */
	}
}

/* Start sampling the state directory's sandboxes. */
void
sampler_init(void)
{
	struct timeval	tv = { SAMPLER_PERIOD_MS / 1000,
	    (SAMPLER_PERIOD_MS % 1000) * 1000 };

	if (sampler_ev != NULL)
		return;
	if ((sampler_ev = event_new(ev_base, -1, EV_PERSIST, sampler_tick,
	    NULL)) == NULL)
		fatalx("%s: event_new", __func__);
	evtimer_add(sampler_ev, &tv);
}
