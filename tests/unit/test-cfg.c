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
 * The configuration parser: every directive, the word syntax, and
 * "file:line: message" errors.
 */

#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "unit.h"

#define KEYHASH	"0123456789abcdef0123456789abcdef" \
		"0123456789abcdef0123456789abcdef"

static char	errbuf[8192];

/* Parse text into a fresh configuration; errors land in errbuf. */
static int
parse(struct cfg *c, const char *text)
{
	char	path[] = "/tmp/unit-cfg.XXXXXX";
	int	fd, saved, errors;
	ssize_t	n;

	fflush(stderr);
	fd = mkstemp(path);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	errors = cfg_parse_buffer(c, "test.conf", text, strlen(text));
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	lseek(fd, 0, SEEK_SET);
	n = read(fd, errbuf, sizeof errbuf - 1);
	errbuf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return (errors);
}

static int
test_full(void)
{
	struct cfg		*c = cfg_new();
	struct cfg_apikey	*k;
	struct cfg_word		*w;
	struct cfg_tenant	*t;

	CHECK_INT(parse(c,
	    "# comment\n"
	    "state-dir /var/tmp/state   # trailing comment\n"
	    "docker-host unix:///run/docker.sock\n"
	    "workspace-root /srv/workspaces/\n"
	    "workspace-root \"/srv/with space\"\n"
	    "listen 127.0.0.1:8080\n"
	    "api-key ci sha256:"
	    "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF"
	    " sets runtime,observability\n"
	    "allow-origin https://console.example.com\n"
	    "trusted-proxy 127.0.0.1\n"
	    "trusted-proxy ::1\n"
	    "public-host sandbox.example.com\n"
	    "public-host *.boxes.example.com\n"
	    "public-host [::1]:8443\n"
	    "public-host sandbox.example.com\n"
	    "profile cpus 1.5 memory-high 384M memory-max 1G pids 300\n"
	    "profile disk 64M\n"
	    "limit max-body 8M\n"
	    "limit idle-timeout 2m\n"
	    "tenant acme plan pro\n"
	    "tenant tiny plan free credits 250\n"
	    "box-subnets 172.30.0.0/20 /29\n"
	    "price box-minute 2.5 usd 0.01\n"
	    "price call 0.1\n"
	    "\n\t  \n"), 0);
	CHECK_STR(c->state_dir, "/var/tmp/state");
	CHECK_STR(c->docker_socket, "/run/docker.sock");
	w = TAILQ_FIRST(&c->roots);
	CHECK_STR(w->word, "/srv/workspaces");
	CHECK_STR(TAILQ_NEXT(w, entry)->word, "/srv/with space");
	CHECK_STR(c->listen, "127.0.0.1:8080");
	w = TAILQ_FIRST(&c->public_hosts);
	CHECK_STR(w->word, "sandbox.example.com");
	CHECK_STR(TAILQ_NEXT(w, entry)->word, "*.boxes.example.com");
	CHECK_STR(TAILQ_LAST(&c->public_hosts, cfg_words)->word,
	    "[::1]:8443");	/* the repeated name is kept once */
	k = TAILQ_FIRST(&c->apikeys);
	CHECK_STR(k->name, "ci");
	CHECK_INT(k->sets, TOOLSET_RUNTIME | TOOLSET_OBSERVABILITY);
	CHECK_INT(k->hash[0], 0x00);
	CHECK_INT(k->hash[31], 0xff);
	CHECK_INT(c->profile.nano_cpus, 1500000000LL);
	CHECK_INT(c->profile.memory_max, 1024LL * 1024 * 1024);
	CHECK_INT(c->profile.pids, 300);
	CHECK_INT(c->profile.disk, 64LL * 1024 * 1024);
	CHECK_INT(c->limits[LIMIT_MAX_BODY], 8 * 1024 * 1024);
	CHECK_INT(c->limits[LIMIT_IDLE_TIMEOUT], 120);
	CHECK_INT(c->limits[LIMIT_MAX_HEADER], 64 * 1024);
	t = TAILQ_FIRST(&c->tenants);
	CHECK_STR(t->name, "acme");
	CHECK_INT(t->plan, PLAN_PRO);
	CHECK_INT(t->credits, -1);
	t = TAILQ_NEXT(t, entry);
	CHECK_STR(t->name, "tiny");
	CHECK_INT(t->plan, PLAN_FREE);
	CHECK_INT(t->credits, 250);
	CHECK_INT(c->box_net, 0xac1e0000);
	CHECK_INT(c->box_net_len, 20);
	CHECK_INT(c->box_prefix, 29);
	CHECK(c->price_credits[0] == 2.5 && c->price_usd[0] == 0.01);
	CHECK(c->price_credits[1] == 0.1 && c->price_usd[1] == 0);
	CHECK_INT(cfg_plan_sizes(PLAN_FREE)->boxes, 3);
	CHECK_INT(cfg_plan_sizes(PLAN_PRO)->boxes, 5);
	CHECK_INT(cfg_plan_sizes(PLAN_MAX)->boxes, 20);
	cfg_free(c);
	return (0);
}

