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
 * Sandboxes: records in the state directory and containers on the
 * Docker Engine. A record is written before its container exists and
 * removed only after its container is gone, so at every instant each
 * container of ours has a record; every transition is persisted, and a
 * record being changed names its owner (pid and start time) so that any
 * process can tell an interrupted transition from one in progress.
 *
 *	creating -> ready	create_sandbox, all or nothing per call
 *	ready|failed -> stopping -> (removed)	destroy_sandbox
 *	any -> failed		a step that cannot complete, or recovery
 *	ready -> failed		the container died or was removed outside us
 *
 * Each sandbox's directory is its own disk (disk.c), made and mounted by
 * a child process while the container is created and started; the
 * record becomes ready once both are there. Removing a sandbox removes
 * its directory and disk first and its record last.
 */

#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define SANDBOX_LABEL		"io.sandbox-mcp."
#define SANDBOX_IDLE_CMD	"trap 'exit 0' TERM; while :; do sleep 3600 &" \
				" wait; done"

struct sandbox_create;

struct sandbox_member {
	struct sandbox_create	*sc;
	char			 id[18];
	char			*container_id;
	int			 recorded;
	int			 removed;
	struct tspan		*disk_span;
	cJSON			*record;
	struct docker_call	*dc;
};

enum sandbox_create_step {
	SANDBOX_CREATE_IMAGE,
	SANDBOX_CREATE_BASE,
	SANDBOX_CREATE_CONTAINERS,
	SANDBOX_CREATE_START,
	SANDBOX_CREATE_ROOTS,
	SANDBOX_CREATE_ROLLBACK
};

struct sandbox_create {
	enum sandbox_create_step step;
	struct tspan		*span;
	char			*image;
	char			*workspace;
	char			*root_hash;
	cJSON			*base_size;	/* bytes, allocated_bytes, entries */
	char			*tenant;
	char			*network;	/* the tenant's, its id */
	char			*net_error;
	enum {
		SANDBOX_NET_NONE,		/* not asked for yet */
		SANDBOX_NET_ASKED,		/* its ensure runs */
		SANDBOX_NET_ANSWERED
	}			 net;
	int			 containers_wait; /* for the network */
	int			 dead;		/* answered: freed by the
						   network's answer */
	int			 finish_later;	/* failed: answered after
						   the network's answer */
	int			 count;
	struct sandbox_member	*m;
	int			 pending;
	int			 rollback_next;
	char			 batch[13];
	struct cause		 cause;		/* the first error */
	struct basecache_build	*base;
	int			 disk_pending;
	void			(*after_disks)(struct sandbox_create *);
	sandbox_cb		 cb;
	void			*arg;
	int			 cancelled;
};

struct sandbox_destroy {
	char			 id[65];
	char			*container;
	cJSON			*record;
	struct tspan		*span;
	sandbox_cb		 cb;
	void			*arg;
};

struct sandbox_lookup {
	char			 id[65];
	cJSON			*record;
	sandbox_cb		 cb;
	void			*arg;
};

static void	sandbox_create_containers(struct sandbox_create *);
static void	sandbox_create_rollback(struct sandbox_create *);
static void	sandbox_create_finish(struct sandbox_create *);
static void	sandbox_remove_state(const char *,
		    void (*)(const char *, void *), void *);

/* Whether a caller's sandbox id is one we could have made. */
static int
sandbox_id_check(const char *id, struct cause *cause)
{
	if (!util_id_valid(id)) {
		cause_set(cause, CAUSE_INVALID, "sandbox_id", id, "invalid"
		    " sandbox id: %.80s%s (ids are 1 to 64 characters of a-z,"
		    " 0-9, _ and -)", id, strlen(id) > 80 ? "..." : "");
		return (-1);
	}
	return (0);
}

/* The tenant a sandbox record names; a record without one is local. */
const char *
sandbox_record_tenant(cJSON *rec)
{
	cJSON	*v = cJSON_GetObjectItem(rec, "tenant");

	return (cJSON_IsString(v) ? v->valuestring : TENANT_LOCAL);
}

/*
 * The tenant that owns sandbox id (the caller frees it), or NULL when
 * the id is invalid or names no sandbox.
 */
char *
sandbox_tenant(const char *id)
{
	cJSON	*rec;
	char	*tenant;

	if (id == NULL || !util_id_valid(id) ||
	    (rec = state_record_read(id)) == NULL)
		return (NULL);
	tenant = xstrdup(sandbox_record_tenant(rec));
	cJSON_Delete(rec);
	return (tenant);
}

/*
 * The record as callers see it: without the bookkeeping fields, and with
 * the tenant a record made before tenants had.
 */
cJSON *
sandbox_record_public(cJSON *rec)
{
	cJSON	*pub;

	pub = cJSON_Duplicate(rec, 1);
	/* The id under the name every tool's argument gives it, too. */
	cJSON_DeleteItemFromObject(pub, "sandbox_id");
	if (cJSON_IsString(cJSON_GetObjectItem(rec, "id")))
		cJSON_AddStringToObject(pub, "sandbox_id",
		    cJSON_GetObjectItem(rec, "id")->valuestring);
	cJSON_DeleteItemFromObject(pub, "owner");
	cJSON_DeleteItemFromObject(pub, "batch");
	if (!cJSON_IsString(cJSON_GetObjectItem(pub, "tenant"))) {
		cJSON_DeleteItemFromObject(pub, "tenant");
		cJSON_AddStringToObject(pub, "tenant",
		    sandbox_record_tenant(rec));
	}
	return (pub);
}

static const char *
sandbox_record_state(cJSON *rec)
{
	cJSON	*v = cJSON_GetObjectItem(rec, "state");

	return (cJSON_IsString(v) ? v->valuestring : "unknown");
}

static void
sandbox_record_set(cJSON *rec, const char *key, cJSON *value)
{
	if (cJSON_GetObjectItem(rec, key) != NULL)
		cJSON_ReplaceItemInObject(rec, key, value);
	else
		cJSON_AddItemToObject(rec, key, value);
}

/*
 * Set the state, and the error that goes with failed (or none). Outside
 * ready the endpoints are null: nothing serves the sandbox.
 */
static void
sandbox_record_state_set(cJSON *rec, const char *state, const char *error)
{
	sandbox_record_set(rec, "state", cJSON_CreateString(state));
	if (strcmp(state, "ready") != 0) {
		sandbox_record_set(rec, "daemon", cJSON_CreateNull());
		sandbox_record_set(rec, "daemon_http", cJSON_CreateNull());
	}
	if (error != NULL)
		sandbox_record_set(rec, "error", cJSON_CreateString(error));
	else
		cJSON_DeleteItemFromObject(rec, "error");
}

/*
 * The address and port of this process's HTTP listener, which main hands
 * over once it listens (the engine does not ask the front end).
 */
static char	 sandbox_endpoint_host[256];
static int	 sandbox_endpoint_port;

void
sandbox_set_endpoint(const char *host, int port)
{
	strlcpy(sandbox_endpoint_host, host, sizeof sandbox_endpoint_host);
	sandbox_endpoint_port = port;
}

/* The endpoint objects of this process's listener, or null. */
static cJSON *
sandbox_daemon(void)
{
	cJSON	*d;

	if (sandbox_endpoint_port == 0)
		return (cJSON_CreateNull());
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "host", sandbox_endpoint_host);
	cJSON_AddNumberToObject(d, "port", sandbox_endpoint_port);
	return (d);
}

static cJSON *
sandbox_record_new(struct sandbox_create *sc, const char *id)
{
	cJSON	*rec, *sb, *rp;
	char	*source;

	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "id", id);
	cJSON_AddStringToObject(rec, "workspace_root", sc->workspace);
	cJSON_AddStringToObject(rec, "state", "creating");
	cJSON_AddNullToObject(rec, "daemon");
	cJSON_AddNullToObject(rec, "daemon_http");
	sb = cJSON_AddObjectToObject(rec, "shared_base");
	source = basecache_path(sc->root_hash);
	cJSON_AddStringToObject(sb, "source", source);
	free(source);
	cJSON_AddStringToObject(sb, "target", "/workspace");
	cJSON_AddStringToObject(sb, "root_hash", sc->root_hash);
	if (sc->base_size != NULL) {
		cJSON_AddItemToObject(sb, "bytes", cJSON_Duplicate(
		    cJSON_GetObjectItem(sc->base_size, "bytes"), 1));
		cJSON_AddItemToObject(sb, "allocated_bytes", cJSON_Duplicate(
		    cJSON_GetObjectItem(sc->base_size, "allocated_bytes"), 1));
		cJSON_AddItemToObject(sb, "entries", cJSON_Duplicate(
		    cJSON_GetObjectItem(sc->base_size, "entries"), 1));
	}
	cJSON_AddTrueToObject(sb, "readonly");
	cJSON_AddStringToObject(rec, "image", sc->image);
	cJSON_AddNumberToObject(rec, "created_at_ms", (double)now_ms());
	rp = cJSON_AddObjectToObject(rec, "resource_profile");
	cJSON_AddNumberToObject(rp, "cpus",
	    (double)cfg->profile.nano_cpus / 1e9);
	cJSON_AddNumberToObject(rp, "memory_high",
	    (double)cfg->profile.memory_high);
	cJSON_AddNumberToObject(rp, "memory_max",
	    (double)cfg->profile.memory_max);
	cJSON_AddNumberToObject(rp, "pids", (double)cfg->profile.pids);
	if (cfg->profile.disk > 0)
		cJSON_AddNumberToObject(rp, "disk", (double)cfg->profile.disk);
	else
		cJSON_AddNullToObject(rp, "disk");
	cJSON_AddNullToObject(rec, "container_id");
	cJSON_AddStringToObject(rec, "tenant", sc->tenant);
	cJSON_AddStringToObject(rec, "batch", sc->batch);
	cJSON_AddItemToObject(rec, "owner", state_owner_self());
	return (rec);
}

