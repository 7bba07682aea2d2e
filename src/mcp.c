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
 * The MCP protocol layer, shared by both transports. A transport hands
 * mcp_receive() the bytes of one message (a JSON-RPC object, or a batch
 * where the negotiated version allows it) and a callback; the callback
 * gets the response (or NULL when nothing is to be sent) once every
 * request in the message is answered, possibly before mcp_receive()
 * returns. A transport that goes away detaches its pending reply: the
 * work runs on, its answer is dropped.
 *
 * A session holds what initialize negotiated, the sets its peer may use
 * and the requests in flight (for notifications/cancelled). Sessions and
 * replies are reference counted so that closing a session under a
 * running tool call frees nothing the call still reaches.
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "op.h"
#include "sandbox-mcp.h"
#include "surface.h"

static const char *mcp_versions[] = {
	"2025-11-25",		/* newest first */
	"2025-06-18",
	"2025-03-26",
};

/*
 * The revisions served statelessly, each request carrying its version in
 * _meta (newest first). server/discover and the -32022 error list these
 * and then the ones above, which are reached through initialize.
 */
static const char *mcp_modern_versions[] = {
	"2026-07-28",
};

#define MCP_META_VERSION	"io.modelcontextprotocol/protocolVersion"
#define MCP_META_CAPABILITIES	"io.modelcontextprotocol/clientCapabilities"
#define MCP_META_CLIENT		"io.modelcontextprotocol/clientInfo"
#define MCP_META_LOG_LEVEL	"io.modelcontextprotocol/logLevel"
#define MCP_META_SERVER		"io.modelcontextprotocol/serverInfo"

/* How long a client may keep a list or a discovery answer (caching). */
#define MCP_CACHE_TTL_MS	300000

static const char *mcp_log_levels[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert",
	"emergency"
};

struct mcp_request;
TAILQ_HEAD(mcp_requests, mcp_request);

struct mcp_session {
	int			 transport;
	int			 sets;
	char			*key;
	char			*tenant;
	int			 initialized;
	int			 notified;	/* got notifications/initialized */
	char			 version[16];
	int			 log_level;
	unsigned int		 references;
	struct mcp_requests	 inflight;
	int			 stateless;	/* one request, modern era */
	mcp_check_cb		 check;		/* the transport's checks */
	void			*check_arg;
	mcp_push_cb		 push;	/* notifications, any time */
	void			*push_arg;
	TAILQ_ENTRY(mcp_session) push_entry;
};
static TAILQ_HEAD(, mcp_session) mcp_pushable =
    TAILQ_HEAD_INITIALIZER(mcp_pushable);

struct mcp_reply {
	struct mcp_session	*session;
	int			 batch;
	unsigned int		 pending;
	cJSON			*responses;	/* array, for a batch */
	cJSON			*single;
	int			 detached;
	int			 receiving;	/* inside mcp_receive */
	mcp_reply_cb		 cb;
	void			*arg;
};

struct mcp_request {
	struct mcp_reply	*reply;
	cJSON			*id;
	struct op_call		*call;
	int			 cancelled;
	int			 done;
	int			 modern;	/* a 2026-07-28 era request */
	int			 log_level;	/* its _meta logLevel, or -1 */
	TAILQ_ENTRY(mcp_request) entry;
};

#define MCP_CANCELLED_BY_PEER	2	/* request.cancelled: no answer */

static void	mcp_reply_add(struct mcp_reply *, cJSON *);
static void	mcp_reply_finish(struct mcp_reply *);
static void	mcp_session_unref(struct mcp_session *);
static cJSON	*mcp_result_shape(struct mcp_session *, struct mcp_request *,
		    cJSON *);

/* Whether a protocol version is one we speak. */
int
mcp_version_supported(const char *v)
{
	size_t	i;

	for (i = 0; i < sizeof mcp_versions / sizeof mcp_versions[0]; i++) {
		if (strcmp(v, mcp_versions[i]) == 0)
			return (1);
	}
	return (0);
}

/* The client's version when we speak it, else our newest. */
const char *
mcp_negotiate_version(const char *requested)
{
	if (requested != NULL && mcp_version_supported(requested))
		return (requested);
	return (mcp_versions[0]);
}

/*
 * A session for one peer: the stdio peer, or one HTTP client that sent
 * initialize. sets are those it may use; key names its API key (HTTP);
 * tenant is whom its tool calls act for (auth.c).
 */
struct mcp_session *
mcp_session_new(int transport, int sets, const char *key, const char *tenant)
{
	struct mcp_session	*s;

	if (tenant == NULL)
		fatalx("%s: a session with no tenant", __func__);
	s = xcalloc(1, sizeof *s);
	s->transport = transport;
	s->sets = sets;
	if (key != NULL)
		s->key = xstrdup(key);
	s->tenant = xstrdup(tenant);
	s->log_level = 1;
	s->references = 1;
	TAILQ_INIT(&s->inflight);
	metrics_mcp_session(transport == MCP_TRANSPORT_HTTP, 1);
	return (s);
}

