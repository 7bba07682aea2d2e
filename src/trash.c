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
 * are gone, the files of sandboxes whose lock is gone, and the shared
 * bases no sandbox record names. Runs are coalesced; nothing here runs
 * on the loop but the fork.
 */

#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
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

/*
 * Child side: what could not be removed, for the answer (the first
 * TRASH_PROBLEMS_MAX of them, and how many).
 */
#define TRASH_PROBLEMS_MAX	32
static cJSON	*trash_problems;
static int	 trash_nproblems;

static void
trash_problem(const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;

	if (trash_problems == NULL)
		trash_problems = cJSON_CreateArray();
	if (trash_nproblems++ >= TRASH_PROBLEMS_MAX)
		return;
	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(trash_problems, cJSON_CreateString(msg));
	free(msg);
}

/* Child side: remove every entry of a trash directory (or orphans). */
static void
trash_dir(const char *dir, int orphans)
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
			trash_problem("cannot remove %s: %s", path,
			    strerror(errno));
		free(path);
	}
	closedir(d);
}

/* Child side: take down a sandbox's disk and directory (see disk.c). */
static void
trash_teardown(const char *id)
{
	char	*error = NULL;

	if (disk_teardown(id, &error) != 0) {
		trash_problem("%s", error);
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
    const char *pair, const char *path)
{
	char	*other, *id;
	size_t	 stem = strlen(name) - slen;

	xasprintf(&other, "%s/%.*s%s", dir, (int)stem, name, pair);
	if (access(other, F_OK) != 0 && errno == ENOENT &&
	    (path == NULL || unlink(path) == 0)) {
		id = xstrndup(name, stem);
		trash_teardown(id);
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
trash_leftover(const char *dir, const char *name)
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
			trash_teardown(name);
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
		trash_unpaired(dir, name, 4, ".lock", NULL);
	else if (len > 5 && strcmp(name + len - 5, ".json") == 0)
		trash_unpaired(dir, name, 5, ".lock", path);
	else if ((p = strstr(name, ".json.tmp-")) != NULL) {
		id = xstrndup(name, p - name);
		lock = state_lock(id);	/* none: the sandbox is gone */
		if (unlink(path) != 0 && errno != ENOENT)
			trash_problem("cannot remove %s: %s", path,
			    strerror(errno));
		state_unlock(lock);
		free(id);
	} else if (st.st_mtime + 60 > time(NULL))
		;	/* a create may be under way */
	else if (len > 5 && strcmp(name + len - 5, ".lock") == 0)
		trash_unpaired(dir, name, 5, ".json", path);
	free(path);
}

/* Whether a name is a base's: 64 lowercase hex digits. */
static int
trash_base_name(const char *name)
{
	size_t	i;

	for (i = 0; i < 64; i++) {
		if (!((name[i] >= '0' && name[i] <= '9') ||
		    (name[i] >= 'a' && name[i] <= 'f')))
			return (0);
	}
	return (name[64] == '\0');
}

/*
 * Child side: the names of the bases the sandbox records name (*n of
 * them, allocated), or -1 when a record cannot be read: then no base is
 * known to be unused.
 */
static int
trash_bases_named(char ***names, size_t *n)
{
	cJSON		*rec, *v;
	char		**ids;
	const char	*hash;
	size_t		 nids, i;
	int		 r = 0;

	*names = NULL;
	*n = 0;
	ids = state_sandbox_ids(&nids);
	for (i = 0; i < nids; i++) {
		if ((rec = state_record_read(ids[i])) == NULL) {
			if (errno != ENOENT) {
				trash_problem("keeping every base: cannot read"
				    " the record of %s: %s", ids[i],
				    strerror(errno));
				r = -1;
			}
			continue;
		}
		v = cJSON_GetObjectItem(cJSON_GetObjectItem(rec,
		    "shared_base"), "root_hash");
		hash = cJSON_GetStringValue(v);
		if (hash != NULL && strncmp(hash, "sha256:", 7) == 0) {
			*names = xreallocarray(*names, *n + 1, sizeof **names);
			(*names)[(*n)++] = xstrdup(hash + 7);
		} else {
			trash_problem("keeping every base: the record of %s"
			    " names none", ids[i]);
			r = -1;
		}
		cJSON_Delete(rec);
	}
	for (i = 0; i < nids; i++)
		free(ids[i]);
	free(ids);
	return (r);
}

/*
 * Child side: remove the bases no sandbox record names. Under the cache's
 * lock, taken exclusively and never waited for (a create holding it
 * shared will have a record when it lets go; the next run looks again),
 * each is renamed out of sight; then removed, with what a killed run
 * left.
 */
static void
trash_bases(void)
{
	struct dirent	*de;
	DIR		*d;
	char		*dir, *from, *to, **named, rnd[9];
	size_t		 nnamed, i;
	int		 lock;

	dir = state_where(STATE_BASES, NULL, NULL);
	if ((lock = state_bases_lock()) == -1) {
		trash_problem("cannot open the lock of %s: %s", dir,
		    strerror(errno));
		free(dir);
		return;
	}
	named = NULL;
	nnamed = 0;
	if (flock(lock, LOCK_EX | LOCK_NB) == 0 &&
	    trash_bases_named(&named, &nnamed) == 0 &&
	    (d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (!trash_base_name(de->d_name))
				continue;
			for (i = 0; i < nnamed; i++) {
				if (strcmp(named[i], de->d_name) == 0)
					break;
			}
			if (i < nnamed)
				continue;
			util_random_hex(rnd, 8);
			xasprintf(&from, "%s/%s", dir, de->d_name);
			xasprintf(&to, "%s/.gone-%s-%s", dir, de->d_name, rnd);
			if (rename(from, to) != 0)
				trash_problem("cannot remove %s: %s", from,
				    strerror(errno));
			free(from);
			free(to);
		}
		closedir(d);
	}
	close(lock);
	for (i = 0; i < nnamed; i++)
		free(named[i]);
	free(named);

	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strncmp(de->d_name, ".gone-", 6) != 0)
				continue;
			xasprintf(&from, "%s/%s", dir, de->d_name);
			if (tree_remove_path(from) != 0)
				trash_problem("cannot remove %s: %s", from,
				    strerror(errno));
			free(from);
		}
		closedir(d);
	}
	free(dir);
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
	cJSON		*rep;
	int		 r;

	dir = state_where(STATE_TRASH, NULL, NULL);
	trash_dir(dir, 0);
	free(dir);
	dir = state_where(STATE_STAGING, NULL, NULL);
	trash_dir(dir, 1);
	free(dir);
	dir = state_where(STATE_BASE_STAGING, NULL, NULL);
	trash_dir(dir, 1);
	free(dir);
	trash_bases();

	dir = state_where(STATE_SANDBOXES, NULL, NULL);
	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			trash_leftover(dir, de->d_name);
			if (!util_id_valid(de->d_name))
				continue;
			xasprintf(&path, "%s/%s/trash", dir, de->d_name);
			trash_dir(path, 0);
			free(path);
		}
		closedir(d);
	}
	free(dir);
	rep = cJSON_CreateObject();
	cJSON_AddItemToObject(rep, "problems", trash_problems != NULL ?
	    trash_problems : cJSON_CreateArray());
	cJSON_AddNumberToObject(rep, "count", trash_nproblems);
	trash_problems = NULL;
	r = job_answer(fd, rep, NULL);
	cJSON_Delete(rep);
	return (r);
}

static void
trash_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct trash_waiter	*w;
	cJSON			*p;
	double			 n;

	n = cJSON_GetNumberValue(cJSON_GetObjectItem(result, "count"));
	if (cause != NULL)
		log_warnx("cleaning the state directory: %s", cause->message);
	else if (n > 0) {
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(result, "problems")) {
			if (cJSON_IsString(p))
				log_warnx("cleaning the state directory: %s",
				    p->valuestring);
		}
		if (n > TRASH_PROBLEMS_MAX)
			log_warnx("cleaning the state directory: %.0f more"
			    " problems", n - TRASH_PROBLEMS_MAX);
	}
	trash_running = 0;
	/* No log of a sandbox taken down is held open any more. */
	telemetry_release();
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

