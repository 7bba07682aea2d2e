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
 * sandbox-mcp: the program. Command line, configuration, start-up of the
 * event loop and its front ends, signals and the exit decision. main is
 * the one place that sees every floor: it wires the engine's callbacks
 * (recovery, container death) and hands the HTTP endpoint to it, checks
 * the operation table, and starts the surfaces.
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/capability.h>

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "merge.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"

enum {
	OPT_DOCKER_HOST = 256,
	OPT_HELP,
	OPT_LISTEN,
	OPT_METRICS_LISTEN,
	OPT_NO_STDIO,
	OPT_RESULT_TEXT,
	OPT_SET,
	OPT_STATE_DIR,
	OPT_TENANT,
	OPT_VERSION
};

static const struct option sandbox_mcp_options[] = {
	{ "docker-host", required_argument, NULL, OPT_DOCKER_HOST },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "metrics-listen", required_argument, NULL, OPT_METRICS_LISTEN },
	{ "no-stdio", no_argument, NULL, OPT_NO_STDIO },
	{ "result-text", no_argument, NULL, OPT_RESULT_TEXT },
	{ "set", required_argument, NULL, OPT_SET },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "tenant", required_argument, NULL, OPT_TENANT },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 }
};

static const char sandbox_mcp_usage[] =
    "usage: sandbox-mcp [-nv] [--help] [--no-stdio] [--result-text] [--version]\n"
    "                   [-f config]\n"
    "                   [--docker-host url] [--listen address:port]\n"
    "                   [--metrics-listen address:port]\n"
    "                   [--state-dir directory] [--tenant tenant]\n"
    "                   --set set [--set set ...]\n"
    "       sandbox-mcp keygen name [--tenant tenant] --set set"
    " [--set set ...]\n"
    "       sandbox-mcp credits [-f config] [--state-dir directory]"
    " tenant +N|-N\n";

static __dead void
usage(void)
{
	fputs(sandbox_mcp_usage, stderr);
	exit(2);
}

static void
help(void)
{
	printf("sandbox-mcp %s: disposable Linux sandboxes for coding agents"
	    " over MCP.\n\n%s\n"
	    "  --set set             serve a tool set: management, runtime,"
	    " observability or boxes\n"
	    "  --listen address:port also serve streamable HTTP at /mcp\n"
	    "  --metrics-listen address:port\n"
	    "                        serve /metrics with no key on a loopback"
	    " address\n"
	    "  -f config             configuration file (default %s)\n"
	    "  --state-dir directory state directory (default %s)\n"
	    "  --docker-host url     Docker Engine socket (default"
	    " unix:///var/run/docker.sock)\n"
	    "  --no-stdio            serve HTTP only\n"
    "  --tenant tenant       standard input and output act for tenant"
    " (default local)\n"
	    "  --result-text         results carry their JSON as text"
	    " content too\n"
	    "  -n                    check the configuration and exit\n"
	    "  -v                    more verbose logs (repeat for tracing)\n"
	    "  --version, --help     print the version, or this text\n\n"
	    "Logs go to stderr; stdout carries only JSON-RPC. See"
	    " sandbox-mcp(8).\n", PACKAGE_VERSION, sandbox_mcp_usage,
	    SANDBOX_MCP_CONF, SANDBOX_MCP_STATEDIR);
}

/*
 * The capabilities the server uses, root's by default: mounts (the
 * sandboxes' disks on loop devices, overlays, the helpers' roots) and
 * namespaces (entering a container's through /proc/PID/ns) need
 * CAP_SYS_ADMIN, CAP_SYS_PTRACE and CAP_SYS_CHROOT; the tenants' firewall
 * rules (iptables, tenantnet.c) CAP_NET_ADMIN; writing cgroup files and
 * the state directory, and giving commands Docker's default set, the
 * rest.
 */
