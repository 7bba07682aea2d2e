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
 * MCP over stdio: one JSON-RPC message a line on stdin, one a line on
 * stdout, flushed per message. A line longer than the body limit is
 * answered with one error and skipped without being kept in memory. When
 * stdout backs up, or too many requests are in flight, reading stops
 * until it drains. End of stdin ends the session once every pending
 * request is answered and written.
 *
 * stdin or stdout may be a regular file (a scripted run); such a
 * descriptor cannot be polled, so it is read in slices from the loop or
 * written directly, which never blocks for long on a local file.
 */

#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "sandbox-mcp.h"
#include "surface.h"

#define STDIO_OUT_HIGH		(4 * 1024 * 1024)
#define STDIO_OUT_LOW		(1024 * 1024)
#define STDIO_MAX_PENDING	1024
#define STDIO_FILE_SLICE	(256 * 1024)

static struct {
	int			 active;
	struct mcp_session	*session;
	struct bufferevent	*in;
	struct bufferevent	*out;
	struct event		*file_ev;	/* stdin is a regular file */
	struct evbuffer		*file_buf;
	int			 out_file;	/* stdout is a regular file */
	int			 out_dead;
	int			 eof;
	int			 discarding;
	int			 paused;
	int			 processing;
	unsigned int		 pending;
	uint64_t		 lines;
} stdio;

static void	transport_stdio_process(void);
static void	transport_stdio_check_done(void);

int
transport_stdio_active(void)
{
	return (stdio.active);
}

static struct evbuffer *
transport_stdio_input(void)
{
	return (stdio.file_buf != NULL ? stdio.file_buf :
	    bufferevent_get_input(stdio.in));
}

/* Write one message as a line. */
static void
transport_stdio_send(cJSON *msg)
{
	char	*text;
	size_t	 len, off = 0;
	ssize_t	 n;

	if (stdio.out_dead)
		return;
	text = util_json_print(msg);
	len = strlen(text);
	text[len++] = '\n';	/* replaces the NUL; len is what we write */
	log_trace(TRACE_IO, "stdio out %zu bytes", len);
	if (stdio.out_file) {
		while (off < len) {
			n = write(STDOUT_FILENO, text + off, len - off);
			if (n == -1 && errno == EINTR)
				continue;
			if (n <= 0) {
				log_warn("stdout");
				stdio.out_dead = 1;
				break;
			}
			off += n;
		}
	} else
		bufferevent_write(stdio.out, text, len);
	free(text);
}

static void
transport_stdio_error(int code, const char *message, const cJSON *id)
{
	cJSON	*msg;

	msg = jsonrpc_error(id, code, "%s", message);
	transport_stdio_send(msg);
	cJSON_Delete(msg);
}

/* A line over the limit: refused with the id its head shows, if any. */
static void
transport_stdio_too_long(struct evbuffer *in, size_t len, size_t max)
{
	char	 msg[128];
	cJSON	*id;
	size_t	 head = len < 65536 ? len : 65536;

	snprintf(msg, sizeof msg, "invalid request: the message is longer"
	    " than the limit of %zu bytes", max);
	log_warnx("stdio: %s", msg);
	id = jsonrpc_peek_id((const char *)evbuffer_pullup(in, head), head);
	transport_stdio_error(JSONRPC_INVALID_REQUEST, msg, id);
	cJSON_Delete(id);
}

/* A notification of the server's own, between responses. */
static void
transport_stdio_push(cJSON *msg, void *arg)
{
	transport_stdio_send(msg);
}

static void
transport_stdio_reply_cb(struct mcp_reply *reply, cJSON *response, void *arg)
{
	if (response != NULL)
		transport_stdio_send(response);
	stdio.pending--;
	if (stdio.paused)
		transport_stdio_process();
	transport_stdio_check_done();
}

/* Whether reading must wait: output backed up or too much in flight. */
static int
transport_stdio_must_pause(void)
{
	if (stdio.pending >= STDIO_MAX_PENDING)
		return (1);
	if (!stdio.out_file && !stdio.out_dead &&
	    evbuffer_get_length(bufferevent_get_output(stdio.out)) >
	    STDIO_OUT_HIGH)
		return (1);
	return (0);
}

