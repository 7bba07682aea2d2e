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
 * Workspace roots on the host: resolving a caller's path to a canonical
 * directory under a configured root, and listing a directory's
 * subdirectories. A directory is read a slice of entries per loop
 * iteration, so a directory of a million entries never stalls the loop;
 * only the first entries by name (the configured cap, 500 by default) are
 * kept while reading.
 *
 * A root may serve only some tenants (workspace-root DIR tenants a,b). The
 * deepest root that holds a path decides whether a caller may use it, so
 * a root limited to other tenants is hidden even inside a root that
 * serves everyone; to such a caller it is exactly a path under no root.
 * An export root limited to other tenants is hidden the same way: what
 * was exported there is theirs, whatever workspace root holds it. The
 * local operator uses every root.
 */

#include "config.h"

#include <sys/stat.h>

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

#include "engine.h"
#include "sandbox-mcp.h"

#define WORKSPACE_SLICE	256

struct workspace_dir {
	char	*name;
	char	*path;
};

struct workspace_list {
	char			*path;		/* canonical */
	char			*parent;	/* NULL at a root */
	char			*tenant;
	DIR			*dir;
	struct event		*ev;
	struct workspace_dir	*kept;		/* sorted by name */
	size_t			 nkept;
	size_t			 cap;
	int			 truncated;
	char			**hidden;	/* roots not the caller's */
	size_t			 nhidden;
	workspace_list_cb	 cb;
	void			*arg;
};

/* Whether canonical path p is root r or below it. */
int
workspace_under(const char *p, const char *r)
{
	size_t	len = strlen(r);

	if (strcmp(r, "/") == 0)
		return (1);
	return (strncmp(p, r, len) == 0 && (p[len] == '\0' || p[len] == '/'));
}

/*
 * Where a configured root is on the host (allocated): its realpath, or,
 * while it does not exist yet, the realpath of its nearest ancestor that
 * does with the rest as written, so that a root behind a link is known
 * by where it will be before anyone makes it. NULL when nothing of it
 * resolves.
 */
static char *
workspace_root_real(const char *word)
{
	char	*full, *prefix, *real = NULL, *out;
	size_t	 len;

	if ((real = realpath(word, NULL)) != NULL || errno != ENOENT)
		return (real);
	full = workspace_clean(word);
	prefix = xstrdup(full);
	len = strlen(full);
	for (;;) {
		while (len > 0 && full[--len] != '/')
			;		/* to the slash before the last part */
		if (len == 0) {
			real = xstrdup("/");
			break;
		}
		prefix[len] = '\0';
		if ((real = realpath(prefix, NULL)) != NULL || errno != ENOENT)
			break;
	}
	free(prefix);
	if (real == NULL) {
		free(full);
		return (NULL);
	}
	/* What does not exist yet, as written, after what resolved. */
	xasprintf(&out, "%s%s", strcmp(real, "/") == 0 ? "" : real,
	    full + len);
	free(real);
	free(full);
	return (out);
}

/* Whether a configured root serves a tenant: all when it names none. */
int
workspace_root_serves(struct cfg_word *w, const char *tenant)
{
	struct cfg_word	*t;

	if (w->tenants == NULL || strcmp(tenant, TENANT_LOCAL) == 0)
		return (1);
	TAILQ_FOREACH(t, w->tenants, entry) {
		if (strcmp(t->word, tenant) == 0)
			return (1);
	}
	return (0);
}

/*
 * The root that decides over path p for tenant: the deepest of those
 * holding p, compared canonically (resolve set: roots that do not resolve
 * are skipped) or as written. Returns it allocated when it serves the
 * tenant (among equally deep ones, when any does), else NULL.
 */
