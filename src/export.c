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
 * Exporting a sandbox's published changes to the host (layers.md,
 * export_changes): every layer above the base folded newest-wins into
 * one delta (squash.c's walk, a deletion kept when the base has the
 * path, a directory marked opaque when it hides one of the base), and
 * delivered as
 *
 * - dir: applied to a host directory: an opaque directory's names that
 *   the delta does not have go first, deletions next, then directories,
 *   files and symlinks; a file whose bytes are already there is left
 *   alone; a file is written to an unnamed file in its directory and
 *   renamed over the old one;
 * - tar, tar-zst: a pax archive (libarchive), zstd-compressed for
 *   tar-zst, with the OCI whiteouts (.wh.<name>, .wh..wh..opq), written
 *   to an unnamed file beside dest, made durable, then renamed into
 *   place: nothing is ever half there.
 *
 * The destination is the host's and the delta the sandbox's: the server
 * judges dest as written (absolute, no "..", not /, the home directory
 * or the state directory, and at or under an export root serving the
 * caller's tenant or the workspace root the sandbox was copied from);
 * the child then opens every component of it from / with O_NOFOLLOW, so
 * what it writes is where the path says. Everything below dest is
 * written relative to descriptors it opened itself, never following a
 * symlink, whatever the delta or the host put there. Files arrive with
 * dest's owner and their layer's permission bits, set-id bits dropped,
 * and none of the sandbox's extended attributes.
 *
 * The export reads a leased snapshot: the manifest as it was, each of
 * its layers held with a shared lock (layer_hold) so that the reclaim of
 * a squash meanwhile leaves them, and committed layers never change. It
 * runs in a child of the sandbox's helper group (memory, CPU), confined
 * to the stack read-only once it has opened what it needs; the loop only
 * parses its report. Memory is bounded whatever the stack's size: one
 * directory level's names at a time, file data in chunks.
 */

#include "config.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <limits.h>
#include <locale.h>
#include <pwd.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define EXPORT_CHUNK		(256 * 1024)
#define EXPORT_SPARSE_MAX	65536	/* data regions of one file */
#define EXPORT_HOLD_TRIES	8
#define EXPORT_ZSTD_LEVEL	3

enum export_format {
	EXPORT_DIR,
	EXPORT_TAR,
	EXPORT_TAR_ZST
};

static const char *const export_formats[] = { "dir", "tar", "tar-zst" };

struct export_args {
	char			*sandbox;
	char			*dest;		/* judged, normalized */
	enum export_format	 format;
	int			 flags;		/* EXPORT_* */
	unsigned long long	 max_bytes;	/* 0: the disk's size */
	unsigned long long	 max_entries;	/* 0: the disk's inodes */
	char			**hidden;	/* under dest, not the caller's */
	size_t			 nhidden;
};

struct export {
	struct export_args	 args;
	char			*tenant;
	export_cb		 cb;
	void			*arg;
	struct job		*job;
	LIST_ENTRY(export)	 entry;
};

static LIST_HEAD(, export)	exports = LIST_HEAD_INITIALIZER(exports);

/* The child's work. */
struct export_ctx {
	enum export_format	 format;
	struct export_args	*args;
	uid_t			 uid;		/* dest's owner */
	gid_t			 gid;
	struct archive		*ar;
	struct archive_entry	*entry;
	int			 outfd;
	ZSTD_CCtx		*zc;
	char			*zbuf;
	size_t			 zlen;
	char			*buf;
	char			*zero;
	char			*error;		/* of the archive's output */
	unsigned long long	 files;
	unsigned long long	 symlinks;
	unsigned long long	 deletes;
	unsigned long long	 clears;
	unsigned long long	 skipped;
	unsigned long long	 whiteouts;
	unsigned long long	 bytes;
	cJSON			*left_out;	/* paths, the first few */
	unsigned long long	 nleft_out;
	unsigned long long	 hardlinks;
	void			*links;		/* export_link, by inode */
	unsigned long long	 entries;	/* charged, of max_entries */
	unsigned long long	 data;		/* charged, of max_bytes */
	unsigned long long	 max_bytes;
	unsigned long long	 max_entries;
	const char		*over;		/* the limit passed */
	int			 made;		/* dir: dest's parent, dest made */
};

/*
 * A file of the delta that other names share (its layer's inode): where
 * its first name went, so that the others become links to it and not
 * copies (a sandbox's one file with 20,000 names is one inode on the
 * host too).
 */
struct export_link {
	dev_t		 dev;		/* in the layer */
	ino_t		 ino;
	char		*path;		/* its first name, in the delta */
	dev_t		 ddev;		/* dir: that name's inode in dest */
	ino_t		 dino;
	int		 placed;	/* dir: dino is ours to link to */
};

/* ---- judging dest, on the loop ---- */

/*
 * Absolute path s with one slash between components, no "." and no
 * trailing slash (workspace_clean), or NULL when it has a ".."
 * component, which a dest may not have.
 */
static char *
export_normalize(const char *s)
{
	const char	*p = s;
	size_t		 len;

	while (*p != '\0') {
		p += strspn(p, "/");
		len = strcspn(p, "/");
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return (NULL);
		p += len;
	}
	return (workspace_clean(s));
}

/* The home directory of the server's user, or NULL. */
static const char *
export_home(void)
{
	static char	*home;
	struct passwd	*pw;

	if (home == NULL && (pw = getpwuid(getuid())) != NULL &&
	    pw->pw_dir != NULL)
		home = export_normalize(pw->pw_dir);
	return (home);
}

/*
 * Judge dest for tenant (the sandbox copied from workspace, NULL when
 * unknown): its normalized form, or NULL with an invalid_request cause.
 */
static char *
export_judge(const char *dest, const char *tenant, const char *workspace,
    struct cause *cause)
{
	struct cfg_word	*w;
	const char	*home, *env;
	static char	*state_real;
	char		*d, *r, *state;
	size_t		 best, i;
	int		 allowed = 0, same, serves = 0, k;

	if (dest[0] != '/') {
		cause_set(cause, CAUSE_INVALID, "dest", dest, "dest must be an"
		    " absolute path on the host: %s", dest);
		return (NULL);
	}
	if (strlen(dest) >= PATH_MAX) {
		cause_set(cause, CAUSE_INVALID, "dest", NULL, "dest is longer"
		    " than %d bytes", PATH_MAX - 1);
		return (NULL);
	}
	if ((d = export_normalize(dest)) == NULL) {
		cause_set(cause, CAUSE_INVALID, "dest", dest, "dest must not"
		    " have a \"..\" component: %s", dest);
		return (NULL);
	}
	if (strcmp(d, "/") == 0) {
		cause_set(cause, CAUSE_INVALID, "dest", dest, "dest cannot be"
		    " the root directory");
		free(d);
		return (NULL);
	}
	same = (home = export_home()) != NULL && strcmp(d, home) == 0;
	if (!same && (env = getenv("HOME")) != NULL &&
	    (r = export_normalize(env)) != NULL) {
		same = strcmp(d, r) == 0;
		free(r);
	}
	if (same) {
		cause_set(cause, CAUSE_INVALID, "dest", dest, "dest cannot be"
		    " the home directory of the server's user: %s", d);
		free(d);
		return (NULL);
	}
	/* The state directory as written and as it resolves (once). */
	if (state_real == NULL && (r = realpath(cfg->state_dir, NULL)) !=
	    NULL) {
		state_real = export_normalize(r);
		free(r);
	}
	for (i = 0; i < 2; i++) {
		state = i == 0 ? export_normalize(cfg->state_dir) :
		    state_real != NULL ? xstrdup(state_real) : NULL;
		if (state != NULL && (workspace_under(d, state) ||
		    workspace_under(state, d))) {
			cause_set(cause, CAUSE_INVALID, "dest", dest, "dest %s"
			    " %s the server's state directory", d,
			    workspace_under(d, state) ? "is inside" : "holds");
			free(state);
			free(d);
			return (NULL);
		}
		free(state);
	}
	/*
	 * Never into a workspace or export root of another tenant's, however
	 * reached.
	 */
	if ((k = workspace_foreign(d, tenant)) != 0) {
		cause_set(cause, CAUSE_INVALID, "dest", dest, "dest %s is in %s"
		    " root that does not serve this caller", d, k == 1 ?
		    "a workspace" : "an export");
		free(d);
		return (NULL);
	}
	/*
	 * Back into the workspace the sandbox was copied from, or under an
	 * export root, the deepest one holding dest deciding (a root
	 * limited to others hides what is under it).
	 */
	if (workspace != NULL && (r = export_normalize(workspace)) != NULL) {
		allowed = workspace_under(d, r);
		free(r);
	}
	best = 0;
	TAILQ_FOREACH(w, &cfg->export_roots, entry) {
		if ((r = export_normalize(w->word)) == NULL)
			continue;
		if (workspace_under(d, r) && strlen(r) >= best) {
			if (strlen(r) > best)
				serves = 0;
			best = strlen(r);
			serves |= workspace_root_serves(w, tenant);
		}
		free(r);
	}
	if (best > 0 && serves)
		allowed = 1;
	if (!allowed) {
		cause_set(cause, CAUSE_INVALID, "dest", dest, "dest %s is"
		    " neither under the workspace root the sandbox was copied"
		    " from (%s) nor under an export root of the server's"
		    " configuration (export-root DIR) that serves this caller",
		    d, workspace != NULL ? workspace : "unknown");
		free(d);
		return (NULL);
	}
	return (d);
}

/* ---- the child: opening dest ---- */

/*
 * Open the directory at absolute path (normalized) from /, one
 * component at a time, following no symlink and entering no directory
 * that is the state directory (sdev, sino). -1 with *msg.
 */
static int
export_open_path(const char *path, dev_t sdev, ino_t sino, char **msg)
{
	struct stat	 st;
	char		*copy, *p, *comp;
	int		 fd, nfd, len;

	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		xasprintf(msg, "cannot open /: %s", strerror(errno));
		return (-1);
	}
	copy = xstrdup(path);
	p = copy;
	while ((comp = strsep(&p, "/")) != NULL) {
		if (*comp == '\0')
			continue;
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (nfd == -1) {
			len = (int)(comp - copy + strlen(comp));
			if (errno == ELOOP || (errno == ENOTDIR &&
			    fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode)))
				xasprintf(msg, "%.*s is a symlink: dest is"
				    " walked without following one", len, path);
			else if (errno == ENOTDIR)
				xasprintf(msg, "%.*s is not a directory", len,
				    path);
			else if (errno == ENOENT)
				xasprintf(msg, "%.*s does not exist", len,
				    path);
			else
				xasprintf(msg, "cannot open %.*s: %s", len,
				    path, strerror(errno));
			close(fd);
			free(copy);
			return (-1);
		}
		close(fd);
		fd = nfd;
		if (fstat(fd, &st) == 0 && st.st_dev == sdev &&
		    st.st_ino == sino) {
			xasprintf(msg, "%s is the server's state directory",
			    path);
			close(fd);
			free(copy);
			return (-1);
		}
	}
	free(copy);
	return (fd);
}

