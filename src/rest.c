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
 * The REST surface: /v1 routes onto the operations of the door, on the
 * listener and with the keys and grants of /mcp. A route names an
 * operation; the path's {parameters}, the query and a JSON object body
 * merge into its arguments (a query value is read with the argument's
 * type: digits as an integer, true and false as a boolean), which the
 * door checks exactly as for tools/call. A result is answered 200 with
 * the result object, the structuredContent of the same MCP call; a cause
 * with the status of its kind and the same {"error": {kind, message,
 * details}} object. Every route and every listed operation are checked
 * against each other at start.
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>

#include "http.h"
#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"

#define REST_PREFIX		"/v1/"
#define REST_PATH_MAX		1024
#define REST_PARAMS_MAX		3
#define REST_QUERY_MAX		32
#define REST_BODY_ARGS_MAX	64
#define REST_RETRY_AFTER	"5"	/* seconds, after server_busy */

struct rest_route {
	const char	*method;
	const char	*pattern;	/* {name} is a path parameter */
	const char	*op;
};

static const struct rest_route rest_routes[] = {
	{ "GET", "/v1/docker-images", "list_docker_images" },
	{ "GET", "/v1/workspace-directories", "list_workspace_directories" },
	{ "POST", "/v1/sandboxes", "create_sandbox" },
	{ "GET", "/v1/sandboxes", "list_sandboxes" },
	{ "GET", "/v1/sandboxes/{sandbox_id}", "inspect_sandbox" },
	{ "DELETE", "/v1/sandboxes/{sandbox_id}", "destroy_sandbox" },
	{ "POST", "/v1/sandboxes/{sandbox_id}/squash", "squash_layerstacks" },
	{ "POST", "/v1/sandboxes/{sandbox_id}/export", "export_changes" },
	{ "POST", "/v1/sandboxes/{sandbox_id}/commands", "exec_command" },
	{ "POST", "/v1/sandboxes/{sandbox_id}/commands/{command_session_id}"
	    "/stdin", "write_command_stdin" },
	{ "GET", "/v1/sandboxes/{sandbox_id}/commands/{command_session_id}"
	    "/lines", "read_command_lines" },
	{ "GET", "/v1/sandboxes/{sandbox_id}/files", "file_read" },
	{ "PUT", "/v1/sandboxes/{sandbox_id}/files", "file_write" },
	{ "PATCH", "/v1/sandboxes/{sandbox_id}/files", "file_edit" },
	{ "GET", "/v1/sandboxes/{sandbox_id}/blame", "file_blame" },
	{ "POST", "/v1/sandboxes/{sandbox_id}/workspace-sessions",
	    "create_workspace_session" },
	{ "POST", "/v1/sandboxes/{sandbox_id}/workspace-sessions"
	    "/{workspace_session_id}/publish", "publish_workspace_session" },
	{ "DELETE", "/v1/sandboxes/{sandbox_id}/workspace-sessions"
	    "/{workspace_session_id}", "destroy_workspace_session" },
	{ "GET", "/v1/sandboxes/{sandbox_id}/events", "events" },
	{ "GET", "/v1/sandboxes/{sandbox_id}/layerstack", "layerstack" },
	{ "GET", "/v1/sandboxes/{sandbox_id}/cgroup", "cgroup" },
	{ "GET", "/v1/sandboxes/{sandbox_id}/snapshot", "snapshot" },
	{ "GET", "/v1/snapshot", "snapshot" },
	{ "GET", "/v1/sandboxes/{sandbox_id}/trace", "trace" },
	{ "POST", "/v1/boxes", "sandbox_start" },
	{ "GET", "/v1/boxes", "box_list" },
	{ "GET", "/v1/boxes/{id}", "sandbox_status" },
	{ "DELETE", "/v1/boxes/{id}", "sandbox_stop" },
	{ "POST", "/v1/boxes/{id}/exec", "sandbox_exec" },
	{ "POST", "/v1/boxes/{id}/procs", "sandbox_procs" },
	{ "GET", "/v1/secrets", "sandbox_secrets" },
	{ "GET", "/v1/usage", "box_usage" },
	{ "GET", "/v1/credits", "box_credits" },
	{ "PUT", "/v1/secrets/{name}", "secret_put" },
	{ "DELETE", "/v1/secrets/{name}", "secret_delete" },
};
#define REST_NROUTES	(sizeof rest_routes / sizeof rest_routes[0])

