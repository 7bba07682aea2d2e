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
 * silent replies, no listener at all).
 */

#include "config.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "sandbox-mcp.h"
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

const struct unit_case unit_docker_cases[] = {
	{ "docker/image-references", test_image_references },
	{ "docker/whole", test_whole },
	{ "docker/chunked", test_chunked },
	{ "docker/truncated", test_truncated },
	{ "docker/garbage", test_garbage },
	{ "docker/oversized", test_oversized },
	{ "docker/no-listener", test_no_listener },
	{ "docker/silent", test_silent },
	{ NULL, NULL }
};
