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
 * sandbox-mcp.h: the base floor. The configuration, logging, memory,
 * utilities, the engine's error currency (struct cause), and the APIs of
 * the edges every floor may call: the state directory, child processes,
 * cgroups, confinement, file trees, disks, the Docker Engine, telemetry
 * and notices. Floors above have headers of their own: engine.h (the
 * engine), op.h (the door), surface.h (the front ends); an engine file
 * never sees op.h or surface.h, so a call up a floor does not compile.
 * Prototypes are grouped by the file that defines them.
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

/* The tenant of the local operator (stdio, or HTTP without keys). */
#define TENANT_LOCAL		"local"

/*
 * An escaped NUL in a request becomes U+10FFFE (a noncharacter) before
 * it is parsed, so that a string holding one is seen whole and refused
 * by name (mcp.c, and every path check below).
 */
#define NUL_MARK		"\xf4\x8f\xbf\xbe"

/* Largest integer a JSON number carries exactly: 2^53. */
#define JSON_MAX_INTEGER	9007199254740992LL

/* Tool sets: each is a separate grant. */
#define TOOLSET_MANAGEMENT	0x01
#define TOOLSET_RUNTIME		0x02
#define TOOLSET_OBSERVABILITY	0x04
#define TOOLSET_BOXES		0x10
#define TOOLSET_ALL		0x17
/* A grant of keys, not a set of tools: GET /metrics (metrics.c). */
#define TOOLSET_METRICS		0x08

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
	LIMIT_AUTOSQUASH_DEPTH,
	LIMIT_DISK_RESERVE,
	LIMIT_BOX_FREEZE_AFTER,
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

/*
 * A tenant's plan (boxes.md, "Tenancy, plans and keys"): it caps the
 * boxes the tenant runs at once and sizes each box (cfg_plan_sizes).
 */
enum cfg_plan {
	PLAN_FREE,
	PLAN_PRO,
	PLAN_MAX
};
struct cfg_plan_sizes {
	const char		*name;
	unsigned int		 boxes;		/* at once */
	uint64_t		 nano_cpus;
	int64_t			 memory_max;
	int64_t			 pids;
	int64_t			 disk;		/* BOXWORK and the engine's */
};
struct cfg_tenant {
	char			*name;
	enum cfg_plan		 plan;
	long long		 credits;	/* granted here; -1: no limit */
	TAILQ_ENTRY(cfg_tenant)	 entry;
};
TAILQ_HEAD(cfg_tenants, cfg_tenant);

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
	char			*metrics_listen; /* /metrics, no key */
	struct cfg_words	 roots;
	struct cfg_words	 export_roots;
	struct cfg_apikeys	 apikeys;
	struct cfg_tenants	 tenants;	/* tenant lines */
	struct cfg_words	 origins;
	struct cfg_words	 proxies;
	struct cfg_profile	 profile;
	long long		 limits[LIMIT__COUNT];
	int			 result_text;	/* text content for all */
	struct cfg_words	 public_hosts;
	struct cfg_words	 host_ports;	/* sandboxes may reach */
	double			 price_credits[2];	/* box-minute, call */
	double			 price_usd[2];
	uint32_t		 box_net;	/* box-subnets, host order */
	int			 box_net_len;
	int			 box_prefix;
};


/* cause.c: the engine's errors */
enum cause_kind {
	CAUSE_NONE,
	CAUSE_INVALID,		/* invalid_request */
	CAUSE_NOT_FOUND,	/* not_found */
	CAUSE_FAILED,		/* operation_failed */
	CAUSE_CONFLICT,		/* conflict */
	CAUSE_BUSY,		/* server_busy */
	CAUSE_UNAUTHORIZED,	/* unauthorized */
	CAUSE_INTERNAL		/* internal_error */
};
struct cause {
	enum cause_kind	 kind;
	char		*message;
	struct cJSON	*details;	/* an object */
};
const char	*cause_kind_name(enum cause_kind);
enum cause_kind	 cause_kind_parse(const char *);
void		 cause_clear(struct cause *);
void		 cause_set(struct cause *, enum cause_kind, const char *,
		     const char *, const char *, ...)
		     __attribute__((__format__ (printf, 5, 6)));
