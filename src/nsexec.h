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
 * The messages between the server, a sandbox's zygote and the inits of
 * its workspace sessions (nsexec.c), on SOCK_SEQPACKET sockets: one
 * datagram each, a header (version, type) and then the fields, each
 * ending in NUL, with descriptors passed as SCM_RIGHTS. Every type has a
 * fixed count of fields (or a least one, for lists), of descriptors, and
 * a direction; nsexec_msg_recv refuses anything else (EPROTO), and a
 * receiver treats that as the end of the peer: an unknown message is
 * never skipped.
 */

#ifndef NSEXEC_H
#define NSEXEC_H

#include <stddef.h>

#define NSEXEC_VERSION		1
#define NSEXEC_MSG_MAX		(160 * 1024)
#define NSEXEC_FIELDS_MAX	600
#define NSEXEC_FDS_MAX		4
/* A builder's error that starts so: a layer went; build on the new head. */
#define NSEXEC_STALE_LAYERS	"stale layers"

enum nsexec_type {
	/* to a zygote */
	NSEXEC_BUILD = 1,	/* id, isolated, procs, dir, lease, layer...;
				   the session's control socket */
	/* from a zygote */
	NSEXEC_READY,		/* it stands in the container */
	NSEXEC_FAILED,		/* message: it could not */
	NSEXEC_BUILT,		/* id, init pid */
	NSEXEC_REFUSED,		/* id, message: the session was not built */
	/* to a session's init */
	NSEXEC_EXEC,		/* command id, shell text, env...; stdin,
				   output */
	NSEXEC_KILL,		/* command id, signal */
	NSEXEC_SEAL,		/* make /workspace read-only */
	NSEXEC_UNSEAL,
	NSEXEC_FINISH,		/* end every other process */
	/* from a session's init */
	NSEXEC_ROOT,		/* its /workspace (O_PATH) */
	NSEXEC_PID,		/* command id, pid */
	NSEXEC_EXIT,		/* command id, status */
	NSEXEC_ERROR,		/* command id, message */
	NSEXEC_SEALED,		/* 1 or 0 */
	NSEXEC_FINISHED,
	NSEXEC_TYPES
};

/* One message as received: fields point into buf. */
struct nsexec_msg {
	enum nsexec_type	 type;
	int			 nfields;
	char			*f[NSEXEC_FIELDS_MAX];
	int			 nfds;
	int			 fds[NSEXEC_FDS_MAX];
};

const char	*nsexec_type_name(enum nsexec_type);
int		 nsexec_msg_send(int, enum nsexec_type, const char **, int,
		     const int *, int);
int		 nsexec_msg_recv(int, char *, size_t, struct nsexec_msg *);
void		 nsexec_msg_close(struct nsexec_msg *);
int		 nsexec_msg_int(const struct nsexec_msg *, int, long long,
		     long long, long long *);

#endif /* NSEXEC_H */