static const struct {
	int		 cap;
	const char	*name;
} sandbox_mcp_caps[] = {
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
	{ CAP_SYS_PTRACE, "CAP_SYS_PTRACE" },
	{ CAP_SYS_CHROOT, "CAP_SYS_CHROOT" },
	{ CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE" },
	{ CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH" },
	{ CAP_CHOWN, "CAP_CHOWN" },
	{ CAP_FOWNER, "CAP_FOWNER" },
	{ CAP_FSETID, "CAP_FSETID" },
	{ CAP_MKNOD, "CAP_MKNOD" },
	{ CAP_SETUID, "CAP_SETUID" },
	{ CAP_SETGID, "CAP_SETGID" },
	{ CAP_SETPCAP, "CAP_SETPCAP" },
	{ CAP_SETFCAP, "CAP_SETFCAP" },
	{ CAP_KILL, "CAP_KILL" },
	{ CAP_NET_RAW, "CAP_NET_RAW" },
	{ CAP_NET_ADMIN, "CAP_NET_ADMIN" },
	{ CAP_NET_BIND_SERVICE, "CAP_NET_BIND_SERVICE" },
	{ CAP_AUDIT_WRITE, "CAP_AUDIT_WRITE" }
};

/*
 * Whether the process holds the capabilities it needs; if not, a cause
 * that says what to grant, before anything fails on its own with
 * "Permission denied".
 */
static int
sandbox_mcp_privileged(char **cause)
{
	struct __user_cap_header_struct	 hdr;
	struct __user_cap_data_struct	 data[2];
	char				*missing = NULL, *tmp;
	size_t				 i;
	int				 cap;

	memset(&hdr, 0, sizeof hdr);
	memset(data, 0, sizeof data);
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	if (syscall(SYS_capget, &hdr, data) != 0) {
		xasprintf(cause, "capget: %s", strerror(errno));
		return (-1);
	}
	for (i = 0; i < sizeof sandbox_mcp_caps / sizeof sandbox_mcp_caps[0];
	    i++) {
		cap = sandbox_mcp_caps[i].cap;
		if (data[cap / 32].effective & (1U << (cap % 32)))
			continue;
		xasprintf(&tmp, "%s%s%s", missing != NULL ? missing : "",
		    missing != NULL ? ", " : "", sandbox_mcp_caps[i].name);
		free(missing);
		missing = tmp;
	}
	if (missing == NULL)
		return (0);
	xasprintf(cause, "not enough privilege: running as uid %u without"
	    " %s. Run sandbox-mcp as root, or as a user holding those"
	    " capabilities (ambient; they also open the Docker socket and the"
	    " cgroup files): see PRIVILEGES in sandbox-mcp(8). It mounts the"
	    " sandboxes' disks on loop devices, enters containers' namespaces"
	    " and writes their cgroups", (unsigned int)geteuid(), missing);
	free(missing);
	return (-1);
}

/*
 * sandbox-mcp credits [-f config] [--state-dir dir] TENANT +N|-N: grant
 * (or take back) credits in the store of the state directory, which a
 * running server reads at once; print what the tenant has left.
 */
static int
sandbox_mcp_credits(int argc, char **argv)
{
	const struct cfg_tenant	*t;
	const char		*conf = SANDBOX_MCP_CONF, *state_dir = NULL;
	struct store		*st;
	char			*cause = NULL, *end;
	double			 delta, balance;
	int			 ch, conf_given = 0;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+f:", sandbox_mcp_options,
	    NULL)) != -1) {
		switch (ch) {
		case 'f':
			conf = optarg;
			conf_given = 1;
			break;
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 2 || (argv[1][0] != '+' && argv[1][0] != '-'))
		usage();
	errno = 0;
	delta = strtod(argv[1], &end);
	if (errno != 0 || *end != '\0' || end == argv[1] + 1 ||
	    !(delta >= -1e12 && delta <= 1e12)) {
		fprintf(stderr, "sandbox-mcp: credits: %s is not a number of"
		    " credits (+N or -N)\n", argv[1]);
		return (2);
	}
	util_json_init();
	cfg = cfg_new();
	if (cfg_load(cfg, conf, conf_given) != 0)
		return (2);
	if (state_dir != NULL) {
		free(cfg->state_dir);
		cfg->state_dir = xstrdup(state_dir);
	}
	if ((t = cfg_tenant_find(argv[0])) == NULL || t->credits < 0) {
		fprintf(stderr, "sandbox-mcp: credits: tenant %s has no credit"
		    " limit (its tenant line has no credits): nothing to"
		    " grant\n", argv[0]);
		return (1);
	}
	if ((st = store_open(cfg->state_dir, &cause)) == NULL ||
	    store_credits_add(st, argv[0], delta, &balance, &cause) != 0) {
		fprintf(stderr, "sandbox-mcp: credits: %s\n", cause);
		store_close(st);
		return (1);
	}
	store_close(st);
	printf("tenant %s: %g credits left\n", argv[0],
	    (double)t->credits + balance);
	return (0);
}