static void
mcp_session_unref(struct mcp_session *s)
{
	if (--s->references > 0)
		return;
	if (s->push != NULL)
		TAILQ_REMOVE(&mcp_pushable, s, push_entry);
	free(s->key);
	free(s->tenant);
	free(s);
}

/*
 * Close a session: its tool calls are told to stop waiting, and their
 * answers still reach the transports that wait for them (an HTTP client
 * on another connection gets its answer, not silence). The memory goes
 * when the last of them finishes.
 */
void
mcp_session_free(struct mcp_session *s)
{
	struct mcp_request	*r, *r1;

	if (s == NULL)
		return;
	metrics_mcp_session(s->transport == MCP_TRANSPORT_HTTP, -1);
	mcp_session_set_push(s, NULL, NULL);	/* nobody to tell */
	TAILQ_FOREACH_SAFE(r, &s->inflight, entry, r1) {
		if (r->call != NULL && !r->cancelled) {
			r->cancelled = 1;
			op_call_cancel(r->call);
		}
	}
	mcp_session_unref(s);
}

int
mcp_session_sets(struct mcp_session *s)
{
	return (s->sets);
}

const char *
mcp_session_key(struct mcp_session *s)
{
	return (s->key);
}

const char *
mcp_session_tenant(struct mcp_session *s)
{
	return (s->tenant);
}

const char *
mcp_session_version(struct mcp_session *s)
{
	return (s->initialized ? s->version : NULL);
}

int
mcp_session_initialized(struct mcp_session *s)
{
	return (s->initialized);
}

unsigned int
mcp_session_pending(struct mcp_session *s)
{
	struct mcp_request	*r;
	unsigned int		 n = 0;

	TAILQ_FOREACH(r, &s->inflight, entry)
		n++;
	return (n);
}

/* The instructions initialize returns, for the sets the peer can use. */
static char *
mcp_instructions(int sets)
{
	char	*s;

	xasprintf(&s, "%s%s%s",
	    (sets & TOOLSET_MANAGEMENT) ? "sandbox-mcp gives disposable"
	    " Linux sandboxes built from local Docker images and host"
	    " workspace directories. Pick an image with list_docker_images"
	    " (pass a reference verbatim; nothing is ever pulled) and a"
	    " workspace with list_workspace_directories, then create_sandbox;"
	    " list_sandboxes and inspect_sandbox read the records, and"
	    " destroy_sandbox removes a sandbox with its container. " : "",
	    (sets & TOOLSET_RUNTIME) ? "exec_command runs a shell command in"
	    " a sandbox; without workspace_session_id its file changes are"
	    " published as a layer when it ends, while"
	    " create_workspace_session gives a private view to work in over"
	    " several commands until publish_workspace_session or"
	    " destroy_workspace_session. Keep command_session_id to read more"
	    " output (read_command_lines) or write stdin"
	    " (write_command_stdin). " : "",
	    (sets & TOOLSET_OBSERVABILITY) ? "events lists what a sandbox"
	    " recorded (sessions, layers, commands), newest first; trace"
	    " shows a tool call's steps as a tree. " : "");
	if (*s != '\0' && s[strlen(s) - 1] == ' ')
		s[strlen(s) - 1] = '\0';
	return (s);
}

static cJSON *
mcp_initialize(struct mcp_session *s, const cJSON *id, cJSON *params)
{
	cJSON		*result, *v, *caps, *info;
	const char	*version;
	char		*text;

	if (s->initialized)
		return (jsonrpc_error(id, JSONRPC_INVALID_REQUEST,
		    "the session is already initialized"));
	if (!cJSON_IsObject(params))
		return (jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "initialize needs params with a protocolVersion"));
	v = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	if (!cJSON_IsString(v))
		return (jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "params.protocolVersion must be a string"));
	version = mcp_negotiate_version(v->valuestring);
	strlcpy(s->version, version, sizeof s->version);
	s->initialized = 1;

	v = cJSON_GetObjectItemCaseSensitive(params, "clientInfo");
	if (cJSON_IsObject(v) && cJSON_IsString(cJSON_GetObjectItem(v,
	    "name")))
		log_debug("mcp session initialized client=\"%.64s\" version=%s"
		    " key=%s tenant=%s", cJSON_GetObjectItem(v,
		    "name")->valuestring, version, s->key != NULL ? s->key :
		    "-", s->tenant);

	result = cJSON_CreateObject();
	cJSON_AddStringToObject(result, "protocolVersion", version);
	caps = cJSON_AddObjectToObject(result, "capabilities");
	v = cJSON_AddObjectToObject(caps, "tools");
	cJSON_AddFalseToObject(v, "listChanged");
	cJSON_AddObjectToObject(caps, "logging");
	info = cJSON_AddObjectToObject(result, "serverInfo");
	cJSON_AddStringToObject(info, "name", SANDBOX_MCP_NAME);
	cJSON_AddStringToObject(info, "title", SANDBOX_MCP_TITLE);
	cJSON_AddStringToObject(info, "version", PACKAGE_VERSION);
	text = mcp_instructions(s->sets);
	cJSON_AddStringToObject(result, "instructions", text);
	free(text);
	return (jsonrpc_result(id, result));
}

