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
 * .gitignore matching. Every expected answer in the tables below was
 * checked against real git 2.39.5: the files were written into a scratch
 * repository, the paths created (directories as directories), and
 * "git -c core.excludesFile=/dev/null check-ignore --no-index -v -n" run
 * on them; the comment after a case names the rule git reported
 * (source:line), or "no rule". Each table is run twice, with the files
 * added in order and in reverse, since the order of gitignore_add() calls
 * must not matter. The bound cases at the end test our own limits, which
 * git does not have.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "gitignore.h"
#include "sandbox-mcp.h"
#include "unit.h"

struct gi_file {
	const char	*dir;
	const char	*text;
};

struct gi_case {
	const char	*path;
	int		 isdir;
	int		 ignored;
};

/* Blank lines, comments, escapes, trailing spaces, CRLF, BOM. */
static const struct gi_file gi_syntax_files[] = {
	{ "", "\357\273\277# comment\n\n   \n\\#hash\n\\!bang\ntrail   \n"
	    "space\\ \n  lead\ncrlf\r\n!\n/\nnofinal" },
	{ NULL, NULL }
};
static const struct gi_case gi_syntax_cases[] = {
	{ "# comment", 0, 0 },	/* no rule */
	{ "#hash", 0, 1 },	/* .gitignore:4 */
	{ "!bang", 0, 1 },	/* .gitignore:5 */
	{ "trail", 0, 1 },	/* .gitignore:6 */
	{ "trail   ", 0, 0 },	/* no rule */
	{ "space ", 0, 1 },	/* .gitignore:7 */
	{ "space", 0, 0 },	/* no rule */
	{ "  lead", 0, 1 },	/* .gitignore:8 */
	{ "lead", 0, 0 },	/* no rule */
	{ "crlf", 0, 1 },	/* .gitignore:9 */
	{ "nofinal", 0, 1 },	/* .gitignore:12 */
	{ "comment", 0, 0 },	/* no rule */
	{ NULL, 0, 0 }
};

