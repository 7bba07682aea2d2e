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
 * The state directory: where each piece of state lives, sandbox records
 * written atomically, the per-sandbox lock that makes a read-check-write
 * of a record one step for every process sharing the directory, and the
 * liveness of the process that owns a transition.
 *
 *	<state>/sandboxes/<id>.lock		flock(2) target; made first
 *						(it reserves the id), removed
 *						just before the record
 *	<state>/sandboxes/<id>.json		the record
 *	<state>/sandboxes/<id>.img		the sandbox's disk (disk.c)
 *	<state>/sandboxes/<id>/			the sandbox's directory, where
 *						its disk is mounted: all it
 *						makes grow lives below
 *	<state>/sandboxes/<id>/telemetry/	the sandbox's telemetry
 *	<state>/sandboxes/<id>/trash/		its scratch to remove (on its
 *						own file system: renames do
 *						not cross file systems)
 *	<state>/sandboxes/.trash/		directories of destroyed
 *						sandboxes
 *	<state>/sandboxes/.staging/		disk images being made
 *	<state>/base-cache/<hex>/		shared bases by root hash
 *	<state>/base-cache/.staging/		copies in progress
 *	<state>/.room				the room lock (state_room_lock)
 *	<state>/base-cache/.lock		held by creates, taken by the
 *						sweep of unused bases
 *	<state>/base-cache/.gone-<hex>-<rnd>/	unused bases being removed
 *	<state>/telemetry/			telemetry of no sandbox
 *	<state>/helper-groups/<id>		a mark: sandbox id's helper
 *						control group is ours (cgroup.c)
 *	<state>/sandboxes/<id>/sessions/<ws>/	a workspace session's lease,
 *						upper and work directories
 *	<state>/sandboxes/<id>/commands/<pid>-<start>/<cmd>/
 *						transcripts of a process's
 *						commands
 *	<state>/sandboxes/<id>/stack/		manifest.json, .lock, layers/
 *						and staging/ (layer.c)
 *	<state>/sandboxes/<id>/audit/		blame records (audit.c)
 *	<state>/boxes/<id>.img			a box's disk (disk.c), and
 *	<state>/boxes/<id>/			where it is mounted: work/
 *						(BOXWORK) and home/ (the box
 *						user's, with its container
 *						engine's storage) (box.c)
 *
 * The record and the lock stay on the state directory's own file system,
 * so a sandbox whose disk is full or not mounted still has a record that
 * can change (to failed, to stopping) and be listed.
 *
 * Locks are held for a read and a write of one small file, never across
 * a Docker call or any wait.
 */

#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sandbox-mcp.h"

#define STATE_RECORD_MAX	(256 * 1024)

static unsigned long long	state_self_start;
static pid_t			state_self_pid;

/*
 * Where each place of the layout is, relative to the state directory
 * (a sandbox's places take its id), in enum state_place order. Nothing
 * outside this file spells a path of the state directory.
 */
static const char *state_places[] = {
	"sandboxes",				/* STATE_SANDBOXES */
	"sandboxes/%s",				/* STATE_SANDBOX */
	"sandboxes/%s.img",			/* STATE_IMAGE */
	"sandboxes/.staging",			/* STATE_STAGING */
	"sandboxes/.trash",			/* STATE_TRASH */
	"base-cache",				/* STATE_BASES */
	"base-cache/.staging",			/* STATE_BASE_STAGING */
	"sandboxes/%s/sessions",		/* STATE_SESSIONS */
	"sandboxes/%s/commands",		/* STATE_COMMANDS */
	"sandboxes/%s/stack",			/* STATE_STACK */
	"sandboxes/%s/stack/layers",		/* STATE_LAYERS */
	"sandboxes/%s/stack/staging",		/* STATE_STACK_STAGING */
	"sandboxes/%s/audit",			/* STATE_AUDIT */
	"networks",				/* STATE_NETWORKS */
};

/*
 * The path of a place of the state directory (id: the sandbox's, for a
 * sandbox's place), and of a name under it when fmt is not NULL; the
 * caller frees it.
 */
char *
state_where(enum state_place place, const char *id, const char *fmt, ...)
{
	char	*base, *name, *path;
	va_list	 ap;

	if ((unsigned int)place >= sizeof state_places /
	    sizeof state_places[0])
		fatalx("%s: place %d", __func__, place);
	if (strstr(state_places[place], "%s") != NULL) {
		if (id == NULL)
			fatalx("%s: place %d needs a sandbox", __func__, place);
		/* A box's disk and its mount are apart from the sandboxes. */
		if (strncmp(id, "box-", 4) == 0 && (place == STATE_SANDBOX ||
		    place == STATE_IMAGE))
			xasprintf(&base, place == STATE_SANDBOX ? "boxes/%s" :
			    "boxes/%s.img", id);
		else
			xasprintf(&base, state_places[place], id);
	} else
		base = xstrdup(state_places[place]);
	if (fmt == NULL) {
		xasprintf(&path, "%s/%s", cfg->state_dir, base);
		free(base);
		return (path);
	}
	va_start(ap, fmt);
	xvasprintf(&name, fmt, ap);
	va_end(ap);
	xasprintf(&path, "%s/%s/%s", cfg->state_dir, base, name);
	free(name);
	free(base);
	return (path);
}

/* A path under the state directory; the caller frees it (this file). */
char *
state_path(const char *fmt, ...)
{
	char	*rel, *path;
	va_list	 ap;

	va_start(ap, fmt);
	xvasprintf(&rel, fmt, ap);
	va_end(ap);
	xasprintf(&path, "%s/%s", cfg->state_dir, rel);
	free(rel);
	return (path);
}

/*
 * Sandboxes made before records moved beside their directories keep
 * them inside (record.json): move each out, with a lock and a trash.
 */
static void
state_migrate(void)
{
	struct dirent	*de;
	DIR		*d;
	char		*dir, *from, *to;
	int		 fd;

	dir = state_path("sandboxes");
	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !util_id_valid(de->d_name))
			continue;
		xasprintf(&from, "%s/%s/record.json", dir, de->d_name);
		xasprintf(&to, "%s/%s.json", dir, de->d_name);
		if (access(from, F_OK) == 0 && access(to, F_OK) != 0) {
			free(to);
			xasprintf(&to, "%s/%s.lock", dir, de->d_name);
			if ((fd = open(to, O_RDWR | O_CREAT | O_CLOEXEC,
			    0600)) != -1)
				close(fd);
			free(to);
			xasprintf(&to, "%s/%s/trash", dir, de->d_name);
			mkdir(to, 0700);
			free(to);
			xasprintf(&to, "%s/%s.json", dir, de->d_name);
			if (rename(from, to) != 0)
				log_warn("cannot move %s", from);
			else
				log_info("sandbox %s: record moved beside its"
				    " directory", de->d_name);
		}
		free(from);
		free(to);
	}
	closedir(d);
	free(dir);
}

