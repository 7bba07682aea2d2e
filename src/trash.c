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
 * The trash of the state directory. What goes is first renamed into a
 * trash directory (the shared one, or a sandbox's own on its disk) on the
 * way to an answer; a child process removes it later, with what killed
 * processes left behind: staging copies and disk images of owners that
 * are gone, and the files of sandboxes whose lock is gone. Runs are
 * coalesced; nothing here runs on the loop but the fork.
 */

#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "sandbox-mcp.h"

static int	trash_running;
static int	trash_again;

/* Who waits for a run: the one running now, or the next. */
struct trash_waiter {
	void			(*cb)(void *);
	void			*arg;
	TAILQ_ENTRY(trash_waiter) entry;
};
TAILQ_HEAD(trash_waiters, trash_waiter);
static struct trash_waiters	trash_now = TAILQ_HEAD_INITIALIZER(trash_now);
static struct trash_waiters	trash_next = TAILQ_HEAD_INITIALIZER(trash_next);

/* Whether a staging entry (PID-START-...) belongs to a process gone. */
static int
trash_orphan(const char *name)
{
	long			 pid;
	unsigned long long	 start;

	return (sscanf(name, "%ld-%llu-", &pid, &start) == 2 &&
	    state_process_start(pid) != start);
}

/* Child side: remove every entry of a trash directory (or orphans). */
static void
trash_dir(const char *dir, int orphans, int fd)
{
	struct dirent	*de;
	DIR		*d;
	char		*path;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (orphans && !trash_orphan(de->d_name))
			continue;
		xasprintf(&path, "%s/%s", dir, de->d_name);
		if (tree_remove_path(path) != 0)
			dprintf(fd, "cannot remove %s: %s\n", path,
			    strerror(errno));
		free(path);
	}
	closedir(d);
}

/* Child side: take down a sandbox's disk and directory (see disk.c). */
static void
trash_teardown(const char *id, int fd)
{
	char	*error = NULL;

	if (disk_teardown(id, &error) != 0) {
		dprintf(fd, "%s\n", error);
		free(error);
	}
}

/*
 * Child side: name, a file of dir ending in a suffix of slen bytes, has
 * no companion (the same stem ending in pair): path removed first, when
 * given, then what is left of that sandbox taken down.
 */
static void
trash_unpaired(const char *dir, const char *name, size_t slen,
    const char *pair, const char *path, int fd)
{
	char	*other, *id;
	size_t	 stem = strlen(name) - slen;

	xasprintf(&other, "%s/%.*s%s", dir, (int)stem, name, pair);
	if (access(other, F_OK) != 0 && errno == ENOENT &&
	    (path == NULL || unlink(path) == 0)) {
		id = xstrndup(name, stem);
		trash_teardown(id, fd);
		free(id);
	}
	free(other);
}

/*
 * Child side: what is left beside the sandbox directories of a sandbox
 * whose lock is gone (destroyed, or its process killed while it made or
 * removed it). The lock is made first and removed just before the
 * record, and the record is written right after the lock, so an image,
 * a directory or a record without a lock, or a lock without a record
 * for a minute, is such a leftover, as is a record's temporary file
 * that no one writes (records are written under the lock).
 */
