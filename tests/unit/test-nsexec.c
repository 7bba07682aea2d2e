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
 * The messages between the server, a zygote and a session's init
 * (nsexec.c), over a real SOCK_SEQPACKET socketpair: every type round
 * trip with its fields and descriptors, and what the receiver refuses
 * (short, cut or overlong datagrams, a wrong version or type, the wrong
 * count of fields or descriptors), with no descriptor left behind.
 */

#include "config.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nsexec.h"
#include "sandbox-mcp.h"
#include "unit.h"

/* The header as nsexec.c writes it. */
struct raw_hdr {
	uint16_t	version;
	uint16_t	type;
	uint32_t	nfields;
};

static char	nsexec_buf[NSEXEC_MSG_MAX];

/* The descriptors this process has open. */
static int
open_fds(void)
{
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return (n);
}

static int
pair(int sp[2])
{
	return (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp));
}

static void
pair_close(int sp[2])
{
	if (sp[0] != -1)
		close(sp[0]);
	if (sp[1] != -1)
		close(sp[1]);
	sp[0] = sp[1] = -1;
}

/* Send one datagram of len bytes with nfds descriptors, as it is. */
static int
send_raw(int sock, const void *data, size_t len, const int *fds, int nfds)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	char		 cbuf[CMSG_SPACE(sizeof(int) * 8)];

	memset(&msg, 0, sizeof msg);
	iov.iov_base = (void *)data;
	iov.iov_len = len;
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
	return (sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1);
}

/* A header and then body (blen bytes) in one datagram. */
static int
send_hdr(int sock, int version, int type, uint32_t nfields,
    const char *body, size_t blen, const int *fds, int nfds)
{
	struct raw_hdr	 h;
	char		*buf;
	int		 r;

	memset(&h, 0, sizeof h);
	h.version = (uint16_t)version;
	h.type = (uint16_t)type;
	h.nfields = nfields;
	buf = xmalloc(sizeof h + blen + 1);
	memcpy(buf, &h, sizeof h);
	if (blen != 0)
		memcpy(buf + sizeof h, body, blen);
	r = send_raw(sock, buf, sizeof h + blen, fds, nfds);
	free(buf);
	return (r);
}

/* Whether the next datagram is refused: -1 and EPROTO, no descriptor. */
static int
refused(int sock, const char *what)
{
	struct nsexec_msg	m;
	int			r;

	errno = 0;
	r = nsexec_msg_recv(sock, nsexec_buf, sizeof nsexec_buf, &m);
	if (r != -1 || errno != EPROTO) {
		fprintf(stderr, "%s: expected -1 (EPROTO), got %d (%s)\n",
		    what, r, strerror(errno));
		if (r == 1)
			nsexec_msg_close(&m);
		return (1);
	}
	CHECK_INT(m.nfds, 0);
	return (0);
}

/* Whether fd is open, close-on-exec and the same file as want. */
static int
same_file(int fd, int want)
{
	struct stat	a, b;

	CHECK(fd > 2);
	CHECK(fd != want);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	CHECK(fstat(fd, &a) == 0);
	CHECK(fstat(want, &b) == 0);
	CHECK_INT(a.st_dev, b.st_dev);
	CHECK_INT(a.st_ino, b.st_ino);
	return (0);
}

