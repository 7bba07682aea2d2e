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
 * The control groups the server makes, on cgroup v1 and v2 alike:
 *
 * - a helper group per sandbox, beside the containers' groups:
 *   <hierarchy>/sandbox-mcp/<sandbox id>, with a CPU, memory and pids
 *   cap (helper-profile). Every process that works on a sandbox's files
 *   on the host (publish, large file operations, sizes) runs in it, so
 *   that work is charged to the sandbox and bounded, and a sandbox busy
 *   at its own CPU quota does not slow its publishes down;
 * - a freezer group per workspace session, a child of the container's
 *   (v1 freezer hierarchy, or the unified one): the session's processes
 *   are frozen while a publish takes its snapshot, so the tree cannot
 *   change under it.
 *
 * The hierarchies are found once from /proc/self/mountinfo: a v1
 * hierarchy per controller where one is mounted, the v2 one for the
 * rest.
 */

#include "config.h"

#include <sys/queue.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox-mcp.h"

#define CGROUP_HELPER_DIR	"sandbox-mcp"
#define CGROUP_MOUNTINFO_MAX	(1024 * 1024)
#define CGROUP_MARKS_MAX	100000	/* read at start */

enum cgroup_ctrl {
	CGROUP_CPU,
	CGROUP_MEMORY,
	CGROUP_PIDS,
	CGROUP_FREEZER,
	CGROUP__COUNT
};

static const char *cgroup_ctrl_names[CGROUP__COUNT] = {
	"cpu", "memory", "pids", "freezer"
};

static int	 cgroup_found;
static char	*cgroup_v1[CGROUP__COUNT];	/* mount point, or NULL */
static char	*cgroup_v2;			/* the unified mount point */

/* Whether a comma-separated option list holds word. */
static int
cgroup_has_word(const char *list, const char *word)
{
	size_t		 len = strlen(word);
	const char	*p = list;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, word, len) == 0 && (p[len] == ',' ||
		    p[len] == '\0'))
			return (1);
		if ((p = strchr(p, ',')) != NULL)
			p++;
	}
	return (0);
}

/* Find the hierarchies once. */
static void
cgroup_find(void)
{
	char	*buf, *line, *next, *f[12], *sep, *mp, *type, *opts;
	int	 fd, n, i;
	size_t	 len = 0;
	ssize_t	 r;

	if (cgroup_found)
		return;
	cgroup_found = 1;
	if ((fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)) == -1)
		return;
	buf = xmalloc(CGROUP_MOUNTINFO_MAX);
	while ((r = read(fd, buf + len, CGROUP_MOUNTINFO_MAX - 1 - len)) > 0)
		len += r;
	close(fd);
	buf[len] = '\0';
	for (line = buf; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		/* ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTS ... - TYPE SRC SOPTS */
		if ((sep = strstr(line, " - ")) == NULL)
			continue;
		*sep = '\0';
		n = 0;
		for (f[n] = strtok(line, " "); f[n] != NULL && n < 11;
		    f[++n] = strtok(NULL, " "))
			;
		if (n < 5)
			continue;
		mp = f[4];
		type = strtok(sep + 3, " ");
		(void)strtok(NULL, " ");
		opts = strtok(NULL, " ");
		if (type == NULL || opts == NULL || strchr(mp, '\\') != NULL)
			continue;
		if (strcmp(type, "cgroup2") == 0) {
			if (cgroup_v2 == NULL)
				cgroup_v2 = xstrdup(mp);
			continue;
		}
		if (strcmp(type, "cgroup") != 0)
			continue;
		for (i = 0; i < CGROUP__COUNT; i++) {
			if (cgroup_v1[i] == NULL &&
			    cgroup_has_word(opts, cgroup_ctrl_names[i]))
				cgroup_v1[i] = xstrdup(mp);
		}
	}
	free(buf);
}

/* Whether dir lies under the mount point base (NULL: no). */
static int
cgroup_under(const char *dir, const char *base)
{
	size_t	len;

	if (base == NULL)
		return (0);
	len = strlen(base);
	return (strncmp(dir, base, len) == 0 && dir[len] == '/');
}

/* Write a short text to a control file of the group dir. */
int
cgroup_write(const char *dir, const char *file, const char *text)
{
	char	path[PATH_MAX];
	size_t	len = strlen(text);
	int	fd, r = 0;

	if (snprintf(path, sizeof path, "%s/%s", dir, file) >=
	    (int)sizeof path) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return (-1);
	if (write(fd, text, len) != (ssize_t)len)
		r = -1;
	close(fd);
	return (r);
}

