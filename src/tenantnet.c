/*
 * Copyright (c) 2026 The sandbox-mcp Authors
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
 * tenantnet.c: a network of each tenant's own. The sandboxes of one
 * tenant (of one state directory) share a Docker bridge network, made
 * when the tenant's first sandbox is created and removed once none of its
 * containers is left; Docker keeps bridge networks apart from each other,
 * so no sandbox reaches another tenant's. Nor does it reach the host's
 * own listeners (this server, dockerd, anything bound to 0.0.0.0) through
 * its bridge: the host's INPUT chain jumps to SANDBOX-MCP-INPUT, which
 * drops what comes in on a tenant's bridge but answers to connections
 * the host made (the forward route's) and the ports the operator opens
 * (sandbox-host-port). The rules are set by iptables(8), run by a child;
 * the loop only reads its report.
 *
 * Processes sharing the state directory keep a tenant's network while
 * any of them makes containers on it: a create holds networks/TENANT.lock
 * shared from its ensure to its done, and a release goes on only when it
 * can hold it alone (else a create elsewhere is under way).
 */

#include "config.h"

#include <sys/types.h>
#include <sys/file.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>
#include <openssl/rand.h>

#include "engine.h"
#include "sandbox-mcp.h"

#define TENANTNET_PREFIX	"smcp-"
#define TENANTNET_LABEL		"io.sandbox-mcp."
#define TENANTNET_CHAIN		"SANDBOX-MCP-INPUT"
#define TENANTNET_IFNAME	16		/* IFNAMSIZ */

static const char *tenantnet_iptables[] = { "/usr/sbin/iptables",
    "/sbin/iptables" };
static const char *tenantnet_ip6tables[] = { "/usr/sbin/ip6tables",
    "/sbin/ip6tables" };

/* One waiting for an ensure. */
struct tenantnet_waiter {
	tenantnet_cb			 cb;
	void				*arg;
	TAILQ_ENTRY(tenantnet_waiter)	 entry;
};

/*
 * One ensure of a tenant's network, then its bridge's rules; those who
 * ask meanwhile wait for the same answer (two creates of one tenant never
 * make two networks of one name).
 */
struct tenantnet_req {
	char				*tenant;
	char				*name;
	char				*id;
	char				 bridge[TENANTNET_IFNAME];
	struct tspan			*span;
	int				 tries;
	int				 boxnet;	/* from box-subnets */
	int				 overlaps;	/* box subnets */
	int				 waited;
	struct event			*retry;
	TAILQ_HEAD(, tenantnet_waiter)	 waiters;
	LIST_ENTRY(tenantnet_req)	 entry;
};
static LIST_HEAD(, tenantnet_req) tenantnet_reqs =
    LIST_HEAD_INITIALIZER(tenantnet_reqs);

/* Bridges whose rules this process has set. */
struct tenantnet_walled {
	char				 bridge[TENANTNET_IFNAME];
	LIST_ENTRY(tenantnet_walled)	 entry;
};
static LIST_HEAD(, tenantnet_walled) tenantnet_walls =
    LIST_HEAD_INITIALIZER(tenantnet_walls);

/* Tenants with creates between ensure and done: their network stays. */
struct tenantnet_busy {
	char				*tenant;
	unsigned int			 n;
	int				 lock;	/* shared, or -1 */
	LIST_ENTRY(tenantnet_busy)	 entry;
};
static LIST_HEAD(, tenantnet_busy) tenantnet_busies =
    LIST_HEAD_INITIALIZER(tenantnet_busies);

static void	tenantnet_lookup(struct tenantnet_req *);
static void	tenantnet_box_subnet(cJSON *);

