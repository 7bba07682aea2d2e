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
 * sandbox-mcp: the project header. Shared types and every cross-file
 * prototype, grouped by the file that defines them.
 */

#ifndef SANDBOX_MCP_H
#define SANDBOX_MCP_H

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <stdarg.h>
#include <stdint.h>

#include "compat.h"
#include "log.h"
#include "xmalloc.h"

struct addrinfo;
struct cJSON;
struct event;
struct event_base;
struct evbuffer;
struct tspan;

#define SANDBOX_MCP_NAME	"sandbox-mcp"
#define SANDBOX_MCP_TITLE	"Sandbox MCP"

/* Largest integer a JSON number carries exactly: 2^53. */
#define JSON_MAX_INTEGER	9007199254740992LL

/* Tool sets: each is a separate grant. */
#define TOOLSET_MANAGEMENT	0x01
#define TOOLSET_RUNTIME		0x02
#define TOOLSET_OBSERVABILITY	0x04
#define TOOLSET_ALL		0x07

/* Configurable limits; cfg.c holds the table with names and defaults. */
enum limit {
	LIMIT_MAX_BODY,
	LIMIT_MAX_HEADER,
	LIMIT_MAX_CONNECTIONS,
	LIMIT_MAX_SESSIONS,
	LIMIT_HEADER_TIMEOUT,
	LIMIT_BODY_TIMEOUT,
	LIMIT_IDLE_TIMEOUT,
	LIMIT_SESSION_IDLE,
	LIMIT_DOCKER_CONNECT_TIMEOUT,
	LIMIT_DOCKER_TIMEOUT,
	LIMIT_DOCKER_MAX_REPLY,
	LIMIT_DOCKER_MAX_REQUESTS,
	LIMIT_LIST_DIRECTORIES,
	LIMIT_SANDBOXES_PER_CALL,
	LIMIT_BASE_MAX_ENTRIES,
	LIMIT_BASE_MAX_BYTES,
	LIMIT_COMMANDS_RUNNING,
	LIMIT_COMMANDS_RETAINED,
	LIMIT_TRANSCRIPT_MAX,
	LIMIT_OUTPUT_WINDOW,
	LIMIT_SESSION_POOL,
	LIMIT_HELPER_PROCESSES,
	LIMIT_HELPER_PER_SANDBOX,
	LIMIT_HELPER_QUEUE,
	LIMIT_HELPER_CPUS,
	LIMIT_HELPER_MEMORY,
	LIMIT_HELPER_PIDS,
	LIMIT_SESSIONS_PER_SANDBOX,
	LIMIT_SESSIONS_TOTAL,
	LIMIT_MAX_SESSIONS_PER_KEY,
	LIMIT_MAX_CONNECTIONS_PER_ADDRESS,
	LIMIT_SESSIONS_PER_TENANT,
	LIMIT_COMMANDS_PER_TENANT,
	LIMIT_HELPER_PER_TENANT,
	LIMIT_SANDBOXES_PER_TENANT,
	LIMIT_SSE_KEEPALIVE,
	LIMIT_SSE_RESUME_MAX,
	LIMIT__COUNT
};

struct cfg_words;
struct cfg_word {
	char			*word;
	TAILQ_ENTRY(cfg_word)	 entry;
	struct cfg_words	*tenants;	/* NULL: a root for all */
};
TAILQ_HEAD(cfg_words, cfg_word);

struct cfg_apikey {
	char			*name;
	unsigned char		 hash[32];
	int			 sets;
	TAILQ_ENTRY(cfg_apikey)	 entry;
	char			*tenant;	/* the name unless grouped */
};
TAILQ_HEAD(cfg_apikeys, cfg_apikey);

#define CFG_DISK_DEFAULT	(10LL * 1024 * 1024 * 1024)
#define CFG_DISK_MIN		(16LL * 1024 * 1024)
#define CFG_DISK_MAX		(16LL * 1024 * 1024 * 1024 * 1024)
struct cfg_profile {
	uint64_t		 nano_cpus;
	int64_t			 memory_high;
	int64_t			 memory_max;
	int64_t			 pids;
	int64_t			 disk;		/* bytes; 0: none */
};

