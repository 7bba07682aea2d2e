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
 * The Docker Engine client against a scripted peer on a unix socket in
 * this process: whole replies, chunked replies, and the faults a real
 * Engine does not produce on demand (truncated, garbage, oversized and
 * silent replies, no listener at all); streams (GET /events) handed over
 * line by line, however the lines fall into chunks, for longer than any
 * single reply may be, each line bounded.
 */

#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "engine.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "unit.h"

struct peer {
	int		 lfd;
	struct event	*ev;
	const char	*reply;		/* NULL: never answer */
	int		 cfd;
};

static struct {
	int		 done;
	int		 status;
	char		*error;
	char		*body;
} result;

static void
peer_accept_cb(evutil_socket_t fd, short events, void *arg)
{
	struct peer	*p = arg;

	p->cfd = accept(fd, NULL, NULL);
	if (p->cfd == -1)
		return;
	/*
	 * Answer at once and end the stream; the request is left unread
	 * (closing with it unread would reset the connection).
	 */
	if (p->reply != NULL) {
		if (write(p->cfd, p->reply, strlen(p->reply)) == -1)
			perror("peer write");
		shutdown(p->cfd, SHUT_WR);
	}
}

static void
client_cb(struct docker_req *req, void *arg)
{
	struct evbuffer	*b;
	size_t		 len;

	result.done = 1;
	result.status = docker_http_status(req);
	free(result.error);
	free(result.body);
	result.error = docker_http_error(req) != NULL ?
	    xstrdup(docker_http_error(req)) : NULL;
	result.body = NULL;
	if ((b = docker_http_body(req)) != NULL) {
		len = evbuffer_get_length(b);
		result.body = xmalloc(len + 1);
		evbuffer_remove(b, result.body, len);
		result.body[len] = '\0';
	}
	event_base_loopexit(ev_base, NULL);
}

/* Run one request against a peer answering reply (NULL: silent). */
static void
exchange(const char *reply, int listen_at_all)
{
	struct sockaddr_un	 sun;
	struct peer		 p;
	char			 path[] = "/tmp/unit-docker-XXXXXX";
	int			 fd;

	unit_setup();
	memset(&p, 0, sizeof p);
	p.cfd = -1;
	p.reply = reply;
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	free(cfg->docker_socket);
	cfg->docker_socket = xstrdup(path);
	if (listen_at_all) {
		memset(&sun, 0, sizeof sun);
		sun.sun_family = AF_UNIX;
		strlcpy(sun.sun_path, path, sizeof sun.sun_path);
		p.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (bind(p.lfd, (struct sockaddr *)&sun, sizeof sun) != 0 ||
		    listen(p.lfd, 4) != 0)
			perror("peer");
		p.ev = event_new(ev_base, p.lfd, EV_READ | EV_PERSIST,
		    peer_accept_cb, &p);
		event_add(p.ev, NULL);
	}
	free(result.error);
	free(result.body);
	memset(&result, 0, sizeof result);
	docker_http_request("GET", "/images/json", NULL, NULL, 0, 64,
	    client_cb, NULL);
	event_base_dispatch(ev_base);
	if (listen_at_all) {
		event_free(p.ev);
		close(p.lfd);
		if (p.cfd != -1)
			close(p.cfd);
	}
	unlink(path);
}

static int
test_whole(void)
{
	exchange("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Content-Length: 2\r\n\r\n[]", 1);
	CHECK(result.done);
	CHECK(result.error == NULL);
	CHECK_INT(result.status, 200);
	CHECK_STR(result.body, "[]");
	return (0);
}

static int
test_chunked(void)
{
	exchange("HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n", 1);
	CHECK(result.error == NULL);
	CHECK_INT(result.status, 404);
	CHECK_STR(result.body, "{\"a\":1}");
	return (0);
}

static int
test_truncated(void)
{
	exchange("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n[1,2", 1);
	CHECK_STR(result.error,
	    "the connection closed before a complete reply");
	return (0);
}

static int
test_garbage(void)
{
	exchange("SSH-2.0-OpenSSH_9.2\r\n\r\n", 1);
	CHECK(result.error != NULL &&
	    strncmp(result.error, "malformed reply", 15) == 0);
	return (0);
}