/*
 * Persist a member's record under its lock, first checking that it is
 * still ours (in creating, owned by this process).
 */
static int
sandbox_member_persist(struct sandbox_member *mb, char **cause)
{
	cJSON	*disk;
	int	 fd, r;

	if ((fd = state_lock(mb->id)) == -1) {
		xasprintf(cause, "cannot lock the record of %s: %s", mb->id,
		    strerror(errno));
		return (-1);
	}
	disk = state_record_read(mb->id);
	if (disk == NULL || !state_owner_is_self(cJSON_GetObjectItem(disk,
	    "owner"))) {
		xasprintf(cause, "the record of %s was changed by another"
		    " process", mb->id);
		cJSON_Delete(disk);
		state_unlock(fd);
		return (-1);
	}
	cJSON_Delete(disk);
	r = state_record_write(mb->id, mb->record, cause);
	state_unlock(fd);
	return (r);
}

/*
 * Keep the first error of a create (of kind, with {key: value} as its
 * details when key is not NULL); later ones are only logged.
 */
static void
sandbox_create_error(struct sandbox_create *sc, enum cause_kind kind,
    const char *key, const char *value, const char *fmt, ...)
{
	char	*msg;
	va_list	 ap;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if (sc->cause.kind == CAUSE_NONE)
		cause_set(&sc->cause, kind, key, value, "%s", msg);
	else
		log_debug("create %s: later error: %s", sc->batch, msg);
	free(msg);
}

static void
sandbox_create_free(struct sandbox_create *sc)
{
	int	i;

	if (sc->net == SANDBOX_NET_ASKED) {
		sc->dead = 1;	/* the network's answer frees it */
		return;
	}
	for (i = 0; i < sc->count; i++) {
		free(sc->m[i].container_id);
		cJSON_Delete(sc->m[i].record);
	}
	free(sc->m);
	free(sc->image);
	free(sc->workspace);
	free(sc->root_hash);
	cJSON_Delete(sc->base_size);
	/* A network made for a create that failed goes with it. */
	if (sc->net == SANDBOX_NET_ANSWERED)
		tenantnet_done(sc->tenant, sc->cause.kind != CAUSE_NONE &&
		    sc->network != NULL);
	free(sc->tenant);
	free(sc->network);
	free(sc->net_error);
	cause_clear(&sc->cause);
	free(sc);
}

/* A failed create is over with the Engine: answer it. */
static void
sandbox_create_failed(void *arg)
{
	struct sandbox_create	*sc = arg;

	sc->cb(NULL, &sc->cause, sc->arg);
	sandbox_create_free(sc);
}

/*
 * Answer the call and free the create. A failed one answers once the
 * network it asked for has answered and, made for it, is gone again:
 * nothing it started is still under way with the Engine then.
 */
static void
sandbox_create_finish(struct sandbox_create *sc)
{
	cJSON	*result, *list;
	int	 i;

	if (sc->cause.kind != CAUSE_NONE) {
		if (sc->span != NULL) {
			telemetry_span_attr_str(sc->span, "error",
			    sc->cause.message);
			telemetry_span_end(sc->span, "error");
			sc->span = NULL;
		}
		if (sc->net == SANDBOX_NET_ASKED) {
			sc->finish_later = 1;	/* its answer finishes */
			return;
		}
		if (sc->net == SANDBOX_NET_ANSWERED) {
			sc->net = SANDBOX_NET_NONE;	/* done here */
			tenantnet_done_then(sc->tenant, sc->network != NULL,
			    sandbox_create_failed, sc);
			return;
		}
		sandbox_create_failed(sc);
		return;
	}
	for (i = 0; i < sc->count; i++)
		telemetry_event(sc->m[i].id, telemetry_span_trace(sc->span),
		    NULL, "sandbox.created", NULL);
	telemetry_span_end(sc->span, "completed");
	if (sc->count == 1)
		result = sandbox_record_public(sc->m[0].record);
	else {
		result = cJSON_CreateObject();
		list = cJSON_AddArrayToObject(result, "sandboxes");
		for (i = 0; i < sc->count; i++)
			cJSON_AddItemToArray(list,
			    sandbox_record_public(sc->m[i].record));
	}
	sc->cb(result, NULL, sc->arg);
	sandbox_create_free(sc);
}

void
sandbox_root_free(struct sandbox_root *root)
{
	size_t	i;

	for (i = 0; i < root->nlower; i++)
		free(root->lower[i]);
	free(root->lower);
	root->lower = NULL;
	root->nlower = 0;
	free(root->dir);
	root->dir = NULL;
}

/*
 * Where the sandbox's root file system comes from (nsexec_root): a
 * container made with a read-only root gets one on the sandbox's disk,
 * its lower layers the image's when Docker keeps them as overlay2
 * directories, a copy of the container's root otherwise. A container
 * made before roots were capped keeps its own writable root. c is the
 * container's inspection.
 */
int
sandbox_root_of(const char *id, cJSON *c, struct sandbox_root *root,
    char **cause)
{
	cJSON	*gd, *lower;
	char	*dirs, *dir, *next, *path;
	size_t	 n = 0;

	sandbox_root_free(root);
	if (!cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(c,
	    "HostConfig"), "ReadonlyRootfs")))
		return (0);
	if (!disk_mounted(id)) {
		xasprintf(cause, "the container of sandbox %s has a read-only"
		    " root and the sandbox no disk for its own", id);
		return (-1);
	}
	path = state_where(STATE_SANDBOX, id, "root");
	root->dir = xstrdup(path + strlen(cfg->state_dir) + 1);
	free(path);
	gd = cJSON_GetObjectItem(c, "GraphDriver");
	lower = cJSON_GetObjectItem(cJSON_GetObjectItem(gd, "Data"),
	    "LowerDir");
	if (!cJSON_IsString(cJSON_GetObjectItem(gd, "Name")) ||
	    strcmp(cJSON_GetObjectItem(gd, "Name")->valuestring,
	    "overlay2") != 0 || !cJSON_IsString(lower))
		return (0);
	dirs = xstrdup(lower->valuestring);
	for (dir = dirs; dir != NULL; dir = next) {
		if ((next = strchr(dir, ':')) != NULL)
			*next++ = '\0';
		if (*dir != '/' || strstr(dir, "/../") != NULL) {
			xasprintf(cause, "the Docker Engine gave an image layer"
			    " of sandbox %s that is no absolute path: %.200s",
			    id, dir);
			free(dirs);
			sandbox_root_free(root);
			return (-1);
		}
		root->lower = xreallocarray(root->lower, n + 1,
		    sizeof *root->lower);
		root->lower[n++] = xstrdup(dir);
	}
	root->nlower = n;
	free(dirs);
	return (0);
}

/* A descriptor of the state directory, for the children that make roots. */
static int
sandbox_state_fd(void)
{
	static int	fd = -1;

	if (fd == -1)
		fd = open(cfg->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return (fd);
}

static void	sandbox_create_ready(struct sandbox_create *);

/* One member's root is there, or could not be made. */
static void
sandbox_create_root_done(struct sandbox_member *mb)
{
	struct sandbox_create	*sc = mb->sc;

	if (--sc->pending > 0)
		return;
	if (sc->cause.kind != CAUSE_NONE)
		sandbox_create_rollback(sc);
	else
		sandbox_create_ready(sc);
}

static void
sandbox_create_root_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct sandbox_member	*mb = arg;

	if (cause != NULL)
		sandbox_create_error(mb->sc, CAUSE_FAILED, "sandbox_id",
		    mb->id, "cannot make the root file system of %s: %s",
		    mb->id, cause->message);
	sandbox_create_root_done(mb);
}

/* A member's container, inspected: its root, on its disk, in a child. */
static void
sandbox_create_root_inspect_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct sandbox_member	*mb = arg;
	struct sandbox_root	 root = { NULL, NULL, 0 };
	struct nsexec_zygote	 z;
	cJSON			*pid;
	char			*cause = NULL;
	int			 keep[1];

	mb->dc = NULL;
	pid = cJSON_GetObjectItem(cJSON_GetObjectItem(reply, "State"), "Pid");
	if (error != NULL)
		sandbox_create_error(mb->sc, CAUSE_FAILED, "sandbox_id", mb->id,
		    "cannot inspect the container of %s: %s", mb->id, error);
	else if (!cJSON_IsNumber(pid) || pid->valuedouble <= 0 ||
	    pid->valuedouble > INT32_MAX)
		sandbox_create_error(mb->sc, CAUSE_FAILED, "sandbox_id", mb->id,
		    "the container of %s is not running", mb->id);
	else if (sandbox_root_of(mb->id, reply, &root, &cause) != 0) {
		sandbox_create_error(mb->sc, CAUSE_FAILED, "sandbox_id", mb->id,
		    "%s", cause);
		free(cause);
	} else if (root.dir != NULL && (keep[0] = sandbox_state_fd()) == -1)
		sandbox_create_error(mb->sc, CAUSE_INTERNAL, "sandbox_id",
		    mb->id, "cannot open %s: %s", cfg->state_dir,
		    strerror(errno));
	else if (root.dir != NULL) {
		/* The child has its copy of z once forked. */
		memset(&z, 0, sizeof z);
		z.container_pid = (pid_t)pid->valuedouble;
		z.root = root.dir;
		z.root_lower = root.lower;
		z.nroot_lower = root.nlower;
		job_fork_keep("sandbox-root", nsexec_root_child, &z, keep, 1,
		    sandbox_create_root_cb, mb);
		sandbox_root_free(&root);
		return;
	}
	sandbox_root_free(&root);
	sandbox_create_root_done(mb);
}