/* The configuration, read once at start-up and then read-only. */
struct cfg {
	char			*path;
	char			*state_dir;
	char			*docker_host;
	char			*docker_socket;	/* path from docker_host */
	char			*listen;
	struct cfg_words	 roots;
	struct cfg_apikeys	 apikeys;
	struct cfg_words	 origins;
	struct cfg_words	 proxies;
	struct cfg_profile	 profile;
	long long		 limits[LIMIT__COUNT];
	int			 result_text;	/* text content for all */
	struct cfg_words	 public_hosts;
};

/* proc.c */
extern struct event_base	*ev_base;
extern struct cfg		*cfg;
extern int			 opt_sets;
void		 proc_init(void);
void		 proc_loop(void);
void		 proc_hold(void);
void		 proc_release(void);
void		 proc_set_stop(void (*)(void));
void		 proc_nofile_restore(void);

/* cfg.c */
struct cfg	*cfg_new(void);
void		 cfg_free(struct cfg *);
int		 cfg_load(struct cfg *, const char *, int);
int		 cfg_parse_buffer(struct cfg *, const char *, const char *,
		     size_t);
int		 cfg_finish(struct cfg *, char **);
struct addrinfo	*cfg_listen_resolve(const char *, char **);
int		 cfg_parse_sets(const char *, int *, char **);
const char	*cfg_set_name(int);
char		*cfg_sets_string(int);
const char	*cfg_limit_name(enum limit);
long long	 cfg_limit(enum limit);
int		 cfg_parse_size(const char *, long long *);

/* util.c */
int		 util_random_hex(char *, size_t);
void		 util_hex(const unsigned char *, size_t, char *);
int		 util_utf8_valid(const char *, size_t);
int		 util_id_valid(const char *);
int		 util_id_valid_layer(const char *);
void		 util_sha256(const void *, size_t, unsigned char[32]);
int		 util_base64url(const unsigned char *, size_t, char *, size_t);
int		 util_set_nonblock(int);
int		 util_set_cloexec(int);
char		*util_json_print(struct cJSON *);
int		 util_mkdir_p(const char *, mode_t, char **);
int		 util_write_atomic(const char *, const void *, size_t, char **);
char		*util_read_file(const char *, size_t, size_t *);
int		 util_lock_file(const char *);
int		 util_write_file(const char *, const void *, size_t, int,
		     char **);
void		 util_json_init(void);
uint64_t	 now_ms(void);
uint64_t	 mono_us(void);
int		 util_sockaddr_loopback(const struct sockaddr *);
char		*util_url_escape(const char *, int);
char		*util_log_safe(const char *, char *, size_t);

/* state.c */
char		*state_path(const char *, ...)
		     __attribute__((__format__ (printf, 1, 2)));
int		 state_init(char **);
unsigned long long state_process_start(pid_t);
struct cJSON	*state_owner_self(void);
int		 state_owner_is_self(struct cJSON *);
int		 state_owner_alive(struct cJSON *);
int		 state_lock(const char *);
void		 state_unlock(int);
int		 state_record_gone(const char *);
struct cJSON	*state_record_read(const char *);
int		 state_record_write(const char *, struct cJSON *, char **);
int		 state_sandbox_create(const char *, char **);
char		*state_sandbox_trash(const char *, char **);
char		**state_sandbox_ids(size_t *);
int		 state_sandbox_init(const char *, char **);
int		 state_sandbox_forget(const char *, char **);
char		*state_trash_path(const char *, const char *);

