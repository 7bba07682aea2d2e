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
 * engine.h: the engine floor. The products' behaviour: sandboxes and
 * their records, workspace bases, layer stacks, workspace sessions,
 * commands, files, publishing and blame. Included by engine files, by
 * the door (op-*.c) and by main; never by a front end, which reaches
 * the engine only through the operation table (op.h). Every answer an
 * engine function gives, now or later through a callback, is exactly
 * one of a result and a cause (sandbox-mcp.h).
 */

#ifndef ENGINE_H
#define ENGINE_H

#include "nsexec.h"
#include "sandbox-mcp.h"

/* layer.c */
struct layer_stack {
	int		  version;
	size_t		  n;
	char		**ids;
	char		**paths;	/* absolute, newest first */
	dev_t		  mdev;		/* the manifest read, when read */
	ino_t		  mino;
};
struct layer_hold {		/* a child's shared locks on layers */
	int		 *fds;
	char		**paths;	/* what each holds */
	size_t		  n;
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
int		 layer_confine(const char *, char **);
char		*layer_next_path(const char *);
ssize_t		 layer_stack_above(const struct layer_stack *,
		     const struct layer_stack *);
int		 layer_roll_forward(const char *, int);
int		 layer_lock(const char *);
int		 layer_lock_try(const char *);
void		 layer_unlock(int);
void		 layer_new_id(int, char, char[20]);
int		 layer_is_whiteout(const struct stat *);
int		 layer_is_opaque(const char *);
int		 layer_fd_opaque(int);
void		 layer_dirs_keep(void);
int		 layer_touches(struct layer_stack *, size_t, const char *);
int		 layer_resolve(struct layer_stack *, const char *,
		     struct layer_entry *, char **);
int		 layer_hold(struct layer_stack *, struct layer_hold *,
		     char **);
void		 layer_hold_release(struct layer_hold *);
int		 layer_stack_whole(const char *, struct layer_stack *);
void		 layer_recover(const char *);
int		 layer_staging_claim(int, const char *);
int		 layer_staging_sweep(const char *, int);
void		 layer_staging_sweep_start(const char *, const char *);

/* Where a sandbox's root file system lies (nsexec_root): sandbox.c. */
struct sandbox_root {
	char		 *dir;		/* under the state directory, or NULL */
	char		**lower;	/* the image's layers, or none: a copy */
	size_t		  nlower;
};

/* zygote.c */
struct session;
LIST_HEAD(sessions, session);
struct zygote_req;
TAILQ_HEAD(zygote_reqs, zygote_req);
struct rt_sandbox {		/* what this process knows of a sandbox */
	char			 id[65];
	char			*container;
	pid_t			 pid;		/* the container's init */
	unsigned long long	 pid_start;
	char			**cgroups;
	size_t			 ncgroup;
	char			*freezer;	/* its freezer group */
	char			*tenant;	/* whose it is */
	struct sandbox_root	 root;		/* its root file system */
	/* its zygote: zygote.c's */
	struct job		*zjob;
	pid_t			 zpid;		/* the container pid it is in */
	int			 zctl;
	struct event		*zev;
	struct event		*zwev;		/* waiting to write to it */
	int			 zready;
	struct zygote_reqs	 reqs;
	/* its sessions: session.c's */
	struct sessions		 sessions;
	unsigned int		 nidle;		/* spares kept for use */
	unsigned int		 spares_wanted;
	int			 adopted;	/* orphans looked for */
	struct session_adoption	*adoption;	/* under way */
	LIST_ENTRY(rt_sandbox)	 entry;
};
typedef void (*rt_cb)(struct rt_sandbox *, const struct cause *, void *);
typedef void (*zygote_cb)(pid_t, const char *, void *);
void		 zygote_get(const char *, rt_cb, void *);
struct rt_sandbox *zygote_find(const char *);
struct rt_sandbox *zygote_next(struct rt_sandbox *);
int		 zygote_same_tenant(struct rt_sandbox *, struct rt_sandbox *);
char		**zygote_ids(size_t *);
struct zygote_req *zygote_build(struct rt_sandbox *, const char *, int, int,
		     const char *, const char *, const char *,
		     const struct layer_stack *, int, zygote_cb, void *);
void		 zygote_cancel(struct zygote_req *);
char		**zygote_forget(struct rt_sandbox *, const char *, size_t *);

/* session.c */
struct session_publish;
typedef void (*session_cb)(struct session *, const struct cause *, void *);
typedef void (*session_publish_cb)(struct session *, struct cJSON *,
		     const struct cause *, void *);
enum session_state {
	SESSION_STARTING,
	SESSION_LIVE,
	SESSION_DEAD,		/* its init died on its own */
	SESSION_IDLE,		/* ended clean, kept to serve again */
	SESSION_ENDED
};
enum session_use {
	SESSION_USE_READ,	/* read its live view */
	SESSION_USE_CHANGE,	/* write or edit in it */
	SESSION_USE_EXEC,	/* run a command in it */
	SESSION_USE_END		/* publish or destroy it */
};
struct session_client {		/* a command running in a session */
	const char		*id;
	void			(*message)(struct session_client *,
				    const struct nsexec_msg *);
	void			(*gone)(struct session_client *,
				    const char *);
	void			*arg;
	int			 told;		/* session.c's */
	LIST_ENTRY(session_client) entry;
};
LIST_HEAD(session_clients, session_client);
struct session	*session_find(struct rt_sandbox *, const char *);
struct session	*session_use(struct rt_sandbox *, const char *,
		     enum session_use, struct cause *);
void		 session_create(struct rt_sandbox *, int, int, session_cb,
		     void *);
void		 session_end(struct session *, const char *);
void		 session_end_then(struct session *, const char *,
		     void (*)(void *), void *);
int		 session_full(struct rt_sandbox *, struct cause *);
void		 session_when_dead(struct session *,
		     void (*)(struct session *, void *), void *);
void		 session_attach(struct session *, struct session_client *);
void		 session_detach(struct session *, struct session_client *);
int		 session_send(struct session *, enum nsexec_type,
		     const char **, int, const int *, int);
const char	*session_id(struct session *);
int		 session_isolated(struct session *);
int		 session_automatic(struct session *);
int		 session_base_version(struct session *);
int		 session_rootfd(struct session *);
unsigned int	 session_clients(struct session *);
int		 session_ended(struct session *);
struct rt_sandbox *session_sandbox(struct session *);
void		 session_upper_size(struct session *,
		     void (*)(struct session *, unsigned long long, void *),
		     void *);
void		 session_publish(struct session *, const char *,
		     struct tspan *, session_publish_cb, void *);
char		**session_forget(const char *, const char *, const char *,
		     size_t *);
void		 session_recover(const char *);
void		 session_adopt(struct rt_sandbox *,
		     void (*)(struct rt_sandbox *, void *), void *);
int		 session_orphan_destroy(struct rt_sandbox *, const char *);
/* A workspace session's lease, as session_leases reads it. */
struct session_lease {
	char			*ws;
	struct cJSON		*lease;		/* NULL: none, or unreadable */
	int			 alive;		/* its owner lives */
	int			 automatic;
	struct layer_stack	*ls;		/* SESSION_LEASES_LIVE only */
	char			*faulty;	/* SESSION_LEASES_FAULTY: why */
};
struct session_leases {
	struct session_lease	*l;
	size_t			 n;
};
#define SESSION_LEASES_LIVE	0x1
#define SESSION_LEASES_FAULTY	0x2	/* with LIVE: keep unreadable ones */
#define SESSION_LEASES_ORPHANS	0x4	/* with LIVE: and managed orphans */
int		 session_leases(const char *, int, size_t,
		     struct session_leases *, char **);
void		 session_leases_free(struct session_leases *);
int		 session_measure_child(const char *, const char *, int);
int		 session_measure_many_child(const char *, char **, size_t,
		     int);
char		**session_leaving(const char *, size_t *);
void		 session_restack(const char *);
void		 session_on_gone(void (*)(const char *, const char *));
void		 session_metrics(struct metrics_counts *);

/* command.c */
struct command_wait;
typedef void (*command_cb)(struct cJSON *, const struct cause *, void *);
void		 command_exec(struct rt_sandbox *, const char *, const char *,
		     long long, long long, struct tspan *, command_cb, void *,
		     struct command_wait **);
void		 command_stdin(struct rt_sandbox *, const char *, const char *,
		     long long, command_cb, void *, struct command_wait **);
void		 command_read(struct rt_sandbox *, const char *, long long,
		     long long, long long, command_cb, void *);
void		 command_wait_cancel(struct command_wait *);
void		 command_forget_sandbox(const char *);
void		 command_recover(const char *);
void		 command_metrics(struct metrics_counts *);

/* publish.c */
struct publish_args {
	const char		*sandbox;
	const char		*upper;
	struct layer_stack	*base;
	const char		*owner;
	int			 copy;	/* copy files, never link them */
	int			 journal; /* disk_journal_whole */
};
struct publish_file_args {
	const char		*sandbox;
	const char		*path;		/* normalized, relative */
	const char		*owner;
	int			 journal;	/* disk_journal_whole */
	int			 kind;		/* FILES_WRITE or FILES_EDIT */
	const char		*content;
	size_t			 len;
	struct cJSON		*edits;
};
typedef void (*publish_cb)(struct cJSON *, const struct cause *, void *);
void		 publish_session(const struct publish_args *, const char *,
		     const char *, struct tspan *, publish_cb, void *);
void		 publish_file(const struct publish_file_args *, const char *,
		     struct tspan *, publish_cb, void *);
void		 publish_on_layer(void (*)(const char *, const char *,
		     struct cJSON *));
void		 publish_rejection(struct cause *, const char *,
		     const char *, const char *, const char *, struct cJSON *);

/* fold.c: folding layers newest-wins */
#define FOLD_ENTRIES_MAX	1000000	/* names in one directory */
#define FOLD_SKIP		(-2)	/* enter: leave this one alone */
struct fold_name {		/* a name of a level, and its layer */
	char			*name;
	size_t			 order;		/* in the level's list */
};
struct fold;
struct fold_ops {
	/* a deletion of name that something below still has */
	int	(*whiteout)(struct fold *, int, const char *, const char *);
	/* a non-directory, name in layer directory src */
	int	(*leaf)(struct fold *, int, const char *, const struct stat *,
		    int, const char *);
	/* a directory (opaque: it hides what is below) */
	int	(*dir)(struct fold *, int, const char *, const struct stat *,
		    int, int, const char *);
	/* going down into a directory: its output descriptor, -1 or
	   FOLD_SKIP */
	int	(*enter)(struct fold *, int, const char *, const char *);
	/* its names are done */
	void	(*leave)(struct fold *, int, const struct timespec *,
		    const char *);
	/* an opaque directory's names kept (sorted): all else goes */
	int	(*clear)(struct fold *, int, char **, size_t, const char *);
};
struct fold {
	const struct fold_ops	*ops;
	void			*arg;
	int			*roots;		/* each layer's root */
	struct layer_stack	*ls;		/* for the layers' ids */
	char			*error;
};
int		 fold_dir(struct fold *, const char *, const size_t *, size_t,
		     const size_t *, size_t, int, int);

/* squash.c */
struct squash;
struct squash_args {
	const char		*sandbox;
	char			**leaving;	/* sessions whose leases go */
	size_t			 nleaving;
};
typedef void (*squash_cb)(struct cJSON *, const struct cause *, void *);
int		 squash_child(void *, int);
int		 squash_gc_child(void *, int);
struct squash	*squash_start(const char *, const char *, squash_cb, void *,
		     struct cause *);
void		 squash_init(void);
void		 squash_auto(const char *, const char *, struct cJSON *);
void		 squash_reclaim(const char *, const char *, int);
void		 squash_forget(const char *);
int		 squash_managed_sessions(const char *, struct cJSON *);

/* tenantnet.c */
typedef void (*tenantnet_cb)(const char *, const char *, void *);
void		 tenantnet_name(const char *, char *, size_t);
void		 tenantnet_ensure(const char *, int, struct tspan *,
		     tenantnet_cb, void *);
void		 tenantnet_done(const char *, int);
void		 tenantnet_done_then(const char *, int, void (*)(void *),
		     void *);
void		 tenantnet_release(const char *);
void		 tenantnet_release_then(const char *, void (*)(void *),
		     void *);

/* export.c */
struct export;
#define EXPORT_KEEP_SETID	0x01	/* set-id bits kept in an archive */
#define EXPORT_GIT_CONFIG	0x02	/* what git runs under .git/ too */
struct export_opts {
	const char		*dest;
	const char		*format;	/* dir, tar, tar-zst */
	int			 flags;		/* EXPORT_* */
	unsigned long long	 max_bytes;	/* 0: the disk's size */
	unsigned long long	 max_entries;	/* 0: the disk's inodes */
};
typedef void (*export_cb)(struct cJSON *, const struct cause *, void *);
int		 export_child(void *, int);
struct export	*export_start(const char *, const char *, const char *,
		     const struct export_opts *, export_cb, void *,
		     struct cause *);
void		 export_forget(const char *);

/* files.c */
#define FILES_EDIT_MAX		(4 * 1024 * 1024)
#define FILES_EDITS_MAX		100
#define FILES_EDIT_OUT_MAX	(16 * 1024 * 1024)
enum files_kind {
	FILES_READ,
	FILES_WRITE,
	FILES_EDIT
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
typedef void (*files_cb)(struct cJSON *, const struct cause *, void *);
char		*files_path(const char *, char **);
int		 files_path_reserved(const char *);
int		 files_text(const char *, size_t);
struct cJSON	*files_window(const char *, size_t, long long, long long,
		     const char *, struct cause *);
int		 files_edits_check(struct cJSON *, struct cause *);
int		 files_edit_apply(const char *, size_t, struct cJSON *,
		     const char *, struct files_edit_result *,
		     struct cause *);
int		 files_snapshot_find(struct layer_stack *, const char *,
		     struct layer_entry *, struct cause *);
char		*files_read_text(int, const struct stat *, size_t,
		     const char *, size_t *, struct cause *);
void		 files_helper_cause(struct cause *, const struct cause *);
void		 files_op(struct files_op *, files_cb, void *);

/* audit.c */
char		*audit_prepare(const char *, struct layer_stack *,
		     const char *, const struct layer_entry *, const char *,
		     const char *, int, char **);
int		 audit_append(const char *, const char *, const char *,
		     char **);
struct cJSON	*audit_blame(const char *, const char *, struct cause *);

/* observe.c */
struct observe_query;
/* sampler.c */
void		 sampler_init(void);

typedef void (*observe_cb)(struct cJSON *, const struct cause *, void *);
struct observe_query *observe_events(const char *, const char *, long long,
		     long long, observe_cb, void *);
struct observe_query *observe_trace(const char *, const char *, observe_cb,
		     void *);
struct observe_query *observe_layerstack(const char *, struct cJSON *,
		     const char *, const char *, long long, observe_cb, void *);
struct observe_query *observe_cgroup(const char *, const char *,
		     const char *, long long, observe_cb, void *);
void		 observe_snapshot(char **, size_t, int, observe_cb, void *);
void		 observe_cancel(struct observe_query *);

/* basecache.c */
struct basecache_build;
typedef void (*basecache_cb)(const char *, int, struct cJSON *,
		     const struct cause *, void *);
char		*basecache_path(const char *);
struct basecache_build *basecache_ensure(const char *, char **, size_t,
		     long long, basecache_cb, void *, struct cause *);
void		 basecache_cancel(struct basecache_build *);

/* sandbox.c */
struct sandbox_create;
typedef void (*sandbox_cb)(struct cJSON *, const struct cause *, void *);
struct cJSON	*sandbox_record_public(struct cJSON *);
struct sandbox_images;
struct sandbox_images *sandbox_images(struct tspan *, sandbox_cb, void *);
void		 sandbox_images_cancel(struct sandbox_images *);
void		 sandbox_endpoint(const char *, sandbox_cb, void *);
struct sandbox_create *sandbox_create(struct tspan *, const char *,
		     const char *, long long, const char *, sandbox_cb, void *);
void		 sandbox_create_cancel(struct sandbox_create *);
struct cJSON	*sandbox_list(void);
struct cJSON	*sandbox_inspect(const char *, struct cause *);
const char	*sandbox_record_tenant(struct cJSON *);
char		*sandbox_tenant(const char *);
int		 sandbox_destroy_claim(const char *, struct cause *);
void		 sandbox_destroy(struct tspan *, const char *, sandbox_cb,
		     void *);
void		 sandbox_lookup(const char *, sandbox_cb, void *);
typedef void (*sandbox_lost_fn)(const char *, const char *, const char *,
		     const char *);
void		 sandbox_recover(void (*)(const char *));
void		 sandbox_watch(sandbox_lost_fn);
void		 sandbox_set_endpoint(const char *, int);
int		 sandbox_root_of(const char *, struct cJSON *,
		     struct sandbox_root *, char **);
void		 sandbox_root_free(struct sandbox_root *);

/* workspace.c */
struct workspace_list;
typedef void (*workspace_list_cb)(struct cJSON *, void *);
struct workspace_list *workspace_list_start(const char *, const char *,
		     workspace_list_cb, void *, struct cause *);
void		 workspace_list_cancel(struct workspace_list *);
struct cJSON	*workspace_roots(const char *, struct cause *);
char		*workspace_resolve(const char *, const char *, const char *,
		     struct cause *);
int		 workspace_under(const char *, const char *);
int		 workspace_root_serves(struct cfg_word *, const char *);
char		*workspace_clean(const char *);
int		 workspace_foreign(const char *, const char *);
char		**workspace_hidden(const char *, const char *, size_t *);

/* runtime.c */
void		 runtime_init(void);
int		 runtime_helpers_busy(struct cause *);
void		 runtime_end(const char *);
void		 runtime_lost(const char *, const char *, const char *,
		     const char *);
void		 runtime_recover(const char *);

/* box.c: the box engine (boxes.md) */
enum box_state {
	BOX_STARTING,
	BOX_READY,
	BOX_FROZEN,
	BOX_STOPPING,
	BOX_TERMINATED,
	BOX_INTERRUPTED
};
struct box;
struct box_dexec;
struct box_job;
struct box_thaw;
typedef void (*box_start_cb)(struct box *, const struct cause *, void *);
typedef void (*box_stop_cb)(struct box *, void *);
typedef void (*box_exec_cb)(struct cJSON *, const struct cause *, void *);
struct box {
	char				 id[20];	/* box-<12 hex> */
	char				*tenant;
	const struct cfg_plan_sizes	*plan;
	enum box_state			 state;
	char				*reason;
	struct cJSON			*services;	/* [{name, port}] */
	struct cJSON			*secrets;	/* names */
	int				 idle_min;	/* 0: none */
	uint64_t			 created_ms;
	uint64_t			 ended_ms;
	uint64_t			 last_call_ms;
	char				*container;
	char				*network_name;
	char				*address;	/* on its network */
	pid_t				 pid;		/* its init, here */
	struct docker_call		*dc;		/* in flight */
	struct box_dexec		*dexec;		/* in flight */
	struct tspan			*span;		/* of the start */
	struct event			*idle_ev;	/* idleTimeoutMin */
	struct event			*freeze_ev;	/* box-freeze-after */
	struct event			*minute_ev;	/* usage */
	struct box_thaw			*thaws;		/* waiting */
	int				 running;	/* commands */
	int				 pausing;
	int				 unpausing;
	box_start_cb			 start_cb;
	void				*start_arg;
	box_stop_cb			 stop_cb;
	void				*stop_arg;
	int				 disked;
	int				 disk_busy;
	int				 networked;
	LIST_HEAD(, box_job)		 jobs;		/* commands */
	LIST_ENTRY(box)			 entry;
};
const char	*box_state_name(enum box_state);
int		 box_init(char **);
struct cJSON	*box_record(struct box *);
struct box	*box_find(const char *, const char *);
struct cJSON	*box_list_json(const char *);
void		 box_start(const char *, struct cJSON *, struct cJSON *, int,
		     struct tspan *, box_start_cb, void *);
int		 box_secret_put(const char *, const char *, const char *,
		     size_t, char **);
int		 box_secret_remove(const char *, const char *, char **);
struct cJSON	*box_secret_names(const char *, char **);
void		 box_stop(struct box *, const char *, box_stop_cb, void *);
void		 box_touch(struct box *);
struct cJSON	*box_usage(const char *, const char *, const char *,
		     uint64_t, int, char **);
struct cJSON	*box_credits(const char *);
struct cJSON	*box_boxd(struct box *);
void		 box_thaw(struct box *, void (*)(struct box *, int,
		     const struct cause *, void *), void *);
void		 box_exec(struct box *, const char *, const char *, int, int,
		     box_exec_cb, void *);
struct cJSON	*box_procs_list(struct box *);
void		 box_procs_wait(struct box *, const char *, int, int,
		     box_exec_cb, void *);

#endif /* ENGINE_H */