/* Every type, at its fewest and at its most fields, with its descriptors. */
static int
test_nsexec_roundtrip(void)
{
	static const struct {
		enum nsexec_type	type;
		const char		*name;
		int			 min, max, fds;
	} types[] = {
		{ NSEXEC_BUILD, "build", 5, NSEXEC_FIELDS_MAX, 1 },
		{ NSEXEC_READY, "ready", 0, 0, 0 },
		{ NSEXEC_FAILED, "failed", 1, 1, 0 },
		{ NSEXEC_BUILT, "built", 2, 2, 0 },
		{ NSEXEC_REFUSED, "refused", 2, 2, 0 },
		{ NSEXEC_EXEC, "exec", 2, 18, 2 },
		{ NSEXEC_KILL, "kill", 2, 2, 0 },
		{ NSEXEC_SEAL, "seal", 0, 0, 0 },
		{ NSEXEC_UNSEAL, "unseal", 0, 0, 0 },
		{ NSEXEC_FINISH, "finish", 0, 0, 0 },
		{ NSEXEC_ROOT, "root", 0, 0, 1 },
		{ NSEXEC_PID, "pid", 2, 2, 0 },
		{ NSEXEC_EXIT, "exit", 2, 2, 0 },
		{ NSEXEC_ERROR, "error", 2, 2, 0 },
		{ NSEXEC_SEALED, "sealed", 1, 1, 0 },
		{ NSEXEC_FINISHED, "finished", 0, 0, 0 },
	};
	struct nsexec_msg	 m;
	const char		*fields[NSEXEC_FIELDS_MAX];
	char			 text[NSEXEC_FIELDS_MAX][16];
	int			 sp[2], fds[2], before, i, j, k, n, empty;
	size_t			 t;

	CHECK_INT(sizeof types / sizeof types[0], NSEXEC_TYPES - 1);
	CHECK((before = open_fds()) > 0);
	CHECK(pair(sp) == 0);
	fds[0] = open("/dev/null", O_RDONLY);
	fds[1] = open(".", O_RDONLY | O_DIRECTORY);
	CHECK(fds[0] != -1 && fds[1] != -1);
	for (t = 0; t < sizeof types / sizeof types[0]; t++) {
		CHECK_STR(nsexec_type_name(types[t].type), types[t].name);
		for (k = 0; k < 3; k++) {
			/* Fewest, most, and fewest with empty fields. */
			n = k == 1 ? types[t].max : types[t].min;
			empty = k == 2;
			for (i = 0; i < n; i++) {
				if (empty && i % 2 == 0)
					text[i][0] = '\0';
				else
					snprintf(text[i], sizeof text[i],
					    "%s-%d", types[t].name, i);
				fields[i] = text[i];
			}
			CHECK(nsexec_msg_send(sp[0], types[t].type, fields, n,
			    fds, types[t].fds) == 0);
			memset(&m, 0xff, sizeof m);
			CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf,
			    sizeof nsexec_buf, &m), 1);
			CHECK_INT(m.type, types[t].type);
			CHECK_INT(m.nfields, n);
			for (i = 0; i < n; i++)
				CHECK_STR(m.f[i], fields[i]);
			CHECK_INT(m.nfds, types[t].fds);
			for (j = 0; j < m.nfds; j++)
				CHECK(same_file(m.fds[j], fds[j]) == 0);
			nsexec_msg_close(&m);
			CHECK_INT(m.nfds, 0);
		}
	}
	close(fds[0]);
	close(fds[1]);
	pair_close(sp);
	CHECK_INT(open_fds(), before);
	return (0);
}

/* A passed descriptor is the sender's file: a pipe carries bytes across. */
static int
test_nsexec_pass(void)
{
	struct nsexec_msg	 m;
	const char		*fields[] = { "7", "echo hi", "A=1" };
	int			 sp[2], in[2], out[2], fds[2];
	char			 got[8];

	CHECK(pair(sp) == 0);
	CHECK(pipe(in) == 0);
	CHECK(pipe(out) == 0);
	fds[0] = in[0];		/* the command's stdin */
	fds[1] = out[1];	/* its output */
	CHECK(nsexec_msg_send(sp[0], NSEXEC_EXEC, fields, 3, fds, 2) == 0);
	/* What was sent may be closed at once: the message holds them. */
	close(in[0]);
	close(out[1]);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 1);
	CHECK_INT(m.type, NSEXEC_EXEC);
	CHECK_INT(m.nfields, 3);
	CHECK_STR(m.f[2], "A=1");
	CHECK_INT(m.nfds, 2);
	CHECK_INT(write(in[1], "ab", 2), 2);
	CHECK_INT(read(m.fds[0], got, sizeof got), 2);
	CHECK(memcmp(got, "ab", 2) == 0);
	CHECK_INT(write(m.fds[1], "cd", 2), 2);
	CHECK_INT(read(out[0], got, sizeof got), 2);
	CHECK(memcmp(got, "cd", 2) == 0);
	/* A descriptor taken is set to -1 and left open by the close. */
	fds[0] = m.fds[0];
	m.fds[0] = -1;
	nsexec_msg_close(&m);
	CHECK(fcntl(fds[0], F_GETFD) != -1);
	close(fds[0]);
	/* The output's last writer went: its reader sees the end. */
	CHECK(fcntl(out[0], F_SETFL, O_NONBLOCK) == 0);
	CHECK_INT(read(out[0], got, sizeof got), 0);
	close(in[1]);
	close(out[0]);
	pair_close(sp);
	return (0);
}

