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
 * Squashing a sandbox's layer stack (layers.md, squash_layerstacks), in
 * two child processes of the sandbox:
 *
 * 1. The squash: reads the manifest and the leases of live workspace
 *    sessions (of any process), plans the runs (at least two adjacent
 *    published layers, none the top of a lease, never the base), takes
 *    its confinement, flattens each run newest-wins into a new layer in
 *    staging (files and symlinks hard-linked, a deletion kept only when
 *    something below the run still has the path, a directory that hides
 *    what is below marked opaque only when there is something below to
 *    hide), then under the writer lock replaces the runs in the head as
 *    it is then (publishes made meanwhile stay on top: they were checked
 *    against paths whose view the squash does not change).
 * 2. The reclaim (layer_gc): under the writer lock, every layer directory
 *    the manifest does not name, that no live lease names and that no
 *    child holds (layer.c: an exclusive flock, never waited for) goes to
 *    the trash; the others stay and are tried again when a session of
 *    this process ends, and at start.
 *
 * One squash per stack at a time: an flock on stack/.squash, which the
 * squash keeps until it reports; a second one meanwhile is a conflict.
 * Nothing here blocks the loop: both are children, and what the server
 * does is parse their reports.
 *
 * The flattening walks the run's layers one directory at a time, each
 * directory opened beneath its layer's root with no symlink followed
 * (tree_open), reading a directory's names whole before it descends, so
 * that it holds the descriptors of one level at a time whatever the
 * depth a sandbox made.
 */

#include "config.h"

#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <openssl/evp.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define SQUASH_LEASES_MAX	65536
#define SQUASH_LEAVING_WAIT	10	/* seconds, for ended sessions */

/* A live lease: whose, and the layers it stands on. */
struct squash_lease {
	char			*ws;
	struct layer_stack	*ls;		/* NULL: faulty */
	char			*faulty;	/* why its lease cannot be read */
	int			 automatic;	/* a command's, or a spare */
	int			 leaving;	/* ended, its lease going */
};

struct squash_leases {
	struct squash_lease	*l;
	size_t			 n;
};

/* A run of the head: layers [first, last] (indices, newest first). */
struct squash_run {
	size_t			 first;
	size_t			 last;
	char			 id[20];
	int			 claim;		/* its staging, locked */
};

struct squash_ctx {
	const char		*sbox;
	struct layer_stack	*head;
	int			*roots;		/* each layer's root */
	EVP_MD_CTX		*md;
	unsigned long long	 bytes;
	unsigned long long	 allocated;	/* st_blocks of its files */
	unsigned long long	 paths;
	char			*error;
};

/* ---- the leases ---- */

static void
squash_leases_free(struct squash_leases *sl)
{
	size_t	i;

	for (i = 0; i < sl->n; i++) {
		free(sl->l[i].ws);
		free(sl->l[i].faulty);
		layer_stack_free(sl->l[i].ls);
	}
	free(sl->l);
	sl->l = NULL;
	sl->n = 0;
}

/*
 * The leases of live sessions of a sandbox, of any process, and of the
 * managed sessions a process that is gone left, to be taken up again
 * (session_adopt): their layers stay. Needs /proc, so it is read before
 * the confinement.
 */
static int
squash_leases_read(const char *sbox, struct squash_leases *sl, char **cause)
{
	struct session_leases	 all;
	size_t			 i;

	sl->l = NULL;
	sl->n = 0;
	if (session_leases(sbox, SESSION_LEASES_LIVE | SESSION_LEASES_FAULTY |
	    SESSION_LEASES_ORPHANS, SQUASH_LEASES_MAX, &all, cause) != 0)
		return (-1);
	if (all.n > 0)
		sl->l = xcalloc(all.n, sizeof *sl->l);
	for (i = 0; i < all.n; i++) {
		sl->l[i].ws = all.l[i].ws;
		sl->l[i].ls = all.l[i].ls;
		sl->l[i].automatic = all.l[i].automatic;
		sl->l[i].faulty = all.l[i].faulty;
		all.l[i].ws = NULL;	/* taken over */
		all.l[i].ls = NULL;
		all.l[i].faulty = NULL;
	}
	sl->n = all.n;
	session_leases_free(&all);
	return (0);
}

/*
 * The managed workspace sessions of a sandbox with a live lease (of any
 * process), their ids added to the array ids: for the export's report.
 * 0, or -1 when the leases cannot be read.
 */
int
squash_managed_sessions(const char *sbox, cJSON *ids)
{
	struct squash_leases	 sl;
	char			*cause = NULL;
	size_t			 k;

	if (squash_leases_read(sbox, &sl, &cause) != 0) {
		free(cause);
		return (-1);
	}
	for (k = 0; k < sl.n; k++) {
		if (!sl.l[k].automatic)
			cJSON_AddItemToArray(ids,
			    cJSON_CreateString(sl.l[k].ws));
	}
	squash_leases_free(&sl);
	return (0);
}

/*
 * Whether a lease names a layer. A faulty one (unreadable) may stand on
 * any: it keeps every layer.
 */
static int
squash_lease_has(struct squash_lease *l, const char *id)
{
	size_t	i;

	if (l->ls == NULL)
		return (1);
	for (i = 0; i < l->ls->n; i++) {
		if (strcmp(l->ls->ids[i], id) == 0)
			return (1);
	}
	return (0);
}

/* ---- the squash's output: a layer in staging ---- */

static void
squash_digest(struct squash_ctx *x, char kind, const char *path,
    const char *more, size_t morelen)
{
	char	k[2] = { kind, '\0' };

	EVP_DigestUpdate(x->md, k, 2);
	EVP_DigestUpdate(x->md, path, strlen(path) + 1);
	if (more != NULL)
		EVP_DigestUpdate(x->md, more, morelen);
	x->paths++;
}

