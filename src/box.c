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
 * The box engine (boxes.md): a box is a whole machine for one agent
 * task, a container of the box image with its own disk, its own network,
 * a virtual display and a container engine of its own.
 *
 * A start, step by step, each a callback of the one before:
 * - the box's disk (disk.c, as a sandbox's: an ext4 image of the plan's
 *   size on a loop device, mounted on boxes/<id>/) holds work/, bound
 *   on /work (BOXWORK), and home/, bound on /home/box, where the box
 *   user's container engine keeps its images: what a box writes grows
 *   there, capped, and apart from the server's keys and store;
 * - its network, of its own (tenantnet.c, keyed by the box's id: a
 *   bridge no other box or sandbox is on, walled off from the host);
 * - the container: never privileged, never given a Docker socket, with
 *   the plan's CPUs, memory and processes, Docker's default
 *   capabilities, a seccomp profile of ours (box_seccomp) that lets the
 *   box user's engine make user namespaces and mount inside them, the
 *   /dev/net/tun its slirp4netns needs, /proc unmasked (a new procfs in
 *   a user namespace is refused while /proc has masked entries: safe
 *   only because no untrusted code ever runs as the box's uid 0) and a
 *   size-capped /tmp in memory;
 * - as the box's root, through the Engine's exec (with the container's
 *   own confinement), the set-up: the box user's directories and the
 *   engine's configuration, and the service names in /etc/hosts;
 * - as the box user, the display (Xvfb :99) and the engine (rootless
 *   podman's Docker-compatible socket), and a wait for both.
 * The box is then ready: sandbox_start answers.
 *
 * Agents' commands are another matter (box_exec): they never go through
 * the Engine's exec, and never run as the box's root.
 *
 * Records live in the store (boxes table), written at each change of
 * state, so that a restarted server finds its boxes again.
 */

#include "config.h"

#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/openat2.h>

#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define BOX_IMAGE		"sandbox-mcp/box:bookworm"
#define BOX_LABEL		"io.sandbox-mcp."
#define BOX_USER		"box"
#define BOX_RUNDIR		"/tmp/run-1000"
#define BOX_ENGINE_SOCK		BOX_RUNDIR "/podman.sock"
#define BOX_DISPLAY		":99"
#define BOX_SCREEN		"1280x800x24"
#define BOX_TMP_SIZE		"size=512m,mode=1777"
#define BOX_DEXEC_POLL_MS	50
#define BOX_DEXEC_MAX_MS	(60 * 1000)
#define BOX_READY_SECONDS	60
#define BOX_PATH		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:" \
				    "/usr/bin:/sbin:/bin"

static struct store		*box_store;
static LIST_HEAD(, box)		 box_list = LIST_HEAD_INITIALIZER(box_list);

static void	box_start_fail(struct box *, enum cause_kind, const char *,
		    ...) __attribute__((__format__ (printf, 3, 4)));
static void	box_teardown(struct box *);
static void	box_freeze_arm(struct box *);
static void	box_jobs_forget(struct box *);

const char *
box_state_name(enum box_state state)
{
	static const char *names[] = { "starting", "ready", "frozen",
	    "stopping", "terminated", "interrupted" };

	return (names[state]);
}

static void	box_adopt(cJSON *);
static void	box_event_cb(const char *, const char *, cJSON *, void *);

static struct docker_events	*box_events;

/* Follow the Engine's events for our boxes' containers. */
static void
box_watch(void)
{
	char	*label;

	xasprintf(&label, BOX_LABEL "state-dir=%s", cfg->state_dir);
	box_events = docker_events_ended(label, box_event_cb, NULL);
	free(label);
}

/*
 * The store, opened once the boxes set is served, and the boxes of its
 * records: those that ran when a server ended are found again (their
 * containers by name) or read as interrupted. 0, or -1 and a cause.
 */
int
box_init(char **cause)
{
	cJSON	*list, *rec;

	if (box_store != NULL)
		return (0);
	if ((box_store = store_open(cfg->state_dir, cause)) == NULL)
		return (-1);
	if ((list = store_box_list(box_store, NULL, cause)) == NULL)
		return (-1);
	cJSON_ArrayForEach(rec, list)
		box_adopt(rec);
	cJSON_Delete(list);
	box_watch();
	return (0);
}

/*
 * Secrets (boxes.md): a tenant's, kept encrypted in the store; their
 * names are listed, their values only ever given to a box's commands.
 * Each returns 0, or -1 and a cause (a value the caller clears).
 */
int
box_secret_put(const char *tenant, const char *name, const char *value,
    size_t len, char **cause)
{
	return (store_secret_put(box_store, tenant, name, value, len,
	    cause));
}

/* 1 when there was one, 0 when not, -1 and a cause. */
int
box_secret_remove(const char *tenant, const char *name, char **cause)
{
	return (store_secret_remove(box_store, tenant, name, cause));
}

cJSON *
box_secret_names(const char *tenant, char **cause)
{
	return (store_secret_names(box_store, tenant, cause));
}

/* The record of a box, as a listing shows it and the store keeps it. */
cJSON *
box_record(struct box *b)
{
	cJSON	*r;

	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "id", b->id);
	cJSON_AddStringToObject(r, "tenant", b->tenant);
	cJSON_AddStringToObject(r, "state", box_state_name(b->state));
	if (b->reason != NULL)
		cJSON_AddStringToObject(r, "reason", b->reason);
	else
		cJSON_AddNullToObject(r, "reason");
	cJSON_AddStringToObject(r, "image", BOX_IMAGE);
	cJSON_AddItemToObject(r, "services", cJSON_Duplicate(b->services,
	    1));
	cJSON_AddItemToObject(r, "secrets", b->secrets != NULL ?
	    cJSON_Duplicate(b->secrets, 1) : cJSON_CreateArray());
	if (b->idle_min > 0)
		cJSON_AddNumberToObject(r, "idleTimeoutMin", b->idle_min);
	else
		cJSON_AddNullToObject(r, "idleTimeoutMin");
	if (b->container != NULL)
		cJSON_AddStringToObject(r, "container_id", b->container);
	cJSON_AddNumberToObject(r, "createdAt", (double)b->created_ms);
	if (b->ended_ms != 0)
		cJSON_AddNumberToObject(r, "endedAt", (double)b->ended_ms);
	return (r);
}

/* Write the box's record as it is now; a failure is logged. */
static void
box_save(struct box *b)
{
	cJSON	*r;
	char	*text, *cause = NULL;

	if (box_store == NULL)
		return;
	r = box_record(b);
	text = util_json_print(r);
	cJSON_Delete(r);
	if (store_box_put(box_store, b->id, b->tenant, box_state_name(
	    b->state), text, &cause) != 0) {
		log_warnx("box %s: %s", b->id, cause);
		free(cause);
	}
	free(text);
}

static void
box_set_state(struct box *b, enum box_state state, const char *reason)
{
	char	*r = reason != NULL ? xstrdup(reason) : NULL;

	b->state = state;
	free(b->reason);
	b->reason = r;
	if (state == BOX_TERMINATED || state == BOX_INTERRUPTED)
		b->ended_ms = now_ms();
	box_save(b);
}

/* A box of tenant by id, or NULL: another tenant's is not found. */
struct box *
box_find(const char *id, const char *tenant)
{
	struct box	*b;

	LIST_FOREACH(b, &box_list, entry) {
		if (strcmp(b->id, id) == 0)
			return (tenant == NULL || strcmp(b->tenant, tenant) ==
			    0 ? b : NULL);
	}
	return (NULL);
}

/* The records of tenant's boxes, newest first. */
cJSON *
box_list_json(const char *tenant)
{
	struct box	*b;
	cJSON		*list;

	list = cJSON_CreateArray();
	LIST_FOREACH(b, &box_list, entry) {
		if (strcmp(b->tenant, tenant) == 0)
			cJSON_AddItemToArray(list, box_record(b));
	}
	return (list);
}

/* How many boxes tenant runs (starting, ready or stopping). */
static unsigned int
box_running(const char *tenant)
{
	struct box	*b;
	unsigned int	 n = 0;

	LIST_FOREACH(b, &box_list, entry) {
		if (strcmp(b->tenant, tenant) == 0 && (b->state ==
		    BOX_STARTING || b->state == BOX_READY ||
		    b->state == BOX_FROZEN || b->state == BOX_STOPPING))
			n++;
	}
	return (n);
}

/* ---- health ---- */

#define BOX_HEALTH_PIDS		4096

/*
 * Whether the box's display and engine run: a process of the box (its
 * control group's) running Xvfb, and one running the engine's service
 * (podman system service). What the kernel says a process runs, not
 * its name, which the box sets; a box may still stop either, or run its
 * own (sandbox_status says what it finds).
 */
static void
box_health(struct box *b, int *display, int *engine)
{
	char	**procs, *cause = NULL, path[64], exe[64], cmd[256], *buf;
	size_t	  n, i, off;
	ssize_t	  len, clen;
	long	  pid;
	int	  fd, seen = 0;

	*display = *engine = 0;
	if ((procs = cgroup_procs_of(b->pid, &n, &cause)) == NULL) {
		free(cause);
		return;
	}
	/* Every hierarchy of the box's holds all of its processes. */
	buf = xmalloc(BOX_HEALTH_PIDS * 12);
	len = -1;
	if (n > 0 && (fd = open(procs[0], O_RDONLY | O_CLOEXEC)) != -1) {
		len = read(fd, buf, BOX_HEALTH_PIDS * 12 - 1);
		close(fd);
	}
	for (i = 0; i < n; i++)
		free(procs[i]);
	free(procs);
	if (len <= 0) {
		free(buf);
		return;
	}
	buf[len] = '\0';
	for (off = 0; off < (size_t)len && seen++ < BOX_HEALTH_PIDS;) {
		pid = strtol(buf + off, NULL, 10);
		off += strcspn(buf + off, "\n") + 1;
		snprintf(path, sizeof path, "/proc/%ld/exe", pid);
		if (pid <= 0 || (clen = readlink(path, exe, sizeof exe - 1)) ==
		    -1)
			continue;
		exe[clen] = '\0';
		if (strcmp(exe, "/usr/bin/Xvfb") == 0)
			*display = 1;
		else if (strcmp(exe, "/usr/bin/podman") == 0) {
			snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
			if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
				continue;
			clen = read(fd, cmd, sizeof cmd - 1);
			close(fd);
			if (clen > 0 && memmem(cmd, clen, "system\0service",
			    15) != NULL)
				*engine = 1;
		}
	}
	free(buf);
}

/* The boxd health of sandbox_status. */
cJSON *
box_boxd(struct box *b)
{
	cJSON		*o;
	const char	*d, *e;
	int		 display, engine;

	o = cJSON_CreateObject();
	if (b->state == BOX_READY) {
		box_health(b, &display, &engine);
		d = display ? "up" : "down";
		e = engine ? "up" : "down";
	} else
		d = e = b->state == BOX_STARTING ? "starting" : b->state ==
		    BOX_FROZEN ? "frozen" : "down";
	cJSON_AddStringToObject(o, "display", d);
	cJSON_AddStringToObject(o, "engine", e);
	return (o);
}

/* ---- usage and credits ---- */

#define BOX_MINUTE_MS		(60 * 1000)

/*
 * A tenant's credits left: its tenant line's grant, plus balance (what
 * the store has: granted since by sandbox-mcp credits, less what its
 * usage spent). 1 and *left for a tenant with a credit limit, 0 for one
 * without.
 */
static int
box_credits_with(const char *tenant, double balance, double *left)
{
	const struct cfg_tenant	*t;

	if ((t = cfg_tenant_find(tenant)) == NULL || t->credits < 0)
		return (0);
	*left = (double)t->credits + balance;
	return (1);
}

/* The same, the balance read from the store. */
static int
box_credits_left(const char *tenant, double *left)
{
	double	balance = 0;
	char	*cause = NULL;

	if (box_store != NULL && store_credits(box_store, tenant, &balance,
	    &cause) != 0) {
		log_warnx("credits of %s: %s", tenant, cause);
		free(cause);
	}
	return (box_credits_with(tenant, balance, left));
}

static void	box_credits_out(const char *);

/* One usage event of box b: kind 0 a running minute, 1 a metered call. */
static void
box_meter(struct box *b, int kind)
{
	struct store_usage	 u;
	double			 balance, left;
	char			*cause = NULL;

	if (box_store == NULL)
		return;
	memset(&u, 0, sizeof u);
	u.tenant = b->tenant;
	u.box = b->id;
	u.kind = kind == 0 ? "box_minute" : "call";
	u.unit = kind == 0 ? "minute" : "call";
	u.quantity = 1;
	u.credits = cfg->price_credits[kind];
	u.cost_usd = cfg->price_usd[kind];
	u.at_ms = now_ms();
	if (store_usage_add(box_store, &u, &balance, &cause) != 0) {
		log_warnx("box %s: usage: %s", b->id, cause);
		free(cause);
		return;
	}
	if (box_credits_with(b->tenant, balance, &left) && left <= 0)
		box_credits_out(b->tenant);
}

/* A tenant with no credits left: its boxes stop. */
static void
box_credits_out(const char *tenant)
{
	struct box	*b;
	char		*t = xstrdup(tenant);

	LIST_FOREACH(b, &box_list, entry) {
		if (strcmp(b->tenant, t) == 0 && (b->state == BOX_READY ||
		    b->state == BOX_FROZEN)) {
			log_info("box %s: tenant %s has no credits left:"
			    " stopped", b->id, t);
			box_stop(b, "credits_exhausted", NULL, NULL);
		}
	}
	free(t);
}

static void
box_minute_cb(evutil_socket_t fd, short events, void *arg)
{
	struct box	*b = arg;
	struct timeval	 tv = { BOX_MINUTE_MS / 1000, 0 };

	if (b->state != BOX_READY && b->state != BOX_FROZEN)
		return;
	evtimer_add(b->minute_ev, &tv);
	if (b->state == BOX_READY)	/* a frozen box does not run */
		box_meter(b, 0);
}

/* The box is running: its minutes are counted from now. */
static void
box_minutes_start(struct box *b)
{
	struct timeval	tv = { BOX_MINUTE_MS / 1000, 0 };

	if (b->minute_ev == NULL && (b->minute_ev = evtimer_new(ev_base,
	    box_minute_cb, b)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	if (!evtimer_pending(b->minute_ev, NULL))
		evtimer_add(b->minute_ev, &tv);
}

/*
 * tenant's usage events, newest first (at most limit, since since_ms,
 * of box and kind when not NULL); NULL and a cause.
 */
cJSON *
box_usage(const char *tenant, const char *box, const char *kind,
    uint64_t since_ms, int limit, char **cause)
{
	return (store_usage_list(box_store, tenant, box, kind, since_ms, limit,
	    cause));
}

/*
 * tenant's credits: {balance (null: no limit), limited, the prices}.
 */
cJSON *
box_credits(const char *tenant)
{
	cJSON	*r;
	double	 left;

	r = cJSON_CreateObject();
	if (box_credits_left(tenant, &left)) {
		cJSON_AddNumberToObject(r, "balance", left);
		cJSON_AddTrueToObject(r, "limited");
	} else {
		cJSON_AddNullToObject(r, "balance");
		cJSON_AddFalseToObject(r, "limited");
	}
	cJSON_AddNumberToObject(r, "pricePerBoxMinute",
	    cfg->price_credits[0]);
	cJSON_AddNumberToObject(r, "pricePerCall", cfg->price_credits[1]);
	return (r);
}

/* ---- idleness ---- */

static void
box_idle_cb(evutil_socket_t fd, short events, void *arg)
{
	struct box	*b = arg;
	uint64_t	 idle = (uint64_t)b->idle_min * 60 * 1000, now = now_ms();
	struct timeval	 tv;

	if (b->state != BOX_READY && b->state != BOX_FROZEN)
		return;
	if (now - b->last_call_ms < idle) {
		tv.tv_sec = (b->last_call_ms + idle - now) / 1000 + 1;
		tv.tv_usec = 0;
		evtimer_add(b->idle_ev, &tv);
		return;
	}
	log_info("box %s: no tool call for %d minutes: stopped", b->id,
	    b->idle_min);
	box_stop(b, "idle_timeout", NULL, NULL);
}

/*
 * A tool call on box b: the clock of its idleTimeoutMin starts again
 * (only tool calls count).
 */
void
box_touch(struct box *b)
{
	struct timeval	tv;

	b->last_call_ms = now_ms();
	box_freeze_arm(b);
	if (b->idle_min <= 0 || (b->state != BOX_READY &&
	    b->state != BOX_FROZEN))
		return;
	if (b->idle_ev == NULL && (b->idle_ev = evtimer_new(ev_base,
	    box_idle_cb, b)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	if (!evtimer_pending(b->idle_ev, NULL)) {
		tv.tv_sec = (time_t)b->idle_min * 60;
		tv.tv_usec = 0;
		evtimer_add(b->idle_ev, &tv);
	}
}

/* ---- freezing ---- */

/* Someone waiting for a frozen box to thaw. */
struct box_thaw {
	void		(*cb)(struct box *, int, const struct cause *, void *);
	void		*arg;
	struct box_thaw	*next;
};

static void
box_paused_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct box	*b = arg;

	b->dc = NULL;
	b->pausing = 0;
	if (b->state == BOX_READY && error != NULL) {
		log_warnx("box %s: cannot freeze it: %s", b->id, error);
		box_freeze_arm(b);
	} else if (b->state == BOX_READY) {
		log_debug("box %s frozen", b->id);
		box_set_state(b, BOX_FROZEN, NULL);
	}
	/* Asked to thaw meanwhile (box_thaw waited for the call). */
	if (b->thaws != NULL)
		box_thaw(b, NULL, NULL);
	else if (b->state != BOX_READY && b->state != BOX_FROZEN)
		box_teardown(b);	/* (it waited for the call) */
}

/*
 * No tool call for box-freeze-after, no command running, no call to the
 * Engine under way: the box is paused (the Engine's freezer), until
 * the next tool call.
 */
static void
box_freeze_cb(evutil_socket_t fd, short events, void *arg)
{
	struct box	*b = arg;
	uint64_t	 after = (uint64_t)cfg_limit(LIMIT_BOX_FREEZE_AFTER) *
			    1000, now = now_ms();
	char		*path;

	if (b->state != BOX_READY)
		return;
	if (b->running > 0 || b->dc != NULL || b->dexec != NULL ||
	    now - b->last_call_ms < after) {
		box_freeze_arm(b);
		return;
	}
	xasprintf(&path, "/containers/%s/pause", b->container);
	b->pausing = 1;
	b->dc = docker_call("POST", path, "container_pause", NULL, NULL,
	    box_paused_cb, b);
	free(path);
}

static void
box_freeze_arm(struct box *b)
{
	long long	after = cfg_limit(LIMIT_BOX_FREEZE_AFTER);
	uint64_t	due, now = now_ms();
	struct timeval	tv;

	if (after <= 0 || b->state != BOX_READY)
		return;
	if (b->freeze_ev == NULL && (b->freeze_ev = evtimer_new(ev_base,
	    box_freeze_cb, b)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	due = b->last_call_ms + (uint64_t)after * 1000;
	if (due <= now)
		due = now + 1000;	/* something ran: look again soon */
	tv.tv_sec = (due - now) / 1000;
	tv.tv_usec = ((due - now) % 1000) * 1000;
	evtimer_add(b->freeze_ev, &tv);
}

static void
box_unpaused_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct box		*b = arg;
	struct box_thaw		*t, *next;
	struct cause		 cause = { 0 };

	if (b->unpausing) {	/* (else called as it is: box_thaw) */
		b->dc = NULL;
		b->unpausing = 0;
	}
	if (error != NULL)
		cause_set(&cause, CAUSE_FAILED, "id", b->id, "box %s could not"
		    " be thawed: %s", b->id, error);
	else if (b->state == BOX_FROZEN) {
		log_debug("box %s thawed", b->id);
		box_set_state(b, BOX_READY, NULL);
		box_touch(b);
	}
	t = b->thaws;
	b->thaws = NULL;
	for (; t != NULL; t = next) {
		next = t->next;
		if (t->cb != NULL)
			t->cb(b, 1, error != NULL ? &cause : NULL, t->arg);
		free(t);
	}
	cause_clear(&cause);
	if (b->state != BOX_READY && b->state != BOX_FROZEN)
		box_teardown(b);	/* (it waited for the call) */
}

/*
 * Before a tool call works on box b: thaw it if it is frozen, then
 * cb(b, thawed, NULL, arg); cb(b, 1, cause, arg) when it cannot be.
 */
void
box_thaw(struct box *b, void (*cb)(struct box *, int, const struct cause *,
    void *), void *arg)
{
	struct box_thaw	*t;
	char		*path;

	if (cb != NULL && b->state != BOX_FROZEN && !b->pausing &&
	    !b->unpausing) {
		cb(b, 0, NULL, arg);
		return;
	}
	if (cb != NULL) {
		t = xcalloc(1, sizeof *t);
		t->cb = cb;
		t->arg = arg;
		t->next = b->thaws;
		b->thaws = t;
	}
	/* A pause or an unpause under way comes back here. */
	if (b->pausing || b->unpausing)
		return;
	if (b->state != BOX_FROZEN || b->dc != NULL) {
		/* Not frozen (any more), or busy otherwise: as it is. */
		box_unpaused_cb(NULL, NULL, 0, b);
		return;
	}
	xasprintf(&path, "/containers/%s/unpause", b->container);
	b->unpausing = 1;
	b->dc = docker_call("POST", path, "container_unpause", NULL, NULL,
	    box_unpaused_cb, b);
	free(path);
}

/* ---- the Engine's exec, for the box's own set-up ---- */

struct box_dexec {
	struct box	*b;
	char		*id;
	struct event	*ev;
	uint64_t	 started_ms;
	int		 wait;		/* for its end */
	void		(*cb)(struct box *, int, const char *);
};

static void	box_dexec_poll(struct box_dexec *);

static void
box_dexec_timer(evutil_socket_t fd, short events, void *arg)
{
	box_dexec_poll(arg);
}

static void
box_dexec_done(struct box_dexec *dx, int code, const char *error)
{
	struct box	*b = dx->b;

	b->dexec = NULL;
	if (dx->ev != NULL)
		event_free(dx->ev);
	free(dx->id);
	dx->cb(b, code, error);
	free(dx);
}

static void
box_dexec_inspect_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct box_dexec	*dx = arg;
	struct timeval		 tv = { 0, BOX_DEXEC_POLL_MS * 1000 };
	cJSON			*code;

	if (error != NULL) {
		box_dexec_done(dx, -1, error);
		return;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItem(reply, "Running"))) {
		if (now_ms() - dx->started_ms > BOX_DEXEC_MAX_MS) {
			box_dexec_done(dx, -1, "it did not end in time");
			return;
		}
		if (dx->ev == NULL && (dx->ev = evtimer_new(ev_base,
		    box_dexec_timer, dx)) == NULL)
			fatalx("%s: evtimer_new", __func__);
		evtimer_add(dx->ev, &tv);
		return;
	}
	code = cJSON_GetObjectItem(reply, "ExitCode");
	box_dexec_done(dx, cJSON_IsNumber(code) ? code->valueint : -1, NULL);
}

static void
box_dexec_poll(struct box_dexec *dx)
{
	char	*path;

	xasprintf(&path, "/exec/%s/json", dx->id);
	docker_call("GET", path, "exec_inspect", NULL, dx->b->span,
	    box_dexec_inspect_cb, dx);
	free(path);
}

static void
box_dexec_started_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct box_dexec	*dx = arg;

	if (error != NULL) {
		box_dexec_done(dx, -1, error);
		return;
	}
	if (!dx->wait) {
		box_dexec_done(dx, 0, NULL);
		return;
	}
	box_dexec_poll(dx);
}

static void
box_dexec_created_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct box_dexec	*dx = arg;
	cJSON			*id, *body;
	char			*path;

	id = cJSON_GetObjectItem(reply, "Id");
	if (error != NULL || !cJSON_IsString(id) || id->valuestring[strspn(
	    id->valuestring, "0123456789abcdef")] != '\0') {
		box_dexec_done(dx, -1, error != NULL ? error : "the Docker"
		    " Engine gave no exec id");
		return;
	}
	dx->id = xstrdup(id->valuestring);
	dx->started_ms = now_ms();
	body = cJSON_CreateObject();
	cJSON_AddTrueToObject(body, "Detach");
	cJSON_AddFalseToObject(body, "Tty");
	xasprintf(&path, "/exec/%s/start", dx->id);
	docker_call("POST", path, "exec_start", body, dx->b->span,
	    box_dexec_started_cb, dx);
	free(path);
	cJSON_Delete(body);
}

/*
 * Run argv in box b as user through the Engine's exec (the container's
 * own confinement applies), with env; cb(b, exit code, NULL) once it has
 * ended (wait), or once it has started, or cb(b, -1, why not).
 */
static void
box_dexec(struct box *b, const char *user, const char *const *argv,
    const char *const *env, int wait, void (*cb)(struct box *, int,
    const char *))
{
	struct box_dexec	*dx;
	cJSON			*body, *a;
	char			*path;
	size_t			 i;

	dx = xcalloc(1, sizeof *dx);
	dx->b = b;
	dx->wait = wait;
	dx->cb = cb;
	b->dexec = dx;
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "User", user);
	cJSON_AddFalseToObject(body, "AttachStdin");
	cJSON_AddFalseToObject(body, "AttachStdout");
	cJSON_AddFalseToObject(body, "AttachStderr");
	cJSON_AddFalseToObject(body, "Tty");
	cJSON_AddFalseToObject(body, "Privileged");
	cJSON_AddStringToObject(body, "WorkingDir", "/");
	a = cJSON_AddArrayToObject(body, "Cmd");
	for (i = 0; argv[i] != NULL; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(argv[i]));
	a = cJSON_AddArrayToObject(body, "Env");
	for (i = 0; env != NULL && env[i] != NULL; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(env[i]));
	xasprintf(&path, "/containers/%s/exec", b->container);
	docker_call("POST", path, "exec_create", body, b->span,
	    box_dexec_created_cb, dx);
	free(path);
	cJSON_Delete(body);
}