/*
 * Every container is running and every disk mounted: each sandbox's
 * root file system on its disk (nsexec_root), before anything runs in
 * the container.
 */
static void
sandbox_create_roots(struct sandbox_create *sc)
{
	struct sandbox_member	*mb;
	char			*path;
	int			 i;

	if (sc->disk_pending > 0) {
		sc->after_disks = sandbox_create_roots;
		return;
	}
	if (sc->cause.kind != CAUSE_NONE) {	/* a disk could not be made */
		sandbox_create_rollback(sc);
		return;
	}
	if (cfg->profile.disk <= 0) {
		sandbox_create_ready(sc);
		return;
	}
	sc->step = SANDBOX_CREATE_ROOTS;
	sc->pending = sc->count;
	for (i = 0; i < sc->count; i++) {
		mb = &sc->m[i];
		xasprintf(&path, "/containers/%s/json", mb->container_id);
		mb->dc = docker_call("GET", path, "container_inspect", NULL,
		    sc->span, sandbox_create_root_inspect_cb, mb);
		free(path);
	}
}

/* Every container is running: the records become ready. */
static void
sandbox_create_ready(struct sandbox_create *sc)
{
	struct sandbox_member	*mb;
	char			*cause;
	int			 i;

	if (sc->disk_pending > 0) {
		sc->after_disks = sandbox_create_ready;
		return;
	}
	if (sc->cause.kind != CAUSE_NONE) {	/* a disk could not be made */
		sandbox_create_rollback(sc);
		return;
	}
	for (i = 0; i < sc->count; i++) {
		mb = &sc->m[i];
		sandbox_record_state_set(mb->record, "ready", NULL);
		sandbox_record_set(mb->record, "daemon", sandbox_daemon());
		sandbox_record_set(mb->record, "daemon_http", sandbox_daemon());
		sandbox_record_set(mb->record, "owner", cJSON_CreateNull());
		if (sandbox_member_persist(mb, &cause) != 0) {
			sandbox_create_error(sc, CAUSE_INTERNAL, "sandbox_id",
			    mb->id, "%s", cause);
			free(cause);
			sandbox_record_set(mb->record, "owner",
			    state_owner_self());
			sandbox_create_rollback(sc);
			return;
		}
	}
	sandbox_create_finish(sc);
}

static void
sandbox_create_start_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct sandbox_member	*mb = arg;
	struct sandbox_create	*sc = mb->sc;

	mb->dc = NULL;
	if (error != NULL && status != 304)
		sandbox_create_error(sc, CAUSE_FAILED, "sandbox_id", mb->id,
		    "cannot start the container of %s: %s", mb->id, error);
	if (--sc->pending > 0)
		return;
	if (sc->cause.kind != CAUSE_NONE)
		sandbox_create_rollback(sc);
	else
		sandbox_create_roots(sc);
}

/* Start every container at once. */
static void
sandbox_create_start(struct sandbox_create *sc)
{
	struct sandbox_member	*mb;
	char			*path;
	int			 i;

	sc->step = SANDBOX_CREATE_START;
	sc->pending = sc->count;
	for (i = 0; i < sc->count; i++) {
		mb = &sc->m[i];
		xasprintf(&path, "/containers/%s/start", mb->container_id);
		mb->dc = docker_call("POST", path, "container_start", NULL,
		    sc->span, sandbox_create_start_cb, mb);
		free(path);
	}
}

static void
sandbox_create_container_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct sandbox_member	*mb = arg;
	struct sandbox_create	*sc = mb->sc;
	cJSON			*id;
	char			*cause;

	mb->dc = NULL;
	id = cJSON_GetObjectItem(reply, "Id");
	if (error != NULL)
		sandbox_create_error(sc, CAUSE_FAILED, "sandbox_id", mb->id,
		    "cannot create the container of %s: %s", mb->id, error);
	else if (!cJSON_IsString(id) || !util_id_valid(id->valuestring))
		sandbox_create_error(sc, CAUSE_FAILED, "sandbox_id", mb->id,
		    "the Docker Engine created the container of %s but gave no"
		    " valid id", mb->id);
	else {
		mb->container_id = xstrdup(id->valuestring);
		sandbox_record_set(mb->record, "container_id",
		    cJSON_CreateString(mb->container_id));
		if (sandbox_member_persist(mb, &cause) != 0) {
			sandbox_create_error(sc, CAUSE_INTERNAL, "sandbox_id",
			    mb->id, "%s", cause);
			free(cause);
		}
	}
	if (--sc->pending > 0)
		return;
	if (sc->cause.kind != CAUSE_NONE)
		sandbox_create_rollback(sc);
	else
		sandbox_create_start(sc);
}

/* The body of POST /containers/create for one sandbox. */
static cJSON *
sandbox_container_config(struct sandbox_create *sc, const char *id)
{
	cJSON	*c, *v, *labels, *hc;

	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "Image", sc->image);
	v = cJSON_AddArrayToObject(c, "Entrypoint");
	cJSON_AddItemToArray(v, cJSON_CreateString("/bin/sh"));
	v = cJSON_AddArrayToObject(c, "Cmd");
	cJSON_AddItemToArray(v, cJSON_CreateString("-c"));
	cJSON_AddItemToArray(v, cJSON_CreateString(SANDBOX_IDLE_CMD));
	cJSON_AddStringToObject(c, "WorkingDir", "/");
	cJSON_AddFalseToObject(c, "Tty");
	cJSON_AddFalseToObject(c, "OpenStdin");
	cJSON_AddFalseToObject(c, "AttachStdin");
	cJSON_AddFalseToObject(c, "AttachStdout");
	cJSON_AddFalseToObject(c, "AttachStderr");
	labels = cJSON_AddObjectToObject(c, "Labels");
	cJSON_AddStringToObject(labels, SANDBOX_LABEL "sandbox-id", id);
	cJSON_AddStringToObject(labels, SANDBOX_LABEL "workspace-root",
	    sc->workspace);
	cJSON_AddStringToObject(labels, SANDBOX_LABEL "root-hash",
	    sc->root_hash);
	cJSON_AddStringToObject(labels, SANDBOX_LABEL "state-dir",
	    cfg->state_dir);
	hc = cJSON_AddObjectToObject(c, "HostConfig");
	cJSON_AddNumberToObject(hc, "NanoCpus", (double)cfg->profile.nano_cpus);
	cJSON_AddNumberToObject(hc, "Memory", (double)cfg->profile.memory_max);
	cJSON_AddNumberToObject(hc, "MemoryReservation",
	    (double)cfg->profile.memory_high);
	cJSON_AddNumberToObject(hc, "PidsLimit", (double)cfg->profile.pids);
	cJSON_AddTrueToObject(hc, "Init");
	/*
	 * With a disk, what sessions write outside /workspace goes to a
	 * root on it (nsexec_root), never to Docker's layer of the
	 * container on the host's disk.
	 */
	if (cfg->profile.disk > 0)
		cJSON_AddTrueToObject(hc, "ReadonlyRootfs");
	cJSON_AddFalseToObject(hc, "Privileged");
	cJSON_AddFalseToObject(hc, "PublishAllPorts");
	cJSON_AddObjectToObject(hc, "PortBindings");
	cJSON_AddArrayToObject(hc, "CapAdd");
	v = cJSON_AddArrayToObject(hc, "SecurityOpt");
	cJSON_AddItemToArray(v, cJSON_CreateString("no-new-privileges"));
	v = cJSON_AddObjectToObject(hc, "RestartPolicy");
	cJSON_AddStringToObject(v, "Name", "no");
	/* The tenant's own network (tenantnet.c). */
	cJSON_AddStringToObject(hc, "NetworkMode", sc->network);
	return (c);
}

/* The network is there (or not) and the records too: the containers. */
static void
sandbox_create_containers_go(struct sandbox_create *sc)
{
	struct sandbox_member	*mb;
	cJSON			*body;
	char			*path;
	int			 i;

	if (sc->network == NULL) {
		sandbox_create_error(sc, CAUSE_FAILED, "sandbox_id",
		    sc->m[0].id, "%s", sc->net_error != NULL ? sc->net_error :
		    "the tenant's network could not be made");
		sandbox_create_rollback(sc);
		return;
	}
	sc->pending = sc->count;
	for (i = 0; i < sc->count; i++) {
		mb = &sc->m[i];
		body = sandbox_container_config(sc, mb->id);
		xasprintf(&path, "/containers/create?name=%s", mb->id);
		mb->dc = docker_call("POST", path, "container_create", body,
		    sc->span, sandbox_create_container_cb, mb);
		free(path);
		cJSON_Delete(body);
	}
}