/* A request on its way through the door. */
struct rest_call {
	struct http_conn	*c;	/* NULL once the request is over */
	struct op_call		*call;	/* while the door has it */
	const struct op_entry	*oe;
	cJSON			*args;
};

static int
rest_hex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return (ch - '0');
	if (ch >= 'a' && ch <= 'f')
		return (ch - 'a' + 10);
	if (ch >= 'A' && ch <= 'F')
		return (ch - 'A' + 10);
	return (-1);
}

/*
 * Percent-decode n bytes of a path segment or a query part (plus: '+' is
 * a space); an encoded NUL becomes the mark the door refuses by name.
 * NULL when an escape is broken.
 */
char *
rest_decode(const char *s, size_t n, int plus)
{
	char	*out, *o;
	size_t	 i;
	int	 hi, lo;

	out = o = xmalloc(n * 2 + 1);
	for (i = 0; i < n; i++) {
		if (s[i] == '+' && plus)
			*o++ = ' ';
		else if (s[i] != '%')
			*o++ = s[i];
		else {
			if (i + 2 >= n || (hi = rest_hex(s[i + 1])) == -1 ||
			    (lo = rest_hex(s[i + 2])) == -1) {
				free(out);
				return (NULL);
			}
			i += 2;
			if (hi == 0 && lo == 0) {
				memcpy(o, NUL_MARK, 4);
				o += 4;
			} else
				*o++ = (char)(hi * 16 + lo);
		}
	}
	*o = '\0';
	return (out);
}

/* The status of a cause's kind. */
int
rest_status(enum cause_kind kind)
{
	switch (kind) {
	case CAUSE_INVALID:
		return (400);
	case CAUSE_UNAUTHORIZED:
		return (401);
	case CAUSE_NOT_FOUND:
		return (404);
	case CAUSE_CONFLICT:
		return (409);
	case CAUSE_FAILED:
		return (422);
	case CAUSE_BUSY:
		return (429);
	case CAUSE_INTERNAL:
	case CAUSE_NONE:
		break;
	}
	return (500);
}

/* Answer a cause: {"error": {...}} with the status of its kind or status. */
static void
rest_fail(struct http_conn *c, int status, const struct cause *cause,
    const char *extra)
{
	cJSON	*body;

	if (status == 0)
		status = rest_status(cause->kind);
	if (extra == NULL && cause->kind == CAUSE_BUSY)
		extra = "Retry-After: " REST_RETRY_AFTER "\r\n";
	body = cJSON_CreateObject();
	cJSON_AddItemToObject(body, "error", cause_json(cause));
	transport_http_json(c, status, body, extra);
	cJSON_Delete(body);
}

/* A request refused before it reached rest_http (its Host). */
void
rest_refuse(struct http_conn *c, int status, const struct cause *cause)
{
	rest_fail(c, status, cause, NULL);
}

/* Answer an error made here. */
static void
rest_error(struct http_conn *c, int status, enum cause_kind kind,
    const char *key, const char *value, const char *extra,
    const char *fmt, ...)
{
	struct cause	 cause = { 0 };
	va_list		 ap;

	va_start(ap, fmt);
	cause_vset(&cause, kind, key, value, fmt, ap);
	va_end(ap);
	rest_fail(c, status, &cause, extra);
	cause_clear(&cause);
}

/*
 * Check the route table against the operation table: every route names
 * a listed operation whose path parameters are arguments, and every
 * listed operation has a route. A mismatch is a bug: fatal.
 */