static int
test_errors(void)
{
	static const struct {
		const char	*text;
		const char	*message;
	} bad[] = {
		{ "bogus 1\n", "test.conf:1: unknown directive \"bogus\"" },
		{ "\n\nstate-dir relative\n", "test.conf:3: state-dir must be"
		    " an absolute path" },
		{ "state-dir\n", "test.conf:1: state-dir takes 1 argument,"
		    " not 0" },
		{ "docker-host tcp://1.2.3.4:2375\n", "docker-host must be a"
		    " unix:// URL" },
		{ "api-key k sha256:abc sets runtime\n", "64 hex digits" },
		{ "api-key k sha256:" "0123456789abcdef0123456789abcdef"
		    "0123456789abcdef0123456789abcdzz sets runtime\n", "not hex" },
		{ "api-key k sha256:" "0123456789abcdef0123456789abcdef"
		    "0123456789abcdef0123456789abcdef grants runtime\n",
		    "expected \"sets\"" },
		{ "api-key k sha256:" "0123456789abcdef0123456789abcdef"
		    "0123456789abcdef0123456789abcdef sets all\n", "\"all\" is refused" },
		{ "api-key k sha256:" "0123456789abcdef0123456789abcdef"
		    "0123456789abcdef0123456789abcdef sets everything\n",
		    "unknown tool set \"everything\"" },
		{ "allow-origin example.com\n", "must start with http" },
		{ "allow-origin https://a.example/path\n", "no path" },
		{ "trusted-proxy proxy.example\n", "IPv4 or IPv6" },
		{ "public-host https://a.example\n", "test.conf:1: public-host"
		    " must be a host name or address with an optional :port,"
		    " or *.domain: https://a.example" },
		{ "public-host a.example/x\n", "public-host must be" },
		{ "public-host *.\n", "public-host must be" },
		{ "public-host a b\n", "public-host takes 1 argument, not 2" },
		{ "profile cpus 0\n", "profile cpus must be a number" },
		{ "profile memory-max 1K\n", "at least 6M" },
		{ "profile pids 1\n", "from 16 to" },
		{ "profile color red\n", "unknown profile setting" },
		{ "profile disk 8M\n", "profile disk must be a size from 16M" },
		{ "profile disk 16385G\n", "to 16384G" },
		{ "profile disk lots\n", "or none: lots" },
		{ "profile memory-high 1G memory-max 512M\n",
		    "must not exceed" },
		{ "limit max-body 1\n", "limit max-body must be a size from" },
		{ "limit max-body 16X\n", "limit max-body must be a size" },
		{ "limit nothing 1\n", "unknown limit \"nothing\"" },
		{ "limit idle-timeout -3\n", "number of seconds" },
		{ "workspace-root \"/unterminated\n", "unterminated quote" },
		{ "workspace-root /a\"b\n", "a quote inside a word" },
		{ "listen 8080\n", "listen needs ADDRESS:PORT" },
		{ "workspace-root /x\nworkspace-root /x/\n",
		    "test.conf:2: workspace-root /x is given twice" },
		{ "\n\napi-key local sha256:" KEYHASH " sets runtime\n",
		    "test.conf:3: api-key local: the name \"local\" is reserved"
		    " for the local operator" },
		{ "api-key k sha256:" KEYHASH " sets runtime tenant local\n",
		    "test.conf:1: api-key k: the name \"local\" is reserved" },
		{ "api-key local sha256:" KEYHASH " sets runtime tenant t\n",
		    "test.conf:1: api-key local: the name \"local\" is"
		    " reserved" },
		{ "api-key k sha256:" KEYHASH " sets runtime tenant\n",
		    "test.conf:1: api-key k: expected \"tenant\" and a tenant"
		    " name after the set list" },
		{ "api-key k sha256:" KEYHASH " sets runtime group blue\n",
		    "api-key k: expected \"tenant\"" },
		{ "api-key k sha256:" KEYHASH " sets runtime tenant a/b\n",
		    "api-key k: a tenant name must be 1 to 64 letters" },
		{ "api-key k sha256:" KEYHASH " sets runtime tenant \"\"\n",
		    "api-key k: a tenant name must be 1 to 64 letters" },
		{ "api-key k sha256:" KEYHASH " sets runtime tenant a b\n",
		    "api-key takes 4 to 6 arguments, not 7" },
		{ "workspace-root /x tenants\n", "test.conf:1: workspace-root"
		    " /x: expected \"tenants\" and a comma-separated list" },
		{ "workspace-root /x/ for a\n", "workspace-root /x: expected"
		    " \"tenants\"" },
		{ "workspace-root /x tenants a,local\n", "test.conf:1:"
		    " workspace-root /x: the name \"local\" is reserved" },
		{ "workspace-root /x tenants a,,b\n", "workspace-root /x: a"
		    " tenant name must be 1 to 64" },
		{ "workspace-root /x tenants \"a b\"\n", "workspace-root /x:"
		    " a tenant name must be 1 to 64" },
		{ "workspace-root /x tenants a b\n", "workspace-root takes 1 to"
		    " 3 arguments, not 4" },
		{ "price minute 1\n", "price: unknown kind \"minute\"" },
		{ "price call -1\n", "price call: credits must be a number" },
		{ "price call 1 eur 2\n", "expected \"usd\"" },
		{ "price call 1 usd\n", "expected \"usd\"" },
		{ "price call 1 usd x\n", "usd must be a number" },
		{ "box-subnets 10.0.0.0 /28\n", "box-subnets: 10.0.0.0 is not"
		    " an IPv4 network" },
		{ "box-subnets 10.0.0.1/16 /28\n", "has host bits set" },
		{ "box-subnets 10.0.0.0/16 /16\n", "longer than /16 and at"
		    " most /30" },
		{ "box-subnets 10.0.0.0/16 28\n", "must be /N" },
		{ "box-subnets 10.0.0.0/4 /28\n", "must be from 8 to 28" },
		{ "box-subnets ::/64 /96\n", "is not an IPv4 network" },
		{ "tenant a plan gold\n", "test.conf:1: tenant a: unknown plan"
		    " \"gold\" (free, pro or max)" },
		{ "tenant a plan\n", "tenant takes 3 to 5 arguments, not 2" },
		{ "tenant a tier free\n", "tenant a: expected \"plan\"" },
		{ "tenant a plan free credits\n", "tenant a: expected"
		    " \"plan\" and a plan" },
		{ "tenant a plan free bonus 3\n", "tenant a: expected"
		    " \"credits\" after the plan, found \"bonus\"" },
		{ "tenant a plan free credits -1\n", "tenant a: credits must"
		    " be a whole number from 0" },
		{ "tenant a plan free credits 1.5\n", "credits must be a whole"
		    " number" },
		{ "tenant local plan max\n", "tenant local: the name \"local\""
		    " is reserved" },
		{ "tenant a/b plan max\n", "tenant a/b: a tenant name must be"
		    " 1 to 64" },
		{ "tenant a plan max\ntenant a plan free\n", "test.conf:2:"
		    " tenant a is given twice" },
		{ NULL, NULL }
	};
	struct cfg	*c;
	int		 i;

	for (i = 0; bad[i].text != NULL; i++) {
		c = cfg_new();
		if (parse(c, bad[i].text) != 1 ||
		    strstr(errbuf, bad[i].message) == NULL) {
			fprintf(stderr, "for %s wanted \"%s\", got: %s",
			    bad[i].text, bad[i].message, errbuf);
			return (1);
		}
		cfg_free(c);
	}
	return (0);
}