static int
test_oversized(void)
{
	exchange("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", 1);
	CHECK_STR(result.error, "the reply is larger than 64 bytes");
	return (0);
}

static int
test_no_listener(void)
{
	exchange(NULL, 0);
	CHECK_STR(result.error, "No such file or directory");
	return (0);
}

static int
test_silent(void)
{
	long long	saved = cfg->limits[LIMIT_DOCKER_TIMEOUT];
	uint64_t	start = mono_us();

	cfg->limits[LIMIT_DOCKER_TIMEOUT] = 1;
	exchange(NULL, 1);
	cfg->limits[LIMIT_DOCKER_TIMEOUT] = saved;
	CHECK_STR(result.error, "no complete reply within 1 s");
	CHECK(mono_us() - start >= 900000);
	return (0);
}

static int
test_image_references(void)
{
	cJSON	*reply, *refs;
	char	*text;

	reply = cJSON_Parse("["
	    "{\"Id\":\"sha256:bbb\",\"RepoTags\":[\"z:1\",\"a:1\"],"
	    "\"RepoDigests\":[\"a@sha256:d1\"]},"
	    "{\"Id\":\"sha256:ccc\",\"RepoTags\":[\"<none>:<none>\"],"
	    "\"RepoDigests\":[\"<none>@<none>\"]},"
	    "{\"Id\":\"sha256:ddd\",\"RepoTags\":null,"
	    "\"RepoDigests\":[\"m@sha256:d2\"]},"
	    "{\"Id\":\"sha256:eee\",\"RepoTags\":[\"a:1\"]}"
	    "]");
	refs = docker_image_references(reply);
	text = util_json_print(refs);
	CHECK_STR(text, "[\"a:1\",\"a@sha256:d1\",\"m@sha256:d2\","
	    "\"sha256:ccc\",\"sha256:ddd\",\"z:1\"]");
	free(text);
	cJSON_Delete(refs);
	cJSON_Delete(reply);
	reply = cJSON_Parse("{\"message\":\"x\"}");
	CHECK(docker_image_references(reply) == NULL);
	cJSON_Delete(reply);
	return (0);
}

/*
 * Streams. The peer sends its script through a bufferevent (it may be
 * larger than the socket's buffer), then ends the stream or holds it.
 */
struct stream_peer {
	int			 lfd;
	struct event		*ev;
	struct bufferevent	*bev;
	struct evbuffer		*script;	/* NULL: never answer */
	int			 hold;		/* keep the stream open */
};

static struct {
	int		 done;
	int		 up;
	int		 status;
	char		*error;
	char		*body;
	size_t		 lines;
	size_t		 bytes;
	char		*first;
	char		*last;
} stream;
static size_t	stream_cancel_after;	/* 0: never */