static void
trash_leftover(const char *dir, const char *name, int fd)
{
	struct stat	 st;
	char		*path, *other, *legacy, *id, *p;
	size_t		 len = strlen(name);
	int		 lock;

	xasprintf(&path, "%s/%s", dir, name);
	if (lstat(path, &st) != 0) {
		free(path);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		/* Not a directory of an earlier version, with its record. */
		xasprintf(&other, "%s.lock", path);
		xasprintf(&legacy, "%s/record.json", path);
		if (util_id_valid(name) && access(other, F_OK) != 0 &&
		    errno == ENOENT && access(legacy, F_OK) != 0 &&
		    errno == ENOENT)
			trash_teardown(name, fd);
		free(legacy);
		free(other);
		free(path);
		return;
	}
	if (!S_ISREG(st.st_mode)) {
		free(path);
		return;
	}
	if (len > 4 && strcmp(name + len - 4, ".img") == 0)
		trash_unpaired(dir, name, 4, ".lock", NULL, fd);
	else if (len > 5 && strcmp(name + len - 5, ".json") == 0)
		trash_unpaired(dir, name, 5, ".lock", path, fd);
	else if ((p = strstr(name, ".json.tmp-")) != NULL) {
		id = xstrndup(name, p - name);
		lock = state_lock(id);	/* none: the sandbox is gone */
		if (unlink(path) != 0 && errno != ENOENT)
			dprintf(fd, "cannot remove %s: %s\n", path,
			    strerror(errno));
		state_unlock(lock);
		free(id);
	} else if (st.st_mtime + 60 > time(NULL))
		;	/* a create may be under way */
	else if (len > 5 && strcmp(name + len - 5, ".lock") == 0)
		trash_unpaired(dir, name, 5, ".json", path, fd);
	free(path);
}

/*
 * The child: remove the trash (the shared one and each sandbox's own),
 * the staging copies and images of dead owners, and what killed
 * processes left beside the sandbox directories.
 */
static int
trash_child(void *arg, int fd)
{
	struct dirent	*de;
	DIR		*d;
	char		*dir, *path;

	dir = state_where(STATE_TRASH, NULL, NULL);
	trash_dir(dir, 0, fd);
	free(dir);
	dir = state_where(STATE_STAGING, NULL, NULL);
	trash_dir(dir, 1, fd);
	free(dir);
	dir = state_where(STATE_BASE_STAGING, NULL, NULL);
	trash_dir(dir, 1, fd);
	free(dir);

	dir = state_where(STATE_SANDBOXES, NULL, NULL);
	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return (0);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		trash_leftover(dir, de->d_name, fd);
		if (!util_id_valid(de->d_name))
			continue;
		xasprintf(&path, "%s/%s/trash", dir, de->d_name);
		trash_dir(path, 0, fd);
		free(path);
	}
	closedir(d);
	free(dir);
	return (0);
}

static void
trash_done(int status, struct evbuffer *report, void *arg)
{
	struct trash_waiter	*w;
	size_t			 len = evbuffer_get_length(report);

	if (len != 0)
		log_warnx("cleaning the state directory: %.*s", (int)len,
		    (const char *)evbuffer_pullup(report, len));
	trash_running = 0;
	while ((w = TAILQ_FIRST(&trash_now)) != NULL) {
		TAILQ_REMOVE(&trash_now, w, entry);
		w->cb(w->arg);
		free(w);
	}
	if (trash_again) {
		trash_again = 0;
		trash_empty();
	}
}

static struct event	*trash_timer;

static void
trash_timer_cb(evutil_socket_t fd, short events, void *arg)
{
	trash_empty();
}

/*
 * Empty the trash a little later: what ends often (sessions) batches its
 * removals, and the process that does them is not forked on the way to
 * an answer.
 */
void
trash_soon(void)
{
	struct timeval	tv = { 0, 200000 };

	if (trash_timer == NULL && (trash_timer = evtimer_new(ev_base,
	    trash_timer_cb, NULL)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	if (!evtimer_pending(trash_timer, NULL))
		evtimer_add(trash_timer, &tv);
}

/*
 * Remove what is in the trash (and staging copies whose process is gone)
 * in a child process; runs are coalesced.
 */
void
trash_empty(void)
{
	if (trash_running) {
		trash_again = 1;
		return;
	}
	trash_running = 1;
	TAILQ_CONCAT(&trash_now, &trash_next, entry);
	job_fork("trash", trash_child, NULL, trash_done, NULL);
}

/*
 * Empty the trash, and call cb(arg) once a run that began after this
 * call has ended: what was put in the trash before it is gone by then
 * (a sandbox's disk taken down, say).
 */
void
trash_empty_then(void (*cb)(void *), void *arg)
{
	struct trash_waiter	*w;

	w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->arg = arg;
	TAILQ_INSERT_TAIL(&trash_next, w, entry);
	trash_empty();
}