static char *
workspace_root_decides(const char *p, const char *tenant, int resolve)
{
	struct cfg_word	*w;
	char		*r, *best = NULL;
	size_t		 len, bestlen = 0;
	int		 serves = 0;

	TAILQ_FOREACH(w, &cfg->roots, entry) {
		if (!resolve)
			r = xstrdup(w->word);
		else if ((r = workspace_root_real(w->word)) == NULL)
			continue;
		len = strlen(r);
		if (!workspace_under(p, r) || (best != NULL && len < bestlen)) {
			free(r);
			continue;
		}
		if (best == NULL || len > bestlen) {
			free(best);
			best = r;
			bestlen = len;
			serves = workspace_root_serves(w, tenant);
		} else {
			serves |= workspace_root_serves(w, tenant);
			free(r);
		}
	}
	if (!serves) {
		free(best);
		return (NULL);
	}
	/*
	 * An export root limited to other tenants at that depth or deeper
	 * holds what they exported: not the caller's to read or list.
	 */
	TAILQ_FOREACH(w, &cfg->export_roots, entry) {
		if (workspace_root_serves(w, tenant))
			continue;
		if (!resolve)
			r = workspace_clean(w->word);
		else if ((r = workspace_root_real(w->word)) == NULL)
			continue;
		if (workspace_under(p, r) && strlen(r) >= bestlen) {
			free(r);
			free(best);
			return (NULL);
		}
		free(r);
	}
	return (best);
}

/*
 * The root (canonical, allocated) that holds canonical path p for a
 * tenant, or NULL.
 */
static char *
workspace_root_of(const char *p, const char *tenant)
{
	return (workspace_root_decides(p, tenant, 1));
}

/*
 * Whether a workspace or export root that does not serve tenant holds
 * path p (clean), as the root is written or as it resolves: what is under
 * it is another tenant's, however p was reached (a root of everyone's
 * above it, or another root). Returns 1 for a workspace root, 2 for an
 * export root, else 0.
 */
int
workspace_foreign(const char *p, const char *tenant)
{
	struct cfg_word	*w;
	char		*r;
	int		 k, i, in = 0;

	for (i = 0; i < 2; i++) {
		TAILQ_FOREACH(w, i == 0 ? &cfg->roots : &cfg->export_roots,
		    entry) {
			if (workspace_root_serves(w, tenant))
				continue;
			for (k = 0; k < 2 && !in; k++) {
				r = k == 0 ? workspace_clean(w->word) :
				    workspace_root_real(w->word);
				in = r != NULL && workspace_under(p, r);
				free(r);
			}
			if (in)
				return (i + 1);
		}
	}
	return (0);
}

/* Add root r (clean) to the hidden names of dir, when strictly below it. */
static void
workspace_hide_one(const char *dir, const char *r, char ***list, size_t *n)
{
	size_t	len = strlen(dir), i;

	if (!workspace_under(r, dir) || strcmp(r, dir) == 0)
		return;
	r += strcmp(dir, "/") == 0 ? 1 : len + 1;
	for (i = 0; i < *n; i++) {
		if (strcmp((*list)[i], r) == 0)
			return;
	}
	*list = xreallocarray(*list, *n + 1, sizeof **list);
	(*list)[(*n)++] = xstrdup(r);
}

/*
 * The configured workspace and export roots strictly below directory dir
 * (clean, canonical) that do not serve tenant, as paths relative to dir,
 * as written and as they resolve: what a copy of dir for tenant leaves
 * out and an export into dir leaves alone. *n of them, allocated.
 */
char **
workspace_hidden(const char *dir, const char *tenant, size_t *n)
{
	struct cfg_word	 *w;
	char		**list = NULL, *r, *real;
	int		  k;

	*n = 0;
	for (k = 0; k < 2; k++) {
		TAILQ_FOREACH(w, k == 0 ? &cfg->roots : &cfg->export_roots,
		    entry) {
			if (workspace_root_serves(w, tenant))
				continue;
			r = workspace_clean(w->word);
			workspace_hide_one(dir, r, &list, n);
			free(r);
			if ((real = workspace_root_real(w->word)) != NULL) {
				workspace_hide_one(dir, real, &list, n);
				free(real);
			}
		}
	}
	return (list);
}

/* Whether a path, taken as written, lies under a root of a tenant. */
static int
workspace_lexically_under(const char *p, const char *tenant)
{
	char	*r;

	if ((r = workspace_root_decides(p, tenant, 0)) == NULL)
		return (0);
	free(r);
	return (1);
}

