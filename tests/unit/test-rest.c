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
 * The REST surface's routing: a method and a path matched to a route of
 * the table (every route, HEAD as GET, a method no route takes, unknown
 * and malformed paths), the path's parameters percent-decoded on the
 * way, and the HTTP status each kind of cause is answered with.
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"
#include "unit.h"

struct route_case {
	const char	*method;
	const char	*path;
	const char	*op;		/* NULL: no route */
	const char	*params;	/* the path's arguments, printed */
};

/* One well-formed path for every route of the table. */
static const struct route_case route_cases[] = {
	{ "GET", "/v1/docker-images", "list_docker_images", "{}" },
	{ "GET", "/v1/workspace-directories", "list_workspace_directories",
	    "{}" },
	{ "POST", "/v1/sandboxes", "create_sandbox", "{}" },
	{ "GET", "/v1/sandboxes", "list_sandboxes", "{}" },
	{ "GET", "/v1/sandboxes/s1", "inspect_sandbox",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "DELETE", "/v1/sandboxes/s1", "destroy_sandbox",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "POST", "/v1/sandboxes/s1/squash", "squash_layerstacks",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "POST", "/v1/sandboxes/s1/export", "export_changes",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "POST", "/v1/sandboxes/s1/commands", "exec_command",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "POST", "/v1/sandboxes/s1/commands/c2/stdin", "write_command_stdin",
	    "{\"sandbox_id\":\"s1\",\"command_session_id\":\"c2\"}" },
	{ "GET", "/v1/sandboxes/s1/commands/c2/lines", "read_command_lines",
	    "{\"sandbox_id\":\"s1\",\"command_session_id\":\"c2\"}" },
	{ "GET", "/v1/sandboxes/s1/files", "file_read",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "PUT", "/v1/sandboxes/s1/files", "file_write",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "PATCH", "/v1/sandboxes/s1/files", "file_edit",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "GET", "/v1/sandboxes/s1/blame", "file_blame",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "POST", "/v1/sandboxes/s1/workspace-sessions",
	    "create_workspace_session", "{\"sandbox_id\":\"s1\"}" },
	{ "POST", "/v1/sandboxes/s1/workspace-sessions/w3/publish",
	    "publish_workspace_session",
	    "{\"sandbox_id\":\"s1\",\"workspace_session_id\":\"w3\"}" },
	{ "DELETE", "/v1/sandboxes/s1/workspace-sessions/w3",
	    "destroy_workspace_session",
	    "{\"sandbox_id\":\"s1\",\"workspace_session_id\":\"w3\"}" },
	{ "GET", "/v1/sandboxes/s1/events", "events",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "GET", "/v1/sandboxes/s1/trace", "trace",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "GET", "/v1/sandboxes/s1/layerstack", "layerstack",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "GET", "/v1/sandboxes/s1/cgroup", "cgroup",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "GET", "/v1/sandboxes/s1/snapshot", "snapshot",
	    "{\"sandbox_id\":\"s1\"}" },
	{ "GET", "/v1/snapshot", "snapshot", "{}" },
	{ "POST", "/v1/boxes", "sandbox_start", "{}" },
	{ "GET", "/v1/boxes", "box_list", "{}" },
	{ "GET", "/v1/boxes/b1", "sandbox_status", "{\"id\":\"b1\"}" },
	{ "DELETE", "/v1/boxes/b1", "sandbox_stop", "{\"id\":\"b1\"}" },
	{ "POST", "/v1/boxes/b1/exec", "sandbox_exec", "{\"id\":\"b1\"}" },
	{ "POST", "/v1/boxes/b1/procs", "sandbox_procs", "{\"id\":\"b1\"}" },
	{ "GET", "/v1/secrets", "sandbox_secrets", "{}" },
	{ "GET", "/v1/usage", "box_usage", "{}" },
	{ "GET", "/v1/credits", "box_credits", "{}" },
	{ "PUT", "/v1/secrets/K1", "secret_put", "{\"name\":\"K1\"}" },
	{ "DELETE", "/v1/secrets/K1", "secret_delete", "{\"name\":\"K1\"}" },
};
#define NROUTE_CASES	(sizeof route_cases / sizeof route_cases[0])