void
rest_init(void)
{
	const struct op_entry	*oe;
	const struct op_arg	*a;
	const char		*p, *e;
	size_t			 i, n;

	for (i = 0; i < REST_NROUTES; i++) {
		if ((oe = op_find_any(rest_routes[i].op, TOOLSET_ALL)) == NULL)
			fatalx("%s: %s %s names no operation %s", __func__,
			    rest_routes[i].method, rest_routes[i].pattern,
			    rest_routes[i].op);
		for (p = rest_routes[i].pattern; (p = strchr(p, '{')) !=
		    NULL; p = e) {
			e = strchr(p, '}');
			n = e - p - 1;
			for (a = oe->args; a->name != NULL; a++) {
				if (strlen(a->name) == n &&
				    strncmp(a->name, p + 1, n) == 0)
					break;
			}
			if (a->name == NULL)
				fatalx("%s: %s has no argument %.*s",
				    __func__, oe->name, (int)n, p + 1);
		}
	}
	for (oe = op_next(NULL); oe != NULL; oe = op_next(oe)) {
		for (i = 0; i < REST_NROUTES; i++) {
			if (strcmp(rest_routes[i].op, oe->name) == 0)
				break;
		}
		if (i == REST_NROUTES)
			fatalx("%s: no route for %s", __func__, oe->name);
	}
}

/*
 * Whether path matches a route's pattern; the path parameters go into
 * args as strings (percent-decoded).
 */
static int
rest_match(const char *pattern, const char *path, cJSON *args)
{
	const char	*p = pattern, *q = path, *e;
	char		 name[64], *v;
	size_t		 n, vn;

	while (*p != '\0') {
		if (*p != '{') {
			if (*p++ != *q++)
				return (0);
			continue;
		}
		e = strchr(p, '}');
		n = e - p - 1;
		if (n >= sizeof name)
			return (0);
		memcpy(name, p + 1, n);
		name[n] = '\0';
		vn = strcspn(q, "/");
		if (vn == 0)
			return (0);
		if ((v = rest_decode(q, vn, 0)) == NULL)
			return (0);
		cJSON_AddStringToObject(args, name, v);
		free(v);
		q += vn;
		p = e + 1;
	}
	return (*q == '\0');
}

/*
 * The operation a method takes on a path (HEAD is GET's), with the
 * path's parameters in *args, a new object the caller frees; NULL when
 * no route takes it.
 */
const char *
rest_route(const char *method, const char *path, cJSON **args)
{
	size_t	i;

	*args = cJSON_CreateObject();
	if (strlen(path) >= REST_PATH_MAX)
		return (NULL);
	for (i = 0; i < REST_NROUTES; i++) {
		if (strcmp(rest_routes[i].method, strcmp(method, "HEAD") ==
		    0 ? "GET" : method) == 0 &&
		    rest_match(rest_routes[i].pattern, path, *args))
			return (rest_routes[i].op);
		cJSON_Delete(*args);
		*args = cJSON_CreateObject();
	}
	return (NULL);
}

/* A query value with the type its argument has. */
static cJSON *
rest_value(const struct op_entry *oe, const char *name, const char *v)
{
	const struct op_arg	*a;
	cJSON			*j;
	const char		*text, *end;
	char			*marked;

	for (a = oe->args; a->name != NULL; a++) {
		if (strcmp(a->name, name) == 0)
			break;
	}
	switch (a->name != NULL ? a->type : OP_ARG_STRING) {
	case OP_ARG_INTEGER:
		/* However many digits: the check refuses past 2^53. */
		if (*v != '\0' && v[strspn(v, "0123456789")] == '\0')
			return (cJSON_CreateNumber(strtod(v, NULL)));
		break;
	case OP_ARG_BOOLEAN:
		if (strcmp(v, "true") == 0)
			return (cJSON_CreateTrue());
		if (strcmp(v, "false") == 0)
			return (cJSON_CreateFalse());
		break;
	case OP_ARG_ARRAY:
	case OP_ARG_OBJECT:
		/*
		 * One value, whole, as the body's is: with a member given
		 * twice or anything after it, it stays text and is refused by
		 * type; an escaped NUL becomes the mark the door refuses.
		 */
		marked = util_json_mark_nuls(v, strlen(v));
		text = marked != NULL ? marked : v;
		end = NULL;
		if ((j = cJSON_ParseWithOpts(text, &end, 0)) != NULL &&
		    util_json_blank(end, text + strlen(text)) &&
		    util_json_duplicate(j) == NULL) {
			free(marked);
			return (j);
		}
		free(marked);
		cJSON_Delete(j);
		break;
	default:
		break;
	}
	return (cJSON_CreateString(v));
}

