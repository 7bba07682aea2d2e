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
 * .gitignore rules, read and matched the way git's dir.c and wildmatch.c
 * do. A set holds the files of one workspace version, each under the
 * directory it was found in; a query walks the path from the top, so a
 * path below an excluded directory is excluded whatever later rules say,
 * and at each step asks the deepest file first and its last line first.
 *
 * A rule without a slash is matched against the last component only. Any
 * other rule is matched against the path below its file's directory: git
 * compares the bytes up to the first wildcard literally and hands the rest
 * to wildmatch(), where "**" between slashes (or at the start of that rest)
 * spans directories. Here the rest is cut into one fnmatch(3) glob per
 * component and the "**" items are matched by gitignore_items_match().
 * Bracket expressions are read with wildmatch()'s rules and rewritten with
 * every member escaped, so fnmatch never applies its own bracket syntax
 * ("[=a=]", collation). fnmatch runs in the C locale: one byte, one
 * character, as in git.
 *
 * The set owns copies of everything it was given; the bounds are in
 * gitignore.h.
 */

#include "config.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "gitignore.h"
#include "xmalloc.h"

#define GITIGNORE_NEGATIVE	0x01	/* "!pattern" re-includes */
#define GITIGNORE_MUSTBEDIR	0x02	/* "pattern/" matches directories */
#define GITIGNORE_BASENAME	0x04	/* no slash: the last component */
#define GITIGNORE_LITERAL	0x08	/* basename: no wildcard at all */
#define GITIGNORE_ENDSWITH	0x10	/* basename: "*" and a literal */

/* What the rules of the files above a path say about it. */
enum gitignore_verdict {
	GITIGNORE_NONE,
	GITIGNORE_EXCLUDED,
	GITIGNORE_INCLUDED
};

/* One component of a pattern after its literal prefix. */
enum gitignore_item_type {
	GITIGNORE_ITEM_STARSTAR,	/* "**": any number of components */
	GITIGNORE_ITEM_LITERAL,		/* compared with strcmp() */
	GITIGNORE_ITEM_GLOB		/* matched with fnmatch() */
};

struct gitignore_item {
	enum gitignore_item_type	 type;
	char				*text;
};

struct gitignore_rule {
	int			 flags;
	char			*prefix;	/* compared literally first */
	size_t			 prefixlen;
	struct gitignore_item	*items;
	size_t			 nitems;
};

struct gitignore_file {
	char			*dir;
	size_t			 dirlen;
	struct gitignore_rule	*rules;
	size_t			 nrules;
};

struct gitignore {
	struct gitignore_file	*files;		/* sorted by dir */
	size_t			 nfiles;
	size_t			 nrules;
	size_t			 nbytes;
	int			 overflow;
};

/* A growing glob. */
struct gitignore_buf {
	char	*s;
	size_t	 len;
	size_t	 size;
};

/* A path being asked about, cut up once for all the rules. */
struct gitignore_query {
	char			 *name;		/* cut after component k */
	char			 *copy;		/* with NULs for slashes */
	char			**comps;
	size_t			 *start;	/* of each component */
	size_t			  ncomp;
	size_t			  k;		/* the one being decided */
	int			  isdir;
	struct gitignore_file	**files;	/* by depth */
	char			 *buf;		/* text after a prefix */
	char			**pieces;
};

static void	gitignore_buf_add(struct gitignore_buf *, const char *,
		    size_t);
static int	gitignore_class(const char *, size_t, unsigned char *);
static const char *gitignore_bracket(const char *, struct gitignore_buf *);
static void	gitignore_item(struct gitignore_rule *, struct gitignore_buf *,
		    int);
static int	gitignore_compile(struct gitignore_rule *, const char *, int);
static void	gitignore_rule_clear(struct gitignore_rule *);
static void	gitignore_trim(char *);
static struct gitignore_file *gitignore_find(struct gitignore *,
		    const char *, size_t, int);