/* layer.c */
struct layer_stack {
	int		  version;
	size_t		  n;
	char		**ids;
	char		**paths;	/* absolute, newest first */
};
enum layer_kind {
	LAYER_ABSENT,
	LAYER_FILE,
	LAYER_DIR,
	LAYER_SYMLINK,
	LAYER_OTHER
};
#define LAYER_PARENTS_MAX	64
struct layer_entry {
	enum layer_kind	 kind;
	size_t		 layer;
	struct stat	 st;
	char		 path[4096];
	enum layer_kind	 blocker;	/* a parent that is not a directory */
	size_t		 blocker_len;
	mode_t		 parent_mode[LAYER_PARENTS_MAX];
	size_t		 nparent;
};
void		 layer_stack_free(struct layer_stack *);
struct layer_stack *layer_stack_from_json(int, struct cJSON *, char **);
struct cJSON	*layer_stack_json(struct layer_stack *);
void		 layer_stack_root_hash(struct layer_stack *, char[72]);
struct layer_stack *layer_stack_read(const char *, char **);
int		 layer_stack_write(const char *, struct layer_stack *, char **);
char		*layer_stack_text(struct layer_stack *);
char		*layer_manifest_path(const char *);
int		 layer_stack_init(const char *, const char *, char **);
int		 layer_lock(const char *);
int		 layer_lock_try(const char *);
void		 layer_unlock(int);
void		 layer_new_id(int, char, char[20]);
int		 layer_is_whiteout(const struct stat *);
int		 layer_is_opaque(const char *);
int		 layer_resolve(struct layer_stack *, const char *,
		     struct layer_entry *, char **);

/* session.c */
struct session;
struct session_publish;
typedef void (*session_cb)(struct session *, const char *, const char *,
		     void *);
enum session_state {
	SESSION_STARTING,
	SESSION_LIVE,
	SESSION_DEAD,		/* its init died on its own */
	SESSION_IDLE,		/* ended clean, kept to serve again */
	SESSION_ENDED
};
struct session;
LIST_HEAD(sessions, session);
struct rt_sandbox {
	char			 id[65];
	char			*container;
	pid_t			 pid;
	unsigned long long	 pid_start;
	char			**cgroups;
	size_t			 ncgroup;
	char			*freezer;	/* its freezer group */
	char			*tenant;	/* whose it is */
	struct job		*zjob;		/* the zygote */
	pid_t			 zpid;		/* the container pid it is in */
	int			 zctl;
	struct event		*zev;
	struct event		*zwev;		/* waiting to write to it */
	int			 zready;
	struct sessions		 sessions;
	unsigned int		 nidle;		/* spares kept for use */
	unsigned int		 spares_wanted;
	LIST_ENTRY(rt_sandbox)	 entry;
};
struct session {
	char			 id[17];
	struct rt_sandbox	*sb;
	int			 automatic;
	int			 isolated;
	enum session_state	 state;
	struct layer_stack	*lease;
	char			*lease_text;	/* for the builder to write */
	char			*dir;
	pid_t			 init;
	int			 ctl;		/* the init's control socket */
	int			 rootfd;	/* its /workspace (O_PATH) */
	struct event		*ctl_ev;
	int			 requested;
	session_cb		 start_cb;
	void			*start_arg;
	unsigned int		 commands;	/* running */
	int			 publishing;
	void			(*dead_cb)(struct session *, void *);
	void			*dead_arg;
	int			 spare;		/* built ahead, not asked for */
	struct event		*idle_ev;
	char			*cgroup;	/* its freezer group */
	struct event		*freeze_ev;
	int			 freeze_tries;
	struct session_publish	*sealing;	/* waits for "sealed" */
	LIST_ENTRY(session)	 entry;
};
typedef void (*rt_cb)(struct rt_sandbox *, const char *, const char *,
		     struct cJSON *, void *);
typedef void (*session_publish_cb)(struct session *, struct cJSON *, void *);
void		 rt_sandbox_get(const char *, rt_cb, void *);
struct session	*session_find(struct rt_sandbox *, const char *);
void		 session_create(struct rt_sandbox *, int, int, session_cb,
		     void *);
void		 session_end(struct session *, const char *);
int		 session_full(struct rt_sandbox *, const char **, char **);
int		 rt_sandbox_same_tenant(struct rt_sandbox *,
		     struct rt_sandbox *);
void		 session_when_dead(struct session *,
		     void (*)(struct session *, void *), void *);