/*
 * An absolute path with its "." and ".." components taken as text, and
 * no empty ones ("/" stays "/"): allocated.
 */
char *
workspace_clean(const char *path)
{
	char		*out;
	const char	*p = path;
	size_t		 len, o = 0;

	out = xmalloc(strlen(path) + 2);
	while (*p != '\0') {
		p += strspn(p, "/");
		len = strcspn(p, "/");
		if (len == 0 || (len == 1 && p[0] == '.')) {
			p += len;
			continue;
		}
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 0 && out[--o] != '/')
				;
			p += len;
			continue;
		}
		out[o++] = '/';
		memcpy(out + o, p, len);
		o += len;
		p += len;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return (out);
}

/*
 * Resolve a caller's absolute path (the argument arg) to a canonical
 * directory under a root of the caller's tenant. On failure return NULL
 * with a cause naming the argument and the path ({arg: path}).
 */
char *
workspace_resolve(const char *arg, const char *path, const char *tenant,
    struct cause *cause)
{
	struct stat	 st;
	char		*canon, *root, *clean;

	if (TAILQ_EMPTY(&cfg->roots)) {
		cause_set(cause, CAUSE_FAILED, arg, path, "no workspace roots"
		    " are configured (add workspace-root lines to %s)",
		    cfg->path != NULL ? cfg->path : "the configuration file");
		return (NULL);
	}
	if (path[0] != '/') {
		cause_set(cause, CAUSE_INVALID, arg, path, "%s must be an"
		    " absolute path: %.200s", arg, path);
		return (NULL);
	}
	if (strlen(path) >= PATH_MAX) {
		cause_set(cause, CAUSE_INVALID, arg, path, "%s is longer than"
		    " %d bytes", arg, PATH_MAX);
		return (NULL);
	}
	/*
	 * Lexically first (. and .. taken as text): a path outside the
	 * caller's roots is refused before anything is looked up, so no
	 * answer tells what exists outside them or where a link there
	 * points; only the path cleaned so is resolved.
	 */
	clean = workspace_clean(path);
	if (!workspace_lexically_under(clean, tenant)) {
		cause_set(cause, CAUSE_INVALID, arg, path, "%.200s is outside"
		    " the workspace roots", path);
		free(clean);
		return (NULL);
	}
	canon = realpath(clean, NULL);
	free(clean);
	if (canon == NULL) {
		if (errno == ENOENT || errno == ENOTDIR)
			cause_set(cause, CAUSE_NOT_FOUND, arg, path, "no such"
			    " directory: %.200s", path);
		else
			cause_set(cause, CAUSE_FAILED, arg, path, "cannot"
			    " resolve %.200s: %s", path, strerror(errno));
		return (NULL);
	}
	if ((root = workspace_root_of(canon, tenant)) == NULL) {
		cause_set(cause, CAUSE_INVALID, arg, path, "%.200s is outside"
		    " the workspace roots (a link in it leads out)", path);
		free(canon);
		return (NULL);
	}
	free(root);
	if (stat(canon, &st) != 0 || !S_ISDIR(st.st_mode)) {
		cause_set(cause, CAUSE_INVALID, arg, path, "%.200s is not a"
		    " directory", path);
		free(canon);
		return (NULL);
	}
	return (canon);
}

static char *
workspace_basename(const char *p)
{
	const char	*s = strrchr(p, '/');

	if (s == NULL || s[1] == '\0')
		return (xstrdup(p));
	return (xstrdup(s + 1));
}