/* Records are in place: every container, once the network is. */
static void
sandbox_create_containers(struct sandbox_create *sc)
{
	sc->step = SANDBOX_CREATE_CONTAINERS;
	if (sc->net == SANDBOX_NET_ASKED) {
		sc->containers_wait = 1;
		return;
	}
	sandbox_create_containers_go(sc);
}

/*
 * The tenant's network is there (its id), or could not be made: asked
 * for at the start, beside the image and the base.
 */
static void
sandbox_create_network_cb(const char *id, const char *error, void *arg)
{
	struct sandbox_create	*sc = arg;

	sc->net = SANDBOX_NET_ANSWERED;
	if (id != NULL)
		sc->network = xstrdup(id);
	else
		sc->net_error = xstrdup(error);
	if (sc->dead) {
		sandbox_create_free(sc);
		return;
	}
	if (sc->finish_later) {
		sc->finish_later = 0;
		sandbox_create_finish(sc);
		return;
	}
	if (sc->containers_wait) {
		sc->containers_wait = 0;
		sandbox_create_containers_go(sc);
	}
}

/*
 * What every sandbox's directory holds, once its disk is mounted (or
 * at once, with no disk): telemetry, trash and the layer stack.
 */
static int
sandbox_member_fill(struct sandbox_member *mb, char **cause)
{
	if (state_sandbox_init(mb->id, cause) != 0)
		return (-1);
	return (layer_stack_init(mb->id, cJSON_GetObjectItem(
	    cJSON_GetObjectItem(mb->record, "shared_base"),
	    "source")->valuestring, cause));
}

/* A member's disk is made and mounted, or could not be. */
static void
sandbox_create_disk_cb(const struct cause *error, void *arg)
{
	struct sandbox_member	*mb = arg;
	struct sandbox_create	*sc = mb->sc;
	void			(*next)(struct sandbox_create *);
	char			*cause;

	sc->disk_pending--;
	if (error != NULL)
		telemetry_span_attr_str(mb->disk_span, "error", error->message);
	telemetry_span_end(mb->disk_span, error != NULL ? "error" :
	    "completed");
	mb->disk_span = NULL;
	if (error != NULL)
		sandbox_create_error(sc, error->kind, "sandbox_id", mb->id,
		    "%s", error->message);
	else if (sandbox_member_fill(mb, &cause) != 0) {
		sandbox_create_error(sc, CAUSE_INTERNAL, "sandbox_id", mb->id,
		    "%s", cause);
		free(cause);
	}
	if (sc->disk_pending == 0 && (next = sc->after_disks) != NULL) {
		sc->after_disks = NULL;
		next(sc);
	}
}

/*
 * Write a record for each member (creating), start making its disk,
 * then create containers meanwhile.
 */
static void
sandbox_create_records(struct sandbox_create *sc)
{
	struct sandbox_member	*mb;
	char			*cause = NULL, rnd[13];
	int			 i, tries, lock, r;

	for (i = 0; i < sc->count; i++) {
		mb = &sc->m[i];
		for (tries = 0; ; tries++) {
			util_random_hex(rnd, 12);
			snprintf(mb->id, sizeof mb->id, "sbox-%s", rnd);
			if (state_sandbox_create(mb->id, &cause) == 0)
				break;
			if (errno != EEXIST || tries == 8) {
				sandbox_create_error(sc, CAUSE_INTERNAL, NULL,
				    NULL, "%s", cause != NULL ? cause : "cannot"
				    " allocate a sandbox id");
				free(cause);
				sandbox_create_rollback(sc);
				return;
			}
		}
		mb->record = sandbox_record_new(sc, mb->id);
		lock = state_lock(mb->id);	/* every write is under it */
		r = state_record_write(mb->id, mb->record, &cause);
		state_unlock(lock);
		if (r != 0 || (cfg->profile.disk == 0 &&
		    sandbox_member_fill(mb, &cause) != 0)) {
			sandbox_create_error(sc, CAUSE_INTERNAL, NULL, NULL,
			    "%s", cause);
			free(cause);
			mb->recorded = 1;	/* its directory exists */
			sandbox_create_rollback(sc);
			return;
		}
		mb->recorded = 1;
	}
	/* After the records: their fsyncs need not wait for mke2fs. */
	for (i = 0; i < sc->count && cfg->profile.disk > 0; i++) {
		mb = &sc->m[i];
		sc->disk_pending++;
		mb->disk_span = telemetry_span_begin(NULL, sc->span,
		    "disk.create", NULL);
		telemetry_span_attr_str(mb->disk_span, "sandbox_id", mb->id);
		telemetry_span_attr_int(mb->disk_span, "bytes",
		    cfg->profile.disk);
		disk_create(mb->id, cfg->profile.disk, 0,
		    sandbox_create_disk_cb, mb);
	}
	sandbox_create_containers(sc);
}

static void
sandbox_create_base_cb(const char *root_hash, int hold, cJSON *report,
    const struct cause *cause, void *arg)
{
	struct sandbox_create	*sc = arg;

	sc->base = NULL;
	if (root_hash == NULL || sc->cancelled) {
		state_unlock(hold);
		if (cause != NULL)
			sandbox_create_error(sc, cause->kind, "workspace_root",
			    sc->workspace, "%s", cause->message);
		sandbox_create_finish(sc);
		return;
	}
	sc->root_hash = xstrdup(root_hash);
	/* What the base holds, for layerstack (no walk then). */
	sc->base_size = cJSON_CreateObject();
	cJSON_AddNumberToObject(sc->base_size, "bytes", cJSON_GetNumberValue(
	    cJSON_GetObjectItem(report, "bytes")));
	cJSON_AddNumberToObject(sc->base_size, "allocated_bytes",
	    cJSON_GetNumberValue(cJSON_GetObjectItem(report,
	    "allocated_bytes")));
	cJSON_AddNumberToObject(sc->base_size, "entries", cJSON_GetNumberValue(
	    cJSON_GetObjectItem(report, "entries")));
	telemetry_span_attr_str(sc->span, "root_hash", root_hash);
	sandbox_create_records(sc);
	/* The records name the base now (or are on their way out). */
	state_unlock(hold);
}

static void
sandbox_create_image_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct sandbox_create	*sc = arg;
	struct cause		  cause = { 0 };
	char			**hidden;
	size_t			  nhidden;
	long long		  need;

	if (sc->cancelled) {
		sandbox_create_finish(sc);
		return;
	}
	if (status == 404) {
		sandbox_create_error(sc, CAUSE_INVALID, "image", sc->image,
		    "image %s does not exist locally (list_docker_images shows"
		    " the local images; nothing is ever pulled)", sc->image);
		sandbox_create_finish(sc);
		return;
	}
	if (error != NULL) {
		sandbox_create_error(sc, CAUSE_FAILED, "image", sc->image, "%s",
		    error);
		sandbox_create_finish(sc);
		return;
	}
	sc->step = SANDBOX_CREATE_BASE;
	/* The tenant's network meanwhile (asked for once the image is). */
	sc->net = SANDBOX_NET_ASKED;
	tenantnet_ensure(sc->tenant, 0, sc->span, sandbox_create_network_cb,
	    sc);
	/*
	 * Another tenant's root inside the workspace is not copied; no copy
	 * is made unless the disks and the reserve still fit beside it.
	 */
	hidden = workspace_hidden(sc->workspace, sc->tenant, &nhidden);
	need = cfg->profile.disk * sc->count + cfg_limit(LIMIT_DISK_RESERVE);
	sc->base = basecache_ensure(sc->workspace, hidden, nhidden, need,
	    sandbox_create_base_cb, sc, &cause);
	if (sc->base == NULL) {
		sandbox_create_error(sc, cause.kind, NULL, NULL, "%s",
		    cause.message);
		cause_clear(&cause);
		sandbox_create_finish(sc);
	}
}

/* Whether an image reference could be one (before asking Docker). */
static int
sandbox_image_ok(const char *image)
{
	size_t	i, len = strlen(image);

	if (len == 0 || len > 512)
		return (0);
	for (i = 0; i < len; i++) {
		if ((unsigned char)image[i] <= 0x20 ||
		    (unsigned char)image[i] >= 0x7f)
			return (0);
	}
	return (1);
}

/*
 * create_sandbox: check everything, build or reuse the shared base, then
 * create and start count containers for tenant; cb gets one record
 * (count 1), or {"sandboxes": [...]}, or the first error after a full
 * rollback. Returns the create while it runs, NULL once cb has run.
 */