static void	gitignore_parse(struct gitignore *, const char *, char *);
static void	gitignore_clear(struct gitignore *);
static int	gitignore_run(struct gitignore_item *, char **, size_t);
static int	gitignore_items_match(struct gitignore_rule *, char **,
		    size_t);
static int	gitignore_rule_match(struct gitignore_rule *,
		    struct gitignore_query *, size_t);
static enum gitignore_verdict gitignore_decide(struct gitignore_query *);

static void
gitignore_buf_add(struct gitignore_buf *b, const char *s, size_t len)
{
	if (b->len + len + 1 > b->size) {
		b->size = (b->len + len + 1) * 2;
		b->s = xrealloc(b->s, b->size);
	}
	memcpy(b->s + b->len, s, len);
	b->len += len;
	b->s[b->len] = '\0';
}

/*
 * The [:name:] classes as git's wildmatch() has them (ASCII only; its
 * isspace() leaves out \v and \f), each as pairs of first and last byte.
 */
static const struct {
	const char	*name;
	const char	*ranges;
} gitignore_classes[] = {
	{ "alnum", "09AZaz" },
	{ "alpha", "AZaz" },
	{ "blank", "\t\t  " },
	{ "cntrl", "\001\037\177\177" },
	{ "digit", "09" },
	{ "graph", "!~" },
	{ "lower", "az" },
	{ "print", " ~" },
	{ "punct", "!/:@[`{~" },
	{ "space", "\t\n\r\r  " },
	{ "upper", "AZ" },
	{ "xdigit", "09AFaf" }
};

/* Add the members of the class name (len bytes) to set. */
static int
gitignore_class(const char *name, size_t len, unsigned char *set)
{
	const char	*r;
	size_t		 i;
	int		 c;

	for (i = 0; i < sizeof gitignore_classes /
	    sizeof gitignore_classes[0]; i++) {
		if (strlen(gitignore_classes[i].name) != len ||
		    memcmp(gitignore_classes[i].name, name, len) != 0)
			continue;
		for (r = gitignore_classes[i].ranges; *r != '\0'; r += 2) {
			for (c = (unsigned char)r[0]; c <= (unsigned char)r[1];
			    c++)
				set[c] = 1;
		}
		return (0);
	}
	return (-1);
}

/*
 * Read the bracket expression starting at p as wildmatch() does and append
 * it to b with every member escaped and runs of members as ranges. Returns
 * the closing ']', or NULL when git would never match the pattern: no
 * closing bracket, or an unknown class.
 */
static const char *
gitignore_bracket(const char *p, struct gitignore_buf *b)
{
	unsigned char	 set[256];
	const char	*s, *q;
	char		 esc[6];
	int		 c, prev, i, lo, negated = 0, members = 0;

	memset(set, 0, sizeof set);
	c = (unsigned char)*++p;
	if (c == '!' || c == '^') {
		negated = 1;
		c = (unsigned char)*++p;
	}
	prev = 0;
	do {
		if (c == '\0')
			return (NULL);
		if (c == '\\') {
			if ((c = (unsigned char)*++p) == '\0')
				return (NULL);
			set[c] = 1;
		} else if (c == '-' && prev != 0 && p[1] != '\0' &&
		    p[1] != ']') {
			c = (unsigned char)*++p;
			if (c == '\\' && (c = (unsigned char)*++p) == '\0')
				return (NULL);
			for (i = prev; i <= c; i++)
				set[i] = 1;
			c = 0;
		} else if (c == '[' && p[1] == ':') {
			s = p + 2;
			for (q = s; *q != '\0' && *q != ']'; q++)
				;
			if (*q == '\0')
				return (NULL);
			if (q - s >= 1 && q[-1] == ':') {
				if (gitignore_class(s, q - s - 1, set) != 0)
					return (NULL);
				p = q;
				c = 0;
			} else
				set['['] = 1;	/* not a class: a plain '[' */
		} else
			set[c] = 1;
		prev = c;
		c = (unsigned char)*++p;
	} while (c != ']');

	for (i = 1; i < 256; i++)
		members += set[i];
	if (members == 0) {
		/* Nothing, or anything but the '/' a component never has. */
		gitignore_buf_add(b, negated ? "?" : "[\\/]", negated ? 1 : 4);
		return (p);
	}
	gitignore_buf_add(b, negated ? "[!" : "[", negated ? 2 : 1);
	for (i = 1; i < 256; i++) {
		if (!set[i])
			continue;
		for (lo = i; i + 1 < 256 && set[i + 1]; i++)
			;
		esc[0] = '\\';
		esc[1] = (char)lo;
		if (lo == i)
			gitignore_buf_add(b, esc, 2);
		else {
			esc[2] = '-';
			esc[3] = '\\';
			esc[4] = (char)i;
			gitignore_buf_add(b, esc, 5);
		}
	}
	gitignore_buf_add(b, "]", 1);
	return (p);
}

