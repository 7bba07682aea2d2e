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
 * Resolving a path through a layer stack on disk as overlayfs would
 * (layer.c): upper layers hide lower ones, whiteouts (0:0 character
 * devices) delete, opaque directories (trusted.overlay.opaque=y) hide
 * what is below them, symlinks are never followed, and the paths the
 * tools hand it have been normalized first (no "..", nothing absolute
 * outside /workspace).
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "sandbox-mcp.h"
#include "unit.h"

/* Three layers, newest first: L0, L1 and the base B. */
static const char *layer_spec[] = {
	"d B", "d L1", "d L0",
	/* The base. */
	"f B/a.txt B", "f B/b.txt B", "f B/only.txt B",
	"d B/d", "f B/d/x B", "f B/d/y B",
	"d B/gone", "f B/gone/z B",
	"d B/o", "f B/o/old B", "d B/o/sub", "f B/o/sub/deep B",
	"d B/dir", "f B/dir/f B",
	"f B/file B",
	/* L1: replaces, deletes, makes opaque, links. */
	"f L1/a.txt L1", "w L1/b.txt", "o L1/o", "f L1/o/new L1",
	"w L1/dir", "l L1/ln d",
	"l L1/etc /etc", "d L1/real", "f L1/real/f L1", "l L1/up ..",
	"p L1/fifo",
	/* L0: newest. */
	"f L0/a.txt L0", "d L0/d", "w L0/d/y", "f L0/d/n L0",
	"w L0/gone", "d L0/dir", "f L0/dir/g L0", "d L0/file",
	NULL
};

struct layer_fixture {
	char			 top[32];
	char			 dirs[3][PATH_MAX];
	char			*paths[3];
	char			*ids[3];
	struct layer_stack	 ls;
};

static int
fixture(struct layer_fixture *x)
{
	static char	*ids[] = { "L000003-00000000", "L000002-00000000",
			    "B000001-base" };
	static char	*names[] = { "L0", "L1", "B" };
	int		 i;

	strlcpy(x->top, "/tmp/unit-layer.XXXXXX", sizeof x->top);
	CHECK(mkdtemp(x->top) != NULL);
	CHECK(unit_tree_build(x->top, layer_spec) == 0);
	for (i = 0; i < 3; i++) {
		snprintf(x->dirs[i], sizeof x->dirs[i], "%s/%s", x->top,
		    names[i]);
		x->paths[i] = x->dirs[i];
		x->ids[i] = ids[i];
	}
	memset(&x->ls, 0, sizeof x->ls);
	x->ls.version = 3;
	x->ls.n = 3;
	x->ls.ids = x->ids;
	x->ls.paths = x->paths;
	return (0);
}

/*
 * Resolve rel and compare: its kind, the layer it came from (kinds other
 * than absent) and the blocker.
 */
static int
resolves(struct layer_fixture *x, const char *rel, enum layer_kind kind,
    size_t layer, enum layer_kind blocker, size_t blocker_len)
{
	struct layer_entry	 le;
	char			*cause = NULL, want[PATH_MAX];

	if (layer_resolve(&x->ls, rel, &le, &cause) != 0) {
		fprintf(stderr, "%s: %s\n", rel, cause);
		free(cause);
		return (1);
	}
	if (le.kind != kind || (kind != LAYER_ABSENT && le.layer != layer) ||
	    le.blocker != blocker || (blocker != LAYER_ABSENT &&
	    le.blocker_len != blocker_len)) {
		fprintf(stderr, "%s: expected kind %d layer %zu blocker %d/%zu,"
		    " got kind %d layer %zu blocker %d/%zu\n", rel, kind,
		    layer, blocker, blocker_len, le.kind, le.layer, le.blocker,
		    le.blocker_len);
		return (1);
	}
	if (kind != LAYER_ABSENT) {
		snprintf(want, sizeof want, "%s/%s", x->paths[layer], rel);
		CHECK_STR(le.path, want);
	}
	return (0);
}

/* The content of what rel resolves to: which layer's copy it is. */
static int
content_is(struct layer_fixture *x, const char *rel, const char *text)
{
	struct layer_entry	 le;
	char			*cause = NULL, buf[64];
	FILE			*f;
	size_t			 n;

	CHECK(layer_resolve(&x->ls, rel, &le, &cause) == 0);
	CHECK_INT(le.kind, LAYER_FILE);
	CHECK((f = fopen(le.path, "r")) != NULL);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	CHECK_STR(buf, text);
	return (0);
}