void		 session_command_done(struct session *);
void		 rt_sandbox_forget(const char *);
void		 session_upper_size(struct session *,
		     void (*)(struct session *, unsigned long long, void *),
		     void *);
void		 session_publish(struct session *, const char *,
		     session_publish_cb, void *);
struct cJSON	*session_publish_fields(struct cJSON *);
char		**rt_sandbox_lost(const char *, const char *, const char *,
		     size_t *);

/* command.c */
struct command_wait;
typedef void (*command_cb)(struct cJSON *, const char *, const char *,
		     struct cJSON *, void *);
void		 command_exec(struct rt_sandbox *, const char *, const char *,
		     long long, long long, command_cb, void *,
		     struct command_wait **);
void		 command_stdin(struct rt_sandbox *, const char *, const char *,
		     long long, command_cb, void *, struct command_wait **);
void		 command_read(struct rt_sandbox *, const char *, long long,
		     long long, command_cb, void *);
void		 command_wait_cancel(struct command_wait *);
struct cJSON	*command_running_in(const char *, const char *);
void		 command_session_message(struct session *, char **, int);
void		 command_session_gone(struct session *);
void		 command_forget_sandbox(const char *);
void		 command_sandbox_lost(const char *, const char *);

/* publish.c */
struct publish_args {
	const char		*sandbox;
	const char		*upper;
	struct layer_stack	*base;
	const char		*owner;
	int			 copy;	/* copy files, never link them */
};
int		 publish_child(void *, int);
struct publish_file_args {
	const char		*sandbox;
	const char		*path;		/* normalized, relative */
	const char		*owner;
	int			 kind;		/* FILES_WRITE or FILES_EDIT */
	const char		*content;
	size_t			 len;
	struct cJSON		*edits;
};
int		 publish_file_child(void *, int);

/* nsexec.c */
#define NSEXEC_MSG_MAX		(160 * 1024)
#define NSEXEC_FIELDS_MAX	600
#define NSEXEC_FDS_MAX		4
struct nsexec_zygote {
	pid_t		  container_pid;
	char		**cgroup_procs;
	size_t		  ncgroup;
	char		 *argv0;	/* our command line, to blank */
	size_t		  argv_len;
};
void		 nsexec_init(int, char **);
char		*nsexec_argv(size_t *);
int		 nsexec_zygote(void *, int);
int		 nsexec_send(int, const char **, int, const int *, int);
int		 nsexec_recv(int, char *, size_t, char **, int *, int *);

/* files.c */
#define FILES_EDIT_MAX		(4 * 1024 * 1024)
#define FILES_EDITS_MAX		100
#define FILES_EDIT_OUT_MAX	(16 * 1024 * 1024)
enum files_kind {
	FILES_READ,
	FILES_WRITE,
	FILES_EDIT
};
struct files_error {
	const char	*kind;		/* TOOL_ERR_* */
	char		*message;
	struct cJSON	*details;
};
struct files_edit_result {
	char			*out;
	size_t			 outlen;
	int			 applied;
	unsigned long long	 replacements;
};
struct files_op {
	const char		*sandbox;	/* whose helper it is */
	const char		*tenant;
	enum files_kind		 kind;
	char			*path;		/* normalized, relative */
	int			 rootfd;	/* a session's /workspace, or -1 */
	struct layer_stack	*ls;		/* the snapshot otherwise */
	int			 fd;		/* the file being read */
	long long		 offset;
	long long		 limit;
	const char		*content;
	size_t			 len;
	struct cJSON		*edits;
};
typedef void (*files_cb)(struct cJSON *, struct files_error *, void *);
char		*files_path(const char *, char **);
int		 files_path_reserved(const char *);
int		 files_text(const char *, size_t);
void		 files_error_clear(struct files_error *);
struct cJSON	*files_window(const char *, size_t, long long, long long,
		     const char *, struct files_error *);
int		 files_edits_check(struct cJSON *, struct files_error *);
int		 files_edit_apply(const char *, size_t, struct cJSON *,
		     const char *, struct files_edit_result *,
		     struct files_error *);