void		 cause_vset(struct cause *, enum cause_kind, const char *,
		     const char *, const char *, va_list)
		     __attribute__((__format__ (printf, 5, 0)));
void		 cause_setv(struct cause *, enum cause_kind, struct cJSON *,
		     const char *, va_list)
		     __attribute__((__format__ (printf, 4, 0)));
void		 cause_set_details(struct cause *, enum cause_kind,
		     struct cJSON *, const char *, ...)
		     __attribute__((__format__ (printf, 4, 5)));
void		 cause_detail(struct cause *, const char *, const char *);
void		 cause_detail_int(struct cause *, const char *, long long);
void		 cause_detail_item(struct cause *, const char *,
		     struct cJSON *);
void		 cause_copy(struct cause *, const struct cause *);
void		 cause_move(struct cause *, struct cause *);
struct cJSON	*cause_json(const struct cause *);
int		 cause_from_json(struct cause *, const struct cJSON *);

/* metrics.c: the counts GET /metrics shows */
struct metrics_counts {		/* gauges their owners fill in */
	unsigned int	 http_connections;
	unsigned int	 sessions_managed;
	unsigned int	 sessions_automatic;
	unsigned int	 sessions_spare;
	unsigned int	 commands_running;
	unsigned int	 helpers_running;
	unsigned int	 helpers_queued;
	unsigned int	 forkers;
};
void		 metrics_init(void);
void		 metrics_tool_call(const char *, enum cause_kind, int,
		     uint64_t);
void		 metrics_http_response(int);
void		 metrics_http_accepted(void);
void		 metrics_docker_call(int);
void		 metrics_mcp_session(int, int);
void		 metrics_event(const char *);
void		 metrics_render(struct evbuffer *,
		     const struct metrics_counts *);

/* proc.c */
extern struct event_base	*ev_base;
extern struct cfg		*cfg;
extern int			 opt_sets;
void		 proc_init(void);
void		 proc_loop(void);
void		 proc_hold(void);
void		 proc_release(void);
void		 proc_set_stop(void (*)(void));
void		 proc_set_reload(void (*)(void));
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
unsigned long	 cfg_keys_generation(void);
void		 cfg_keys_changed(void);
const struct cfg_plan_sizes *cfg_plan_sizes(enum cfg_plan);
const struct cfg_tenant *cfg_tenant_find(const char *);
const struct cfg_plan_sizes *cfg_tenant_plan(const char *);

/* util.c */
int		 util_random_hex(char *, size_t);
void		 util_hex(const unsigned char *, size_t, char *);
int		 util_utf8_valid(const char *, size_t);
char		*util_utf8_scrub(char *);
int		 util_id_valid(const char *);
int		 util_id_valid_layer(const char *);
void		 util_sha256(const void *, size_t, unsigned char[32]);
uint32_t	 util_hash(const char *, uint32_t);
int		 util_base64url(const unsigned char *, size_t, char *, size_t);
int		 util_set_nonblock(int);
int		 util_tcp_nodelay(int);
int		 util_set_cloexec(int);
char		*util_json_print(struct cJSON *);
int		 util_mkdir_p(const char *, mode_t, char **);
void		 util_fsync_dir(const char *);
int		 util_lock_try(const char *);
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
int		 util_tenant_name_valid(const char *);
int		 util_tenant_sees(const char *, const char *);
char		*util_json_mark_nuls(const char *, size_t);
const char	*util_json_duplicate(const struct cJSON *);
int		 util_json_blank(const char *, const char *);
struct util_jfield {
	const char	*name;		/* a member sought */
	const char	*value;		/* its value's text; NULL: none */
	size_t		 len;
	int		 type;		/* cJSON_String, cJSON_Number, ... */
	int		 escaped;	/* a string with a backslash in it */
};
int		 util_json_scan(const char *, size_t, struct util_jfield *,
		     size_t, int);
char		*util_jfield_string(const struct util_jfield *);
int		 util_jfield_number(const struct util_jfield *, double *);