/* An Engine path with one filter, key: [value], escaped; the caller frees. */
static char *
tenantnet_filtered(const char *base, const char *key, const char *value)
{
	cJSON	*filters, *v;
	char	*path, *esc, *text;

	filters = cJSON_CreateObject();
	v = cJSON_AddArrayToObject(filters, key);
	cJSON_AddItemToArray(v, cJSON_CreateString(value));
	text = util_json_print(filters);
	cJSON_Delete(filters);
	esc = util_url_escape(text, 1);
	free(text);
	xasprintf(&path, "%s%sfilters=%s", base, strchr(base, '?') != NULL ?
	    "&" : "?", esc);
	free(esc);
	return (path);
}

/* The tenant's lock file, opened; -1 when it cannot be. */
static int
tenantnet_lock_open(const char *tenant)
{
	char	*path;
	int	 fd;

	path = state_where(STATE_NETWORKS, NULL, "%s.lock", tenant);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1)
		log_warn("%s", path);
	free(path);
	return (fd);
}

static struct tenantnet_busy *
tenantnet_busy_find(const char *tenant)
{
	struct tenantnet_busy	*b;

	LIST_FOREACH(b, &tenantnet_busies, entry) {
		if (strcmp(b->tenant, tenant) == 0)
			return (b);
	}
	return (NULL);
}

/*
 * The network of tenant, in buf: "smcp-", 12 hex digits of the state
 * directory's hash (two servers on one host keep their tenants apart),
 * "-", the tenant (a valid tenant name is a valid network name).
 */
void
tenantnet_name(const char *tenant, char *buf, size_t len)
{
	unsigned char	h[32];

	util_sha256(cfg->state_dir, strlen(cfg->state_dir), h);
	snprintf(buf, len, TENANTNET_PREFIX "%02x%02x%02x%02x%02x%02x-%s",
	    h[0], h[1], h[2], h[3], h[4], h[5], tenant);
}

static void
tenantnet_req_done(struct tenantnet_req *r, const char *error)
{
	struct tenantnet_waiter	*w;

	if (error != NULL)
		telemetry_span_attr_str(r->span, "error", error);
	telemetry_span_end(r->span, error != NULL ? "error" : "completed");
	LIST_REMOVE(r, entry);
	while ((w = TAILQ_FIRST(&r->waiters)) != NULL) {
		TAILQ_REMOVE(&r->waiters, w, entry);
		w->cb(error != NULL ? NULL : r->id, error, w->arg);
		free(w);
	}
	if (r->retry != NULL)
		event_free(r->retry);
	free(r->tenant);
	free(r->name);
	free(r->id);
	free(r);
}

static int
tenantnet_walled(const char *bridge)
{
	struct tenantnet_walled	*w;

	LIST_FOREACH(w, &tenantnet_walls, entry) {
		if (strcmp(w->bridge, bridge) == 0)
			return (1);
	}
	return (0);
}