/*
 * Open dest for its format: the directory itself for dir (made when its
 * parent exists), its parent for an archive (*leaf set). -1 with *msg.
 */
static int
export_open_dest(struct export_args *a, struct export_ctx *x,
    const char **leaf, char **msg)
{
	struct stat	 st, sst;
	char		*parent, *slash;
	int		 pfd, fd;

	if (stat(cfg->state_dir, &sst) != 0)
		memset(&sst, 0, sizeof sst);
	parent = xstrdup(a->dest);
	slash = strrchr(parent, '/');
	*leaf = a->dest + (slash - parent) + 1;
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	pfd = export_open_path(parent, sst.st_dev, sst.st_ino, msg);
	free(parent);
	if (pfd == -1)
		return (-1);
	if (fstatat(pfd, *leaf, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT) {
			xasprintf(msg, "cannot look at %s: %s", a->dest,
			    strerror(errno));
			close(pfd);
			return (-1);
		}
		st.st_mode = 0;
	}
	if (a->format != EXPORT_DIR) {
		if (S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode) ||
		    (st.st_mode != 0 && !S_ISREG(st.st_mode))) {
			xasprintf(msg, "%s is %s: an archive is written only"
			    " as a new file or over an existing one", a->dest,
			    S_ISDIR(st.st_mode) ? "a directory" :
			    S_ISLNK(st.st_mode) ? "a symlink" :
			    "not a regular file");
			close(pfd);
			return (-1);
		}
		if (fstat(pfd, &st) == 0) {
			x->uid = st.st_uid;
			x->gid = st.st_gid;
		}
		return (pfd);
	}
	if (st.st_mode != 0 && !S_ISDIR(st.st_mode)) {
		xasprintf(msg, "%s exists and is %s: a dir export writes into"
		    " a directory", a->dest, S_ISLNK(st.st_mode) ?
		    "a symlink" : "not a directory");
		close(pfd);
		return (-1);
	}
	if (st.st_mode == 0) {
		if (fstat(pfd, &st) != 0 || mkdirat(pfd, *leaf, 0755) != 0 ||
		    fchownat(pfd, *leaf, st.st_uid, st.st_gid,
		    AT_SYMLINK_NOFOLLOW) != 0) {
			xasprintf(msg, "cannot make %s: %s", a->dest,
			    strerror(errno));
			close(pfd);
			return (-1);
		}
		x->made = pfd;	/* an export that fails takes it back */
	}
	fd = openat(pfd, *leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (x->made != pfd)
		close(pfd);
	if (fd == -1 || fstat(fd, &st) != 0) {
		xasprintf(msg, "cannot open %s: %s", a->dest, strerror(errno));
		if (fd != -1)
			close(fd);
		return (-1);
	}
	if (st.st_dev == sst.st_dev && st.st_ino == sst.st_ino) {
		xasprintf(msg, "%s is the server's state directory", a->dest);
		close(fd);
		return (-1);
	}
	x->uid = st.st_uid;
	x->gid = st.st_gid;
	return (fd);
}

/* ---- the child: shared inodes and the limits ---- */

static int
export_link_cmp(const void *a, const void *b)
{
	const struct export_link	*la = a, *lb = b;

	if (la->dev != lb->dev)
		return (la->dev < lb->dev ? -1 : 1);
	if (la->ino != lb->ino)
		return (la->ino < lb->ino ? -1 : 1);
	return (0);
}

/* The record of a shared inode of the layers, or NULL. */
static struct export_link *
export_link_find(void *links, const struct stat *st)
{
	struct export_link	  key, **found;

	if (st->st_nlink < 2)
		return (NULL);
	key.dev = st->st_dev;
	key.ino = st->st_ino;
	found = tfind(&key, &links, export_link_cmp);
	return (found != NULL ? *found : NULL);
}

/* Remember the first name of a shared inode of the layers. */
static struct export_link *
export_link_add(void **links, const struct stat *st, const char *path)
{
	struct export_link	*l, **found;

	l = xcalloc(1, sizeof *l);
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->path = xstrdup(path);
	found = tsearch(l, links, export_link_cmp);
	if (found == NULL)
		fatalx("tsearch failed");
	return (*found);
}

static void
export_link_free(void *p)
{
	struct export_link	*l = p;

	free(l->path);
	free(l);
}

/*
 * Charge one entry, holding bytes of data, against the export's limits:
 * -1 with f->error once either is passed.
 */
static int
export_charge(struct fold *f, unsigned long long bytes)
{
	struct export_ctx	*x = f->arg;

	x->entries++;
	x->data += bytes;
	if (x->entries > x->max_entries) {
		x->over = "max_entries";
		xasprintf(&f->error, "the export holds more than %llu entries"
		    " (max_entries; by default as many as the sandbox's disk"
		    " has inodes): nothing was written", x->max_entries);
		return (-1);
	}
	if (x->data > x->max_bytes) {
		x->over = "max_bytes";
		xasprintf(&f->error, "the export holds more than %llu bytes of"
		    " data (max_bytes; by default the size of the sandbox's"
		    " disk): nothing was written", x->max_bytes);
		return (-1);
	}
	return (0);
}

/* The data of a non-directory of the layers, as its disk holds it. */
static unsigned long long
export_data(const struct stat *st)
{
	unsigned long long	n = (unsigned long long)st->st_blocks * 512;

	if (!S_ISREG(st->st_mode))
		return (0);
	return (n < (unsigned long long)st->st_size ? n :
	    (unsigned long long)st->st_size);
}

/*
 * A dir export counts the whole delta first, with what it would write,
 * so that one past a limit writes nothing at all.
 */
static int
export_count_whiteout(struct fold *f, int out, const char *name,
    const char *path)
{
	return (export_charge(f, 0));
}

static int
export_count_leaf(struct fold *f, int src, const char *name,
    const struct stat *st, int out, const char *path)
{
	struct export_ctx	*x = f->arg;

	if (st->st_nlink > 1) {
		if (export_link_find(x->links, st) != NULL)
			return (export_charge(f, 0));
		export_link_add(&x->links, st, path);
	}
	return (export_charge(f, export_data(st)));
}

static int
export_count_dir(struct fold *f, int src, const char *name,
    const struct stat *st, int opaque, int out, const char *path)
{
	return (export_charge(f, 0));
}

static int
export_count_enter(struct fold *f, int out, const char *name,
    const char *path)
{
	return (AT_FDCWD);
}

