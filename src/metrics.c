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
 * The counts of this process for operators: GET /metrics in the
 * Prometheus text exposition format (version 0.0.4); transport-http.c
 * serves it. Counters are kept here as the work happens (a few additions
 * on paths that already do far more); gauges are read from their owners
 * when a scrape asks (those above this floor through op_metrics). Every
 * label value is one of ours (a tool's name from the table, a cause kind,
 * a status code, a state we write): nothing a client sends becomes a
 * series, so a client cannot grow this.
 *
 * The loop's delay is measured by a probe: a timer every
 * METRICS_PROBE_MS that notes how late it ran. A callback that holds the
 * loop for longer than the period always shows in it; a shorter one when
 * the probe fell due while it ran.
 */

#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "sandbox-mcp.h"

#define METRICS_PROBE_MS	100
#define METRICS_SLOT_SECONDS	10
#define METRICS_SLOTS		6		/* a minute of slots */
#define METRICS_TOOLS_MAX	128
#define METRICS_EVENTS_MAX	64

/* Upper bounds of the latency buckets, seconds (+Inf follows). */
static const double metrics_bounds[] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
	10, 30, 60
};
#define METRICS_NBOUNDS							\
	(sizeof metrics_bounds / sizeof metrics_bounds[0])

/* A tool call's outcome: ok, each cause kind, cancelled. */
#define METRICS_OUTCOME_OK		0
#define METRICS_OUTCOME_CANCELLED	(CAUSE_INTERNAL + 1)
#define METRICS_OUTCOMES		(CAUSE_INTERNAL + 2)

struct metrics_tool {
	const char	*name;		/* the op table's, or unknown */
	uint64_t	 outcomes[METRICS_OUTCOMES];
	uint64_t	 buckets[METRICS_NBOUNDS];	/* not cumulative */
	uint64_t	 count;
	double		 sum;
};

struct metrics_event {
	char		*name;
	uint64_t	 count;
};

static struct {
	struct metrics_tool	 tools[METRICS_TOOLS_MAX];
	size_t			 ntools;
	uint64_t		 http_status[600];
	uint64_t		 http_accepted;
	uint64_t		 docker_calls;
	uint64_t		 docker_errors;
	struct metrics_event	 events[METRICS_EVENTS_MAX];
	size_t			 nevents;
	unsigned int		 mcp_sessions[2];	/* stdio, http */
	uint64_t		 scrapes;

	struct event		*probe;
	uint64_t		 probe_due_us;
	uint64_t		 slot_max_us[METRICS_SLOTS];
	uint64_t		 slot_start[METRICS_SLOTS]; /* slot number */
	uint64_t		 started_ms;
} metrics;

static void	metrics_probe_cb(evutil_socket_t, short, void *);

void
metrics_init(void)
{
	struct timeval	tv = { 0, METRICS_PROBE_MS * 1000 };

	metrics.started_ms = now_ms();
	metrics.probe = event_new(ev_base, -1, EV_PERSIST, metrics_probe_cb,
	    NULL);
	if (metrics.probe == NULL)
		fatalx("%s: event_new", __func__);
	metrics.probe_due_us = mono_us() + METRICS_PROBE_MS * 1000;
	evtimer_add(metrics.probe, &tv);
}

/* The probe ran: note how late, in the slot of the current ten seconds. */
static void
metrics_probe_cb(evutil_socket_t fd, short events, void *arg)
{
	uint64_t	now = mono_us(), late, slot;
	size_t		i;

	late = now > metrics.probe_due_us ? now - metrics.probe_due_us : 0;
	metrics.probe_due_us = now + METRICS_PROBE_MS * 1000;
	slot = now / (METRICS_SLOT_SECONDS * 1000000ULL);
	i = slot % METRICS_SLOTS;
	if (metrics.slot_start[i] != slot) {
		metrics.slot_start[i] = slot;
		metrics.slot_max_us[i] = 0;
	}
	if (late > metrics.slot_max_us[i])
		metrics.slot_max_us[i] = late;
}

/* The longest delay in the last minute, microseconds. */
static uint64_t
metrics_delay_max(void)
{
	uint64_t	slot, max = 0;
	size_t		i;

	slot = mono_us() / (METRICS_SLOT_SECONDS * 1000000ULL);
	for (i = 0; i < METRICS_SLOTS; i++) {
		if (metrics.slot_start[i] + METRICS_SLOTS > slot &&
		    metrics.slot_max_us[i] > max)
			max = metrics.slot_max_us[i];
	}
	return (max);
}

