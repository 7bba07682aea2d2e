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
 * Runs the unit cases: all of them, or those whose name starts with an
 * argument ("http/" runs the group). With -l, lists the names. Prints one
 * line per case and exits non-zero when any failed.
 */

#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "unit.h"

static const struct unit_case *unit_groups[] = {
	unit_http_cases,
	unit_jsonrpc_cases,
	unit_cfg_cases,
	unit_op_cases,
	unit_docker_cases,
	unit_util_cases,
	unit_transcript_cases,
	unit_gitignore_cases,
	unit_merge_cases,
	unit_files_cases,
	unit_job_cases,
	unit_rest_cases,
	unit_nsexec_cases,
	unit_layer_cases,
	unit_fold_cases,
	unit_store_cases,
};

static char	unit_state[] = "/tmp/sandbox-mcp-unit.XXXXXX";

/*
 * Build a tree from a list of lines under top: "d path" a directory,
 * "o path" an opaque one, "f path text" a file, "w path" a whiteout
 * (char device 0:0), "l path target" a symlink, "p path" a FIFO.
 */
int
unit_tree_build(const char *top, const char **spec)
{
	char		 path[PATH_MAX], kind, *arg;
	const char	*s, *sp;
	FILE		*f;
	size_t		 n;

	for (; *spec != NULL; spec++) {
		s = *spec;
		kind = s[0];
		sp = strchr(s + 2, ' ');
		n = sp != NULL ? (size_t)(sp - (s + 2)) : strlen(s + 2);
		snprintf(path, sizeof path, "%s/%.*s", top, (int)n, s + 2);
		arg = sp != NULL ? (char *)sp + 1 : NULL;
		switch (kind) {
		case 'd':
		case 'o':
			if (mkdir(path, 0755) != 0)
				goto fail;
			if (kind == 'o' && lsetxattr(path,
			    "trusted.overlay.opaque", "y", 1, 0) != 0)
				goto fail;
			break;
		case 'f':
			if ((f = fopen(path, "w")) == NULL)
				goto fail;
			fputs(arg != NULL ? arg : "", f);
			if (fclose(f) != 0)
				goto fail;
			break;
		case 'w':
			if (mknod(path, S_IFCHR | 0, makedev(0, 0)) != 0)
				goto fail;
			break;
		case 'l':
			if (symlink(arg, path) != 0)
				goto fail;
			break;
		case 'p':
			if (mkfifo(path, 0644) != 0)
				goto fail;
			break;
		default:
			fprintf(stderr, "bad line: %s\n", s);
			return (-1);
		}
	}
	return (0);
fail:
	fprintf(stderr, "%s: %s\n", *spec, strerror(errno));
	return (-1);
}

int
unit_tree_remove(const char *top)
{
	char	cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof cmd, "rm -rf %s", top);
	return (system(cmd));
}

/* A configuration and loop for cases that need the program's globals. */
void
unit_setup(void)
{
	if (cfg != NULL)
		return;
	if (mkdtemp(unit_state) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
	util_json_init();
	cfg = cfg_new();
	free(cfg->state_dir);
	cfg->state_dir = xstrdup(unit_state);
	telemetry_init();
	if ((ev_base = event_base_new()) == NULL) {
		fprintf(stderr, "event_base_new failed\n");
		exit(1);
	}
}

static int
unit_selected(const char *name, int argc, char **argv)
{
	int	i;

	if (argc == 0)
		return (1);
	for (i = 0; i < argc; i++) {
		if (strncmp(name, argv[i], strlen(argv[i])) == 0)
			return (1);
	}
	return (0);
}

int
main(int argc, char **argv)
{
	const struct unit_case	*c;
	size_t			 g;
	int			 list = 0, passed = 0, failed = 0, ch;
	char			 cmd[128];

	while ((ch = getopt(argc, argv, "l")) != -1) {
		switch (ch) {
		case 'l':
			list = 1;
			break;
		default:
			fprintf(stderr, "usage: unit [-l] [prefix ...]\n");
			return (2);
		}
	}
	argc -= optind;
	argv += optind;
	log_init(0, -1);
	unit_setup();
	for (g = 0; g < sizeof unit_groups / sizeof unit_groups[0]; g++) {
		for (c = unit_groups[g]; c->name != NULL; c++) {
			if (!unit_selected(c->name, argc, argv))
				continue;
			if (list) {
				printf("%s\n", c->name);
				continue;
			}
			if (c->fn() == 0) {
				printf("ok %s\n", c->name);
				passed++;
			} else {
				printf("FAIL %s\n", c->name);
				failed++;
			}
		}
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", unit_state);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", unit_state);
	if (!list)
		printf("%d passed, %d failed\n", passed, failed);
	return (failed == 0 ? 0 : 1);
}