/* The newest layer with a name wins; below it, the next one. */
static int
test_layer_upper(void)
{
	struct layer_fixture	 x;
	struct layer_entry	 le;
	char			*cause = NULL;

	CHECK(fixture(&x) == 0);
	CHECK(resolves(&x, "a.txt", LAYER_FILE, 0, 0, 0) == 0);
	CHECK(content_is(&x, "a.txt", "L0") == 0);
	CHECK(resolves(&x, "only.txt", LAYER_FILE, 2, 0, 0) == 0);
	CHECK(content_is(&x, "only.txt", "B") == 0);
	CHECK(resolves(&x, "real/f", LAYER_FILE, 1, 0, 0) == 0);
	/* A directory in two layers: the newest, and the names of both. */
	CHECK(resolves(&x, "d", LAYER_DIR, 0, 0, 0) == 0);
	CHECK(resolves(&x, "d/x", LAYER_FILE, 2, 0, 0) == 0);
	CHECK(resolves(&x, "d/n", LAYER_FILE, 0, 0, 0) == 0);
	CHECK(resolves(&x, "o/sub/deep", LAYER_ABSENT, 0, 0, 0) == 0);
	/* The root itself. */
	CHECK(resolves(&x, "", LAYER_DIR, 0, 0, 0) == 0);
	/* The parents' modes, outermost first. */
	CHECK(chmod(strcat(strcpy(le.path, x.dirs[2]), "/d"), 0750) == 0);
	CHECK(chmod(strcat(strcpy(le.path, x.dirs[0]), "/d"), 0711) == 0);
	CHECK(unit_tree_build(x.top, (const char *[]){ "d B/d/e", "f B/d/e/f B",
	    NULL }) == 0);
	CHECK(chmod(strcat(strcpy(le.path, x.dirs[2]), "/d/e"), 0705) == 0);
	CHECK(layer_resolve(&x.ls, "d/e/f", &le, &cause) == 0);
	CHECK_INT(le.kind, LAYER_FILE);
	CHECK_INT(le.nparent, 2);
	CHECK_INT(le.parent_mode[0] & 07777, 0711);
	CHECK_INT(le.parent_mode[1] & 07777, 0705);
	CHECK(S_ISDIR(le.parent_mode[1]));
	CHECK_INT(le.st.st_size, 1);
	CHECK(unit_tree_remove(x.top) == 0);
	return (0);
}

/* A whiteout deletes the name and all below it, until a layer above. */
static int
test_layer_whiteout(void)
{
	struct layer_fixture	x;
	char			path[PATH_MAX + 16];

	CHECK(fixture(&x) == 0);
	CHECK(resolves(&x, "b.txt", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "d/y", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "gone", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "gone/z", LAYER_ABSENT, 0, 0, 0) == 0);
	/* Deleted in L1, made again in L0: only L0's names. */
	CHECK(resolves(&x, "dir", LAYER_DIR, 0, 0, 0) == 0);
	CHECK(resolves(&x, "dir/g", LAYER_FILE, 0, 0, 0) == 0);
	CHECK(resolves(&x, "dir/f", LAYER_ABSENT, 0, 0, 0) == 0);
	/* A base file that L0 made a directory: the directory's. */
	CHECK(resolves(&x, "file", LAYER_DIR, 0, 0, 0) == 0);
	CHECK(resolves(&x, "file/x", LAYER_ABSENT, 0, 0, 0) == 0);
	/* A whiteout in the newest layer with nothing below it. */
	CHECK(unit_tree_build(x.top, (const char *[]){ "w L0/never", NULL }) == 0);
	CHECK(resolves(&x, "never", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "never/x", LAYER_ABSENT, 0, 0, 0) == 0);
	/* A character device other than 0:0 is no whiteout. */
	CHECK(mknod(strcat(strcpy(path, x.dirs[1]), "/null"), S_IFCHR | 0600,
	    makedev(1, 3)) == 0);
	CHECK(resolves(&x, "null", LAYER_OTHER, 1, 0, 0) == 0);
	CHECK(unit_tree_remove(x.top) == 0);
	return (0);
}