static struct metrics_tool *
metrics_tool(const char *name)
{
	struct metrics_tool	*t;
	size_t			 i;

	for (i = 0; i < metrics.ntools; i++) {
		t = &metrics.tools[i];
		if (t->name == name || strcmp(t->name, name) == 0)
			return (t);
	}
	if (metrics.ntools == METRICS_TOOLS_MAX)
		fatalx("%s: more than %d tools", __func__, METRICS_TOOLS_MAX);
	t = &metrics.tools[metrics.ntools++];
	t->name = name;
	return (t);
}

/*
 * A tool call ended. name is the op table's (NULL for a name that is no
 * tool: counted as "unknown", never by the name sent); kind is its cause
 * (CAUSE_NONE when it answered), cancelled whether it was withdrawn.
 */
void
metrics_tool_call(const char *name, enum cause_kind kind, int cancelled,
    uint64_t usec)
{
	struct metrics_tool	*t;
	double			 s = usec / 1e6;
	size_t			 i;

	t = metrics_tool(name != NULL ? name : "unknown");
	if (cancelled)
		t->outcomes[METRICS_OUTCOME_CANCELLED]++;
	else if (kind == CAUSE_NONE)
		t->outcomes[METRICS_OUTCOME_OK]++;
	else
		t->outcomes[kind]++;
	for (i = 0; i < METRICS_NBOUNDS; i++) {
		if (s <= metrics_bounds[i]) {
			t->buckets[i]++;
			break;
		}
	}
	t->count++;
	t->sum += s;
}

void
metrics_http_response(int status)
{
	if (status >= 100 && status < 600)
		metrics.http_status[status]++;
}

void
metrics_http_accepted(void)
{
	metrics.http_accepted++;
}

/* A Docker Engine request ended; failed: no answer, or a 5xx. */
void
metrics_docker_call(int failed)
{
	metrics.docker_calls++;
	if (failed)
		metrics.docker_errors++;
}

/* An MCP session opened (1) or closed (-1); http tells the transport. */
void
metrics_mcp_session(int http, int delta)
{
	unsigned int	*n = &metrics.mcp_sessions[http ? 1 : 0];

	if (delta > 0)
		(*n)++;
	else if (*n > 0)
		(*n)--;
}

/* A telemetry event was recorded (names are the code's, a few dozen). */
void
metrics_event(const char *name)
{
	struct metrics_event	*e;
	size_t			 i;

	for (i = 0; i < metrics.nevents; i++) {
		e = &metrics.events[i];
		if (strcmp(e->name, name) == 0) {
			e->count++;
			return;
		}
	}
	if (metrics.nevents == METRICS_EVENTS_MAX)
		return;
	e = &metrics.events[metrics.nevents++];
	e->name = xstrdup(name);
	e->count = 1;
}

static uint64_t
metrics_event_count(const char *name)
{
	size_t	i;

	for (i = 0; i < metrics.nevents; i++) {
		if (strcmp(metrics.events[i].name, name) == 0)
			return (metrics.events[i].count);
	}
	return (0);
}

/* A label value as the format wants it: \, " and newline escaped. */
static void
metrics_label(struct evbuffer *out, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\')
			evbuffer_add(out, "\\\\", 2);
		else if (*v == '"')
			evbuffer_add(out, "\\\"", 2);
		else if (*v == '\n')
			evbuffer_add(out, "\\n", 2);
		else
			evbuffer_add(out, v, 1);
	}
}

static void
metrics_head(struct evbuffer *out, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(out, "# HELP sandbox_mcp_%s %s\n"
	    "# TYPE sandbox_mcp_%s %s\n", name, help, name, type);
}

/* One sample with at most one label. */
static void
metrics_sample(struct evbuffer *out, const char *name, const char *label,
    const char *value, unsigned long long n)
{
	if (label == NULL) {
		evbuffer_add_printf(out, "sandbox_mcp_%s %llu\n", name, n);
		return;
	}
	evbuffer_add_printf(out, "sandbox_mcp_%s{%s=\"", name, label);
	metrics_label(out, value);
	evbuffer_add_printf(out, "\"} %llu\n", n);
}

/* A series with one label and a value for each of its values. */
struct metrics_kv {
	const char		*value;
	unsigned long long	 n;
};