/* Read a short control file into buf. */
static int
cgroup_read(const char *dir, const char *file, char *buf, size_t size)
{
	char	path[PATH_MAX];
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof path, "%s/%s", dir, file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return (-1);
	buf[n] = '\0';
	return (0);
}

static int
cgroup_mkdir(const char *path)
{
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		return (-1);
	return (0);
}

/*
 * The helper group's directories of a sandbox: up to one per v1
 * controller mounted and one in the unified hierarchy for the rest.
 * Fills dirs (each allocated) and returns how many.
 */
static int
cgroup_helper_dirs(const char *sbox, char *dirs[CGROUP__COUNT])
{
	int	i, n = 0, v2 = 0;

	cgroup_find();
	for (i = 0; i < CGROUP_FREEZER; i++) {
		if (cgroup_v1[i] != NULL)
			xasprintf(&dirs[n++], "%s/%s/%s", cgroup_v1[i],
			    CGROUP_HELPER_DIR, sbox);
		else
			v2 = 1;
	}
	if (v2 && cgroup_v2 != NULL)
		xasprintf(&dirs[n++], "%s/%s/%s", cgroup_v2,
		    CGROUP_HELPER_DIR, sbox);
	return (n);
}

/*
 * The caps last written to a sandbox's helper group, so that a helper
 * started while the group is there with the same caps costs one stat,
 * not a dozen writes to the cgroup file system.
 */
struct cgroup_caps {
	char			*sbox;
	long long		 cpus, memory, pids;
	LIST_ENTRY(cgroup_caps)	 entry;
};
static LIST_HEAD(, cgroup_caps)	cgroup_caps_list =
    LIST_HEAD_INITIALIZER(cgroup_caps_list);

static struct cgroup_caps *
cgroup_caps_find(const char *sbox)
{
	struct cgroup_caps	*c;

	LIST_FOREACH(c, &cgroup_caps_list, entry) {
		if (strcmp(c->sbox, sbox) == 0)
			return (c);
	}
	return (NULL);
}

static void
cgroup_caps_forget(const char *sbox)
{
	struct cgroup_caps	*c;

	if ((c = cgroup_caps_find(sbox)) != NULL) {
		LIST_REMOVE(c, entry);
		free(c->sbox);
		free(c);
	}
}

/*
 * Groups are the machine's, not the state directory's: a mark in
 * <state>/helper-groups/ for each one made says it is ours, so that a
 * group left when a process ended before it could remove one (it was
 * still busy, or the process was killed) is removed at the next start
 * (cgroup_helper_marked, cgroup_helper_ours), and no other server's
 * group ever is. The mark holds the inode of each of the group's
 * directories as made: a mark copied from elsewhere, or naming a group
 * made since by someone else, does not match.
 */
static void
cgroup_mark(const char *sbox, char *dirs[CGROUP__COUNT], int n)
{
	struct stat	 st;
	char		*path, *text = NULL, *line, *cause = NULL;
	int		 i;

	for (i = 0; i < n; i++) {
		if (lstat(dirs[i], &st) != 0)
			continue;
		xasprintf(&line, "%s%s %llu\n", text != NULL ? text : "",
		    dirs[i], (unsigned long long)st.st_ino);
		free(text);
		text = line;
	}
	path = state_path("helper-groups/%s", sbox);
	if (text != NULL && util_write_file(path, text, strlen(text), 0,
	    &cause) != 0) {
		log_debug("%s: %s", __func__, cause);
		free(cause);
	}
	free(path);
	free(text);
}

/*
 * Whether sandbox sbox's helper groups are the ones its mark names:
 * every directory of the group that is there has the inode the mark
 * holds for it.
 */
int
cgroup_helper_ours(const char *sbox)
{
	struct stat	 st;
	char		*dirs[CGROUP__COUNT], *path, *text, want[PATH_MAX + 32];
	size_t		 len;
	int		 n, i, ours = 1;

	path = state_path("helper-groups/%s", sbox);
	text = util_read_file(path, 64 * 1024, &len);
	free(path);
	n = cgroup_helper_dirs(sbox, dirs);
	for (i = 0; i < n; i++) {
		if (lstat(dirs[i], &st) == 0) {
			snprintf(want, sizeof want, "%s %llu\n", dirs[i],
			    (unsigned long long)st.st_ino);
			if (text == NULL || strstr(text, want) == NULL)
				ours = 0;
		}
		free(dirs[i]);
	}
	free(text);
	return (ours);
}