/* An opaque directory hides the names of the layers below it. */
static int
test_layer_opaque(void)
{
	struct layer_fixture	x;
	char			path[PATH_MAX + 16];

	CHECK(fixture(&x) == 0);
	CHECK(resolves(&x, "o", LAYER_DIR, 1, 0, 0) == 0);
	CHECK(resolves(&x, "o/new", LAYER_FILE, 1, 0, 0) == 0);
	CHECK(resolves(&x, "o/old", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "o/sub", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "o/sub/deep", LAYER_ABSENT, 0, 0, 0) == 0);
	/* Above the opaque one, a layer's names still show. */
	CHECK(unit_tree_build(x.top, (const char *[]){ "d L0/o", "f L0/o/top L0",
	    NULL }) == 0);
	CHECK(resolves(&x, "o", LAYER_DIR, 0, 0, 0) == 0);
	CHECK(resolves(&x, "o/top", LAYER_FILE, 0, 0, 0) == 0);
	CHECK(resolves(&x, "o/new", LAYER_FILE, 1, 0, 0) == 0);
	CHECK(resolves(&x, "o/old", LAYER_ABSENT, 0, 0, 0) == 0);
	/* Any value but "y" is not opaque. */
	CHECK(unit_tree_build(x.top, (const char *[]){ "d L0/d/yes", "d B/d/yes",
	    "f B/d/yes/kept B", "d L0/d/no", "d B/d/no", "f B/d/no/kept B",
	    NULL }) == 0);
	snprintf(path, sizeof path, "%s/d/yes", x.dirs[0]);
	CHECK(lsetxattr(path, "trusted.overlay.opaque", "yes", 3, 0) == 0);
	snprintf(path, sizeof path, "%s/d/no", x.dirs[0]);
	CHECK(lsetxattr(path, "trusted.overlay.opaque", "n", 1, 0) == 0);
	CHECK(resolves(&x, "d/yes/kept", LAYER_FILE, 2, 0, 0) == 0);
	CHECK(resolves(&x, "d/no/kept", LAYER_FILE, 2, 0, 0) == 0);
	CHECK(unit_tree_remove(x.top) == 0);
	return (0);
}

/* A symlink is what it is: never followed, last or on the way. */
static int
test_layer_symlink(void)
{
	struct layer_fixture	x;

	CHECK(fixture(&x) == 0);
	CHECK(resolves(&x, "ln", LAYER_SYMLINK, 1, 0, 0) == 0);
	CHECK(resolves(&x, "ln/x", LAYER_ABSENT, 0, LAYER_SYMLINK, 2) == 0);
	CHECK(resolves(&x, "etc", LAYER_SYMLINK, 1, 0, 0) == 0);
	CHECK(resolves(&x, "etc/passwd", LAYER_ABSENT, 0, LAYER_SYMLINK,
	    3) == 0);
	CHECK(resolves(&x, "up", LAYER_SYMLINK, 1, 0, 0) == 0);
	CHECK(resolves(&x, "up/B/a.txt", LAYER_ABSENT, 0, LAYER_SYMLINK,
	    2) == 0);
	/* Other parents that are no directories. */
	CHECK(resolves(&x, "a.txt/x", LAYER_ABSENT, 0, LAYER_FILE, 5) == 0);
	CHECK(resolves(&x, "d/x/y/z", LAYER_ABSENT, 0, LAYER_FILE, 3) == 0);
	CHECK(resolves(&x, "fifo", LAYER_OTHER, 1, 0, 0) == 0);
	CHECK(resolves(&x, "fifo/x", LAYER_ABSENT, 0, LAYER_OTHER, 4) == 0);
	/* A symlink in L0 over a base directory hides it whole. */
	CHECK(unit_tree_build(x.top, (const char *[]){ "l L0/real /tmp", NULL }) == 0);
	CHECK(resolves(&x, "real", LAYER_SYMLINK, 0, 0, 0) == 0);
	CHECK(resolves(&x, "real/f", LAYER_ABSENT, 0, LAYER_SYMLINK, 4) == 0);
	CHECK(unit_tree_remove(x.top) == 0);
	return (0);
}

