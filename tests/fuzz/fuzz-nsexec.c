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
 * libFuzzer harness: the nsexec message receiver on arbitrary datagrams,
 * sent over a SOCK_SEQPACKET socketpair as a zygote or an init would.
 * The first byte says how many descriptors ride along (0 to 5, copies of
 * /dev/null); the rest is the datagram. Whatever the receiver returns is
 * closed, and a descriptor still open afterwards is a leak: abort.
 */

#include "config.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsexec.h"
#include "sandbox-mcp.h"

#define FUZZ_FDS_SCAN	64

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char	fuzz_buf[NSEXEC_MSG_MAX];

/* The open descriptors below FUZZ_FDS_SCAN, as a bit mask. */
static uint64_t
fuzz_fds(void)
{
	uint64_t	mask = 0;
	int		fd;

	for (fd = 0; fd < FUZZ_FDS_SCAN; fd++) {
		if (fcntl(fd, F_GETFD) != -1)
			mask |= (uint64_t)1 << fd;
	}
	return (mask);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nsexec_msg	 m;
	struct msghdr		 msg;
	struct iovec		 iov;
	struct cmsghdr		*cm;
	char			 cbuf[CMSG_SPACE(sizeof(int) * 5)];
	uint64_t		 before;
	int			 sp[2], fds[5], nfds, i;

	if (size == 0)
		return (0);
	nfds = data[0] % 6;
	data++;
	size--;
	before = fuzz_fds();
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp) != 0)
		abort();
	for (i = 0; i < nfds; i++) {
		if ((fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
			abort();
	}
	memset(&msg, 0, sizeof msg);
	iov.iov_base = (void *)data;
	iov.iov_len = size;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfds > 0) {
		memset(cbuf, 0, sizeof cbuf);
		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	if (sendmsg(sp[0], &msg, MSG_NOSIGNAL) != -1) {
		if (fcntl(sp[1], F_SETFL, O_NONBLOCK) != 0)
			abort();
		if (nsexec_msg_recv(sp[1], fuzz_buf, sizeof fuzz_buf,
		    &m) == 1) {
			for (i = 0; i < m.nfields; i++)
				(void)strlen(m.f[i]);
			(void)nsexec_type_name(m.type);
			nsexec_msg_close(&m);
		}
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	close(sp[0]);
	close(sp[1]);
	if (fuzz_fds() != before)
		abort();	/* a received descriptor was left open */
	return (0);
}