static cJSON *
mcp_set_level(struct mcp_session *s, const cJSON *id, cJSON *params)
{
	cJSON	*v;
	size_t	 i;

	v = cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params,
	    "level") : NULL;
	if (!cJSON_IsString(v))
		return (jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "params.level must be a string"));
	for (i = 0; i < sizeof mcp_log_levels / sizeof mcp_log_levels[0];
	    i++) {
		if (strcmp(v->valuestring, mcp_log_levels[i]) == 0) {
			s->log_level = (int)i;
			return (jsonrpc_result(id, cJSON_CreateObject()));
		}
	}
	return (jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
	    "params.level must be one of debug, info, notice, warning, error,"
	    " critical, alert, emergency"));
}

static void
mcp_cancelled(struct mcp_session *s, cJSON *params)
{
	struct mcp_request	*r;
	cJSON			*id;

	id = cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params,
	    "requestId") : NULL;
	if (!jsonrpc_id_valid(id))
		return;
	TAILQ_FOREACH(r, &s->inflight, entry) {
		if (!cJSON_Compare(r->id, id, 1) || r->cancelled)
			continue;
		log_debug("%s: request cancelled by the client", __func__);
		r->cancelled = MCP_CANCELLED_BY_PEER;
		if (r->call != NULL)
			op_call_cancel(r->call);
		break;
	}
}

/* A tool call has finished: wrap its answer and reply. */
static void
mcp_tool_done(struct op_call *call, cJSON *result, const struct cause *cause,
    void *arg)
{
	struct mcp_request	*r = arg;
	struct mcp_reply	*reply = r->reply;
	struct mcp_session	*s = reply->session;
	cJSON			*response, *envelope;

	envelope = mcp_tools_envelope(result, cause);
	r->done = 1;
	r->call = NULL;
	TAILQ_REMOVE(&s->inflight, r, entry);
	if (r->cancelled == MCP_CANCELLED_BY_PEER ||
	    (r->cancelled && s->transport == MCP_TRANSPORT_STDIO)) {
		/* The peer asked us not to answer. */
		cJSON_Delete(envelope);
		response = NULL;
	} else
		response = jsonrpc_result(r->id, mcp_result_shape(s, r,
		    envelope));
	cJSON_Delete(r->id);
	free(r);
	mcp_reply_add(reply, response);
}

/*
 * Start a tool call. It takes over the reply slot the caller reserved and
 * answers through mcp_tool_done, perhaps before this returns.
 */
static void
mcp_tools_call(struct mcp_session *s, struct mcp_reply *reply,
    const cJSON *id, cJSON *args, const char *name, int modern, int level,
    const char *traceparent)
{
	struct mcp_request	*r;
	struct op_call		*call;

	r = xcalloc(1, sizeof *r);
	r->reply = reply;
	r->id = cJSON_Duplicate(id, 1);
	r->modern = modern;
	r->log_level = level;
	TAILQ_INSERT_TAIL(&s->inflight, r, entry);
	telemetry_context(traceparent, s->key);
	call = op_call_start(name, args, s->sets, s->tenant, 0,
	    mcp_tool_done, r);
	telemetry_context(NULL, NULL);
	if (call != NULL)
		r->call = call;	/* else r is already answered and freed */
}

/* The version a request's _meta names (the modern era), or NULL. */
static const char *
mcp_meta_version(const cJSON *params)
{
	const cJSON	*meta, *v;

	meta = cJSON_IsObject(params) ?
	    cJSON_GetObjectItemCaseSensitive(params, "_meta") : NULL;
	v = cJSON_IsObject(meta) ?
	    cJSON_GetObjectItemCaseSensitive(meta, MCP_META_VERSION) : NULL;
	return (cJSON_IsString(v) ? v->valuestring : NULL);
}

static int
mcp_modern_supported(const char *v)
{
	size_t	i;

	for (i = 0; i < sizeof mcp_modern_versions /
	    sizeof mcp_modern_versions[0]; i++) {
		if (strcmp(v, mcp_modern_versions[i]) == 0)
			return (1);
	}
	return (0);
}