/* The roots of a tenant that resolve, as the path-less listing. */
cJSON *
workspace_roots(const char *tenant, struct cause *cause)
{
	struct cfg_word	*w;
	cJSON		*result, *dirs, *d;
	char		*canon, *name, *root;

	if (TAILQ_EMPTY(&cfg->roots)) {
		cause_set(cause, CAUSE_FAILED, NULL, NULL, "no workspace roots"
		    " are configured (add workspace-root lines to %s)",
		    cfg->path != NULL ? cfg->path : "the configuration file");
		return (NULL);
	}
	result = cJSON_CreateObject();
	cJSON_AddNullToObject(result, "path");
	cJSON_AddNullToObject(result, "parent");
	cJSON_AddFalseToObject(result, "truncated");
	dirs = cJSON_AddArrayToObject(result, "directories");
	TAILQ_FOREACH(w, &cfg->roots, entry) {
		if ((canon = realpath(w->word, NULL)) == NULL) {
			log_debug("%s: workspace root %s: %s", __func__,
			    w->word, strerror(errno));
			continue;
		}
		if (!workspace_root_serves(w, tenant) ||
		    (root = workspace_root_of(canon, tenant)) == NULL) {
			free(canon);
			continue;
		}
		free(root);
		name = workspace_basename(canon);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "name", name);
		cJSON_AddStringToObject(d, "path", canon);
		cJSON_AddItemToArray(dirs, d);
		free(name);
		free(canon);
	}
	return (result);
}

static void
workspace_list_free(struct workspace_list *wl)
{
	size_t	i;

	if (wl->dir != NULL)
		closedir(wl->dir);
	if (wl->ev != NULL)
		event_free(wl->ev);
	for (i = 0; i < wl->nkept; i++) {
		free(wl->kept[i].name);
		free(wl->kept[i].path);
	}
	free(wl->kept);
	for (i = 0; i < wl->nhidden; i++)
		free(wl->hidden[i]);
	free(wl->hidden);
	free(wl->path);
	free(wl->parent);
	free(wl->tenant);
	free(wl);
}

/* Keep an entry if it is among the first cap names; count the rest. */
static void
workspace_list_keep(struct workspace_list *wl, const char *name,
    char *path)
{
	size_t	lo = 0, hi = wl->nkept, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (strcmp(wl->kept[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == wl->cap) {
		wl->truncated = 1;
		free(path);
		return;
	}
	if (wl->nkept == wl->cap) {
		wl->truncated = 1;
		free(wl->kept[wl->nkept - 1].name);
		free(wl->kept[wl->nkept - 1].path);
		wl->nkept--;
	}
	memmove(&wl->kept[lo + 1], &wl->kept[lo],
	    (wl->nkept - lo) * sizeof wl->kept[0]);
	wl->kept[lo].name = xstrdup(name);
	wl->kept[lo].path = path;
	wl->nkept++;
}

/*
 * Whether a subdirectory of the listed one is a root the caller may not
 * use: nothing else below a usable directory can be hidden from it.
 */
static int
workspace_list_hidden(struct workspace_list *wl, const char *path)
{
	size_t	i;

	for (i = 0; i < wl->nhidden; i++) {
		if (strcmp(wl->hidden[i], path) == 0)
			return (1);
	}
	return (0);
}

/* Look at one directory entry: keep it if it is a visible directory. */
static void
workspace_list_entry(struct workspace_list *wl, struct dirent *de)
{
	struct stat	 st;
	char		*full, *canon, *root;

	if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
		return;
	if (!util_utf8_valid(de->d_name, strlen(de->d_name)))
		return;		/* cannot be named in JSON */
	if (strcmp(wl->path, "/") == 0)
		xasprintf(&full, "/%s", de->d_name);
	else
		xasprintf(&full, "%s/%s", wl->path, de->d_name);
	if (de->d_type == DT_DIR) {
		if (workspace_list_hidden(wl, full))
			free(full);
		else
			workspace_list_keep(wl, de->d_name, full);
		return;
	}
	if (de->d_type != DT_LNK && de->d_type != DT_UNKNOWN) {
		free(full);
		return;
	}
	if (lstat(full, &st) != 0) {
		free(full);
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		if (workspace_list_hidden(wl, full))
			free(full);
		else
			workspace_list_keep(wl, de->d_name, full);
		return;
	}
	if (!S_ISLNK(st.st_mode) || stat(full, &st) != 0 ||
	    !S_ISDIR(st.st_mode) || (canon = realpath(full, NULL)) == NULL) {
		free(full);
		return;
	}
	free(full);
	if ((root = workspace_root_of(canon, wl->tenant)) == NULL) {
		free(canon);	/* leaves the caller's roots: hidden */
		return;
	}
	free(root);
	workspace_list_keep(wl, de->d_name, canon);
}

/* Read the next slice of entries; at the end, build the result. */
static void
workspace_list_slice_cb(evutil_socket_t fd, short events, void *arg)
{
	struct workspace_list	*wl = arg;
	struct dirent		*de;
	cJSON			*result, *dirs, *d;
	size_t			 i;
	int			 n;

	for (n = 0; n < WORKSPACE_SLICE; n++) {
		errno = 0;
		if ((de = readdir(wl->dir)) == NULL)
			break;
		workspace_list_entry(wl, de);
	}
	if (n == WORKSPACE_SLICE) {
		event_active(wl->ev, EV_TIMEOUT, 1);
		return;
	}
	if (errno != 0)
		log_warn("reading %s", wl->path);

	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "path", wl->path);
	if (wl->parent != NULL)
		cJSON_AddStringToObject(result, "parent", wl->parent);
	else
		cJSON_AddNullToObject(result, "parent");
	cJSON_AddBoolToObject(result, "truncated", wl->truncated);
	dirs = cJSON_AddArrayToObject(result, "directories");
	for (i = 0; i < wl->nkept; i++) {
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "name", wl->kept[i].name);
		cJSON_AddStringToObject(d, "path", wl->kept[i].path);
		cJSON_AddItemToArray(dirs, d);
	}
	wl->cb(result, wl->arg);
	workspace_list_free(wl);
}