/* Child side: run iptables with argv (NULL-terminated); its status. */
static int
tenantnet_run(const char *const *argv, int quiet)
{
	pid_t	pid;
	int	status, null;

	if ((pid = fork()) == -1)
		return (-1);
	if (pid == 0) {
		if (quiet && (null = open("/dev/null", O_WRONLY)) != -1)
			dup2(null, STDERR_FILENO);
		closefrom(STDERR_FILENO + 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR)
			return (-1);
	}
	return (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/*
 * Child side: rule (the words after "iptables -w 10 -C CHAIN") is in
 * chain, checked with -C first, added with op (-I or -A) when missing.
 */
static int
tenantnet_rule(const char *ipt, const char *chain, const char *op,
    const char *const *rule)
{
	const char	*argv[32];
	size_t		 n = 0, i;

	argv[n++] = ipt;
	argv[n++] = "-w";
	argv[n++] = "10";
	argv[n++] = "-C";
	argv[n++] = chain;
	for (i = 0; rule[i] != NULL && n < 30; i++)
		argv[n++] = rule[i];
	argv[n] = NULL;
	if (tenantnet_run(argv, 1) == 0)
		return (0);
	argv[3] = op;
	return (tenantnet_run(argv, 0) == 0 ? 0 : -1);
}

struct tenantnet_wall {
	char	bridge[TENANTNET_IFNAME];
	int	remove;		/* its network is gone: sweep only */
};

/* Child side: the first of paths that can be run, or NULL. */
static const char *
tenantnet_find(const char *const *paths, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (access(paths[i], X_OK) == 0)
			return (paths[i]);
	}
	return (NULL);
}

/*
 * Child side: take out of the chain every rule naming an interface that
 * is gone (the bridge of a network removed, by us or by hand, or while
 * no server ran), so that the chain does not grow without end.
 */
static void
tenantnet_sweep(const char *ipt)
{
	const char	*argv[40];
	char		 line[1024], dev[64], sys[128], *p, *save;
	FILE		*f;
	size_t		 n, i;
	int		 pfd[2], status;
	pid_t		 pid;
	char		**rules = NULL;
	size_t		 nrules = 0;

	if (pipe(pfd) != 0)
		return;
	if ((pid = fork()) == -1) {
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		closefrom(STDERR_FILENO + 1);
		execl(ipt, ipt, "-w", "10", "-S", TENANTNET_CHAIN, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	if ((f = fdopen(pfd[0], "r")) == NULL) {
		close(pfd[0]);
		waitpid(pid, &status, 0);
		return;
	}
	while (fgets(line, sizeof line, f) != NULL && nrules < 4096) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "-A " TENANTNET_CHAIN " -i ",
		    strlen("-A " TENANTNET_CHAIN " -i ")) != 0)
			continue;
		p = line + strlen("-A " TENANTNET_CHAIN " -i ");
		n = strcspn(p, " ");
		if (n == 0 || n >= sizeof dev || n >= TENANTNET_IFNAME)
			continue;
		memcpy(dev, p, n);
		dev[n] = '\0';
		if (strchr(dev, '/') != NULL || dev[0] == '.')
			continue;
		snprintf(sys, sizeof sys, "/sys/class/net/%s", dev);
		if (access(sys, F_OK) == 0)
			continue;	/* its bridge is there */
		rules = xreallocarray(rules, nrules + 1, sizeof *rules);
		rules[nrules++] = xstrdup(line + 3);	/* past "-A " */
	}
	fclose(f);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	for (i = 0; i < nrules; i++) {
		n = 0;
		argv[n++] = ipt;
		argv[n++] = "-w";
		argv[n++] = "10";
		argv[n++] = "-D";
		for (p = strtok_r(rules[i], " ", &save); p != NULL &&
		    n < 38; p = strtok_r(NULL, " ", &save))
			argv[n++] = p;
		argv[n] = NULL;
		tenantnet_run(argv, 1);
		free(rules[i]);
	}
	free(rules);
}

/*
 * Child side: one family's rules of the bridge (ipt: iptables or
 * ip6tables): SANDBOX-MCP-INPUT made, and jumped to from the top of
 * INPUT, when missing; answers first, then the opened ports, then the
 * drop. -1 with msg set.
 */
static int
tenantnet_wall_family(const char *ipt, const char *bridge, char *msg,
    size_t len)
{
	struct cfg_word	*p;
	const char	*argv[8];
	const char	*jump[] = { "-j", TENANTNET_CHAIN, NULL };
	const char	*est[] = { "-i", bridge, "-m", "conntrack",
	    "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN", NULL };
	const char	*drop[] = { "-i", bridge, "-j", "DROP", NULL };
	const char	*port[] = { "-i", bridge, "-p", "tcp", "--dport", NULL,
	    "-j", "RETURN", NULL };

	argv[0] = ipt;
	argv[1] = "-w";
	argv[2] = "10";
	argv[3] = "-N";
	argv[4] = TENANTNET_CHAIN;
	argv[5] = NULL;
	tenantnet_run(argv, 1);		/* it may be there already */
	tenantnet_sweep(ipt);
	if (tenantnet_rule(ipt, TENANTNET_CHAIN, "-A", drop) != 0 ||
	    tenantnet_rule(ipt, TENANTNET_CHAIN, "-I", est) != 0 ||
	    tenantnet_rule(ipt, "INPUT", "-I", jump) != 0) {
		snprintf(msg, len, "%s could not set the rules of bridge %s",
		    ipt, bridge);
		return (-1);
	}
	TAILQ_FOREACH(p, &cfg->host_ports, entry) {
		port[5] = p->word;
		if (tenantnet_rule(ipt, TENANTNET_CHAIN, "-I", port) != 0) {
			snprintf(msg, len, "%s could not open port %s to bridge"
			    " %s", ipt, p->word, bridge);
			return (-1);
		}
	}
	return (0);
}