/* The sandboxes whose helper groups a mark says are ours, and n. */
char **
cgroup_helper_marked(size_t *n)
{
	return (state_ids_in("helper-groups", "", CGROUP_MARKS_MAX, n));
}

/*
 * Make a sandbox's helper group with its caps (idempotent; the caps are
 * written again when the configuration changed them, or the group was
 * made anew). Returns 0, or -1 with a cause: helpers then run uncharged
 * and the caller says so in its log.
 */
int
cgroup_helper_prepare(const char *sbox, char **cause)
{
	char	*dirs[CGROUP__COUNT], *top, *slash, num[64];
	int	 n, i, r = 0, here = 1;
	long long cpus = cfg_limit(LIMIT_HELPER_CPUS);
	struct cgroup_caps *c;
	struct stat	 st;

	n = cgroup_helper_dirs(sbox, dirs);
	if ((c = cgroup_caps_find(sbox)) != NULL && c->cpus == cpus &&
	    c->memory == cfg_limit(LIMIT_HELPER_MEMORY) &&
	    c->pids == cfg_limit(LIMIT_HELPER_PIDS)) {
		for (i = 0; i < n && here; i++)
			here = stat(dirs[i], &st) == 0;
		if (here) {
			for (i = 0; i < n; i++)
				free(dirs[i]);
			return (0);
		}
	}
	for (i = 0; i < n; i++) {
		top = xstrdup(dirs[i]);
		if ((slash = strrchr(top, '/')) != NULL)
			*slash = '\0';
		if (cgroup_under(dirs[i], cgroup_v2)) {
			/* Controllers for the children of the root and ours. */
			cgroup_write(cgroup_v2, "cgroup.subtree_control",
			    "+cpu +memory +pids");
			if (cgroup_mkdir(top) == 0)
				cgroup_write(top, "cgroup.subtree_control",
				    "+cpu +memory +pids");
		} else
			cgroup_mkdir(top);
		free(top);
		if (cgroup_mkdir(dirs[i]) != 0) {
			if (r == 0)
				xasprintf(cause, "cannot make the helper group"
				    " %s: %s", dirs[i], strerror(errno));
			r = -1;
			continue;
		}
		if (cgroup_under(dirs[i], cgroup_v2)) {
			snprintf(num, sizeof num, "%lld 100000", cpus * 100000);
			cgroup_write(dirs[i], "cpu.max", num);
			snprintf(num, sizeof num, "%lld",
			    cfg_limit(LIMIT_HELPER_MEMORY));
			cgroup_write(dirs[i], "memory.max", num);
			cgroup_write(dirs[i], "memory.swap.max", "0");
			snprintf(num, sizeof num, "%lld",
			    cfg_limit(LIMIT_HELPER_PIDS));
			cgroup_write(dirs[i], "pids.max", num);
			continue;
		}
		if (cgroup_under(dirs[i], cgroup_v1[CGROUP_CPU])) {
			cgroup_write(dirs[i], "cpu.cfs_period_us", "100000");
			snprintf(num, sizeof num, "%lld", cpus * 100000);
			cgroup_write(dirs[i], "cpu.cfs_quota_us", num);
		}
		if (cgroup_under(dirs[i], cgroup_v1[CGROUP_MEMORY])) {
			snprintf(num, sizeof num, "%lld",
			    cfg_limit(LIMIT_HELPER_MEMORY));
			cgroup_write(dirs[i], "memory.limit_in_bytes", num);
		}
		if (cgroup_under(dirs[i], cgroup_v1[CGROUP_PIDS])) {
			snprintf(num, sizeof num, "%lld",
			    cfg_limit(LIMIT_HELPER_PIDS));
			cgroup_write(dirs[i], "pids.max", num);
		}
	}
	cgroup_mark(sbox, dirs, n);
	for (i = 0; i < n; i++)
		free(dirs[i]);
	cgroup_caps_forget(sbox);
	if (r == 0) {
		c = xcalloc(1, sizeof *c);
		c->sbox = xstrdup(sbox);
		c->cpus = cpus;
		c->memory = cfg_limit(LIMIT_HELPER_MEMORY);
		c->pids = cfg_limit(LIMIT_HELPER_PIDS);
		LIST_INSERT_HEAD(&cgroup_caps_list, c, entry);
	}
	return (r);
}

/*
 * Join the calling process to a sandbox's helper group (in a child, as
 * its first step). Returns 0 or -1 (errno set).
 */