/* The tenant of each key and the tenants of each workspace root. */
static int
test_tenants(void)
{
	static const struct {
		const char	*key;
		const char	*tenant;
	} keys[] = {
		{ "alice", "alice" },		/* its own name */
		{ "bob", "blue" },
		{ "carol", "alice" },		/* grouped with alice */
		{ "Local", "Local" },		/* only "local" is reserved */
		{ "dave", "blue" },
		{ NULL, NULL }
	};
	static const struct {
		const char	*path;
		const char	*tenants;	/* joined; NULL: every tenant */
	} roots[] = {
		{ "/open", NULL },
		{ "/a", "alice" },
		{ "/b", "blue,alice" },		/* repeats dropped */
		{ "/with space", "x.y_z-1" },
		{ NULL, NULL }
	};
	struct cfg		*c = cfg_new();
	struct cfg_apikey	*k;
	struct cfg_word		*w, *t;
	char			 joined[256];
	int			 i;

	CHECK_INT(parse(c,
	    "api-key alice sha256:0000000000000000000000000000000000000000"
	    "000000000000000000000001 sets management,runtime\n"
	    "api-key bob sha256:0000000000000000000000000000000000000000"
	    "000000000000000000000002 sets runtime tenant blue\n"
	    "api-key carol sha256:000000000000000000000000000000000000000"
	    "0000000000000000000000003 sets runtime tenant alice\n"
	    "api-key Local sha256:000000000000000000000000000000000000000"
	    "0000000000000000000000004 sets runtime\n"
	    "api-key dave sha256:0000000000000000000000000000000000000000"
	    "000000000000000000000005 sets runtime   tenant   blue  # team\n"
	    "workspace-root /open\n"
	    "workspace-root /a/ tenants alice\n"
	    "workspace-root /b tenants blue,alice,blue\n"
	    "workspace-root \"/with space\" tenants x.y_z-1\n"), 0);
	k = TAILQ_FIRST(&c->apikeys);
	for (i = 0; keys[i].key != NULL; i++) {
		CHECK(k != NULL);
		CHECK_STR(k->name, keys[i].key);
		CHECK_STR(k->tenant, keys[i].tenant);
		k = TAILQ_NEXT(k, entry);
	}
	CHECK(k == NULL);
	w = TAILQ_FIRST(&c->roots);
	for (i = 0; roots[i].path != NULL; i++) {
		CHECK(w != NULL);
		CHECK_STR(w->word, roots[i].path);
		if (roots[i].tenants == NULL)
			CHECK(w->tenants == NULL);
		else {
			CHECK(w->tenants != NULL);
			joined[0] = '\0';
			TAILQ_FOREACH(t, w->tenants, entry) {
				if (joined[0] != '\0')
					strlcat(joined, ",", sizeof joined);
				strlcat(joined, t->word, sizeof joined);
			}
			CHECK_STR(joined, roots[i].tenants);
		}
		w = TAILQ_NEXT(w, entry);
	}
	CHECK(w == NULL);
	cfg_free(c);
	return (0);
}