/*
 * Child side: wall the bridge off from the host, IPv4 and IPv6 (a
 * sandbox with raw sockets speaks IPv6 to the host's link-local address
 * even with IPv6 off in its own kernel): the bridge's IPv6 is turned off
 * on the host, and ip6tables drops the same, where the host has IPv6.
 * Or, with remove, only sweep the rules of bridges that are gone.
 */
static int
tenantnet_wall_child(void *arg, int fd)
{
	struct tenantnet_wall	*w = arg;
	const char		*ipt, *ip6t;
	char			 msg[256], path[128];
	int			 sfd, v6;

	ipt = tenantnet_find(tenantnet_iptables, sizeof tenantnet_iptables /
	    sizeof tenantnet_iptables[0]);
	ip6t = tenantnet_find(tenantnet_ip6tables, sizeof tenantnet_ip6tables
	    / sizeof tenantnet_ip6tables[0]);
	v6 = access("/proc/sys/net/ipv6", F_OK) == 0;
	if (ipt == NULL || (v6 && ip6t == NULL)) {
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "iptables is not"
		    " installed (Debian package iptables): a tenant's network"
		    " cannot be walled off from the host");
		return (1);
	}
	if (w->remove) {
		tenantnet_sweep(ipt);
		if (v6)
			tenantnet_sweep(ip6t);
		return (job_answer(fd, NULL, NULL));
	}
	/*
	 * A bridge not in this network namespace (an Engine in another
	 * one) carries nothing to this namespace's listeners: not ours.
	 */
	snprintf(path, sizeof path, "/sys/class/net/%s", w->bridge);
	if (access(path, F_OK) != 0 && errno == ENOENT)
		return (job_answer(fd, NULL, NULL));
	if (tenantnet_wall_family(ipt, w->bridge, msg, sizeof msg) != 0) {
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", msg);
		return (1);
	}
	if (!v6)
		return (job_answer(fd, NULL, NULL));
	snprintf(path, sizeof path, "/proc/sys/net/ipv6/conf/%s/disable_ipv6",
	    w->bridge);
	if ((sfd = open(path, O_WRONLY | O_CLOEXEC)) == -1 ||
	    write(sfd, "1\n", 2) != 2) {
		snprintf(msg, sizeof msg, "cannot turn IPv6 off on bridge %s:"
		    " %s", w->bridge, strerror(errno));
		if (sfd != -1)
			close(sfd);
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", msg);
		return (1);
	}
	close(sfd);
	if (tenantnet_wall_family(ip6t, w->bridge, msg, sizeof msg) != 0) {
		job_fail(fd, CAUSE_FAILED, NULL, NULL, "%s", msg);
		return (1);
	}
	return (job_answer(fd, NULL, NULL));
}

static void
tenantnet_wall_done(cJSON *result, const struct cause *cause, void *arg)
{
	struct tenantnet_req	*r = arg;
	struct tenantnet_walled	*w;
	char			*error = NULL;

	if (cause != NULL) {
		xasprintf(&error, "the network of tenant %s: %s", r->tenant,
		    cause->message);
		tenantnet_req_done(r, error);
		free(error);
		return;
	}
	if (!tenantnet_walled(r->bridge)) {
		w = xcalloc(1, sizeof *w);
		strlcpy(w->bridge, r->bridge, sizeof w->bridge);
		LIST_INSERT_HEAD(&tenantnet_walls, w, entry);
	}
	tenantnet_req_done(r, NULL);
}