static void
transport_stdio_set_paused(int paused)
{
	if (stdio.paused == paused)
		return;
	stdio.paused = paused;
	log_trace(TRACE_IO, "stdio input %s", paused ? "paused" : "resumed");
	if (stdio.in != NULL) {
		if (paused)
			bufferevent_disable(stdio.in, EV_READ);
		else if (!stdio.eof)
			bufferevent_enable(stdio.in, EV_READ);
	}
	if (stdio.file_ev != NULL && !paused && !stdio.eof)
		event_active(stdio.file_ev, EV_READ, 1);
}

/* Hand one complete line (without its LF) to the protocol. */
static void
transport_stdio_line(const char *line, size_t len)
{
	size_t	i;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	for (i = 0; i < len; i++) {
		if (line[i] != ' ' && line[i] != '\t')
			break;
	}
	if (i == len)
		return;		/* blank line */
	stdio.lines++;
	stdio.pending++;
	mcp_receive(stdio.session, line, len, transport_stdio_reply_cb, NULL);
}

/* Take every complete line from the input, within the limits. */
static void
transport_stdio_process(void)
{
	struct evbuffer		*in = transport_stdio_input();
	struct evbuffer_ptr	 p;
	size_t			 eol, avail, max;

	if (stdio.processing)
		return;		/* a reply answered inside the loop below */
	stdio.processing = 1;
	max = (size_t)cfg_limit(LIMIT_MAX_BODY);
	for (;;) {
		if (transport_stdio_must_pause()) {
			transport_stdio_set_paused(1);
			break;
		}
		transport_stdio_set_paused(0);
		avail = evbuffer_get_length(in);
		if (avail == 0)
			break;
		p = evbuffer_search_eol(in, NULL, &eol, EVBUFFER_EOL_LF);
		if (stdio.discarding) {
			if (p.pos == -1) {
				evbuffer_drain(in, avail);
				break;
			}
			evbuffer_drain(in, p.pos + 1);
			stdio.discarding = 0;
			continue;
		}
		if (p.pos == -1) {
			if (avail <= max && !stdio.eof)
				break;
			if (avail <= max) {	/* last line, no LF */
				transport_stdio_line((const char *)
				    evbuffer_pullup(in, avail), avail);
				evbuffer_drain(in, avail);
				break;
			}
			transport_stdio_too_long(in, avail, max);
			evbuffer_drain(in, avail);
			stdio.discarding = 1;
			break;
		}
		if ((size_t)p.pos > max) {
			transport_stdio_too_long(in, (size_t)p.pos, max);
			evbuffer_drain(in, p.pos + 1);
			continue;
		}
		transport_stdio_line((const char *)evbuffer_pullup(in, p.pos),
		    p.pos);
		evbuffer_drain(in, p.pos + 1);
	}
	stdio.processing = 0;
	transport_stdio_check_done();
}

/* After end of input: finish once everything is answered and written. */
static void
transport_stdio_check_done(void)
{
	if (!stdio.active || !stdio.eof || stdio.pending != 0 ||
	    stdio.processing)
		return;
	if (evbuffer_get_length(transport_stdio_input()) != 0 &&
	    !stdio.discarding)
		return;
	if (!stdio.out_file && !stdio.out_dead &&
	    evbuffer_get_length(bufferevent_get_output(stdio.out)) != 0)
		return;
	log_debug("stdio session ended lines=%llu",
	    (unsigned long long)stdio.lines);
	stdio.active = 0;
	mcp_session_free(stdio.session);
	stdio.session = NULL;
	if (stdio.in != NULL)
		bufferevent_free(stdio.in);
	if (stdio.out != NULL)
		bufferevent_free(stdio.out);
	if (stdio.file_ev != NULL)
		event_free(stdio.file_ev);
	if (stdio.file_buf != NULL)
		evbuffer_free(stdio.file_buf);
	stdio.in = stdio.out = NULL;
	stdio.file_ev = NULL;
	stdio.file_buf = NULL;
	proc_release();
}

