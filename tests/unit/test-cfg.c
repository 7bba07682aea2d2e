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

#include "sandbox-mcp.h"
#include "unit.h"

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
	    "profile cpus 1.5 memory-high 384M memory-max 1G pids 300\n"
	    "profile disk 64M\n"
	    "limit max-body 8M\n"
	    "limit idle-timeout 2m\n"
	    "\n\t  \n"), 0);
	CHECK_STR(c->state_dir, "/var/tmp/state");
	CHECK_STR(c->docker_socket, "/run/docker.sock");
	w = TAILQ_FIRST(&c->roots);
	CHECK_STR(w->word, "/srv/workspaces");
	CHECK_STR(TAILQ_NEXT(w, entry)->word, "/srv/with space");
	CHECK_STR(c->listen, "127.0.0.1:8080");
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

const struct unit_case unit_cfg_cases[] = {
	{ "cfg/full", test_full },
	{ "cfg/errors", test_errors },
	{ "cfg/counts-every-error", test_counts_every_error },
	{ "cfg/sizes-and-sets", test_sizes_and_sets },
	{ "cfg/nul-and-long-lines", test_nul_and_long_lines },
	{ "cfg/profile-disk", test_profile_disk },
	{ NULL, NULL }
};
