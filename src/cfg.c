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
 * The configuration file: one directive a line, blank-separated words,
 * double quotes around a word holding blanks, "#" to the end of the line
 * for comments. Errors are reported as "file:line: message" and parsing
 * goes on so that one run shows every mistake.
 *
 * The grammar has no nesting or blocks, so a keyword table and a small
 * tokenizer do what a yacc grammar would, with less machinery.
 */

#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox-mcp.h"

/*
 * Bumped whenever an API key goes or comes, so that what remembers a
 * key's verdict (auth.c) knows to look again.
 */
static unsigned long	cfg_keys_generation_n = 1;

unsigned long
cfg_keys_generation(void)
{
	return (cfg_keys_generation_n);
}

/* The key table was replaced (a reload): every remembered key is stale. */
void
cfg_keys_changed(void)
{
	cfg_keys_generation_n++;
}

#define CFG_LINE_MAX	4096
#define CFG_WORDS_MAX	32
#define CFG_FILE_MAX	(1024 * 1024)

enum cfg_limit_type {
	CFG_LIMIT_SIZE,
	CFG_LIMIT_COUNT,
	CFG_LIMIT_SECONDS
};

static const struct cfg_limit_entry {
	const char		*name;
	enum cfg_limit_type	 type;
	long long		 min;
	long long		 max;
	long long		 dflt;
} cfg_limit_table[LIMIT__COUNT] = {
	[LIMIT_MAX_BODY] = { "max-body", CFG_LIMIT_SIZE,
	    1024, 1024LL * 1024 * 1024, 16 * 1024 * 1024 },
	[LIMIT_MAX_HEADER] = { "max-header", CFG_LIMIT_SIZE,
	    1024, 1024 * 1024, 64 * 1024 },
	[LIMIT_MAX_CONNECTIONS] = { "max-connections", CFG_LIMIT_COUNT,
	    1, 65536, 1024 },
	[LIMIT_MAX_SESSIONS] = { "max-sessions", CFG_LIMIT_COUNT,
	    1, 1000000, 4096 },
	[LIMIT_HEADER_TIMEOUT] = { "header-timeout", CFG_LIMIT_SECONDS,
	    1, 3600, 5 },
	[LIMIT_BODY_TIMEOUT] = { "body-timeout", CFG_LIMIT_SECONDS,
	    1, 3600, 60 },
	[LIMIT_IDLE_TIMEOUT] = { "idle-timeout", CFG_LIMIT_SECONDS,
	    1, 3600, 60 },
	[LIMIT_SESSION_IDLE] = { "session-idle-timeout", CFG_LIMIT_SECONDS,
	    1, 7 * 86400, 1800 },
	[LIMIT_DOCKER_CONNECT_TIMEOUT] = { "docker-connect-timeout",
	    CFG_LIMIT_SECONDS, 1, 600, 5 },
	[LIMIT_DOCKER_TIMEOUT] = { "docker-timeout", CFG_LIMIT_SECONDS,
	    1, 3600, 60 },
	[LIMIT_DOCKER_MAX_REPLY] = { "docker-max-reply", CFG_LIMIT_SIZE,
	    4096, 1024LL * 1024 * 1024, 64 * 1024 * 1024 },
	[LIMIT_DOCKER_MAX_REQUESTS] = { "docker-max-requests",
	    CFG_LIMIT_COUNT, 1, 4096, 64 },
	[LIMIT_LIST_DIRECTORIES] = { "list-directories", CFG_LIMIT_COUNT,
	    1, 100000, 500 },
	[LIMIT_SANDBOXES_PER_CALL] = { "sandboxes-per-call", CFG_LIMIT_COUNT,
	    1, 1024, 32 },
	[LIMIT_BASE_MAX_ENTRIES] = { "base-max-entries", CFG_LIMIT_COUNT,
	    1, 100000000, 1000000 },
	[LIMIT_BASE_MAX_BYTES] = { "base-max-bytes", CFG_LIMIT_SIZE,
	    1024, 1024LL * 1024 * 1024 * 1024 * 1024, 64LL * 1024 * 1024 * 1024 },
	[LIMIT_COMMANDS_RUNNING] = { "commands-running", CFG_LIMIT_COUNT,
	    1, 4096, 64 },
	[LIMIT_COMMANDS_RETAINED] = { "commands-retained", CFG_LIMIT_COUNT,
	    1, 100000, 512 },
	[LIMIT_TRANSCRIPT_MAX] = { "transcript-max", CFG_LIMIT_SIZE,
	    64 * 1024, 64LL * 1024 * 1024 * 1024, 64 * 1024 * 1024 },
	[LIMIT_OUTPUT_WINDOW] = { "output-window", CFG_LIMIT_SIZE,
	    1024, 16 * 1024 * 1024, 64 * 1024 },
	[LIMIT_SESSION_POOL] = { "session-pool", CFG_LIMIT_COUNT,
	    0, 1024, 32 },
	[LIMIT_HELPER_PROCESSES] = { "helper-processes", CFG_LIMIT_COUNT,
	    1, 1024, 16 },
	[LIMIT_HELPER_PER_SANDBOX] = { "helper-per-sandbox", CFG_LIMIT_COUNT,
	    1, 1024, 4 },
	[LIMIT_HELPER_QUEUE] = { "helper-queue", CFG_LIMIT_COUNT,
	    0, 1000000, 256 },
	[LIMIT_HELPER_CPUS] = { "helper-cpus", CFG_LIMIT_COUNT,
	    1, 1024, 1 },
	[LIMIT_HELPER_MEMORY] = { "helper-memory", CFG_LIMIT_SIZE,
	    16 * 1024 * 1024, 1024LL * 1024 * 1024 * 1024, 512 * 1024 * 1024 },
	[LIMIT_HELPER_PIDS] = { "helper-pids", CFG_LIMIT_COUNT,
	    4, 65536, 64 },
	[LIMIT_SESSIONS_PER_SANDBOX] = { "sessions-per-sandbox",
	    CFG_LIMIT_COUNT, 1, 65536, 64 },
	[LIMIT_SESSIONS_TOTAL] = { "sessions-total", CFG_LIMIT_COUNT,
	    1, 1000000, 4096 },
	[LIMIT_MAX_SESSIONS_PER_KEY] = { "max-sessions-per-key",
	    CFG_LIMIT_COUNT, 1, 1000000, 256 },
	[LIMIT_MAX_CONNECTIONS_PER_ADDRESS] = { "max-connections-per-address",
	    CFG_LIMIT_COUNT, 1, 65536, 128 },
	[LIMIT_SESSIONS_PER_TENANT] = { "sessions-per-tenant",
	    CFG_LIMIT_COUNT, 1, 1000000, 512 },
	[LIMIT_COMMANDS_PER_TENANT] = { "commands-per-tenant",
	    CFG_LIMIT_COUNT, 1, 1000000, 512 },
	[LIMIT_HELPER_PER_TENANT] = { "helper-per-tenant", CFG_LIMIT_COUNT,
	    1, 1024, 8 },
	[LIMIT_SANDBOXES_PER_TENANT] = { "sandboxes-per-tenant",
	    CFG_LIMIT_COUNT, 1, 1000000, 64 },
	[LIMIT_SSE_KEEPALIVE] = { "sse-keepalive", CFG_LIMIT_SECONDS,
	    1, 300, 15 },
	[LIMIT_SSE_RESUME_MAX] = { "sse-resume-max", CFG_LIMIT_SIZE,
	    0, 1024LL * 1024 * 1024, 1024 * 1024 },
	[LIMIT_AUTOSQUASH_DEPTH] = { "autosquash-depth", CFG_LIMIT_COUNT,
	    0, 400, 100 },
	[LIMIT_DISK_RESERVE] = { "disk-reserve", CFG_LIMIT_SIZE,
	    0, 1024LL * 1024 * 1024 * 1024 * 1024, 1024LL * 1024 * 1024 },
	[LIMIT_BOX_FREEZE_AFTER] = { "box-freeze-after", CFG_LIMIT_SECONDS,
	    0, 7 * 24 * 3600, 300 },
};