/* Every version we speak, newest first. */
static cJSON *
mcp_all_versions(void)
{
	cJSON	*a;
	size_t	 i;

	a = cJSON_CreateArray();
	for (i = 0; i < sizeof mcp_modern_versions /
	    sizeof mcp_modern_versions[0]; i++)
		cJSON_AddItemToArray(a,
		    cJSON_CreateString(mcp_modern_versions[i]));
	for (i = 0; i < sizeof mcp_versions / sizeof mcp_versions[0]; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(mcp_versions[i]));
	return (a);
}

/* Add _meta with our identity to a modern result. */
static void
mcp_server_meta(cJSON *result)
{
	cJSON	*meta, *info;

	meta = cJSON_AddObjectToObject(result, "_meta");
	info = cJSON_AddObjectToObject(meta, MCP_META_SERVER);
	cJSON_AddStringToObject(info, "name", SANDBOX_MCP_NAME);
	cJSON_AddStringToObject(info, "title", SANDBOX_MCP_TITLE);
	cJSON_AddStringToObject(info, "version", PACKAGE_VERSION);
}

/*
 * A modern result: resultType, our identity and, for what may be cached,
 * the caching hints. What a peer sees depends on the sets its API key
 * grants, so with keys configured its answers are private to the key.
 */
static cJSON *
mcp_modern_result(struct mcp_session *s, cJSON *result, int cacheable)
{
	cJSON_AddStringToObject(result, "resultType", "complete");
	if (cacheable) {
		cJSON_AddNumberToObject(result, "ttlMs", MCP_CACHE_TTL_MS);
		cJSON_AddStringToObject(result, "cacheScope",
		    s->key != NULL ? "private" : "public");
	}
	mcp_server_meta(result);
	return (result);
}

/*
 * Shape a tool call's envelope for its peer. The envelope keeps content
 * empty (the result is in structuredContent) except for a 2025-03-26
 * session, whose revision has no structuredContent, and when the
 * configuration says result-text yes: then content holds one text item
 * with the same JSON.
 */
static cJSON *
mcp_result_shape(struct mcp_session *s, struct mcp_request *r, cJSON *env)
{
	cJSON	*content, *item;
	char	*text;

	if ((cfg != NULL && cfg->result_text) || (!r->modern &&
	    s->initialized && strcmp(s->version, "2025-03-26") == 0)) {
		content = cJSON_GetObjectItemCaseSensitive(env, "content");
		text = util_json_print(cJSON_GetObjectItemCaseSensitive(env,
		    "structuredContent"));
		item = cJSON_CreateObject();
		cJSON_AddStringToObject(item, "type", "text");
		cJSON_AddStringToObject(item, "text", text);
		free(text);
		cJSON_AddItemToArray(content, item);
	}
	if (r->modern)
		mcp_modern_result(s, env, 0);
	return (env);
}

static cJSON *
mcp_unknown_tool(const cJSON *id, const char *name)
{
	return (jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
	    "unknown tool: %.100s", name));
}

/* server/discover: what we speak, can do and are. */
static cJSON *
mcp_discover(struct mcp_session *s, const cJSON *id)
{
	cJSON	*result, *caps, *v;
	char	*text;

	result = cJSON_CreateObject();
	cJSON_AddItemToObject(result, "supportedVersions",
	    mcp_all_versions());
	caps = cJSON_AddObjectToObject(result, "capabilities");
	v = cJSON_AddObjectToObject(caps, "tools");
	cJSON_AddFalseToObject(v, "listChanged");
	text = mcp_instructions(s->sets);
	cJSON_AddStringToObject(result, "instructions", text);
	free(text);
	return (jsonrpc_result(id, mcp_modern_result(s, result, 1)));
}

/*
 * tools/list: one page (a cursor is accepted and ignored); the list text
 * is built once and carried verbatim.
 */
static cJSON *
mcp_tools_list(struct mcp_session *s, const cJSON *id, cJSON *params,
    int modern)
{
	cJSON	*result, *v;

	v = cJSON_GetObjectItemCaseSensitive(params, "cursor");
	if (v != NULL && !cJSON_IsString(v) && !cJSON_IsNull(v))
		return (jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "invalid params: params.cursor must be a string"));

	result = cJSON_CreateObject();
	cJSON_AddItemToObject(result, "tools", cJSON_CreateRaw(
	    mcp_tools_list_json(s->sets, modern ? MCP_TOOLS_MODERN :
	    strcmp(s->version, "2025-03-26") == 0 ? MCP_TOOLS_2025_03 :
	    MCP_TOOLS_2025)));
	if (modern)
		mcp_modern_result(s, result, 1);
	return (jsonrpc_result(id, result));
}

/*
 * tools/call in either era: its params checked, then the call started
 * (1) or refused with *response set (0).
 */