/* ---- the container ---- */

/*
 * The box's seccomp profile: everything a machine's processes need,
 * user namespaces and mounts inside them included (the box user's
 * container engine makes both), but what reaches the host's kernel as a
 * whole: modules, kexec, the kernel's keyring of trusted keys aside,
 * BPF, performance counters, io_uring, userfaultfd, the clock, swap,
 * accounting, handles to host files, raw I/O ports. The capabilities a
 * box holds (Docker's default set) guard the rest.
 */
static char *
box_seccomp(void)
{
	static const char	*denied[] = { "acct", "bpf", "clock_adjtime",
	    "clock_settime", "create_module", "delete_module",
	    "finit_module", "get_kernel_syms", "init_module", "io_uring_enter",
	    "io_uring_register", "io_uring_setup", "ioperm", "iopl",
	    "kexec_file_load", "kexec_load", "lookup_dcookie", "nfsservctl",
	    "open_by_handle_at", "perf_event_open", "quotactl", "reboot",
	    "settimeofday", "stime", "swapoff", "swapon", "_sysctl",
	    "syslog", "uselib", "userfaultfd", "vm86", "vm86old", "adjtimex",
	    "fanotify_init", "name_to_handle_at" };
	static const int	 families[] = { 40 /* AF_VSOCK */,
	    38 /* AF_ALG */ };
	cJSON		*p, *rules, *rule, *names, *args, *arg;
	char		*text;
	size_t		 i;

	p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "defaultAction", "SCMP_ACT_ALLOW");
	rules = cJSON_AddArrayToObject(p, "syscalls");
	rule = cJSON_CreateObject();
	names = cJSON_AddArrayToObject(rule, "names");
	for (i = 0; i < sizeof denied / sizeof denied[0]; i++)
		cJSON_AddItemToArray(names, cJSON_CreateString(denied[i]));
	cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO");
	cJSON_AddNumberToObject(rule, "errnoRet", EPERM);
	cJSON_AddItemToArray(rules, rule);
	/*
	 * Socket families nothing in a box has business with, as the
	 * command filter has it: vsock (the hypervisor's host, where the
	 * machine is a virtual one) and the kernel's crypto sockets.
	 */
	for (i = 0; i < sizeof families / sizeof families[0]; i++) {
		rule = cJSON_CreateObject();
		names = cJSON_AddArrayToObject(rule, "names");
		cJSON_AddItemToArray(names, cJSON_CreateString("socket"));
		cJSON_AddItemToArray(names, cJSON_CreateString("socketpair"));
		cJSON_AddStringToObject(rule, "action", "SCMP_ACT_ERRNO");
		cJSON_AddNumberToObject(rule, "errnoRet", EAFNOSUPPORT);
		args = cJSON_AddArrayToObject(rule, "args");
		arg = cJSON_CreateObject();
		cJSON_AddNumberToObject(arg, "index", 0);
		cJSON_AddNumberToObject(arg, "value", families[i]);
		cJSON_AddNumberToObject(arg, "valueTwo", 0);
		cJSON_AddStringToObject(arg, "op", "SCMP_CMP_EQ");
		cJSON_AddItemToArray(args, arg);
		cJSON_AddItemToArray(rules, rule);
	}
	text = util_json_print(p);
	cJSON_Delete(p);
	return (text);
}