static const struct {
	const char	*name;
	int		 set;
} cfg_set_table[] = {
	{ "management", TOOLSET_MANAGEMENT },
	{ "runtime", TOOLSET_RUNTIME },
	{ "observability", TOOLSET_OBSERVABILITY },
	{ "boxes", TOOLSET_BOXES },
	{ "metrics", TOOLSET_METRICS },		/* keys only: GET /metrics */
};

struct cfg_parse {
	struct cfg	*cfg;
	const char	*file;
	int		 line;
	int		 errors;
	int		 listen_seen;
	int		 metrics_listen_seen;
	int		 state_dir_seen;
	int		 docker_host_seen;
	int		 profile_seen;
};

static void	cfg_error(struct cfg_parse *, const char *, ...)
		    __attribute__((__format__ (printf, 2, 3)));
static void	cfg_line(struct cfg_parse *, char *);

static int	cfg_kw_allow_origin(struct cfg_parse *, int, char **);
static int	cfg_kw_api_key(struct cfg_parse *, int, char **);
static int	cfg_kw_docker_host(struct cfg_parse *, int, char **);
static int	cfg_kw_limit(struct cfg_parse *, int, char **);
static int	cfg_kw_listen(struct cfg_parse *, int, char **);
static int	cfg_kw_metrics_listen(struct cfg_parse *, int, char **);
static int	cfg_kw_profile(struct cfg_parse *, int, char **);
static int	cfg_kw_public_host(struct cfg_parse *, int, char **);
static int	cfg_kw_state_dir(struct cfg_parse *, int, char **);
static int	cfg_kw_trusted_proxy(struct cfg_parse *, int, char **);
static int	cfg_kw_workspace_root(struct cfg_parse *, int, char **);
static int	cfg_kw_export_root(struct cfg_parse *, int, char **);
static int	cfg_kw_result_text(struct cfg_parse *, int, char **);
static int	cfg_kw_sandbox_host_port(struct cfg_parse *, int, char **);
static int	cfg_kw_tenant(struct cfg_parse *, int, char **);
static int	cfg_kw_box_subnets(struct cfg_parse *, int, char **);
static int	cfg_kw_price(struct cfg_parse *, int, char **);

/* Looked up in order (a short table): new directives go at the end. */
static const struct cfg_keyword {
	const char	*name;
	int		 min_args;
	int		 max_args;
	int		(*fn)(struct cfg_parse *, int, char **);
} cfg_keywords[] = {
	{ "allow-origin", 1, 1, cfg_kw_allow_origin },
	{ "api-key", 4, 6, cfg_kw_api_key },
	{ "docker-host", 1, 1, cfg_kw_docker_host },
	{ "limit", 2, 2, cfg_kw_limit },
	{ "listen", 1, 1, cfg_kw_listen },
	{ "profile", 2, 10, cfg_kw_profile },
	{ "public-host", 1, 1, cfg_kw_public_host },
	{ "state-dir", 1, 1, cfg_kw_state_dir },
	{ "trusted-proxy", 1, 1, cfg_kw_trusted_proxy },
	{ "workspace-root", 1, 3, cfg_kw_workspace_root },
	{ "result-text", 1, 1, cfg_kw_result_text },
	{ "export-root", 1, 3, cfg_kw_export_root },
	{ "sandbox-host-port", 1, 1, cfg_kw_sandbox_host_port },
	{ "metrics-listen", 1, 1, cfg_kw_metrics_listen },
	{ "tenant", 3, 5, cfg_kw_tenant },
	{ "box-subnets", 2, 2, cfg_kw_box_subnets },
	{ "price", 2, 4, cfg_kw_price },
};

/*
 * The plans (sandbox-mcp.conf(5), "tenant"): boxes at once, and the
 * cgroup and disk caps of each box.
 */
static const struct cfg_plan_sizes cfg_plans[] = {
	[PLAN_FREE] = { "free", 3, 1000000000ULL, 2LL << 30, 512, 4LL << 30 },
	[PLAN_PRO] = { "pro", 5, 2000000000ULL, 4LL << 30, 1024, 10LL << 30 },
	[PLAN_MAX] = { "max", 20, 2000000000ULL, 8LL << 30, 2048,
	    20LL << 30 },
};

/* A configuration holding the defaults. */
struct cfg *
cfg_new(void)
{
	struct cfg	*c;
	int		 i;

	c = xcalloc(1, sizeof *c);
	c->state_dir = xstrdup(SANDBOX_MCP_STATEDIR);
	c->docker_host = xstrdup("unix:///var/run/docker.sock");
	c->docker_socket = xstrdup("/var/run/docker.sock");
	TAILQ_INIT(&c->roots);
	TAILQ_INIT(&c->export_roots);
	TAILQ_INIT(&c->apikeys);
	TAILQ_INIT(&c->tenants);
	c->box_net = 0x0ad20000;	/* 10.210.0.0/16, cut into /28s */
	c->box_net_len = 16;
	c->box_prefix = 28;
	TAILQ_INIT(&c->origins);
	TAILQ_INIT(&c->proxies);
	TAILQ_INIT(&c->host_ports);
	TAILQ_INIT(&c->public_hosts);
	c->profile.nano_cpus = 1000000000ULL;
	c->profile.memory_high = 384LL * 1024 * 1024;
	c->profile.memory_max = 512LL * 1024 * 1024;
	c->profile.pids = 256;
	c->profile.disk = CFG_DISK_DEFAULT;
	for (i = 0; i < LIMIT__COUNT; i++)
		c->limits[i] = cfg_limit_table[i].dflt;
	return (c);
}