/*
 * Add the query's arguments to args: 0, or -1 after answering why not.
 * A percent-encoded NUL becomes the mark the door refuses by name.
 */
static int
rest_query(struct http_conn *c, const struct op_entry *oe, const char *query,
    cJSON *args)
{
	const char	*p, *amp, *eq;
	char		*name, *value;
	size_t		 n;
	int		 count = 0;

	for (p = query; p != NULL && *p != '\0'; p = *amp != '\0' ? amp + 1 :
	    amp) {
		amp = p + strcspn(p, "&");
		if (amp == p)
			continue;
		if (++count > REST_QUERY_MAX) {
			rest_error(c, 400, CAUSE_INVALID, NULL, NULL, NULL,
			    "the query has more than %d parameters",
			    REST_QUERY_MAX);
			return (-1);
		}
		eq = memchr(p, '=', amp - p);
		n = (eq != NULL ? eq : amp) - p;
		name = rest_decode(p, n, 1);
		value = eq != NULL ? rest_decode(eq + 1, amp - eq - 1, 1) :
		    xstrdup("");
		if (name == NULL || value == NULL || *name == '\0' ||
		    !util_utf8_valid(name, strlen(name)) ||
		    !util_utf8_valid(value, strlen(value))) {
			rest_error(c, 400, CAUSE_INVALID, NULL, NULL, NULL,
			    "the query is not valid percent-encoded UTF-8");
			free(name);
			free(value);
			return (-1);
		}
		if (cJSON_GetObjectItemCaseSensitive(args, name) != NULL) {
			rest_error(c, 400, CAUSE_INVALID, "argument", name,
			    NULL, "argument %.100s is given twice", name);
			free(name);
			free(value);
			return (-1);
		}
		cJSON_AddItemToObject(args, name, rest_value(oe, name, value));
		free(name);
		free(value);
	}
	return (0);
}

static void
rest_call_free(struct rest_call *rc)
{
	cJSON_Delete(rc->args);
	free(rc);
}

/* The request is over: answered, or its connection gone. */
static void
rest_done(void *arg)
{
	struct rest_call	*rc = arg;
	struct op_call		*call = rc->call;

	rc->c = NULL;
	if (call == NULL) {
		rest_call_free(rc);
		return;
	}
	op_call_cancel(call);	/* its answer is not wanted */
}

/* The door has answered. */
static void
rest_answer(struct op_call *call, cJSON *result, const struct cause *cause,
    void *arg)
{
	struct rest_call	*rc = arg;

	rc->call = NULL;
	if (rc->c == NULL) {
		cJSON_Delete(result);
		rest_call_free(rc);
		return;
	}
	if (result != NULL) {
		transport_http_json(rc->c, 200, result, NULL);
		cJSON_Delete(result);
	} else
		rest_fail(rc->c, 0, cause, NULL);
}

