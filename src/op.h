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
 * op.h: the door. Every operation of the products is one entry of the
 * operation table (op.c): its name, title and description, the set that
 * grants it, its flags, its arguments, the JSON Schema of its result, and
 * its handler. Both surfaces (MCP's tools/call and the REST routes) call
 * operations only through op_call_start, which checks the arguments,
 * opens the call's telemetry span, and answers exactly once with a
 * result or a cause; the handlers (op-*.c) check ownership through the
 * door's helpers and reach the engine. Included by the door, the
 * surfaces and main; never by the engine.
 */

#ifndef OP_H
#define OP_H

#include "sandbox-mcp.h"

struct rt_sandbox;

/* Flags of an operation (MCP's annotations, and what the door hides). */
#define OP_READONLY		0x01
#define OP_DESTRUCTIVE		0x02
#define OP_IDEMPOTENT		0x04
#define OP_OPENWORLD		0x08
#define OP_HIDDEN		0x10	/* a surface's own: never listed */

enum op_arg_type {
	OP_ARG_STRING = 1,
	OP_ARG_INTEGER,
	OP_ARG_ARRAY,
	OP_ARG_BOOLEAN,
	OP_ARG_OBJECT,
	OP_ARG_TEXT		/* a string that may be empty */
};

struct op_arg {
	const char		*name;
	enum op_arg_type	 type;
	int			 required;
	long long		 minimum;	/* integers; -1 for none */
	const char		*dflt;		/* JSON text, or NULL */
	const char		*description;
	/*
	 * Integers: the largest value that means something, for the
	 * schema (0: none; larger values are clamped or refused by the
	 * operation), or the limit that sets it (enum limit + 1).
	 */
	long long		 maximum;
	int			 maximum_limit;
};

struct op_call;

/* The argument every operation on one sandbox takes first. */
#define OP_SANDBOX_ARG { "sandbox_id", OP_ARG_STRING, 1, -1, NULL,	\
	"Target sandbox id.", 0, 0 }

struct op_entry {
	const char		*name;
	const char		*title;
	const char		*description;
	int			 set;
	int			 flags;
	const struct op_arg	*args;
	const char		*result;	/* JSON Schema text */
	void			(*exec)(struct op_call *);
	void			(*cancel)(struct op_call *);
};

/* op.c, for the surfaces */
#define OP_SCHEMA_HEADERS	0x01	/* with x-mcp-header (2026-07-28) */
#define OP_CALL_HIDDEN		0x01	/* a hidden operation may answer */
typedef void (*op_done_cb)(struct op_call *, struct cJSON *,
		     const struct cause *, void *);
void		 op_init(void);
void		 op_metrics(struct metrics_counts *);
const struct op_entry *op_find(const char *, int);
const struct op_entry *op_find_any(const char *, int);
const struct op_entry *op_next(const struct op_entry *);
const char	*op_arg_header(const struct op_arg *);
struct cJSON	*op_schema(const struct op_entry *, int);
struct cJSON	*op_output_schema(const struct op_entry *);
int		 op_validate(const struct op_entry *, struct cJSON *,
		     struct cause *);
struct op_call	*op_call_start(const char *, struct cJSON *, int,
		     const char *, int, op_done_cb, void *);
void		 op_call_cancel(struct op_call *);
int		 op_tenant_sees(const char *, const char *);

/* op.c, for the operations */
void		 op_call_done(struct op_call *, struct cJSON *);
void		 op_call_fail(struct op_call *, const struct cause *);
void		 op_call_error(struct op_call *, enum cause_kind,
		     const char *, const char *, const char *, ...)
		     __attribute__((__format__ (printf, 5, 6)));
const char	*op_call_name(struct op_call *);
const char	*op_call_request_id(struct op_call *);
const char	*op_call_tenant(struct op_call *);
struct tspan	*op_call_span(struct op_call *);
void		*op_call_data(struct op_call *);
void		 op_call_set_data(struct op_call *, void *);
int		 op_call_cancelled(struct op_call *);
struct cJSON	*op_arg(struct op_call *, const char *);
const char	*op_arg_string(struct op_call *, const char *);
long long	 op_arg_integer(struct op_call *, const char *);
int		 op_sandbox_hidden(struct op_call *, const char *);
int		 op_sandbox_unseen(struct op_call *, const char *);
void		 op_sandbox_runtime(struct op_call *,
		     void (*)(struct rt_sandbox *, const struct cause *,
		     void *), void *);

/* op-sandbox.c */
extern const struct op_entry op_list_docker_images_entry;
extern const struct op_entry op_list_workspace_directories_entry;
extern const struct op_entry op_create_sandbox_entry;
extern const struct op_entry op_list_sandboxes_entry;
extern const struct op_entry op_inspect_sandbox_entry;
extern const struct op_entry op_destroy_sandbox_entry;
extern const struct op_entry op_sandbox_endpoint_entry;

/* op-obs.c */
extern const struct op_entry op_events_entry;
extern const struct op_entry op_trace_entry;
extern const struct op_entry op_layerstack_entry;
extern const struct op_entry op_cgroup_entry;
extern const struct op_entry op_snapshot_entry;

/* op-runtime.c */
extern const struct op_entry op_exec_command_entry;
extern const struct op_entry op_write_command_stdin_entry;
extern const struct op_entry op_read_command_lines_entry;
extern const struct op_entry op_create_workspace_session_entry;
extern const struct op_entry op_publish_workspace_session_entry;
extern const struct op_entry op_destroy_workspace_session_entry;

/* op-layer.c */
extern const struct op_entry op_squash_layerstacks_entry;
extern const struct op_entry op_export_changes_entry;

/* op-box.c */
extern const struct op_entry op_sandbox_start_entry;
extern const struct op_entry op_sandbox_status_entry;
extern const struct op_entry op_sandbox_stop_entry;
extern const struct op_entry op_sandbox_exec_entry;
extern const struct op_entry op_sandbox_secrets_entry;
extern const struct op_entry op_sandbox_procs_entry;
extern const struct op_entry op_box_list_entry;
extern const struct op_entry op_box_usage_entry;
extern const struct op_entry op_box_credits_entry;
extern const struct op_entry op_secret_put_entry;
extern const struct op_entry op_secret_delete_entry;

/* op-files.c */
extern const struct op_entry op_file_read_entry;
extern const struct op_entry op_file_write_entry;
extern const struct op_entry op_file_edit_entry;
extern const struct op_entry op_file_blame_entry;

#endif /* OP_H */