/* Messages in order, one datagram each, and the integer fields. */
static int
test_nsexec_sequence(void)
{
	struct nsexec_msg	 m;
	const char		*pid[] = { "12", "4321" };
	const char		*bad[] = { "12", "-5" };
	const char		*word[] = { "12", "x1" };
	long long		 v;
	int			 sp[2];

	CHECK(pair(sp) == 0);
	CHECK(nsexec_msg_send(sp[0], NSEXEC_PID, pid, 2, NULL, 0) == 0);
	CHECK(nsexec_msg_send(sp[0], NSEXEC_EXIT, bad, 2, NULL, 0) == 0);
	CHECK(nsexec_msg_send(sp[0], NSEXEC_EXIT, word, 2, NULL, 0) == 0);
	CHECK(nsexec_msg_send(sp[0], NSEXEC_FINISHED, NULL, 0, NULL, 0) == 0);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 1);
	CHECK_INT(m.type, NSEXEC_PID);
	CHECK(nsexec_msg_int(&m, 0, 0, 100, &v) == 0);
	CHECK_INT(v, 12);
	CHECK(nsexec_msg_int(&m, 1, 1, 1000000, &v) == 0);
	CHECK_INT(v, 4321);
	CHECK(nsexec_msg_int(&m, 1, 1, 4000, &v) == -1);
	CHECK(nsexec_msg_int(&m, 2, 0, 100, &v) == -1);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 1);
	CHECK_INT(m.type, NSEXEC_EXIT);
	CHECK(nsexec_msg_int(&m, 1, 0, 255, &v) == -1);
	CHECK(nsexec_msg_int(&m, 1, -10, 255, &v) == 0);
	CHECK_INT(v, -5);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 1);
	CHECK(nsexec_msg_int(&m, 1, 0, 255, &v) == -1);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 1);
	CHECK_INT(m.type, NSEXEC_FINISHED);
	CHECK_INT(m.nfields, 0);
	pair_close(sp);
	return (0);
}

/* Datagrams cut short or with bytes past their fields. */
static int
test_nsexec_truncated(void)
{
	struct nsexec_msg	m;
	struct raw_hdr		h;
	int			sp[2], i, fd, before;

	CHECK((before = open_fds()) > 0);
	CHECK(pair(sp) == 0);
	/* Shorter than a header. */
	memset(&h, 0, sizeof h);
	h.version = NSEXEC_VERSION;
	h.type = NSEXEC_READY;
	for (i = 1; i < (int)sizeof h; i++) {
		CHECK(send_raw(sp[0], &h, i, NULL, 0) == 0);
		CHECK(refused(sp[1], "a short header") == 0);
	}
	/* Two fields announced, one sent. */
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_KILL, 2, "7", 2, NULL,
	    0) == 0);
	CHECK(refused(sp[1], "one field of two") == 0);
	/* Two announced, none sent. */
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_KILL, 2, NULL, 0, NULL,
	    0) == 0);
	CHECK(refused(sp[1], "no field of two") == 0);
	/* The last field without its NUL. */
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_KILL, 2, "7\0009", 3,
	    NULL, 0) == 0);
	CHECK(refused(sp[1], "an unended field") == 0);
	/* A third field past the two. */
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_KILL, 2, "7\0009\0x", 6,
	    NULL, 0) == 0);
	CHECK(refused(sp[1], "a field too many") == 0);
	/* Bytes after a message of no fields. */
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_READY, 0, "", 1, NULL,
	    0) == 0);
	CHECK(refused(sp[1], "a body on ready") == 0);
	/* Cut, with a descriptor on it: refused and the descriptor closed. */
	fd = open("/dev/null", O_RDONLY);
	CHECK(fd != -1);
	CHECK(send_raw(sp[0], &h, 4, &fd, 1) == 0);
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_BUILD, 5, "a\0b\0c\0d",
	    7, &fd, 1) == 0);
	close(fd);
	CHECK(refused(sp[1], "a short header with a descriptor") == 0);
	CHECK(refused(sp[1], "a cut build with its descriptor") == 0);
	/* A well-formed one still reads after all that. */
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_KILL, 2, "7\0009", 4,
	    NULL, 0) == 0);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 1);
	CHECK_INT(m.type, NSEXEC_KILL);
	CHECK_STR(m.f[0], "7");
	CHECK_STR(m.f[1], "9");
	pair_close(sp);
	CHECK_INT(open_fds(), before);
	return (0);
}