/* The body of POST /containers/create for box b. */
static cJSON *
box_container_config(struct box *b)
{
	const struct cfg_plan_sizes	*plan = b->plan;
	cJSON				*c, *v, *labels, *hc, *m, *d;
	char				*top, *path, *seccomp, *opt;

	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "Image", BOX_IMAGE);
	cJSON_AddStringToObject(c, "Hostname", b->id);
	v = cJSON_AddArrayToObject(c, "Entrypoint");
	cJSON_AddItemToArray(v, cJSON_CreateString("/bin/sleep"));
	v = cJSON_AddArrayToObject(c, "Cmd");
	cJSON_AddItemToArray(v, cJSON_CreateString("infinity"));
	cJSON_AddStringToObject(c, "WorkingDir", "/");
	cJSON_AddFalseToObject(c, "Tty");
	cJSON_AddFalseToObject(c, "OpenStdin");
	labels = cJSON_AddObjectToObject(c, "Labels");
	cJSON_AddStringToObject(labels, BOX_LABEL "box-id", b->id);
	cJSON_AddStringToObject(labels, BOX_LABEL "tenant", b->tenant);
	cJSON_AddStringToObject(labels, BOX_LABEL "state-dir",
	    cfg->state_dir);
	hc = cJSON_AddObjectToObject(c, "HostConfig");
	cJSON_AddNumberToObject(hc, "NanoCpus", (double)plan->nano_cpus);
	cJSON_AddNumberToObject(hc, "Memory", (double)plan->memory_max);
	cJSON_AddNumberToObject(hc, "MemorySwap", (double)plan->memory_max);
	cJSON_AddNumberToObject(hc, "PidsLimit", (double)plan->pids);
	cJSON_AddTrueToObject(hc, "Init");
	cJSON_AddFalseToObject(hc, "Privileged");
	cJSON_AddFalseToObject(hc, "PublishAllPorts");
	cJSON_AddObjectToObject(hc, "PortBindings");
	cJSON_AddArrayToObject(hc, "CapAdd");
	v = cJSON_AddArrayToObject(hc, "SecurityOpt");
	seccomp = box_seccomp();
	xasprintf(&opt, "seccomp=%s", seccomp);
	cJSON_AddItemToArray(v, cJSON_CreateString(opt));
	free(opt);
	free(seccomp);
	/* What the CLI's systempaths=unconfined asks. */
	cJSON_AddArrayToObject(hc, "MaskedPaths");
	cJSON_AddArrayToObject(hc, "ReadonlyPaths");
	v = cJSON_AddArrayToObject(hc, "Devices");
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "PathOnHost", "/dev/net/tun");
	cJSON_AddStringToObject(d, "PathInContainer", "/dev/net/tun");
	cJSON_AddStringToObject(d, "CgroupPermissions", "rwm");
	cJSON_AddItemToArray(v, d);
	v = cJSON_AddArrayToObject(hc, "Mounts");
	top = state_where(STATE_SANDBOX, b->id, NULL);
	xasprintf(&path, "%s/work", top);
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "Type", "bind");
	cJSON_AddStringToObject(m, "Source", path);
	cJSON_AddStringToObject(m, "Target", "/work");
	cJSON_AddItemToArray(v, m);
	free(path);
	xasprintf(&path, "%s/home", top);
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "Type", "bind");
	cJSON_AddStringToObject(m, "Source", path);
	cJSON_AddStringToObject(m, "Target", "/home/" BOX_USER);
	cJSON_AddItemToArray(v, m);
	free(path);
	free(top);
	v = cJSON_AddObjectToObject(hc, "Tmpfs");
	cJSON_AddStringToObject(v, "/tmp", BOX_TMP_SIZE);
	cJSON_AddStringToObject(v, "/var/tmp", BOX_TMP_SIZE);
	/* The image's one other place anyone may write. */
	cJSON_AddStringToObject(v, "/run/lock", "size=1m,mode=1777");
	v = cJSON_AddObjectToObject(hc, "RestartPolicy");
	cJSON_AddStringToObject(v, "Name", "no");
	cJSON_AddStringToObject(hc, "NetworkMode", b->network_name);
	return (c);
}