int		 files_snapshot_find(struct layer_stack *, const char *,
		     struct layer_entry *, struct files_error *);
char		*files_read_text(int, const struct stat *, size_t,
		     const char *, size_t *, struct files_error *);
struct cJSON	*files_report(struct cJSON *, struct files_error *);
struct cJSON	*files_unreport(struct cJSON *, struct files_error *);
void		 files_op(struct files_op *, files_cb, void *);

/* audit.c */
char		*audit_prepare(const char *, struct layer_stack *,
		     const char *, const struct layer_entry *, const char *,
		     const char *, int, char **);
int		 audit_append(const char *, const char *, const char *,
		     char **);
struct cJSON	*audit_blame(const char *, const char *, const char **,
		     char **);

/* job.c */
struct job;
typedef void (*job_cb)(int, struct evbuffer *, void *);
struct job	*job_fork(const char *, int (*)(void *, int), void *, job_cb,
		     void *);
struct job	*job_fork_keep(const char *, int (*)(void *, int), void *,
		     const int *, int, job_cb, void *);
struct job	*job_helper(const char *, const char *, const char *,
		     int (*)(void *, int), void *, const int *, int, job_cb,
		     void *);
int		 job_helper_busy(void);
int		 job_parent_alive(void);
void		 job_reap(void);
void		 job_watch(pid_t, void (*)(int, void *), void *);
void		 job_unwatch(pid_t);
pid_t		 job_pid(struct job *);
void		 job_on_line(struct job *, void (*)(const char *, void *),
		     void *);
void		 job_cancel(struct job *);
void		 job_early(struct job *);
int		 job_write_all(int, const void *, size_t);

/* cgroup.c */
int		 cgroup_write(const char *, const char *, const char *);
int		 cgroup_helper_prepare(const char *, char **);
int		 cgroup_helper_join(const char *);
void		 cgroup_helper_remove(const char *);
char		*cgroup_freezer_of(pid_t);
char		*cgroup_session_create(const char *, const char *, char **);
int		 cgroup_freeze(const char *, int);
int		 cgroup_frozen(const char *);
int		 cgroup_session_remove(const char *);
void		 cgroup_session_abandon(const char *, const char *);

/* confine.c */
struct sock_fprog;
void		 confine_init(void);
void		*confine_filter_new(const char *const *, size_t);
void		 confine_bpf(void *, struct sock_fprog *);
int		 confine_enter(const char *const *, size_t,
		     const char *const *, size_t, char **);

/* tree.c */
int		 tree_open(int, const char *, int);
int		 tree_extents(int, off_t, int (*)(off_t, const char *, size_t,
		     void *), void *);
int		 tree_sparse(int, off_t);
int		 tree_digest(int, off_t, char[65]);
char		*tree_read_fd(int, size_t, size_t *);
char		*tree_read(int, const char *, size_t, size_t *);
int		 tree_remove(int, const char *);
int		 tree_remove_path(const char *);
unsigned long long tree_size(const char *);

/* basecache.c */
struct basecache_build;
typedef void (*basecache_cb)(const char *, const char *, const char *,
		     void *);
char		*basecache_path(const char *);
struct basecache_build *basecache_ensure(const char *, basecache_cb, void *);
void		 basecache_cancel(struct basecache_build *);
int		 basecache_remove_tree(const char *);

/* disk.c */
typedef void (*disk_cb)(const char *, void *);
char		*disk_image_path(const char *);
int		 disk_exists(const char *);
int		 disk_mounted(const char *);
int		 disk_present(const char *);
void		 disk_create(const char *, long long, disk_cb, void *);
void		 disk_ensure(const char *, disk_cb, void *);
int		 disk_teardown(const char *, char **);

/* sandbox.c */
struct sandbox_create;
typedef void (*sandbox_cb)(struct cJSON *, const char *, const char *,
		     struct cJSON *, void *);