static int
mcp_tools_call_params(struct mcp_session *s, struct mcp_reply *reply,
    const cJSON *id, cJSON *params, int modern, int level, cJSON **response)
{
	cJSON		*name, *args, *meta;
	const char	*tp;

	name = cJSON_GetObjectItemCaseSensitive(params, "name");
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (!cJSON_IsString(name))
		*response = jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "invalid params: params.name must be a string");
	else if (args != NULL && !cJSON_IsObject(args) && !cJSON_IsNull(args))
		*response = jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "invalid params: params.arguments must be an object");
	else if (op_find(name->valuestring, s->sets) == NULL)
		*response = mcp_unknown_tool(id, name->valuestring);
	else {
		/* W3C trace context, as params._meta.traceparent. */
		meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
		tp = cJSON_GetStringValue(cJSON_IsObject(meta) ?
		    cJSON_GetObjectItemCaseSensitive(meta, "traceparent") :
		    NULL);
		mcp_tools_call(s, reply, id, cJSON_IsObject(args) ? args :
		    NULL, name->valuestring, modern, level, tp);
		return (1);
	}
	return (0);
}

/*
 * A request of the stateless era (2026-07-28): everything it needs is in
 * its _meta, checked here before the method runs: the version, the
 * client's capabilities (required), its log level (optional), then the
 * transport's own checks (HTTP headers), then whether we speak the
 * version. initialize, ping and logging/setLevel are not methods of this
 * era.
 */
static int
mcp_handle_modern(struct mcp_session *s, struct mcp_reply *reply,
    cJSON *msg, const cJSON *id, const char *m, cJSON *params,
    cJSON **response)
{
	cJSON		*meta, *v, *err;
	const char	*version;
	int		 level = -1;
	size_t		 i;

	if (id == NULL) {
		log_trace(TRACE_JSONRPC, "notification %.100s (stateless)", m);
		if (strcmp(m, "notifications/cancelled") == 0)
			mcp_cancelled(s, params);
		return (0);
	}
	log_trace(TRACE_JSONRPC, "request %.100s (stateless)", m);
	meta = cJSON_IsObject(params) ?
	    cJSON_GetObjectItemCaseSensitive(params, "_meta") : NULL;
	if (!cJSON_IsObject(meta)) {
		*response = jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "invalid params: params._meta is required, with "
		    MCP_META_VERSION " and " MCP_META_CAPABILITIES);
		return (0);
	}
	if ((version = mcp_meta_version(params)) == NULL) {
		*response = jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "invalid params: params._meta." MCP_META_VERSION
		    " must be a string");
		return (0);
	}
	if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(meta,
	    MCP_META_CAPABILITIES))) {
		*response = jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "invalid params: params._meta." MCP_META_CAPABILITIES
		    " must be an object");
		return (0);
	}
	v = cJSON_GetObjectItemCaseSensitive(meta, MCP_META_CLIENT);
	if (v != NULL && !cJSON_IsObject(v)) {
		*response = jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
		    "invalid params: params._meta." MCP_META_CLIENT
		    " must be an object");
		return (0);
	}
	if ((v = cJSON_GetObjectItemCaseSensitive(meta,
	    MCP_META_LOG_LEVEL)) != NULL) {
		for (i = 0; cJSON_IsString(v) && i < sizeof mcp_log_levels /
		    sizeof mcp_log_levels[0]; i++) {
			if (strcmp(v->valuestring, mcp_log_levels[i]) == 0)
				level = (int)i;
		}
		if (level == -1) {
			*response = jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
			    "invalid params: params._meta." MCP_META_LOG_LEVEL
			    " must be one of debug, info, notice, warning,"
			    " error, critical, alert, emergency");
			return (0);
		}
	}
	if (s->check != NULL &&
	    (*response = s->check(msg, version, s->check_arg)) != NULL)
		return (0);
	if (!mcp_modern_supported(version)) {
		*response = jsonrpc_error(id, MCP_ERR_UNSUPPORTED_VERSION,
		    "unsupported protocol version %.32s: this server speaks"
		    " 2026-07-28 per request, and 2025-11-25, 2025-06-18"
		    " and 2025-03-26 through initialize", version);
		err = cJSON_GetObjectItemCaseSensitive(*response, "error");
		v = cJSON_AddObjectToObject(err, "data");
		cJSON_AddItemToObject(v, "supported", mcp_all_versions());
		cJSON_AddStringToObject(v, "requested", version);
		return (0);
	}

	if (strcmp(m, "server/discover") == 0)
		*response = mcp_discover(s, id);
	else if (strcmp(m, "tools/list") == 0)
		*response = mcp_tools_list(s, id, params, 1);
	else if (strcmp(m, "tools/call") == 0)
		return (mcp_tools_call_params(s, reply, id, params, 1, level,
		    response));
	else
		*response = jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND,
		    "method not found: %.100s (protocol version %s)", m,
		    version);
	return (0);
}