/* Who sees what: the local operator everything, a tenant its own. */
static int
test_tenant_sees(void)
{
	static const struct {
		const char	*caller;
		const char	*owner;
		int		 sees;
	} cases[] = {
		{ "local", "local", 1 },
		{ "local", "alice", 1 },
		{ "alice", "alice", 1 },
		{ "alice", "bob", 0 },
		{ "alice", "local", 0 },	/* records before tenants */
		{ "alice", "Alice", 0 },
		{ "alice", "alice2", 0 },
		{ NULL, NULL, 0 }
	};
	cJSON	*rec;
	int	 i;

	for (i = 0; cases[i].caller != NULL; i++) {
		if (util_tenant_sees(cases[i].caller, cases[i].owner) !=
		    cases[i].sees) {
			fprintf(stderr, "%s sees %s: wanted %d\n",
			    cases[i].caller, cases[i].owner, cases[i].sees);
			return (1);
		}
	}
	rec = cJSON_Parse("{\"id\": \"sbox-0\"}");
	CHECK_STR(sandbox_record_tenant(rec), "local");
	cJSON_AddStringToObject(rec, "tenant", "blue");
	CHECK_STR(sandbox_record_tenant(rec), "blue");
	cJSON_Delete(rec);
	CHECK_STR(auth_tenant(NULL), "local");
	CHECK(util_tenant_name_valid("a.b_c-D9"));
	CHECK(!util_tenant_name_valid(""));
	CHECK(!util_tenant_name_valid("a/b"));
	CHECK(!util_tenant_name_valid("a b"));
	CHECK(util_tenant_name_valid("x123456789012345678901234567890123456"
	    "789012345678901234567890123"));
	CHECK(!util_tenant_name_valid("x1234567890123456789012345678901234567"
	    "890123456789012345678901234"));
	return (0);
}