/* ---- start ---- */

static void
box_start_answer(struct box *b, const struct cause *cause)
{
	box_start_cb	 cb = b->start_cb;
	void		*arg = b->start_arg;

	b->start_cb = NULL;
	b->start_arg = NULL;
	telemetry_span_end(b->span, cause != NULL ? "error" : "completed");
	b->span = NULL;
	if (cb != NULL)
		cb(cause == NULL ? b : NULL, cause, arg);
}

static void
box_start_fail(struct box *b, enum cause_kind kind, const char *fmt, ...)
{
	struct cause	 cause = { 0 };
	va_list		 ap;

	va_start(ap, fmt);
	cause_vset(&cause, kind, NULL, NULL, fmt, ap);
	va_end(ap);
	cause_detail(&cause, "id", b->id);
	log_warnx("box %s: %s", b->id, cause.message);
	/* Terminated once all of it is gone (a restart finishes it). */
	box_set_state(b, BOX_STOPPING, cause.message);
	box_start_answer(b, &cause);
	cause_clear(&cause);
	box_teardown(b);
}

static void
box_ready_cb(struct box *b, int code, const char *error)
{
	if (error != NULL || code != 0) {
		box_start_fail(b, CAUSE_FAILED, "the box's display and"
		    " container engine did not come up within %d s%s%s",
		    BOX_READY_SECONDS, error != NULL ? ": " : "",
		    error != NULL ? error : "");
		return;
	}
	box_set_state(b, BOX_READY, NULL);
	box_touch(b);
	box_minutes_start(b);
	box_meter(b, 1);	/* the start, a metered call */
	log_info("box %s of tenant %s is ready", b->id, b->tenant);
	box_start_answer(b, NULL);
}

static void
box_engine_cb(struct box *b, int code, const char *error)
{
	char		 script[256];
	const char	*argv[] = { "/bin/sh", "-c", script, NULL };
	const char	*env[] = { BOX_PATH, "HOME=/home/" BOX_USER,
	    "XDG_RUNTIME_DIR=" BOX_RUNDIR, NULL };

	if (error != NULL) {
		box_start_fail(b, CAUSE_FAILED, "the box's container engine"
		    " could not be started: %s", error);
		return;
	}
	/* Both up, or the script gives up (the exec's own bound). */
	snprintf(script, sizeof script, "i=0; while [ $i -lt %d ]; do"
	    " [ -S /tmp/.X11-unix/X99 ] && curl -sf --unix-socket %s"
	    " http://d/_ping >/dev/null 2>&1 && exit 0; sleep 0.1;"
	    " i=$((i+1)); done; exit 1", BOX_READY_SECONDS * 10,
	    BOX_ENGINE_SOCK);
	box_dexec(b, BOX_USER, argv, env, 1, box_ready_cb);
}

static void
box_display_cb(struct box *b, int code, const char *error)
{
	const char	*argv[] = { "/bin/sh", "-c", "exec podman system"
	    " service --time=0 unix://" BOX_ENGINE_SOCK " >" BOX_RUNDIR
	    "/engine.log 2>&1", NULL };
	const char	*env[] = { BOX_PATH, "HOME=/home/" BOX_USER,
	    "XDG_RUNTIME_DIR=" BOX_RUNDIR, NULL };

	if (error != NULL) {
		box_start_fail(b, CAUSE_FAILED, "the box's display could not"
		    " be started: %s", error);
		return;
	}
	box_dexec(b, BOX_USER, argv, env, 0, box_engine_cb);
}

static void
box_setup_cb(struct box *b, int code, const char *error)
{
	const char	*argv[] = { "/bin/sh", "-c", "exec Xvfb " BOX_DISPLAY
	    " -screen 0 " BOX_SCREEN " -nolisten tcp >" BOX_RUNDIR
	    "/display.log 2>&1", NULL };
	const char	*env[] = { BOX_PATH, "HOME=/home/" BOX_USER, NULL };

	if (error != NULL) {
		box_start_fail(b, CAUSE_FAILED, "the box could not be set up:"
		    " %s", error);
		return;
	}
	if (code != 0) {
		box_start_fail(b, CAUSE_FAILED, "the box could not be set up"
		    " (exit status %d)", code);
		return;
	}
	box_dexec(b, BOX_USER, argv, env, 0, box_display_cb);
}

/*
 * As the box's root, once: the box user's home (on the box's disk, and
 * empty: the skeleton is copied) and run directory, its engine's
 * configuration (cgroupfs: there is no systemd; its storage under the
 * home), the TUN device made its own, and each service name resolving
 * to the box itself.
 */
static void
box_setup(struct box *b)
{
	const char	*argv[] = { "/bin/sh", "-c", NULL, NULL };
	const char	*env[] = { BOX_PATH, NULL };
	cJSON		*s;
	char		*script, *hosts, *tmp;

	/* "ADDRESS NAME..." for /etc/hosts (names are DNS labels). */
	hosts = xstrdup(b->address != NULL ? b->address : "127.0.0.1");
	cJSON_ArrayForEach(s, b->services) {
		xasprintf(&tmp, "%s %s", hosts, cJSON_GetStringValue(
		    cJSON_GetObjectItem(s, "name")));
		free(hosts);
		hosts = tmp;
	}
	xasprintf(&script,
	    "set -e\n"
	    "cp -a /etc/skel/. /home/" BOX_USER "/\n"
	    "mkdir -p /home/" BOX_USER "/.config/containers"
	    " /home/" BOX_USER "/.local/share/containers\n"
	    "printf '[engine]\\ncgroup_manager = \"cgroupfs\"\\n"
	    "events_logger = \"file\"\\n[network]\\n"
	    "network_backend = \"netavark\"\\n'"
	    " >/home/" BOX_USER "/.config/containers/containers.conf\n"
	    "printf '[storage]\\ndriver = \"overlay\"\\n'"
	    " >/home/" BOX_USER "/.config/containers/storage.conf\n"
	    "chown -R " BOX_USER ":" BOX_USER " /home/" BOX_USER " /work\n"
	    "chown " BOX_USER ":" BOX_USER " /dev/net/tun\n"
	    "install -d -o " BOX_USER " -g " BOX_USER " -m 0700 " BOX_RUNDIR "\n"
	    "install -d -m 1777 /tmp/.X11-unix\n"
	    "printf '#!/bin/sh\\nexec podman --remote \"$@\"\\n'"
	    " >/usr/local/bin/docker\n"
	    "chmod 0755 /usr/local/bin/docker\n"
	    "%s%s%s",
	    cJSON_GetArraySize(b->services) > 0 ? "echo '" : "",
	    cJSON_GetArraySize(b->services) > 0 ? hosts : "",
	    cJSON_GetArraySize(b->services) > 0 ? "' >>/etc/hosts\n" : "");
	free(hosts);
	argv[2] = script;
	box_dexec(b, "root", argv, env, 1, box_setup_cb);
	free(script);
}