/* Copy the extended attributes of a directory but overlayfs's. */
static void
squash_copy_xattrs(int from, int to)
{
	char	 names[4096], value[65536], *p;
	ssize_t	 n, v;

	if ((n = flistxattr(from, names, sizeof names)) <= 0)
		return;
	for (p = names; p < names + n; p += strlen(p) + 1) {
		if (strncmp(p, "trusted.overlay.", 16) == 0)
			continue;
		if ((v = fgetxattr(from, p, value, sizeof value)) >= 0)
			fsetxattr(to, p, value, v, 0);
	}
}

static int
squash_whiteout(struct fold *f, int out, const char *name, const char *path)
{
	struct squash_ctx	*x = f->arg;

	if (mknodat(out, name, S_IFCHR | 0, makedev(0, 0)) != 0) {
		xasprintf(&f->error, "cannot write the deletion of %s: %s",
		    path, strerror(errno));
		return (-1);
	}
	squash_digest(x, 'w', path, NULL, 0);
	return (0);
}

/*
 * Put the non-directory name of the layer directory src into out: a
 * hard link, or a copy where the inode cannot take another link.
 */
static int
squash_put(struct squash_ctx *x, int src, const char *name,
    const struct stat *st, int out, const char *path)
{
	char	 target[PATH_MAX], size[32], digest[65];
	ssize_t	 n;
	int	 fd, copy;

	if (linkat(src, name, out, name, 0) != 0) {
		if (errno != EMLINK)
			return (-1);
		if (S_ISLNK(st->st_mode)) {
			if ((n = readlinkat(src, name, target,
			    sizeof target - 1)) < 0)
				return (-1);
			target[n] = '\0';
			if (symlinkat(target, out, name) != 0 ||
			    fchownat(out, name, st->st_uid, st->st_gid,
			    AT_SYMLINK_NOFOLLOW) != 0)
				return (-1);
		} else if (S_ISREG(st->st_mode)) {
			if ((fd = openat(src, name, O_RDONLY | O_NOFOLLOW |
			    O_NONBLOCK | O_CLOEXEC)) == -1)
				return (-1);
			copy = tree_copy_file(fd, st, out, name);
			close(fd);
			if (copy == -1)
				return (-1);
			close(copy);
		} else if (mknodat(out, name, st->st_mode, st->st_rdev) != 0)
			return (-1);
	}
	if (S_ISREG(st->st_mode)) {
		if ((fd = openat(out, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC)) == -1)
			return (-1);
		if (tree_digest(fd, st->st_size, digest) != 0) {
			close(fd);
			return (-1);
		}
		close(fd);
		snprintf(size, sizeof size, "%lld", (long long)st->st_size);
		squash_digest(x, 'f', path, size, strlen(size) + 1);
		EVP_DigestUpdate(x->md, digest, 65);
		x->bytes += st->st_size;
		x->allocated += (unsigned long long)st->st_blocks * 512;
	} else if (S_ISLNK(st->st_mode)) {
		if ((n = readlinkat(out, name, target, sizeof target - 1)) < 0)
			return (-1);
		target[n] = '\0';
		squash_digest(x, 'l', path, target, n + 1);
	} else
		squash_digest(x, 'o', path, NULL, 0);
	return (0);
}

static int
squash_leaf(struct fold *f, int src, const char *name, const struct stat *st,
    int out, const char *path)
{
	if (squash_put(f->arg, src, name, st, out, path) != 0) {
		xasprintf(&f->error, "cannot put %s into the squashed layer:"
		    " %s", path, strerror(errno));
		return (-1);
	}
	return (0);
}