static void
metrics_labelled(struct evbuffer *out, const char *name, const char *type,
    const char *help, const char *label, const struct metrics_kv *kv,
    size_t nkv)
{
	size_t	i;

	metrics_head(out, name, type, help);
	for (i = 0; i < nkv; i++)
		metrics_sample(out, name, label, kv[i].value, kv[i].n);
}

/* A series of one sample and no label: its head, then its value. */
static void
metrics_one(struct evbuffer *out, const char *name, const char *type,
    const char *help, unsigned long long n)
{
	metrics_head(out, name, type, help);
	metrics_sample(out, name, NULL, NULL, n);
}

/* The head of a tool's sample: its name and its tool label, open. */
static void
metrics_tool_open(struct evbuffer *out, const char *series, const char *tool)
{
	evbuffer_add_printf(out, "sandbox_mcp_%s{tool=\"", series);
	metrics_label(out, tool);
}

static void
metrics_tools_render(struct evbuffer *out)
{
	struct metrics_tool	*t;
	uint64_t		 cum;
	size_t			 i, j;
	const char		*outcome;

	metrics_head(out, "tool_calls_total", "counter",
	    "Tool calls answered, by tool and outcome (ok, cancelled, or the"
	    " error kind).");
	for (i = 0; i < metrics.ntools; i++) {
		t = &metrics.tools[i];
		for (j = 0; j < METRICS_OUTCOMES; j++) {
			if (t->outcomes[j] == 0)
				continue;
			if (j == METRICS_OUTCOME_OK)
				outcome = "ok";
			else if (j == METRICS_OUTCOME_CANCELLED)
				outcome = "cancelled";
			else
				outcome = cause_kind_name(j);
			metrics_tool_open(out, "tool_calls_total", t->name);
			evbuffer_add_printf(out, "\",outcome=\"%s\"} %llu\n",
			    outcome, (unsigned long long)t->outcomes[j]);
		}
	}
	metrics_head(out, "tool_call_duration_seconds", "histogram",
	    "How long tool calls took, from the request to the answer.");
	for (i = 0; i < metrics.ntools; i++) {
		t = &metrics.tools[i];
		cum = 0;
		for (j = 0; j < METRICS_NBOUNDS; j++) {
			cum += t->buckets[j];
			metrics_tool_open(out,
			    "tool_call_duration_seconds_bucket", t->name);
			evbuffer_add_printf(out, "\",le=\"%g\"} %llu\n",
			    metrics_bounds[j], (unsigned long long)cum);
		}
		metrics_tool_open(out, "tool_call_duration_seconds_bucket",
		    t->name);
		evbuffer_add_printf(out, "\",le=\"+Inf\"} %llu\n",
		    (unsigned long long)t->count);
		metrics_tool_open(out, "tool_call_duration_seconds_sum",
		    t->name);
		evbuffer_add_printf(out, "\"} %.6f\n", t->sum);
		metrics_tool_open(out, "tool_call_duration_seconds_count",
		    t->name);
		evbuffer_add_printf(out, "\"} %llu\n",
		    (unsigned long long)t->count);
	}
}

/* The sandboxes of the state directory by the state their record has. */
static void
metrics_sandboxes_render(struct evbuffer *out)
{
	static const char *known[] = { "creating", "ready", "failed",
	    "destroying" };
	unsigned long long	 n[4] = { 0 }, other = 0;
	cJSON			*rec, *state;
	char			**ids;
	size_t			 nids, i, j;

	ids = state_sandbox_ids(&nids);
	for (i = 0; i < nids; i++) {
		if ((rec = state_record_read(ids[i])) != NULL) {
			state = cJSON_GetObjectItem(rec, "state");
			for (j = 0; j < 4; j++) {
				if (cJSON_IsString(state) && strcmp(
				    state->valuestring, known[j]) == 0)
					break;
			}
			if (j < 4)
				n[j]++;
			else
				other++;
			cJSON_Delete(rec);
		}
		free(ids[i]);
	}
	free(ids);
	metrics_head(out, "sandboxes", "gauge",
	    "Sandboxes in the state directory, by the state of their"
	    " record.");
	for (j = 0; j < 4; j++)
		metrics_sample(out, "sandboxes", "state", known[j], n[j]);
	metrics_sample(out, "sandboxes", "state", "other", other);
}