int
cgroup_helper_join(const char *sbox)
{
	char	*dirs[CGROUP__COUNT], pid[32];
	int	 n, i, r = 0;

	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	n = cgroup_helper_dirs(sbox, dirs);
	for (i = 0; i < n; i++) {
		if (cgroup_write(dirs[i], "cgroup.procs", pid) != 0)
			r = -1;
		free(dirs[i]);
	}
	return (r);
}

/*
 * Remove a sandbox's helper group (once no helper of it is left); -1
 * when a process is still on its way out of it (EBUSY).
 */
int
cgroup_helper_remove(const char *sbox)
{
	char	*dirs[CGROUP__COUNT];
	int	 n, i, busy = 0;

	cgroup_caps_forget(sbox);
	n = cgroup_helper_dirs(sbox, dirs);
	for (i = 0; i < n; i++) {
		if (rmdir(dirs[i]) != 0 && errno != ENOENT) {
			if (errno == EBUSY)
				busy = 1;
			log_debug("%s: %s: %s", __func__, dirs[i],
			    strerror(errno));
		}
		free(dirs[i]);
	}
	if (!busy)
		cgroup_helper_unmark(sbox);
	return (busy ? -1 : 0);
}

/* Forget the mark of sandbox sbox's helper groups. */
void
cgroup_helper_unmark(const char *sbox)
{
	char	*path;

	path = state_path("helper-groups/%s", sbox);
	unlink(path);
	free(path);
}

/*
 * A line of /proc/PID/cgroup, "ID:CONTROLLERS:PATH", split in place:
 * *ctrls (empty for the unified hierarchy) and *rel. 0, or -1.
 */
static int
cgroup_line(char *line, char **ctrls, char **rel)
{
	line[strcspn(line, "\n")] = '\0';
	if ((*ctrls = strchr(line, ':')) == NULL)
		return (-1);
	(*ctrls)++;
	if ((*rel = strchr(*ctrls, ':')) == NULL)
		return (-1);
	*(*rel)++ = '\0';
	return (0);
}

/*
 * The directory of a process's freezer group: its v1 freezer group, or
 * its unified group. NULL when neither is found.
 */
char *
cgroup_freezer_of(pid_t pid)
{
	FILE	*f;
	char	 path[64], line[PATH_MAX], *ctrls, *rel, *dir = NULL;

	cgroup_find();
	snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)pid);
	if ((f = fopen(path, "re")) == NULL)
		return (NULL);
	while (fgets(line, sizeof line, f) != NULL) {
		if (cgroup_line(line, &ctrls, &rel) != 0)
			continue;
		if (cgroup_v1[CGROUP_FREEZER] != NULL &&
		    cgroup_has_word(ctrls, "freezer")) {
			free(dir);
			xasprintf(&dir, "%s%s", cgroup_v1[CGROUP_FREEZER],
			    rel);
			break;
		}
		if (cgroup_v1[CGROUP_FREEZER] == NULL && *ctrls == '\0' &&
		    cgroup_v2 != NULL && dir == NULL)
			xasprintf(&dir, "%s%s", cgroup_v2, rel);
	}
	fclose(f);
	return (dir);
}

/* A session's freezer group under the container's: made, or NULL. */
char *
cgroup_session_create(const char *parent, const char *name, char **cause)
{
	char	*dir;

	xasprintf(&dir, "%s/%s", parent, name);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		xasprintf(cause, "cannot make the session's control group"
		    " %s: %s", dir, strerror(errno));
		free(dir);
		return (NULL);
	}
	return (dir);
}

/* Whether a freezer group is in the unified hierarchy. */
static int
cgroup_freezer_v2(const char *dir)
{
	return (!cgroup_under(dir, cgroup_v1[CGROUP_FREEZER]));
}

/* Ask the kernel to freeze (1) or thaw (0) a group. */
int
cgroup_freeze(const char *dir, int freeze)
{
	if (cgroup_freezer_v2(dir))
		return (cgroup_write(dir, "cgroup.freeze", freeze ? "1" : "0"));
	return (cgroup_write(dir, "freezer.state", freeze ? "FROZEN" :
	    "THAWED"));
}

/* 1 when every process of a group is frozen, 0 not yet, -1 on error. */
int
cgroup_frozen(const char *dir)
{
	char	buf[512];

	if (cgroup_freezer_v2(dir)) {
		if (cgroup_read(dir, "cgroup.events", buf, sizeof buf) != 0)
			return (-1);
		return (strstr(buf, "frozen 1") != NULL);
	}
	if (cgroup_read(dir, "freezer.state", buf, sizeof buf) != 0)
		return (-1);
	return (strncmp(buf, "FROZEN", 6) == 0);
}