static void
stream_peer_write_cb(struct bufferevent *bev, void *arg)
{
	struct stream_peer	*p = arg;

	if (!p->hold && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		shutdown(bufferevent_getfd(bev), SHUT_WR);
}

static void
stream_peer_accept_cb(evutil_socket_t fd, short events, void *arg)
{
	struct stream_peer	*p = arg;
	int			 cfd;

	if ((cfd = accept(fd, NULL, NULL)) == -1 || p->bev != NULL)
		return;
	p->bev = bufferevent_socket_new(ev_base, cfd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(p->bev, NULL, stream_peer_write_cb, NULL, p);
	if (p->script != NULL) {
		bufferevent_write_buffer(p->bev, p->script);
		bufferevent_enable(p->bev, EV_WRITE);
	}
}

static void
stream_line_cb(struct docker_req *req, const char *line, size_t len,
    void *arg)
{
	if (line == NULL) {
		stream.up++;
		return;
	}
	if (strlen(line) != len)
		stream.bytes = (size_t)-1;	/* must not happen */
	if (stream.lines++ == 0)
		stream.first = xstrdup(line);
	free(stream.last);
	stream.last = xstrdup(line);
	stream.bytes += len;
	if (stream_cancel_after != 0 && stream.lines == stream_cancel_after) {
		docker_http_cancel(req);
		event_base_loopexit(ev_base, NULL);
	}
}

static void
stream_done_cb(struct docker_req *req, void *arg)
{
	struct evbuffer	*b;
	size_t		 len;

	stream.done = 1;
	stream.status = docker_http_status(req);
	stream.error = docker_http_error(req) != NULL ?
	    xstrdup(docker_http_error(req)) : NULL;
	if ((b = docker_http_body(req)) != NULL &&
	    (len = evbuffer_get_length(b)) != 0) {
		stream.body = xmalloc(len + 1);
		evbuffer_remove(b, stream.body, len);
		stream.body[len] = '\0';
	}
	event_base_loopexit(ev_base, NULL);
}

/* Open a stream against a peer sending script (NULL: silent). */
static void
stream_run(struct evbuffer *script, int hold, size_t max_line)
{
	struct sockaddr_un	 sun;
	struct stream_peer	 p;
	char			 path[] = "/tmp/unit-docker-XXXXXX";
	int			 fd;

	unit_setup();
	signal(SIGPIPE, SIG_IGN);	/* the client may leave first */
	free(stream.error);
	free(stream.body);
	free(stream.first);
	free(stream.last);
	memset(&stream, 0, sizeof stream);
	memset(&p, 0, sizeof p);
	p.script = script;
	p.hold = hold;
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	free(cfg->docker_socket);
	cfg->docker_socket = xstrdup(path);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strlcpy(sun.sun_path, path, sizeof sun.sun_path);
	p.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(p.lfd, (struct sockaddr *)&sun, sizeof sun) != 0 ||
	    listen(p.lfd, 4) != 0)
		perror("peer");
	p.ev = event_new(ev_base, p.lfd, EV_READ | EV_PERSIST,
	    stream_peer_accept_cb, &p);
	event_add(p.ev, NULL);
	docker_http_stream("/events", max_line, stream_line_cb,
	    stream_done_cb, NULL);
	event_base_dispatch(ev_base);
	/* Let a cancelled request be freed. */
	event_base_loop(ev_base, EVLOOP_NONBLOCK);
	if (p.bev != NULL)
		bufferevent_free(p.bev);
	event_free(p.ev);
	close(p.lfd);
	unlink(path);
	if (script != NULL)
		evbuffer_free(script);
}

static struct evbuffer *
stream_script(const char *head)
{
	struct evbuffer	*b;

	b = evbuffer_new();
	evbuffer_add_printf(b, "%s", head != NULL ? head :
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	return (b);
}

static void
stream_chunk(struct evbuffer *b, const char *data)
{
	evbuffer_add_printf(b, "%zx\r\n%s\r\n", strlen(data), data);
}

/* Lines cut anywhere by the chunks; CRLF and empty lines. */
static int
test_stream_lines(void)
{
	struct evbuffer	*b;

	b = stream_script(NULL);
	stream_chunk(b, "{\"a\":1}\n");
	stream_chunk(b, "{\"b\":");
	stream_chunk(b, "2}\r\n\n{\"c\":3}\n{\"d\"");
	stream_chunk(b, ":4}\n");
	evbuffer_add_printf(b, "0\r\n\r\n");
	stream_run(b, 0, 64);
	CHECK(stream.done);
	CHECK_INT(stream.up, 1);
	CHECK_INT(stream.lines, 4);
	CHECK_STR(stream.first, "{\"a\":1}");
	CHECK_STR(stream.last, "{\"d\":4}");
	CHECK_INT(stream.bytes, 28);
	CHECK_INT(stream.status, 200);
	CHECK_STR(stream.error, "the Docker Engine ended the stream");
	return (0);
}

/*
 * Far more than a reply may hold, in more chunks than a head may count:
 * the limits bound one line, not the stream.
 */
static int
test_stream_long(void)
{
	struct evbuffer	*b;
	char		 line[64];
	int		 i;

	b = stream_script(NULL);
	for (i = 0; i < 50000; i++) {
		snprintf(line, sizeof line, "{\"event\":%d}\n", i);
		stream_chunk(b, line);
	}
	stream_run(b, 0, 64);
	CHECK_INT(stream.up, 1);
	CHECK_INT(stream.lines, 50000);
	CHECK_STR(stream.first, "{\"event\":0}");
	CHECK_STR(stream.last, "{\"event\":49999}");
	CHECK_STR(stream.error, "the Docker Engine ended the stream");
	return (0);
}

/* A line over the bound ends the stream, in one chunk or several. */
static int
test_stream_too_long(void)
{
	struct evbuffer	*b;
	char		 big[201];

	memset(big, 'x', 200);
	big[200] = '\0';
	b = stream_script(NULL);
	stream_chunk(b, "{\"ok\":1}\n");
	stream_chunk(b, big);
	stream_chunk(b, "\n");
	stream_run(b, 1, 100);
	CHECK_INT(stream.lines, 1);
	CHECK_STR(stream.error, "a line of the stream is longer than 100"
	    " bytes");

	b = stream_script(NULL);
	stream_chunk(b, "{\"ok\":1}\n");
	stream_chunk(b, "{\"a\":\"");
	stream_chunk(b, big);
	stream_run(b, 1, 100);
	CHECK_INT(stream.lines, 1);
	CHECK_STR(stream.error, "a line of the stream is longer than 100"
	    " bytes");

	/* One chunk larger than a line and a read may be. */
	b = stream_script(NULL);
	evbuffer_add_printf(b, "100000\r\n");
	stream_run(b, 1, 100);
	CHECK_INT(stream.lines, 0);
	CHECK_STR(stream.error, "a line of the stream is longer than 100"
	    " bytes");
	return (0);
}

/* A refusal comes back whole, with no line and no "up". */
static int
test_stream_refused(void)
{
	stream_run(stream_script("HTTP/1.1 400 Bad Request\r\n"
	    "Content-Type: application/json\r\nContent-Length: 30\r\n\r\n"
	    "{\"message\":\"invalid filter x\"}"), 0, 64);
	CHECK(stream.done);
	CHECK_INT(stream.up, 0);
	CHECK_INT(stream.lines, 0);
	CHECK(stream.error == NULL);
	CHECK_INT(stream.status, 400);
	CHECK_STR(stream.body, "{\"message\":\"invalid filter x\"}");
	return (0);
}

/* An endless stream, cancelled from its line callback. */
static int
test_stream_cancel(void)
{
	struct evbuffer	*b;
	int		 i;

	b = stream_script(NULL);
	for (i = 0; i < 10; i++)
		stream_chunk(b, "{\"e\":1}\n");
	stream_cancel_after = 3;
	stream_run(b, 1, 64);
	stream_cancel_after = 0;
	CHECK_INT(stream.lines, 3);
	CHECK(!stream.done);
	return (0);
}

/* No head: the head deadline; a stream that is up has no deadline. */
static int
test_stream_silent(void)
{
	long long	saved = cfg->limits[LIMIT_DOCKER_TIMEOUT];
	struct evbuffer	*b;
	struct timeval	 tv = { 1, 500000 };

	unit_setup();
	cfg->limits[LIMIT_DOCKER_TIMEOUT] = 1;
	stream_run(NULL, 1, 64);
	CHECK_STR(stream.error, "no complete reply head within 1 s");

	b = stream_script(NULL);
	stream_chunk(b, "{\"e\":1}\n");
	event_base_loopexit(ev_base, &tv);
	stream_run(b, 1, 64);
	cfg->limits[LIMIT_DOCKER_TIMEOUT] = saved;
	CHECK_INT(stream.lines, 1);
	CHECK(!stream.done);
	return (0);
}

const struct unit_case unit_docker_cases[] = {
	{ "docker/image-references", test_image_references },
	{ "docker/whole", test_whole },
	{ "docker/chunked", test_chunked },
	{ "docker/truncated", test_truncated },
	{ "docker/garbage", test_garbage },
	{ "docker/oversized", test_oversized },
	{ "docker/no-listener", test_no_listener },
	{ "docker/silent", test_silent },
	{ "docker/stream-lines", test_stream_lines },
	{ "docker/stream-long", test_stream_long },
	{ "docker/stream-too-long", test_stream_too_long },
	{ "docker/stream-refused", test_stream_refused },
	{ "docker/stream-cancel", test_stream_cancel },
	{ "docker/stream-silent", test_stream_silent },
	{ NULL, NULL }
};