struct sandbox_create *
sandbox_create(struct tspan *parent, const char *image, const char *root,
    long long count, const char *tenant, sandbox_cb cb, void *arg)
{
	struct sandbox_create	*sc;
	struct cause		 cause = { 0 };
	char			*canon, *path, *esc;
	int			 i;

	if (count < 1 || count > cfg_limit(LIMIT_SANDBOXES_PER_CALL))
		cause_set(&cause, CAUSE_INVALID, "argument", "count", "count"
		    " must be from 1 to %lld",
		    cfg_limit(LIMIT_SANDBOXES_PER_CALL));
	else if (!sandbox_image_ok(image))
		cause_set(&cause, CAUSE_INVALID, "image", image, "image must be"
		    " an image reference of at most 512 printable characters"
		    " with no blanks: %.80s", image);
	if (cause.kind != CAUSE_NONE || (canon = workspace_resolve(
	    "workspace_root", root, tenant, &cause)) == NULL) {
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return (NULL);
	}

	sc = xcalloc(1, sizeof *sc);
	sc->cb = cb;
	sc->arg = arg;
	sc->image = xstrdup(image);
	sc->workspace = canon;
	sc->tenant = xstrdup(tenant);
	sc->count = (int)count;
	sc->m = xcalloc(sc->count, sizeof *sc->m);
	for (i = 0; i < sc->count; i++)
		sc->m[i].sc = sc;
	util_random_hex(sc->batch, 12);
	sc->span = telemetry_span_begin(NULL, parent, "sandbox.create", NULL);
	telemetry_span_attr_int(sc->span, "count", count);
	sc->step = SANDBOX_CREATE_IMAGE;
	esc = util_url_escape(image, 1);
	xasprintf(&path, "/images/%s/json", esc);
	docker_call("GET", path, "image_inspect", NULL, sc->span,
	    sandbox_create_image_cb, sc);
	free(path);
	free(esc);
	return (sc);
}

static void sandbox_create_rollback_next(struct sandbox_create *);

/*
 * Take a sandbox's state away: its directory (a rename into the trash;
 * a disk is taken down by the trash once the lock is gone, see
 * trash.c), then its record and lock. cb(NULL) once the trash has run
 * (the directory and disk are gone then), or cb(error) at once.
 */
struct sandbox_removal {
	void	(*cb)(const char *, void *);
	void	*arg;
};

static void
sandbox_remove_state_done(void *arg)
{
	struct sandbox_removal	*r = arg;

	r->cb(NULL, r->arg);
	free(r);
}

static void
sandbox_remove_state(const char *id, void (*cb)(const char *, void *),
    void *arg)
{
	struct sandbox_removal	*r;
	char			*trash = NULL, *cause = NULL;
	int			 fd;

	fd = state_lock(id);
	if (!disk_present(id))
		trash = state_sandbox_trash(id, &cause);
	if (cause == NULL)
		state_sandbox_forget(id, &cause);
	state_unlock(fd);
	free(trash);
	/* Its helper group, unless a helper still runs (job.c then). */
	job_sandbox_gone(id);
	if (cause != NULL) {
		trash_empty();
		cb(cause, arg);
		free(cause);
		return;
	}
	r = xcalloc(1, sizeof *r);
	r->cb = cb;
	r->arg = arg;
	trash_empty_then(sandbox_remove_state_done, r);
}

static void
sandbox_create_rollback_removed(const char *error, void *arg)
{
	struct sandbox_member	*mb = arg;

	if (error != NULL)
		log_warnx("rollback of %s: %s", mb->id, error);
	mb->removed = 1;
	sandbox_create_rollback_next(mb->sc);
}

static void
sandbox_create_rollback_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct sandbox_member	*mb = arg;
	struct sandbox_create	*sc = mb->sc;
	char			*cause, *why;

	mb->dc = NULL;
	if (error != NULL && status != 404) {
		/* Keep the record, so the container is never orphaned. */
		xasprintf(&why, "create_sandbox failed and its container"
		    " could not be removed (%s); destroy_sandbox removes it",
		    error);
		sandbox_record_state_set(mb->record, "failed", why);
		free(why);
		sandbox_record_set(mb->record, "owner", cJSON_CreateNull());
		if (sandbox_member_persist(mb, &cause) != 0) {
			log_warnx("rollback of %s: %s", mb->id, cause);
			free(cause);
		}
		log_warnx("rollback of %s: the container could not be removed:"
		    " %s", mb->id, error);
	} else {
		sandbox_remove_state(mb->id, sandbox_create_rollback_removed,
		    mb);
		return;
	}
	sandbox_create_rollback_next(sc);
}

/* Undo the next member, newest first. */
static void
sandbox_create_rollback_next(struct sandbox_create *sc)
{
	struct sandbox_member	*mb;
	char			*path, *cause, *left;
	int			 i, kept = 0;

	while (sc->rollback_next >= 0) {
		mb = &sc->m[sc->rollback_next--];
		if (!mb->recorded)
			continue;
		/* Remove by name: the create may have happened unseen. */
		xasprintf(&path, "/containers/%s?force=1&v=1",
		    mb->container_id != NULL ? mb->container_id : mb->id);
		mb->dc = docker_call("DELETE", path, "container_remove", NULL,
		    sc->span, sandbox_create_rollback_cb, mb);
		free(path);
		return;
	}
	for (i = 0; i < sc->count; i++) {
		if (sc->m[i].recorded && !sc->m[i].removed)
			kept++;
	}
	if (kept > 0) {
		left = NULL;
		for (i = 0; i < sc->count; i++) {
			if (!sc->m[i].recorded || sc->m[i].removed)
				continue;
			cause = left;
			xasprintf(&left, "%s%s%s", cause != NULL ? cause : "",
			    cause != NULL ? ", " : "", sc->m[i].id);
			free(cause);
		}
		cause = sc->cause.message;
		xasprintf(&sc->cause.message, "%s; %d container%s could not be"
		    " removed and %s kept as failed record%s: %s", cause, kept,
		    kept == 1 ? "" : "s", kept == 1 ? "is" : "are",
		    kept == 1 ? "" : "s", left);
		free(cause);
		free(left);
	}
	sandbox_create_finish(sc);
}

/* Something failed: remove what this call made, in reverse order. */
static void
sandbox_create_rollback(struct sandbox_create *sc)
{
	if (sc->disk_pending > 0) {	/* a child is making a disk */
		sc->after_disks = sandbox_create_rollback;
		return;
	}
	log_info("create %s failed, rolling back: %s", sc->batch,
	    sc->cause.message);
	sc->step = SANDBOX_CREATE_ROLLBACK;
	sc->rollback_next = sc->count - 1;
	sandbox_create_rollback_next(sc);
}

/*
 * The caller has given the create up: the first error is the cancel, so
 * that what is made so far is rolled back as the next step completes
 * (a base being built is abandoned at once). cb still runs, once.
 */
void
sandbox_create_cancel(struct sandbox_create *sc)
{
	if (sc->cancelled)
		return;
	sc->cancelled = 1;
	sandbox_create_error(sc, CAUSE_FAILED, NULL, NULL, "create_sandbox was"
	    " cancelled; what it had made is removed");
	log_info("create %s cancelled by the caller", sc->batch);
	if (sc->step == SANDBOX_CREATE_BASE && sc->base != NULL) {
		basecache_cancel(sc->base);
		sc->base = NULL;
		sandbox_create_finish(sc);
	}
}

/* Every record, oldest first. */
cJSON *
sandbox_list(void)
{
	cJSON	*result, *list, *rec, **recs;
	char	**ids;
	size_t	 n, i, j, nrec = 0;
	double	 a, b;

	ids = state_sandbox_ids(&n);
	recs = n > 0 ? xcalloc(n, sizeof *recs) : NULL;
	for (i = 0; i < n; i++) {
		if ((rec = state_record_read(ids[i])) != NULL)
			recs[nrec++] = rec;
		free(ids[i]);
	}
	free(ids);
	/* Insertion sort by creation time, then id: lists are short. */
	for (i = 1; i < nrec; i++) {
		rec = recs[i];
		a = cJSON_GetNumberValue(cJSON_GetObjectItem(rec,
		    "created_at_ms"));
		for (j = i; j > 0; j--) {
			b = cJSON_GetNumberValue(cJSON_GetObjectItem(
			    recs[j - 1], "created_at_ms"));
			if (b < a || (b == a && strcmp(cJSON_GetObjectItem(
			    recs[j - 1], "id")->valuestring,
			    cJSON_GetObjectItem(rec, "id")->valuestring) < 0))
				break;
			recs[j] = recs[j - 1];
		}
		recs[j] = rec;
	}
	result = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(result, "sandboxes");
	for (i = 0; i < nrec; i++) {
		cJSON_AddItemToArray(list, sandbox_record_public(recs[i]));
		cJSON_Delete(recs[i]);
	}
	free(recs);
	return (result);
}

/* One record, or NULL with a cause. */
cJSON *
sandbox_inspect(const char *id, struct cause *cause)
{
	cJSON	*rec, *pub;

	if (sandbox_id_check(id, cause) != 0)
		return (NULL);
	if ((rec = state_record_read(id)) == NULL) {
		cause_set(cause, CAUSE_NOT_FOUND, "sandbox_id", id, "no sandbox"
		    " %s", id);
		return (NULL);
	}
	pub = sandbox_record_public(rec);
	cJSON_Delete(rec);
	return (pub);
}

static void
sandbox_destroy_free(struct sandbox_destroy *sd)
{
	cJSON_Delete(sd->record);
	free(sd->container);
	free(sd);
}