static void
cfg_words_free(struct cfg_words *words)
{
	struct cfg_word	*w;

	while ((w = TAILQ_FIRST(words)) != NULL) {
		TAILQ_REMOVE(words, w, entry);
		if (w->tenants != NULL) {
			cfg_words_free(w->tenants);
			free(w->tenants);
		}
		free(w->word);
		free(w);
	}
}

void
cfg_free(struct cfg *c)
{
	struct cfg_apikey	*k;
	struct cfg_tenant	*t;

	if (c == NULL)
		return;
	while ((t = TAILQ_FIRST(&c->tenants)) != NULL) {
		TAILQ_REMOVE(&c->tenants, t, entry);
		free(t->name);
		free(t);
	}
	cfg_words_free(&c->roots);
	cfg_words_free(&c->export_roots);
	cfg_words_free(&c->origins);
	cfg_words_free(&c->proxies);
	cfg_words_free(&c->host_ports);
	cfg_words_free(&c->public_hosts);
	while ((k = TAILQ_FIRST(&c->apikeys)) != NULL) {
		TAILQ_REMOVE(&c->apikeys, k, entry);
		cfg_keys_generation_n++;
		free(k->name);
		free(k->tenant);
		explicit_bzero(k->hash, sizeof k->hash);
		free(k);
	}
	free(c->path);
	free(c->state_dir);
	free(c->docker_host);
	free(c->docker_socket);
	free(c->listen);
	free(c->metrics_listen);
	free(c);
}

static void
cfg_error(struct cfg_parse *p, const char *fmt, ...)
{
	char	*msg;
	va_list	 ap;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s:%d: %s\n", p->file, p->line, msg);
	free(msg);
	p->errors++;
}

static void
cfg_words_add(struct cfg_words *words, const char *s)
{
	struct cfg_word	*w;

	w = xcalloc(1, sizeof *w);
	w->word = xstrdup(s);
	TAILQ_INSERT_TAIL(words, w, entry);
}

static int
cfg_words_has(struct cfg_words *words, const char *s)
{
	struct cfg_word	*w;

	TAILQ_FOREACH(w, words, entry) {
		if (strcmp(w->word, s) == 0)
			return (1);
	}
	return (0);
}

struct cfg_unit {
	char		 suffix;
	long long	 mult;
};

static const struct cfg_unit cfg_size_units[] = {
	{ 'k', 1024 }, { 'K', 1024 },
	{ 'm', 1024 * 1024 }, { 'M', 1024 * 1024 },
	{ 'g', 1024LL * 1024 * 1024 }, { 'G', 1024LL * 1024 * 1024 },
	{ '\0', 0 }
};

static const struct cfg_unit cfg_time_units[] = {
	{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { '\0', 0 }
};

/*
 * Parse digits with an optional one-letter unit from the table, into at
 * most max. Returns -1 for anything else, overflow included.
 */
static int
cfg_parse_units(const char *s, const struct cfg_unit *units, long long max,
    long long *out)
{
	const struct cfg_unit	*u;
	char			 buf[32];
	long long		 mult = 1, v;
	size_t			 len = strlen(s);
	const char		*errstr;

	if (len == 0 || len >= sizeof buf)
		return (-1);
	memcpy(buf, s, len + 1);
	for (u = units; u->suffix != '\0'; u++) {
		if (buf[len - 1] == u->suffix) {
			mult = u->mult;
			buf[len - 1] = '\0';
			break;
		}
	}
	if (buf[0] == '\0' || buf[strspn(buf, "0123456789")] != '\0')
		return (-1);
	v = strtonum(buf, 0, max / mult, &errstr);
	if (errstr != NULL)
		return (-1);
	*out = v * mult;
	return (0);
}

/* A size such as 512, 64K, 384M or 2G (binary multiples). */
int
cfg_parse_size(const char *s, long long *out)
{
	return (cfg_parse_units(s, cfg_size_units, INT64_MAX, out));
}

/* Seconds, with an optional s, m or h suffix. */
static int
cfg_parse_seconds(const char *s, long long *out)
{
	return (cfg_parse_units(s, cfg_time_units, 1000000000LL, out));
}

/* A comma-separated list of set names into a bitmask. */
int
cfg_parse_sets(const char *list, int *sets, char **cause)
{
	char	*copy, *p, *word;
	size_t	 i;

	copy = p = xstrdup(list);
	while ((word = strsep(&p, ",")) != NULL) {
		if (*word == '\0')
			continue;
		for (i = 0; i < sizeof cfg_set_table / sizeof cfg_set_table[0];
		    i++) {
			if (strcmp(word, cfg_set_table[i].name) == 0)
				break;
		}
		if (i == sizeof cfg_set_table / sizeof cfg_set_table[0]) {
			if (strcmp(word, "all") == 0)
				xasprintf(cause, "the set \"all\" is refused:"
				    " grant each set by name (management,"
				    " runtime, observability, boxes)");
			else
				xasprintf(cause, "unknown tool set \"%s\""
				    " (known: management, runtime,"
				    " observability, boxes; metrics for a"
				    " key)",
				    word);
			free(copy);
			return (-1);
		}
		*sets |= cfg_set_table[i].set;
	}
	free(copy);
	return (0);
}

const char *
cfg_set_name(int set)
{
	size_t	i;

	for (i = 0; i < sizeof cfg_set_table / sizeof cfg_set_table[0]; i++) {
		if (cfg_set_table[i].set == set)
			return (cfg_set_table[i].name);
	}
	return ("unknown");
}

/* The names of the sets in a mask, comma-separated, in table order. */
char *
cfg_sets_string(int sets)
{
	char	buf[128] = "";
	size_t	i;

	for (i = 0; i < sizeof cfg_set_table / sizeof cfg_set_table[0]; i++) {
		if ((sets & cfg_set_table[i].set) == 0)
			continue;
		if (buf[0] != '\0')
			strlcat(buf, ",", sizeof buf);
		strlcat(buf, cfg_set_table[i].name, sizeof buf);
	}
	return (xstrdup(buf));
}

const char *
cfg_limit_name(enum limit l)
{
	return (cfg_limit_table[l].name);
}

/* The current value of a limit. */
long long
cfg_limit(enum limit l)
{
	return (cfg->limits[l]);
}

static int
cfg_absolute_path(struct cfg_parse *p, const char *what, const char *path)
{
	if (path[0] != '/') {
		cfg_error(p, "%s must be an absolute path: %s", what, path);
		return (-1);
	}
	if (strlen(path) >= 4096) {
		cfg_error(p, "%s is too long", what);
		return (-1);
	}
	return (0);
}

static int
cfg_kw_state_dir(struct cfg_parse *p, int argc, char **argv)
{
	if (cfg_absolute_path(p, "state-dir", argv[0]) != 0)
		return (-1);
	if (p->state_dir_seen++) {
		cfg_error(p, "state-dir is given twice");
		return (-1);
	}
	free(p->cfg->state_dir);
	p->cfg->state_dir = xstrdup(argv[0]);
	return (0);
}

/* Check a docker-host URL and return the socket path it names. */
static char *
cfg_docker_socket(const char *url, char **cause)
{
	if (strncmp(url, "unix://", 7) != 0) {
		xasprintf(cause, "docker-host must be a unix:// URL naming the"
		    " Docker Engine socket: %s", url);
		return (NULL);
	}
	if (url[7] != '/') {
		xasprintf(cause, "docker-host must name an absolute socket"
		    " path: %s", url);
		return (NULL);
	}
	if (strlen(url + 7) >= 108) {
		xasprintf(cause, "docker-host socket path is too long: %s",
		    url);
		return (NULL);
	}
	return (xstrdup(url + 7));
}

static int
cfg_kw_docker_host(struct cfg_parse *p, int argc, char **argv)
{
	char	*sock, *cause;

	if ((sock = cfg_docker_socket(argv[0], &cause)) == NULL) {
		cfg_error(p, "%s", cause);
		free(cause);
		return (-1);
	}
	if (p->docker_host_seen++) {
		free(sock);
		cfg_error(p, "docker-host is given twice");
		return (-1);
	}
	free(p->cfg->docker_host);
	free(p->cfg->docker_socket);
	p->cfg->docker_host = xstrdup(argv[0]);
	p->cfg->docker_socket = sock;
	return (0);
}

/*
 * A tenant name of the configuration: a key name's alphabet, and not the
 * local operator's name. what says where it stands, for the error.
 */
static int
cfg_tenant_name(struct cfg_parse *p, const char *what, const char *name)
{
	if (!util_tenant_name_valid(name)) {
		cfg_error(p, "%s: a tenant name must be 1 to 64 letters,"
		    " digits, dots, dashes or underscores: \"%s\"", what, name);
		return (-1);
	}
	if (strcmp(name, TENANT_LOCAL) == 0) {
		cfg_error(p, "%s: the name \"%s\" is reserved for the local"
		    " operator (stdio), who sees every tenant", what,
		    TENANT_LOCAL);
		return (-1);
	}
	return (0);
}

/* A price: a number from 0 to a million, or -1. */
static double
cfg_price_value(const char *s)
{
	char	*end;
	double	 v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 1e6)
		return (-1);
	return (v);
}

