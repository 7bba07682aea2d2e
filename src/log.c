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
 * Logging for the whole program. Lines go to stderr (the normal case: a
 * stdio MCP server's host or a service manager collects them) or to
 * syslog; stdout is never touched because it carries the protocol. Every
 * function keeps errno as it found it.
 */

#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int	log_to_syslog;
static int	log_verbose;
int		log_tracing;

/* Choose the destination and the verbosity. */
void
log_init(int use_syslog, int verbose)
{
	log_to_syslog = use_syslog;
	log_verbose = verbose;
	if (log_to_syslog)
		openlog("sandbox-mcp", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	tzset();
}

void
log_setverbose(int v)
{
	log_verbose = v;
}

int
log_getverbose(void)
{
	return (log_verbose);
}

/*
 * A message made one line of text whatever it quotes: control bytes (line
 * breaks, escape sequences) and the Unicode controls and line separators
 * in UTF-8 (U+0080-U+009F, U+2028, U+2029) become \xHH, so that a peer's
 * bytes in a message can neither start a line of their own nor drive a
 * terminal.
 */
static void
log_clean(const char *in, char *out, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*p = (const unsigned char *)in;
	size_t			 o = 0, n, i;

	while (*p != '\0') {
		n = 0;
		if (*p < 0x20 || *p == 0x7f)
			n = 1;
		else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			n = 2;
		else if (p[0] == 0xe2 && p[1] == 0x80 &&
		    (p[2] == 0xa8 || p[2] == 0xa9))
			n = 3;
		if (n == 0) {
			if (o + 1 >= len)
				break;
			out[o++] = (char)*p++;
			continue;
		}
		if (o + 4 * n >= len)
			break;
		for (i = 0; i < n; i++, p++) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 0xf];
		}
	}
	out[o] = '\0';
}

/* Write one line at a priority. */
void
vlog(int pri, const char *fmt, va_list ap)
{
	char		 raw[8192], buf[8192];
	int		 saved = errno;

	vsnprintf(raw, sizeof raw, fmt, ap);
	log_clean(raw, buf, sizeof buf);
	if (log_to_syslog) {
		syslog(pri, "%s", buf);
	} else {
		struct timespec	ts;
		struct tm	tm;
		char		tbuf[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(tbuf, sizeof tbuf, "%Y-%m-%dT%H:%M:%S", &tm);
		dprintf(STDERR_FILENO, "%s.%03ldZ sandbox-mcp[%ld]: %s\n",
		    tbuf, ts.tv_nsec / 1000000, (long)getpid(), buf);
	}
	errno = saved;
}

void
logit(int pri, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vlog(pri, fmt, ap);
	va_end(ap);
}

/* Log a warning followed by the text of errno. */
void
log_warn(const char *fmt, ...)
{
	char	*nfmt;
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	if (fmt == NULL)
		vlog(LOG_ERR, strerror(saved), ap);
	else if (asprintf(&nfmt, "%s: %s", fmt, strerror(saved)) == -1)
		vlog(LOG_ERR, fmt, ap);
	else {
		vlog(LOG_ERR, nfmt, ap);
		free(nfmt);
	}
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vlog(LOG_ERR, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	if (log_verbose < 0)
		return;
	va_start(ap, fmt);
	vlog(LOG_INFO, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	if (log_verbose < 1 && log_tracing == 0)
		return;
	va_start(ap, fmt);
	vlog(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

static __dead void
vfatalc(int code, const char *fmt, va_list ap)
{
	char	buf[4096];

	vsnprintf(buf, sizeof buf, fmt, ap);
	if (code != 0)
		logit(LOG_CRIT, "fatal: %s: %s", buf, strerror(code));
	else
		logit(LOG_CRIT, "fatal: %s", buf);
	exit(1);
}

/* A broken invariant or a start-up failure, with errno's text. */
void
fatal(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vfatalc(errno, fmt, ap);
	va_end(ap);
}

/* A broken invariant or a start-up failure. */
void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vfatalc(0, fmt, ap);
	va_end(ap);
}