/* Missing names at every depth, and names that are odd but legal. */
static int
test_layer_missing(void)
{
	struct layer_fixture	x;

	CHECK(fixture(&x) == 0);
	CHECK(resolves(&x, "nothing", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "nothing/at/all", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "d/nothing", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "A.TXT", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "a.txt ", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "...", LAYER_ABSENT, 0, 0, 0) == 0);
	/* Every layer missing its directory reads as absent, no error. */
	CHECK(unit_tree_remove(x.dirs[1]) == 0);
	CHECK(resolves(&x, "ln", LAYER_ABSENT, 0, 0, 0) == 0);
	CHECK(resolves(&x, "b.txt", LAYER_FILE, 2, 0, 0) == 0);
	CHECK(unit_tree_remove(x.top) == 0);
	return (0);
}

/*
 * layer_resolve takes the paths the tools normalized: files_path refuses
 * ".." and absolute paths outside /workspace before any resolution, and
 * what it keeps resolves inside the stack.
 */
static int
test_layer_normalized(void)
{
	static const char *refused[] = {
		"..", "../B/a.txt", "d/../../B", "d/..", "/etc/passwd", "/",
		"/workspacex/a.txt", "/tmp/a.txt", "a/../../x",
	};
	static const struct {
		const char	*in;
		const char	*rel;
		enum layer_kind	 kind;
		size_t		 layer;
	} kept[] = {
		{ "/workspace/a.txt", "a.txt", LAYER_FILE, 0 },
		{ "/workspace//d/./x", "d/x", LAYER_FILE, 2 },
		{ "./o//new/", "o/new", LAYER_FILE, 1 },
		{ "/workspace/d", "d", LAYER_DIR, 0 },
	};
	struct layer_fixture	 x;
	char			*rel, *message;
	size_t			 i;

	CHECK(fixture(&x) == 0);
	for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		message = NULL;
		rel = files_path(refused[i], &message);
		if (rel != NULL) {
			fprintf(stderr, "%s: kept as %s\n", refused[i], rel);
			free(rel);
			return (1);
		}
		CHECK(message != NULL);
		CHECK(strncmp(message, "invalid path:", 13) == 0);
		free(message);
	}
	for (i = 0; i < sizeof kept / sizeof kept[0]; i++) {
		message = NULL;
		rel = files_path(kept[i].in, &message);
		CHECK_STR(rel, kept[i].rel);
		CHECK(resolves(&x, rel, kept[i].kind, kept[i].layer, 0,
		    0) == 0);
		free(rel);
	}
	CHECK(unit_tree_remove(x.top) == 0);
	return (0);
}

/*
 * The staging sweep: what no builder holds goes to the trash (a layer
 * whose builder is gone, its records, a record whose layer is gone);
 * a layer a builder holds, and its records, stay.
 */
static int
test_layer_staging_sweep(void)
{
	const char	*id = "sbx-sweep-0001", *names[] = { "Ldead", "Llive",
			    "Ldead.meta.json", "Llive.meta.json",
			    "Llive.manifest.json", "Lgone.meta.json" };
	char		*dir, *path, *cause = NULL;
	struct stat	 st;
	size_t		 i;
	int		 fd, held, moved;

	dir = state_where(STATE_STACK_STAGING, id, NULL);
	CHECK(util_mkdir_p(dir, 0755, &cause) == 0);
	path = state_where(STATE_SANDBOX, id, "trash");
	CHECK(util_mkdir_p(path, 0755, &cause) == 0);
	free(path);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		xasprintf(&path, "%s/%s", dir, names[i]);
		if (strchr(names[i], '.') == NULL)
			CHECK(mkdir(path, 0755) == 0);
		else {
			CHECK((fd = open(path, O_WRONLY | O_CREAT, 0644)) !=
			    -1);
			close(fd);
		}
		free(path);
	}
	xasprintf(&path, "%s/Llive", dir);
	CHECK((held = open(path, O_RDONLY | O_DIRECTORY)) != -1);
	CHECK(layer_staging_claim(held, path) == 0);
	/* A second claim of a held one fails: one builder each. */
	CHECK((fd = open(path, O_RDONLY | O_DIRECTORY)) != -1);
	CHECK(layer_staging_claim(fd, path) == -1);
	close(fd);
	free(path);

	moved = layer_staging_sweep(id, 0);
	CHECK_INT(moved, 3);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		xasprintf(&path, "%s/%s", dir, names[i]);
		CHECK((lstat(path, &st) == 0) == (strstr(names[i], "live") !=
		    NULL));
		free(path);
	}
	/* Its builder gone, the live one goes too, with its records. */
	close(held);
	CHECK_INT(layer_staging_sweep(id, 0), 3);
	CHECK_INT(layer_staging_sweep(id, 0), 0);
	/* The writer lock held: a sweep that may not wait does nothing. */
	CHECK((held = layer_lock(id)) != -1);
	CHECK_INT(layer_staging_sweep(id, 0), -1);
	layer_unlock(held);
	free(dir);
	return (0);
}