/* Negation; later lines win within a file. */
static const struct gi_file gi_negation_files[] = {
	{ "", "*.log\n!keep.log\nkeep2.log\n!keep2.log\n"
	    "!again.log\nagain.log\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_negation_cases[] = {
	{ "a.log", 0, 1 },	/* .gitignore:1 */
	{ "keep.log", 0, 0 },	/* .gitignore:2 */
	{ "keep2.log", 0, 0 },	/* .gitignore:4 */
	{ "again.log", 0, 1 },	/* .gitignore:6 */
	{ "d/x.log", 0, 1 },	/* .gitignore:1 */
	{ "d/keep.log", 0, 0 },	/* .gitignore:2 */
	{ "a.txt", 0, 0 },	/* no rule */
	{ NULL, 0, 0 }
};

/* A trailing slash matches directories only. */
static const struct gi_file gi_dironly_files[] = {
	{ "", "build/\ntmp/\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_dironly_cases[] = {
	{ "build", 1, 1 },	/* .gitignore:1 */
	{ "src/build", 0, 0 },	/* no rule */
	{ "lib/build", 1, 1 },	/* .gitignore:1 */
	{ "build/x.o", 0, 1 },	/* .gitignore:1 */
	{ "tmp", 1, 1 },	/* .gitignore:2 */
	{ "src/tmp/a/b.c", 0, 1 },	/* .gitignore:2 */
	{ "lib/tmp", 0, 0 },	/* no rule */
	{ NULL, 0, 0 }
};

/* A slash at the start or in the middle anchors to the file's directory. */
static const struct gi_file gi_anchored_files[] = {
	{ "", "/root.txt\ndoc/*.txt\nsrc/gen\n*.tmp\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_anchored_cases[] = {
	{ "root.txt", 0, 1 },	/* .gitignore:1 */
	{ "sub/root.txt", 0, 0 },	/* no rule */
	{ "doc/a.txt", 0, 1 },	/* .gitignore:2 */
	{ "doc/x/a.txt", 0, 0 },	/* no rule */
	{ "sub/doc/a.txt", 0, 0 },	/* no rule */
	{ "src/gen", 0, 1 },	/* .gitignore:3 */
	{ "lib/src/gen", 0, 0 },	/* no rule */
	{ "a.tmp", 0, 1 },	/* .gitignore:4 */
	{ "x/y/z.tmp", 0, 1 },	/* .gitignore:4 */
	{ NULL, 0, 0 }
};

/* * ? [...] never match a slash. */
static const struct gi_file gi_wildcards_files[] = {
	{ "", "?.c\n[a-c].o\n[!a]x.h\nm*n\n[[:digit:]]*.bak\nd/*/e\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_wildcards_cases[] = {
	{ "a.c", 0, 1 },	/* .gitignore:1 */
	{ "ab.c", 0, 0 },	/* no rule */
	{ "b.o", 0, 1 },	/* .gitignore:2 */
	{ "d.o", 0, 0 },	/* no rule */
	{ "bx.h", 0, 1 },	/* .gitignore:3 */
	{ "ax.h", 0, 0 },	/* no rule */
	{ "mn", 0, 1 },	/* .gitignore:4 */
	{ "mxyn", 0, 1 },	/* .gitignore:4 */
	{ "m/n", 0, 0 },	/* no rule */
	{ "1.bak", 0, 1 },	/* .gitignore:5:[[:digit */
	{ "x1.bak", 0, 0 },	/* no rule */
	{ "d/x/e", 0, 1 },	/* .gitignore:6 */
	{ "d/x/y/e", 0, 0 },	/* no rule */
	{ "d/e", 0, 0 },	/* no rule */
	{ NULL, 0, 0 }
};

/* Double stars: leading, trailing, between slashes and inside a name. */
static const struct gi_file gi_starstar_files[] = {
	{ "", "**/foo\nbar/**\na/**/b\n**/x/y\nc**d\nl**/m\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_starstar_cases[] = {
	{ "foo", 0, 1 },	/* .gitignore:1 */
	{ "p/foo", 0, 1 },	/* .gitignore:1 */
	{ "p/q/foo", 0, 1 },	/* .gitignore:1 */
	{ "bar", 1, 0 },	/* no rule */
	{ "bar/z", 1, 1 },	/* .gitignore:2 */
	{ "bar/z/w", 0, 1 },	/* .gitignore:2 */
	{ "a/b", 0, 1 },	/* .gitignore:3 */
	{ "a/q/b", 0, 1 },	/* .gitignore:3 */
	{ "a/q/r/b", 0, 1 },	/* .gitignore:3 */
	{ "ab", 0, 0 },	/* no rule */
	{ "x/y", 0, 1 },	/* .gitignore:4 */
	{ "p/x/y", 0, 1 },	/* .gitignore:4 */
	{ "cd", 0, 1 },	/* .gitignore:5 */
	{ "cxd", 0, 1 },	/* .gitignore:5 */
	{ "c/d", 0, 0 },	/* no rule */
	{ "lm", 0, 1 },	/* .gitignore:6 */
	{ "l/m", 0, 1 },	/* .gitignore:6 */
	{ "lz/q/m", 0, 1 },	/* .gitignore:6 */
	{ NULL, 0, 0 }
};

/* A file inside an excluded directory stays excluded. */
static const struct gi_file gi_parent_files[] = {
	{ "", "build/\n!build/keep\nout/*\n!out/keep\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_parent_cases[] = {
	{ "build", 1, 1 },	/* .gitignore:1 */
	{ "build/keep", 0, 1 },	/* .gitignore:1 */
	{ "out", 1, 0 },	/* no rule */
	{ "out/keep", 0, 0 },	/* .gitignore:4 */
	{ "out/other", 0, 1 },	/* .gitignore:3 */
	{ "out/sub", 1, 1 },	/* .gitignore:3 */
	{ "out/sub/keep", 0, 1 },	/* .gitignore:3 */
	{ NULL, 0, 0 }
};

/* Deeper files override shallower ones. */
static const struct gi_file gi_nested_files[] = {
	{ "", "*.log\n/top\nlib/\n!x.dat\n*.dat\n" },
	{ "sub", "!important.log\n/top\n!*.dat\n" },
	{ "sub/deep", "important.log\n" },
	{ "lib", "!*\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_nested_cases[] = {
	{ "a.log", 0, 1 },	/* .gitignore:1 */
	{ "sub/a.log", 0, 1 },	/* .gitignore:1 */
	{ "sub/important.log", 0, 0 },	/* sub/.gitignore:1 */
	{ "sub/deep/important.log", 0, 1 },	/* sub/deep/.gitignore:1 */
	{ "sub/other/important.log", 0, 0 },	/* sub/.gitignore:1 */
	{ "top", 0, 1 },	/* .gitignore:2 */
	{ "sub/top", 0, 1 },	/* sub/.gitignore:2 */
	{ "sub/x/top", 0, 0 },	/* no rule */
	{ "lib/a.c", 0, 1 },	/* .gitignore:3 */
	{ "x.dat", 0, 1 },	/* .gitignore:5 */
	{ "sub/x.dat", 0, 0 },	/* sub/.gitignore:3 */
	{ "sub/deep/y.dat", 0, 0 },	/* sub/.gitignore:3 */
	{ NULL, 0, 0 }
};

/* Patterns in a subdirectory are relative to it. */
static const struct gi_file gi_nestedanchor_files[] = {
	{ "a", "b/c\n/d\n*.o\ne/\n" },
	{ "a/b", "!c\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_nestedanchor_cases[] = {
	{ "a/b/c", 0, 0 },	/* a/b/.gitignore:1 */
	{ "b/c", 0, 0 },	/* no rule */
	{ "a/x/b/c", 0, 0 },	/* no rule */
	{ "a/d", 0, 1 },	/* a/.gitignore:2 */
	{ "a/x/d", 0, 0 },	/* no rule */
	{ "d", 0, 0 },	/* no rule */
	{ "a/x.o", 0, 1 },	/* a/.gitignore:3 */
	{ "x.o", 0, 0 },	/* no rule */
	{ "a/x/y.o", 0, 1 },	/* a/.gitignore:3 */
	{ "a/e", 1, 1 },	/* a/.gitignore:4 */
	{ "a/f/e", 1, 1 },	/* a/.gitignore:4 */
	{ NULL, 0, 0 }
};

/* Bracket expressions read as git's wildmatch reads them. */
static const struct gi_file gi_brackets_files[] = {
	{ "", "x[a/]y\nab[c\n[]]z\n[!]]w\nu[a-]v\nt\\\\\n" },
	{ NULL, NULL }
};
static const struct gi_case gi_brackets_cases[] = {
	{ "xay", 0, 1 },	/* .gitignore:1 */
	{ "x/y", 0, 0 },	/* no rule */
	{ "ab[c", 0, 0 },	/* no rule */
	{ "abc", 0, 0 },	/* no rule */
	{ "]z", 0, 1 },	/* .gitignore:3 */
	{ "aw", 0, 1 },	/* .gitignore:4 */
	{ "]w", 0, 0 },	/* no rule */
	{ "u-v", 0, 1 },	/* .gitignore:5 */
	{ "uav", 0, 1 },	/* .gitignore:5 */
	{ "t\\", 0, 1 },	/* .gitignore:6 */
	{ NULL, 0, 0 }
};

/* Load files (in order, or in reverse) and check every case. */
static int
gi_check(const struct gi_file *files, const struct gi_case *cases)
{
	struct gitignore	*gi;
	const struct gi_file	*f;
	const struct gi_case	*c;
	size_t			 n, i;
	int			 reverse, failed = 0;

	for (n = 0; files[n].dir != NULL; n++)
		;
	for (reverse = 0; reverse < 2; reverse++) {
		gi = gitignore_new();
		for (i = 0; i < n; i++) {
			f = &files[reverse ? n - 1 - i : i];
			gitignore_add(gi, f->dir, f->text, strlen(f->text));
		}
		for (c = cases; c->path != NULL; c++) {
			if (gitignore_ignored(gi, c->path, c->isdir) ==
			    c->ignored)
				continue;
			fprintf(stderr, "%s%s: expected %s (%s order)\n",
			    c->path, c->isdir ? "/" : "",
			    c->ignored ? "ignored" : "not ignored",
			    reverse ? "reverse" : "file");
			failed = 1;
		}
		gitignore_free(gi);
	}
	return (failed);
}

#define GI_TEST(name)							\
static int								\
test_##name(void)							\
{									\
	return (gi_check(gi_##name##_files, gi_##name##_cases));	\
}

GI_TEST(syntax)
GI_TEST(negation)
GI_TEST(dironly)
GI_TEST(anchored)
GI_TEST(wildcards)
GI_TEST(starstar)
GI_TEST(parent)
GI_TEST(nested)
GI_TEST(nestedanchor)
GI_TEST(brackets)

/* Adding the same directory twice appends: the later text wins. */
static int
test_append(void)
{
	struct gitignore	*gi;

	gi = gitignore_new();
	gitignore_add(gi, "", "*.o\n", 4);
	gitignore_add(gi, "d", "x.o\n", 4);
	gitignore_add(gi, "", "!a.o", 4);
	CHECK_INT(gitignore_ignored(gi, "b.o", 0), 1);
	CHECK_INT(gitignore_ignored(gi, "a.o", 0), 0);
	CHECK_INT(gitignore_ignored(gi, "d/a.o", 0), 0);
	CHECK_INT(gitignore_ignored(gi, "d/x.o", 0), 1);
	CHECK_INT(gitignore_ignored(gi, "", 0), 0);
	gitignore_free(gi);
	gitignore_free(NULL);
	return (0);
}

/* Our bounds: a line over GITIGNORE_MAX_LINE bytes is skipped. */
static int
test_long_line(void)
{
	struct gitignore	*gi;
	char			*text;
	size_t			 len;

	len = GITIGNORE_MAX_LINE + 1;
	text = xmalloc(len + 8);
	memset(text, 'a', len);
	memcpy(text + len, "\nb\n", 3);
	gi = gitignore_new();
	gitignore_add(gi, "", text, len + 3);
	text[len] = '\0';
	CHECK_INT(gitignore_ignored(gi, text, 0), 0);
	CHECK_INT(gitignore_ignored(gi, "b", 0), 1);
	gitignore_free(gi);

	/* Exactly GITIGNORE_MAX_LINE bytes is still read. */
	gi = gitignore_new();
	gitignore_add(gi, "", text, len - 1);
	text[len - 1] = '\0';
	CHECK_INT(gitignore_ignored(gi, text, 0), 1);
	gitignore_free(gi);
	free(text);
	return (0);
}

/* Past either bound the set ignores nothing at all. */
static int
test_overflow(void)
{
	struct gitignore	*gi;
	char			*text, *p, name[4000];
	size_t			 i, n;

	text = xmalloc((GITIGNORE_MAX_RULES + 1) * 8 + 1);
	p = text;
	for (i = 0; i < GITIGNORE_MAX_RULES; i++)
		p += sprintf(p, "f%05zu\n", i);
	gi = gitignore_new();
	gitignore_add(gi, "", text, p - text);
	CHECK_INT(gitignore_overflowed(gi), 0);
	CHECK_INT(gitignore_ignored(gi, "f00042", 0), 1);
	gitignore_add(gi, "sub", "one-more\n", 9);
	CHECK_INT(gitignore_overflowed(gi), 1);
	CHECK_INT(gitignore_ignored(gi, "f00042", 0), 0);
	CHECK_INT(gitignore_ignored(gi, "sub/one-more", 0), 0);
	gitignore_add(gi, "", "x\n", 2);
	CHECK_INT(gitignore_ignored(gi, "x", 0), 0);
	gitignore_free(gi);
	free(text);

	/* GITIGNORE_MAX_BYTES of patterns: 4000-byte lines. */
	n = GITIGNORE_MAX_BYTES / 4000 + 1;
	text = xmalloc(n * 4001);
	for (i = 0; i < n; i++) {
		memset(text + i * 4001, 'a' + i % 26, 4000);
		text[i * 4001 + 3999] = '*';
		text[i * 4001 + 4000] = '\n';
	}
	gi = gitignore_new();
	gitignore_add(gi, "", text, (n - 1) * 4001);
	memset(name, 'a', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	CHECK_INT(gitignore_overflowed(gi), 0);
	CHECK_INT(gitignore_ignored(gi, name, 0), 1);
	gitignore_add(gi, "x", text + (n - 1) * 4001, 4001);
	CHECK_INT(gitignore_overflowed(gi), 1);
	CHECK_INT(gitignore_ignored(gi, name, 0), 0);
	gitignore_free(gi);
	free(text);
	return (0);
}

const struct unit_case unit_gitignore_cases[] = {
	{ "gitignore/syntax", test_syntax },
	{ "gitignore/negation", test_negation },
	{ "gitignore/dir-only", test_dironly },
	{ "gitignore/anchored", test_anchored },
	{ "gitignore/wildcards", test_wildcards },
	{ "gitignore/double-star", test_starstar },
	{ "gitignore/parent-excluded", test_parent },
	{ "gitignore/nested", test_nested },
	{ "gitignore/nested-anchored", test_nestedanchor },
	{ "gitignore/brackets", test_brackets },
	{ "gitignore/append", test_append },
	{ "gitignore/long-line", test_long_line },
	{ "gitignore/overflow", test_overflow },
	{ NULL, NULL }
};