static int
sandbox_mcp_keygen(int argc, char **argv)
{
	const char	*tenant = NULL;
	char		*cause;
	int		 ch, sets = 0;
	size_t		 n;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "", sandbox_mcp_options,
	    NULL)) != -1) {
		switch (ch) {
		case OPT_SET:
			if (cfg_parse_sets(optarg, &sets, &cause) != 0) {
				fprintf(stderr, "sandbox-mcp: %s\n", cause);
				free(cause);
				usage();
			}
			break;
		case OPT_TENANT:
			tenant = optarg;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 1 || sets == 0)
		usage();
	n = strlen(argv[0]);
	if (n == 0 || n > 64 || argv[0][strspn(argv[0],
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-")] != '\0') {
		fprintf(stderr, "sandbox-mcp: a key name is 1 to 64 letters,"
		    " digits, dots, dashes or underscores\n");
		return (2);
	}
	if (tenant != NULL && !util_tenant_name_valid(tenant)) {
		fprintf(stderr, "sandbox-mcp: a tenant name is 1 to 64"
		    " letters, digits, dots, dashes or underscores\n");
		return (2);
	}
	if (strcmp(argv[0], TENANT_LOCAL) == 0 || (tenant != NULL &&
	    strcmp(tenant, TENANT_LOCAL) == 0)) {
		fprintf(stderr, "sandbox-mcp: the name \"%s\" is reserved for"
		    " the local operator (stdio)\n", TENANT_LOCAL);
		return (2);
	}
	if (auth_keygen(argv[0], sets, tenant) != 0) {
		fprintf(stderr, "sandbox-mcp: the random generator failed\n");
		return (1);
	}
	return (0);
}

/* What reloading needs: the file, and what the command line set. */
static const char	*reload_conf;
static int		 reload_conf_given;
static const char	*reload_opt[4];	/* state-dir, docker-host, listen, */
					/* metrics-listen */
static int		 opt_result_text; /* --result-text */

static char **
reload_field(struct cfg *c, int i)
{
	switch (i) {
	case 0:
		return (&c->state_dir);
	case 1:
		return (&c->docker_host);
	case 2:
		return (&c->listen);
	default:
		return (&c->metrics_listen);
	}
}

/*
 * SIGHUP: read the configuration again. A file with any error is refused
 * whole (each error is logged with its line) and the running
 * configuration stays. What cannot change while the process runs (the
 * state directory, the Docker socket, the listen addresses) keeps its
 * running value, and a file that changes it is named in the log. Then
 * what was opened with a key that is gone ends (transport_http_reload),
 * and the old configuration goes.
 */
static void
sandbox_mcp_reload(void)
{
	static const char *names[] = { "state-dir", "docker-host", "listen",
	    "metrics-listen" };
	struct cfg	*c, *old;
	char		*cause, **nv, **ov;
	int		 errors, i;

	log_info("SIGHUP: reading %s", reload_conf);
	c = cfg_new();
	if ((errors = cfg_load(c, reload_conf, reload_conf_given)) != 0) {
		log_warnx("%s: %d error%s (above): not reloaded, the running"
		    " configuration stays", reload_conf, errors, errors == 1 ?
		    "" : "s");
		cfg_free(c);
		return;
	}
	if (opt_result_text)
		c->result_text = 1;
	for (i = 0; i < 4; i++) {
		nv = reload_field(c, i);
		ov = reload_field(cfg, i);
		if (reload_opt[i] == NULL && ((*nv == NULL) != (*ov == NULL) ||
		    (*nv != NULL && strcmp(*nv, *ov) != 0)))
			log_warnx("%s: %s changed to %s: that takes a restart;"
			    " still %s", reload_conf, names[i], *nv != NULL ?
			    *nv : "(none)", *ov != NULL ? *ov : "(none)");
		free(*nv);
		*nv = *ov != NULL ? xstrdup(*ov) : NULL;
	}
	if (cfg_finish(c, &cause) != 0) {
		log_warnx("%s: %s: not reloaded, the running configuration"
		    " stays", reload_conf, cause);
		free(cause);
		cfg_free(c);
		return;
	}
	old = cfg;
	cfg = c;
	cfg_keys_changed();
	transport_http_reload();
	mcp_http_reload();
	mcp_tools_forget();
	cfg_free(old);
	log_info("configuration reloaded from %s", reload_conf);
}

int
main(int argc, char **argv)
{
	const char	*conf = SANDBOX_MCP_CONF, *state_dir = NULL;
	const char	*docker_host = NULL, *listen = NULL, *host;
	const char	*metrics_listen = NULL, *tenant = TENANT_LOCAL;
	char		*cause;
	int		 ch, noaction = 0, no_stdio = 0, verbose = 0, port;
	int		 conf_given = 0, errors, saved_argc = argc;
	char		**saved_argv = argv;

	if (argc > 1 && strcmp(argv[1], "keygen") == 0)
		return (sandbox_mcp_keygen(argc - 1, argv + 1));
	if (argc > 1 && strcmp(argv[1], "credits") == 0)
		return (sandbox_mcp_credits(argc - 1, argv + 1));

	while ((ch = getopt_long(argc, argv, "f:nv", sandbox_mcp_options,
	    NULL)) != -1) {
		switch (ch) {
		case 'f':
			conf = optarg;
			conf_given = 1;
			break;
		case 'n':
			noaction = 1;
			break;
		case 'v':
			verbose++;
			break;
		case OPT_DOCKER_HOST:
			docker_host = optarg;
			break;
		case OPT_HELP:
			help();
			return (0);
		case OPT_LISTEN:
			listen = optarg;
			break;
		case OPT_METRICS_LISTEN:
			metrics_listen = optarg;
			break;
		case OPT_NO_STDIO:
			no_stdio = 1;
			break;
		case OPT_RESULT_TEXT:
			opt_result_text = 1;
			break;
		case OPT_SET:
			if (cfg_parse_sets(optarg, &opt_sets, &cause) != 0) {
				fprintf(stderr, "sandbox-mcp: %s\n", cause);
				free(cause);
				usage();
			}
			if (opt_sets & TOOLSET_METRICS) {
				fprintf(stderr, "sandbox-mcp: metrics is granted"
				    " to API keys, not served as a tool set:"
				    " every HTTP listener serves /metrics\n");
				usage();
			}
			break;
		case OPT_STATE_DIR:
			state_dir = optarg;
			break;
		case OPT_TENANT:
			if (!util_tenant_name_valid(optarg)) {
				fprintf(stderr, "sandbox-mcp: --tenant: a tenant"
				    " name is 1 to 64 letters, digits, dots,"
				    " dashes or underscores: \"%s\"\n", optarg);
				usage();
			}
			tenant = optarg;
			break;
		case OPT_VERSION:
			printf("sandbox-mcp %s\n", PACKAGE_VERSION);
			return (0);
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 0)
		usage();
	if (opt_sets == 0 && !noaction) {
		fprintf(stderr, "sandbox-mcp: name at least one tool set with"
		    " --set (management, runtime, observability, boxes)\n");
		usage();
	}

	log_init(0, verbose);
	if (verbose > 1)
		log_tracing = ~0;
	util_json_init();
	if (!noaction && sandbox_mcp_privileged(&cause) != 0) {
		log_warnx("%s", cause);
		free(cause);
		return (1);
	}

	cfg = cfg_new();
	if ((errors = cfg_load(cfg, conf, conf_given)) != 0) {
		if (!noaction)
			fprintf(stderr, "sandbox-mcp: %d error%s in the"
			    " configuration\n", errors, errors == 1 ? "" :
			    "s");
		return (noaction ? 1 : 2);
	}
	if (state_dir != NULL) {
		free(cfg->state_dir);
		cfg->state_dir = xstrdup(state_dir);
	}
	if (docker_host != NULL) {
		free(cfg->docker_host);
		cfg->docker_host = xstrdup(docker_host);
	}
	if (opt_result_text)
		cfg->result_text = 1;
	if (metrics_listen != NULL) {
		free(cfg->metrics_listen);
		cfg->metrics_listen = xstrdup(metrics_listen);
	}
	if (listen != NULL) {
		free(cfg->listen);
		cfg->listen = xstrdup(listen);
	}
	if (cfg_finish(cfg, &cause) != 0) {
		fprintf(stderr, "sandbox-mcp: %s\n", cause);
		free(cause);
		return (noaction ? 1 : 2);
	}
	reload_conf = conf;
	reload_conf_given = conf_given;
	reload_opt[0] = state_dir;
	reload_opt[1] = docker_host;
	reload_opt[2] = listen;
	reload_opt[3] = metrics_listen;
	if (noaction) {
		fprintf(stderr, "configuration OK\n");
		return (0);
	}
	if (no_stdio && cfg->listen == NULL) {
		fprintf(stderr, "sandbox-mcp: --no-stdio needs --listen (or a"
		    " listen line): there would be nothing to serve\n");
		usage();
	}
	if (no_stdio && strcmp(tenant, TENANT_LOCAL) != 0) {
		fprintf(stderr, "sandbox-mcp: --tenant names whom standard"
		    " input and output act for, and --no-stdio serves none\n");
		usage();
	}

	proc_init();
	nsexec_init(saved_argc, saved_argv);
	confine_init();

	if (util_mkdir_p(cfg->state_dir, 0700, &cause) != 0 ||
	    state_init(&cause) != 0) {
		log_warnx("state directory: %s", cause);
		free(cause);
		return (1);
	}
	if (merge_init(&cause) != 0) {
		log_warnx("%s", cause);
		free(cause);
		return (1);
	}
	telemetry_init();
	metrics_init();
	op_init();
	rest_init();
	runtime_init();
	sandbox_recover(runtime_recover);
	job_groups_recover();
	sandbox_watch(runtime_lost);
	if ((opt_sets & TOOLSET_BOXES) && box_init(&cause) != 0) {
		log_warnx("boxes: %s", cause);
		free(cause);
		return (1);
	}
	/* A process that does the work samples the sandboxes' resources. */
	if (opt_sets & (TOOLSET_MANAGEMENT | TOOLSET_RUNTIME))
		sampler_init();

	if (cfg->listen != NULL) {
		mcp_http_init();
		transport_http_register("/sandboxes/", forward_http, NULL,
		    NULL);
		transport_http_register("/v1/", rest_http, rest_refuse, NULL);
		if (transport_http_start(cfg->listen, opt_sets, &cause) != 0) {
			log_warnx("%s", cause);
			free(cause);
			return (1);
		}
		if (transport_http_endpoint(&host, &port) == 0)
			sandbox_set_endpoint(host, port);
		proc_set_stop(transport_http_stop);
	}
	if (cfg->metrics_listen != NULL &&
	    transport_http_metrics_start(cfg->metrics_listen, &cause) != 0) {
		log_warnx("%s", cause);
		free(cause);
		return (1);
	}
	if (!no_stdio)
		transport_stdio_start(opt_sets, tenant);

	proc_set_reload(sandbox_mcp_reload);
	log_debug("started version=%s state-dir=%s docker=%s",
	    PACKAGE_VERSION, cfg->state_dir, cfg->docker_socket);
	proc_loop();
	cfg_free(cfg);
	return (0);
}