/* The network is there: wall its bridge off, once a process. */
static void
tenantnet_wall(struct tenantnet_req *r, cJSON *net)
{
	struct tenantnet_wall	 w;
	cJSON			*id, *opt;

	opt = cJSON_GetObjectItem(cJSON_GetObjectItem(net, "Options"),
	    "com.docker.network.bridge.name");
	id = cJSON_GetObjectItem(net, "Id");
	if (!cJSON_IsString(id) || strlen(id->valuestring) < 12 ||
	    id->valuestring[strspn(id->valuestring, "0123456789abcdef")] !=
	    '\0') {
		tenantnet_req_done(r, "the Docker Engine describes the"
		    " tenant's network without an id");
		return;
	}
	free(r->id);
	r->id = xstrdup(id->valuestring);
	if (cJSON_IsString(opt) && strlen(opt->valuestring) <
	    TENANTNET_IFNAME && opt->valuestring[strspn(opt->valuestring,
	    "abcdefghijklmnopqrstuvwxyz0123456789-_.")] == '\0')
		strlcpy(r->bridge, opt->valuestring, sizeof r->bridge);
	else
		snprintf(r->bridge, sizeof r->bridge, "br-%.12s",
		    id->valuestring);
	/* A remote engine's bridges are not this host's to wall. */
	if (cfg->docker_socket == NULL || tenantnet_walled(r->bridge)) {
		tenantnet_req_done(r, NULL);
		return;
	}
	memset(&w, 0, sizeof w);
	strlcpy(w.bridge, r->bridge, sizeof w.bridge);
	/* The child has its copy once forked. */
	job_fork("tenantnet", tenantnet_wall_child, &w, tenantnet_wall_done,
	    r);
}

/*
 * A box's network (keyed by the box's id) is cut from box-subnets, not
 * the Engine's pools (a few dozen networks): one of its subnets at
 * random; one taken already is tried again (tenantnet_created_cb).
 */
static void
tenantnet_box_subnet(cJSON *body)
{
	cJSON		*ipam, *list, *c;
	uint32_t	 n, k, net;
	unsigned char	 rnd[4];
	char		 sub[32];

	n = 1U << (cfg->box_prefix - cfg->box_net_len);
	if (RAND_bytes(rnd, sizeof rnd) != 1)
		fatalx("%s: the OpenSSL random generator failed", __func__);
	k = ((uint32_t)rnd[0] << 24 | rnd[1] << 16 | rnd[2] << 8 | rnd[3]) % n;
	net = cfg->box_net + (k << (32 - cfg->box_prefix));
	snprintf(sub, sizeof sub, "%u.%u.%u.%u/%d", net >> 24,
	    (net >> 16) & 0xff, (net >> 8) & 0xff, net & 0xff,
	    cfg->box_prefix);
	ipam = cJSON_AddObjectToObject(body, "IPAM");
	cJSON_AddStringToObject(ipam, "Driver", "default");
	list = cJSON_AddArrayToObject(ipam, "Config");
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "Subnet", sub);
	cJSON_AddItemToArray(list, c);
}

static void
tenantnet_created_cb(cJSON *reply, const char *error, int status,
    void *arg)
{
	struct tenantnet_req	*r = arg;

	/* A box's subnet taken already: another, a few times. */
	if (error != NULL && r->boxnet && strstr(error, "overlap") != NULL &&
	    r->overlaps++ < 16) {
		r->tries--;
		tenantnet_lookup(r);
		return;
	}
	/* 409: made meanwhile (by another process): look it up. */
	if (error != NULL && status != 409) {
		tenantnet_req_done(r, error);
		return;
	}
	tenantnet_lookup(r);
}

static void
tenantnet_dropped_cb(cJSON *reply, const char *error, int status, void *arg)
{
}

/*
 * The networks whose name is the tenant's (the filter matches parts of
 * names: only whole ones count). None: make it. Several (two processes
 * made one each at once): the oldest is the tenant's, and the others go
 * while no container is on them.
 */