/* The container could not be removed: the record stays, failed. */
static void
sandbox_destroy_failed(struct sandbox_destroy *sd, const char *error)
{
	struct cause	 c = { 0 };
	cJSON		*rec;
	char		*why, *cause;
	int		 fd;

	xasprintf(&why, "destroy_sandbox could not remove the container: %s",
	    error);
	fd = state_lock(sd->id);
	if ((rec = state_record_read(sd->id)) != NULL &&
	    state_owner_is_self(cJSON_GetObjectItem(rec, "owner"))) {
		sandbox_record_state_set(rec, "failed", why);
		sandbox_record_set(rec, "owner", cJSON_CreateNull());
		if (state_record_write(sd->id, rec, &cause) != 0) {
			log_warnx("destroy of %s: %s", sd->id, cause);
			free(cause);
		}
	}
	cJSON_Delete(rec);
	state_unlock(fd);
	telemetry_span_attr_str(sd->span, "error", why);
	telemetry_span_end(sd->span, "error");
	cause_set(&c, CAUSE_FAILED, "sandbox_id", sd->id, "%s", why);
	sd->cb(NULL, &c, sd->arg);
	cause_clear(&c);
	free(why);
	sandbox_destroy_free(sd);
}

static void
sandbox_destroy_state_cb(const char *error, void *arg)
{
	struct sandbox_destroy	*sd = arg;
	cJSON			*result, *attrs, *tenant;

	if (error != NULL) {
		sandbox_destroy_failed(sd, error);
		return;
	}
	attrs = cJSON_CreateObject();
	cJSON_AddStringToObject(attrs, "sandbox_id", sd->id);
	telemetry_event(NULL, NULL, sd->span, "sandbox.destroyed", attrs);
	/* Its tenant's last sandbox: the network goes too. */
	tenant = cJSON_GetObjectItem(sd->record, "tenant");
	tenantnet_release(cJSON_IsString(tenant) ? tenant->valuestring :
	    TENANT_LOCAL);
	telemetry_span_end(sd->span, "completed");
	result = sandbox_record_public(sd->record);
	sandbox_record_state_set(result, "stopped", NULL);
	sd->cb(result, NULL, sd->arg);
	sandbox_destroy_free(sd);
}

static void
sandbox_destroy_removed_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct sandbox_destroy	*sd = arg;

	if (error != NULL && status != 404) {
		sandbox_destroy_failed(sd, error);
		return;
	}
	sandbox_remove_state(sd->id, sandbox_destroy_state_cb, sd);
}

static void
sandbox_destroy_stopped_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct sandbox_destroy	*sd = arg;
	char			*path;

	if (error != NULL && status != 304 && status != 404) {
		sandbox_destroy_failed(sd, error);
		return;
	}
	if (status == 404) {		/* already gone */
		sandbox_destroy_removed_cb(NULL, NULL, 204, sd);
		return;
	}
	xasprintf(&path, "/containers/%s?force=1&v=1", sd->container);
	docker_call("DELETE", path, "container_remove", NULL, sd->span,
	    sandbox_destroy_removed_cb, sd);
	free(path);
}

/*
 * The first step of destroy_sandbox: a ready or failed record becomes
 * stopping, owned by this process (persisted). 0, or -1 with a cause
 * (nothing changed). The caller then ends what runs in the sandbox and
 * calls sandbox_destroy.
 */
int
sandbox_destroy_claim(const char *id, struct cause *cause)
{
	const char	*state;
	char		*message = NULL;
	cJSON		*rec, *owner;
	int		 fd, busy;

	if (sandbox_id_check(id, cause) != 0)
		return (-1);
	if ((fd = state_lock(id)) == -1 ||
	    (rec = state_record_read(id)) == NULL) {
		state_unlock(fd);
		cause_set(cause, CAUSE_NOT_FOUND, "sandbox_id", id, "no sandbox"
		    " %s", id);
		return (-1);
	}
	state = sandbox_record_state(rec);
	owner = cJSON_GetObjectItem(rec, "owner");
	busy = cJSON_IsObject(owner) && state_owner_alive(owner);
	if (busy && strcmp(state, "creating") == 0)
		cause_set(cause, CAUSE_CONFLICT, "sandbox_id", id, "sandbox %s"
		    " is still being created; destroy it once create_sandbox"
		    " has returned", id);
	else if (busy && strcmp(state, "stopping") == 0)
		cause_set(cause, CAUSE_CONFLICT, "sandbox_id", id, "sandbox %s"
		    " is already being destroyed", id);
	else if (busy)
		cause_set(cause, CAUSE_CONFLICT, "sandbox_id", id, "sandbox %s"
		    " is busy (%s)", id, state);
	else {
		sandbox_record_state_set(rec, "stopping", NULL);
		sandbox_record_set(rec, "owner", state_owner_self());
		if (state_record_write(id, rec, &message) != 0) {
			cause_set(cause, CAUSE_INTERNAL, "sandbox_id", id,
			    "%s", message);
			free(message);
		}
	}
	cJSON_Delete(rec);
	state_unlock(fd);
	return (cause->kind == CAUSE_NONE ? 0 : -1);
}

/*
 * The rest of destroy_sandbox, once sandbox_destroy_claim has made the
 * record ours: stop and remove the container, remove the state, answer
 * the record as stopped.
 */
void
sandbox_destroy(struct tspan *parent, const char *id, sandbox_cb cb,
    void *arg)
{
	struct sandbox_destroy	*sd;
	struct cause		 cause = { 0 };
	char			*path;
	cJSON			*rec, *cid;

	if ((rec = state_record_read(id)) == NULL ||
	    strcmp(sandbox_record_state(rec), "stopping") != 0 ||
	    !state_owner_is_self(cJSON_GetObjectItem(rec, "owner"))) {
		cJSON_Delete(rec);
		cause_set(&cause, CAUSE_INTERNAL, "sandbox_id", id, "the record"
		    " of sandbox %s is not being destroyed by this process",
		    id);
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}

	sd = xcalloc(1, sizeof *sd);
	strlcpy(sd->id, id, sizeof sd->id);
	sd->record = rec;
	sd->cb = cb;
	sd->arg = arg;
	cid = cJSON_GetObjectItem(rec, "container_id");
	sd->container = xstrdup(cJSON_IsString(cid) ? cid->valuestring : id);
	sd->span = telemetry_span_begin(NULL, parent, "sandbox.destroy", NULL);
	telemetry_span_attr_str(sd->span, "sandbox_id", id);
	xasprintf(&path, "/containers/%s/stop?t=5", sd->container);
	docker_call("POST", path, "container_stop", NULL, sd->span,
	    sandbox_destroy_stopped_cb, sd);
	free(path);
}

static void
sandbox_lookup_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct sandbox_lookup	*sl = arg;
	struct cause		 cause = { 0 };
	cJSON			*result;

	result = cJSON_CreateObject();
	cJSON_AddItemToObject(result, "record", sl->record);
	if (error == NULL && cJSON_IsObject(reply))
		cJSON_AddItemToObject(result, "container",
		    cJSON_Duplicate(reply, 1));
	else if (status == 404)
		cJSON_AddNullToObject(result, "container");
	else {
		cJSON_Delete(result);
		cause_set(&cause, CAUSE_FAILED, "sandbox_id", sl->id, "%s",
		    error);
		sl->cb(NULL, &cause, sl->arg);
		cause_clear(&cause);
		free(sl);
		return;
	}
	sl->cb(result, NULL, sl->arg);
	free(sl);
}

/* The disk is mounted (or there is none): inspect the container. */
static void
sandbox_lookup_disk_cb(const struct cause *error, void *arg)
{
	struct sandbox_lookup	*sl = arg;
	struct cause		 cause = { 0 };
	char			*path;
	cJSON			*cid;

	if (error != NULL) {
		cause_set(&cause, CAUSE_FAILED, "sandbox_id", sl->id, "%s",
		    error->message);
		sl->cb(NULL, &cause, sl->arg);
		cause_clear(&cause);
		cJSON_Delete(sl->record);
		free(sl);
		return;
	}
	cid = cJSON_GetObjectItem(sl->record, "container_id");
	xasprintf(&path, "/containers/%s/json", cJSON_IsString(cid) ?
	    cid->valuestring : sl->id);
	docker_call("GET", path, "container_inspect", NULL, NULL,
	    sandbox_lookup_cb, sl);
	free(path);
}

/*
 * A sandbox's record and its container's inspection ({"record",
 * "container"}; container null when it is gone), for the HTTP routes
 * and the runtime tools; a disk not mounted (after a reboot) is mounted
 * first.
 */