/*
 * Datagrams past the buffer, and headers announcing more fields than a
 * type takes.
 */
static int
test_nsexec_overlong(void)
{
	struct nsexec_msg	 m;
	const char		*fields[5] = { "id", "0", "", "/d", "l" };
	char			*big, small[64];
	size_t			 fit;
	int			 sp[2], size = 1024 * 1024, before;

	CHECK((before = open_fds()) > 0);
	CHECK(pair(sp) == 0);
	CHECK(setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &size,
	    sizeof size) == 0);
	/* A field past NSEXEC_MSG_MAX: the datagram is cut, so refused. */
	big = xmalloc(NSEXEC_MSG_MAX + 1);
	memset(big, 'x', NSEXEC_MSG_MAX);
	big[NSEXEC_MSG_MAX] = '\0';
	fields[3] = big;
	CHECK(nsexec_msg_send(sp[0], NSEXEC_BUILD, fields, 5, &sp[0], 1) == 0);
	CHECK(refused(sp[1], "a build past the maximum") == 0);
	/*
	 * Exactly what the buffer holds (less its NUL) is read: the header,
	 * "id", "0", "", "/d" and the last field, each with its NUL.
	 */
	fit = NSEXEC_MSG_MAX - 1 - sizeof(struct raw_hdr) - 3 - 2 - 1 - 3 - 1;
	memset(big, 'y', NSEXEC_MSG_MAX);
	big[fit] = '\0';
	fields[3] = "/d";
	fields[4] = big;
	CHECK(nsexec_msg_send(sp[0], NSEXEC_BUILD, fields, 5, &sp[0], 1) == 0);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 1);
	CHECK_INT(m.nfields, 5);
	CHECK_INT(strlen(m.f[4]), fit);
	nsexec_msg_close(&m);
	/* One byte more is cut. */
	big[fit] = 'y';
	big[fit + 1] = '\0';
	CHECK(nsexec_msg_send(sp[0], NSEXEC_BUILD, fields, 5, &sp[0], 1) == 0);
	CHECK(refused(sp[1], "a build one byte past") == 0);
	free(big);
	/* A small buffer: what does not fit is refused, not overrun. */
	CHECK(nsexec_msg_send(sp[0], NSEXEC_FAILED, (const char *[]){
	    "a message longer than sixty-four bytes, which is what the"
	    " receiver has room for" }, 1, NULL, 0) == 0);
	memset(small, 0, sizeof small);
	errno = 0;
	CHECK_INT(nsexec_msg_recv(sp[1], small, sizeof small, &m), -1);
	CHECK_INT(errno, EPROTO);
	/* More fields than the type takes, whatever follows. */
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_BUILD,
	    NSEXEC_FIELDS_MAX + 1, "a\0b\0c\0d\0e", 10, &sp[0], 1) == 0);
	CHECK(refused(sp[1], "601 fields") == 0);
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_BUILD, UINT32_MAX,
	    "a\0b\0c\0d\0e", 10, &sp[0], 1) == 0);
	CHECK(refused(sp[1], "2^32-1 fields") == 0);
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_KILL, 3, "1\0002\0003",
	    6, NULL, 0) == 0);
	CHECK(refused(sp[1], "kill with 3 fields") == 0);
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_EXEC, 19,
	    "1\0002\0003", 6, (int []){ sp[0], sp[0] }, 2) == 0);
	CHECK(refused(sp[1], "exec with 19 fields") == 0);
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_READY, 1, "x", 2, NULL,
	    0) == 0);
	CHECK(refused(sp[1], "ready with a field") == 0);
	/* Fewer than the type needs. */
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_BUILD, 4, "a\0b\0c\0d",
	    8, &sp[0], 1) == 0);
	CHECK(refused(sp[1], "build with 4 fields") == 0);
	CHECK(send_hdr(sp[0], NSEXEC_VERSION, NSEXEC_FAILED, 0, NULL, 0,
	    NULL, 0) == 0);
	CHECK(refused(sp[1], "failed with no field") == 0);
	pair_close(sp);
	CHECK_INT(open_fds(), before);
	return (0);
}