static void
tenantnet_list_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct tenantnet_req	*r = arg;
	cJSON			*n, *name, *created, *best = NULL, *bc = NULL;
	cJSON			*body, *labels, *opts, *id;
	char			*path;

	if (error != NULL || !cJSON_IsArray(reply)) {
		tenantnet_req_done(r, error != NULL ? error : "the Docker"
		    " Engine's list of networks is not an array");
		return;
	}
	cJSON_ArrayForEach(n, reply) {
		name = cJSON_GetObjectItem(n, "Name");
		created = cJSON_GetObjectItem(n, "Created");
		if (!cJSON_IsString(name) || strcmp(name->valuestring,
		    r->name) != 0)
			continue;
		if (best == NULL || (cJSON_IsString(created) &&
		    cJSON_IsString(bc) && strcmp(created->valuestring,
		    bc->valuestring) < 0)) {
			best = n;
			bc = created;
		}
	}
	cJSON_ArrayForEach(n, reply) {
		name = cJSON_GetObjectItem(n, "Name");
		id = cJSON_GetObjectItem(n, "Id");
		if (n == best || !cJSON_IsString(name) || strcmp(
		    name->valuestring, r->name) != 0 || !cJSON_IsString(id) ||
		    id->valuestring[strspn(id->valuestring,
		    "0123456789abcdef")] != '\0')
			continue;
		xasprintf(&path, "/networks/%s", id->valuestring);
		docker_call("DELETE", path, "network_remove", NULL, r->span,
		    tenantnet_dropped_cb, NULL);
		free(path);
	}
	if (best != NULL) {
		tenantnet_wall(r, best);
		return;
	}
	if (r->tries++ >= 3) {
		tenantnet_req_done(r, "the tenant's network could not be made");
		return;
	}
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "Name", r->name);
	cJSON_AddStringToObject(body, "Driver", "bridge");
	cJSON_AddTrueToObject(body, "CheckDuplicate");
	labels = cJSON_AddObjectToObject(body, "Labels");
	cJSON_AddStringToObject(labels, TENANTNET_LABEL "state-dir",
	    cfg->state_dir);
	cJSON_AddStringToObject(labels, TENANTNET_LABEL "tenant", r->tenant);
	opts = cJSON_AddObjectToObject(body, "Options");
	cJSON_AddStringToObject(opts, "com.docker.network.bridge.enable_icc",
	    "true");
	if (r->boxnet)
		tenantnet_box_subnet(body);
	docker_call("POST", "/networks/create", "network_create", body,
	    r->span, tenantnet_created_cb, r);
	cJSON_Delete(body);
}

static void
tenantnet_lookup_retry(evutil_socket_t fd, short events, void *arg)
{
	struct tenantnet_req	*r = arg;

	evtimer_del(r->retry);
	tenantnet_lookup(r);
}

static void
tenantnet_lookup(struct tenantnet_req *r)
{
	struct tenantnet_busy	*b;
	struct timeval		 tv = { 0, 50000 };
	char			*path;

	/*
	 * Held shared before the network is looked up: a release under way
	 * in another process holds it alone for a moment; look again soon.
	 */
	b = tenantnet_busy_find(r->tenant);
	if (b != NULL && b->lock != -1 && flock(b->lock, LOCK_SH | LOCK_NB) !=
	    0) {
		if (errno == EWOULDBLOCK && r->waited++ < 200) {
			if (r->retry == NULL)
				r->retry = evtimer_new(ev_base,
				    tenantnet_lookup_retry, r);
			evtimer_add(r->retry, &tv);
			return;
		}
		log_warn("the lock of tenant %s's network", r->tenant);
	}

	path = tenantnet_filtered("/networks", "name", r->name);
	docker_call("GET", path, "network_list", NULL, r->span,
	    tenantnet_list_cb, r);
	free(path);
}