static void
transport_stdio_read_cb(struct bufferevent *bev, void *arg)
{
	transport_stdio_process();
}

static void
transport_stdio_in_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & BEV_EVENT_ERROR)
		log_warn("stdin");
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		stdio.eof = 1;
		bufferevent_disable(bev, EV_READ);
		transport_stdio_process();
		transport_stdio_check_done();
	}
}

static void
transport_stdio_write_cb(struct bufferevent *bev, void *arg)
{
	if (stdio.paused)
		transport_stdio_process();
	transport_stdio_check_done();
}

static void
transport_stdio_out_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & BEV_EVENT_ERROR) {
		log_warn("stdout");
		stdio.out_dead = 1;
		evbuffer_drain(bufferevent_get_output(bev),
		    evbuffer_get_length(bufferevent_get_output(bev)));
		bufferevent_disable(bev, EV_WRITE);
		stdio.eof = 1;	/* nobody hears us: stop reading */
		if (stdio.in != NULL)
			bufferevent_disable(stdio.in, EV_READ);
		transport_stdio_check_done();
	}
}

/* stdin is a regular file: read a slice per loop iteration. */
static void
transport_stdio_file_cb(evutil_socket_t fd, short events, void *arg)
{
	int	n;

	if (stdio.paused || stdio.eof)
		return;
	n = evbuffer_read(stdio.file_buf, STDIN_FILENO, STDIO_FILE_SLICE);
	if (n <= 0) {
		if (n < 0)
			log_warn("stdin");
		stdio.eof = 1;
	}
	transport_stdio_process();
	if (!stdio.eof && !stdio.paused && stdio.file_ev != NULL)
		event_active(stdio.file_ev, EV_READ, 1);
	transport_stdio_check_done();
}

static int
transport_stdio_pollable(int fd)
{
	struct stat	st;

	if (fstat(fd, &st) != 0)
		return (0);
	return (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}

/*
 * Serve MCP on stdin and stdout for a peer granted sets, acting for
 * tenant (TENANT_LOCAL: the local operator, who sees every tenant's
 * sandboxes).
 */
void
transport_stdio_start(int sets, const char *tenant)
{
	memset(&stdio, 0, sizeof stdio);
	stdio.active = 1;
	proc_hold();
	stdio.session = mcp_session_new(MCP_TRANSPORT_STDIO, sets, NULL,
	    tenant);
	mcp_session_set_push(stdio.session, transport_stdio_push, NULL);

	if (transport_stdio_pollable(STDOUT_FILENO)) {
		util_set_nonblock(STDOUT_FILENO);
		stdio.out = bufferevent_socket_new(ev_base, STDOUT_FILENO, 0);
		if (stdio.out == NULL)
			fatalx("%s: bufferevent_socket_new", __func__);
		bufferevent_setcb(stdio.out, NULL, transport_stdio_write_cb,
		    transport_stdio_out_event_cb, NULL);
		bufferevent_setwatermark(stdio.out, EV_WRITE, STDIO_OUT_LOW, 0);
		bufferevent_enable(stdio.out, EV_WRITE);
	} else
		stdio.out_file = 1;

	if (transport_stdio_pollable(STDIN_FILENO)) {
		util_set_nonblock(STDIN_FILENO);
		stdio.in = bufferevent_socket_new(ev_base, STDIN_FILENO, 0);
		if (stdio.in == NULL)
			fatalx("%s: bufferevent_socket_new", __func__);
		bufferevent_setcb(stdio.in, transport_stdio_read_cb, NULL,
		    transport_stdio_in_event_cb, NULL);
		if (bufferevent_enable(stdio.in, EV_READ) != 0)
			fatalx("cannot watch stdin");
	} else {
		if ((stdio.file_buf = evbuffer_new()) == NULL)
			fatalx("%s: evbuffer_new", __func__);
		stdio.file_ev = event_new(ev_base, -1, 0,
		    transport_stdio_file_cb, NULL);
		if (stdio.file_ev == NULL)
			fatalx("%s: event_new", __func__);
		event_active(stdio.file_ev, EV_READ, 1);
	}
	log_debug("stdio session started sets=0x%x", sets);
}