/* A header of another version or of no known type. */
static int
test_nsexec_version_type(void)
{
	static const struct {
		int	version;
		int	type;
	} cases[] = {
		{ 0, NSEXEC_READY },
		{ NSEXEC_VERSION + 1, NSEXEC_READY },
		{ 0xffff, NSEXEC_READY },
		{ 0x0100, NSEXEC_READY },	/* the other byte order */
		{ NSEXEC_VERSION, 0 },
		{ NSEXEC_VERSION, NSEXEC_TYPES },
		{ NSEXEC_VERSION, NSEXEC_TYPES + 1 },
		{ NSEXEC_VERSION, 0xffff },
		{ NSEXEC_VERSION, 0x0100 },
	};
	size_t	i;
	int	sp[2], fd, before;

	CHECK((before = open_fds()) > 0);
	CHECK(pair(sp) == 0);
	CHECK((fd = open("/dev/null", O_RDONLY)) != -1);
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		CHECK(send_hdr(sp[0], cases[i].version, cases[i].type, 0, NULL,
		    0, NULL, 0) == 0);
		CHECK(refused(sp[1], "a version or type") == 0);
		/* And with a descriptor, which must not stay. */
		CHECK(send_hdr(sp[0], cases[i].version, cases[i].type, 0, NULL,
		    0, &fd, 1) == 0);
		CHECK(refused(sp[1], "a version or type, with a descriptor") ==
		    0);
	}
	CHECK_STR(nsexec_type_name(0), "unknown");
	CHECK_STR(nsexec_type_name(NSEXEC_TYPES), "unknown");
	CHECK_STR(nsexec_type_name((enum nsexec_type)-1), "unknown");
	close(fd);
	pair_close(sp);
	CHECK_INT(open_fds(), before);
	return (0);
}

/*
 * Descriptors a message does not take, or fewer than it takes: refused,
 * and every one that came closed.
 */