/*
 * Handle one JSON-RPC message. Returns 0 with *response set (NULL when
 * there is nothing to send: a notification or a response from the peer),
 * or 1 when a tools/call took over the reply slot and answers later.
 */
static int
mcp_handle(struct mcp_session *s, struct mcp_reply *reply, cJSON *msg,
    cJSON **response)
{
	cJSON		*v, *id, *method, *params;
	const char	*m;

	*response = NULL;
	if (!cJSON_IsObject(msg)) {
		*response = jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST,
		    "invalid request: a JSON-RPC message must be an object");
		return (0);
	}
	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	v = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	method = cJSON_GetObjectItemCaseSensitive(msg, "method");
	params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0) {
		*response = jsonrpc_error(id, JSONRPC_INVALID_REQUEST,
		    "invalid request: jsonrpc must be \"2.0\"");
		return (0);
	}
	if (method == NULL) {
		if (cJSON_GetObjectItem(msg, "result") == NULL &&
		    cJSON_GetObjectItem(msg, "error") == NULL)
			*response = jsonrpc_error(id, JSONRPC_INVALID_REQUEST,
			    "invalid request: the message has no method");
		return (0);	/* a response: we send no requests */
	}
	if (!cJSON_IsString(method)) {
		*response = jsonrpc_error(id, JSONRPC_INVALID_REQUEST,
		    "invalid request: method must be a string");
		return (0);
	}
	if (id != NULL && !jsonrpc_id_valid(id)) {
		*response = jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST,
		    "invalid request: id must be a string or a number");
		return (0);
	}
	m = method->valuestring;
	if (params != NULL && !cJSON_IsObject(params)) {
		if (id != NULL)
			*response = jsonrpc_error(id, JSONRPC_INVALID_PARAMS,
			    "invalid params: params must be an object");
		return (0);
	}

	/*
	 * Over HTTP a request of the stateless era has its headers checked
	 * on the way in (transport-http.c), which a 2025 session's requests
	 * skip: one that comes on such a session is refused, so that what a
	 * proxy routes by always matches the body.
	 */
	if (!s->stateless && s->transport == MCP_TRANSPORT_HTTP &&
	    mcp_meta_version(params) != NULL) {
		if (id != NULL)
			*response = jsonrpc_error(id, JSONRPC_INVALID_REQUEST,
			    "invalid request: a request naming its protocol"
			    " version in params._meta is served without a"
			    " session; send it without Mcp-Session-Id and"
			    " with MCP-Protocol-Version");
		return (0);
	}
	if (s->stateless || mcp_meta_version(params) != NULL)
		return (mcp_handle_modern(s, reply, msg, id, m, params,
		    response));
	if (id == NULL) {
		log_trace(TRACE_JSONRPC, "notification %.100s", m);
		if (strcmp(m, "notifications/initialized") == 0)
			s->notified = 1;
		else if (strcmp(m, "notifications/cancelled") == 0)
			mcp_cancelled(s, params);
		return (0);
	}
	log_trace(TRACE_JSONRPC, "request %.100s", m);

	if (strcmp(m, "initialize") == 0)
		*response = mcp_initialize(s, id, params);
	else if (strcmp(m, "ping") == 0)
		*response = jsonrpc_result(id, cJSON_CreateObject());
	else if (!s->initialized)
		*response = jsonrpc_error(id, JSONRPC_NOT_INITIALIZED,
		    "server not initialized: send initialize first");
	else if (strcmp(m, "tools/list") == 0)
		*response = mcp_tools_list(s, id, params, 0);
	else if (strcmp(m, "tools/call") == 0)
		return (mcp_tools_call_params(s, reply, id, params, 0, -1,
		    response));
	else if (strcmp(m, "logging/setLevel") == 0)
		*response = mcp_set_level(s, id, params);
	else
		*response = jsonrpc_error(id, JSONRPC_METHOD_NOT_FOUND,
		    "method not found: %.100s", m);
	return (0);
}

/* Store one response (NULL: none) and finish the reply when all are in. */
static void
mcp_reply_add(struct mcp_reply *reply, cJSON *response)
{
	if (response != NULL) {
		if (reply->batch)
			cJSON_AddItemToArray(reply->responses, response);
		else {
			cJSON_Delete(reply->single);
			reply->single = response;
		}
	}
	if (--reply->pending == 0 && !reply->receiving)
		mcp_reply_finish(reply);
}

/* Deliver the reply (unless detached) and free it. */
static void
mcp_reply_finish(struct mcp_reply *reply)
{
	cJSON	*out;

	if (reply->batch) {
		out = cJSON_GetArraySize(reply->responses) > 0 ?
		    reply->responses : NULL;
		if (out == NULL)
			cJSON_Delete(reply->responses);
	} else
		out = reply->single;
	if (!reply->detached)
		reply->cb(reply, out, reply->arg);
	cJSON_Delete(out);
	mcp_session_unref(reply->session);
	free(reply);
}