/* Write sandbox id's manifest.next: version, over the given layers. */
static int
roll_next(const char *id, int version, const char *top, const char *base)
{
	struct layer_stack	 ls;
	char			*ids[2], *paths[2], *text, *path;
	int			 fd;

	ids[0] = (char *)"L000002-roll";
	paths[0] = (char *)top;
	ids[1] = (char *)"B000001-base";
	paths[1] = (char *)base;
	ls.version = version;
	ls.n = 2;
	ls.ids = ids;
	ls.paths = paths;
	text = layer_stack_text(&ls);
	path = layer_next_path(id);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	free(path);
	if (fd == -1 || write(fd, text, strlen(text)) !=
	    (ssize_t)strlen(text)) {
		free(text);
		return (-1);
	}
	close(fd);
	free(text);
	return (0);
}

/*
 * A next manifest a publish made durable but whose rename a crash lost
 * is put in place at start when it follows the head; any other goes, and
 * so does one found by the sweep after a killed publisher (which
 * answered nothing).
 */
static int
test_layer_roll_forward(void)
{
	const char		*id = "sbx-roll-00001";
	struct layer_stack	*ls;
	struct stat		 st;
	char			*base, *top, *next, *cause = NULL;

	base = state_where(STATE_SANDBOX, id, "base");
	top = state_where(STATE_LAYERS, id, "L000002-roll");
	next = layer_next_path(id);
	CHECK(util_mkdir_p(base, 0755, &cause) == 0);
	CHECK(layer_stack_init(id, base, &cause) == 0);
	CHECK(util_mkdir_p(top, 0755, &cause) == 0);

	/* Not the head's successor (version), or another base: gone. */
	CHECK(roll_next(id, 3, top, base) == 0);
	layer_recover(id);
	CHECK(lstat(next, &st) == -1 && errno == ENOENT);
	CHECK(roll_next(id, 2, top, "/elsewhere") == 0);
	layer_recover(id);
	CHECK(lstat(next, &st) == -1 && errno == ENOENT);
	CHECK((ls = layer_stack_read(id, &cause)) != NULL);
	CHECK_INT(ls->version, 1);
	layer_stack_free(ls);

	/* The sweep after a killed publisher takes it, and keeps the head. */
	CHECK(roll_next(id, 2, top, base) == 0);
	CHECK(layer_staging_sweep(id, 1) >= 0);
	CHECK(lstat(next, &st) == -1 && errno == ENOENT);
	CHECK((ls = layer_stack_read(id, &cause)) != NULL);
	CHECK_INT(ls->version, 1);
	layer_stack_free(ls);

	/* Its layer missing: gone. The successor, its layer there: kept. */
	CHECK(roll_next(id, 2, "/nowhere/L000002-roll", base) == 0);
	layer_recover(id);
	CHECK(lstat(next, &st) == -1 && errno == ENOENT);
	CHECK(roll_next(id, 2, top, base) == 0);
	layer_recover(id);
	CHECK(lstat(next, &st) == -1 && errno == ENOENT);
	CHECK((ls = layer_stack_read(id, &cause)) != NULL);
	CHECK_INT(ls->version, 2);
	CHECK_INT((int)ls->n, 2);
	CHECK(strcmp(ls->ids[0], "L000002-roll") == 0);
	layer_stack_free(ls);
	free(base);
	free(top);
	free(next);
	return (0);
}