/* state.c */
enum state_place {
	STATE_SANDBOXES,
	STATE_SANDBOX,
	STATE_IMAGE,
	STATE_STAGING,
	STATE_TRASH,
	STATE_BASES,
	STATE_BASE_STAGING,
	STATE_SESSIONS,
	STATE_COMMANDS,
	STATE_STACK,
	STATE_LAYERS,
	STATE_STACK_STAGING,
	STATE_AUDIT,
	STATE_NETWORKS
};
char		*state_where(enum state_place, const char *, const char *, ...)
		     __attribute__((__format__ (printf, 3, 4)));
char		*state_path(const char *, ...)
		     __attribute__((__format__ (printf, 1, 2)));
int		 state_init(char **);
unsigned long long state_process_start(pid_t);
struct cJSON	*state_owner_self(void);
int		 state_owner_is_self(struct cJSON *);
int		 state_owner_alive(struct cJSON *);
int		 state_lock(const char *);
void		 state_unlock(int);
int		 state_bases_lock(void);
int		 state_room_lock(void);
int		 state_record_gone(const char *);
struct cJSON	*state_record_read(const char *);
int		 state_record_write(const char *, struct cJSON *, char **);
int		 state_sandbox_create(const char *, char **);
char		*state_sandbox_trash(const char *, char **);
char		**state_ids_in(const char *, const char *, size_t, size_t *);
char		**state_sandbox_ids(size_t *);
int		 state_sandbox_init(const char *, char **);
int		 state_sandbox_forget(const char *, char **);
char		*state_trash_path(const char *, const char *);

/* store.c: the boxes and logs products' database */
struct store;
struct store_usage {
	const char	*tenant;
	const char	*box;
	const char	*kind;
	const char	*unit;
	double		 quantity;
	double		 credits;
	double		 cost_usd;
	uint64_t	 at_ms;
};
struct store	*store_open(const char *, char **);
void		 store_close(struct store *);
int		 store_checkpoint(const char *, char **);
int		 store_version(struct store *);
int		 store_secret_put(struct store *, const char *, const char *,
		     const void *, size_t, char **);
char		*store_secret_get(struct store *, const char *, const char *,
		     size_t *, char **);
struct cJSON	*store_secret_names(struct store *, const char *, char **);
int		 store_secret_remove(struct store *, const char *,
		     const char *, char **);
int		 store_usage_add(struct store *, const struct store_usage *,
		     double *, char **);
int		 store_credits_add(struct store *, const char *, double,
		     double *, char **);
int		 store_credits_add_locked(struct store *, const char *, double,
		     double *, char **);
int		 store_credits(struct store *, const char *, double *, char **);
int		 store_box_put(struct store *, const char *, const char *,
		     const char *, const char *, char **);
struct cJSON	*store_box_list(struct store *, const char **, char **);
struct cJSON	*store_usage_list(struct store *, const char *, const char *,
		     const char *, uint64_t, int,
		     char **);

/* trash.c */
void		 trash_soon(void);
void		 trash_empty(void);
void		 trash_empty_then(void (*)(void *), void *);

/* nsexec.c */
struct nsexec_zygote {
	pid_t		  container_pid;
	char		**cgroup_procs;
	size_t		  ncgroup;
	char		 *argv0;	/* our command line, to blank */
	size_t		  argv_len;
	const char	 *root;		/* the root's directory, or NULL */
	char		**root_lower;	/* its lower layers (none: a copy) */
	size_t		  nroot_lower;
};
void		 nsexec_init(int, char **);
char		*nsexec_argv(size_t *);
int		 nsexec_zygote(void *, int);
int		 nsexec_command_harden(void);
int		 nsexec_zygote_exec(void *, int);
int		 nsexec_program_fds(int *);
int		 nsexec_filter_read(int);
int		 nsexec_root_child(void *, int);

/* job.c */
struct job;
typedef void (*job_cb)(struct cJSON *, const struct cause *, void *);
struct job	*job_fork(const char *, int (*)(void *, int), void *, job_cb,
		     void *);
struct job	*job_fork_keep(const char *, int (*)(void *, int), void *,
		     const int *, int, job_cb, void *);