static void
box_inspected_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct box	*b = arg;
	cJSON		*st, *pid;
	const char	*addr;

	b->dc = NULL;
	st = cJSON_GetObjectItem(reply, "State");
	pid = cJSON_GetObjectItem(st, "Pid");
	if (error != NULL || !cJSON_IsNumber(pid) || pid->valueint <= 1) {
		box_start_fail(b, CAUSE_FAILED, "the box's container does not"
		    " run: %s", error != NULL ? error : "no process");
		return;
	}
	b->pid = (pid_t)pid->valueint;
	if ((addr = docker_container_address(reply)) != NULL)
		b->address = xstrdup(addr);
	box_setup(b);
}

static void
box_started_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct box	*b = arg;
	char		*path;

	b->dc = NULL;
	if (error != NULL) {
		box_start_fail(b, CAUSE_FAILED, "the box's container could not"
		    " start: %s", error);
		return;
	}
	xasprintf(&path, "/containers/%s/json", b->container);
	b->dc = docker_call("GET", path, "container_inspect", NULL, b->span,
	    box_inspected_cb, b);
	free(path);
}

static void
box_created_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct box	*b = arg;
	cJSON		*id;
	char		*path;

	b->dc = NULL;
	id = cJSON_GetObjectItem(reply, "Id");
	/* Made (its network is held by it now), or not: released. */
	tenantnet_done(b->id, 0);
	if (error != NULL || !cJSON_IsString(id) || id->valuestring[strspn(
	    id->valuestring, "0123456789abcdef")] != '\0') {
		box_start_fail(b, CAUSE_FAILED, "the box's container could not"
		    " be made: %s", error != NULL ? error : "no container id");
		return;
	}
	b->container = xstrdup(id->valuestring);
	box_save(b);
	xasprintf(&path, "/containers/%s/start", b->container);
	b->dc = docker_call("POST", path, "container_start", NULL, b->span,
	    box_started_cb, b);
	free(path);
}

static void
box_network_cb(const char *network, const char *error, void *arg)
{
	struct box	*b = arg;
	cJSON		*body;
	char		*path;

	if (error != NULL) {
		tenantnet_done(b->id, 1);
		box_start_fail(b, CAUSE_FAILED, "the box's network could not be"
		    " made: %s", error);
		return;
	}
	b->networked = 1;
	body = box_container_config(b);
	xasprintf(&path, "/containers/create?name=smcp-%s", b->id);
	b->dc = docker_call("POST", path, "container_create", body, b->span,
	    box_created_cb, b);
	free(path);
	cJSON_Delete(body);
}

static void
box_disk_cb(const struct cause *cause, void *arg)
{
	struct box	*b = arg;
	char		*top, *path;
	int		 bad = 0;

	if (cause != NULL) {
		box_start_fail(b, cause->kind, "the box's disk could not be"
		    " made: %s", cause->message);
		return;
	}
	b->disked = 1;
	/* Our own new file system: nothing of the box is on it yet. */
	top = state_where(STATE_SANDBOX, b->id, NULL);
	xasprintf(&path, "%s/work", top);
	bad |= mkdir(path, 0755) != 0;
	free(path);
	xasprintf(&path, "%s/home", top);
	bad |= mkdir(path, 0755) != 0;
	free(path);
	free(top);
	if (bad) {
		box_start_fail(b, CAUSE_INTERNAL, "the box's directories could"
		    " not be made: %s", strerror(errno));
		return;
	}
	tenantnet_ensure(b->id, 1, b->span, box_network_cb, b);
}

/*
 * Start a box for tenant with services (an array of {name, port}, checked
 * by the caller), idle_min (0: no idle stop): cb(box, NULL, arg) once it
 * is ready, or cb(NULL, cause, arg).
 */
void
box_start(const char *tenant, cJSON *services, cJSON *secrets, int idle_min,
    struct tspan *parent, box_start_cb cb, void *arg)
{
	const struct cfg_plan_sizes	*plan;
	struct cause			 cause = { 0 };
	struct box			*b;
	char				*top, rnd[13], name[256];
	double				 left;

	if ((plan = cfg_tenant_plan(tenant)) == NULL) {
		cause_set(&cause, CAUSE_FAILED, NULL, NULL, "tenant %s has no"
		    " plan: boxes need a tenant line (tenant %s plan"
		    " free|pro|max) in the configuration", tenant, tenant);
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	if (box_credits_left(tenant, &left) && left <= 0) {
		cause_set(&cause, CAUSE_FAILED, NULL, NULL, "tenant %s has no"
		    " credits left (%g): its operator grants more with"
		    " sandbox-mcp credits %s +N", tenant, left, tenant);
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	if (box_running(tenant) >= plan->boxes) {
		cause_set(&cause, CAUSE_BUSY, NULL, NULL, "tenant %s runs %u"
		    " boxes already, the most its plan %s allows: stop one"
		    " first", tenant, plan->boxes, plan->name);
		cause_detail_int(&cause, "limit", plan->boxes);
		cause_detail(&cause, "plan", plan->name);
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	b = xcalloc(1, sizeof *b);
	util_random_hex(rnd, 12);
	snprintf(b->id, sizeof b->id, "box-%s", rnd);
	b->tenant = xstrdup(tenant);
	b->plan = plan;
	b->services = cJSON_Duplicate(services, 1);
	b->secrets = secrets != NULL ? cJSON_Duplicate(secrets, 1) :
	    cJSON_CreateArray();
	b->idle_min = idle_min;
	b->created_ms = now_ms();
	b->start_cb = cb;
	b->start_arg = arg;
	b->span = telemetry_span_begin(NULL, parent, "box.start", NULL);
	telemetry_span_attr_str(b->span, "box_id", b->id);
	tenantnet_name(b->id, name, sizeof name);
	b->network_name = xstrdup(name);
	LIST_INSERT_HEAD(&box_list, b, entry);
	box_set_state(b, BOX_STARTING, NULL);
	top = state_where(STATE_SANDBOX, b->id, NULL);
	if (mkdir(top, 0700) != 0) {
		free(top);
		box_start_fail(b, CAUSE_INTERNAL, "cannot make the box's"
		    " directory: %s", strerror(errno));
		return;
	}
	free(top);
	disk_create(b->id, plan->disk, 1, box_disk_cb, b);
}

/* ---- stop ---- */

struct box_gone {
	char	id[20];
};

/* Child side: the box's disk, unmounted and removed. */
static int
box_disk_child(void *arg, int fd)
{
	struct box_gone	*g = arg;
	char		*error = NULL;

	if (disk_teardown(g->id, &error) != 0) {
		job_fail(fd, CAUSE_INTERNAL, NULL, NULL, "%s", error);
		return (1);
	}
	return (job_answer(fd, NULL, NULL));
}

static void
box_disk_gone(cJSON *result, const struct cause *cause, void *arg)
{
	struct box	*b = arg;

	if (cause != NULL)
		log_warnx("box %s: its disk: %s", b->id, cause->message);
	b->disk_busy = 0;
	box_teardown(b);
}

static void
box_removed_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct box	*b = arg;

	b->dc = NULL;
	if (error != NULL && status != 404)
		log_warnx("box %s: its container: %s", b->id, error);
	free(b->container);
	b->container = NULL;
	box_teardown(b);
}

/*
 * Take down what the box has, one thing at a time (the container, its
 * network, its disk), then answer the stop that asked.
 */
static void
box_teardown(struct box *b)
{
	struct box_gone	 g;
	box_stop_cb	 cb;
	void		*arg;
	char		*path, *top;

	if (b->dc != NULL || b->dexec != NULL || b->disk_busy)
		return;		/* its call ends first, and comes back */
	if (b->container != NULL) {
		xasprintf(&path, "/containers/%s?force=true&v=true",
		    b->container);
		b->dc = docker_call("DELETE", path, "container_remove", NULL,
		    NULL, box_removed_cb, b);
		free(path);
		return;
	}
	if (b->networked) {
		b->networked = 0;
		tenantnet_release(b->id);
	}
	if (b->disked) {
		memset(&g, 0, sizeof g);
		strlcpy(g.id, b->id, sizeof g.id);
		b->disk_busy = 1;
		b->disked = 0;
		job_fork("box-disk", box_disk_child, &g, box_disk_gone, b);
		return;
	}
	/* A start that failed before its disk left its directory empty. */
	top = state_where(STATE_SANDBOX, b->id, NULL);
	rmdir(top);
	free(top);
	if (b->state == BOX_STOPPING)
		box_set_state(b, BOX_TERMINATED, b->reason);
	box_jobs_forget(b);
	cb = b->stop_cb;
	arg = b->stop_arg;
	b->stop_cb = NULL;
	if (cb != NULL)
		cb(b, arg);
}

/*
 * Stop box b for reason: cb(b, arg) once its container, network and
 * disk are gone and it reads terminated.
 */
void
box_stop(struct box *b, const char *reason, box_stop_cb cb, void *arg)
{
	if (b->idle_ev != NULL)
		evtimer_del(b->idle_ev);
	if (b->freeze_ev != NULL)
		evtimer_del(b->freeze_ev);
	box_set_state(b, BOX_STOPPING, reason);
	b->stop_cb = cb;
	b->stop_arg = arg;
	box_teardown(b);
}

/* ---- a restart ---- */

static void
box_adopt_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct box	*b = arg;
	cJSON		*st, *pid, *id;
	const char	*addr;

	b->dc = NULL;
	st = cJSON_GetObjectItem(reply, "State");
	pid = cJSON_GetObjectItem(st, "Pid");
	id = cJSON_GetObjectItem(reply, "Id");
	if (error == NULL && cJSON_IsTrue(cJSON_GetObjectItem(st,
	    "Running")) && cJSON_IsNumber(pid) && pid->valueint > 1 &&
	    cJSON_IsString(id) && (b->state == BOX_READY ||
	    b->state == BOX_FROZEN)) {
		/* Frozen as the Engine has it, paused or not. */
		b->state = cJSON_IsTrue(cJSON_GetObjectItem(st, "Paused")) ?
		    BOX_FROZEN : BOX_READY;
		free(b->container);
		b->container = xstrdup(id->valuestring);
		b->pid = (pid_t)pid->valueint;
		if ((addr = docker_container_address(reply)) != NULL) {
			free(b->address);
			b->address = xstrdup(addr);
		}
		box_touch(b);
		box_minutes_start(b);
		log_info("box %s of tenant %s found again", b->id, b->tenant);
		return;
	}
	/* Gone, or it never was ready: whatever is left of it goes. */
	if (error != NULL && status == 404) {
		free(b->container);
		b->container = NULL;
	}
	if (b->state != BOX_INTERRUPTED)
		box_set_state(b, BOX_INTERRUPTED, b->state == BOX_READY ?
		    "its container was gone when the server started again" :
		    "the server ended while it was starting or stopping");
	box_teardown(b);
}

/*
 * A box of a record read at start: terminated and interrupted ones are
 * kept for listing; a ready one whose container still runs is taken
 * back; anything else is taken down and reads as interrupted.
 */
static void
box_adopt(cJSON *rec)
{
	struct box	*b;
	const char	*id, *tenant, *state, *reason;
	cJSON		*v;
	char		*path, name[256];
	int		 i;

	id = cJSON_GetStringValue(cJSON_GetObjectItem(rec, "id"));
	tenant = cJSON_GetStringValue(cJSON_GetObjectItem(rec, "tenant"));
	state = cJSON_GetStringValue(cJSON_GetObjectItem(rec, "state"));
	if (id == NULL || tenant == NULL || state == NULL ||
	    strlen(id) != 16 || strncmp(id, "box-", 4) != 0)
		return;
	b = xcalloc(1, sizeof *b);
	strlcpy(b->id, id, sizeof b->id);
	b->tenant = xstrdup(tenant);
	if ((b->plan = cfg_tenant_plan(tenant)) == NULL)
		b->plan = cfg_plan_sizes(PLAN_FREE);
	for (i = BOX_STARTING; i <= BOX_INTERRUPTED; i++) {
		if (strcmp(state, box_state_name(i)) == 0)
			b->state = i;
	}
	if ((reason = cJSON_GetStringValue(cJSON_GetObjectItem(rec,
	    "reason"))) != NULL)
		b->reason = xstrdup(reason);
	v = cJSON_GetObjectItem(rec, "services");
	b->services = cJSON_IsArray(v) ? cJSON_Duplicate(v, 1) :
	    cJSON_CreateArray();
	v = cJSON_GetObjectItem(rec, "secrets");
	b->secrets = cJSON_IsArray(v) ? cJSON_Duplicate(v, 1) :
	    cJSON_CreateArray();
	v = cJSON_GetObjectItem(rec, "idleTimeoutMin");
	b->idle_min = cJSON_IsNumber(v) ? v->valueint : 0;
	v = cJSON_GetObjectItem(rec, "createdAt");
	b->created_ms = cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
	v = cJSON_GetObjectItem(rec, "endedAt");
	b->ended_ms = cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
	tenantnet_name(b->id, name, sizeof name);
	b->network_name = xstrdup(name);
	LIST_INSERT_HEAD(&box_list, b, entry);
	if (b->state == BOX_TERMINATED || b->state == BOX_INTERRUPTED)
		return;
	/* Its container is found by its name: it may not be recorded. */
	xasprintf(&b->container, "smcp-%s", b->id);
	b->disked = disk_present(b->id);
	b->networked = 1;
	xasprintf(&path, "/containers/%s/json", b->container);
	b->dc = docker_call("GET", path, "container_inspect", NULL, NULL,
	    box_adopt_cb, b);
	free(path);
}

/* A ready box's container ended outside our control: interrupted. */
static void
box_lost(struct box *b, const char *why)
{
	if (b->state != BOX_READY && b->state != BOX_FROZEN)
		return;		/* ours to end, or ended */
	log_warnx("box %s: %s", b->id, why);
	box_set_state(b, BOX_INTERRUPTED, why);
	box_teardown(b);
}

static void
box_check_cb(cJSON *reply, const char *error, int status, void *arg)
{
	char		*id = arg;
	struct box	*b;

	if ((b = box_find(id, NULL)) != NULL && (b->state == BOX_READY ||
	    b->state == BOX_FROZEN) &&
	    ((error != NULL && status == 404) || (error == NULL &&
	    !cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(reply,
	    "State"), "Running")))))
		box_lost(b, "its container stopped outside sandbox-mcp");
	free(id);
}