struct cJSON	*sandbox_record_public(struct cJSON *);
struct sandbox_create *sandbox_create(struct tspan *, const char *,
		     const char *, long long, const char *, sandbox_cb, void *);
void		 sandbox_create_cancel(struct sandbox_create *);
struct cJSON	*sandbox_list(void);
struct cJSON	*sandbox_inspect(const char *, const char **, char **);
void		 sandbox_destroy(struct tspan *, const char *, sandbox_cb,
		     void *);
void		 sandbox_lookup(const char *, sandbox_cb, void *);
void		 sandbox_trash_empty(void);
void		 sandbox_trash_soon(void);
void		 sandbox_recover(void);
void		 sandbox_watch(void);
void		 sandbox_set_endpoint(const char *, int);

/* auth.c */
#define AUTH_LOCAL		"local"	/* the tenant of stdio peers */
#define AUTH_MEMO_MAX		128	/* longer keys are not remembered */
struct auth_memo {		/* the last key one peer presented */
	const struct cfg_apikey	*key;	/* NULL: nothing remembered */
	unsigned long		 generation;
	size_t			 len;
	char			 bytes[AUTH_MEMO_MAX];
};
const struct cfg_apikey *auth_lookup(const char *);
const struct cfg_apikey *auth_lookup_memo(struct auth_memo *, const char *);
void		 auth_memo_clear(struct auth_memo *);
void		 auth_keys_changed(void);
int		 auth_keygen(const char *, int, const char *);
int		 auth_tenant_name_valid(const char *);
const char	*auth_tenant(const struct cfg_apikey *);
const char	*auth_record_tenant(struct cJSON *);
int		 auth_sees(const char *, const char *);
int		 auth_sandbox_hidden(const char *, const char *, char **);

/* notice.c: MCP logging levels */
#define NOTICE_INFO		1
#define NOTICE_NOTICE		2
#define NOTICE_WARNING		3
#define NOTICE_ERROR		4
typedef void (*notice_cb)(const char *, int, struct cJSON *);
void		 notice_register(notice_cb);
void		 notice(const char *, int, const char *, const char *,
		     const char *, ...)
		     __attribute__((__format__ (printf, 5, 6)));

/* telemetry.c */
void		 telemetry_init(void);
struct tspan	*telemetry_span_begin(const char *, struct tspan *,
		     const char *, const char *);
void		 telemetry_span_attr_str(struct tspan *, const char *,
		     const char *);
void		 telemetry_span_attr_int(struct tspan *, const char *,
		     long long);
void		 telemetry_span_end(struct tspan *, const char *);
const char	*telemetry_span_trace(struct tspan *);
void		 telemetry_event(const char *, const char *, struct tspan *,
		     const char *, struct cJSON *);
void		 telemetry_client(const char *);

/* docker-http.c */
struct docker_req;
typedef void (*docker_cb)(struct docker_req *, void *);
struct docker_req *docker_http_request(const char *, const char *,
		     const char *, const void *, size_t, size_t, docker_cb,
		     void *);
void		 docker_http_cancel(struct docker_req *);
int		 docker_http_status(struct docker_req *);
const char	*docker_http_error(struct docker_req *);
struct evbuffer	*docker_http_body(struct docker_req *);
unsigned int	 docker_http_inflight(void);
typedef void (*docker_line_cb)(struct docker_req *, const char *, size_t,
		     void *);
struct docker_req *docker_http_stream(const char *, size_t, docker_line_cb,
		     docker_cb, void *);

/* docker.c */
typedef void (*docker_json_cb)(struct cJSON *, const char *, int, void *);
struct docker_call;
struct docker_call *docker_call(const char *, const char *, const char *,
		     struct cJSON *, struct tspan *, docker_json_cb, void *);
void		 docker_call_cancel(struct docker_call *);
char		*docker_error_message(int, struct cJSON *);
struct cJSON	*docker_image_references(struct cJSON *);

/* docker-events.c */
typedef void (*docker_event_cb)(const char *, const char *, struct cJSON *,
		     void *);
struct docker_events;
struct docker_events *docker_events_follow(struct cJSON *, docker_event_cb,
		     void *);
