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
 * The process: the event loop, signals, and the decision to exit once no
 * front end is left to serve.
 */

#include "config.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <signal.h>
#include <stdlib.h>

#include <event2/event.h>

#include "sandbox-mcp.h"

struct event_base	*ev_base;
struct cfg		*cfg;
int			 opt_sets;

static struct event	*proc_sigint, *proc_sigterm, *proc_sighup, *proc_sigchld;
static struct rlimit	 proc_nofile;	/* as we were started */
static int		 proc_nofile_raised;
static unsigned int	 proc_holds;	/* front ends still serving */
static void		(*proc_stop)(void); /* ends them, on a signal */
static void		(*proc_reload)(void); /* on SIGHUP */

/* libevent's own warnings, into our log. */
static void
proc_event_log_cb(int severity, const char *msg)
{
	if (severity >= EVENT_LOG_WARN)
		log_warnx("libevent: %s", msg);
	else
		log_debug("libevent: %s", msg);
}

static void
proc_signal_cb(evutil_socket_t sig, short events, void *arg)
{
	switch (sig) {
	case SIGCHLD:
		job_reap();
		break;
	case SIGHUP:
		if (proc_reload != NULL)
			proc_reload();
		else
			log_info("SIGHUP ignored: nothing to reload");
		break;
	case SIGINT:
	case SIGTERM:
		log_info("%s received, exiting", sig == SIGINT ? "SIGINT" :
		    "SIGTERM");
		if (proc_stop != NULL)
			proc_stop();
		event_base_loopexit(ev_base, NULL);
		break;
	}
}

/*
 * Raise the soft limit on open files to the hard one: every HTTP
 * connection, Docker request, command pipe and session socket is a
 * descriptor, and the usual soft limit of 1024 is reached by a few
 * hundred sessions. The limit we were started with is kept for commands
 * (proc_nofile_restore).
 */
static void
proc_nofile_raise(void)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &proc_nofile) != 0) {
		log_warn("getrlimit RLIMIT_NOFILE");
		return;
	}
	rl = proc_nofile;
	if (rl.rlim_cur == rl.rlim_max) {
		log_debug("open files limit %llu, the hard limit",
		    (unsigned long long)rl.rlim_cur);
		return;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		log_warn("cannot raise the open files limit from %llu to %llu",
		    (unsigned long long)proc_nofile.rlim_cur,
		    (unsigned long long)rl.rlim_max);
		return;
	}
	proc_nofile_raised = 1;
	log_debug("open files limit %llu raised to %llu",
	    (unsigned long long)proc_nofile.rlim_cur,
	    (unsigned long long)rl.rlim_cur);
}

/*
 * Give a command the open files limit the server was started with:
 * programs that select(2) or close every descriptor up to the limit
 * expect the usual figure. A bare system call, for a child that shares
 * our memory until it execs.
 */
void
proc_nofile_restore(void)
{
	if (proc_nofile_raised)
		(void)setrlimit(RLIMIT_NOFILE, &proc_nofile);
}

/*
 * Create the event loop; SIGPIPE is ignored so writes report EPIPE, and
 * SIGCHLD is watched from the start so no child goes unreaped.
 */
void
proc_init(void)
{
	proc_nofile_raise();
	signal(SIGPIPE, SIG_IGN);
	/* Sessions' init processes are adopted by us when their holder ends. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		log_warn("cannot become a subreaper");
	event_set_log_callback(proc_event_log_cb);
	if ((ev_base = event_base_new()) == NULL)
		fatalx("cannot create the event loop");
	proc_sigchld = evsignal_new(ev_base, SIGCHLD, proc_signal_cb, NULL);
	if (proc_sigchld == NULL || evsignal_add(proc_sigchld, NULL) != 0)
		fatalx("cannot watch SIGCHLD");
}

/* Run the loop until the front ends are done or a signal ends it. */
void
proc_loop(void)
{
	proc_sigint = evsignal_new(ev_base, SIGINT, proc_signal_cb, NULL);
	proc_sigterm = evsignal_new(ev_base, SIGTERM, proc_signal_cb, NULL);
	proc_sighup = evsignal_new(ev_base, SIGHUP, proc_signal_cb, NULL);
	if (proc_sigint == NULL || proc_sigterm == NULL || proc_sighup == NULL)
		fatalx("cannot watch signals");
	evsignal_add(proc_sigint, NULL);
	evsignal_add(proc_sigterm, NULL);
	evsignal_add(proc_sighup, NULL);

	event_base_dispatch(ev_base);

	if (proc_stop != NULL)
		proc_stop();
	event_free(proc_sigint);
	event_free(proc_sigterm);
	event_free(proc_sighup);
	event_free(proc_sigchld);
}

/*
 * The front ends hold the process while they serve and release it when
 * done; the loop ends with the last release. Front ends are started and
 * stopped by main, which registers how to stop them on a signal: this
 * file calls none of them.
 */
void
proc_hold(void)
{
	proc_holds++;
}

void
proc_release(void)
{
	if (proc_holds > 0 && --proc_holds == 0)
		event_base_loopexit(ev_base, NULL);
}

void
proc_set_stop(void (*stop)(void))
{
	proc_stop = stop;
}

void
proc_set_reload(void (*reload)(void))
{
	proc_reload = reload;
}