/* price box-minute|call CREDITS [usd USD]: what boxes' usage costs. */
static int
cfg_kw_price(struct cfg_parse *p, int argc, char **argv)
{
	double	credits, usd = 0;
	int	kind;

	if (strcmp(argv[0], "box-minute") == 0)
		kind = 0;
	else if (strcmp(argv[0], "call") == 0)
		kind = 1;
	else {
		cfg_error(p, "price: unknown kind \"%s\" (box-minute or"
		    " call)", argv[0]);
		return (-1);
	}
	if ((credits = cfg_price_value(argv[1])) < 0) {
		cfg_error(p, "price %s: credits must be a number from 0 to"
		    " 1000000: %s", argv[0], argv[1]);
		return (-1);
	}
	if (argc == 3 || (argc == 4 && strcmp(argv[2], "usd") != 0)) {
		cfg_error(p, "price %s: expected \"usd\" and an amount after"
		    " the credits", argv[0]);
		return (-1);
	}
	if (argc == 4 && (usd = cfg_price_value(argv[3])) < 0) {
		cfg_error(p, "price %s: usd must be a number from 0 to"
		    " 1000000: %s", argv[0], argv[3]);
		return (-1);
	}
	p->cfg->price_credits[kind] = credits;
	p->cfg->price_usd[kind] = usd;
	return (0);
}

/* box-subnets CIDR /PREFIX: where each box's network is cut from. */
static int
cfg_kw_box_subnets(struct cfg_parse *p, int argc, char **argv)
{
	struct in_addr	 in;
	const char	*errstr;
	char		*addr, *slash;
	long long	 len, prefix;

	addr = xstrdup(argv[0]);
	if ((slash = strchr(addr, '/')) == NULL || inet_pton(AF_INET,
	    (*slash = '\0', addr), &in) != 1) {
		cfg_error(p, "box-subnets: %s is not an IPv4 network"
		    " (ADDRESS/LENGTH)", argv[0]);
		free(addr);
		return (-1);
	}
	len = strtonum(slash + 1, 8, 28, &errstr);
	free(addr);
	if (errstr != NULL) {
		cfg_error(p, "box-subnets: the length of %s must be from 8 to"
		    " 28", argv[0]);
		return (-1);
	}
	if (argv[1][0] != '/' || (prefix = strtonum(argv[1] + 1, len + 1, 30,
	    &errstr), errstr != NULL)) {
		cfg_error(p, "box-subnets: each box's network must be /N, longer"
		    " than /%lld and at most /30: %s", len, argv[1]);
		return (-1);
	}
	if ((ntohl(in.s_addr) & (0xffffffffU >> len)) != 0) {
		cfg_error(p, "box-subnets: %s has host bits set", argv[0]);
		return (-1);
	}
	p->cfg->box_net = ntohl(in.s_addr);
	p->cfg->box_net_len = (int)len;
	p->cfg->box_prefix = (int)prefix;
	return (0);
}