/* Route one request and compare the operation and the parameters. */
static int
route_is(const char *method, const char *path, const char *op,
    const char *params)
{
	const char	*got;
	cJSON		*args = NULL;
	char		*text;

	got = rest_route(method, path, &args);
	CHECK(args != NULL);
	if (op == NULL) {
		if (got != NULL) {
			fprintf(stderr, "%s %s: routed to %s\n", method, path,
			    got);
			cJSON_Delete(args);
			return (1);
		}
		cJSON_Delete(args);
		return (0);
	}
	if (got == NULL || strcmp(got, op) != 0) {
		fprintf(stderr, "%s %s: expected %s, got %s\n", method, path,
		    op, got != NULL ? got : "(none)");
		cJSON_Delete(args);
		return (1);
	}
	text = cJSON_PrintUnformatted(args);
	cJSON_Delete(args);
	if (params != NULL && strcmp(text, params) != 0) {
		fprintf(stderr, "%s %s: expected %s, got %s\n", method, path,
		    params, text);
		free(text);
		return (1);
	}
	free(text);
	return (0);
}

/* Every route, by a path of its own; and every operation has one. */
static int
test_rest_routes(void)
{
	const struct op_entry	*oe;
	size_t			 i;

	for (i = 0; i < NROUTE_CASES; i++) {
		CHECK(route_is(route_cases[i].method, route_cases[i].path,
		    route_cases[i].op, route_cases[i].params) == 0);
	}
	for (oe = op_next(NULL); oe != NULL; oe = op_next(oe)) {
		for (i = 0; i < NROUTE_CASES; i++) {
			if (strcmp(route_cases[i].op, oe->name) == 0)
				break;
		}
		if (i == NROUTE_CASES) {
			fprintf(stderr, "no case for operation %s\n",
			    oe->name);
			return (1);
		}
	}
	return (0);
}

/* HEAD is GET's; any other method takes only its own routes. */
static int
test_rest_methods(void)
{
	size_t	i;

	CHECK(route_is("HEAD", "/v1/sandboxes", "list_sandboxes", "{}") == 0);
	CHECK(route_is("HEAD", "/v1/sandboxes/s1/files", "file_read",
	    "{\"sandbox_id\":\"s1\"}") == 0);
	CHECK(route_is("HEAD", "/v1/sandboxes/s1/squash", NULL, NULL) == 0);
	CHECK(route_is("PUT", "/v1/sandboxes", NULL, NULL) == 0);
	CHECK(route_is("DELETE", "/v1/sandboxes", NULL, NULL) == 0);
	CHECK(route_is("POST", "/v1/docker-images", NULL, NULL) == 0);
	CHECK(route_is("GET", "/v1/sandboxes/s1/squash", NULL, NULL) == 0);
	CHECK(route_is("PATCH", "/v1/sandboxes/s1", NULL, NULL) == 0);
	CHECK(route_is("OPTIONS", "/v1/sandboxes", NULL, NULL) == 0);
	/* Methods are case-sensitive tokens. */
	CHECK(route_is("get", "/v1/sandboxes", NULL, NULL) == 0);
	CHECK(route_is("", "/v1/sandboxes", NULL, NULL) == 0);
	/* No route is taken by a method other than its own. */
	for (i = 0; i < NROUTE_CASES; i++) {
		CHECK(route_is("TRACE", route_cases[i].path, NULL, NULL) == 0);
		CHECK(route_is("CONNECT", route_cases[i].path, NULL,
		    NULL) == 0);
	}
	return (0);
}