/* The whole exposition, into out; c holds the gauges of the floors above. */
void
metrics_render(struct evbuffer *out, const struct metrics_counts *mc)
{
	struct metrics_counts	 c = *mc;
	size_t			 i;

	metrics.scrapes++;
	metrics_head(out, "build_info", "gauge",
	    "The version of the server (always 1).");
	evbuffer_add_printf(out, "sandbox_mcp_build_info{version=\"%s\"} 1\n",
	    PACKAGE_VERSION);
	metrics_head(out, "start_time_seconds", "gauge",
	    "When the process started, seconds since the Unix epoch.");
	evbuffer_add_printf(out, "sandbox_mcp_start_time_seconds %.3f\n",
	    metrics.started_ms / 1e3);

	metrics_tools_render(out);

	metrics_labelled(out, "mcp_sessions", "gauge",
	    "MCP sessions open, by transport.", "transport",
	    (struct metrics_kv[]){ { "stdio", metrics.mcp_sessions[0] },
	    { "http", metrics.mcp_sessions[1] } }, 2);

	metrics_one(out, "http_connections", "gauge",
	    "HTTP connections open.",
	    c.http_connections);
	metrics_one(out, "http_connections_accepted_total", "counter",
	    "HTTP connections accepted.",
	    metrics.http_accepted);
	metrics_head(out, "http_responses_total", "counter",
	    "HTTP responses sent, by status code (a stream counts when its"
	    " head is sent).");
	for (i = 100; i < 600; i++) {
		if (metrics.http_status[i] != 0)
			evbuffer_add_printf(out, "sandbox_mcp_http_responses_"
			    "total{code=\"%zu\"} %llu\n", i,
			    (unsigned long long)metrics.http_status[i]);
	}

	metrics_sandboxes_render(out);

	job_metrics(&c);
	metrics_labelled(out, "workspace_sessions", "gauge",
	    "Workspace sessions of this process: managed (made by a tool),"
	    " automatic (one per command or file change), spare (built"
	    " ahead).", "kind", (struct metrics_kv[]){
	    { "managed", c.sessions_managed },
	    { "automatic", c.sessions_automatic },
	    { "spare", c.sessions_spare } }, 3);
	metrics_one(out, "commands_running", "gauge",
	    "Commands running in sandboxes.",
	    c.commands_running);

	metrics_labelled(out, "publishes_total", "counter",
	    "Workspace sessions and file changes published as a layer, or"
	    " rejected whole.", "outcome", (struct metrics_kv[]){
	    { "published", metrics_event_count("layer.published") },
	    { "rejected", metrics_event_count("publish.rejected") } }, 2);
	metrics_one(out, "squashes_total", "counter",
	    "Squash runs that folded layers (asked for or automatic).",
	    metrics_event_count("layer.squashed"));
	metrics_one(out, "exports_total", "counter",
	    "Exports of a sandbox's changes that finished.",
	    metrics_event_count("export.completed"));
	metrics_head(out, "events_total", "counter",
	    "Telemetry events recorded by this process, by name.");
	for (i = 0; i < metrics.nevents; i++)
		metrics_sample(out, "events_total", "name",
		    metrics.events[i].name, metrics.events[i].count);

	metrics_one(out, "docker_requests_total", "counter",
	    "Requests to the Docker Engine that ended.",
	    metrics.docker_calls);
	metrics_one(out, "docker_request_errors_total", "counter",
	    "Requests to the Docker Engine that got no answer or a 5xx.",
	    metrics.docker_errors);
	metrics_one(out, "docker_requests_in_flight", "gauge",
	    "Requests to the Docker Engine under way.",
	    (unsigned long long)docker_http_inflight());

	metrics_labelled(out, "helper_processes", "gauge",
	    "Helper children: running, queued for a slot, and forkers (one"
	    " per sandbox that publishes).", "state", (struct metrics_kv[]){
	    { "running", c.helpers_running }, { "queued", c.helpers_queued },
	    { "forker", c.forkers } }, 3);

	metrics_head(out, "loop_delay_max_seconds", "gauge",
	    "The longest the event loop ran past a due timer in the last"
	    " minute (a probe every 0.1 s: any callback longer than that"
	    " shows).");
	evbuffer_add_printf(out, "sandbox_mcp_loop_delay_max_seconds %.6f\n",
	    metrics_delay_max() / 1e6);
	metrics_one(out, "scrapes_total", "counter",
	    "Scrapes of this endpoint answered.",
	    metrics.scrapes);
}