void
sandbox_lookup(const char *id, sandbox_cb cb, void *arg)
{
	struct sandbox_lookup	*sl;
	struct cause		 cause = { 0 };
	cJSON			*rec, *disk;

	if (sandbox_id_check(id, &cause) != 0) {
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	if ((rec = state_record_read(id)) == NULL) {
		cause_set(&cause, CAUSE_NOT_FOUND, "sandbox_id", id, "no"
		    " sandbox %s", id);
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	disk = cJSON_GetObjectItem(cJSON_GetObjectItem(rec,
	    "resource_profile"), "disk");
	if (cJSON_GetNumberValue(disk) > 0 && strcmp(sandbox_record_state(rec),
	    "ready") == 0 && !disk_exists(id)) {
		cause_set(&cause, CAUSE_FAILED, "sandbox_id", id, "the disk of"
		    " sandbox %s is missing (%s); destroy_sandbox removes what"
		    " is left", id, sandbox_record_state(rec));
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		cJSON_Delete(rec);
		return;
	}
	sl = xcalloc(1, sizeof *sl);
	strlcpy(sl->id, id, sizeof sl->id);
	sl->record = rec;
	sl->cb = cb;
	sl->arg = arg;
	disk_ensure(id, sandbox_lookup_disk_cb, sl);
}

static uint64_t	sandbox_recover_listed_ms;

/* The Engine's list of every container labelled with our state dir. */
static char *
sandbox_list_path(void)
{
	cJSON	*filters, *list;
	char	*text, *esc, *path;

	filters = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(filters, "label");
	xasprintf(&text, SANDBOX_LABEL "state-dir=%s", cfg->state_dir);
	cJSON_AddItemToArray(list, cJSON_CreateString(text));
	free(text);
	text = util_json_print(filters);
	cJSON_Delete(filters);
	esc = util_url_escape(text, 0);
	free(text);
	xasprintf(&path, "/containers/json?all=1&filters=%s", esc);
	free(esc);
	return (path);
}

/*
 * Records against the containers that carry our labels. A record newer
 * than the list was made by another process meanwhile: not judged.
 */
static void
sandbox_recover_cb(cJSON *reply, const char *error, int status, void *arg)
{
	cJSON	*c, *labels, *sid, *rec, *owner;
	char	**ids, *cause;
	size_t	 n, i;
	int	 fd, found;
	double	 created;

	if (error != NULL) {
		log_warnx("recovery: cannot list containers, records left"
		    " unchecked: %s", error);
		return;
	}
	ids = state_sandbox_ids(&n);
	for (i = 0; i < n; i++) {
		found = 0;
		cJSON_ArrayForEach(c, reply) {
			labels = cJSON_GetObjectItem(c, "Labels");
			sid = cJSON_GetObjectItem(labels,
			    SANDBOX_LABEL "sandbox-id");
			if (cJSON_IsString(sid) &&
			    strcmp(sid->valuestring, ids[i]) == 0) {
				found = 1;
				break;
			}
		}
		if (found)
			goto next;
		fd = state_lock(ids[i]);
		rec = state_record_read(ids[i]);
		owner = cJSON_GetObjectItem(rec, "owner");
		created = cJSON_GetNumberValue(cJSON_GetObjectItem(rec,
		    "created_at_ms"));
		if (rec != NULL && created < (double)sandbox_recover_listed_ms &&
		    (!cJSON_IsObject(owner) ||
		    !state_owner_alive(owner)) &&
		    strcmp(sandbox_record_state(rec), "failed") != 0) {
			log_warnx("recovery: sandbox %s was %s but its"
			    " container is missing; marked failed", ids[i],
			    sandbox_record_state(rec));
			sandbox_record_state_set(rec, "failed", "the container"
			    " is missing");
			sandbox_record_set(rec, "owner", cJSON_CreateNull());
			if (state_record_write(ids[i], rec, &cause) != 0) {
				log_warnx("recovery: %s", cause);
				free(cause);
			}
		}
		cJSON_Delete(rec);
		state_unlock(fd);
next:
		free(ids[i]);
	}
	free(ids);

	cJSON_ArrayForEach(c, reply) {
		labels = cJSON_GetObjectItem(c, "Labels");
		sid = cJSON_GetObjectItem(labels, SANDBOX_LABEL "sandbox-id");
		if (!cJSON_IsString(sid))
			continue;
		if (!util_id_valid(sid->valuestring) ||
		    (rec = state_record_read(sid->valuestring)) == NULL) {
			log_warnx("recovery: container %.12s (sandbox %s) has"
			    " our labels but no record; left alone",
			    cJSON_IsString(cJSON_GetObjectItem(c, "Id")) ?
			    cJSON_GetObjectItem(c, "Id")->valuestring : "?",
			    sid->valuestring);
			continue;
		}
		cJSON_Delete(rec);
	}
}

/* What recovers inside each sandbox's directory, from the caller. */
static void	(*sandbox_recover_inside)(const char *);

/* A disk found not mounted at start is mounted: now recover inside. */
static void
sandbox_recover_disk_cb(const struct cause *error, void *arg)
{
	char	*id = arg;

	if (error != NULL)
		log_warnx("recovery: %s", error->message);
	else {
		sandbox_recover_inside(id);
		trash_empty();
	}
	free(id);
}

/*
 * At start: disks not mounted (after a reboot) are mounted, and then
 * inside(id) recovers what lies in each sandbox's directory (sessions,
 * transcripts, staging: each beside the format it reads); transitions
 * whose process has died become failed, records whose container is
 * missing become failed, containers of ours with no record are
 * reported, and the trash is emptied. Published state is never
 * rewritten.
 */
void
sandbox_recover(void (*inside)(const char *))
{
	cJSON	*rec, *owner;
	char	**ids, *cause, *path, *why;
	size_t	 n, i;
	int	 fd;

	sandbox_recover_inside = inside;
	ids = state_sandbox_ids(&n);
	for (i = 0; i < n; i++) {
		if (disk_exists(ids[i]) && !disk_mounted(ids[i]))
			disk_ensure(ids[i], sandbox_recover_disk_cb,
			    xstrdup(ids[i]));
		else
			inside(ids[i]);
		fd = state_lock(ids[i]);
		rec = state_record_read(ids[i]);
		owner = cJSON_GetObjectItem(rec, "owner");
		if (rec != NULL && cJSON_IsObject(owner) &&
		    !state_owner_alive(owner)) {
			xasprintf(&why, "%s was interrupted: the process that"
			    " ran it ended", strcmp(sandbox_record_state(rec),
			    "creating") == 0 ? "create_sandbox" :
			    "destroy_sandbox");
			log_warnx("recovery: sandbox %s: %s; marked failed",
			    ids[i], why);
			sandbox_record_state_set(rec, "failed", why);
			sandbox_record_set(rec, "owner", cJSON_CreateNull());
			if (state_record_write(ids[i], rec, &cause) != 0) {
				log_warnx("recovery: %s", cause);
				free(cause);
			}
			free(why);
		}
		cJSON_Delete(rec);
		state_unlock(fd);
		free(ids[i]);
	}
	free(ids);
	trash_empty();

	path = sandbox_list_path();
	sandbox_recover_listed_ms = now_ms();
	docker_call("GET", path, "container_list", NULL, NULL,
	    sandbox_recover_cb, NULL);
	free(path);
}

/*
 * Container death. Every process follows the Engine's events for the
 * containers of its state directory. A container that dies (stopped,
 * killed, out of memory: "die") or is removed ("destroy") outside us
 * takes its sandbox down at once: the record, if ready, becomes failed
 * with the reason (one process makes the change, under the record's
 * lock), and each process ends its own sessions and commands there and
 * kills whatever is left in the container's cgroups (sweep.c). Each
 * time the stream is established, events may have been missed: every
 * ready record's container is looked at, and a missing or stopped one
 * is handled the same way. A record in stopping (destroy_sandbox at work)
 * or creating is never made failed here.
 */

#define SANDBOX_RECHECK_MS	1000

static struct docker_events	*sandbox_events;
static sandbox_lost_fn		 sandbox_lost_cb;
static int			 sandbox_reconcile_running;
static int			 sandbox_reconcile_again;
static struct event		*sandbox_recheck_ev;

static void	sandbox_reconcile(void);

static void
sandbox_recheck_cb(evutil_socket_t fd, short events, void *arg)
{
	sandbox_reconcile();
}

/* Look at every record again a little later (coalesced). */
static void
sandbox_recheck_soon(void)
{
	struct timeval	tv = { SANDBOX_RECHECK_MS / 1000,
	    (SANDBOX_RECHECK_MS % 1000) * 1000 };

	if (sandbox_recheck_ev == NULL && (sandbox_recheck_ev =
	    evtimer_new(ev_base, sandbox_recheck_cb, NULL)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	if (!evtimer_pending(sandbox_recheck_ev, NULL))
		evtimer_add(sandbox_recheck_ev, &tv);
}

/*
 * The container cid of sandbox id has died or gone, for why. A ready
 * record of that container becomes failed; then the watcher's callback
 * ends this process's sessions and commands in the sandbox (their
 * commands say why) and kills what is left in the container's cgroups.
 * A record still being created is looked at again once its create has
 * had time to finish.
 */
static void
sandbox_lost(const char *id, const char *cid, const char *why)
{
	cJSON		*rec = NULL, *c, *attrs, *err;
	const char	*state = "gone", *reason = "sandbox failed";
	char		*cause, *msg;
	int		 fd;

	if ((fd = state_lock(id)) != -1)
		rec = state_record_read(id);
	if (rec != NULL) {
		state = sandbox_record_state(rec);
		c = cJSON_GetObjectItem(rec, "container_id");
		if (cid != NULL && cJSON_IsString(c) &&
		    strcmp(c->valuestring, cid) != 0) {
			/* Not the sandbox's container. */
			cJSON_Delete(rec);
			state_unlock(fd);
			return;
		}
	}
	if (rec != NULL && strcmp(state, "ready") == 0) {
		sandbox_record_state_set(rec, "failed", why);
		sandbox_record_set(rec, "owner", cJSON_CreateNull());
		if (state_record_write(id, rec, &cause) != 0) {
			log_warnx("sandbox %s: %s", id, cause);
			free(cause);
		} else {
			log_warnx("sandbox %s failed: %s", id, why);
			attrs = cJSON_CreateObject();
			cJSON_AddStringToObject(attrs, "sandbox_id", id);
			cJSON_AddStringToObject(attrs, "reason", why);
			telemetry_event(id, NULL, NULL, "sandbox.failed",
			    attrs);
			notice(sandbox_record_tenant(rec), NOTICE_ERROR,
			    "sandbox.failed", id, "sandbox %s failed: %s", id,
			    why);
		}
		xasprintf(&msg, "sandbox %s failed: %s", id, why);
	} else if (rec != NULL && strcmp(state, "failed") == 0) {
		err = cJSON_GetObjectItem(rec, "error");
		xasprintf(&msg, "sandbox %s failed: %s", id,
		    cJSON_IsString(err) ? err->valuestring : why);
	} else if (rec != NULL && strcmp(state, "creating") == 0) {
		sandbox_recheck_soon();
		msg = NULL;
	} else {
		xasprintf(&msg, "sandbox %s is being destroyed", id);
		reason = "sandbox destroyed";
	}
	cJSON_Delete(rec);
	state_unlock(fd);
	if (msg == NULL)
		return;

	sandbox_lost_cb(id, cid, reason, msg);
	free(msg);
}

/* An event of one of our containers. */
static void
sandbox_event_cb(const char *action, const char *cid, cJSON *attrs,
    void *arg)
{
	cJSON	*sid, *code;
	char	*why;

	if (action == NULL) {		/* (re)established: look */
		sandbox_reconcile();
		return;
	}
	sid = cJSON_GetObjectItemCaseSensitive(attrs,
	    SANDBOX_LABEL "sandbox-id");
	if (!cJSON_IsString(sid) || !util_id_valid(sid->valuestring) ||
	    !util_id_valid(cid))
		return;
	if (strcmp(action, "die") == 0) {
		code = cJSON_GetObjectItemCaseSensitive(attrs, "exitCode");
		xasprintf(&why, "the container stopped outside sandbox-mcp"
		    " (exit code %s)", cJSON_IsString(code) ?
		    code->valuestring : "unknown");
	} else if (strcmp(action, "destroy") == 0)
		why = xstrdup("the container was removed outside"
		    " sandbox-mcp");
	else
		return;
	log_debug("sandbox %s: its container %.12s: %s", sid->valuestring,
	    cid, action);
	sandbox_lost(sid->valuestring, cid, why);
	free(why);
}

struct sandbox_reconcile_item {
	char	*id;
	char	*cid;
};

/* The list of containers against the records that were ready before. */
static void
sandbox_reconcile_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct sandbox_reconcile_item	*items = arg, *it;
	cJSON				*c, *cid, *st;
	const char			*state;
	char				*why;

	sandbox_reconcile_running = 0;
	if (error != NULL)
		log_warnx("cannot list the containers to check the sandboxes:"
		    " %s", error);
	for (it = items; it->id != NULL; it++) {
		if (error != NULL)
			goto next;
		state = NULL;
		cJSON_ArrayForEach(c, reply) {
			cid = cJSON_GetObjectItemCaseSensitive(c, "Id");
			st = cJSON_GetObjectItemCaseSensitive(c, "State");
			if (cJSON_IsString(cid) &&
			    strcmp(cid->valuestring, it->cid) == 0) {
				state = cJSON_IsString(st) ? st->valuestring :
				    "unknown";
				break;
			}
		}
		if (state == NULL)
			why = xstrdup("the container is missing");
		else if (strcmp(state, "running") != 0 &&
		    strcmp(state, "paused") != 0 &&
		    strcmp(state, "restarting") != 0)
			xasprintf(&why, "the container is not running (%.32s)",
			    state);
		else
			goto next;
		sandbox_lost(it->id, it->cid, why);
		free(why);
next:
		free(it->id);
		free(it->cid);
	}
	free(items);
	if (sandbox_reconcile_again) {
		sandbox_reconcile_again = 0;
		sandbox_reconcile();
	}
}

/*
 * Look at the containers of every ready (or failed) record: the records
 * are read before the list is asked for, so a record made ready after
 * the list was taken is never judged by it.
 */
static void
sandbox_reconcile(void)
{
	struct sandbox_reconcile_item	*items;
	cJSON				*rec, *cid;
	const char			*state;
	char				**ids, *path;
	size_t				 n, i, k = 0;

	if (sandbox_reconcile_running) {
		sandbox_reconcile_again = 1;
		return;
	}
	ids = state_sandbox_ids(&n);
	items = xcalloc(n + 1, sizeof *items);
	for (i = 0; i < n; i++) {
		if ((rec = state_record_read(ids[i])) != NULL) {
			state = sandbox_record_state(rec);
			cid = cJSON_GetObjectItem(rec, "container_id");
			if ((strcmp(state, "ready") == 0 ||
			    strcmp(state, "failed") == 0) &&
			    cJSON_IsString(cid)) {
				items[k].id = xstrdup(ids[i]);
				items[k++].cid = xstrdup(cid->valuestring);
			}
			cJSON_Delete(rec);
		}
		free(ids[i]);
	}
	free(ids);
	if (k == 0) {
		free(items);
		return;
	}

	path = sandbox_list_path();
	sandbox_reconcile_running = 1;
	docker_call("GET", path, "container_list", NULL, NULL,
	    sandbox_reconcile_cb, items);
	free(path);
}

/*
 * Follow the Engine's events for the containers of our state directory;
 * lost(id, container, reason, message) ends what runs in a sandbox whose
 * container has died (the caller's: the engine above this file).
 */
void
sandbox_watch(sandbox_lost_fn lost)
{
	char	*label;

	sandbox_lost_cb = lost;
	if (sandbox_events != NULL)
		return;
	xasprintf(&label, SANDBOX_LABEL "state-dir=%s", cfg->state_dir);
	sandbox_events = docker_events_ended(label, sandbox_event_cb, NULL);
	free(label);
}

/* A sandbox's endpoint from its record and its container's inspection. */
struct sandbox_endpoint {
	char		 id[65];
	sandbox_cb	 cb;
	void		*arg;
};

static void
sandbox_endpoint_cb(cJSON *result, const struct cause *cause, void *arg)
{
	struct sandbox_endpoint	*se = arg;
	cJSON			*container, *r;
	const char		*address;

	if (result == NULL) {
		se->cb(NULL, cause, se->arg);
		free(se);
		return;
	}
	container = cJSON_GetObjectItem(result, "container");
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "sandbox_id", se->id);
	cJSON_AddStringToObject(r, "state", sandbox_record_state(
	    cJSON_GetObjectItem(result, "record")));
	cJSON_AddStringToObject(r, "container",
	    docker_container_status(container));
	if ((address = docker_container_address(container)) != NULL)
		cJSON_AddStringToObject(r, "address", address);
	else
		cJSON_AddNullToObject(r, "address");
	cJSON_Delete(result);
	se->cb(r, NULL, se->arg);	/* taken over */
	free(se);
}

/*
 * The endpoint of a sandbox, for the health route: {"sandbox_id",
 * "state" (its record's), "container" (running, paused, exited or
 * missing), "address" (on its network, or null)}, taken over by cb.
 */
void
sandbox_endpoint(const char *id, sandbox_cb cb, void *arg)
{
	struct sandbox_endpoint	*se;

	se = xcalloc(1, sizeof *se);
	strlcpy(se->id, id, sizeof se->id);
	se->cb = cb;
	se->arg = arg;
	sandbox_lookup(id, sandbox_endpoint_cb, se);
}

/* The local images, as list_docker_images gives them. */
struct sandbox_images {
	struct docker_call	*dc;
	sandbox_cb		 cb;
	void			*arg;
};

static void
sandbox_images_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct sandbox_images	*si = arg;
	struct cause		 cause = { 0 };
	cJSON			*images = NULL, *result;

	if (error != NULL)
		cause_set(&cause, CAUSE_FAILED, NULL, NULL, "%s", error);
	else if ((images = docker_image_references(reply)) == NULL)
		cause_set(&cause, CAUSE_FAILED, NULL, NULL, "the Docker Engine"
		    " answered the image list with something other than a"
		    " list");
	if (cause.kind != CAUSE_NONE) {
		si->cb(NULL, &cause, si->arg);
		cause_clear(&cause);
	} else {
		result = cJSON_CreateObject();
		cJSON_AddItemToObject(result, "images", images);
		si->cb(result, NULL, si->arg);	/* taken over */
	}
	free(si);
}

/*
 * Every local image reference ({"images": [...]}, sorted, taken over by
 * cb) from the loop, unless sandbox_images_cancel comes first.
 */
struct sandbox_images *
sandbox_images(struct tspan *parent, sandbox_cb cb, void *arg)
{
	struct sandbox_images	*si;

	si = xcalloc(1, sizeof *si);
	si->cb = cb;
	si->arg = arg;
	si->dc = docker_call("GET", "/images/json", "images_list", NULL,
	    parent, sandbox_images_cb, si);
	return (si);
}

void
sandbox_images_cancel(struct sandbox_images *si)
{
	docker_call_cancel(si->dc);
	free(si);
}