/*
 * Stop delivering a reply: the transport is gone. The work it waits for
 * is told to stop waiting; the reply is freed when it completes.
 */
void
mcp_reply_detach(struct mcp_reply *reply)
{
	struct mcp_request	*r;
	struct op_call		**calls = NULL;
	size_t			 n = 0, i;

	if (reply == NULL)
		return;
	reply->detached = 1;
	/*
	 * A call may answer as it is cancelled, which frees its request
	 * (and, with the last, the reply): the list is walked first.
	 */
	TAILQ_FOREACH(r, &reply->session->inflight, entry) {
		if (r->reply == reply && r->call != NULL && !r->cancelled) {
			r->cancelled = 1;
			calls = xreallocarray(calls, n + 1, sizeof *calls);
			calls[n++] = r->call;
		}
	}
	for (i = 0; i < n; i++)
		op_call_cancel(calls[i]);
	free(calls);
}

/*
 * An engine notice (notice.c): a notifications/message to every 2025-era
 * session that can take one, whose level lets it through and whose
 * tenant sees the tenant of the notice.
 */
static void
mcp_notice(const char *tenant, int level, cJSON *data)
{
	struct mcp_session	*s, *s1;
	cJSON			*msg, *params;

	TAILQ_FOREACH_SAFE(s, &mcp_pushable, push_entry, s1) {
		if (!s->initialized || strncmp(s->version, "2025-", 5) != 0 ||
		    level < s->log_level || !op_tenant_sees(s->tenant, tenant))
			continue;
		msg = cJSON_CreateObject();
		cJSON_AddStringToObject(msg, "jsonrpc", "2.0");
		cJSON_AddStringToObject(msg, "method",
		    "notifications/message");
		params = cJSON_AddObjectToObject(msg, "params");
		cJSON_AddStringToObject(params, "level",
		    mcp_log_levels[level]);
		cJSON_AddStringToObject(params, "logger", SANDBOX_MCP_NAME);
		cJSON_AddItemToObject(params, "data", cJSON_Duplicate(data, 1));
		s->push(msg, s->push_arg);
		cJSON_Delete(msg);
	}
}

/*
 * How a transport takes a notification for a session at any time (NULL:
 * it cannot); it may drop it when it has no way to the peer.
 */
void
mcp_session_set_push(struct mcp_session *s, mcp_push_cb cb, void *arg)
{
	if ((s->push != NULL) != (cb != NULL)) {
		if (cb != NULL)
			TAILQ_INSERT_TAIL(&mcp_pushable, s, push_entry);
		else
			TAILQ_REMOVE(&mcp_pushable, s, push_entry);
	}
	s->push = cb;
	s->push_arg = arg;
	notice_register(mcp_notice);
}

/* Deliver a reply elsewhere: its transport hands it on (an event stream). */
void
mcp_reply_retarget(struct mcp_reply *reply, mcp_reply_cb cb, void *arg)
{
	reply->cb = cb;
	reply->arg = arg;
}

/*
 * Dispatch one message of a single message or a batch, reserving its slot
 * in the reply. initialize may not come in a batch.
 */
static void
mcp_dispatch(struct mcp_session *s, struct mcp_reply *reply, cJSON *msg)
{
	cJSON	*response, *m;

	reply->pending++;
	m = cJSON_IsObject(msg) ? cJSON_GetObjectItemCaseSensitive(msg,
	    "method") : NULL;
	if (reply->batch && cJSON_IsString(m) &&
	    strcmp(m->valuestring, "initialize") == 0) {
		mcp_reply_add(reply, jsonrpc_error(cJSON_GetObjectItem(msg,
		    "id"), JSONRPC_INVALID_REQUEST, "invalid request:"
		    " initialize must not be part of a batch"));
		return;
	}
	if (mcp_handle(s, reply, msg, &response) == 0)
		mcp_reply_add(reply, response);
}

/* Whether a message (its raw bytes) is an initialize request. */
int
mcp_message_is_initialize(const char *buf, size_t len)
{
	cJSON	*msg, *m;
	int	 yes;

	if ((msg = cJSON_ParseWithLength(buf, len)) == NULL)
		return (0);
	m = cJSON_IsObject(msg) ? cJSON_GetObjectItemCaseSensitive(msg,
	    "method") : NULL;
	yes = cJSON_IsString(m) && strcmp(m->valuestring, "initialize") == 0;
	cJSON_Delete(msg);
	return (yes);
}

/*
 * Take one message from a peer. The callback receives the response (or
 * NULL for nothing to send) exactly once unless the reply is detached;
 * it may run before this returns, in which case NULL is returned.
 * The caller has checked the size bound; the bytes need not end in NUL.
 */
