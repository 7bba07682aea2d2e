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
 * Folding layers newest-wins (fold.c) over real layer directories, with
 * operations that record each call: the newest copy of a name wins, a
 * deletion is handed on only when something below still has the name,
 * an opaque directory hides what is below it, names come in sorted
 * order, and FOLD_SKIP from enter leaves a subtree alone.
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "sandbox-mcp.h"
#include "unit.h"

/* Three layers, newest first: L0, L1 and the base B. */
static const char *fold_spec[] = {
	"d B", "d L1", "d L0",
	"f B/a.txt B", "f B/b.txt B", "d B/d", "f B/d/x B", "f B/d/y B",
	"d B/gone", "f B/gone/z B", "d B/o", "f B/o/old B", "f B/keep B",
	"d B/skip", "f B/skip/s B",
	"f L1/a.txt L1", "w L1/b.txt", "o L1/o", "f L1/o/new L1",
	"f L1/c.txt L1", "w L1/w-only", "d L1/skip", "f L1/skip/t L1",
	"f L0/a.txt L0", "d L0/d", "w L0/d/y", "f L0/d/n L0", "w L0/gone",
	"f L0/zz.txt L0", "d L0/m", "f L0/m/f L0", "l L0/ln target",
	NULL
};

/* What the operations saw, one line each, and what enter skips. */
struct fold_seen {
	char		 text[4096];
	const char	*skip;
	int		 next;		/* the next output "descriptor" */
};

static void
seen_add(struct fold *f, const char *fmt, const char *a, const char *b)
{
	struct fold_seen	*s = f->arg;
	size_t			 len = strlen(s->text);

	snprintf(s->text + len, sizeof s->text - len, fmt, a, b);
}

static int
seen_whiteout(struct fold *f, int out, const char *name, const char *path)
{
	seen_add(f, "whiteout %s%s;", path, "");
	return (0);
}

/* A leaf, with the content of the copy it was given (its layer's). */
static int
seen_leaf(struct fold *f, int src, const char *name, const struct stat *st,
    int out, const char *path)
{
	char	buf[32];
	ssize_t	n;
	int	fd;

	if (S_ISLNK(st->st_mode)) {
		n = readlinkat(src, name, buf, sizeof buf - 1);
		buf[n < 0 ? 0 : n] = '\0';
	} else {
		if ((fd = openat(src, name, O_RDONLY | O_NOFOLLOW)) == -1)
			return (-1);
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[n < 0 ? 0 : n] = '\0';
	}
	seen_add(f, "leaf %s=%s;", path, buf);
	return (0);
}

static int
seen_dir(struct fold *f, int src, const char *name, const struct stat *st,
    int opaque, int out, const char *path)
{
	seen_add(f, "dir %s%s;", path, opaque ? " opaque" : "");
	return (0);
}

static int
seen_enter(struct fold *f, int out, const char *name, const char *path)
{
	struct fold_seen	*s = f->arg;

	if (s->skip != NULL && strcmp(path, s->skip) == 0) {
		seen_add(f, "skip %s%s;", path, "");
		return (FOLD_SKIP);
	}
	seen_add(f, "enter %s%s;", path, "");
	return (s->next++);
}

static void
seen_leave(struct fold *f, int out, const struct timespec *times,
    const char *path)
{
	seen_add(f, "leave %s%s;", path, "");
}

static int
seen_clear(struct fold *f, int out, char **kept, size_t nkept,
    const char *path)
{
	size_t	i;

	seen_add(f, "clear %s:%s", path, "");
	for (i = 0; i < nkept; i++)
		seen_add(f, "%s%s", i == 0 ? " " : ",", kept[i]);
	seen_add(f, "%s%s;", "", "");
	return (0);
}

static const struct fold_ops seen_ops = {
	seen_whiteout, seen_leaf, seen_dir, seen_enter, seen_leave, seen_clear
};

struct fold_fixture {
	char			 top[32];
	char			 dirs[3][PATH_MAX];
	char			*paths[3];
	int			 roots[3];
	struct layer_stack	 ls;
	struct fold		 f;
	struct fold_seen	 seen;
};

static int
fold_fixture(struct fold_fixture *x, const char **extra)
{
	static char	*ids[] = { "L000003-00000000", "L000002-00000000",
			    "B000001-base" };
	static char	*names[] = { "L0", "L1", "B" };
	int		 i;

	memset(x, 0, sizeof *x);
	strlcpy(x->top, "/tmp/unit-fold.XXXXXX", sizeof x->top);
	CHECK(mkdtemp(x->top) != NULL);
	CHECK(unit_tree_build(x->top, fold_spec) == 0);
	if (extra != NULL)
		CHECK(unit_tree_build(x->top, extra) == 0);
	for (i = 0; i < 3; i++) {
		snprintf(x->dirs[i], sizeof x->dirs[i], "%s/%s", x->top,
		    names[i]);
		x->paths[i] = x->dirs[i];
		CHECK((x->roots[i] = open(x->dirs[i], O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC)) != -1);
	}
	x->ls.version = 3;
	x->ls.n = 3;
	x->ls.ids = ids;
	x->ls.paths = x->paths;
	x->f.ops = &seen_ops;
	x->f.arg = &x->seen;
	x->f.roots = x->roots;
	x->f.ls = &x->ls;
	x->seen.next = 100;
	return (0);
}

static int
fold_fixture_free(struct fold_fixture *x)
{
	int	i;

	for (i = 0; i < 3; i++)
		close(x->roots[i]);
	free(x->f.error);
	return (unit_tree_remove(x->top));
}