static void
box_event_cb(const char *action, const char *cid, cJSON *attrs, void *arg)
{
	struct box	*b;
	cJSON		*bid, *code;
	char		*path, *why;

	if (action == NULL) {
		/* (Re)established: events may have been missed. */
		LIST_FOREACH(b, &box_list, entry) {
			/* (One being taken back is looked at already.) */
			if ((b->state != BOX_READY && b->state !=
			    BOX_FROZEN) || b->container == NULL ||
			    b->dc != NULL)
				continue;
			xasprintf(&path, "/containers/%s/json", b->container);
			docker_call("GET", path, NULL, NULL, NULL,
			    box_check_cb, xstrdup(b->id));
			free(path);
		}
		return;
	}
	bid = cJSON_GetObjectItemCaseSensitive(attrs, BOX_LABEL "box-id");
	if (!cJSON_IsString(bid) || (b = box_find(bid->valuestring, NULL)) ==
	    NULL || b->container == NULL || strcmp(b->container, cid) != 0)
		return;
	if (strcmp(action, "die") == 0) {
		code = cJSON_GetObjectItemCaseSensitive(attrs, "exitCode");
		xasprintf(&why, "its container stopped outside sandbox-mcp"
		    " (exit code %s)", cJSON_IsString(code) ?
		    code->valuestring : "unknown");
	} else
		why = xstrdup("its container was removed outside"
		    " sandbox-mcp");
	box_lost(b, why);
	free(why);
}

/* ---- commands ---- */

#define BOX_TAIL		(16 * 1024)
#define BOX_UID			1000
#define BOX_NS_MAX		5

/* Someone waiting for a background job's end (sandbox_procs). */
struct box_waiter {
	box_exec_cb		 cb;
	void			*arg;
	struct event		*ev;		/* its patience */
	struct box_job		*bj;
	LIST_ENTRY(box_waiter)	 entry;
};

struct box_job {
	struct box		*b;
	char			 bg[16];	/* bg-<8 hex>, or "" */
	char			*cmd;
	uint64_t		 started_ms;
	uint64_t		 ended_ms;	/* 0: running */
	int			 code;
	int			 stopped;	/* by sandbox_procs */
	LIST_HEAD(, box_waiter)	 waiters;
	struct job		*job;
	int			 fd[2];		/* stdout, stderr; -1 */
	struct event		*ev[2];
	struct evbuffer		*tail[2];
	int			 truncated[2];
	box_exec_cb		 cb;
	void			*arg;
	LIST_ENTRY(box_job)	 entry;
};

struct box_exec_args {
	pid_t		 pid;		/* the box's init */
	const char	*container;
	const char	*cmd;
	const char	*cwd;		/* under /work, "" for it */
	const char	*bg;		/* "" for a foreground command */
	int		 timeout;	/* seconds; 0: none */
	char		**env;
};

static volatile sig_atomic_t	box_timed_out;
static volatile sig_atomic_t	box_stopped;
static pid_t			box_child;

/* Child side: the timeout (SIGALRM) or a stop (SIGTERM, ours). */
static void
box_alarm(int sig)
{
	if (sig == SIGTERM)
		box_stopped = 1;
	else
		box_timed_out = 1;
	/* Its namespace's init, and with it every process of it. */
	if (box_child > 0)
		kill(box_child, SIGKILL);
}

/* Child side: whether pid is still the init of the box's container. */
static int
box_exec_same(const struct box_exec_args *a)
{
	char	path[64], buf[4096];
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)a->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return (0);
	buf[n] = '\0';
	return (strstr(buf, a->container) != NULL);
}

/*
 * Child side: what a box's command, and its namespace's init, keep: no
 * way back to more privilege, the command filter (while still able to
 * cut the bounding set), then the box user. 0, or -1 with errno.
 */
static int
box_drop(void)
{
	gid_t	gid = BOX_UID;

	if (nsexec_command_harden() != 0 || setgroups(1, &gid) != 0 ||
	    setresgid(BOX_UID, BOX_UID, BOX_UID) != 0 ||
	    setresuid(BOX_UID, BOX_UID, BOX_UID) != 0)
		return (-1);
	return (0);
}