/*
 * A disk's superblock says whether one fsync commits all: ext4 with a
 * journal and no fast commits, as disk.c makes it; not with fast
 * commits, without a journal, or when it is no ext4 at all.
 */
static int
test_disk_journal(void)
{
	const char	*id = "sbx-journal-001", *opts[] = { "^fast_commit",
			    "fast_commit", "^has_journal" };
	char		*path, cmd[1024], *cause = NULL;
	int		 fd;
	size_t		 i;

	path = state_where(STATE_SANDBOXES, NULL, NULL);
	CHECK(util_mkdir_p(path, 0700, &cause) == 0);
	free(path);
	path = state_where(STATE_IMAGE, id, NULL);
	CHECK(disk_journal_whole(id) == 0);		/* none */
	CHECK((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) != -1);
	CHECK(ftruncate(fd, 64 * 1024 * 1024) == 0);
	close(fd);
	CHECK(disk_journal_whole(id) == 0);		/* not ext4 */
	for (i = 0; i < sizeof opts / sizeof opts[0]; i++) {
		snprintf(cmd, sizeof cmd, "mkfs.ext4 -q -F -O %s %s"
		    " >/dev/null 2>&1", opts[i], path);
		CHECK(system(cmd) == 0);
		CHECK_INT(disk_journal_whole(id), i == 0);
	}
	unlink(path);
	free(path);
	return (0);
}


/*
 * A manifest read again while its file is the same is the same stack,
 * and a copy of its own; one replaced (a rename, as every writer does)
 * is read anew, even with the same size.
 */
static int
test_layer_read_kept(void)
{
	const char		*id = "sbx-kept-00001";
	struct layer_stack	*ls, *again;
	char			*base, *top, *next, *manifest, *cause = NULL;

	base = state_where(STATE_SANDBOX, id, "base");
	top = state_where(STATE_LAYERS, id, "L000002-roll");
	next = layer_next_path(id);
	manifest = layer_manifest_path(id);
	CHECK(util_mkdir_p(base, 0755, &cause) == 0);
	CHECK(layer_stack_init(id, base, &cause) == 0);
	CHECK(util_mkdir_p(top, 0755, &cause) == 0);

	CHECK((ls = layer_stack_read(id, &cause)) != NULL);
	CHECK_INT(ls->version, 1);
	CHECK_INT((int)ls->n, 1);
	free(ls->ids[0]);
	ls->ids[0] = xstrdup("changed by its reader");
	layer_stack_free(ls);
	CHECK((again = layer_stack_read(id, &cause)) != NULL);
	CHECK_INT(again->version, 1);
	CHECK_STR(again->ids[0], "B000001-base");
	layer_stack_free(again);

	/* Replaced: version 2, then version 3 of the same size. */
	CHECK(roll_next(id, 2, top, base) == 0);
	CHECK(rename(next, manifest) == 0);
	CHECK((ls = layer_stack_read(id, &cause)) != NULL);
	CHECK_INT(ls->version, 2);
	CHECK_INT((int)ls->n, 2);
	layer_stack_free(ls);
	CHECK(roll_next(id, 3, top, base) == 0);
	CHECK(rename(next, manifest) == 0);
	CHECK((ls = layer_stack_read(id, &cause)) != NULL);
	CHECK_INT(ls->version, 3);
	layer_stack_free(ls);

	/* Gone: an error, not what was read before. */
	CHECK(unlink(manifest) == 0);
	CHECK(layer_stack_read(id, &cause) == NULL);
	free(cause);
	free(manifest);
	free(base);
	free(top);
	free(next);
	return (0);
}

const struct unit_case unit_layer_cases[] = {
	{ "layer/disk-journal", test_disk_journal },
	{ "layer/staging-sweep", test_layer_staging_sweep },
	{ "layer/roll-forward", test_layer_roll_forward },
	{ "layer/read-kept", test_layer_read_kept },
	{ "layer/upper", test_layer_upper },
	{ "layer/whiteout", test_layer_whiteout },
	{ "layer/opaque", test_layer_opaque },
	{ "layer/symlink", test_layer_symlink },
	{ "layer/missing", test_layer_missing },
	{ "layer/normalized", test_layer_normalized },
	{ NULL, NULL }
};