/* The whole request is in: merge the body and call the operation. */
static void
rest_body(struct http_conn *c, void *arg)
{
	struct rest_call	*rc = arg;
	struct http_msg		*req = transport_http_msg(c);
	cJSON			*body = NULL, *v, *given;
	size_t			 len = evbuffer_get_length(req->body);
	const char		*text, *ct, *end, *start, *dup;
	char			*marked;
	size_t			 blen;
	int			 n;

	/*
	 * A Content-Type, if given, is JSON's even with no body: a
	 * browser's form (which needs no preflight) cannot send that.
	 */
	ct = http_msg_header(req, "Content-Type");
	if ((len != 0 || ct != NULL) && (ct == NULL || strncasecmp(ct,
	    "application/json", 16) != 0 || (ct[16] != '\0' &&
	    ct[16] != ';' && ct[16] != ' '))) {
		rest_error(c, 415, CAUSE_INVALID, NULL, NULL, NULL,
		    "a request body must be Content-Type: application/json");
		return;
	}
	if (len != 0) {
		text = (const char *)evbuffer_pullup(req->body, len);
		marked = util_json_mark_nuls(text, len);
		start = marked != NULL ? marked : text;
		blen = marked != NULL ? strlen(marked) : len;
		end = NULL;
		if (!util_utf8_valid(text, len) || (body =
		    cJSON_ParseWithLengthOpts(start, blen, &end, 0)) == NULL ||
		    !cJSON_IsObject(body) || !util_json_blank(end, start + blen)) {
			free(marked);
			cJSON_Delete(body);
			rest_error(c, 400, CAUSE_INVALID, NULL, NULL, NULL,
			    "the request body must be one JSON object (UTF-8)");
			return;
		}
		free(marked);
		if ((dup = util_json_duplicate(body)) != NULL) {
			rest_error(c, 400, CAUSE_INVALID, NULL, NULL, NULL,
			    "member \"%.100s\" is given twice (in the body)",
			    dup);
			cJSON_Delete(body);
			return;
		}
		/* Bounded before the merge, which looks each one up. */
		if ((n = cJSON_GetArraySize(body)) > REST_BODY_ARGS_MAX) {
			cJSON_Delete(body);
			rest_error(c, 400, CAUSE_INVALID, NULL, NULL, NULL,
			    "the request body has %d members; a tool takes at"
			    " most %d arguments", n, REST_BODY_ARGS_MAX);
			return;
		}
		given = cJSON_CreateObject();
		while ((v = body->child) != NULL) {
			cJSON_DetachItemViaPointer(body, v);
			if (cJSON_GetObjectItemCaseSensitive(rc->args,
			    v->string) != NULL) {
				rest_error(c, 400, CAUSE_INVALID, "argument",
				    v->string, NULL, "argument %.100s is given"
				    " twice (%s)", v->string,
				    cJSON_GetObjectItemCaseSensitive(given,
				    v->string) != NULL ? "in the body" :
				    "in the body and in the path or query");
				cJSON_Delete(v);
				cJSON_Delete(body);
				cJSON_Delete(given);
				return;
			}
			cJSON_AddTrueToObject(given, v->string);
			cJSON_AddItemToObject(rc->args, v->string, v);
		}
		cJSON_Delete(given);
		cJSON_Delete(body);
	}
	transport_http_hold(c);
	telemetry_client(transport_http_client(c));
	telemetry_context(http_msg_header(transport_http_msg(c),
	    "traceparent"), transport_http_key(c));
	rc->call = op_call_start(rc->oe->name, rc->args, rc->oe->set,
	    transport_http_tenant(c), OP_CALL_HIDDEN, rest_answer, rc);
	telemetry_context(NULL, NULL);
	telemetry_client(NULL);
}

/*
 * The methods a path takes on this server, for Allow; *unserved is the
 * set of a route it matches that this server does not serve (0: none).
 */
static void
rest_methods(const char *path, char *buf, size_t len, int *unserved)
{
	const struct op_entry	*oe;
	cJSON			*scratch;
	size_t			 i;

	buf[0] = '\0';
	*unserved = 0;
	for (i = 0; i < REST_NROUTES; i++) {
		scratch = cJSON_CreateObject();
		if (rest_match(rest_routes[i].pattern, path, scratch)) {
			oe = op_find_any(rest_routes[i].op, TOOLSET_ALL);
			if ((transport_http_served() & oe->set) == 0)
				*unserved = oe->set;
			else {
				if (buf[0] != '\0')
					strlcat(buf, ", ", len);
				strlcat(buf, rest_routes[i].method, len);
			}
		}
		cJSON_Delete(scratch);
	}
}