struct job	*job_helper(const char *, const char *, const char *,
		     int (*)(void *, int), void *, const int *, int, job_cb,
		     void *);
typedef int (*job_msg_fn)(const char *, size_t, int);
void		 job_forker_view(int (*)(const char *, char **));
struct job	*job_helper_msg(const char *, const char *, const char *,
		     job_msg_fn, const void *, size_t, job_cb, void *);
void		 job_sandbox_gone(const char *);
void		 job_groups_recover(void);
void		 job_metrics(struct metrics_counts *);
int		 job_helper_busy(void);
int		 job_parent_alive(void);
void		 job_reap(void);
int		 job_reap_pid(pid_t);
void		 job_watch(pid_t, void (*)(int, void *), void *);
void		 job_watch_since(pid_t, uint64_t, void (*)(int, void *),
		     void *);
void		 job_unwatch(pid_t);
pid_t		 job_pid(struct job *);
void		 job_cancel(struct job *);
void		 job_early(struct job *);
int		 job_write_all(int, const void *, size_t);
int		 job_answer(int, struct cJSON *, const struct cause *);
int		 job_fail(int, enum cause_kind, const char *, const char *,
		     const char *, ...)
		     __attribute__((__format__ (printf, 5, 6)));

/* cgroup.c */
int		 cgroup_write(const char *, const char *, const char *);
char		**cgroup_procs_of(pid_t, size_t *, char **);
int		 cgroup_helper_prepare(const char *, char **);
int		 cgroup_helper_join(const char *);
char		**cgroup_helper_marked(size_t *);
int		 cgroup_helper_ours(const char *);
void		 cgroup_helper_unmark(const char *);
int		 cgroup_helper_remove(const char *);
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
int		 confine_active(void);

/* tree.c */
int		 tree_open(int, const char *, int);
int		 tree_open_path(const char *, int);
int		 tree_extents(int, off_t, int (*)(off_t, const char *, size_t,
		     void *), void *);
int		 tree_sparse(int, off_t);
int		 tree_copy_file(int, const struct stat *, int, const char *);
int		 tree_digest(int, off_t, char[65]);
char		*tree_read_fd(int, size_t, size_t *);
char		*tree_read(int, const char *, size_t, size_t *);
int		 tree_remove(int, const char *);
int		 tree_remove_path(const char *);
int		 tree_size(const char *, unsigned long long *);

/* disk.c */
typedef void (*disk_cb)(const struct cause *, void *);
char		*disk_image_path(const char *);
int		 disk_exists(const char *);
int		 disk_journal_whole(const char *);
int		 disk_mounted(const char *);
int		 disk_present(const char *);
void		 disk_create(const char *, long long, int, disk_cb, void *);
void		 disk_ensure(const char *, disk_cb, void *);
int		 disk_teardown(const char *, char **);

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
void		 telemetry_release(void);
struct tspan	*telemetry_span_begin(const char *, struct tspan *,
		     const char *, const char *);
void		 telemetry_span_attr_str(struct tspan *, const char *,
		     const char *);
void		 telemetry_span_attr_int(struct tspan *, const char *,
		     long long);
void		 telemetry_span_end(struct tspan *, const char *);
void		 telemetry_span_sandbox(struct tspan *, const char *);
const char	*telemetry_span_trace(struct tspan *);
void		 telemetry_event(const char *, const char *, struct tspan *,
		     const char *, struct cJSON *);
void		 telemetry_client(const char *);
void		 telemetry_resources(const char *, struct cJSON *);
void		 telemetry_context(const char *, const char *);

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
const char	*docker_container_status(struct cJSON *);
const char	*docker_container_address(struct cJSON *);

/* docker-events.c */
typedef void (*docker_event_cb)(const char *, const char *, struct cJSON *,
		     void *);
struct docker_events;
struct docker_events *docker_events_follow(struct cJSON *, docker_event_cb,
		     void *);
void		 docker_events_stop(struct docker_events *);
struct docker_events *docker_events_ended(const char *, docker_event_cb,
		     void *);

/* sweep.c */
void		 sweep_start(const char *, const char *, char **, size_t);

#endif /* SANDBOX_MCP_H */