/* tenant NAME plan free|pro|max [credits N] */
static int
cfg_kw_tenant(struct cfg_parse *p, int argc, char **argv)
{
	struct cfg_tenant	*t;
	const char		*errstr;
	char			*what;
	long long		 credits = -1;
	size_t			 i;

	xasprintf(&what, "tenant %s", argv[0]);
	if (cfg_tenant_name(p, what, argv[0]) != 0) {
		free(what);
		return (-1);
	}
	free(what);
	if (strcmp(argv[1], "plan") != 0 || argc == 4) {
		cfg_error(p, "tenant %s: expected \"plan\" and a plan (free,"
		    " pro or max), then optionally \"credits\" and a number",
		    argv[0]);
		return (-1);
	}
	for (i = 0; i < sizeof cfg_plans / sizeof cfg_plans[0]; i++) {
		if (strcmp(argv[2], cfg_plans[i].name) == 0)
			break;
	}
	if (i == sizeof cfg_plans / sizeof cfg_plans[0]) {
		cfg_error(p, "tenant %s: unknown plan \"%s\" (free, pro or"
		    " max)", argv[0], argv[2]);
		return (-1);
	}
	if (argc == 5) {
		if (strcmp(argv[3], "credits") != 0) {
			cfg_error(p, "tenant %s: expected \"credits\" after"
			    " the plan, found \"%s\"", argv[0], argv[3]);
			return (-1);
		}
		credits = strtonum(argv[4], 0, JSON_MAX_INTEGER, &errstr);
		if (errstr != NULL) {
			cfg_error(p, "tenant %s: credits must be a whole number"
			    " from 0 to %lld: %s", argv[0], JSON_MAX_INTEGER,
			    argv[4]);
			return (-1);
		}
	}
	TAILQ_FOREACH(t, &p->cfg->tenants, entry) {
		if (strcmp(t->name, argv[0]) == 0) {
			cfg_error(p, "tenant %s is given twice", argv[0]);
			return (-1);
		}
	}
	t = xcalloc(1, sizeof *t);
	t->name = xstrdup(argv[0]);
	t->plan = (enum cfg_plan)i;
	t->credits = credits;
	TAILQ_INSERT_TAIL(&p->cfg->tenants, t, entry);
	return (0);
}

const struct cfg_plan_sizes *
cfg_plan_sizes(enum cfg_plan plan)
{
	return (&cfg_plans[plan]);
}

/* A tenant named by a tenant line, or NULL. */
const struct cfg_tenant *
cfg_tenant_find(const char *name)
{
	struct cfg_tenant	*t;

	TAILQ_FOREACH(t, &cfg->tenants, entry) {
		if (strcmp(t->name, name) == 0)
			return (t);
	}
	return (NULL);
}

/*
 * The plan of a tenant: its tenant line's, max for the local operator
 * (stdio), or NULL for a tenant with no plan (it runs no box).
 */
const struct cfg_plan_sizes *
cfg_tenant_plan(const char *name)
{
	const struct cfg_tenant	*t;

	if (strcmp(name, TENANT_LOCAL) == 0)
		return (&cfg_plans[PLAN_MAX]);
	if ((t = cfg_tenant_find(name)) == NULL)
		return (NULL);
	return (&cfg_plans[t->plan]);
}

/* tenants a,b,...: the tenants a root of directive kw serves. */
static struct cfg_words *
cfg_root_tenants(struct cfg_parse *p, const char *kw, const char *path,
    int argc, char **argv)
{
	struct cfg_words	*list;
	char			*copy, *s, *name, *what;

	if (argc != 3 || strcmp(argv[1], "tenants") != 0) {
		cfg_error(p, "%s %s: expected \"tenants\" and a"
		    " comma-separated list of tenants after the path", kw,
		    path);
		return (NULL);
	}
	list = xcalloc(1, sizeof *list);
	TAILQ_INIT(list);
	xasprintf(&what, "%s %s", kw, path);
	copy = s = xstrdup(argv[2]);
	while ((name = strsep(&s, ",")) != NULL) {
		if (cfg_tenant_name(p, what, name) != 0) {
			cfg_words_free(list);
			free(list);
			list = NULL;
			break;
		}
		if (!cfg_words_has(list, name))
			cfg_words_add(list, name);
	}
	free(copy);
	free(what);
	return (list);
}

/* KW PATH [tenants LIST], into roots: a workspace or an export root. */
static int
cfg_root(struct cfg_parse *p, const char *kw, struct cfg_words *roots,
    int argc, char **argv)
{
	struct cfg_words	*tenants = NULL;
	char			*path;
	size_t			 len;

	if (cfg_absolute_path(p, kw, argv[0]) != 0)
		return (-1);
	path = xstrdup(argv[0]);
	len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	if (cfg_words_has(roots, path)) {
		cfg_error(p, "%s %s is given twice", kw, path);
		free(path);
		return (-1);
	}
	if (argc > 1 && (tenants = cfg_root_tenants(p, kw, path, argc,
	    argv)) == NULL) {
		free(path);
		return (-1);
	}
	cfg_words_add(roots, path);
	TAILQ_LAST(roots, cfg_words)->tenants = tenants;
	free(path);
	return (0);
}

/* workspace-root PATH [tenants LIST] */
static int
cfg_kw_workspace_root(struct cfg_parse *p, int argc, char **argv)
{
	return (cfg_root(p, "workspace-root", &p->cfg->roots, argc, argv));
}

/*
 * export-root PATH [tenants LIST]: where export_changes may write (the
 * path as written: a symlink on it is refused when an export walks it).
 */
static int
cfg_kw_export_root(struct cfg_parse *p, int argc, char **argv)
{
	const char	*s = argv[0], *e;
	int		 named = 0;

	/* Judged by its components: "//" and "/." are / too. */
	while (*s != '\0') {
		for (e = s; *e != '\0' && *e != '/'; e++)
			;
		if (e - s == 2 && s[0] == '.' && s[1] == '.') {
			cfg_error(p, "export-root %s: a \"..\" component is"
			    " not allowed", argv[0]);
			return (-1);
		}
		if (e > s && !(e - s == 1 && s[0] == '.'))
			named = 1;
		s = *e != '\0' ? e + 1 : e;
	}
	if (argv[0][0] == '/' && !named) {
		cfg_error(p, "export-root cannot be /: name the directories"
		    " exports may write to");
		return (-1);
	}
	return (cfg_root(p, "export-root", &p->cfg->export_roots, argc,
	    argv));
}

/* An address directive (listen, metrics-listen): once, ADDRESS:PORT. */
static int
cfg_address(struct cfg_parse *p, const char *name, int *seen, char **dst,
    const char *value)
{
	if ((*seen)++) {
		cfg_error(p, "%s is given twice", name);
		return (-1);
	}
	if (strchr(value, ':') == NULL) {
		cfg_error(p, "%s needs ADDRESS:PORT: %s", name, value);
		return (-1);
	}
	free(*dst);
	*dst = xstrdup(value);
	return (0);
}