/* Close the component being built in b as the rule's next item. */
static void
gitignore_item(struct gitignore_rule *r, struct gitignore_buf *b, int star)
{
	struct gitignore_item	*item;

	r->items = xreallocarray(r->items, r->nitems + 1, sizeof *r->items);
	item = &r->items[r->nitems++];
	if (star) {
		item->type = GITIGNORE_ITEM_STARSTAR;
		item->text = NULL;
		return;
	}
	item->text = xstrndup(b->s != NULL ? b->s : "", b->len);
	if (strcspn(item->text, "*?[\\") == b->len)
		item->type = GITIGNORE_ITEM_LITERAL;
	else
		item->type = GITIGNORE_ITEM_GLOB;
	b->len = 0;
}

/*
 * Turn pattern text into the rule's items: with pathname set, one a
 * component, and a "**" item wherever wildmatch() lets stars span
 * directories (a run of two or more at the start or after a slash, and at
 * the end or before a slash); without it a single item. Returns -1 when
 * git would never match the pattern.
 */
static int
gitignore_compile(struct gitignore_rule *r, const char *pat, int pathname)
{
	struct gitignore_buf	 b;
	const char		*p = pat, *q;
	int			 open = 1;

	memset(&b, 0, sizeof b);
	while (*p != '\0') {
		switch (*p) {
		case '\\':
			if (p[1] == '\0')
				goto dead;	/* a lone trailing backslash */
			if (p[1] == '/') {
				gitignore_item(r, &b, 0);
				p += 2;
				break;
			}
			gitignore_buf_add(&b, p, 2);
			p += 2;
			break;
		case '[':
			if ((q = gitignore_bracket(p, &b)) == NULL)
				goto dead;
			p = q + 1;
			break;
		case '*':
			for (q = p; *q == '*'; q++)
				;
			if (pathname && q - p >= 2 && (p == pat ||
			    p[-1] == '/') && (*q == '\0' || *q == '/' ||
			    (q[0] == '\\' && q[1] == '/'))) {
				gitignore_item(r, &b, 1);
				if (*q == '\0') {
					open = 0;
					p = q;
				} else
					p = q + (*q == '/' ? 1 : 2);
				break;
			}
			gitignore_buf_add(&b, "*", 1);
			p = q;
			break;
		case '/':
			gitignore_item(r, &b, 0);
			p++;
			break;
		default:
			gitignore_buf_add(&b, p, 1);
			p++;
			break;
		}
	}
	if (open)
		gitignore_item(r, &b, 0);
	free(b.s);
	return (0);

dead:
	free(b.s);
	return (-1);
}

static void
gitignore_rule_clear(struct gitignore_rule *r)
{
	size_t	i;

	for (i = 0; i < r->nitems; i++)
		free(r->items[i].text);
	free(r->items);
	free(r->prefix);
}

/* Strip trailing spaces unless escaped, as git's trim_trailing_spaces(). */
static void
gitignore_trim(char *s)
{
	char	*p, *space = NULL;

	for (p = s; *p != '\0'; p++) {
		switch (*p) {
		case ' ':
			if (space == NULL)
				space = p;
			break;
		case '\\':
			if (*++p == '\0')
				return;
			/* FALLTHROUGH */
		default:
			space = NULL;
			break;
		}
	}
	if (space != NULL)
		*space = '\0';
}