/*
 * /v1/: find the route, check the caller (Origin, page, key, grant),
 * gather the path's and the query's arguments, then read the body.
 */
void
rest_http(struct http_conn *c, const char *path)
{
	struct http_msg		*req = transport_http_msg(c);
	struct rest_call	*rc;
	const struct op_entry	*oe = NULL;
	struct cause		 cause = { 0 };
	const char		*query, *extra, *method = req->method, *name;
	char			 allow[128], hdr[192];
	cJSON			*args;
	int			 status, unserved;

	if (transport_http_from_page(c)) {
		rest_error(c, 403, CAUSE_UNAUTHORIZED, NULL, NULL, NULL,
		    "forbidden: pages served through the forward route may"
		    " not call /v1");
		return;
	}
	if (!transport_http_origin_allowed(c)) {
		rest_error(c, 403, CAUSE_UNAUTHORIZED, NULL, NULL, NULL,
		    "forbidden: the Origin %.100s is not allowed",
		    http_msg_header(req, "Origin"));
		return;
	}
	if (strlen(path) >= REST_PATH_MAX) {
		rest_error(c, 404, CAUSE_NOT_FOUND, NULL, NULL, NULL,
		    "no route for a path of %zu bytes", strlen(path));
		return;
	}
	rest_methods(path, allow, sizeof allow, &unserved);
	if (allow[0] == '\0' && unserved != 0) {
		rest_error(c, 404, CAUSE_NOT_FOUND, "set",
		    cfg_set_name(unserved), NULL, "this server does not serve"
		    " the %s set (%.200s)", cfg_set_name(unserved), path);
		return;
	}
	if (allow[0] == '\0' && (strcmp(path, "/v1/auth/github") == 0 ||
	    strncmp(path, "/v1/billing/", 12) == 0)) {
		rest_error(c, 501, CAUSE_FAILED, "path", path, NULL,
		    "%.200s needs the outside world (GitHub sign-in, a payment"
		    " provider), which this server is not configured for:"
		    " tenants, keys and credits are set by its operator", path);
		return;
	}
	if (allow[0] == '\0') {
		rest_error(c, 404, CAUSE_NOT_FOUND, "path", path, NULL,
		    "no route %.200s (see sandbox-mcp(8), REST)", path);
		return;
	}
	if (strcmp(method, "OPTIONS") == 0) {
		snprintf(hdr, sizeof hdr, "Allow: %s, OPTIONS\r\n"
		    "Access-Control-Allow-Methods: %s\r\n"
		    "Access-Control-Allow-Headers: Authorization,"
		    " Content-Type\r\n", allow, allow);
		transport_http_respond(c, 204, NULL, NULL, 0, hdr);
		return;
	}
	if ((name = rest_route(method, path, &args)) != NULL)
		oe = op_find_any(name, TOOLSET_ALL);
	if (oe == NULL) {
		cJSON_Delete(args);
		snprintf(hdr, sizeof hdr, "Allow: %s\r\n", allow);
		rest_error(c, 405, CAUSE_INVALID, "method", method, hdr,
		    "%s takes %s, not %.16s", path, allow, method);
		return;
	}
	if ((status = transport_http_authorize(c, oe->set, &cause,
	    &extra)) != 0) {
		cJSON_Delete(args);
		rest_fail(c, status, &cause, extra);
		cause_clear(&cause);
		return;
	}
	query = strchr(req->target, '?');
	if (rest_query(c, oe, query != NULL ? query + 1 : NULL, args) != 0) {
		cJSON_Delete(args);
		return;
	}
	rc = xcalloc(1, sizeof *rc);
	rc->c = c;
	rc->oe = oe;
	rc->args = args;
	transport_http_on_done(c, rest_done, rc);
	transport_http_read_body(c, rest_body, rc);
}