void		 docker_events_stop(struct docker_events *);

/* sweep.c */
void		 sweep_start(const char *, const char *, char **, size_t);

/* jsonrpc.c */
#define JSONRPC_PARSE_ERROR	-32700
#define JSONRPC_INVALID_REQUEST	-32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS	-32602
#define JSONRPC_INTERNAL_ERROR	-32603
#define JSONRPC_NOT_INITIALIZED	-32002
#define MCP_ERR_HEADER_MISMATCH	-32020
#define MCP_ERR_MISSING_CAPABILITY -32021
#define MCP_ERR_UNSUPPORTED_VERSION -32022
struct cJSON	*jsonrpc_error(const struct cJSON *, int, const char *, ...)
		     __attribute__((__format__ (printf, 3, 4)));
struct cJSON	*jsonrpc_result(const struct cJSON *, struct cJSON *);
int		 jsonrpc_id_valid(const struct cJSON *);

/* mcp.c */
#define MCP_TRANSPORT_STDIO	0
#define MCP_TRANSPORT_HTTP	1
struct mcp_session;
struct mcp_reply;
typedef void (*mcp_reply_cb)(struct mcp_reply *, struct cJSON *, void *);
typedef struct cJSON *(*mcp_check_cb)(const struct cJSON *, const char *,
		     void *);
#define MCP_MSG_OTHER		0
#define MCP_MSG_INITIALIZE	1
#define MCP_MSG_MODERN		2
struct mcp_session *mcp_session_new(int, int, const char *, const char *);
void		 mcp_session_free(struct mcp_session *);
int		 mcp_session_sets(struct mcp_session *);
const char	*mcp_session_key(struct mcp_session *);
const char	*mcp_session_tenant(struct mcp_session *);
const char	*mcp_session_version(struct mcp_session *);
int		 mcp_session_initialized(struct mcp_session *);
unsigned int	 mcp_session_pending(struct mcp_session *);
struct mcp_reply *mcp_receive(struct mcp_session *, const char *, size_t,
		     mcp_reply_cb, void *);
void		 mcp_reply_detach(struct mcp_reply *);
void		 mcp_reply_retarget(struct mcp_reply *, mcp_reply_cb, void *);
typedef void (*mcp_push_cb)(struct cJSON *, void *);
void		 mcp_session_set_push(struct mcp_session *, mcp_push_cb, void *);
int		 mcp_message_is_initialize(const char *, size_t);
struct mcp_reply *mcp_receive_stateless(int, int, const char *, const char *,
		     const char *, size_t, mcp_check_cb, void *, mcp_reply_cb,
		     void *);
int		 mcp_message_era(const char *, size_t);
int		 mcp_version_supported(const char *);
const char	*mcp_negotiate_version(const char *);

/* tool.c */
#define TOOL_READONLY		0x01
#define TOOL_DESTRUCTIVE	0x02
#define TOOL_IDEMPOTENT		0x04
#define TOOL_OPENWORLD		0x08

#define TOOL_ARG_STRING		1
#define TOOL_ARG_INTEGER	2
#define TOOL_ARG_ARRAY		3
#define TOOL_ARG_BOOLEAN	4
#define TOOL_ARG_OBJECT		5
#define TOOL_ARG_TEXT		6	/* a string that may be empty */

/* An escaped NUL in a message becomes U+10FFFE (mcp.c). */
#define TOOL_NUL_MARK		"\xf4\x8f\xbf\xbe"

#define TOOL_ERR_INVALID	"invalid_request"
#define TOOL_ERR_NOT_FOUND	"not_found"
#define TOOL_ERR_FAILED		"operation_failed"
#define TOOL_ERR_CONFLICT	"conflict"
#define TOOL_ERR_BUSY		"server_busy"
#define TOOL_ERR_UNAUTHORIZED	"unauthorized"
#define TOOL_ERR_INTERNAL	"internal_error"

struct tool_call;