/* The file for dir (len bytes), created in place if create is set. */
static struct gitignore_file *
gitignore_find(struct gitignore *gi, const char *dir, size_t len, int create)
{
	struct gitignore_file	*f;
	size_t			 lo = 0, hi = gi->nfiles, mid;
	int			 cmp;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		f = &gi->files[mid];
		cmp = memcmp(f->dir, dir, f->dirlen < len ? f->dirlen : len);
		if (cmp == 0)
			cmp = (f->dirlen > len) - (f->dirlen < len);
		if (cmp == 0)
			return (f);
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!create)
		return (NULL);
	gi->files = xreallocarray(gi->files, gi->nfiles + 1, sizeof *gi->files);
	memmove(&gi->files[lo + 1], &gi->files[lo],
	    (gi->nfiles - lo) * sizeof *gi->files);
	gi->nfiles++;
	f = &gi->files[lo];
	memset(f, 0, sizeof *f);
	f->dir = xstrndup(dir, len);
	f->dirlen = len;
	return (f);
}

/* Read one line (no newline, NUL-terminated) as git's add_pattern(). */
static void
gitignore_parse(struct gitignore *gi, const char *dir, char *line)
{
	struct gitignore_rule	 r;
	struct gitignore_file	*f;
	char			*p = line;
	size_t			 len;

	memset(&r, 0, sizeof r);
	if (*p == '!') {
		r.flags |= GITIGNORE_NEGATIVE;
		p++;
	}
	len = strlen(p);
	if (len != 0 && p[len - 1] == '/') {
		r.flags |= GITIGNORE_MUSTBEDIR;
		p[--len] = '\0';
	}
	if (len == 0)
		return;		/* matches nothing */
	if (strchr(p, '/') == NULL) {
		/* Plain and "*.ext" names skip fnmatch, as in git. */
		r.flags |= GITIGNORE_BASENAME;
		if (strcspn(p, "*?[\\") == len) {
			r.flags |= GITIGNORE_LITERAL;
			r.prefix = xstrdup(p);
			r.prefixlen = len;
		} else if (*p == '*' && strcspn(p + 1, "*?[\\") == len - 1) {
			r.flags |= GITIGNORE_ENDSWITH;
			r.prefix = xstrdup(p + 1);
			r.prefixlen = len - 1;
		} else if (gitignore_compile(&r, p, 0) != 0) {
			gitignore_rule_clear(&r);
			return;
		}
	} else {
		if (*p == '/')
			p++;
		r.prefixlen = strcspn(p, "*?[\\");
		r.prefix = xstrndup(p, r.prefixlen);
		if (p[r.prefixlen] != '\0' &&
		    gitignore_compile(&r, p + r.prefixlen, 1) != 0) {
			gitignore_rule_clear(&r);
			return;
		}
	}

	gi->nrules++;
	gi->nbytes += strlen(line);
	if (gi->nrules > GITIGNORE_MAX_RULES ||
	    gi->nbytes > GITIGNORE_MAX_BYTES) {
		gitignore_rule_clear(&r);
		gitignore_clear(gi);
		gi->overflow = 1;
		return;
	}
	f = gitignore_find(gi, dir, strlen(dir), 1);
	f->rules = xreallocarray(f->rules, f->nrules + 1, sizeof *f->rules);
	f->rules[f->nrules++] = r;
}

/* Drop every file and rule. */
static void
gitignore_clear(struct gitignore *gi)
{
	size_t	i, j;

	for (i = 0; i < gi->nfiles; i++) {
		for (j = 0; j < gi->files[i].nrules; j++)
			gitignore_rule_clear(&gi->files[i].rules[j]);
		free(gi->files[i].rules);
		free(gi->files[i].dir);
	}
	free(gi->files);
	gi->files = NULL;
	gi->nfiles = 0;
}

struct gitignore *
gitignore_new(void)
{
	struct gitignore	*gi;

	gi = xcalloc(1, sizeof *gi);
	return (gi);
}