/* L0 and L1 folded over the base, as a squash of the two does. */
static int
test_fold_over_base(void)
{
	struct fold_fixture	x;
	const size_t		run[] = { 0, 1 }, below[] = { 2 };

	CHECK(fold_fixture(&x, NULL) == 0);
	CHECK_INT(fold_dir(&x.f, "", run, 2, below, 1, 0, 7), 0);
	CHECK(x.f.error == NULL);
	CHECK_STR(x.seen.text,
	    "leaf a.txt=L0;"
	    "whiteout b.txt;"
	    "leaf c.txt=L1;"
	    "dir d;"
	    "whiteout gone;"
	    "leaf ln=target;"
	    "dir m;"
	    "dir o opaque;"
	    "dir skip;"
	    "leaf zz.txt=L0;"
	    "enter d;leaf d/n=L0;whiteout d/y;leave d;"
	    "enter m;leaf m/f=L0;leave m;"
	    "enter o;clear o: new;leaf o/new=L1;leave o;"
	    "enter skip;leaf skip/t=L1;leave skip;");
	CHECK(fold_fixture_free(&x) == 0);
	return (0);
}

/*
 * The whole stack folded with nothing below: no deletion is handed on
 * (nothing is left to delete), and the base's names fold in.
 */
static int
test_fold_whole(void)
{
	struct fold_fixture	x;
	const size_t		run[] = { 0, 1, 2 };

	CHECK(fold_fixture(&x, NULL) == 0);
	CHECK_INT(fold_dir(&x.f, "", run, 3, NULL, 0, 0, 7), 0);
	CHECK(strstr(x.seen.text, "whiteout") == NULL);
	CHECK(strstr(x.seen.text, "clear") == NULL);
	CHECK_STR(x.seen.text,
	    "leaf a.txt=L0;"
	    "leaf c.txt=L1;"
	    "dir d;"
	    "leaf keep=B;"
	    "leaf ln=target;"
	    "dir m;"
	    "dir o;"
	    "dir skip;"
	    "leaf zz.txt=L0;"
	    "enter d;leaf d/n=L0;leaf d/x=B;leave d;"
	    "enter m;leaf m/f=L0;leave m;"
	    "enter o;leaf o/new=L1;leave o;"
	    "enter skip;leaf skip/s=B;leaf skip/t=L1;leave skip;");
	CHECK(fold_fixture_free(&x) == 0);
	return (0);
}

/*
 * FOLD_SKIP from enter: no walk below and no leave; the rest goes on. An
 * opaque directory keeps its own names only, not its whiteouts.
 */
static int
test_fold_skip(void)
{
	static const char	*extra[] = { "w L1/o/old", "d L1/o/sub",
				    "f L1/o/sub/f L1", "d L0/d/deep",
				    "f L0/d/deep/f L0", NULL };
	struct fold_fixture	 x;
	const size_t		 run[] = { 0, 1 }, below[] = { 2 };

	CHECK(fold_fixture(&x, extra) == 0);
	x.seen.skip = "d";
	CHECK_INT(fold_dir(&x.f, "", run, 2, below, 1, 0, 7), 0);
	CHECK(strstr(x.seen.text, "skip d;") != NULL);
	CHECK(strstr(x.seen.text, "d/") == NULL);
	CHECK(strstr(x.seen.text, "leave d;") == NULL);
	/* Nothing is below an opaque directory: its whiteout goes. */
	CHECK(strstr(x.seen.text, "enter o;clear o: new,sub;"
	    "leaf o/new=L1;dir o/sub;enter o/sub;leaf o/sub/f=L1;"
	    "leave o/sub;leave o;") != NULL);
	CHECK(fold_fixture_free(&x) == 0);

	/* A skip deeper down. */
	CHECK(fold_fixture(&x, extra) == 0);
	x.seen.skip = "d/deep";
	CHECK_INT(fold_dir(&x.f, "", run, 2, below, 1, 0, 7), 0);
	CHECK(strstr(x.seen.text, "enter d;dir d/deep;leaf d/n=L0;"
	    "whiteout d/y;skip d/deep;leave d;") != NULL);
	CHECK(strstr(x.seen.text, "d/deep/f") == NULL);
	CHECK(fold_fixture_free(&x) == 0);
	return (0);
}

/* A directory level folded on its own, opaque over what is below. */
static int
test_fold_level(void)
{
	struct fold_fixture	x;
	const size_t		run[] = { 0 }, below[] = { 1, 2 };

	CHECK(fold_fixture(&x, NULL) == 0);
	CHECK_INT(fold_dir(&x.f, "d", run, 1, below, 2, 1, 7), 0);
	CHECK_STR(x.seen.text, "clear d: n;leaf d/n=L0;whiteout d/y;");
	CHECK(fold_fixture_free(&x) == 0);

	/* A layer without the directory: the fold fails, naming it. */
	CHECK(fold_fixture(&x, NULL) == 0);
	CHECK_INT(fold_dir(&x.f, "m", below, 2, NULL, 0, 0, 7), -1);
	CHECK(x.f.error != NULL);
	CHECK(strstr(x.f.error, "cannot open m in layer L000002-00000000") !=
	    NULL);
	CHECK(fold_fixture_free(&x) == 0);
	return (0);
}

const struct unit_case unit_fold_cases[] = {
	{ "fold/over-base", test_fold_over_base },
	{ "fold/whole", test_fold_whole },
	{ "fold/skip", test_fold_skip },
	{ "fold/level", test_fold_level },
	{ NULL, NULL }
};