static int
test_nsexec_extra_fds(void)
{
	static const struct {
		int		type;
		uint32_t	nfields;
		const char	*body;
		size_t		blen;
		int		nfds;
	} cases[] = {
		{ NSEXEC_READY, 0, NULL, 0, 1 },
		{ NSEXEC_SEAL, 0, NULL, 0, 4 },
		{ NSEXEC_KILL, 2, "1\0009", 4, 1 },
		{ NSEXEC_ROOT, 0, NULL, 0, 0 },
		{ NSEXEC_ROOT, 0, NULL, 0, 2 },
		{ NSEXEC_ROOT, 0, NULL, 0, 4 },
		{ NSEXEC_EXEC, 2, "1\0true", 7, 1 },
		{ NSEXEC_EXEC, 2, "1\0true", 7, 3 },
		{ NSEXEC_BUILD, 5, "a\0b\0c\0d\0e", 10, 2 },
		/* Past the four the receiver has room for. */
		{ NSEXEC_ROOT, 0, NULL, 0, 5 },
		{ NSEXEC_EXEC, 2, "1\0true", 7, 8 },
	};
	int	sp[2], fds[8], before, during, i;
	size_t	c;

	CHECK((before = open_fds()) > 0);
	CHECK(pair(sp) == 0);
	for (i = 0; i < 8; i++)
		CHECK((fds[i] = open("/dev/null", O_RDONLY)) != -1);
	CHECK((during = open_fds()) == before + 10);
	for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		CHECK(send_hdr(sp[0], NSEXEC_VERSION, cases[c].type,
		    cases[c].nfields, cases[c].body, cases[c].blen, fds,
		    cases[c].nfds) == 0);
		CHECK(refused(sp[1], "the wrong descriptors") == 0);
		if (open_fds() != during) {
			fprintf(stderr, "case %zu: %d descriptors open, not"
			    " %d\n", c, open_fds(), during);
			return (1);
		}
	}
	/* Still open on this side: only the copies went. */
	for (i = 0; i < 8; i++) {
		CHECK(fcntl(fds[i], F_GETFD) != -1);
		close(fds[i]);
	}
	pair_close(sp);
	CHECK_INT(open_fds(), before);
	return (0);
}

/*
 * The peer gone: 0, after what it sent before it went; nothing: EAGAIN;
 * no bytes but descriptors: refused, the descriptors closed.
 */
static int
test_nsexec_eof(void)
{
	struct nsexec_msg	 m;
	const char		*one[] = { "done" };
	int			 sp[2], fd, before;

	CHECK(pair(sp) == 0);
	CHECK(fcntl(sp[1], F_SETFL, O_NONBLOCK) == 0);
	errno = 0;
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m),
	    -1);
	CHECK_INT(errno, EAGAIN);
	CHECK(nsexec_msg_send(sp[0], NSEXEC_FAILED, one, 1, NULL, 0) == 0);
	close(sp[0]);
	sp[0] = -1;
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 1);
	CHECK_INT(m.type, NSEXEC_FAILED);
	CHECK_STR(m.f[0], "done");
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 0);
	CHECK_INT(m.nfds, 0);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 0);
	pair_close(sp);

	/* A datagram of no bytes reads as the end too. */
	CHECK(pair(sp) == 0);
	CHECK(send_raw(sp[0], "", 0, NULL, 0) == 0);
	CHECK_INT(nsexec_msg_recv(sp[1], nsexec_buf, sizeof nsexec_buf, &m), 0);
	pair_close(sp);

	/*
	 * But one of no bytes that carries descriptors is a bad message,
	 * and the descriptors it brought are closed.
	 */
	CHECK((before = open_fds()) > 0);
	CHECK(pair(sp) == 0);
	CHECK((fd = open("/dev/null", O_RDONLY)) != -1);
	CHECK(send_raw(sp[0], "", 0, &fd, 1) == 0);
	close(fd);
	CHECK(refused(sp[1], "no bytes and a descriptor") == 0);
	pair_close(sp);
	CHECK_INT(open_fds(), before);

	/* A send to a peer gone fails (no SIGPIPE). */
	CHECK(pair(sp) == 0);
	close(sp[1]);
	sp[1] = -1;
	errno = 0;
	CHECK_INT(nsexec_msg_send(sp[0], NSEXEC_FAILED, one, 1, NULL, 0), -1);
	CHECK_INT(errno, EPIPE);
	pair_close(sp);
	return (0);
}

const struct unit_case unit_nsexec_cases[] = {
	{ "nsexec/roundtrip", test_nsexec_roundtrip },
	{ "nsexec/pass", test_nsexec_pass },
	{ "nsexec/sequence", test_nsexec_sequence },
	{ "nsexec/truncated", test_nsexec_truncated },
	{ "nsexec/overlong", test_nsexec_overlong },
	{ "nsexec/version-type", test_nsexec_version_type },
	{ "nsexec/extra-fds", test_nsexec_extra_fds },
	{ "nsexec/eof", test_nsexec_eof },
	{ NULL, NULL }
};