struct mcp_reply *
mcp_receive(struct mcp_session *s, const char *buf, size_t len,
    mcp_reply_cb cb, void *arg)
{
	struct mcp_reply	*reply;
	cJSON			*msg, *item, *peek = NULL;
	const char		*dup, *end = NULL;
	char			*nulfree;

	reply = xcalloc(1, sizeof *reply);
	reply->session = s;
	s->references++;
	reply->cb = cb;
	reply->arg = arg;
	reply->receiving = 1;
	reply->pending = 1;	/* held until the message is dispatched */

	nulfree = util_json_mark_nuls(buf, len);
	if (nulfree != NULL) {
		buf = nulfree;
		len = strlen(nulfree);
	}
	/* A message that cannot be read answers the id its head shows. */
	if (!util_utf8_valid(buf, len)) {
		peek = jsonrpc_peek_id(buf, len);
		reply->single = jsonrpc_error(peek, JSONRPC_PARSE_ERROR,
		    "parse error: the message is not valid UTF-8");
	} else if ((msg = cJSON_ParseWithLengthOpts(buf, len, &end, 0)) ==
	    NULL) {
		peek = jsonrpc_peek_id(buf, len);
		reply->single = jsonrpc_error(peek, JSONRPC_PARSE_ERROR,
		    "parse error: the message is not valid JSON");
	} else if (!util_json_blank(end, buf + len)) {
		/* A second document is a second reading of the message. */
		reply->single = jsonrpc_error(NULL, JSONRPC_PARSE_ERROR,
		    "parse error: something follows the message's JSON value");
		cJSON_Delete(msg);
	} else if ((dup = util_json_duplicate(msg)) != NULL) {
		reply->single = jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST,
		    "invalid request: member \"%.100s\" is given twice in"
		    " one object", dup);
		cJSON_Delete(msg);
	} else if (cJSON_IsArray(msg)) {
		if (cJSON_GetArraySize(msg) == 0)
			reply->single = jsonrpc_error(NULL,
			    JSONRPC_INVALID_REQUEST,
			    "invalid request: an empty batch");
		else if (!s->initialized ||
		    strcmp(s->version, "2025-03-26") != 0)
			reply->single = jsonrpc_error(NULL,
			    JSONRPC_INVALID_REQUEST,
			    "invalid request: batches are not supported in"
			    " protocol version %s",
			    s->initialized ? s->version : "(none yet)");
		else {
			reply->batch = 1;
			reply->responses = cJSON_CreateArray();
			cJSON_ArrayForEach(item, msg)
				mcp_dispatch(s, reply, item);
		}
		cJSON_Delete(msg);
	} else {
		mcp_dispatch(s, reply, msg);
		cJSON_Delete(msg);
	}

	cJSON_Delete(peek);
	free(nulfree);
	reply->receiving = 0;
	if (--reply->pending == 0) {
		mcp_reply_finish(reply);
		return (NULL);
	}
	return (reply);
}

/*
 * Take one message of the stateless era from a peer that holds no
 * session (an HTTP request with no Mcp-Session-Id): it is served with the
 * sets and tenant given here, after check (may be NULL) has looked at it
 * for the transport. Otherwise as mcp_receive.
 */
struct mcp_reply *
mcp_receive_stateless(int transport, int sets, const char *key,
    const char *tenant, const char *buf, size_t len, mcp_check_cb check,
    void *check_arg, mcp_reply_cb cb, void *arg)
{
	struct mcp_session	*s;
	struct mcp_reply	*reply;

	s = mcp_session_new(transport, sets, key, tenant);
	s->stateless = 1;
	s->check = check;
	s->check_arg = check_arg;
	reply = mcp_receive(s, buf, len, cb, arg);
	mcp_session_unref(s);	/* the reply holds it while it runs */
	return (reply);
}

/*
 * What a message (its raw bytes) opens: MCP_MSG_INITIALIZE, MCP_MSG_MODERN
 * (its params._meta names a protocol version) or MCP_MSG_OTHER.
 */
int
mcp_message_era(const char *buf, size_t len)
{
	cJSON	*msg, *m;
	int	 era = MCP_MSG_OTHER;

	if ((msg = cJSON_ParseWithLength(buf, len)) == NULL)
		return (MCP_MSG_OTHER);
	m = cJSON_IsObject(msg) ? cJSON_GetObjectItemCaseSensitive(msg,
	    "method") : NULL;
	if (cJSON_IsObject(msg) && mcp_meta_version(
	    cJSON_GetObjectItemCaseSensitive(msg, "params")) != NULL)
		era = MCP_MSG_MODERN;
	else if (cJSON_IsString(m) && strcmp(m->valuestring, "initialize") ==
	    0)
		era = MCP_MSG_INITIALIZE;
	cJSON_Delete(msg);
	return (era);
}