/*
 * Kill every process of a group (frozen first, so nothing forks while
 * it is emptied; the kill lands when it is thawed) and remove it.
 * Returns 0 when the group is gone, -1 when processes remain (the
 * caller tries again later).
 */
int
cgroup_session_remove(const char *dir)
{
	char	 buf[4096], *p, *end;
	long	 pid;
	int	 again = 0;

	if (rmdir(dir) == 0 || errno == ENOENT)
		return (0);
	if (errno != EBUSY)
		return (-1);
	cgroup_freeze(dir, 1);
	if (cgroup_read(dir, "cgroup.procs", buf, sizeof buf) == 0) {
		for (p = buf; *p != '\0'; p = end) {
			pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid > 0) {
				kill((pid_t)pid, SIGKILL);
				again = 1;
			}
			while (*end == '\n')
				end++;
		}
	}
	cgroup_freeze(dir, 0);
	if (!again && rmdir(dir) == 0)
		return (0);
	return (-1);
}

/*
 * The freezer group a lease names, for a session whose server died
 * (maybe while it was frozen for a publish): thawed, emptied and
 * removed. Only a group of ours is touched: the path must lie in a
 * freezer hierarchy and end in smcp-<the session's id>.
 */
void
cgroup_session_abandon(const char *path, const char *ws)
{
	const char	*base, *leaf;
	char		 want[64];

	cgroup_find();
	base = cgroup_v1[CGROUP_FREEZER] != NULL ?
	    cgroup_v1[CGROUP_FREEZER] : cgroup_v2;
	snprintf(want, sizeof want, "smcp-%s", ws);
	if (!cgroup_under(path, base) || strstr(path, "/..") != NULL ||
	    (leaf = strrchr(path, '/')) == NULL || strcmp(leaf + 1, want) !=
	    0)
		return;
	if (cgroup_session_remove(path) != 0)
		log_debug("%s: %s still has processes", __func__, path);
}

/*
 * The cgroup.procs files of a process's cgroups, from /proc/PID/cgroup
 * and the cgroup mounts of /proc/self/mountinfo (v1 hierarchies and the
 * unified one), *n of them; NULL and a cause.
 */
char **
cgroup_procs_of(pid_t pid, size_t *n, char **cause)
{
	char		**list = NULL;
	FILE		*f, *m;
	char		 path[64], line[4096], mline[4096], *ctrls, *rel;
	char		*mp, *fstype, *opts, *tok, *full, *dup, *word;
	char		*save;
	int		 match;

	*n = 0;
	snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "cannot read %s: %s", path, strerror(errno));
		return (NULL);
	}
	while (fgets(line, sizeof line, f) != NULL) {
		if (cgroup_line(line, &ctrls, &rel) != 0)
			continue;
		if ((m = fopen("/proc/self/mountinfo", "re")) == NULL)
			continue;
		while (fgets(mline, sizeof mline, m) != NULL) {
			/* ID PARENT MAJ:MIN ROOT MOUNTPOINT ... - TYPE SRC OPTS */
			tok = strtok_r(mline, " ", &save);
			mp = NULL;
			for (match = 0; tok != NULL && match < 4; match++) {
				tok = strtok_r(NULL, " ", &save);
				if (match == 3)
					mp = tok;
			}
			while (tok != NULL && strcmp(tok, "-") != 0)
				tok = strtok_r(NULL, " ", &save);
			fstype = strtok_r(NULL, " ", &save);
			(void)strtok_r(NULL, " ", &save);
			opts = strtok_r(NULL, " \n", &save);
			if (mp == NULL || fstype == NULL || opts == NULL)
				continue;
			if (*ctrls == '\0') {
				if (strcmp(fstype, "cgroup2") != 0)
					continue;
			} else {
				if (strcmp(fstype, "cgroup") != 0)
					continue;
				/* Every controller of the line in the options. */
				match = 1;
				dup = xstrdup(ctrls);
				for (word = strtok_r(dup, ",", &save);
				    word != NULL; word = strtok_r(NULL, ",",
				    &save)) {
					if (strstr(opts, word) == NULL)
						match = 0;
				}
				free(dup);
				if (!match)
					continue;
			}
			xasprintf(&full, "%s%s/cgroup.procs", mp, rel);
			if (access(full, W_OK) == 0) {
				list = xreallocarray(list, *n + 1,
				    sizeof *list);
				list[(*n)++] = full;
			} else
				free(full);
			break;
		}
		fclose(m);
	}
	fclose(f);
	if (list == NULL)
		list = xcalloc(1, sizeof *list);	/* none: not an error */
	return (list);
}