/* Paths that are no route: unknown, trailing slashes, empty segments. */
static int
test_rest_unknown(void)
{
	static const char *paths[] = {
		"",
		"/",
		"/v1",
		"/v1/",
		"/v2/sandboxes",
		"v1/sandboxes",
		"/v1/sandbox",
		"/v1/sandboxesx",
		"/v1/Sandboxes",
		"/V1/sandboxes",
		"/v1/sandboxes/",
		"/v1/sandboxes//",
		"/v1/sandboxes//squash",
		"/v1/sandboxes/s1/",
		"/v1/sandboxes/s1/squash/",
		"/v1/sandboxes/s1/squash/x",
		"/v1/sandboxes/s1/commands/",
		"/v1/sandboxes/s1/commands//stdin",
		"/v1/sandboxes/s1/commands/c2",
		"/v1/sandboxes/s1/commands/c2/stdin/",
		"/v1/sandboxes/s1/workspace-sessions/w3/",
		"/v1/sandboxes/s1/workspace-sessions//publish",
		"/v1/docker-images/",
		"/v1/docker-images/x",
		"//v1/sandboxes",
		"/v1//sandboxes",
		"/v1/sandboxes?x=1",
	};
	const char	*methods[] = { "GET", "POST", "PUT", "PATCH",
			    "DELETE" };
	size_t		 i, j;

	for (i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		for (j = 0; j < sizeof methods / sizeof methods[0]; j++)
			CHECK(route_is(methods[j], paths[i], NULL, NULL) == 0);
	}
	return (0);
}

/*
 * Path parameters are percent-decoded, an encoded slash included (the
 * id's own check refuses it later); a broken escape is no route.
 */
static int
test_rest_encoded(void)
{
	CHECK(route_is("GET", "/v1/sandboxes/a%20b", "inspect_sandbox",
	    "{\"sandbox_id\":\"a b\"}") == 0);
	CHECK(route_is("GET", "/v1/sandboxes/%73%31", "inspect_sandbox",
	    "{\"sandbox_id\":\"s1\"}") == 0);
	CHECK(route_is("GET", "/v1/sandboxes/%7e%7E", "inspect_sandbox",
	    "{\"sandbox_id\":\"~~\"}") == 0);
	/* A '+' in a path is itself, not a space. */
	CHECK(route_is("GET", "/v1/sandboxes/a+b", "inspect_sandbox",
	    "{\"sandbox_id\":\"a+b\"}") == 0);
	/* An encoded slash stays inside the one segment. */
	CHECK(route_is("GET", "/v1/sandboxes/a%2Fb", "inspect_sandbox",
	    "{\"sandbox_id\":\"a/b\"}") == 0);
	CHECK(route_is("GET", "/v1/sandboxes/%2e%2e%2f%2e%2e/files",
	    "file_read", "{\"sandbox_id\":\"../..\"}") == 0);
	CHECK(route_is("POST", "/v1/sandboxes/s1/commands/c%2F2/stdin",
	    "write_command_stdin",
	    "{\"sandbox_id\":\"s1\",\"command_session_id\":\"c/2\"}") == 0);
	/* An encoded NUL becomes the mark the door refuses by name. */
	CHECK(route_is("GET", "/v1/sandboxes/a%00b", "inspect_sandbox",
	    "{\"sandbox_id\":\"a" NUL_MARK "b\"}") == 0);
	/* Broken escapes. */
	CHECK(route_is("GET", "/v1/sandboxes/%zz", NULL, NULL) == 0);
	CHECK(route_is("GET", "/v1/sandboxes/%4", NULL, NULL) == 0);
	CHECK(route_is("GET", "/v1/sandboxes/%", NULL, NULL) == 0);
	CHECK(route_is("GET", "/v1/sandboxes/a%4g", NULL, NULL) == 0);
	CHECK(route_is("GET", "/v1/sandboxes/%4/files", NULL, NULL) == 0);
	CHECK(route_is("POST", "/v1/sandboxes/s1/commands/%g0/stdin", NULL,
	    NULL) == 0);
	/* The fixed parts of a pattern are not decoded. */
	CHECK(route_is("GET", "/v1/%73andboxes", NULL, NULL) == 0);
	CHECK(route_is("GET", "/v1/sandboxes/s1%2Ffiles", "inspect_sandbox",
	    "{\"sandbox_id\":\"s1/files\"}") == 0);
	return (0);
}