static int
test_counts_every_error(void)
{
	struct cfg	*c = cfg_new();

	CHECK_INT(parse(c, "a\nstate-dir /ok\nb\nc\n"), 3);
	CHECK(strstr(errbuf, "test.conf:1:") != NULL);
	CHECK(strstr(errbuf, "test.conf:3:") != NULL);
	CHECK(strstr(errbuf, "test.conf:4:") != NULL);
	CHECK_STR(c->state_dir, "/ok");
	cfg_free(c);
	return (0);
}

static int
test_sizes_and_sets(void)
{
	long long	 v;
	int		 sets = 0;
	char		*cause = NULL;

	CHECK(cfg_parse_size("512", &v) == 0 && v == 512);
	CHECK(cfg_parse_size("64K", &v) == 0 && v == 65536);
	CHECK(cfg_parse_size("2g", &v) == 0 && v == 2147483648LL);
	CHECK(cfg_parse_size("", &v) == -1);
	CHECK(cfg_parse_size("M", &v) == -1);
	CHECK(cfg_parse_size("-1", &v) == -1);
	CHECK(cfg_parse_size("99999999999999999999", &v) == -1);
	CHECK(cfg_parse_sets("management,runtime", &sets, &cause) == 0);
	CHECK_INT(sets, TOOLSET_MANAGEMENT | TOOLSET_RUNTIME);
	CHECK(cfg_parse_sets("all", &sets, &cause) == -1);
	CHECK(strstr(cause, "refused") != NULL);
	free(cause);
	return (0);
}

/* The disk cap: a default, none, and the last value winning. */
static int
test_profile_disk(void)
{
	struct cfg	*c;

	c = cfg_new();
	CHECK_INT(c->profile.disk, 10LL * 1024 * 1024 * 1024);
	CHECK_INT(parse(c, "profile disk none\n"), 0);
	CHECK_INT(c->profile.disk, 0);
	CHECK_INT(parse(c, "profile pids 64 disk 16M\nprofile cpus 2\n"), 0);
	CHECK_INT(c->profile.disk, 16LL * 1024 * 1024);
	CHECK_INT(c->profile.pids, 64);
	cfg_free(c);
	return (0);
}

static int
test_nul_and_long_lines(void)
{
	struct cfg	*c = cfg_new();
	char		*big;
	char		 withnul[] = "state-dir /a\0b\n";

	big = malloc(6000);
	memset(big, 'x', 5998);
	big[5998] = '\n';
	big[5999] = '\0';
	CHECK_INT(parse(c, big), 1);
	CHECK(strstr(errbuf, "longer than") != NULL);
	free(big);
	CHECK_INT(cfg_parse_buffer(c, "t", withnul, sizeof withnul - 1), 1);
	cfg_free(c);
	return (0);
}

/* A configuration with one api-key line: NAME for KEY, granting SETS. */
static struct cfg *
key_cfg(const char *name, const char *key, const char *sets)
{
	struct cfg	*c = cfg_new();
	unsigned char	 hash[32];
	char		 hex[65], text[256];

	util_sha256(key, strlen(key), hash);
	util_hex(hash, sizeof hash, hex);
	snprintf(text, sizeof text, "api-key %s sha256:%s sets %s\n", name,
	    hex, sets);
	if (parse(c, text) != 0) {
		cfg_free(c);
		return (NULL);
	}
	return (c);
}

