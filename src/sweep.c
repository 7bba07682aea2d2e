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
 * Sweeping a dead container's cgroups. Our session processes live in a
 * sandbox's container cgroups but in PID namespaces of their own, so
 * the container's death does not end them; once their sessions are
 * ended, whatever is still in the cgroups is killed here: each round
 * writes cgroup.kill where the kernel has it, freezes the cgroups (the
 * v1 freezer, or cgroup.freeze) so that nothing forks past the round,
 * kills each listed process and thaws. Rounds repeat every SWEEP_MS, at
 * most SWEEP_ROUNDS times, until the cgroups are empty; then the cgroup
 * directories, which the Engine could not remove while our processes
 * were in them, are removed. Only cgroups whose path names the container
 * are ever touched, and each round is a few writes and reads of cgroupfs
 * files: nothing waits.
 */

#include "config.h"

#include <sys/syscall.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "sandbox-mcp.h"

#define SWEEP_MS	50
#define SWEEP_ROUNDS	40
#define SWEEP_PIDS	8192	/* read from one cgroup in a round */

struct sweep {
	char			 id[65];
	char			**dirs;		/* the cgroups */
	size_t			 n;
	int			 round;
	struct event		*ev;
	LIST_ENTRY(sweep)	 entry;
};
static LIST_HEAD(, sweep) sweeps = LIST_HEAD_INITIALIZER(sweeps);

/* Up to max pids of a cgroup; returns how many. */
static size_t
sweep_pids(const char *dir, pid_t *pids, size_t max)
{
	FILE	*f;
	char	*procs;
	long	 pid;
	size_t	 n = 0;

	xasprintf(&procs, "%s/cgroup.procs", dir);
	f = fopen(procs, "re");
	free(procs);
	if (f == NULL)
		return (0);
	while (n < max && fscanf(f, "%ld", &pid) == 1) {
		if (pid > 0)
			pids[n++] = (pid_t)pid;
	}
	fclose(f);
	return (n);
}

/*
 * One round. A pid is signalled through a pidfd opened while it was
 * listed, and only if it is listed still after the pidfd was opened: a
 * pid that a process outside took meanwhile is never hit. Returns the
 * most processes found in one cgroup.
 */
static size_t
sweep_once(struct sweep *sw)
{
	pid_t	*pids, *again;
	int	*fds;
	size_t	 i, j, k, n, m, found = 0, killed = 0;

	pids = xcalloc(SWEEP_PIDS, sizeof *pids);
	again = xcalloc(SWEEP_PIDS, sizeof *again);
	fds = xcalloc(SWEEP_PIDS, sizeof *fds);
	for (i = 0; i < sw->n; i++) {
		cgroup_write(sw->dirs[i], "cgroup.kill", "1");
		cgroup_write(sw->dirs[i], "freezer.state", "FROZEN");
		cgroup_write(sw->dirs[i], "cgroup.freeze", "1");
	}
	for (i = 0; i < sw->n; i++) {
		n = sweep_pids(sw->dirs[i], pids, SWEEP_PIDS);
		for (j = 0; j < n; j++)
			fds[j] = (int)syscall(SYS_pidfd_open, pids[j], 0);
		m = sweep_pids(sw->dirs[i], again, SWEEP_PIDS);
		for (j = 0; j < n; j++) {
			if (fds[j] == -1)
				continue;
			for (k = 0; k < m; k++) {
				if (again[k] == pids[j])
					break;
			}
			if (k < m && syscall(SYS_pidfd_send_signal, fds[j],
			    SIGKILL, NULL, 0) == 0)
				killed++;
			close(fds[j]);
		}
		if (n > found)
			found = n;
	}
	for (i = 0; i < sw->n; i++) {
		cgroup_write(sw->dirs[i], "freezer.state", "THAWED");
		cgroup_write(sw->dirs[i], "cgroup.freeze", "0");
	}
	if (found != 0)
		log_debug("sandbox %s: %zu processes left in the cgroups of"
		    " its container (%zu signals)", sw->id, found, killed);
	free(fds);
	free(again);
	free(pids);
	return (found);
}

static void
sweep_free(struct sweep *sw)
{
	size_t	i;

	LIST_REMOVE(sw, entry);
	if (sw->ev != NULL)
		event_free(sw->ev);
	for (i = 0; i < sw->n; i++)
		free(sw->dirs[i]);
	free(sw->dirs);
	free(sw);
}

/* A round; once the cgroups are empty, remove them. */
static void
sweep_cb(evutil_socket_t fd, short events, void *arg)
{
	struct sweep	*sw = arg;
	struct timeval	 tv = { 0, SWEEP_MS * 1000 };
	size_t		 i, found;

	found = sweep_once(sw);
	if (found == 0) {
		for (i = 0; i < sw->n; i++) {
			if (rmdir(sw->dirs[i]) != 0 && errno != ENOENT)
				log_debug("sandbox %s: cannot remove %s: %s",
				    sw->id, sw->dirs[i], strerror(errno));
		}
		sweep_free(sw);
		return;
	}
	if (++sw->round >= SWEEP_ROUNDS) {
		log_warnx("sandbox %s: %zu processes are still in the cgroups"
		    " of its dead container", sw->id, found);
		sweep_free(sw);
		return;
	}
	evtimer_add(sw->ev, &tv);
}

/*
 * Kill what is left in the cgroups (their cgroup.procs paths, taken
 * over) of sandbox id's dead container cid; the first round runs now.
 */
void
sweep_start(const char *id, const char *cid, char **procs, size_t n)
{
	struct sweep	*sw;
	char		*slash;
	size_t		 i;

	sw = xcalloc(1, sizeof *sw);
	strlcpy(sw->id, id, sizeof sw->id);
	for (i = 0; i < n; i++) {
		if (cid == NULL || strlen(cid) < 12 ||
		    strstr(procs[i], cid) == NULL ||
		    (slash = strrchr(procs[i], '/')) == NULL) {
			free(procs[i]);
			continue;
		}
		*slash = '\0';		/* the cgroup's directory */
		sw->dirs = xreallocarray(sw->dirs, sw->n + 1,
		    sizeof *sw->dirs);
		sw->dirs[sw->n++] = procs[i];
	}
	free(procs);
	if ((sw->ev = evtimer_new(ev_base, sweep_cb, sw)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	LIST_INSERT_HEAD(&sweeps, sw, entry);
	if (sw->n == 0) {
		sweep_free(sw);
		return;
	}
	sweep_cb(-1, 0, sw);
}