static int
cfg_kw_listen(struct cfg_parse *p, int argc, char **argv)
{
	return (cfg_address(p, "listen", &p->listen_seen, &p->cfg->listen,
	    argv[0]));
}

static int
cfg_kw_metrics_listen(struct cfg_parse *p, int argc, char **argv)
{
	return (cfg_address(p, "metrics-listen", &p->metrics_listen_seen,
	    &p->cfg->metrics_listen, argv[0]));
}

static int
cfg_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (c - 'A' + 10);
	return (-1);
}

/* api-key NAME sha256:HEX sets LIST [tenant NAME] */
static int
cfg_kw_api_key(struct cfg_parse *p, int argc, char **argv)
{
	struct cfg_apikey	*k;
	unsigned char		 hash[32];
	const char		*hex, *tenant;
	char			*cause, *what;
	int			 sets = 0, i, hi, lo;
	size_t			 n;

	n = strlen(argv[0]);
	if (n == 0 || n > 64 || argv[0][strspn(argv[0],
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-")] != '\0') {
		cfg_error(p, "api-key name must be 1 to 64 letters, digits,"
		    " dots, dashes or underscores: %s", argv[0]);
		return (-1);
	}
	if (strncmp(argv[1], "sha256:", 7) != 0 ||
	    strlen(argv[1] + 7) != 64) {
		cfg_error(p, "api-key %s: the hash must be sha256: followed"
		    " by 64 hex digits (store the hash, never the key)",
		    argv[0]);
		return (-1);
	}
	hex = argv[1] + 7;
	for (i = 0; i < 32; i++) {
		hi = cfg_hexval((unsigned char)hex[2 * i]);
		lo = cfg_hexval((unsigned char)hex[2 * i + 1]);
		if (hi == -1 || lo == -1) {
			cfg_error(p, "api-key %s: the hash is not hex",
			    argv[0]);
			return (-1);
		}
		hash[i] = hi << 4 | lo;
	}
	if (strcmp(argv[2], "sets") != 0) {
		cfg_error(p, "api-key %s: expected \"sets\" before the set"
		    " list, found \"%s\"", argv[0], argv[2]);
		return (-1);
	}
	if (cfg_parse_sets(argv[3], &sets, &cause) != 0) {
		cfg_error(p, "api-key %s: %s", argv[0], cause);
		free(cause);
		return (-1);
	}
	if (sets == 0) {
		cfg_error(p, "api-key %s grants no set", argv[0]);
		return (-1);
	}
	if (argc > 4 && (argc != 6 || strcmp(argv[4], "tenant") != 0)) {
		cfg_error(p, "api-key %s: expected \"tenant\" and a tenant name"
		    " after the set list", argv[0]);
		return (-1);
	}
	tenant = argc == 6 ? argv[5] : argv[0];
	xasprintf(&what, "api-key %s", argv[0]);
	if (cfg_tenant_name(p, what, argv[0]) != 0 ||
	    (tenant != argv[0] && cfg_tenant_name(p, what, tenant) != 0)) {
		free(what);
		return (-1);
	}
	free(what);
	TAILQ_FOREACH(k, &p->cfg->apikeys, entry) {
		if (strcmp(k->name, argv[0]) == 0) {
			cfg_error(p, "api-key %s is given twice", argv[0]);
			return (-1);
		}
		if (memcmp(k->hash, hash, sizeof hash) == 0) {
			cfg_error(p, "api-key %s has the same hash as %s",
			    argv[0], k->name);
			return (-1);
		}
	}
	k = xcalloc(1, sizeof *k);
	k->name = xstrdup(argv[0]);
	memcpy(k->hash, hash, sizeof hash);
	k->sets = sets;
	k->tenant = xstrdup(tenant);
	TAILQ_INSERT_TAIL(&p->cfg->apikeys, k, entry);
	cfg_keys_generation_n++;
	return (0);
}

/* allow-origin scheme://host[:port] */
static int
cfg_kw_allow_origin(struct cfg_parse *p, int argc, char **argv)
{
	const char	*o = argv[0], *host;

	if (strncmp(o, "http://", 7) == 0)
		host = o + 7;
	else if (strncmp(o, "https://", 8) == 0)
		host = o + 8;
	else {
		cfg_error(p, "allow-origin must start with http:// or"
		    " https://: %s", o);
		return (-1);
	}
	if (*host == '\0' || strchr(host, '/') != NULL) {
		cfg_error(p, "allow-origin must be scheme://host[:port] with"
		    " no path: %s", o);
		return (-1);
	}
	if (!cfg_words_has(&p->cfg->origins, o))
		cfg_words_add(&p->cfg->origins, o);
	return (0);
}

static int
cfg_kw_trusted_proxy(struct cfg_parse *p, int argc, char **argv)
{
	unsigned char	buf[16];

	if (inet_pton(AF_INET, argv[0], buf) != 1 &&
	    inet_pton(AF_INET6, argv[0], buf) != 1) {
		cfg_error(p, "trusted-proxy must be an IPv4 or IPv6 address:"
		    " %s", argv[0]);
		return (-1);
	}
	if (!cfg_words_has(&p->cfg->proxies, argv[0]))
		cfg_words_add(&p->cfg->proxies, argv[0]);
	return (0);
}

/*
 * sandbox-host-port PORT: a TCP port of the host that sandboxes may
 * connect to through their network's gateway (none by default).
 */
static int
cfg_kw_sandbox_host_port(struct cfg_parse *p, int argc, char **argv)
{
	const char	*errstr = NULL;

	if (argv[0][strspn(argv[0], "0123456789")] != '\0' ||
	    strlen(argv[0]) > 5)
		errstr = "not a number";
	else
		strtonum(argv[0], 1, 65535, &errstr);
	if (errstr != NULL) {
		cfg_error(p, "sandbox-host-port must be a port from 1 to"
		    " 65535: %s", argv[0]);
		return (-1);
	}
	if (!cfg_words_has(&p->cfg->host_ports, argv[0]))
		cfg_words_add(&p->cfg->host_ports, argv[0]);
	return (0);
}

/*
 * result-text yes|no: whether every tool result also carries its JSON as
 * one text content item (a 2025-03-26 session always gets it).
 */
static int
cfg_kw_result_text(struct cfg_parse *p, int argc, char **argv)
{
	if (strcmp(argv[0], "yes") == 0)
		p->cfg->result_text = 1;
	else if (strcmp(argv[0], "no") == 0)
		p->cfg->result_text = 0;
	else {
		cfg_error(p, "result-text must be yes or no: %s", argv[0]);
		return (-1);
	}
	return (0);
}

/*
 * public-host NAME: a name clients reach this server by (through a
 * proxy), a host name or address with an optional port, or "*." and a
 * domain for every name under it.
 */
static int
cfg_kw_public_host(struct cfg_parse *p, int argc, char **argv)
{
	const char	*h = argv[0], *name = argv[0];
	size_t		 i;

	if (strncmp(name, "*.", 2) == 0)
		name += 2;
	i = strspn(name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]");
	if (*name == '\0' || name[i] != '\0' || strlen(h) > 255) {
		cfg_error(p, "public-host must be a host name or address with"
		    " an optional :port, or *.domain: %s", h);
		return (-1);
	}
	if (!cfg_words_has(&p->cfg->public_hosts, h))
		cfg_words_add(&p->cfg->public_hosts, h);
	return (0);
}

/*
 * profile cpus N memory-high SIZE memory-max SIZE pids N disk SIZE|none
 * (any subset)
 */
static int
cfg_kw_profile(struct cfg_parse *p, int argc, char **argv)
{
	struct cfg_profile	 prof = p->cfg->profile;
	long long		 v;
	double			 d;
	char			*end;
	const char		*errstr;
	int			 i;

	if (argc % 2 != 0) {
		cfg_error(p, "profile takes NAME VALUE pairs");
		return (-1);
	}
	for (i = 0; i < argc; i += 2) {
		if (strcmp(argv[i], "cpus") == 0) {
			errno = 0;
			d = strtod(argv[i + 1], &end);
			if (*end != '\0' || errno != 0 || !isfinite(d) ||
			    d < 0.01 || d > 1024) {
				cfg_error(p, "profile cpus must be a number"
				    " from 0.01 to 1024: %s", argv[i + 1]);
				return (-1);
			}
			prof.nano_cpus = (uint64_t)llround(d * 1e9);
		} else if (strcmp(argv[i], "memory-high") == 0 ||
		    strcmp(argv[i], "memory-max") == 0) {
			if (cfg_parse_size(argv[i + 1], &v) != 0 ||
			    v < 6 * 1024 * 1024) {
				cfg_error(p, "profile %s must be a size of at"
				    " least 6M (such as 512M): %s", argv[i],
				    argv[i + 1]);
				return (-1);
			}
			if (argv[i][7] == 'h')
				prof.memory_high = v;
			else
				prof.memory_max = v;
		} else if (strcmp(argv[i], "pids") == 0) {
			v = strtonum(argv[i + 1], 16, 4194304, &errstr);
			if (errstr != NULL) {
				cfg_error(p, "profile pids must be a number"
				    " from 16 to 4194304: %s", argv[i + 1]);
				return (-1);
			}
			prof.pids = v;
		} else if (strcmp(argv[i], "disk") == 0) {
			if (strcmp(argv[i + 1], "none") == 0)
				v = 0;
			else if (cfg_parse_size(argv[i + 1], &v) != 0 ||
			    v < CFG_DISK_MIN || v > CFG_DISK_MAX) {
				cfg_error(p, "profile disk must be a size from"
				    " 16M to 16384G (such as 10G), or none: %s",
				    argv[i + 1]);
				return (-1);
			}
			prof.disk = v;
		} else {
			cfg_error(p, "unknown profile setting \"%s\" (known:"
			    " cpus, memory-high, memory-max, pids, disk)",
			    argv[i]);
			return (-1);
		}
	}
	if (prof.memory_high > prof.memory_max) {
		cfg_error(p, "profile memory-high must not exceed memory-max");
		return (-1);
	}
	p->cfg->profile = prof;
	return (0);
}

static int
cfg_kw_limit(struct cfg_parse *p, int argc, char **argv)
{
	const struct cfg_limit_entry	*e;
	long long			 v;
	int				 i, r;

	for (i = 0; i < LIMIT__COUNT; i++) {
		if (strcmp(cfg_limit_table[i].name, argv[0]) == 0)
			break;
	}
	if (i == LIMIT__COUNT) {
		cfg_error(p, "unknown limit \"%s\"", argv[0]);
		return (-1);
	}
	e = &cfg_limit_table[i];
	switch (e->type) {
	case CFG_LIMIT_SIZE:
		r = cfg_parse_size(argv[1], &v);
		break;
	case CFG_LIMIT_SECONDS:
		r = cfg_parse_seconds(argv[1], &v);
		break;
	default:
		r = -1;
		if (isdigit((unsigned char)argv[1][0])) {
			const char	*errstr;

			v = strtonum(argv[1], 0, INT64_MAX, &errstr);
			r = errstr == NULL ? 0 : -1;
		}
		break;
	}
	if (r != 0 || v < e->min || v > e->max) {
		cfg_error(p, "limit %s must be %s from %lld to %lld: %s",
		    e->name, e->type == CFG_LIMIT_SIZE ? "a size" :
		    e->type == CFG_LIMIT_SECONDS ? "a number of seconds" :
		    "a number", e->min, e->max, argv[1]);
		return (-1);
	}
	p->cfg->limits[i] = v;
	return (0);
}

/* The directive named name, or NULL. */
static const struct cfg_keyword *
cfg_keyword_find(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof cfg_keywords / sizeof cfg_keywords[0]; i++) {
		if (strcmp(name, cfg_keywords[i].name) == 0)
			return (&cfg_keywords[i]);
	}
	return (NULL);
}

/* Split one line into words and run its directive. */
static void
cfg_line(struct cfg_parse *p, char *line)
{
	const struct cfg_keyword	*kw;
	char				*words[CFG_WORDS_MAX], *s = line, *o;
	int				 n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (*s == '\0' || *s == '#')
			break;
		if (n == CFG_WORDS_MAX) {
			cfg_error(p, "too many words on one line");
			return;
		}
		if (*s == '"') {
			words[n++] = o = ++s;
			while (*s != '"') {
				if (*s == '\0') {
					cfg_error(p, "unterminated quote");
					return;
				}
				if (*s == '\\' && (s[1] == '"' ||
				    s[1] == '\\'))
					s++;
				*o++ = *s++;
			}
			s++;
			if (*s != '\0' && *s != ' ' && *s != '\t' &&
			    *s != '\r' && *s != '#') {
				cfg_error(p, "a quoted word must be followed"
				    " by a blank");
				return;
			}
			if (*s == '#')
				*s = '\0';
			else if (*s != '\0')
				s++;
			*o = '\0';
			continue;
		}
		words[n++] = s;
		while (*s != '\0' && *s != ' ' && *s != '\t' && *s != '\r' &&
		    *s != '#') {
			if (*s == '"') {
				cfg_error(p, "a quote inside a word");
				return;
			}
			s++;
		}
		if (*s == '#') {
			*s = '\0';
			break;
		}
		if (*s != '\0')
			*s++ = '\0';
	}
	if (n == 0)
		return;
	kw = cfg_keyword_find(words[0]);
	if (kw == NULL) {
		cfg_error(p, "unknown directive \"%s\"", words[0]);
		return;
	}
	if (n - 1 < kw->min_args || n - 1 > kw->max_args) {
		if (kw->min_args == kw->max_args)
			cfg_error(p, "%s takes %d argument%s, not %d",
			    kw->name, kw->min_args, kw->min_args == 1 ? "" :
			    "s", n - 1);
		else
			cfg_error(p, "%s takes %d to %d arguments, not %d",
			    kw->name, kw->min_args, kw->max_args, n - 1);
		return;
	}
	kw->fn(p, n - 1, words + 1);
}