/*
 * Add the rules of the .gitignore in dir ("" for the top, no slash at
 * either end) from its bytes. Lines end with LF or CRLF; a leading UTF-8
 * BOM, blank lines, "#" comments and lines over GITIGNORE_MAX_LINE bytes
 * are skipped. Adding the same directory again appends to its rules.
 */
void
gitignore_add(struct gitignore *gi, const char *dir, const char *text,
    size_t len)
{
	char	*line;
	size_t	 i = 0, eol, n;

	if (gi->overflow)
		return;
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		i = 3;
	line = xmalloc(GITIGNORE_MAX_LINE + 1);
	while (i < len && !gi->overflow) {
		for (eol = i; eol < len && text[eol] != '\n'; eol++)
			;
		n = eol - i;
		if (n != 0 && n <= GITIGNORE_MAX_LINE && text[i] != '#') {
			memcpy(line, text + i, n);
			if (line[n - 1] == '\r')
				n--;
			line[n] = '\0';
			gitignore_trim(line);
			gitignore_parse(gi, dir, line);
		}
		i = eol + 1;
	}
	free(line);
}

/* Whether the set gave up on its bounds and so ignores nothing. */
int
gitignore_overflowed(struct gitignore *gi)
{
	return (gi->overflow);
}

/* Whether pieces[0..n) match the n items (none of them "**"). */
static int
gitignore_run(struct gitignore_item *items, char **pieces, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (items[i].type == GITIGNORE_ITEM_LITERAL) {
			if (strcmp(items[i].text, pieces[i]) != 0)
				return (0);
		} else if (fnmatch(items[i].text, pieces[i], 0) != 0)
			return (0);
	}
	return (1);
}

/*
 * Whether the n slash-separated pieces of a text match the rule's items.
 * A "**" item stands for any number of whole pieces and the slash after
 * them, so it needs a piece (maybe empty) left after the items before it;
 * at the end it takes all the rest. Between two "**" the earliest place a
 * run of globs matches is as good as any later one, since the next "**"
 * can take up the difference, so the search never backtracks.
 */
static int
gitignore_items_match(struct gitignore_rule *r, char **pieces, size_t n)
{
	struct gitignore_item	*items = r->items;
	size_t			 i, e, j, run;

	for (e = 0; e < r->nitems && items[e].type != GITIGNORE_ITEM_STARSTAR;
	    e++)
		;
	if (e == r->nitems)
		return (n == e && gitignore_run(items, pieces, n));
	if (e >= n || !gitignore_run(items, pieces, e))
		return (0);
	i = e;
	j = e;
	for (;;) {
		while (i < r->nitems &&
		    items[i].type == GITIGNORE_ITEM_STARSTAR)
			i++;
		if (j >= n)
			return (0);
		if (i == r->nitems)
			return (1);
		for (e = i; e < r->nitems &&
		    items[e].type != GITIGNORE_ITEM_STARSTAR; e++)
			;
		run = e - i;
		if (e == r->nitems) {
			if (n - j < run)
				return (0);
			return (gitignore_run(items + i, pieces + n - run,
			    run));
		}
		for (; j + run < n; j++) {
			if (gitignore_run(items + i, pieces + j, run))
				break;
		}
		if (j + run >= n)
			return (0);
		j += run;
		i = e;
	}
}

/*
 * Whether one rule of the file for the first d components matches the path
 * up to component k.
 */