static void
export_count_leave(struct fold *f, int cfd, const struct timespec *times,
    const char *path)
{
}

static const struct fold_ops export_count_ops = {
	.whiteout = export_count_whiteout,
	.leaf = export_count_leaf,
	.dir = export_count_dir,
	.enter = export_count_enter,
	.leave = export_count_leave,
	.clear = NULL,
};

/* ---- the child: what git would run ---- */

/* Whether component [p, p + len) names a git directory. */
static int
export_git_dir_name(const char *p, size_t len)
{
	return ((len == 4 && strncasecmp(p, ".git", 4) == 0) ||
	    (len > 4 && strncasecmp(p + len - 4, ".git", 4) == 0));
}

/*
 * Whether component [p, p + len) is a file of a git directory that names
 * programs or where the rest is read from: config and config.worktree
 * (core.fsmonitor, core.hooksPath, aliases, filters and pagers),
 * commondir.
 */
static int
export_git_config_name(const char *p, size_t len)
{
	return ((len == 6 && strncmp(p, "config", 6) == 0) ||
	    (len == 15 && strncmp(p, "config.worktree", 15) == 0) ||
	    (len == 9 && strncmp(p, "commondir", 9) == 0));
}

/*
 * Whether path (of the delta; dir: a directory) is, by its name, something
 * git runs or reads as its configuration, in a git directory (.git, or
 * NAME.git, a bare repository's usual name): its config files
 * (export_git_config_name), hooks/, info/attributes (which drivers run on
 * which files); the same anywhere under its
 * modules/ and worktrees/ (a submodule's name may hold slashes); and a
 * .git that is not a directory (it names a git directory elsewhere,
 * which may be the sandbox's); a HEAD outside a git directory (it makes
 * one). With deletion, a git directory itself or anything in it: that
 * would take the host's hooks, configuration or history along, and let
 * the sandbox's repository stand in its place.
 */
static int
export_git_name(const char *path, int dir, int deletion)
{
	const char	*p, *e, *p1 = NULL;
	size_t		 len, l1 = 0;
	int		 in = 0, nested = 0, at, last;

	for (p = path; *p != '\0'; p = last ? e : e + 1) {
		if ((e = strchr(p, '/')) == NULL)
			e = p + strlen(p);
		len = e - p;
		last = *e == '\0';
		/* Right in a git directory, or under its nested ones. */
		at = nested || (p1 != NULL && export_git_dir_name(p1, l1));
		if (at && len == 5 && strncmp(p, "hooks", 5) == 0)
			return (1);
		if (last && at && export_git_config_name(p, len))
			return (1);
		if (last && in && len == 10 && strncmp(p, "attributes",
		    10) == 0 && l1 == 4 && strncmp(p1, "info", 4) == 0)
			return (1);
		if (last && !dir && len == 4 && strncasecmp(p, ".git", 4) == 0)
			return (1);
		if (last && deletion && (in || export_git_dir_name(p, len)))
			return (1);
		/*
		 * HEAD outside a git directory would make its directory a
		 * repository (with objects/ and refs/), whose config git
		 * then reads: one written before, or after, HEAD.
		 */
		if (last && !dir && !in && len == 4 && strncmp(p, "HEAD",
		    4) == 0)
			return (1);
		if (p1 != NULL && export_git_dir_name(p1, l1) &&
		    ((len == 7 && strncmp(p, "modules", 7) == 0) ||
		    (len == 9 && strncmp(p, "worktrees", 9) == 0)))
			nested = 1;
		if (export_git_dir_name(p, len))
			in = 1;
		p1 = p;
		l1 = len;
	}
	return (0);
}

/*
 * Whether directory dir (of the delta, "" for the top) holds HEAD in any
 * layer of the stack, or (out not AT_FDCWD: a dir export's directory of
 * it in dest) in dest: git takes such a directory for a repository, bare,
 * whatever its name.
 */
static int
export_holds_head(struct fold *f, const char *dir, int out)
{
	struct stat	st;
	size_t		i;
	int		fd, r = 0;

	if (out != AT_FDCWD && fstatat(out, "HEAD", &st,
	    AT_SYMLINK_NOFOLLOW) == 0)
		return (1);
	for (i = 0; i < f->ls->n && !r; i++) {
		fd = *dir == '\0' ? dup(f->roots[i]) : tree_open(f->roots[i],
		    dir, O_RDONLY | O_DIRECTORY);
		if (fd == -1)
			continue;
		r = fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0;
		close(fd);
	}
	return (r);
}

/*
 * Whether path is something git runs (export_git_name), or one of those
 * names (config, config.worktree, commondir, hooks, info/attributes) in a
 * directory git takes for a repository because it holds HEAD. out: the
 * directory of path's parent in dest (dir export), or AT_FDCWD.
 */
static int
export_git_runs(struct fold *f, const char *path, int dir, int out,
    int deletion)
{
	const char	*base;
	char		*parent, *slash;
	int		 r = 0, up = 0;

	if (export_git_name(path, dir, deletion))
		return (1);
	base = (base = strrchr(path, '/')) != NULL ? base + 1 : path;
	if (strcmp(base, "attributes") == 0 && base - path >= 5 &&
	    strncmp(base - 5, "info/", 5) == 0 && (base - path == 5 ||
	    base[-6] == '/'))
		up = 2;
	else if (export_git_config_name(base, strlen(base)) ||
	    strcmp(base, "hooks") == 0)
		up = 1;
	if (up == 0)
		return (0);
	parent = xstrdup(path);
	while (up-- > 0) {
		if ((slash = strrchr(parent, '/')) != NULL)
			*slash = '\0';
		else
			*parent = '\0';
	}
	/* Two levels up, dest's directory of path is not at hand. */
	r = export_holds_head(f, parent, strcmp(base, "attributes") == 0 ?
	    AT_FDCWD : out);
	free(parent);
	return (r);
}

#define EXPORT_LEFT_OUT_LISTED	100

/*
 * Whether the export leaves path out (what git runs, unless asked for):
 * the first few such paths go into the result.
 */
static int
export_left_out(struct fold *f, const char *path, int dir, int out,
    int deletion)
{
	struct export_ctx	*x = f->arg;

	if ((x->args->flags & EXPORT_GIT_CONFIG) ||
	    !export_git_runs(f, path, dir, out, deletion))
		return (0);
	if (x->left_out == NULL)
		x->left_out = cJSON_CreateArray();
	if (x->nleft_out++ < EXPORT_LEFT_OUT_LISTED)
		cJSON_AddItemToArray(x->left_out, cJSON_CreateString(path));
	return (1);
}

/* Whether the export leaves path alone, without saying so again. */
static int
export_git_skip(struct fold *f, const char *path, int out)
{
	struct export_ctx	*x = f->arg;

	return (!(x->args->flags & EXPORT_GIT_CONFIG) &&
	    export_git_runs(f, path, 1, out, 0));
}

/* ---- the child: a dir export ---- */

/*
 * Whether path (relative to dest) is, or is under, a root of another
 * tenant's below dest, or (holds set) holds one: a dir export leaves
 * those alone.
 */
static int
export_hidden(struct export_ctx *x, const char *path, int holds)
{
	struct export_args	*a = x->args;
	size_t			 i;

	for (i = 0; i < a->nhidden; i++) {
		if (workspace_under(path, a->hidden[i]) ||
		    (holds && workspace_under(a->hidden[i], path)))
			return (1);
	}
	return (0);
}

/* Whether an open file holds the same bytes as another, of size. */
static int
export_same_bytes(struct export_ctx *x, int a, int b, off_t size)
{
	char	*bb = x->buf + EXPORT_CHUNK / 2;
	off_t	 off;
	ssize_t	 n, m;
	size_t	 want;

	for (off = 0; off < size; off += n) {
		want = size - off > EXPORT_CHUNK / 2 ? EXPORT_CHUNK / 2 :
		    (size_t)(size - off);
		if ((n = pread(a, x->buf, want, off)) <= 0 ||
		    (m = pread(b, bb, want, off)) != n ||
		    memcmp(x->buf, bb, n) != 0)
			return (0);
	}
	return (1);
}

/*
 * Whether two open files of size hold the same bytes where either is
 * sparse: the same data regions (SEEK_DATA, SEEK_HOLE), then the same
 * bytes in each; the holes cost nothing.
 */