/*
 * Parse a configuration held in memory (the file's bytes). Returns the
 * number of errors, each already printed.
 */
int
cfg_parse_buffer(struct cfg *c, const char *file, const char *buf,
    size_t len)
{
	struct cfg_parse	 p;
	const char		*s = buf, *e, *end = buf + len;
	char			*line;

	memset(&p, 0, sizeof p);
	p.cfg = c;
	p.file = file;
	while (s < end) {
		p.line++;
		if ((e = memchr(s, '\n', end - s)) == NULL)
			e = end;
		if ((size_t)(e - s) > CFG_LINE_MAX)
			cfg_error(&p, "line is longer than %d bytes",
			    CFG_LINE_MAX);
		else if (memchr(s, '\0', e - s) != NULL)
			cfg_error(&p, "line holds a NUL byte");
		else {
			line = xstrndup(s, e - s);
			cfg_line(&p, line);
			free(line);
		}
		s = e + 1;
	}
	return (p.errors);
}

/*
 * Load a configuration file. A missing file is an error only when the
 * user named it (required). Returns the number of errors.
 */
int
cfg_load(struct cfg *c, const char *path, int required)
{
	FILE		*f;
	struct stat	 st;
	char		*buf;
	size_t		 n;
	int		 errors, fd;

	/*
	 * Opened without waiting (a FIFO would hold the loop on SIGHUP
	 * until someone wrote to it), and read so too: a FIFO or a socket
	 * is refused, and a device that has nothing to give (a terminal)
	 * is an error rather than a wait.
	 */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1) {
		if (errno == ENOENT && !required)
			return (0);
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return (1);
	}
	if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) ||
	    S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "%s: not a file\n", path);
		close(fd);
		return (1);
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		close(fd);
		return (1);
	}
	buf = xmalloc(CFG_FILE_MAX + 1);
	n = fread(buf, 1, CFG_FILE_MAX + 1, f);
	if (ferror(f)) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		fclose(f);
		free(buf);
		return (1);
	}
	if (n > CFG_FILE_MAX) {
		fprintf(stderr, "%s: larger than %d bytes\n", path,
		    CFG_FILE_MAX);
		fclose(f);
		free(buf);
		return (1);
	}
	fclose(f);
	free(c->path);
	c->path = xstrdup(path);
	errors = cfg_parse_buffer(c, path, buf, n);
	free(buf);
	return (errors);
}

