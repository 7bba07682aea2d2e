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
 * Folding layers newest-wins: the walk that squash.c drives to flatten a
 * run of layers into one, and export.c to write a sandbox's changes. A
 * directory is read one level at a time, each opened beneath its layer's
 * root with no symlink followed (tree_open), its names read whole before
 * the walk descends, so that the walk holds the descriptors of one level
 * at a time whatever the depth a sandbox made. What a name resolves to
 * (a file, a directory, a deletion something below still has) goes to
 * the caller's operations (struct fold_ops), which write the output.
 */

#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "sandbox-mcp.h"

static int
fold_name_cmp(const void *a, const void *b)
{
	const struct fold_name	*x = a, *y = b;
	int			 r;

	if ((r = strcmp(x->name, y->name)) != 0)
		return (r);
	return (x->order < y->order ? -1 : x->order > y->order);
}

static int
fold_str_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* A directory of layer i at rel ("" for its root), or -1. */
static int
fold_open_dir(struct fold *f, size_t i, const char *rel)
{
	if (*rel == '\0')
		return (openat(f->roots[i], ".", O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC));
	return (tree_open(f->roots[i], rel, O_RDONLY | O_DIRECTORY));
}

/* Whether name is there in the first of the dirs below that has it. */
static int
fold_below_has(int *below, size_t nbelow, const char *name)
{
	struct stat	st;
	size_t		i;

	for (i = 0; i < nbelow; i++) {
		if (below[i] == -1 ||
		    fstatat(below[i], name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		return (!layer_is_whiteout(&st));
	}
	return (0);
}

/*
 * The layers (of list, whose directories at this level are dirs) in
 * which name is a directory seen through the ones above it, into out
 * (indices); returns whether the chain ends in one of them (an opaque
 * directory, or something else in the next one, hides what is further
 * down).
 */
static int
fold_chain(const size_t *list, int *dirs, size_t n, const char *name,
    size_t *out, size_t *nout)
{
	struct stat	st;
	size_t		i;
	int		fd, opaque;

	*nout = 0;
	for (i = 0; i < n; i++) {
		if (dirs[i] == -1 ||
		    fstatat(dirs[i], name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (!S_ISDIR(st.st_mode))
			return (1);
		out[(*nout)++] = list[i];
		if ((fd = openat(dirs[i], name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1)
			return (1);
		opaque = layer_fd_opaque(fd);
		close(fd);
		if (opaque)
			return (1);
	}
	return (0);
}

/* A directory child waiting for its turn. */
struct fold_sub {
	char		*name;
	size_t		*run;		/* its chain in the run */
	size_t		 nrun;
	size_t		*below;		/* and below the run */
	size_t		 nbelow;
	int		 opaque;
	struct timespec	 times[2];
};

/*
 * The names of a level that are there once the run is folded (not
 * deleted), sorted: for a directory that hides what is below.
 */
static char **
fold_kept(struct fold *f, struct fold_name *names, size_t nnames,
    int *rdirs, size_t *nkept)
{
	struct stat	  st;
	char		**kept;
	size_t		  i, j;

	kept = xcalloc(nnames + 1, sizeof *kept);
	*nkept = 0;
	for (i = 0; i < nnames; i = j) {
		for (j = i + 1; j < nnames && strcmp(names[j].name,
		    names[i].name) == 0; j++)
			;
		if (fstatat(rdirs[names[i].order], names[i].name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && layer_is_whiteout(&st))
			continue;
		kept[(*nkept)++] = names[i].name;
	}
	return (kept);
}

/*
 * Fold directory rel of the layers run (indices into f->roots, newest
 * first) over the layers below (where rel is a directory seen through
 * the run), handing each resolved name to f->ops with out, the output
 * directory of rel (opaque: rel hides what is below the run).
 */
int
fold_dir(struct fold *f, const char *rel, const size_t *run, size_t nrun,
    const size_t *below, size_t nbelow, int opaque, int out)
{
	struct fold_name	*names = NULL;
	struct fold_sub		*subs = NULL;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;
	size_t			 nnames = 0, nsubs = 0, i, j, k, w, nkept;
	int			*rdirs, *bdirs, *hdirs, fd, cfd, r = -1, ends;
	char			*path = NULL, **kept;
	size_t			*hold;

	rdirs = xcalloc(nrun, sizeof *rdirs);
	hold = xcalloc(nrun, sizeof *hold);
	hdirs = xcalloc(nrun, sizeof *hdirs);
	bdirs = xcalloc(nbelow + 1, sizeof *bdirs);
	for (i = 0; i < nbelow; i++)
		bdirs[i] = fold_open_dir(f, below[i], rel);
	for (i = 0; i < nrun; i++) {
		if ((rdirs[i] = fold_open_dir(f, run[i], rel)) == -1) {
			xasprintf(&f->error, "cannot open %s in layer %s: %s",
			    *rel != '\0' ? rel : "/", f->ls->ids[run[i]],
			    strerror(errno));
			goto out;
		}
		if ((fd = dup(rdirs[i])) == -1 || (d = fdopendir(fd)) ==
		    NULL) {
			if (fd != -1)
				close(fd);
			xasprintf(&f->error, "cannot read %s: %s", rel,
			    strerror(errno));
			goto out;
		}
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			if (nnames == FOLD_ENTRIES_MAX) {
				closedir(d);
				xasprintf(&f->error, "%s holds more than %d"
				    " names", rel, FOLD_ENTRIES_MAX);
				goto out;
			}
			names = xreallocarray(names, nnames + 1,
			    sizeof *names);
			names[nnames].name = xstrdup(de->d_name);
			names[nnames++].order = i;
		}
		closedir(d);
	}
	qsort(names, nnames, sizeof *names, fold_name_cmp);

	if (opaque && f->ops->clear != NULL) {
		kept = fold_kept(f, names, nnames, rdirs, &nkept);
		qsort(kept, nkept, sizeof *kept, fold_str_cmp);
		k = f->ops->clear(f, out, kept, nkept, rel);
		free(kept);
		if (k != 0)
			goto out;
	}

	for (i = 0; i < nnames; i = j) {
		for (j = i + 1; j < nnames && strcmp(names[j].name,
		    names[i].name) == 0; j++)
			;
		w = names[i].order;
		free(path);
		if (*rel != '\0')
			xasprintf(&path, "%s/%s", rel, names[i].name);
		else
			path = xstrdup(names[i].name);
		if (fstatat(rdirs[w], names[i].name, &st,
		    AT_SYMLINK_NOFOLLOW) != 0) {
			xasprintf(&f->error, "cannot read %s in layer %s: %s",
			    path, f->ls->ids[run[w]], strerror(errno));
			goto out;
		}
		if (layer_is_whiteout(&st)) {
			if (!fold_below_has(bdirs, nbelow, names[i].name))
				continue;	/* nothing left to delete */
			if (f->ops->whiteout(f, out, names[i].name, path) != 0)
				goto out;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (f->ops->leaf(f, rdirs[w], names[i].name, &st, out,
			    path) != 0)
				goto out;
			continue;
		}

		/* A directory: which layers it is seen through. */
		subs = xreallocarray(subs, nsubs + 1, sizeof *subs);
		memset(&subs[nsubs], 0, sizeof subs[nsubs]);
		subs[nsubs].name = xstrdup(names[i].name);
		subs[nsubs].run = xcalloc(nrun, sizeof *subs[nsubs].run);
		subs[nsubs].below = xcalloc(nbelow + 1,
		    sizeof *subs[nsubs].below);
		subs[nsubs].times[0] = st.st_atim;
		subs[nsubs].times[1] = st.st_mtim;
		nsubs++;
		/* Only the layers listed with the name can hold it. */
		for (k = i; k < j; k++) {
			hold[k - i] = run[names[k].order];
			hdirs[k - i] = rdirs[names[k].order];
		}
		ends = fold_chain(hold, hdirs, j - i, names[i].name,
		    subs[nsubs - 1].run, &subs[nsubs - 1].nrun);
		if (!ends)
			fold_chain(below, bdirs, nbelow, names[i].name,
			    subs[nsubs - 1].below, &subs[nsubs - 1].nbelow);
		/* What a level keeps for its subdirectories is their chains. */
		subs[nsubs - 1].run = xreallocarray(subs[nsubs - 1].run,
		    subs[nsubs - 1].nrun + 1, sizeof *subs[nsubs - 1].run);
		subs[nsubs - 1].below = xreallocarray(subs[nsubs - 1].below,
		    subs[nsubs - 1].nbelow + 1,
		    sizeof *subs[nsubs - 1].below);
		k = ends && fold_below_has(bdirs, nbelow, names[i].name);
		subs[nsubs - 1].opaque = (int)k;
		if (f->ops->dir(f, rdirs[w], names[i].name, &st, (int)k, out,
		    path) != 0)
			goto out;
	}

	/* The level's names and descriptors go before the walk goes down. */
	for (i = 0; i < nnames; i++)
		free(names[i].name);
	free(names);
	names = NULL;
	nnames = 0;
	for (i = 0; i < nrun; i++) {
		if (rdirs[i] != -1)
			close(rdirs[i]);
		rdirs[i] = -1;
	}
	for (i = 0; i < nbelow; i++) {
		if (bdirs[i] != -1)
			close(bdirs[i]);
		bdirs[i] = -1;
	}
	for (i = 0; i < nsubs; i++) {
		free(path);
		if (*rel != '\0')
			xasprintf(&path, "%s/%s", rel, subs[i].name);
		else
			path = xstrdup(subs[i].name);
		if ((cfd = f->ops->enter(f, out, subs[i].name, path)) ==
		    FOLD_SKIP)
			continue;
		if (cfd == -1)
			goto out;
		k = fold_dir(f, path, subs[i].run, subs[i].nrun,
		    subs[i].below, subs[i].nbelow, subs[i].opaque, cfd);
		f->ops->leave(f, cfd, subs[i].times, path);
		if (k != 0)
			goto out;
	}
	r = 0;
out:
	for (i = 0; i < nrun; i++) {
		if (rdirs[i] != -1)
			close(rdirs[i]);
	}
	for (i = 0; i < nbelow; i++) {
		if (bdirs[i] != -1)
			close(bdirs[i]);
	}
	free(rdirs);
	free(bdirs);
	free(hold);
	free(hdirs);
	for (i = 0; i < nnames; i++)
		free(names[i].name);
	free(names);
	for (i = 0; i < nsubs; i++) {
		free(subs[i].name);
		free(subs[i].run);
		free(subs[i].below);
	}
	free(subs);
	free(path);
	return (r);
}