static int
export_same_sparse(struct export_ctx *x, int a, int b, off_t size)
{
	char	*bb = x->buf + EXPORT_CHUNK / 2;
	off_t	 off, data, hole, d2, h2, at;
	ssize_t	 n;
	size_t	 want;

	for (off = 0; off < size; off = hole) {
		data = lseek(a, off, SEEK_DATA);
		d2 = lseek(b, off, SEEK_DATA);
		if (data == -1 || d2 == -1)
			return (data == d2 && errno == ENXIO);
		if (data != d2 || (hole = lseek(a, data, SEEK_HOLE)) == -1 ||
		    (h2 = lseek(b, data, SEEK_HOLE)) == -1 || hole != h2)
			return (0);
		for (at = data; at < hole; at += n) {
			want = hole - at > EXPORT_CHUNK / 2 ? EXPORT_CHUNK / 2 :
			    (size_t)(hole - at);
			if ((n = pread(a, x->buf, want, at)) <= 0 ||
			    pread(b, bb, want, at) != n ||
			    memcmp(x->buf, bb, n) != 0)
				return (0);
		}
	}
	return (1);
}

struct export_copy {
	int	fd;
};

static int
export_copy_cb(off_t off, const char *buf, size_t len, void *arg)
{
	struct export_copy	*c = arg;
	ssize_t			 n;

	while (len > 0) {
		if ((n = pwrite(c->fd, buf, len, off)) == -1) {
			if (errno == EINTR)
				continue;
			return (-1);
		}
		buf += n;
		off += n;
		len -= n;
	}
	return (0);
}

/* A temporary name in a directory for a file about to take its place. */
static void
export_temp_name(char *buf, size_t len)
{
	snprintf(buf, len, ".sandbox-mcp-export.%08x%08x", arc4random(),
	    arc4random());
}

/*
 * An unnamed file in dfd, or a named one (*named set) where the file
 * system has no unnamed files. -1 with errno.
 */
static int
export_temp_open(int dfd, mode_t mode, char *named, size_t len)
{
	int	fd;

	named[0] = '\0';
	fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd != -1 || (errno != EOPNOTSUPP && errno != EISDIR &&
	    errno != EINVAL))
		return (fd);
	export_temp_name(named, len);
	return (openat(dfd, named, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode));
}

/* Give the temporary file fd (named, or unnamed) the name leaf in dfd. */
static int
export_temp_place(int fd, int dfd, const char *named, const char *leaf)
{
	char	tmp[64];

	if (*named != '\0')
		return (renameat(dfd, named, dfd, leaf));
	export_temp_name(tmp, sizeof tmp);
	if (linkat(fd, "", dfd, tmp, AT_EMPTY_PATH) != 0)
		return (-1);
	if (renameat(dfd, tmp, dfd, leaf) != 0) {
		unlinkat(dfd, tmp, 0);
		return (-1);
	}
	return (0);
}

/* Make room at name in out for a non-directory: a directory there goes. */
static int
export_room(struct fold *f, int out, const char *name, const struct stat *st,
    const char *path)
{
	if (S_ISDIR(st->st_mode) && tree_remove(out, name) != 0) {
		xasprintf(&f->error, "cannot remove the directory %s of dest"
		    " to put a file there: %s", path, strerror(errno));
		return (-1);
	}
	return (0);
}