/* Child side: wait for pid; its end as a shell's exit code, or -1. */
static int
box_wait(pid_t pid)
{
	int	st;

	while (waitpid(pid, &st, 0) == -1) {
		if (errno != EINTR)
			return (-1);
	}
	return (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/*
 * The command's own process, in the box's namespaces: the box user, no
 * way back to more privilege, the command filter, its directory found
 * beneath /work without leaving it, its output on fds 4 and 5 (or in
 * the background job's log, opened as the box user), then bash -lc.
 */
static __dead void
box_exec_command(const struct box_exec_args *a)
{
	struct open_how	 how;
	char		*argv[4], name[32];
	int		 wfd, dfd, sfd, lfd, nfd;

	setsid();
	if ((nfd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1 ||
	    dup2(nfd, STDIN_FILENO) == -1)
		goto fail;
	if (*a->bg == '\0' && (dup2(4, STDOUT_FILENO) == -1 ||
	    dup2(5, STDERR_FILENO) == -1))
		goto fail;
	if (box_drop() != 0)
		goto fail;
	if ((wfd = open("/work", O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		goto fail;
	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
	/* A background job's log first: what goes wrong next goes there. */
	if (*a->bg != '\0') {
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
		if ((mkdirat(wfd, ".sbx", 0755) != 0 && errno != EEXIST) ||
		    (sfd = syscall(SYS_openat2, wfd, ".sbx", &how,
		    sizeof how)) == -1)
			goto fail;
		snprintf(name, sizeof name, "%s.log", a->bg);
		if ((lfd = openat(sfd, name, O_WRONLY | O_CREAT | O_APPEND |
		    O_NOFOLLOW | O_CLOEXEC, 0644)) == -1 ||
		    dup2(lfd, STDOUT_FILENO) == -1 ||
		    dup2(lfd, STDERR_FILENO) == -1)
			goto fail;
	}
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	dfd = wfd;
	if (*a->cwd != '\0' && (dfd = syscall(SYS_openat2, wfd, a->cwd, &how,
	    sizeof how)) == -1) {
		dprintf(STDERR_FILENO, "cwd %s: %s\n", a->cwd, errno ==
		    EXDEV ? "it leads out of /work" : strerror(errno));
		_exit(126);
	}
	if (fchdir(dfd) != 0)
		goto fail;
	closefrom(3);
	argv[0] = (char *)"bash";
	argv[1] = (char *)"-lc";
	argv[2] = (char *)a->cmd;
	argv[3] = NULL;
	execve("/bin/bash", argv, a->env);
fail:
	dprintf(STDERR_FILENO, "cannot start the command: %s\n",
	    strerror(errno));
	_exit(127);
}

/*
 * pid 1 of the command's PID namespace: its /proc mounted, no privilege
 * kept, it starts the command and reaps what ends until the command
 * itself has; its end ends every process left in the namespace.
 */
static __dead void
box_exec_init(const struct box_exec_args *a)
{
	pid_t	cmd, pid, parent = getppid();
	int	st;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    NULL) != 0) {
		dprintf(5, "cannot make the command's /proc: %s\n",
		    strerror(errno));
		_exit(127);
	}
	if ((cmd = fork()) == -1) {
		dprintf(5, "fork: %s\n", strerror(errno));
		_exit(127);
	}
	if (cmd == 0)
		box_exec_command(a);
	closefrom(0);
	if (box_drop() != 0)
		_exit(127);
	/* (A change of credentials clears it: set again, and look.) */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	/* The orphans of the namespace come here too: reaped. */
	while ((pid = waitpid(-1, &st, 0)) != cmd) {
		if (pid == -1 && errno != EINTR)
			_exit(127);
	}
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

/*
 * In the box's PID namespace: the command gets a PID namespace of its
 * own, with its own /proc in a mount namespace of its own, so that it
 * sees and reaches no process but its own (not the display's, nor the
 * engine's, which run as the same user without no_new_privs and the
 * filter), and all of its processes end with it, with its timeout or
 * its stop. (A new PID namespace is made from the one a process is in,
 * hence this step: the helper only set the box's for its children.)
 * This process waits for the namespace's init and ends as it did; its
 * own death ends the namespace.
 */
static __dead void
box_exec_ns(const struct box_exec_args *a)
{
	pid_t	init;
	int	code;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
		dprintf(5, "cannot make the command's namespaces: %s\n",
		    strerror(errno));
		_exit(127);
	}
	if ((init = fork()) == -1) {
		dprintf(5, "fork: %s\n", strerror(errno));
		_exit(127);
	}
	if (init == 0)
		box_exec_init(a);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	closefrom(0);
	code = box_wait(init);
	_exit(code == -1 ? 127 : code);
}

/*
 * Child side: enter the box (its init's cgroups and namespaces: the
 * PID namespace for the child), start the command, wait for it (a
 * foreground one at most its timeout, then its namespace is killed, as
 * on a stop) and answer its end.
 */
static int
box_exec_child(void *arg, int fd)
{
	static const char	*names[BOX_NS_MAX] = { "ipc", "uts", "net",
	    "pid", "mnt" };
	const struct box_exec_args *a = arg;
	struct sigaction	 sa;
	sigset_t		 set;
	cJSON			*r;
	char			 path[64], **procs, *cause = NULL;
	size_t			 n, i;
	int			 nsfd[BOX_NS_MAX], code, cfd;

	if (!box_exec_same(a)) {
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "the box's container"
		    " is not running");
		return (1);
	}
	if ((procs = cgroup_procs_of(a->pid, &n, &cause)) == NULL) {
		job_fail(fd, CAUSE_INTERNAL, NULL, NULL, "%s", cause);
		return (1);
	}
	for (i = 0; i < n; i++) {
		if ((cfd = open(procs[i], O_WRONLY | O_CLOEXEC)) == -1 ||
		    write(cfd, "0\n", 2) != 2) {
			job_fail(fd, CAUSE_INTERNAL, NULL, NULL, "cannot join"
			    " %s: %s", procs[i], strerror(errno));
			return (1);
		}
		close(cfd);
	}
	for (i = 0; i < BOX_NS_MAX; i++) {
		snprintf(path, sizeof path, "/proc/%ld/ns/%s", (long)a->pid,
		    names[i]);
		if ((nsfd[i] = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
			job_fail(fd, CAUSE_FAILED, NULL, NULL, "cannot open"
			    " %s: %s", path, strerror(errno));
			return (1);
		}
	}
	for (i = 0; i < BOX_NS_MAX; i++) {
		if (setns(nsfd[i], 0) != 0) {
			job_fail(fd, CAUSE_INTERNAL, NULL, NULL, "cannot enter"
			    " the box's %s namespace: %s", names[i],
			    strerror(errno));
			return (1);
		}
		close(nsfd[i]);
	}
	/*
	 * A stop (SIGTERM) that comes before the fork waits for it (it
	 * has the child to kill then); before the handler, it ends us.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = box_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if ((box_child = fork()) == -1) {
		job_fail(fd, CAUSE_INTERNAL, NULL, NULL, "fork: %s",
		    strerror(errno));
		return (1);
	}
	if (box_child == 0) {
		close(fd);
		signal(SIGTERM, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		box_exec_ns(a);
	}
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	close(4);
	close(5);
	if (a->timeout > 0)
		alarm(a->timeout);
	if ((code = box_wait(box_child)) == -1) {
		job_fail(fd, CAUSE_INTERNAL, NULL, NULL, "waitpid: %s",
		    strerror(errno));
		return (1);
	}
	alarm(0);
	r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "exitCode", code);
	if (box_timed_out)
		cJSON_AddTrueToObject(r, "timedOut");
	if (box_stopped)
		cJSON_AddTrueToObject(r, "stopped");
	return (job_answer(fd, r, NULL));
}

static void
box_job_free(struct box_job *bj)
{
	int	i;

	free(bj->cmd);
	for (i = 0; i < 2; i++) {
		if (bj->ev[i] != NULL)
			event_free(bj->ev[i]);
		if (bj->fd[i] != -1)
			close(bj->fd[i]);
		if (bj->tail[i] != NULL)
			evbuffer_free(bj->tail[i]);
	}
	LIST_REMOVE(bj, entry);
	free(bj);
}

/* Read what stream i has now; keep its last BOX_TAIL bytes. */
static void
box_job_read(struct box_job *bj, int i)
{
	char	buf[16384];
	ssize_t	n;
	size_t	len;

	while (bj->fd[i] != -1) {
		n = read(bj->fd[i], buf, sizeof buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0) {
			event_del(bj->ev[i]);
			close(bj->fd[i]);
			bj->fd[i] = -1;
			return;
		}
		evbuffer_add(bj->tail[i], buf, n);
		if ((len = evbuffer_get_length(bj->tail[i])) > BOX_TAIL) {
			evbuffer_drain(bj->tail[i], len - BOX_TAIL);
			bj->truncated[i] = 1;
		}
	}
}

static void
box_job_read_cb(evutil_socket_t fd, short events, void *arg)
{
	struct box_job	*bj = arg;

	box_job_read(bj, fd == bj->fd[0] ? 0 : 1);
}

/* A stream's tail as text (its first bytes may split a character). */
static cJSON *
box_job_text(struct box_job *bj, int i)
{
	size_t	 len = evbuffer_get_length(bj->tail[i]);
	char	*s;
	cJSON	*v;

	s = xmalloc(len + 1);
	evbuffer_remove(bj->tail[i], s, len);
	s[len] = '\0';
	util_utf8_scrub(s);
	v = cJSON_CreateString(s);
	free(s);
	return (v);
}

#define BOX_BG_KEPT	64	/* ended background jobs kept per box */
#define BOX_CMD_KEPT	1024	/* of each one's command */

/* A background job as sandbox_procs shows it. */
static cJSON *
box_bg_json(struct box_job *bj)
{
	cJSON	*o;
	char	 log[64];

	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "bgId", bj->bg);
	cJSON_AddStringToObject(o, "cmd", bj->cmd);
	cJSON_AddBoolToObject(o, "running", bj->ended_ms == 0);
	if (bj->ended_ms == 0)
		cJSON_AddNullToObject(o, "exitCode");
	else
		cJSON_AddNumberToObject(o, "exitCode", bj->code);
	cJSON_AddBoolToObject(o, "stopped", bj->stopped);
	cJSON_AddNumberToObject(o, "startedAt", (double)bj->started_ms);
	if (bj->ended_ms != 0)
		cJSON_AddNumberToObject(o, "endedAt", (double)bj->ended_ms);
	else
		cJSON_AddNullToObject(o, "endedAt");
	snprintf(log, sizeof log, "/work/.sbx/%s.log", bj->bg);
	cJSON_AddStringToObject(o, "log", log);
	return (o);
}

static void
box_waiter_answer(struct box_waiter *w)
{
	cJSON	*o = box_bg_json(w->bj);

	LIST_REMOVE(w, entry);
	if (w->ev != NULL)
		event_free(w->ev);
	w->cb(o, NULL, w->arg);
	cJSON_Delete(o);
	free(w);
}

/* A background job has ended: its waiters are told; old ones go. */
static void
box_bg_done(struct box_job *bj, cJSON *result)
{
	struct box_job	*old, *next;
	cJSON		*v;
	int		 n = 0;

	v = cJSON_GetObjectItem(result, "exitCode");
	bj->code = cJSON_IsNumber(v) ? v->valueint : -1;
	bj->ended_ms = now_ms();
	while (!LIST_EMPTY(&bj->waiters))
		box_waiter_answer(LIST_FIRST(&bj->waiters));
	LIST_FOREACH_SAFE(old, &bj->b->jobs, entry, next) {
		if (*old->bg == '\0' || old->ended_ms == 0)
			continue;
		if (++n > BOX_BG_KEPT)
			box_job_free(old);
	}
}

/* An ended box: the jobs it ran are let go (none runs any more). */
static void
box_jobs_forget(struct box *b)
{
	struct box_job	*bj, *next;

	LIST_FOREACH_SAFE(bj, &b->jobs, entry, next) {
		if (bj->job == NULL && LIST_EMPTY(&bj->waiters))
			box_job_free(bj);
	}
}

static struct box_job *
box_bg_find(struct box *b, const char *bg)
{
	struct box_job	*bj;

	LIST_FOREACH(bj, &b->jobs, entry) {
		if (*bj->bg != '\0' && strcmp(bj->bg, bg) == 0)
			return (bj);
	}
	return (NULL);
}

/* The box's background jobs, newest first. */
cJSON *
box_procs_list(struct box *b)
{
	struct box_job	*bj;
	cJSON		*list;

	list = cJSON_CreateArray();
	LIST_FOREACH(bj, &b->jobs, entry) {
		if (*bj->bg != '\0')
			cJSON_AddItemToArray(list, box_bg_json(bj));
	}
	return (list);
}

static void
box_waiter_timeout(evutil_socket_t fd, short events, void *arg)
{
	box_waiter_answer(arg);
}

/*
 * Wait for background job bg of box b to end, at most timeout seconds
 * (0: at once), then cb(job, NULL, arg); stop kills its process group
 * first. cb(NULL, cause, arg) for a job the box has not.
 */
void
box_procs_wait(struct box *b, const char *bg, int timeout, int stop,
    box_exec_cb cb, void *arg)
{
	struct box_waiter	*w;
	struct box_job		*bj;
	struct cause		 cause = { 0 };
	struct timeval		 tv;
	cJSON			*o;

	if ((bj = box_bg_find(b, bg)) == NULL) {
		cause_set(&cause, CAUSE_NOT_FOUND, "bgId", bg, "box %s has no"
		    " background job %s", b->id, bg);
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	if (bj->ended_ms != 0 || (timeout == 0 && !stop)) {
		o = box_bg_json(bj);
		cb(o, NULL, arg);
		cJSON_Delete(o);
		return;
	}
	w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->arg = arg;
	w->bj = bj;
	LIST_INSERT_HEAD(&bj->waiters, w, entry);
	if (stop) {
		bj->stopped = 1;
		if (bj->job != NULL && job_pid(bj->job) > 0)
			kill(job_pid(bj->job), SIGTERM);
		return;
	}
	if ((w->ev = evtimer_new(ev_base, box_waiter_timeout, w)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	tv.tv_sec = timeout;
	tv.tv_usec = 0;
	evtimer_add(w->ev, &tv);
}

static void
box_job_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct box_job	*bj = arg;
	cJSON		*r, *v;
	int		 i, timed_out;

	bj->job = NULL;
	if (bj->b->running > 0)
		bj->b->running--;
	box_touch(bj->b);	/* freezing waits from its end */
	/* A metered call, counted once it is over (it may spend the last). */
	box_meter(bj->b, 1);
	if (*bj->bg != '\0') {
		box_bg_done(bj, result);
		return;
	}
	/* The command has ended: what it wrote is in the pipes. */
	for (i = 0; i < 2; i++)
		box_job_read(bj, i);
	if (cause != NULL) {
		bj->cb(NULL, cause, bj->arg);
		box_job_free(bj);
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddItemToObject(r, "stdout", box_job_text(bj, 0));
	cJSON_AddItemToObject(r, "stderr", box_job_text(bj, 1));
	v = cJSON_GetObjectItem(result, "exitCode");
	timed_out = cJSON_IsTrue(cJSON_GetObjectItem(result, "timedOut"));
	cJSON_AddNumberToObject(r, "exitCode", timed_out ? 124 :
	    cJSON_IsNumber(v) ? v->valueint : -1);
	cJSON_AddBoolToObject(r, "timedOut", timed_out);
	cJSON_AddBoolToObject(r, "truncated", bj->truncated[0] ||
	    bj->truncated[1]);
	cJSON_AddBoolToObject(r, "stdoutTruncated", bj->truncated[0]);
	cJSON_AddBoolToObject(r, "stderrTruncated", bj->truncated[1]);
	bj->cb(r, NULL, bj->arg);
	cJSON_Delete(r);
	box_job_free(bj);
}

/* The environment of a box's command. */
static char **
box_exec_env(struct box *b)
{
	char	**env, *value, *cause;
	size_t	 n = 0, len;
	cJSON	*sec;

	env = xcalloc(16 + cJSON_GetArraySize(b->secrets), sizeof *env);
	env[n++] = xstrdup(BOX_PATH);
	env[n++] = xstrdup("HOME=/home/" BOX_USER);
	env[n++] = xstrdup("USER=" BOX_USER);
	env[n++] = xstrdup("LOGNAME=" BOX_USER);
	env[n++] = xstrdup("SHELL=/bin/bash");
	env[n++] = xstrdup("LANG=C.UTF-8");
	env[n++] = xstrdup("TERM=dumb");
	env[n++] = xstrdup("DISPLAY=" BOX_DISPLAY);
	env[n++] = xstrdup("XDG_RUNTIME_DIR=" BOX_RUNDIR);
	env[n++] = xstrdup("DOCKER_HOST=unix://" BOX_ENGINE_SOCK);
	env[n++] = xstrdup("CONTAINER_HOST=unix://" BOX_ENGINE_SOCK);
	env[n++] = xstrdup("BOXWORK=/work");
	xasprintf(&env[n++], "BOX_ID=%s", b->id);
	/* The secrets named at its start, as they are now. */
	cJSON_ArrayForEach(sec, b->secrets) {
		if (!cJSON_IsString(sec))
			continue;
		cause = NULL;
		value = store_secret_get(box_store, b->tenant,
		    sec->valuestring, &len, &cause);
		if (value == NULL) {
			if (cause != NULL)
				log_warnx("box %s: %s", b->id, cause);
			free(cause);
			continue;
		}
		xasprintf(&env[n++], "%s=%s", sec->valuestring, value);
		explicit_bzero(value, len);
		free(value);
	}
	return (env);
}

/*
 * Run cmd in box b as the box user, in cwd (relative to /work, checked
 * by the caller for its form; "" for /work): cb({stdout, stderr,
 * exitCode, timedOut, truncated...}, NULL, arg) once it has ended (at
 * most timeout seconds), or at once {bgId} for a background one, or
 * cb(NULL, cause, arg).
 */
void
box_exec(struct box *b, const char *cmd, const char *cwd, int timeout,
    int background, box_exec_cb cb, void *arg)
{
	struct box_exec_args	 a;
	struct box_job		*bj;
	struct cause		 cause = { 0 };
	cJSON			*r;
	char			 rnd[9], **env;
	int			 out[2], err[2], keep[2], i;

	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
		cause_set(&cause, CAUSE_INTERNAL, "id", b->id, "pipe: %s",
		    strerror(errno));
		cb(NULL, &cause, arg);
		cause_clear(&cause);
		return;
	}
	bj = xcalloc(1, sizeof *bj);
	bj->b = b;
	bj->cb = cb;
	bj->arg = arg;
	/* (Shown by sandbox_procs: its start is enough.) */
	bj->cmd = xstrndup(cmd, BOX_CMD_KEPT);
	bj->started_ms = now_ms();
	LIST_INIT(&bj->waiters);
	b->running++;
	if (background) {
		util_random_hex(rnd, 8);
		snprintf(bj->bg, sizeof bj->bg, "bg-%s", rnd);
	}
	LIST_INSERT_HEAD(&b->jobs, bj, entry);
	env = box_exec_env(b);
	memset(&a, 0, sizeof a);
	a.pid = b->pid;
	a.container = b->container;
	a.cmd = cmd;
	a.cwd = cwd;
	a.bg = bj->bg;
	a.timeout = background ? 0 : timeout;
	a.env = env;
	keep[0] = out[1];
	keep[1] = err[1];
	bj->job = job_fork_keep("box-exec", box_exec_child, &a, keep, 2,
	    box_job_done, bj);
	for (i = 0; env[i] != NULL; i++) {
		explicit_bzero(env[i], strlen(env[i]));
		free(env[i]);
	}
	free(env);
	close(out[1]);
	close(err[1]);
	bj->fd[0] = out[0];
	bj->fd[1] = err[0];
	for (i = 0; i < 2; i++) {
		util_set_nonblock(bj->fd[i]);
		if ((bj->tail[i] = evbuffer_new()) == NULL ||
		    (bj->ev[i] = event_new(ev_base, bj->fd[i], EV_READ |
		    EV_PERSIST, box_job_read_cb, bj)) == NULL)
			fatalx("%s: event_new", __func__);
		event_add(bj->ev[i], NULL);
	}
	if (background) {
		r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "bgId", bj->bg);
		cJSON_AddStringToObject(r, "stdout", "");
		cJSON_AddStringToObject(r, "stderr", "");
		cJSON_AddNullToObject(r, "exitCode");
		bj->cb = NULL;
		cb(r, NULL, arg);
		cJSON_Delete(r);
	}
}