/*
 * Resolve a listen address, "ADDRESS:PORT" or "[V6ADDRESS]:PORT" (an empty
 * address means every interface). Returns the first address, or NULL and
 * a cause.
 */
struct addrinfo *
cfg_listen_resolve(const char *listen, char **cause)
{
	struct addrinfo	 hints, *res;
	char		*copy, *host, *port;
	int		 error;

	copy = xstrdup(listen);
	if (copy[0] == '[') {
		host = copy + 1;
		if ((port = strchr(host, ']')) == NULL || port[1] != ':') {
			xasprintf(cause, "bad listen address %s (use"
			    " [ADDRESS]:PORT for IPv6)", listen);
			free(copy);
			return (NULL);
		}
		*port = '\0';
		port += 2;
	} else {
		host = copy;
		if ((port = strrchr(copy, ':')) == NULL) {
			xasprintf(cause, "bad listen address %s (use"
			    " ADDRESS:PORT)", listen);
			free(copy);
			return (NULL);
		}
		*port++ = '\0';
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	error = getaddrinfo(*host == '\0' ? NULL : host, port, &hints, &res);
	free(copy);
	if (error != 0) {
		xasprintf(cause, "cannot resolve listen address %s: %s",
		    listen, gai_strerror(error));
		return (NULL);
	}
	return (res);
}

/* Whether a listen address is a loopback one: 1, 0, or -1 and a cause. */
static int
cfg_loopback(const char *listen, char **cause)
{
	struct addrinfo	*res;
	int		 loopback;

	if ((res = cfg_listen_resolve(listen, cause)) == NULL)
		return (-1);
	loopback = util_sockaddr_loopback(res->ai_addr);
	freeaddrinfo(res);
	return (loopback);
}

/*
 * Checks that need the whole configuration and the command line: call
 * after both are applied. Fills *cause on failure.
 */
int
cfg_finish(struct cfg *c, char **cause)
{
	char		*sock;
	int		 loopback;

	if (c->state_dir[0] != '/') {
		xasprintf(cause, "the state directory must be an absolute"
		    " path: %s", c->state_dir);
		return (-1);
	}
	if ((sock = cfg_docker_socket(c->docker_host, cause)) == NULL)
		return (-1);
	free(c->docker_socket);
	c->docker_socket = sock;
	if (c->listen != NULL) {
		if ((loopback = cfg_loopback(c->listen, cause)) == -1)
			return (-1);
		if (!loopback && TAILQ_EMPTY(&c->apikeys)) {
			xasprintf(cause, "refusing to listen on %s, which is"
			    " not a loopback address, with no api-key"
			    " configured", c->listen);
			return (-1);
		}
	}
	/* No key guards it: what it shows is for this machine only. */
	if (c->metrics_listen != NULL) {
		if ((loopback = cfg_loopback(c->metrics_listen, cause)) == -1)
			return (-1);
		if (!loopback) {
			xasprintf(cause, "metrics-listen %s is not a loopback"
			    " address: it serves /metrics without a key; on"
			    " another address, scrape /metrics of the listen"
			    " address with a key granted metrics",
			    c->metrics_listen);
			return (-1);
		}
	}
	return (0);
}