/*
 * Begin listing the subdirectories of a caller's path for a tenant.
 * Returns NULL with a cause when the path is refused; otherwise the
 * callback gets the result from the loop later.
 */
struct workspace_list *
workspace_list_start(const char *path, const char *tenant,
    workspace_list_cb cb, void *arg, struct cause *cause)
{
	struct workspace_list	*wl;
	struct cfg_word		*w;
	char			*canon, *root, *slash, *r;
	int			 i, dfd;

	if ((canon = workspace_resolve("path", path, tenant, cause)) == NULL)
		return (NULL);
	wl = xcalloc(1, sizeof *wl);
	wl->path = canon;
	wl->tenant = xstrdup(tenant);
	wl->cb = cb;
	wl->arg = arg;
	wl->cap = (size_t)cfg_limit(LIMIT_LIST_DIRECTORIES);
	wl->kept = xcalloc(wl->cap, sizeof wl->kept[0]);
	for (i = 0; i < 2; i++) {
		TAILQ_FOREACH(w, i == 0 ? &cfg->roots : &cfg->export_roots,
		    entry) {
			if (workspace_root_serves(w, tenant) ||
			    (r = workspace_root_real(w->word)) == NULL)
				continue;
			if ((root = workspace_root_of(r, tenant)) != NULL) {
				free(root);
				free(r);
				continue;
			}
			wl->hidden = xreallocarray(wl->hidden, wl->nhidden + 1,
			    sizeof *wl->hidden);
			wl->hidden[wl->nhidden++] = r;
		}
	}
	root = workspace_root_of(canon, tenant);
	if (root != NULL && strcmp(root, canon) != 0) {
		wl->parent = xstrdup(canon);
		slash = strrchr(wl->parent, '/');
		if (slash == wl->parent)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	free(root);
	/* As it was judged: a link put in its place since fails the open. */
	if ((dfd = tree_open_path(canon, O_RDONLY | O_DIRECTORY)) == -1 ||
	    (wl->dir = fdopendir(dfd)) == NULL) {
		if (dfd != -1)
			close(dfd);
		cause_set(cause, CAUSE_FAILED, "path", path, "cannot read"
		    " %.200s: %s", canon, strerror(errno));
		workspace_list_free(wl);
		return (NULL);
	}
	if ((wl->ev = event_new(ev_base, -1, 0, workspace_list_slice_cb,
	    wl)) == NULL)
		fatalx("%s: event_new", __func__);
	event_active(wl->ev, EV_TIMEOUT, 1);
	return (wl);
}

/* Stop a listing; its callback will not run. */
void
workspace_list_cancel(struct workspace_list *wl)
{
	if (wl != NULL)
		workspace_list_free(wl);
}
