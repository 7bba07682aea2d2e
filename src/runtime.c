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
 * What runs in a sandbox, as a whole: the top of the engine, called by
 * the door and by main, never by the files below it. A sandbox being
 * destroyed, or whose container died, or whose record another process
 * removed, has its commands and this process's sessions and zygote in it
 * ended here, in that order; at start, what its directory holds of them
 * is recovered here, each part by the file that owns its format.
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define RUNTIME_SWEEP_SECONDS	5

static struct event	*runtime_sweep_ev;

/*
 * End what runs in sandbox id before it is destroyed: the sessions of
 * this process, then its commands (which say so at the end of their
 * output).
 */
void
runtime_end(const char *id)
{
	char	*why, **procs;
	size_t	 n, i;

	xasprintf(&why, "sandbox %s is being destroyed", id);
	procs = session_forget(id, "sandbox destroyed", why, &n);
	for (i = 0; i < n; i++)
		free(procs[i]);
	free(procs);
	free(why);
	command_forget_sandbox(id);
	squash_forget(id);
	export_forget(id);
}

/*
 * The container cid of sandbox id died or went (sandbox.c watches): its
 * sessions end for reason, its commands with why, and what is left in
 * its cgroups is killed.
 */
void
runtime_lost(const char *id, const char *cid, const char *reason,
    const char *why)
{
	char	**procs;
	size_t	  n;

	procs = session_forget(id, reason, why, &n);
	if (procs != NULL)
		sweep_start(id, cid, procs, n);
}

/*
 * At start, inside a sandbox's directory: the stack first (a publish a
 * crash cut is put in place before anything reads the manifest), then
 * sessions, commands, staging.
 */
void
runtime_recover(const char *id)
{
	layer_recover(id);
	session_recover(id);
	command_recover(id);
	squash_reclaim(id, NULL, 1);	/* what a squash left behind */
}

/*
 * Every few seconds: a sandbox whose record has gone (another process
 * destroyed it) takes our sessions, zygote and commands in it along.
 */
static void
runtime_sweep_cb(evutil_socket_t fd, short events, void *arg)
{
	char	**ids;
	size_t	  n, i;

	ids = zygote_ids(&n);
	for (i = 0; i < n; i++) {
		if (state_record_gone(ids[i])) {
			log_info("sandbox %s was destroyed: ending our sessions"
			    " in it", ids[i]);
			runtime_end(ids[i]);
			job_sandbox_gone(ids[i]);
		}
		free(ids[i]);
	}
	free(ids);
}

/*
 * Whether the helpers' queue is full (limit helper-queue): then cause
 * is server_busy, for the caller to answer before it queues any work.
 */
int
runtime_helpers_busy(struct cause *cause)
{
	if (!job_helper_busy())
		return (0);
	cause_set(cause, CAUSE_BUSY, "limit", "helper-queue", "the server"
	    " has too many publishes and file operations waiting (limit"
	    " helper-queue); try again shortly");
	return (1);
}

/* Start watching for sandboxes that other processes destroy. */
void
runtime_init(void)
{
	struct timeval	tv = { RUNTIME_SWEEP_SECONDS, 0 };

	/* Publishing helpers are born confined to their sandbox's stack. */
	job_forker_view(layer_confine);
	squash_init();
	if (runtime_sweep_ev != NULL)
		return;
	runtime_sweep_ev = event_new(ev_base, -1, EV_PERSIST,
	    runtime_sweep_cb, NULL);
	if (runtime_sweep_ev == NULL)
		fatalx("%s: event_new", __func__);
	evtimer_add(runtime_sweep_ev, &tv);
}