static int
export_dir_whiteout(struct fold *f, int out, const char *name,
    const char *path)
{
	struct export_ctx	*x = f->arg;
	struct stat		 st;

	if (export_hidden(x, path, 1) || export_left_out(f, path, 1, out, 1) ||
	    fstatat(out, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return (0);		/* not ours, or nothing to delete */
	if (tree_remove(out, name) != 0) {
		xasprintf(&f->error, "cannot delete %s in dest: %s", path,
		    strerror(errno));
		return (-1);
	}
	x->deletes++;
	return (0);
}

/*
 * Another name of an inode this export already put in dest: a link to
 * that name, made aside and renamed into place, when that name still
 * holds what the export put there. 1 when done, 0 to write a copy
 * instead, -1 with f->error.
 */
static int
export_dir_link(struct fold *f, struct export_link *l, int out,
    const char *name, const char *path)
{
	struct export_ctx	*x = f->arg;
	struct stat		 st, now;
	char			*parent, *leaf, tmp[64];
	int			 pfd, r = 0;

	parent = xstrdup(l->path);
	if ((leaf = strrchr(parent, '/')) != NULL) {
		*leaf++ = '\0';
		pfd = tree_open(x->outfd, parent, O_RDONLY | O_DIRECTORY);
	} else {
		leaf = parent;
		pfd = dup(x->outfd);
	}
	/* Not what was put there: a copy. */
	if (pfd == -1 || fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    !S_ISREG(st.st_mode) || st.st_dev != l->ddev ||
	    st.st_ino != l->dino)
		goto out;
	if (fstatat(out, name, &now, AT_SYMLINK_NOFOLLOW) == 0) {
		if (now.st_dev == l->ddev && now.st_ino == l->dino) {
			x->skipped++;
			r = 1;
			goto out;
		}
		if (export_room(f, out, name, &now, path) != 0) {
			r = -1;
			goto out;
		}
	}
	export_temp_name(tmp, sizeof tmp);
	if (linkat(pfd, leaf, out, tmp, 0) != 0)
		goto out;
	/* What was linked is what the export had put there. */
	if (fstatat(out, tmp, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
	    st.st_dev != l->ddev || st.st_ino != l->dino) {
		unlinkat(out, tmp, 0);
		goto out;
	}
	if (renameat(out, tmp, out, name) != 0) {
		xasprintf(&f->error, "cannot link %s in dest: %s", path,
		    strerror(errno));
		unlinkat(out, tmp, 0);
		r = -1;
		goto out;
	}
	x->hardlinks++;
	r = 1;
out:
	if (pfd != -1)
		close(pfd);
	free(parent);
	return (r);
}

static int
export_dir_file(struct fold *f, int src, const char *name,
    const struct stat *lst, int out, const char *path)
{
	struct export_ctx	*x = f->arg;
	struct export_copy	 c;
	struct export_link	*l = NULL;
	struct stat		 st, now;
	char			 named[64];
	mode_t			 mode;
	int			 sfd, dfd, same = 0, have, r;

	if (lst->st_nlink > 1 && (l = export_link_find(x->links, lst)) !=
	    NULL && l->placed) {
		if ((r = export_dir_link(f, l, out, name, path)) != 0)
			return (r == 1 ? 0 : -1);
	}

	if ((sfd = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1 || fstat(sfd, &st) != 0 || !S_ISREG(st.st_mode)) {
		xasprintf(&f->error, "cannot read %s in its layer: %s", path,
		    strerror(errno));
		if (sfd != -1)
			close(sfd);
		return (-1);
	}
	mode = st.st_mode & 0777;
	/*
	 * Compared byte for byte where both hold every byte, region by
	 * region where either is sparse (its holes cost nothing); the mode
	 * set in place only on an inode no other name shares.
	 */
	have = fstatat(out, name, &now, AT_SYMLINK_NOFOLLOW) == 0;
	if (have && S_ISREG(now.st_mode) && now.st_size == st.st_size &&
	    (dfd = openat(out, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY | O_CLOEXEC)) != -1) {
		if (fstat(dfd, &now) == 0 && S_ISREG(now.st_mode) &&
		    now.st_size == st.st_size)
			same = (off_t)st.st_blocks * 512 >= st.st_size &&
			    (off_t)now.st_blocks * 512 >= now.st_size ?
			    export_same_bytes(x, sfd, dfd, st.st_size) :
			    export_same_sparse(x, sfd, dfd, st.st_size);
		if (same && (now.st_mode & 07777) != mode) {
			if (now.st_nlink == 1)
				fchmod(dfd, mode);
			else
				same = 0;	/* a new inode of its own */
		}
		close(dfd);
	}
	if (same) {
		close(sfd);
		x->skipped++;
		/* Linked to only when no other name shares it. */
		if (lst->st_nlink > 1 && l == NULL) {
			l = export_link_add(&x->links, lst, path);
			if (now.st_nlink == 1) {
				l->ddev = now.st_dev;
				l->dino = now.st_ino;
				l->placed = 1;
			}
		}
		return (0);
	}
	/*
	 * Another name of an inode already seen, written as a copy after all
	 * (its first name is on another file system of dest, or no longer
	 * what was put there): counted, as the count before could not.
	 */
	if (l != NULL) {
		x->data += export_data(lst);
		if (x->data > x->max_bytes) {
			x->over = "max_bytes";
			xasprintf(&f->error, "the export holds more than %llu"
			    " bytes of data (max_bytes) once names that could"
			    " not be linked in dest are copies: it stopped at"
			    " %s", x->max_bytes, path);
			close(sfd);
			return (-1);
		}
	}
	if (have && export_room(f, out, name, &now, path) != 0) {
		close(sfd);
		return (-1);
	}
	/*
	 * Written whole aside (an unnamed file) and renamed into place:
	 * dest never holds half a file, whatever kills the export.
	 */
	dfd = export_temp_open(out, 0600, named, sizeof named);
	if (dfd == -1) {
		xasprintf(&f->error, "cannot write %s in dest: %s", path,
		    strerror(errno));
		close(sfd);
		return (-1);
	}
	c.fd = dfd;
	if (tree_extents(sfd, st.st_size, export_copy_cb, &c) != 0 ||
	    ftruncate(dfd, st.st_size) != 0 ||
	    fchown(dfd, x->uid, x->gid) != 0 || fchmod(dfd, mode) != 0 ||
	    export_temp_place(dfd, out, named, name) != 0) {
		xasprintf(&f->error, "cannot write %s in dest: %s", path,
		    strerror(errno));
		if (*named != '\0')
			unlinkat(out, named, 0);
		close(dfd);
		close(sfd);
		return (-1);
	}
	if (lst->st_nlink > 1 && (l == NULL || !l->placed) &&
	    fstat(dfd, &now) == 0) {
		if (l == NULL)
			l = export_link_add(&x->links, lst, path);
		else {
			free(l->path);
			l->path = xstrdup(path);
		}
		l->ddev = now.st_dev;
		l->dino = now.st_ino;
		l->placed = 1;
	}
	close(dfd);
	close(sfd);
	x->files++;
	x->bytes += st.st_size;
	return (0);
}

static int
export_dir_symlink(struct fold *f, int src, const char *name, int out,
    const char *path)
{
	struct export_ctx	*x = f->arg;
	struct stat		 now;
	char			 target[PATH_MAX], old[PATH_MAX];
	char			 tmp[NAME_MAX + 1];
	ssize_t			 n, m;
	int			 have;

	if ((n = readlinkat(src, name, target, sizeof target - 1)) < 0) {
		xasprintf(&f->error, "cannot read the symlink %s in its"
		    " layer: %s", path, strerror(errno));
		return (-1);
	}
	target[n] = '\0';
	have = fstatat(out, name, &now, AT_SYMLINK_NOFOLLOW) == 0;
	if (have && S_ISLNK(now.st_mode) && (m = readlinkat(out, name, old,
	    sizeof old - 1)) == n && memcmp(old, target, n) == 0) {
		x->skipped++;
		return (0);
	}
	if (have && export_room(f, out, name, &now, path) != 0)
		return (-1);
	/* A symlink is made whole: at a free name, in place. */
	if (!have || S_ISDIR(now.st_mode))
		strlcpy(tmp, name, sizeof tmp);
	else
		export_temp_name(tmp, sizeof tmp);
	if (symlinkat(target, out, tmp) != 0 || fchownat(out, tmp, x->uid,
	    x->gid, AT_SYMLINK_NOFOLLOW) != 0 ||
	    (strcmp(tmp, name) != 0 && renameat(out, tmp, out, name) != 0)) {
		xasprintf(&f->error, "cannot write the symlink %s in dest: %s",
		    path, strerror(errno));
		if (strcmp(tmp, name) != 0)
			unlinkat(out, tmp, 0);
		return (-1);
	}
	x->symlinks++;
	return (0);
}

static int
export_dir_leaf(struct fold *f, int src, const char *name,
    const struct stat *st, int out, const char *path)
{
	if (export_hidden(f->arg, path, 1) || export_left_out(f, path, 0, out,
	    0))
		return (0);
	if (S_ISREG(st->st_mode))
		return (export_dir_file(f, src, name, st, out, path));
	if (S_ISLNK(st->st_mode))
		return (export_dir_symlink(f, src, name, out, path));
	return (0);	/* a device or a fifo never reaches the host */
}

static int
export_dir_mkdir(struct fold *f, int src, const char *name,
    const struct stat *st, int opaque, int out, const char *path)
{
	struct export_ctx	*x = f->arg;
	struct stat		 now;
	int			 fd;

	if (export_hidden(x, path, 0) || export_left_out(f, path, 1, out, 0))
		return (0);
	if (fstatat(out, name, &now, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(now.st_mode))
			return (0);
		if (unlinkat(out, name, 0) != 0) {
			xasprintf(&f->error, "cannot remove %s in dest to make"
			    " a directory there: %s", path, strerror(errno));
			return (-1);
		}
	}
	/*
	 * Owner and mode through a descriptor of what is at name now, not
	 * by name: a host process may swap a symlink in meanwhile.
	 */
	if (mkdirat(out, name, 0700) != 0 || (fd = openat(out, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		xasprintf(&f->error, "cannot make the directory %s in dest:"
		    " %s", path, strerror(errno));
		return (-1);
	}
	if (fchown(fd, x->uid, x->gid) != 0 ||
	    fchmod(fd, st->st_mode & 01777) != 0) {
		xasprintf(&f->error, "cannot set up the directory %s in dest:"
		    " %s", path, strerror(errno));
		close(fd);
		return (-1);
	}
	close(fd);
	return (0);
}

static int
export_dir_enter(struct fold *f, int out, const char *name, const char *path)
{
	int	cfd;

	if (export_hidden(f->arg, path, 0) || export_git_skip(f, path, out))
		return (FOLD_SKIP);	/* (said when it was made) */
	if ((cfd = openat(out, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		xasprintf(&f->error, "cannot open the directory %s in dest:"
		    " %s", path, strerror(errno));
	return (cfd);
}

static void
export_dir_leave(struct fold *f, int cfd, const struct timespec *times,
    const char *path)
{
	close(cfd);
}

static int
export_bsearch_cmp(const void *key, const void *elem)
{
	return (strcmp(key, *(char *const *)elem));
}

/* Whether path is, or is in, a git directory. */
static int
export_in_git(const char *path)
{
	const char	*p, *e;

	for (p = path; *p != '\0'; p = *e == '\0' ? e : e + 1) {
		if ((e = strchr(p, '/')) == NULL)
			e = p + strlen(p);
		if (export_git_dir_name(p, e - p))
			return (1);
	}
	return (0);
}

/* An opaque directory: every name of dest the delta does not have goes. */
static int
export_dir_clear(struct fold *f, int out, char **kept, size_t nkept,
    const char *path)
{
	struct export_ctx	*x = f->arg;
	struct dirent		*de;
	DIR			*d;
	char			**gone = NULL, *child;
	size_t			 ngone = 0, i;
	int			 fd, r = 0, hidden;

	/* A git directory replaced whole keeps the host's (deletions). */
	if (!(x->args->flags & EXPORT_GIT_CONFIG) && export_in_git(path))
		return (0);

	if ((fd = dup(out)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		xasprintf(&f->error, "cannot read %s in dest: %s",
		    *path != '\0' ? path : "/", strerror(errno));
		return (-1);
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    bsearch(de->d_name, kept, nkept, sizeof *kept,
		    export_bsearch_cmp) != NULL)
			continue;
		if (*path != '\0')
			xasprintf(&child, "%s/%s", path, de->d_name);
		else
			child = xstrdup(de->d_name);
		hidden = export_hidden(x, child, 1) ||
		    export_git_skip(f, child, out);
		free(child);
		if (hidden)
			continue;
		if (ngone == FOLD_ENTRIES_MAX) {
			xasprintf(&f->error, "%s in dest holds more than %d"
			    " names", path, FOLD_ENTRIES_MAX);
			r = -1;
			break;
		}
		gone = xreallocarray(gone, ngone + 1, sizeof *gone);
		gone[ngone++] = xstrdup(de->d_name);
	}
	closedir(d);
	for (i = 0; i < ngone; i++) {
		if (r == 0 && tree_remove(out, gone[i]) != 0) {
			xasprintf(&f->error, "cannot clear %s/%s in dest: %s",
			    path, gone[i], strerror(errno));
			r = -1;
		}
		free(gone[i]);
	}
	free(gone);
	if (r == 0 && ngone > 0)
		x->clears++;
	return (r);
}

static const struct fold_ops export_dir_ops = {
	.whiteout = export_dir_whiteout,
	.leaf = export_dir_leaf,
	.dir = export_dir_mkdir,
	.enter = export_dir_enter,
	.leave = export_dir_leave,
	.clear = export_dir_clear,
};

/* ---- the child: an archive ---- */

static int
export_out_write(struct export_ctx *x, const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		if ((n = write(x->outfd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			if (x->error == NULL)
				xasprintf(&x->error, "cannot write the"
				    " archive: %s", strerror(errno));
			return (-1);
		}
		p += n;
		len -= n;
		x->bytes += n;
	}
	return (0);
}

/* Compress what libarchive hands over (end: flush the frame). */
static int
export_zstd(struct export_ctx *x, const void *buf, size_t len, int end)
{
	ZSTD_inBuffer	 in = { buf, len, 0 };
	ZSTD_outBuffer	 out;
	size_t		 left;

	for (;;) {
		out.dst = x->zbuf;
		out.size = x->zlen;
		out.pos = 0;
		left = ZSTD_compressStream2(x->zc, &out, &in, end ?
		    ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(left)) {
			if (x->error == NULL)
				xasprintf(&x->error, "zstd: %s",
				    ZSTD_getErrorName(left));
			return (-1);
		}
		if (out.pos > 0 && export_out_write(x, x->zbuf, out.pos) != 0)
			return (-1);
		if (end ? left == 0 : in.pos == in.size)
			return (0);
	}
}

static la_ssize_t
export_ar_write(struct archive *a, void *arg, const void *buf, size_t len)
{
	struct export_ctx	*x = arg;
	int			 r;

	if (x->zc != NULL)
		r = export_zstd(x, buf, len, 0);
	else
		r = export_out_write(x, buf, len);
	return (r == 0 ? (la_ssize_t)len : -1);
}

/* An archive error as f->error. */
static int
export_ar_error(struct fold *f, const char *path)
{
	struct export_ctx	*x = f->arg;

	if (x->error != NULL) {
		f->error = x->error;
		x->error = NULL;
	} else
		xasprintf(&f->error, "cannot archive %s: %s", path,
		    archive_error_string(x->ar) != NULL ?
		    archive_error_string(x->ar) : "unknown error");
	return (-1);
}

/* A fresh entry for path with the layer's metadata of st. */
static struct archive_entry *
export_entry(struct export_ctx *x, const char *path, const struct stat *st)
{
	struct archive_entry	*e = x->entry;

	archive_entry_clear(e);
	archive_entry_update_pathname_utf8(e, path);
	/*
	 * Unpacked as root (GNU tar's default for root), a set-id bit
	 * would install a program the sandbox wrote as set-id root.
	 */
	archive_entry_set_mode(e, (x->args->flags & EXPORT_KEEP_SETID) ?
	    st->st_mode : st->st_mode & ~(mode_t)(S_ISUID | S_ISGID));
	archive_entry_set_uid(e, st->st_uid);
	archive_entry_set_gid(e, st->st_gid);
	archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	return (e);
}

/* An empty whiteout file of name in directory path ("" at the root). */
static int
export_ar_marker(struct fold *f, const char *dir, const char *name,
    const struct stat *st)
{
	struct export_ctx	*x = f->arg;
	struct archive_entry	*e;
	struct stat		 w;
	char			*path;
	int			 r;

	if (export_charge(f, 0) != 0)
		return (-1);
	memset(&w, 0, sizeof w);
	w.st_mode = S_IFREG | 0644;
	w.st_mtim = st->st_mtim;
	if (*dir != '\0')
		xasprintf(&path, "%s/%s", dir, name);
	else
		path = xstrdup(name);
	e = export_entry(x, path, &w);
	archive_entry_set_size(e, 0);
	r = archive_write_header(x->ar, e) == ARCHIVE_OK ? 0 :
	    export_ar_error(f, path);
	free(path);
	if (r == 0)
		x->whiteouts++;
	return (r);
}

static int
export_ar_whiteout(struct fold *f, int out, const char *name,
    const char *path)
{
	struct stat	 st;
	char		*dir, *wh;
	int		 r;

	if (export_left_out(f, path, 1, AT_FDCWD, 1))
		return (0);
	memset(&st, 0, sizeof st);
	clock_gettime(CLOCK_REALTIME, &st.st_mtim);
	dir = xstrdup(path);
	if (strrchr(dir, '/') != NULL)
		*strrchr(dir, '/') = '\0';
	else
		*dir = '\0';
	xasprintf(&wh, ".wh.%s", name);
	r = export_ar_marker(f, dir, wh, &st);
	free(wh);
	free(dir);
	return (r);
}

/* Feed n bytes of zeros (a hole, or a file that shrank) to the entry. */
static int
export_ar_zeros(struct export_ctx *x, off_t n)
{
	size_t	want;

	while (n > 0) {
		want = n > EXPORT_CHUNK ? EXPORT_CHUNK : (size_t)n;
		if (archive_write_data(x->ar, x->zero, want) != (la_ssize_t)want)
			return (-1);
		n -= want;
	}
	return (0);
}

/*
 * The data regions of a sparse file into the entry's map (0), or -1 when
 * it has more than EXPORT_SPARSE_MAX of them.
 */
static int
export_ar_sparse(struct archive_entry *e, int fd, off_t size)
{
	off_t	data, hole, off;
	size_t	n = 0;

	for (off = 0; off < size; off = hole) {
		if ((data = lseek(fd, off, SEEK_DATA)) == -1) {
			if (errno == ENXIO)
				break;
			data = off;
			hole = size;
		} else if ((hole = lseek(fd, data, SEEK_HOLE)) == -1 ||
		    hole > size)
			hole = size;
		if (data >= size)
			break;
		if (++n > EXPORT_SPARSE_MAX)
			return (-1);
		archive_entry_sparse_add_entry(e, data, hole - data);
	}
	if (n == 0)
		archive_entry_sparse_add_entry(e, size, 0);
	return (0);
}

struct export_feed {
	struct export_ctx	*x;
	off_t			 pos;
};

static int
export_feed_cb(off_t off, const char *buf, size_t len, void *arg)
{
	struct export_feed	*fe = arg;

	if (off > fe->pos && export_ar_zeros(fe->x, off - fe->pos) != 0)
		return (-1);
	if (archive_write_data(fe->x->ar, buf, len) != (la_ssize_t)len)
		return (-1);
	fe->pos = off + len;
	return (0);
}

static int
export_ar_file(struct fold *f, int src, const char *name, const char *path)
{
	struct export_ctx	*x = f->arg;
	struct archive_entry	*e;
	struct export_feed	 fe;
	struct export_link	*l;
	struct stat		 st;
	int			 fd, r;

	if ((fd = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		xasprintf(&f->error, "cannot read %s in its layer: %s", path,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return (-1);
	}
	/* Another name of a file already in the archive: a link entry. */
	if (st.st_nlink > 1 && (l = export_link_find(x->links, &st)) !=
	    NULL) {
		close(fd);
		if (export_charge(f, 0) != 0)
			return (-1);
		e = export_entry(x, path, &st);
		archive_entry_update_hardlink_utf8(e, l->path);
		archive_entry_set_size(e, 0);
		if (archive_write_header(x->ar, e) != ARCHIVE_OK)
			return (export_ar_error(f, path));
		x->hardlinks++;
		return (0);
	}
	if (export_charge(f, export_data(&st)) != 0) {
		close(fd);
		return (-1);
	}
	if (st.st_nlink > 1)
		export_link_add(&x->links, &st, path);
	e = export_entry(x, path, &st);
	archive_entry_set_size(e, st.st_size);
	if ((off_t)st.st_blocks * 512 < st.st_size &&
	    tree_sparse(fd, st.st_size) && export_ar_sparse(e, fd,
	    st.st_size) != 0) {
		xasprintf(&f->error, "%s has more than %d data regions: it"
		    " cannot be archived", path, EXPORT_SPARSE_MAX);
		close(fd);
		return (-1);
	}
	if (archive_write_header(x->ar, e) != ARCHIVE_OK) {
		close(fd);
		return (export_ar_error(f, path));
	}
	fe.x = x;
	fe.pos = 0;
	/* The header said st_size: a file that shrank meanwhile is padded. */
	r = tree_extents(fd, st.st_size, export_feed_cb, &fe);
	if (r == 0 && fe.pos < st.st_size)
		r = export_ar_zeros(x, st.st_size - fe.pos);
	close(fd);
	if (r != 0) {
		if (x->error == NULL && archive_errno(x->ar) == 0)
			xasprintf(&f->error, "cannot read %s in its layer: %s",
			    path, strerror(errno));
		else
			return (export_ar_error(f, path));
		return (-1);
	}
	x->files++;
	return (0);
}

static int
export_ar_leaf(struct fold *f, int src, const char *name,
    const struct stat *st, int out, const char *path)
{
	struct export_ctx	*x = f->arg;
	struct archive_entry	*e;
	char			 target[PATH_MAX];
	ssize_t			 n;

	if (export_left_out(f, path, 0, AT_FDCWD, 0))
		return (0);
	if (S_ISREG(st->st_mode))
		return (export_ar_file(f, src, name, path));
	if (!S_ISLNK(st->st_mode))
		return (0);	/* a device or a fifo is not archived */
	if ((n = readlinkat(src, name, target, sizeof target - 1)) < 0) {
		xasprintf(&f->error, "cannot read the symlink %s in its"
		    " layer: %s", path, strerror(errno));
		return (-1);
	}
	target[n] = '\0';
	if (export_charge(f, 0) != 0)
		return (-1);
	e = export_entry(x, path, st);
	archive_entry_update_symlink_utf8(e, target);
	archive_entry_set_size(e, 0);
	if (archive_write_header(x->ar, e) != ARCHIVE_OK)
		return (export_ar_error(f, path));
	x->symlinks++;
	return (0);
}

static int
export_ar_dir(struct fold *f, int src, const char *name,
    const struct stat *st, int opaque, int out, const char *path)
{
	struct export_ctx	*x = f->arg;
	struct archive_entry	*e;

	if (export_left_out(f, path, 1, AT_FDCWD, 0))
		return (0);
	if (export_charge(f, 0) != 0)
		return (-1);
	e = export_entry(x, path, st);
	archive_entry_set_size(e, 0);
	if (archive_write_header(x->ar, e) != ARCHIVE_OK)
		return (export_ar_error(f, path));
	if (opaque && ((x->args->flags & EXPORT_GIT_CONFIG) ||
	    !export_in_git(path)))
		return (export_ar_marker(f, path, ".wh..wh..opq", st));
	return (0);
}

static int
export_ar_enter(struct fold *f, int out, const char *name, const char *path)
{
	if (export_git_skip(f, path, AT_FDCWD))
		return (FOLD_SKIP);	/* (said when it was met) */
	return (AT_FDCWD);	/* an archive has no output directories */
}

static void
export_ar_leave(struct fold *f, int cfd, const struct timespec *times,
    const char *path)
{
}

static const struct fold_ops export_ar_ops = {
	.whiteout = export_ar_whiteout,
	.leaf = export_ar_leaf,
	.dir = export_ar_dir,
	.enter = export_ar_enter,
	.leave = export_ar_leave,
	.clear = NULL,		/* an opaque directory is its marker */
};

/* Set up the archive's writer on x->outfd. */
static int
export_ar_open(struct export_ctx *x, char **msg)
{
	x->ar = archive_write_new();
	x->entry = archive_entry_new();
	if (x->ar == NULL || x->entry == NULL) {
		xasprintf(msg, "cannot set up the archive");
		return (-1);
	}
	if (x->format == EXPORT_TAR_ZST) {
		if ((x->zc = ZSTD_createCCtx()) == NULL ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(x->zc,
		    ZSTD_c_compressionLevel, EXPORT_ZSTD_LEVEL)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(x->zc,
		    ZSTD_c_checksumFlag, 1))) {
			xasprintf(msg, "cannot set up zstd");
			return (-1);
		}
		x->zlen = ZSTD_CStreamOutSize();
		x->zbuf = xmalloc(x->zlen);
	}
	if (archive_write_set_format_pax_restricted(x->ar) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(x->ar, 64 * 1024) !=
	    ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(x->ar, 1) != ARCHIVE_OK ||
	    archive_write_open(x->ar, x, NULL, export_ar_write, NULL) !=
	    ARCHIVE_OK) {
		xasprintf(msg, "cannot set up the archive: %s",
		    archive_error_string(x->ar));
		return (-1);
	}
	return (0);
}

/* End the archive and its compression. */
static int
export_ar_close(struct export_ctx *x, char **msg)
{
	if (archive_write_close(x->ar) != ARCHIVE_OK ||
	    (x->zc != NULL && export_zstd(x, NULL, 0, 1) != 0)) {
		if (x->error != NULL) {
			*msg = x->error;
			x->error = NULL;
		} else
			xasprintf(msg, "cannot end the archive: %s",
			    archive_error_string(x->ar));
		return (-1);
	}
	return (0);
}

/* ---- the child ---- */

/* The snapshot: the manifest as it is, its layers held. */
static struct layer_stack *
export_snapshot(const char *sbox, struct layer_hold *hold, char **msg)
{
	struct layer_stack	*ls;
	int			 tries, r;

	for (tries = 0; tries < EXPORT_HOLD_TRIES; tries++) {
		if ((ls = layer_stack_read(sbox, msg)) == NULL)
			return (NULL);
		if ((r = layer_hold(ls, hold, msg)) == 0)
			return (ls);
		layer_stack_free(ls);
		if (r == -1)
			return (NULL);
	}
	xasprintf(msg, "the stack kept changing under the export; try again");
	return (NULL);
}

static cJSON *
export_result(struct export_ctx *x, struct layer_stack *ls, cJSON *live)
{
	cJSON	*rep;

	rep = cJSON_CreateObject();
	cJSON_AddNumberToObject(rep, "manifest_version", ls->version);
	cJSON_AddStringToObject(rep, "format", export_formats[x->format]);
	cJSON_AddNumberToObject(rep, "layers_exported", (double)(ls->n - 1));
	cJSON_AddNumberToObject(rep, "files_written", (double)x->files);
	cJSON_AddNumberToObject(rep, "symlinks_written", (double)x->symlinks);
	if (x->hardlinks > 0)
		cJSON_AddNumberToObject(rep, "hardlinks_written",
		    (double)x->hardlinks);
	if (x->format == EXPORT_DIR) {
		cJSON_AddNumberToObject(rep, "deletes_applied",
		    (double)x->deletes);
		cJSON_AddNumberToObject(rep, "opaque_clears",
		    (double)x->clears);
		cJSON_AddNumberToObject(rep, "skipped_unchanged",
		    (double)x->skipped);
	} else
		cJSON_AddNumberToObject(rep, "whiteouts_emitted",
		    (double)x->whiteouts);
	cJSON_AddNumberToObject(rep, "bytes_written", (double)x->bytes);
	if (x->nleft_out > 0) {
		cJSON_AddItemToObject(rep, "left_out", x->left_out);
		x->left_out = NULL;
		cJSON_AddNumberToObject(rep, "left_out_count",
		    (double)x->nleft_out);
	}
	if (cJSON_GetArraySize(live) > 0)
		cJSON_AddItemToObject(rep, "live_workspace_sessions", live);
	else
		cJSON_Delete(live);
	return (rep);
}

/*
 * The export's limits: as asked, or the size and the inodes of the file
 * system the sandbox's stack is on (its disk), which an export of what
 * it holds, shared inodes written once, never passes.
 */
static void
export_limits(struct export_args *a, struct export_ctx *x, int top)
{
	struct statvfs	sv;

	if (fstatvfs(top, &sv) != 0)
		memset(&sv, 0, sizeof sv);	/* nothing known */
	x->max_bytes = a->max_bytes;
	if (x->max_bytes == 0)
		x->max_bytes = (unsigned long long)sv.f_blocks * sv.f_frsize;
	x->max_entries = a->max_entries;
	if (x->max_entries == 0)
		x->max_entries = sv.f_files != 0 ?
		    (unsigned long long)sv.f_files : x->max_bytes / 4096;
	if (x->max_bytes == 0)
		x->max_bytes = 1;	/* nothing known: nothing passes */
	if (x->max_entries == 0)
		x->max_entries = 1;
}

int
export_child(void *arg, int fd)
{
	struct export_args	*a = arg;
	struct export_ctx	 x;
	struct layer_hold	 hold = { NULL, NULL, 0 };
	struct layer_stack	*ls = NULL;
	struct fold		 f;
	const char		*leaf, *ro[2];
	char			*msg = NULL, *stack, named[64], num[32];
	size_t			*run = NULL, below[1], i;
	cJSON			*live, *rep;
	int			 dfd, ofd = -1, r = 1, *roots = NULL;
	iconv_t			 cd;
	struct rusage		 ru;

	memset(&x, 0, sizeof x);
	memset(&f, 0, sizeof f);
	x.format = a->format;
	x.args = a;
	x.outfd = -1;
	x.made = -1;
	named[0] = '\0';
	if ((dfd = export_open_dest(a, &x, &leaf, &msg)) == -1) {
		r = job_fail(fd, CAUSE_INVALID, "dest", a->dest, "%s", msg);
		free(msg);
		return (r);
	}
	if ((ls = export_snapshot(a->sandbox, &hold, &msg)) == NULL) {
		job_fail(fd, CAUSE_FAILED, "sandbox_id", a->sandbox, "export"
		    " to %s: %s", a->dest, msg);
		free(msg);
		close(dfd);
		return (1);
	}
	live = cJSON_CreateArray();
	squash_managed_sessions(a->sandbox, live);

	roots = xcalloc(ls->n, sizeof *roots);
	for (i = 0; i < ls->n; i++)
		roots[i] = -1;
	for (i = 0; i < ls->n; i++) {
		if ((roots[i] = open(ls->paths[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1) {
			xasprintf(&msg, "cannot open layer %s: %s", ls->ids[i],
			    strerror(errno));
			goto fail;
		}
	}
	export_limits(a, &x, roots[0]);
	if (a->format != EXPORT_DIR) {
		/*
		 * libarchive converts names with iconv, whose configuration
		 * is read on first use: read it while it can be, in a
		 * locale whose charset is the names' own.
		 */
		setlocale(LC_CTYPE, "C.UTF-8");
		if ((cd = iconv_open("UTF-8", "UTF-8")) != (iconv_t)-1)
			iconv_close(cd);
	}
	stack = state_where(STATE_STACK, a->sandbox, NULL);
	ro[0] = stack;
	ro[1] = ls->paths[ls->n - 1];
	if (confine_enter(NULL, 0, ro, 2, &msg) != 0) {
		free(stack);
		goto fail;
	}
	free(stack);

	x.buf = xmalloc(EXPORT_CHUNK);
	x.zero = xcalloc(1, EXPORT_CHUNK);
	if (a->format == EXPORT_DIR)
		x.outfd = dfd;
	else {
		if ((ofd = export_temp_open(dfd, 0644, named,
		    sizeof named)) == -1) {
			xasprintf(&msg, "cannot write beside %s: %s", a->dest,
			    strerror(errno));
			goto fail;
		}
		x.outfd = ofd;
		if (export_ar_open(&x, &msg) != 0)
			goto fail;
	}

	f.arg = &x;
	f.roots = roots;
	f.ls = ls;
	run = xcalloc(ls->n, sizeof *run);
	for (i = 0; i + 1 < ls->n; i++)
		run[i] = i;
	below[0] = ls->n - 1;
	/*
	 * A dir export is counted whole before anything is written (one past
	 * a limit touches nothing); an archive counts as it goes, and one
	 * past a limit never takes dest's name.
	 */
	if (a->format == EXPORT_DIR && ls->n > 1) {
		f.ops = &export_count_ops;
		if (fold_dir(&f, "", run, ls->n - 1, below, 1, 0,
		    AT_FDCWD) != 0) {
			msg = f.error;
			f.error = NULL;
			goto fail;
		}
		/* The total stays: a link that must be a copy adds to it. */
		tdestroy(x.links, export_link_free);
		x.links = NULL;
	}
	f.ops = a->format == EXPORT_DIR ? &export_dir_ops : &export_ar_ops;
	if (ls->n > 1 && fold_dir(&f, "", run, ls->n - 1, below, 1, 0,
	    a->format == EXPORT_DIR ? dfd : AT_FDCWD) != 0) {
		msg = f.error;
		f.error = NULL;
		goto fail;
	}

	/*
	 * A dir export is as durable as a copy (no sync: a sync of dest's
	 * file system would write out whatever else is dirty on it); an
	 * archive is synced before it takes dest's name.
	 */
	if (a->format != EXPORT_DIR) {
		if (export_ar_close(&x, &msg) != 0)
			goto fail;
		if (fchown(ofd, x.uid, x.gid) != 0 || fsync(ofd) != 0 ||
		    export_temp_place(ofd, dfd, named, leaf) != 0 ||
		    fsync(dfd) != 0) {
			xasprintf(&msg, "cannot put the archive at %s: %s",
			    a->dest, strerror(errno));
			goto fail;
		}
		named[0] = '\0';
	}
	rep = export_result(&x, ls, live);
	live = NULL;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cJSON_AddNumberToObject(rep, "peak_rss_kib",
		    (double)ru.ru_maxrss);
	r = job_answer(fd, rep, NULL);
	cJSON_Delete(rep);
	goto out;

fail:
	if (x.over != NULL) {
		/* A limit passed: the caller's to raise. */
		snprintf(num, sizeof num, "%llu", strcmp(x.over,
		    "max_bytes") == 0 ? x.max_bytes : x.max_entries);
		job_fail(fd, CAUSE_INVALID, x.over, num, "%s", msg);
	} else
		job_fail(fd, CAUSE_FAILED, "sandbox_id", a->sandbox, "export"
		    " to %s: %s", a->dest, msg != NULL ? msg :
		    "the export failed");
	free(msg);
	if (*named != '\0')
		unlinkat(dfd, named, 0);
	/* A dest this export made and left empty goes with it. */
	if (x.made != -1)
		unlinkat(x.made, leaf, AT_REMOVEDIR);
out:
	if (x.made != -1)
		close(x.made);
	cJSON_Delete(live);
	cJSON_Delete(x.left_out);
	tdestroy(x.links, export_link_free);
	if (x.ar != NULL)
		archive_write_free(x.ar);
	if (x.entry != NULL)
		archive_entry_free(x.entry);
	ZSTD_freeCCtx(x.zc);
	free(x.zbuf);
	free(x.buf);
	free(x.zero);
	free(x.error);
	free(f.error);
	free(run);
	if (ofd != -1)
		close(ofd);
	close(dfd);
	for (i = 0; roots != NULL && i < ls->n; i++) {
		if (roots[i] != -1)
			close(roots[i]);
	}
	free(roots);
	layer_hold_release(&hold);
	layer_stack_free(ls);
	return (r);
}

/* ---- the server ---- */

static void
export_free(struct export *e)
{
	size_t	i;

	LIST_REMOVE(e, entry);
	for (i = 0; i < e->args.nhidden; i++)
		free(e->args.hidden[i]);
	free(e->args.hidden);
	free(e->args.sandbox);
	free(e->args.dest);
	free(e->tenant);
	free(e);
}

static void
export_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct export	*e = arg;
	cJSON		*ev;
	double		 rss;

	if (cause != NULL) {
		log_warnx("sandbox %s: export to %s: %s", e->args.sandbox,
		    e->args.dest, cause->message);
		e->cb(NULL, cause, e->arg);
	} else {
		/* The child's peak memory is the operator's, not the caller's. */
		rss = cJSON_GetNumberValue(cJSON_GetObjectItem(result,
		    "peak_rss_kib"));
		cJSON_DeleteItemFromObject(result, "peak_rss_kib");
		ev = cJSON_Duplicate(result, 1);
		cJSON_AddStringToObject(ev, "dest", e->args.dest);
		telemetry_event(e->args.sandbox, NULL, NULL,
		    "export.completed", ev);
		log_info("sandbox %s: exported to %s (%s, %.0f bytes; the"
		    " child's peak RSS %.0f KiB)", e->args.sandbox,
		    e->args.dest, export_formats[e->args.format],
		    cJSON_GetNumberValue(cJSON_GetObjectItem(result,
		    "bytes_written")), rss == rss ? rss : -1);
		e->cb(result, NULL, e->arg);
	}
	export_free(e);
}

/*
 * Export the published changes of sandbox id (of tenant, copied from
 * workspace) as o says (dest, format "dir", "tar" or "tar-zst", flags,
 * limits): cb gets the result of export_changes or a cause. NULL (and
 * cause) when dest or format is refused before anything is touched.
 */
struct export *
export_start(const char *id, const char *tenant, const char *workspace,
    const struct export_opts *o, export_cb cb, void *arg, struct cause *cause)
{
	struct export	*e;
	const char	*format = o->format, *dest = o->dest;
	size_t		 i;
	char		*d;

	for (i = 0; i < sizeof export_formats / sizeof export_formats[0];
	    i++) {
		if (strcmp(format, export_formats[i]) == 0)
			break;
	}
	if (i == sizeof export_formats / sizeof export_formats[0]) {
		cause_set(cause, CAUSE_INVALID, "format", format, "format must"
		    " be \"dir\", \"tar\" or \"tar-zst\", not \"%s\"", format);
		return (NULL);
	}
	if ((d = export_judge(dest, tenant, workspace, cause)) == NULL)
		return (NULL);
	e = xcalloc(1, sizeof *e);
	e->args.sandbox = xstrdup(id);
	e->args.dest = d;
	e->args.format = (enum export_format)i;
	e->args.flags = o->flags;
	e->args.max_bytes = o->max_bytes;
	e->args.max_entries = o->max_entries;
	if (e->args.format == EXPORT_DIR)
		e->args.hidden = workspace_hidden(d, tenant, &e->args.nhidden);
	e->tenant = xstrdup(tenant);
	e->cb = cb;
	e->arg = arg;
	LIST_INSERT_HEAD(&exports, e, entry);
	e->job = job_helper("export", e->args.sandbox, e->tenant,
	    export_child, &e->args, NULL, 0, export_done, e);
	job_early(e->job);
	return (e);
}

/*
 * Sandbox id goes: its exports stop (their children are killed) and
 * answer that it went; what a dir export had written stays.
 */
void
export_forget(const char *id)
{
	struct export	*e, *next;
	struct cause	 cause = { 0 };

	for (e = LIST_FIRST(&exports); e != NULL; e = next) {
		next = LIST_NEXT(e, entry);
		if (strcmp(e->args.sandbox, id) != 0)
			continue;
		job_cancel(e->job);
		cause_set(&cause, CAUSE_FAILED, "sandbox_id", id, "sandbox %s"
		    " was destroyed during the export to %s", id,
		    e->args.dest);
		e->cb(NULL, &cause, e->arg);
		cause_clear(&cause);
		export_free(e);
	}
}