/* Create the directories every process expects. */
int
state_init(char **cause)
{
	static const char *dirs[] = { "sandboxes", "sandboxes/.trash",
	    "sandboxes/.staging", "base-cache", "base-cache/.staging",
	    "telemetry", "networks", "helper-groups", "boxes" };
	size_t	 i;
	char	*path;

	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		path = state_path("%s", dirs[i]);
		if (util_mkdir_p(path, 0700, cause) != 0) {
			free(path);
			return (-1);
		}
		free(path);
	}
	state_self_start = state_process_start(getpid());
	state_self_pid = getpid();
	state_migrate();
	return (0);
}

/*
 * The start time of a process (clock ticks since boot, field 22 of
 * /proc/PID/stat), or 0 when there is no such process. With the pid it
 * names one process for good: pids are reused, start times are not.
 */
unsigned long long
state_process_start(pid_t pid)
{
	char			 path[64], buf[1024], *p;
	unsigned long long	 start = 0;
	ssize_t			 n;
	int			 fd, field;

	/* Ours is known (state_init): callers ask for it on every command. */
	if (pid == state_self_pid && state_self_start != 0)
		return (state_self_start);
	snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return (0);
	buf[n] = '\0';
	/* The command name may hold blanks and parentheses: skip past it. */
	if ((p = strrchr(buf, ')')) == NULL)
		return (0);
	p++;
	for (field = 3; field < 22 && p != NULL; field++) {
		p = strchr(p + 1, ' ');
	}
	if (p != NULL)
		start = strtoull(p + 1, NULL, 10);
	return (start);
}

/* This process, as an owner object {"pid", "start"}. */
cJSON *
state_owner_self(void)
{
	cJSON	*o;

	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "pid", (double)getpid());
	cJSON_AddNumberToObject(o, "start", (double)state_self_start);
	return (o);
}