static int
squash_mkdir(struct fold *f, int src, const char *name, const struct stat *st,
    int opaque, int out, const char *path)
{
	int	fd, cfd;

	if (mkdirat(out, name, 0700) != 0 || (cfd = openat(out, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		xasprintf(&f->error, "cannot make %s in the squashed layer:"
		    " %s", path, strerror(errno));
		return (-1);
	}
	if ((fd = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		squash_copy_xattrs(fd, cfd);
		close(fd);
	}
	if (fchown(cfd, st->st_uid, st->st_gid) != 0 ||
	    fchmod(cfd, st->st_mode & 07777) != 0 ||
	    (opaque && fsetxattr(cfd, "trusted.overlay.opaque", "y", 1,
	    0) != 0)) {
		xasprintf(&f->error, "cannot set up %s in the squashed layer:"
		    " %s", path, strerror(errno));
		close(cfd);
		return (-1);
	}
	close(cfd);
	squash_digest(f->arg, opaque ? 'O' : 'd', path, NULL, 0);
	return (0);
}

static int
squash_enter(struct fold *f, int out, const char *name, const char *path)
{
	int	cfd;

	if ((cfd = openat(out, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		xasprintf(&f->error, "cannot open %s in the squashed layer:"
		    " %s", path, strerror(errno));
	return (cfd);
}

static void
squash_leave(struct fold *f, int cfd, const struct timespec *times,
    const char *path)
{
	futimens(cfd, times);
	close(cfd);
}

static const struct fold_ops squash_fold_ops = {
	.whiteout = squash_whiteout,
	.leaf = squash_leaf,
	.dir = squash_mkdir,
	.enter = squash_enter,
	.leave = squash_leave,
	.clear = NULL,		/* a new layer: nothing to clear */
};

/*
 * Build the layer of one run in staging: staging/<id>/ and its meta
 * file staging/<id>.meta.json.
 */
static int
squash_build(struct squash_ctx *x, struct squash_run *run)
{
	size_t		*list, *below, i, nlist, nbelow;
	unsigned char	 dig[32];
	unsigned int	 diglen;
	char		 digest[72], *dir, *meta, *text, *cause = NULL;
	cJSON		*m, *a;
	int		 out = -1, r;
	struct timespec	 times[2];
	struct stat	 st;
	struct fold	 f;

	dir = state_where(STATE_STACK_STAGING, x->sbox, "%s", run->id);
	meta = state_where(STATE_STACK_STAGING, x->sbox, "%s.meta.json",
	    run->id);
	if (mkdir(dir, 0755) != 0 || (out = open(dir, O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    layer_staging_claim(out, dir) != 0) {
		xasprintf(&x->error, "cannot make the squashed layer in"
		    " staging: %s", strerror(errno));
		if (out != -1)
			close(out);
		free(dir);
		free(meta);
		return (-1);
	}
	run->claim = out;	/* held until the squash ends */
	nlist = run->last - run->first + 1;
	list = xcalloc(nlist, sizeof *list);
	for (i = 0; i < nlist; i++)
		list[i] = run->first + i;
	nbelow = x->head->n - run->last - 1;
	below = xcalloc(nbelow + 1, sizeof *below);
	for (i = 0; i < nbelow; i++)
		below[i] = run->last + 1 + i;

	if ((x->md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(x->md, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_DigestInit_ex", __func__);
	x->bytes = x->paths = x->allocated = 0;
	memset(&f, 0, sizeof f);
	f.ops = &squash_fold_ops;
	f.arg = x;
	f.roots = x->roots;
	f.ls = x->head;
	if ((r = fold_dir(&f, "", list, nlist, below, nbelow, 0, out)) != 0)
		x->error = f.error;
	EVP_DigestFinal_ex(x->md, dig, &diglen);
	EVP_MD_CTX_free(x->md);
	x->md = NULL;
	free(list);
	free(below);
	if (r == 0 && fstat(x->roots[run->first], &st) == 0) {
		/* The root keeps the newest layer's mode and times. */
		times[0] = st.st_atim;
		times[1] = st.st_mtim;
		if (fchmod(out, st.st_mode & 07777) != 0 ||
		    futimens(out, times) != 0)
			log_warn("squash: the root of %s", run->id);
	}
	if (r != 0) {
		free(dir);
		free(meta);
		return (-1);
	}

	memcpy(digest, "sha256:", 7);
	util_hex(dig, sizeof dig, digest + 7);
	m = cJSON_CreateObject();
	cJSON_AddStringToObject(m, "layer_id", run->id);
	cJSON_AddStringToObject(m, "owner", "squash");
	cJSON_AddNumberToObject(m, "created_at_ms", (double)now_ms());
	cJSON_AddStringToObject(m, "digest", digest);
	cJSON_AddNumberToObject(m, "bytes", (double)x->bytes);
	cJSON_AddNumberToObject(m, "allocated_bytes", (double)x->allocated);
	cJSON_AddNumberToObject(m, "changed_paths", (double)x->paths);
	a = cJSON_AddArrayToObject(m, "replaced_layer_ids");
	for (i = run->first; i <= run->last; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(x->head->ids[i]));
	text = util_json_print(m);
	cJSON_Delete(m);
	r = util_write_file(meta, text, strlen(text), 0, &cause);
	if (r != 0) {
		xasprintf(&x->error, "cannot write the squashed layer's"
		    " record: %s", cause);
		free(cause);
	}
	free(text);
	free(dir);
	free(meta);
	return (r);
}

/*
 * The runs of a head: between the tops of the leases of managed
 * sessions, two layers or more. An automatic session (a command's, or a
 * spare) is short-lived: its layers stay while it lives (its lease pins
 * them), and the stack is not cut for it.
 */
static size_t
squash_plan(struct layer_stack *head, struct squash_leases *sl,
    struct squash_run **runs)
{
	size_t	 i, k, start, n = 0;
	int	 top;

	*runs = NULL;
	start = 0;
	for (i = 0; i < head->n; i++) {
		top = i == head->n - 1;		/* the base ends the last */
		for (k = 0; !top && k < sl->n; k++) {
			if (!sl->l[k].automatic && !sl->l[k].leaving &&
			    sl->l[k].ls != NULL &&
			    strcmp(sl->l[k].ls->ids[0], head->ids[i]) == 0)
				top = 1;
		}
		if (!top)
			continue;
		if (i - start >= 2) {
			*runs = xreallocarray(*runs, n + 1, sizeof **runs);
			(*runs)[n].first = start;
			(*runs)[n].last = i - 1;
			n++;
		}
		start = i + 1;
	}
	return (n);
}

/*
 * Under the writer lock: the head as it is now must end with the head
 * the runs were planned on (publishes only add on top); the next
 * manifest is its new layers, then the planned head with each run
 * replaced by its layer.
 */
static struct layer_stack *
squash_next(struct squash_ctx *x, struct layer_stack *now,
    struct squash_run *runs, size_t nruns)
{
	struct layer_stack	*next;
	size_t			 add, i, r;
	char			*path;

	if (now->n < x->head->n)
		return (NULL);
	add = now->n - x->head->n;
	for (i = 0; i < x->head->n; i++) {
		if (strcmp(now->ids[add + i], x->head->ids[i]) != 0)
			return (NULL);
	}
	next = xcalloc(1, sizeof *next);
	next->version = now->version + 1;
	next->ids = xcalloc(now->n, sizeof *next->ids);
	next->paths = xcalloc(now->n, sizeof *next->paths);
	for (i = 0; i < add; i++) {
		next->ids[next->n] = xstrdup(now->ids[i]);
		next->paths[next->n++] = xstrdup(now->paths[i]);
	}
	for (i = 0, r = 0; i < x->head->n; i++) {
		if (r < nruns && i == runs[r].first) {
			path = state_where(STATE_LAYERS, x->sbox, "%s",
			    runs[r].id);
			next->ids[next->n] = xstrdup(runs[r].id);
			next->paths[next->n++] = path;
			i = runs[r++].last;
			continue;
		}
		next->ids[next->n] = xstrdup(x->head->ids[i]);
		next->paths[next->n++] = xstrdup(x->head->paths[i]);
	}
	return (next);
}

/* Move the built layers into place and write the next manifest. */
static int
squash_commit(struct squash_ctx *x, struct squash_run *runs, size_t nruns,
    int *versionp)
{
	struct layer_stack	*now, *next;
	char			*from, *to, *cause = NULL;
	size_t			 i;
	int			 lock, sfd, r = -1;

	from = state_where(STATE_STACK_STAGING, x->sbox, NULL);
	sfd = open(from, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(from);
	if (sfd == -1 || syncfs(sfd) != 0) {
		xasprintf(&x->error, "cannot make the squashed layers"
		    " durable: %s", strerror(errno));
		if (sfd != -1)
			close(sfd);
		return (-1);
	}
	close(sfd);
	if ((lock = layer_lock(x->sbox)) == -1) {
		xasprintf(&x->error, "cannot take the stack's writer lock");
		return (-1);
	}
	if ((now = layer_stack_read(x->sbox, &cause)) == NULL) {
		x->error = cause;
		goto out;
	}
	if ((next = squash_next(x, now, runs, nruns)) == NULL) {
		xasprintf(&x->error, "the stack changed under the squash in a"
		    " way a publish does not (another squash?)");
		layer_stack_free(now);
		goto out;
	}
	layer_stack_free(now);
	for (i = 0; i < nruns; i++) {
		from = state_where(STATE_STACK_STAGING, x->sbox, "%s",
		    runs[i].id);
		to = state_where(STATE_LAYERS, x->sbox, "%s", runs[i].id);
		if (rename(from, to) != 0) {
			xasprintf(&x->error, "cannot move the squashed layer"
			    " into place: %s", strerror(errno));
			free(from);
			free(to);
			layer_stack_free(next);
			goto out;
		}
		free(from);
		free(to);
		from = state_where(STATE_STACK_STAGING, x->sbox,
		    "%s.meta.json", runs[i].id);
		to = state_where(STATE_LAYERS, x->sbox, "%s.meta.json",
		    runs[i].id);
		if (rename(from, to) != 0)
			log_warn("squash: the record of %s", runs[i].id);
		free(from);
		free(to);
	}
	to = state_where(STATE_LAYERS, x->sbox, NULL);
	util_fsync_dir(to);
	free(to);
	/* A layer in place that no manifest names is reclaimed: no harm. */
	if (layer_stack_write(x->sbox, next, &cause) != 0) {
		x->error = cause;
		layer_stack_free(next);
		goto out;
	}
	*versionp = next->version;
	layer_stack_free(next);
	r = 0;
out:
	layer_unlock(lock);
	return (r);
}

/* Let the squash lock of the stack go (before a report: see the caller). */
static void
squash_unlock(int *sq)
{
	if (*sq != -1)
		close(*sq);
	*sq = -1;
}

/* A run's layer and record in staging, removed (not committed). */
static void
squash_unstage(const char *sbox, const char *id)
{
	char	*path;

	path = state_where(STATE_STACK_STAGING, sbox, "%s", id);
	tree_remove_path(path);
	free(path);
	path = state_where(STATE_STACK_STAGING, sbox, "%s.meta.json", id);
	unlink(path);
	free(path);
}

/* The child: plan, flatten, commit, report. */
int
squash_child(void *arg, int fd)
{
	struct squash_args	*a = arg;
	struct squash_ctx	 x;
	struct squash_leases	 sl;
	struct squash_run	*runs = NULL;
	const char		*rw[1], *ro[1];
	char			*path, *cause = NULL, *dir;
	size_t			 nruns = 0, i, k, j;
	cJSON			*rep, *blocks, *b, *ids, *sessions, *s;
	cJSON			*reasons, *faulty;
	int			 sq, version, r = 1, pinned, committed = 0;
	struct rusage		 ru;

	memset(&x, 0, sizeof x);
	x.sbox = a->sandbox;
	path = state_where(STATE_STACK, a->sandbox, ".squash");
	sq = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(path);
	if (sq == -1 || flock(sq, LOCK_EX | LOCK_NB) != 0) {
		if (sq != -1 && errno == EWOULDBLOCK)
			return (job_fail(fd, CAUSE_CONFLICT, NULL, NULL,
			    "another squash of this sandbox's stack is"
			    " running; try again when it is done"));
		return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "cannot take"
		    " the squash lock of the stack"));
	}
	if (squash_leases_read(a->sandbox, &sl, &cause) != 0) {
		squash_unlock(&sq);
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", cause);
		free(cause);
		return (1);
	}
	if ((x.head = layer_stack_read(a->sandbox, &cause)) == NULL) {
		squash_unlock(&sq);
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", cause);
		free(cause);
		squash_leases_free(&sl);
		return (1);
	}
	for (k = 0; k < sl.n; k++) {
		for (i = 0; i < a->nleaving; i++) {
			if (strcmp(sl.l[k].ws, a->leaving[i]) == 0)
				sl.l[k].leaving = 1;
		}
	}
	nruns = squash_plan(x.head, &sl, &runs);
	for (i = 0; i < nruns; i++)
		runs[i].claim = -1;

	dir = state_where(STATE_SANDBOX, a->sandbox, NULL);
	rw[0] = dir;
	ro[0] = x.head->paths[x.head->n - 1];
	if (confine_enter(rw, 1, ro, 1, &cause) != 0) {
		squash_unlock(&sq);
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", cause);
		free(cause);
		free(dir);
		goto out;
	}
	free(dir);

	x.roots = xcalloc(x.head->n, sizeof *x.roots);
	for (i = 0; i < x.head->n; i++)
		x.roots[i] = -1;
	for (i = 0; i < x.head->n; i++) {
		if ((x.roots[i] = open(x.head->paths[i], O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
			xasprintf(&cause, "cannot open layer %s: %s",
			    x.head->ids[i], strerror(errno));
			squash_unlock(&sq);
			job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", cause);
			free(cause);
			goto out;
		}
	}
	for (i = 0; i < nruns; i++) {
		layer_new_id(x.head->version + 1, 'S', runs[i].id);
		if (squash_build(&x, &runs[i]) != 0) {
			squash_unlock(&sq);
			job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", x.error);
			goto out;
		}
	}
	version = x.head->version;
	if (nruns > 0 && squash_commit(&x, runs, nruns, &version) != 0) {
		squash_unlock(&sq);
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", x.error);
		goto out;
	}
	committed = 1;

	rep = cJSON_CreateObject();
	cJSON_AddNumberToObject(rep, "manifest_version", version);
	blocks = cJSON_AddArrayToObject(rep, "squashed_blocks");
	for (i = 0; i < nruns; i++) {
		b = cJSON_CreateObject();
		cJSON_AddStringToObject(b, "squashed_layer_id", runs[i].id);
		ids = cJSON_AddArrayToObject(b, "replaced_layer_ids");
		for (k = runs[i].first; k <= runs[i].last; k++)
			cJSON_AddItemToArray(ids,
			    cJSON_CreateString(x.head->ids[k]));
		cJSON_AddItemToArray(blocks, b);
	}
	sessions = cJSON_AddArrayToObject(rep, "swept_sessions");
	reasons = cJSON_CreateArray();
	faulty = cJSON_CreateArray();
	for (k = 0; k < sl.n; k++) {
		/* A session whose lease cannot be read keeps every layer. */
		if (sl.l[k].ls == NULL) {
			cJSON_AddItemToArray(faulty,
			    cJSON_CreateString(sl.l[k].ws));
			xasprintf(&path, "workspace session %s: %s; every"
			    " layer it may stand on stays until it ends",
			    sl.l[k].ws, sl.l[k].faulty);
			cJSON_AddItemToArray(reasons, cJSON_CreateString(path));
			free(path);
			continue;
		}
		if (sl.l[k].automatic || sl.l[k].leaving)
			continue;
		pinned = 0;
		for (i = 0; i < nruns && !pinned; i++) {
			for (j = runs[i].first; j <= runs[i].last; j++) {
				if (squash_lease_has(&sl.l[k],
				    x.head->ids[j])) {
					pinned = 1;
					break;
				}
			}
		}
		s = cJSON_CreateObject();
		cJSON_AddStringToObject(s, "session_id", sl.l[k].ws);
		cJSON_AddStringToObject(s, "disposition", pinned ? "pinned" :
		    "unchanged");
		cJSON_AddItemToArray(sessions, s);
		if (pinned) {
			xasprintf(&path, "workspace session %s stands on"
			    " replaced layers: they stay until it ends",
			    sl.l[k].ws);
			cJSON_AddItemToArray(reasons, cJSON_CreateString(path));
			free(path);
		}
	}
	if (cJSON_GetArraySize(reasons) > 0)
		cJSON_AddItemToObject(rep, "blocked_reasons", reasons);
	else
		cJSON_Delete(reasons);
	if (cJSON_GetArraySize(faulty) > 0)
		cJSON_AddItemToObject(rep, "faulty_sessions", faulty);
	else
		cJSON_Delete(faulty);
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cJSON_AddNumberToObject(rep, "peak_rss_kib",
		    (double)ru.ru_maxrss);
	/* The answer may come as soon as the report ends: the lock first. */
	squash_unlock(&sq);
	r = job_answer(fd, rep, NULL);
	cJSON_Delete(rep);
out:
	if (x.roots != NULL) {
		for (i = 0; i < x.head->n; i++) {
			if (x.roots[i] != -1)
				close(x.roots[i]);
		}
	}
	free(x.roots);
	free(x.error);
	/* Not committed: what it built in staging goes with it. */
	for (i = 0; i < nruns; i++) {
		if (runs[i].claim == -1)
			continue;
		if (!committed)
			squash_unstage(a->sandbox, runs[i].id);
		close(runs[i].claim);
	}
	free(runs);
	layer_stack_free(x.head);
	squash_leases_free(&sl);
	return (r);
}

/* ---- the reclaim ---- */

/*
 * The child: under the writer lock, every layer directory of the stack
 * that the manifest does not name, no live lease names and no child
 * holds goes to the trash with its record. Reports {"reclaimed": [ids],
 * "kept": [ids]}.
 */
int
squash_gc_child(void *arg, int fd)
{
	struct squash_args	*a = arg;
	struct squash_leases	 sl = { NULL, 0 };
	struct layer_stack	*head;
	struct dirent		*de;
	DIR			*d;
	char			*dir, *path, *to, *cause = NULL;
	size_t			 i, k;
	cJSON			*rep, *reclaimed, *kept;
	struct {
		char		*name;
		int		 fd;	/* locked */
	}			*c = NULL;
	size_t			 nc = 0;
	int			 lock, ldfd, lfd, keep, unread;

	if ((lock = layer_lock(a->sandbox)) == -1)
		return (job_fail(fd, CAUSE_FAILED, NULL, NULL, "cannot take"
		    " the stack's writer lock"));
	if ((head = layer_stack_read(a->sandbox, &cause)) == NULL) {
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", cause);
		free(cause);
		layer_unlock(lock);
		return (1);
	}
	rep = cJSON_CreateObject();
	reclaimed = cJSON_AddArrayToObject(rep, "reclaimed");
	kept = cJSON_AddArrayToObject(rep, "kept");
	dir = state_where(STATE_LAYERS, a->sandbox, NULL);
	if ((ldfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || (d = fdopendir(ldfd)) == NULL) {
		if (ldfd != -1)
			close(ldfd);
		goto report;
	}
	ldfd = dirfd(d);
	/*
	 * Every layer no manifest names, locked (no child holds it)
	 * first; then the leases, read once, name all that may still use
	 * one of them.
	 */
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !util_id_valid_layer(de->d_name))
			continue;
		for (i = 0; i < head->n; i++) {
			if (strcmp(head->ids[i], de->d_name) == 0)
				break;
		}
		if (i < head->n || (lfd = openat(ldfd, de->d_name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
			continue;
		if (flock(lfd, LOCK_EX | LOCK_NB) != 0) {
			cJSON_AddItemToArray(kept,
			    cJSON_CreateString(de->d_name));
			close(lfd);
			continue;
		}
		c = xreallocarray(c, nc + 1, sizeof *c);
		c[nc].name = xstrdup(de->d_name);
		c[nc++].fd = lfd;
	}
	/* Leases that cannot be read keep every layer. */
	unread = nc > 0 && squash_leases_read(a->sandbox, &sl, &cause) != 0;
	free(cause);
	for (i = 0; i < nc; i++) {
		keep = unread;
		for (k = 0; !keep && k < sl.n; k++)
			keep = squash_lease_has(&sl.l[k], c[i].name);
		to = state_trash_path(a->sandbox, c[i].name);
		if (!keep && renameat(ldfd, c[i].name, AT_FDCWD, to) == 0) {
			cJSON_AddItemToArray(reclaimed,
			    cJSON_CreateString(c[i].name));
			xasprintf(&path, "%s.meta.json", c[i].name);
			free(to);
			to = state_trash_path(a->sandbox, "meta");
			renameat(ldfd, path, AT_FDCWD, to);
			free(path);
		} else
			cJSON_AddItemToArray(kept,
			    cJSON_CreateString(c[i].name));
		free(to);
		close(c[i].fd);
		free(c[i].name);
	}
	free(c);
	closedir(d);
report:
	free(dir);
	layer_stack_free(head);
	layer_unlock(lock);
	squash_leases_free(&sl);
	keep = job_answer(fd, rep, NULL);
	cJSON_Delete(rep);
	return (keep);
}

/* ---- the server's side ---- */

/* What this process does to one sandbox's stack. */
struct squash_sb {
	char			 id[65];
	char			*tenant;
	struct squash		*squash;	/* running, or NULL */
	struct job		*gc;		/* a reclaim running */
	struct squash		*gc_for;	/* the squash it answers */
	int			 gc_again;	/* asked for meanwhile */
	int			 pending;	/* layers left to reclaim */
	struct event		*wait;		/* for leaving sessions */
	struct squash_args	 args;
	LIST_ENTRY(squash_sb)	 entry;
};
static LIST_HEAD(, squash_sb)	squash_sbs = LIST_HEAD_INITIALIZER(squash_sbs);

struct squash {
	struct squash_sb	*ssb;
	squash_cb		 cb;		/* NULL: an autosquash */
	void			*arg;
	cJSON			*rep;		/* the squash's report */
};

static void	squash_gc_start(struct squash_sb *);
static void	squash_gc_quiet(struct squash_sb *);

static struct squash_sb *
squash_sb_get(const char *id, const char *tenant)
{
	struct squash_sb	*ssb;

	LIST_FOREACH(ssb, &squash_sbs, entry) {
		if (strcmp(ssb->id, id) == 0)
			break;
	}
	if (ssb == NULL) {
		ssb = xcalloc(1, sizeof *ssb);
		strlcpy(ssb->id, id, sizeof ssb->id);
		ssb->args.sandbox = ssb->id;
		LIST_INSERT_HEAD(&squash_sbs, ssb, entry);
	}
	if (ssb->tenant == NULL)
		ssb->tenant = tenant != NULL ? xstrdup(tenant) :
		    sandbox_tenant(id);
	return (ssb);
}

static void
squash_leaving_free(struct squash_sb *ssb)
{
	size_t	i;

	for (i = 0; i < ssb->args.nleaving; i++)
		free(ssb->args.leaving[i]);
	free(ssb->args.leaving);
	ssb->args.leaving = NULL;
	ssb->args.nleaving = 0;
}

/* Nothing more to do for a sandbox: its entry goes. */
static void
squash_sb_done(struct squash_sb *ssb)
{
	if (ssb->squash != NULL || ssb->gc != NULL || ssb->pending)
		return;
	LIST_REMOVE(ssb, entry);
	squash_leaving_free(ssb);
	if (ssb->wait != NULL)
		event_free(ssb->wait);
	free(ssb->tenant);
	free(ssb);
}

/*
 * The squash's answer, once its layers' fate is known. The caller then
 * lets the sandbox's entry go (squash_sb_done) when it is done with it.
 */
static void
squash_finish(struct squash *sq, cJSON *gc)
{
	struct squash_sb	*ssb = sq->ssb;
	cJSON			*result, *blocks, *b, *ids, *id, *v, *r;
	int			 all;

	result = cJSON_CreateObject();
	cJSON_AddItemToObject(result, "manifest_version", cJSON_Duplicate(
	    cJSON_GetObjectItem(sq->rep, "manifest_version"), 1));
	blocks = cJSON_AddArrayToObject(result, "squashed_blocks");
	r = cJSON_GetObjectItem(gc, "reclaimed");
	cJSON_ArrayForEach(b, cJSON_GetObjectItem(sq->rep,
	    "squashed_blocks")) {
		all = 1;
		ids = cJSON_GetObjectItem(b, "replaced_layer_ids");
		cJSON_ArrayForEach(id, ids) {
			cJSON_ArrayForEach(v, r) {
				if (strcmp(v->valuestring, id->valuestring) ==
				    0)
					break;
			}
			if (v == NULL)
				all = 0;
		}
		v = cJSON_Duplicate(b, 1);
		cJSON_AddStringToObject(v, "replaced_layers", all ?
		    "reclaimed" : "pinned");
		cJSON_AddItemToArray(blocks, v);
		telemetry_event(ssb->id, NULL, NULL, "layer.squashed",
		    cJSON_Duplicate(v, 1));
	}
	cJSON_AddItemToObject(result, "swept_sessions", cJSON_Duplicate(
	    cJSON_GetObjectItem(sq->rep, "swept_sessions"), 1));
	if ((v = cJSON_GetObjectItem(sq->rep, "blocked_reasons")) != NULL)
		cJSON_AddItemToObject(result, "blocked_reasons",
		    cJSON_Duplicate(v, 1));
	if ((v = cJSON_GetObjectItem(sq->rep, "faulty_sessions")) != NULL)
		cJSON_AddItemToObject(result, "faulty_sessions",
		    cJSON_Duplicate(v, 1));
	log_info("sandbox %s: stack squashed to manifest version %d (%d"
	    " blocks; the child's peak RSS %.0f KiB)", ssb->id,
	    (int)cJSON_GetNumberValue(cJSON_GetObjectItem(result,
	    "manifest_version")), cJSON_GetArraySize(blocks),
	    cJSON_GetNumberValue(cJSON_GetObjectItem(sq->rep,
	    "peak_rss_kib")));
	cJSON_Delete(sq->rep);
	ssb->squash = NULL;
	if (sq->cb != NULL)
		sq->cb(result, NULL, sq->arg);
	cJSON_Delete(result);
	free(sq);
}

/* A squash that ended in a cause. */
static void
squash_fail(struct squash *sq, enum cause_kind kind, const char *message)
{
	struct squash_sb	*ssb = sq->ssb;
	struct cause		 cause = { 0 };

	log_warnx("sandbox %s: squash: %s", ssb->id, message);
	cause_set(&cause, kind, "sandbox_id", ssb->id, "%s", message);
	cJSON_Delete(sq->rep);
	ssb->squash = NULL;
	if (sq->cb != NULL)
		sq->cb(NULL, &cause, sq->arg);
	cause_clear(&cause);
	free(sq);
	squash_sb_done(ssb);
}

static void
squash_gc_done(cJSON *rep, const struct cause *cause, void *arg)
{
	struct squash_sb	*ssb = arg;
	struct squash		*sq;
	cJSON			*kept;

	ssb->gc = NULL;
	if (cause != NULL)
		log_warnx("sandbox %s: reclaiming layers: %s", ssb->id,
		    cause->message);
	kept = cJSON_GetObjectItem(rep, "kept");
	ssb->pending = rep == NULL || !cJSON_IsArray(kept) ||
	    cJSON_GetArraySize(kept) > 0;
	if (cJSON_GetArraySize(cJSON_GetObjectItem(rep, "reclaimed")) > 0)
		trash_soon();
	if ((sq = ssb->gc_for) != NULL) {
		ssb->gc_for = NULL;
		squash_finish(sq, rep);
	}
	if (ssb->gc_again) {
		ssb->gc_again = 0;
		squash_gc_start(ssb);
		return;
	}
	squash_sb_done(ssb);
}

static void
squash_gc_start(struct squash_sb *ssb)
{
	if (ssb->wait != NULL)
		evtimer_del(ssb->wait);
	if (ssb->gc != NULL) {
		ssb->gc_again = 1;
		return;
	}
	/* A squash that has committed waits for this one's answer. */
	if (ssb->squash != NULL && ssb->squash->rep != NULL)
		ssb->gc_for = ssb->squash;
	ssb->gc = job_helper("layer-gc", ssb->id, ssb->tenant != NULL ?
	    ssb->tenant : TENANT_LOCAL, squash_gc_child, &ssb->args, NULL, 0,
	    squash_gc_done, ssb);
}

static void
squash_done(cJSON *rep, const struct cause *cause, void *arg)
{
	struct squash		*sq = arg;
	struct squash_sb	*ssb;

	if (cause != NULL) {
		/* Ended without its report: its staging is left. */
		if (cause->kind == CAUSE_INTERNAL)
			layer_staging_sweep_start(sq->ssb->id, sq->ssb->tenant);
		squash_fail(sq, cause->kind == CAUSE_CONFLICT ? CAUSE_CONFLICT :
		    CAUSE_FAILED, cause->message);
		return;
	}
	if (!cJSON_IsNumber(cJSON_GetObjectItem(rep, "manifest_version"))) {
		squash_fail(sq, CAUSE_FAILED, "the squash's report is"
		    " malformed");
		return;
	}
	sq->rep = cJSON_Duplicate(rep, 1);
	if (cJSON_GetArraySize(cJSON_GetObjectItem(rep,
	    "squashed_blocks")) == 0) {
		ssb = sq->ssb;
		squash_finish(sq, NULL);
		squash_sb_done(ssb);
		return;
	}
/* Spares on the old stack go; then what is not held goes. */
	session_restack(sq->ssb->id);
	squash_gc_quiet(sq->ssb);
}

/* Leaving sessions are slow to go: reclaim what can be reclaimed now. */
static void
squash_wait_cb(evutil_socket_t fd, short events, void *arg)
{
	struct squash_sb	*ssb = arg;

	if (ssb->pending)
		squash_gc_start(ssb);
}

/*
 * Reclaim once this process's sessions of the sandbox that have ended
 * are gone (their leases still pin layers until their init has gone):
 * at once when there are none, else when the last one's scratch goes
 * (squash_reclaim), or after SQUASH_LEAVING_WAIT at the latest.
 */
static void
squash_gc_quiet(struct squash_sb *ssb)
{
	struct timeval	 tv = { SQUASH_LEAVING_WAIT, 0 };
	char		**ids;
	size_t		 n, i;

	ids = session_leaving(ssb->id, &n);
	for (i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
	if (n == 0) {
		squash_gc_start(ssb);
		return;
	}
	ssb->pending = 1;
	if (ssb->wait == NULL && (ssb->wait = evtimer_new(ev_base,
	    squash_wait_cb, ssb)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	evtimer_add(ssb->wait, &tv);
}

/*
 * Squash the stack of sandbox id (of tenant): cb gets the result of
 * squash_layerstacks, or a cause (conflict: one is running already).
 * A NULL cb squashes in the background.
 */
struct squash *
squash_start(const char *id, const char *tenant, squash_cb cb, void *arg,
    struct cause *cause)
{
	struct squash_sb	*ssb;
	struct squash		*sq;

	ssb = squash_sb_get(id, tenant);
	if (ssb->squash != NULL) {
		cause_set(cause, CAUSE_CONFLICT, "sandbox_id", id, "a squash"
		    " of sandbox %s is running; try again when it is done",
		    id);
		squash_sb_done(ssb);
		return (NULL);
	}
	squash_leaving_free(ssb);
	ssb->args.leaving = session_leaving(id, &ssb->args.nleaving);
	sq = xcalloc(1, sizeof *sq);
	sq->ssb = ssb;
	sq->cb = cb;
	sq->arg = arg;
	ssb->squash = sq;
	job_early(job_helper("squash", ssb->id, ssb->tenant != NULL ?
	    ssb->tenant : TENANT_LOCAL, squash_child, &ssb->args, NULL, 0,
	    squash_done, sq));
	return (sq);
}

/*
 * After a publish to sandbox id (rep, its report, says how deep the
 * stack it made is): at the limit autosquash-depth, squash the stack in
 * the background (one at a time).
 */
void
squash_auto(const char *id, const char *tenant, cJSON *rep)
{
	struct squash_sb	*ssb;
	struct cause		 cause = { 0 };
	double			 depth;

	depth = cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "stack_depth"));
	if (cfg_limit(LIMIT_AUTOSQUASH_DEPTH) < 2 || !(depth >=
	    cfg_limit(LIMIT_AUTOSQUASH_DEPTH)))
		return;
	LIST_FOREACH(ssb, &squash_sbs, entry) {
		if (strcmp(ssb->id, id) == 0 && ssb->squash != NULL)
			return;
	}
	log_debug("sandbox %s: %.0f layers: autosquash", id, depth);
	if (squash_start(id, tenant, NULL, NULL, &cause) == NULL)
		cause_clear(&cause);
}

/*
 * Whether a stack's layers directory holds more than the manifest's
 * layers and their records (a squash left some behind).
 */
static int
squash_leftovers(const char *id)
{
	struct layer_stack	*ls;
	struct dirent		*de;
	DIR			*d;
	char			*dir, *msg = NULL;
	size_t			 n = 0;

	if ((ls = layer_stack_read(id, &msg)) == NULL) {
		free(msg);
		return (0);
	}
	dir = state_where(STATE_LAYERS, id, NULL);
	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] != '.')
				n++;
		}
		closedir(d);
	}
	free(dir);
	n = n > 2 * (ls->n - 1);
	layer_stack_free(ls);
	return ((int)n);
}

/*
 * Something that may have held replaced layers let them go (a session's
 * scratch went): reclaim what is left, if a squash left any. At start
 * (always), look at the stack first.
 */
void
squash_reclaim(const char *id, const char *tenant, int always)
{
	struct squash_sb	*ssb;

	LIST_FOREACH(ssb, &squash_sbs, entry) {
		if (strcmp(ssb->id, id) == 0)
			break;
	}
	if (always ? !squash_leftovers(id) : (ssb == NULL || !ssb->pending))
		return;
	squash_gc_quiet(squash_sb_get(id, tenant));
}

/* A session's lease went: what it pinned may be reclaimed now. */
static void
squash_session_gone(const char *id, const char *tenant)
{
	squash_reclaim(id, tenant, 0);
}

void
squash_init(void)
{
	session_on_gone(squash_session_gone);
	publish_on_layer(squash_auto);
}

/* A sandbox goes: what this process does to its stack is dropped. */
void
squash_forget(const char *id)
{
	struct squash_sb	*ssb;

	LIST_FOREACH(ssb, &squash_sbs, entry) {
		if (strcmp(ssb->id, id) == 0)
			break;
	}
	if (ssb != NULL)
		ssb->pending = 0;
}