/* The decoder itself, with and without '+' as a space. */
static int
test_rest_decode(void)
{
	static const struct {
		const char	*in;
		int		 plus;
		const char	*out;	/* NULL: refused */
	} cases[] = {
		{ "", 0, "" },
		{ "abc", 0, "abc" },
		{ "a+b", 0, "a+b" },
		{ "a+b", 1, "a b" },
		{ "%2B", 1, "+" },
		{ "%41%62%5a", 0, "AbZ" },
		{ "%c3%a9", 0, "\xc3\xa9" },
		{ "%ff", 0, "\xff" },
		{ "%00", 0, NUL_MARK },
		{ "x%00%00y", 0, "x" NUL_MARK NUL_MARK "y" },
		{ "%", 0, NULL },
		{ "%4", 0, NULL },
		{ "a%4", 0, NULL },
		{ "%zz", 0, NULL },
		{ "%z1", 0, NULL },
		{ "%1z", 0, NULL },
		{ "%%41", 0, NULL },
		{ "%-1", 0, NULL },
		{ "%+1", 1, NULL },
	};
	size_t	 i;
	char	*got;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		got = rest_decode(cases[i].in, strlen(cases[i].in),
		    cases[i].plus);
		if (cases[i].out == NULL) {
			if (got != NULL) {
				fprintf(stderr, "\"%s\": decoded to \"%s\"\n",
				    cases[i].in, got);
				free(got);
				return (1);
			}
			continue;
		}
		CHECK_STR(got, cases[i].out);
		free(got);
	}
	/* Only n bytes are read: an escape cut by n is broken. */
	got = rest_decode("ab%41", 4, 0);
	CHECK(got == NULL);
	got = rest_decode("ab%41", 2, 0);
	CHECK_STR(got, "ab");
	free(got);
	return (0);
}

/* A path as long as the bound is no route, whatever it would match. */
static int
test_rest_overlong(void)
{
	char	*path;
	size_t	 len;

	for (len = 1000; len < 1100; len++) {
		path = xmalloc(len + 1);
		memcpy(path, "/v1/sandboxes/", 14);
		memset(path + 14, 'a', len - 14);
		path[len] = '\0';
		if (route_is("GET", path, len < 1024 ? "inspect_sandbox" :
		    NULL, NULL) != 0) {
			fprintf(stderr, "a path of %zu bytes\n", len);
			free(path);
			return (1);
		}
		free(path);
	}
	/* Escapes count as the bytes they are written with. */
	path = xmalloc(1024 + 1);
	memcpy(path, "/v1/sandboxes/", 14);
	for (len = 14; len + 3 <= 1023; len += 3)
		memcpy(path + len, "%41", 3);
	path[len] = '\0';
	CHECK(route_is("GET", path, "inspect_sandbox", NULL) == 0);
	CHECK_INT(len, 1022);
	path[len++] = 'x';
	path[len] = '\0';
	CHECK(route_is("GET", path, "inspect_sandbox", NULL) == 0);
	path[len++] = 'y';
	path[len] = '\0';
	CHECK(route_is("GET", path, NULL, NULL) == 0);
	free(path);
	return (0);
}

/* The status each kind of cause is answered with. */
static int
test_rest_status(void)
{
	CHECK_INT(rest_status(CAUSE_INVALID), 400);
	CHECK_INT(rest_status(CAUSE_UNAUTHORIZED), 401);
	CHECK_INT(rest_status(CAUSE_NOT_FOUND), 404);
	CHECK_INT(rest_status(CAUSE_CONFLICT), 409);
	CHECK_INT(rest_status(CAUSE_FAILED), 422);
	CHECK_INT(rest_status(CAUSE_BUSY), 429);
	CHECK_INT(rest_status(CAUSE_INTERNAL), 500);
	CHECK_INT(rest_status(CAUSE_NONE), 500);
	/* A kind no cause has (a newer peer's) is an internal error. */
	CHECK_INT(rest_status((enum cause_kind)99), 500);
	return (0);
}

const struct unit_case unit_rest_cases[] = {
	{ "rest/routes", test_rest_routes },
	{ "rest/methods", test_rest_methods },
	{ "rest/unknown", test_rest_unknown },
	{ "rest/encoded", test_rest_encoded },
	{ "rest/decode", test_rest_decode },
	{ "rest/overlong", test_rest_overlong },
	{ "rest/status", test_rest_status },
	{ NULL, NULL }
};