/*
 * Make sure tenant's network is there and walled off from the host: cb
 * gets its id, or NULL and why not. Until the caller says tenantnet_done,
 * the network is not released (its containers are yet to be made). A
 * box's network (boxnet; its "tenant" is the box's id) is cut from
 * box-subnets.
 */
void
tenantnet_ensure(const char *tenant, int boxnet, struct tspan *parent,
    tenantnet_cb cb, void *arg)
{
	struct tenantnet_req	*r;
	struct tenantnet_waiter	*w;
	struct tenantnet_busy	*b;
	char			 name[256];

	if ((b = tenantnet_busy_find(tenant)) == NULL) {
		b = xcalloc(1, sizeof *b);
		b->tenant = xstrdup(tenant);
		b->lock = tenantnet_lock_open(tenant);
		LIST_INSERT_HEAD(&tenantnet_busies, b, entry);
	}
	b->n++;
	w = xcalloc(1, sizeof *w);
	w->cb = cb;
	w->arg = arg;
	LIST_FOREACH(r, &tenantnet_reqs, entry) {
		if (strcmp(r->tenant, tenant) == 0) {
			TAILQ_INSERT_TAIL(&r->waiters, w, entry);
			return;
		}
	}
	tenantnet_name(tenant, name, sizeof name);
	r = xcalloc(1, sizeof *r);
	r->tenant = xstrdup(tenant);
	r->name = xstrdup(name);
	r->boxnet = boxnet;
	TAILQ_INIT(&r->waiters);
	TAILQ_INSERT_TAIL(&r->waiters, w, entry);
	LIST_INSERT_HEAD(&tenantnet_reqs, r, entry);
	r->span = telemetry_span_begin(NULL, parent, "tenantnet.ensure", NULL);
	telemetry_span_attr_str(r->span, "network", name);
	tenantnet_lookup(r);
}

/* A release: the network, while no container is on it, goes. */
struct tenantnet_rel {
	char	*name;
	char	 bridge[TENANTNET_IFNAME];
	int	 lock;		/* held alone while it runs */
	void	(*done)(void *);	/* told when it is over */
	void	*done_arg;
};

static void
tenantnet_rel_free(struct tenantnet_rel *rel)
{
	void	(*done)(void *) = rel->done;
	void	*arg = rel->done_arg;

	if (rel->lock != -1)
		close(rel->lock);
	free(rel->name);
	free(rel);
	if (done != NULL)
		done(arg);
}

static void
tenantnet_unwall_done(cJSON *result, const struct cause *cause, void *arg)
{
	if (cause != NULL)
		log_warnx("the rules of a removed tenant network stay: %s",
		    cause->message);
}

/* The rules of bridges that are gone go (a child sweeps the chain). */
static void
tenantnet_sweep_start(void)
{
	struct tenantnet_wall	wall;

	if (cfg->docker_socket == NULL)
		return;
	memset(&wall, 0, sizeof wall);
	wall.remove = 1;
	/* The child has its copy once forked. */
	job_fork("tenantnet", tenantnet_wall_child, &wall,
	    tenantnet_unwall_done, NULL);
}

static void
tenantnet_removed_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct tenantnet_rel	*rel = arg;
	struct tenantnet_walled	*w;

	/* Refused: a container joined meanwhile; it stays. */
	if (error != NULL) {
		if (status != 404)
			log_debug("network %s stays: %s", rel->name, error);
		else
			tenantnet_sweep_start();
		tenantnet_rel_free(rel);
		return;
	}
	log_info("network %s removed: its tenant has no sandbox left",
	    rel->name);
	LIST_FOREACH(w, &tenantnet_walls, entry) {
		if (strcmp(w->bridge, rel->bridge) == 0) {
			LIST_REMOVE(w, entry);
			free(w);
			break;
		}
	}
	tenantnet_sweep_start();
	tenantnet_rel_free(rel);
}