static int
gitignore_rule_match(struct gitignore_rule *r, struct gitignore_query *q,
    size_t d)
{
	const char	*rel, *rest;
	char		*base = q->comps[q->k];
	size_t		 n;
	char		*p;

	if (r->flags & GITIGNORE_LITERAL)
		return (strcmp(base, r->prefix) == 0);
	if (r->flags & GITIGNORE_ENDSWITH) {
		n = strlen(base);
		return (n >= r->prefixlen &&
		    memcmp(base + n - r->prefixlen, r->prefix,
		    r->prefixlen) == 0);
	}
	if (r->flags & GITIGNORE_BASENAME)
		return (gitignore_run(r->items, &base, 1));

	/* Without a literal prefix the pieces are the path's components. */
	if (r->prefixlen == 0)
		return (gitignore_items_match(r, q->comps + d, q->k - d + 1));
	rel = q->name + q->start[d];
	if (strncmp(rel, r->prefix, r->prefixlen) != 0)
		return (0);
	rest = rel + r->prefixlen;
	if (r->nitems == 0)
		return (*rest == '\0');
	memcpy(q->buf, rest, strlen(rest) + 1);
	q->pieces[0] = q->buf;
	n = 1;
	for (p = q->buf; *p != '\0'; p++) {
		if (*p == '/') {
			*p = '\0';
			q->pieces[n++] = p + 1;
		}
	}
	return (gitignore_items_match(r, q->pieces, n));
}

/*
 * Ask the files of the directories above component k, deepest first and
 * last rule first: the first rule that matches decides.
 */
static enum gitignore_verdict
gitignore_decide(struct gitignore_query *q)
{
	struct gitignore_file	*f;
	struct gitignore_rule	*r;
	size_t			 d, i;

	for (d = q->k + 1; d-- > 0;) {
		if ((f = q->files[d]) == NULL)
			continue;
		for (i = f->nrules; i-- > 0;) {
			r = &f->rules[i];
			if ((r->flags & GITIGNORE_MUSTBEDIR) && !q->isdir)
				continue;
			if (!gitignore_rule_match(r, q, d))
				continue;
			if (r->flags & GITIGNORE_NEGATIVE)
				return (GITIGNORE_INCLUDED);
			return (GITIGNORE_EXCLUDED);
		}
	}
	return (GITIGNORE_NONE);
}

/*
 * Whether path (relative, '/'-separated, no slash at either end) is
 * ignored; isdir says whether it is a directory. Each directory above it
 * is tried first, as git does while it walks down: an excluded one
 * excludes all it contains.
 */
int
gitignore_ignored(struct gitignore *gi, const char *path, int isdir)
{
	struct gitignore_query	 q;
	size_t			 i, k, len, end;
	char			 saved;
	int			 ignored = 0;

	if (gi->overflow || gi->nfiles == 0 || *path == '\0')
		return (0);
	memset(&q, 0, sizeof q);
	q.name = xstrdup(path);
	q.copy = xstrdup(path);
	len = strlen(path);
	q.ncomp = 1;
	for (i = 0; i < len; i++) {
		if (path[i] == '/')
			q.ncomp++;
	}
	q.comps = xcalloc(q.ncomp, sizeof *q.comps);
	q.start = xcalloc(q.ncomp, sizeof *q.start);
	q.files = xcalloc(q.ncomp, sizeof *q.files);
	q.pieces = xcalloc(q.ncomp, sizeof *q.pieces);
	q.buf = xmalloc(len + 1);
	q.comps[0] = q.copy;
	for (i = 0, k = 1; i < len; i++) {
		if (path[i] == '/') {
			q.copy[i] = '\0';
			q.comps[k] = q.copy + i + 1;
			q.start[k++] = i + 1;
		}
	}
	for (k = 0; k < q.ncomp; k++) {
		q.files[k] = gitignore_find(gi, path,
		    k == 0 ? 0 : q.start[k] - 1, 0);
	}

	for (k = 0; k < q.ncomp && !ignored; k++) {
		end = k + 1 < q.ncomp ? q.start[k + 1] - 1 : len;
		saved = q.name[end];
		q.name[end] = '\0';
		q.k = k;
		q.isdir = k + 1 < q.ncomp ? 1 : isdir;
		if (gitignore_decide(&q) == GITIGNORE_EXCLUDED)
			ignored = 1;
		q.name[end] = saved;
	}

	free(q.buf);
	free(q.pieces);
	free(q.files);
	free(q.start);
	free(q.comps);
	free(q.copy);
	free(q.name);
	return (ignored);
}

void
gitignore_free(struct gitignore *gi)
{
	if (gi == NULL)
		return;
	gitignore_clear(gi);
	free(gi);
}