struct tool_arg {
	const char	*name;
	int		 type;
	int		 required;
	long long	 minimum;	/* integers; -1 for none */
	const char	*dflt;		/* JSON text of the default, or NULL */
	const char	*description;
};

struct tool_entry {
	const char		*name;
	const char		*title;
	const char		*description;
	int			 set;
	int			 flags;
	const struct tool_arg	*args;
	void			(*exec)(struct tool_call *);
	void			(*cancel)(struct tool_call *);
};

typedef void (*tool_done_cb)(struct tool_call *, struct cJSON *, void *);

struct cJSON	*tool_list(int);
#define TOOL_ERA_LEGACY		0
#define TOOL_ERA_MODERN		1
const char	*tool_list_json(int, int);
const char	*tool_arg_header(const struct tool_arg *);
const struct tool_entry *tool_find(const char *, int);
struct tool_call *tool_call_start(const char *, struct cJSON *, int,
		     const char *, tool_done_cb, void *);
void		 tool_call_cancel(struct tool_call *);
void		 tool_call_done(struct tool_call *, struct cJSON *);
void		 tool_call_error(struct tool_call *, const char *,
		     struct cJSON *, const char *, ...)
		     __attribute__((__format__ (printf, 4, 5)));
const char	*tool_call_name(struct tool_call *);
const char	*tool_call_request_id(struct tool_call *);
const char	*tool_call_tenant(struct tool_call *);
void		 tool_sandbox_get(struct tool_call *, rt_cb, void *);
int		 tool_sandbox_hidden(struct tool_call *, const char *);
struct tspan	*tool_call_span(struct tool_call *);
void		*tool_call_data(struct tool_call *);
void		 tool_call_set_data(struct tool_call *, void *);
int		 tool_call_cancelled(struct tool_call *);
const char	*tool_arg_string(struct tool_call *, const char *);
long long	 tool_arg_integer(struct tool_call *, const char *);
struct cJSON	*tool_arg(struct tool_call *, const char *);
struct cJSON	*tool_details(const char *, const char *);
int		 tool_validate(const struct tool_entry *, struct cJSON *,
		     char **, struct cJSON **);
struct cJSON	*tool_error_result(const char *, struct cJSON *,
		     const char *);

/* tool-management.c */
extern const struct tool_entry tool_list_docker_images_entry;
extern const struct tool_entry tool_list_workspace_directories_entry;
extern const struct tool_entry tool_create_sandbox_entry;
extern const struct tool_entry tool_list_sandboxes_entry;
extern const struct tool_entry tool_inspect_sandbox_entry;
extern const struct tool_entry tool_destroy_sandbox_entry;

/* tool-runtime.c */
extern const struct tool_entry tool_exec_command_entry;
extern const struct tool_entry tool_write_command_stdin_entry;
extern const struct tool_entry tool_read_command_lines_entry;
extern const struct tool_entry tool_create_workspace_session_entry;
extern const struct tool_entry tool_publish_workspace_session_entry;
extern const struct tool_entry tool_destroy_workspace_session_entry;

/* tool-files.c */
extern const struct tool_entry tool_file_read_entry;
extern const struct tool_entry tool_file_write_entry;
extern const struct tool_entry tool_file_edit_entry;
extern const struct tool_entry tool_file_blame_entry;

/* workspace.c */
struct workspace_list;
typedef void (*workspace_list_cb)(struct cJSON *, void *);
struct workspace_list *workspace_list_start(const char *, const char *,
		     workspace_list_cb, void *, const char **, char **,
		     struct cJSON **);
void		 workspace_list_cancel(struct workspace_list *);
struct cJSON	*workspace_roots(const char *, char **);
char		*workspace_resolve(const char *, const char *, const char *,
		     const char **, char **);

/* transport-stdio.c */
void		 transport_stdio_start(int);
int		 transport_stdio_active(void);

/* transport-http.c */
int		 transport_http_start(const char *, int, char **);
int		 transport_http_active(void);
int		 transport_http_endpoint(const char **, int *);
void		 transport_http_stop(void);

#endif /* SANDBOX_MCP_H */