static void
tenantnet_remove(struct tenantnet_rel *rel)
{
	char	*path, *esc;

	esc = util_url_escape(rel->name, 1);
	xasprintf(&path, "/networks/%s", esc);
	docker_call("DELETE", path, "network_remove", NULL, NULL,
	    tenantnet_removed_cb, rel);
	free(path);
	free(esc);
}

/* The containers on the network, stopped ones too: none, and it goes. */
static void
tenantnet_members_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct tenantnet_rel	*rel = arg;

	if (error != NULL || !cJSON_IsArray(reply) ||
	    cJSON_GetArraySize(reply) > 0) {
		tenantnet_rel_free(rel);
		return;
	}
	tenantnet_remove(rel);
}

static void
tenantnet_release_cb(cJSON *reply, const char *error, int status, void *arg)
{
	struct tenantnet_rel	*rel = arg;
	cJSON			*id;
	char			*path;

	if (error != NULL) {
		/* Gone already (removed by hand?): its rules go too. */
		if (status == 404)
			tenantnet_sweep_start();
		tenantnet_rel_free(rel);
		return;
	}
	id = cJSON_GetObjectItem(reply, "Id");
	if (cJSON_IsString(id) && strlen(id->valuestring) >= 12 &&
	    id->valuestring[strspn(id->valuestring, "0123456789abcdef")] ==
	    '\0')
		snprintf(rel->bridge, sizeof rel->bridge, "br-%.12s",
		    id->valuestring);
	path = tenantnet_filtered("/containers/json?all=1", "network",
	    rel->name);
	docker_call("GET", path, "network_members", NULL, NULL,
	    tenantnet_members_cb, rel);
	free(path);
}

/*
 * A create that called tenantnet_ensure is over (its containers made, or
 * rolled back): with release, the network goes if nothing is on it.
 */
void
tenantnet_done(const char *tenant, int release)
{
	tenantnet_done_then(tenant, release, NULL, NULL);
}

/*
 * tenantnet_done, and done(arg) once what it started is over: the
 * network's removal answered (or not tried), so that nothing of the
 * create is still under way with the Engine.
 */
void
tenantnet_done_then(const char *tenant, int release, void (*done)(void *),
    void *arg)
{
	struct tenantnet_busy	*b;

	if ((b = tenantnet_busy_find(tenant)) != NULL && --b->n == 0) {
		LIST_REMOVE(b, entry);
		if (b->lock != -1)
			close(b->lock);		/* and its shared hold */
		free(b->tenant);
		free(b);
	}
	if (release)
		tenantnet_release_then(tenant, done, arg);
	else if (done != NULL)
		done(arg);
}

/*
 * A sandbox of tenant is gone: when no container, running or stopped, is
 * left on the tenant's network, the network and its rules go. (Docker
 * itself refuses to remove a network a running container is on, so a
 * create racing this keeps it; one that finds it gone makes it again.)
 */
void
tenantnet_release(const char *tenant)
{
	tenantnet_release_then(tenant, NULL, NULL);
}

/* tenantnet_release, and done(arg) once it is over (or not tried). */
void
tenantnet_release_then(const char *tenant, void (*done)(void *), void *arg)
{
	struct tenantnet_rel	*rel;
	char			 name[256], *path, *esc;
	int			 lock = -1;

	if (tenantnet_busy_find(tenant) != NULL ||
	    (lock = tenantnet_lock_open(tenant)) == -1 ||
	    flock(lock, LOCK_EX | LOCK_NB) != 0) {
		/* A create is on it, here or elsewhere: it stays. */
		if (lock != -1)
			close(lock);
		if (done != NULL)
			done(arg);
		return;
	}
	tenantnet_name(tenant, name, sizeof name);
	rel = xcalloc(1, sizeof *rel);
	rel->lock = lock;
	rel->done = done;
	rel->done_arg = arg;
	rel->name = xstrdup(name);
	esc = util_url_escape(name, 1);
	xasprintf(&path, "/networks/%s", esc);
	docker_call("GET", path, "network_inspect", NULL, NULL,
	    tenantnet_release_cb, rel);
	free(path);
	free(esc);
}
