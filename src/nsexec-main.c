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
 * sandbox-mcp-nsexec: the zygote program. Linked statically from
 * nsexec.c (the zygote's half) and the few files it needs, and run by
 * the server from a sealed memfd (nsexec_zygote_exec), never installed
 * or run by hand:
 *
 *	NAME PID ROOT NCGROUP CGROUP... NLOWER LOWER...
 *
 * with fd 4 the state directory, fd 5 the zygote's control socket and
 * fd 6 the command filter (a memfd of BPF instructions). Anything else
 * is not the server speaking: exit 125 at once.
 */

#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox-mcp.h"

/* A count of the arguments, at most what is left of them. */
static int
nsexec_main_count(const char *s, int left, size_t *n)
{
	const char	*errstr;
	long long	 v;

	v = strtonum(s, 0, left, &errstr);
	if (errstr != NULL)
		return (-1);
	*n = (size_t)v;
	return (0);
}

int
main(int argc, char **argv)
{
	struct nsexec_zygote	 z;
	const char		*errstr;
	char			**args;
	int			 i;

	memset(&z, 0, sizeof z);
	if (argc < 5 || nsexec_filter_read(6) != 0)
		return (125);
	close(6);
	/* The zygote blanks its command line: keep copies of it. */
	args = xcalloc(argc + 1, sizeof *args);
	for (i = 0; i < argc; i++)
		args[i] = xstrdup(argv[i]);
	i = 1;
	z.container_pid = (pid_t)strtonum(args[i++], 1, INT_MAX, &errstr);
	if (errstr != NULL)
		return (125);
	z.root = *args[i] != '\0' ? args[i] : NULL;
	i++;
	if (nsexec_main_count(args[i], argc - i - 2, &z.ncgroup) != 0)
		return (125);
	z.cgroup_procs = &args[++i];
	i += z.ncgroup;
	if (nsexec_main_count(args[i], argc - i - 1, &z.nroot_lower) != 0 ||
	    i + 1 + (int)z.nroot_lower != argc)
		return (125);
	z.root_lower = &args[++i];
	/* The arguments lie end to end from argv[0]: the name to blank. */
	z.argv0 = argv[0];
	z.argv_len = argv[argc - 1] + strlen(argv[argc - 1]) + 1 - argv[0];
	return (nsexec_zygote(&z, -1));
}