/*
 * A remembered key verdict never outlives a change of the key table: a
 * key removed, or changed, by a configuration read anew fails (or gets
 * its new grant) on its next lookup, though the memo holds its bytes.
 */
static int
test_key_memo(void)
{
	static const struct {
		const char	*conf_name;	/* NULL: keep the configuration */
		const char	*conf_key;
		const char	*conf_sets;
		const char	*presented;
		const char	*found;		/* NULL: refused */
		int		 sets;
		int		 remembered;
	} cases[] = {
		{ "a", "smcp_keyA", "management", "smcp_keyA", "a",
		    TOOLSET_MANAGEMENT, 1 },
		{ NULL, NULL, NULL, "smcp_keyA", "a", TOOLSET_MANAGEMENT, 1 },
		{ NULL, NULL, NULL, "smcp_keyB", NULL, 0, 0 },
		{ NULL, NULL, NULL, "smcp_keyA", "a", TOOLSET_MANAGEMENT, 1 },
		/* read anew without key A: revoked */
		{ "b", "smcp_keyB", "management", "smcp_keyA", NULL, 0, 0 },
		{ NULL, NULL, NULL, "smcp_keyB", "b", TOOLSET_MANAGEMENT, 1 },
		/* read anew: b's grant changed */
		{ "b", "smcp_keyB", "runtime", "smcp_keyB", "b",
		    TOOLSET_RUNTIME, 1 },
		/* read anew: b has another key */
		{ "b", "smcp_keyC", "runtime", "smcp_keyB", NULL, 0, 0 },
		{ NULL, NULL, NULL, "smcp_keyC", "b", TOOLSET_RUNTIME, 1 },
		{ NULL, NULL, NULL, NULL, NULL, 0, 0 }
	};
	struct cfg		*saved = cfg, *c = NULL;
	struct auth_memo	 m;
	const struct cfg_apikey	*k;
	char			 longkey[AUTH_MEMO_MAX + 8];
	int			 i;

	memset(&m, 0, sizeof m);
	for (i = 0; cases[i].presented != NULL; i++) {
		if (cases[i].conf_name != NULL) {
			cfg_free(c);
			c = key_cfg(cases[i].conf_name, cases[i].conf_key,
			    cases[i].conf_sets);
			CHECK(c != NULL);
			cfg = c;
		}
		k = auth_lookup_memo(&m, cases[i].presented);
		if (cases[i].found == NULL)
			CHECK(k == NULL);
		else {
			CHECK(k != NULL);
			CHECK_STR(k->name, cases[i].found);
			CHECK_INT(k->sets, cases[i].sets);
			CHECK(k == auth_lookup(cases[i].presented));
		}
		CHECK_INT(m.key != NULL, cases[i].remembered);
	}

	/* A key longer than the memo holds is checked every time. */
	memset(longkey, 'k', sizeof longkey - 1);
	longkey[sizeof longkey - 1] = '\0';
	cfg_free(c);
	c = key_cfg("long", longkey, "management");
	CHECK(c != NULL);
	cfg = c;
	k = auth_lookup_memo(&m, longkey);
	CHECK(k != NULL && strcmp(k->name, "long") == 0);
	CHECK(m.key == NULL);
	auth_memo_clear(&m);
	cfg = saved;
	cfg_free(c);
	return (0);
}

const struct unit_case unit_cfg_cases[] = {
	{ "cfg/full", test_full },
	{ "cfg/errors", test_errors },
	{ "cfg/tenants", test_tenants },
	{ "cfg/tenant-sees", test_tenant_sees },
	{ "cfg/counts-every-error", test_counts_every_error },
	{ "cfg/sizes-and-sets", test_sizes_and_sets },
	{ "cfg/nul-and-long-lines", test_nul_and_long_lines },
	{ "cfg/profile-disk", test_profile_disk },
	{ "cfg/key-memo", test_key_memo },
	{ NULL, NULL }
};