/* Whether an owner object names this process. */
int
state_owner_is_self(cJSON *owner)
{
	cJSON	*pid, *start;

	pid = cJSON_GetObjectItem(owner, "pid");
	start = cJSON_GetObjectItem(owner, "start");
	return (cJSON_IsNumber(pid) && cJSON_IsNumber(start) &&
	    (pid_t)pid->valuedouble == getpid() &&
	    (unsigned long long)start->valuedouble == state_self_start);
}

/* Whether the process an owner object names is still running. */
int
state_owner_alive(cJSON *owner)
{
	cJSON	*pid, *start;

	pid = cJSON_GetObjectItem(owner, "pid");
	start = cJSON_GetObjectItem(owner, "start");
	if (!cJSON_IsNumber(pid) || !cJSON_IsNumber(start))
		return (0);
	return (state_process_start((pid_t)pid->valuedouble) ==
	    (unsigned long long)start->valuedouble);
}

/*
 * Open a lock file (with O_CREAT in flags: made when missing) and take
 * it exclusively, waiting for it; the descriptor, or -1 with errno.
 */
static int
state_flock(const char *path, int flags)
{
	int	fd, saved;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | flags, 0600);
	while (fd != -1 && flock(fd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			saved = errno;
			close(fd);
			errno = saved;
			return (-1);
		}
	}
	return (fd);
}

/*
 * Take the lock of one sandbox; returns the descriptor to pass to
 * state_unlock, or -1 (the sandbox does not exist, or the lock failed).
 */
int
state_lock(const char *id)
{
	char	*path;
	int	 fd;

	/* Never created here: a lock that is missing is no sandbox. */
	path = state_path("sandboxes/%s.lock", id);
	fd = state_flock(path, 0);
	free(path);
	return (fd);
}

void
state_unlock(int fd)
{
	if (fd != -1)
		close(fd);	/* releases the flock */
}

/*
 * Take the room lock of the state directory's file system, waiting for
 * it (children only): what takes room there that the reserve (limit
 * disk-reserve) guards, a sandbox's disk image or a copy of a workspace,
 * judges the room and takes it under this lock, one at a time, so that
 * two of them never both count the same free bytes. Returns the
 * descriptor to pass to state_unlock, or -1 with errno.
 */
int
state_room_lock(void)
{
	char	*path;
	int	 fd;

	path = state_path(".room");
	fd = state_flock(path, O_CREAT);
	free(path);
	return (fd);
}

/*
 * Open the lock of the base cache (not yet taken): a create holds it
 * shared from the moment it picks a base until its record names it; the
 * sweep of unused bases (trash.c) takes it exclusively. Returns -1 with
 * errno on failure.
 */
int
state_bases_lock(void)
{
	char	*path;
	int	 fd;

	path = state_where(STATE_BASES, NULL, ".lock");
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(path);
	return (fd);
}

/* Whether a sandbox's record is gone (the sandbox was destroyed). */
int
state_record_gone(const char *id)
{
	struct stat	 st;
	char		*path;
	int		 r;

	path = state_path("sandboxes/%s.json", id);
	r = stat(path, &st) != 0 && errno == ENOENT;
	free(path);
	return (r);
}

/* Read a sandbox's record; NULL (errno ENOENT when there is none). */
cJSON *
state_record_read(const char *id)
{
	struct stat	 st;
	char		*path, *buf;
	cJSON		*rec;
	ssize_t		 n;
	int		 fd;

	path = state_path("sandboxes/%s.json", id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd == -1)
		return (NULL);
	if (fstat(fd, &st) != 0 || st.st_size > STATE_RECORD_MAX) {
		close(fd);
		errno = EFBIG;
		return (NULL);
	}
	buf = xmalloc(st.st_size + 1);
	n = read(fd, buf, st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		errno = EIO;
		return (NULL);
	}
	rec = cJSON_ParseWithLength(buf, n);
	free(buf);
	if (!cJSON_IsObject(rec)) {
		cJSON_Delete(rec);
		errno = EINVAL;
		return (NULL);
	}
	return (rec);
}

/* Replace a sandbox's record atomically. */
int
state_record_write(const char *id, cJSON *rec, char **cause)
{
	char	*path, *text;
	int	 r;

	path = state_path("sandboxes/%s.json", id);
	text = util_json_print(rec);
	r = util_write_atomic(path, text, strlen(text), cause);
	free(text);
	free(path);
	return (r);
}

/*
 * Reserve the id of a new sandbox (its lock) and make its directory,
 * empty: a disk is mounted on it, or state_sandbox_init fills it.
 * Returns 0, or -1 with errno EEXIST when the id is taken.
 */
int
state_sandbox_create(const char *id, char **cause)
{
	char	*lock, *path;
	int	 fd, saved;

	lock = state_path("sandboxes/%s.lock", id);
	if ((fd = open(lock, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1) {
		if (errno != EEXIST)
			xasprintf(cause, "cannot create %s: %s", lock,
			    strerror(errno));
		free(lock);
		return (-1);
	}
	close(fd);
	path = state_path("sandboxes/%s", id);
	if (mkdir(path, 0700) != 0) {
		saved = errno;
		if (errno != EEXIST)
			xasprintf(cause, "cannot create %s: %s", path,
			    strerror(errno));
		else
			log_warnx("%s: a directory without a lock", path);
		unlink(lock);
		free(lock);
		free(path);
		errno = saved;
		return (-1);
	}
	free(lock);
	free(path);
	return (0);
}

/*
 * Fill a new sandbox's directory (on its disk once that is mounted)
 * with what every sandbox has.
 */
int
state_sandbox_init(const char *id, char **cause)
{
	static const char	*dirs[] = { "telemetry", "trash" };
	char			*path;
	size_t			 i;

	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		path = state_path("sandboxes/%s/%s", id, dirs[i]);
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			xasprintf(cause, "cannot create %s: %s", path,
			    strerror(errno));
			free(path);
			return (-1);
		}
		free(path);
	}
	return (0);
}

/*
 * Take a sandbox's directory (no disk mounted on it) out of sight at
 * once (rename into the trash); the tree is removed later by a child
 * process. Returns the trash path, or NULL.
 */
char *
state_sandbox_trash(const char *id, char **cause)
{
	char	*from, *to, rnd[9];

	util_random_hex(rnd, 8);
	from = state_where(STATE_SANDBOX, id, NULL);
	to = state_path("sandboxes/.trash/%s-%s", id, rnd);
	if (rename(from, to) != 0 && errno != ENOENT) {
		xasprintf(cause, "cannot remove %s: %s", from,
		    strerror(errno));
		free(from);
		free(to);
		return (NULL);
	}
	free(from);
	return (to);
}

/*
 * Remove a sandbox's lock, then its record: the last step of removing a
 * sandbox. A record without a lock is one whose removal was cut short
 * (a new sandbox has its lock before its record), which the trash
 * removes.
 */
int
state_sandbox_forget(const char *id, char **cause)
{
	static const char	*files[] = { "lock", "json" };	/* in order */
	char			*path;
	size_t			 i;

	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		path = state_path("sandboxes/%s.%s", id, files[i]);
		if (unlink(path) != 0 && errno != ENOENT) {
			xasprintf(cause, "cannot remove %s: %s", path,
			    strerror(errno));
			free(path);
			return (-1);
		}
		free(path);
	}
	return (0);
}

/*
 * Where scratch of a sandbox goes to be removed: its own trash, on the
 * same file system as the scratch, under what it was and a random tail.
 */
char *
state_trash_path(const char *id, const char *what)
{
	char	rnd[9];

	util_random_hex(rnd, 8);
	return (state_path("sandboxes/%s/trash/%s-%s", id, what, rnd));
}

/*
 * The ids named by the entries of <state>/dir whose names end in suffix
 * (taken off), in directory order, at most max of them; n is set.
 */
char **
state_ids_in(const char *dir, const char *suffix, size_t max, size_t *n)
{
	char		**ids = NULL, *path;
	size_t		 size = 0, len, slen = strlen(suffix);
	DIR		*d;
	struct dirent	*de;

	*n = 0;
	path = state_path("%s", dir);
	d = opendir(path);
	free(path);
	if (d == NULL)
		return (NULL);
	while ((de = readdir(d)) != NULL && *n < max) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len <= slen ||
		    strcmp(de->d_name + len - slen, suffix) != 0)
			continue;
		de->d_name[len - slen] = '\0';
		if (!util_id_valid(de->d_name))
			continue;
		if (*n == size) {
			size = size == 0 ? 16 : size * 2;
			ids = xreallocarray(ids, size, sizeof *ids);
		}
		ids[(*n)++] = xstrdup(de->d_name);
	}
	closedir(d);
	return (ids);
}

/* The ids of every sandbox record, in directory order. */
char **
state_sandbox_ids(size_t *n)
{
	return (state_ids_in("sandboxes", ".json", SIZE_MAX, n));
}
