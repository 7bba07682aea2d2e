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
 * hostile: what an attacker runs inside a sandbox, for the regress tests
 * and benchmarks of the sandbox boundary. Built static by the tests (the
 * test image has no compiler and no C library of its own) and copied into
 * the workspace before the sandbox is made.
 *
 *	hostile swap A B		exchange the names A and B forever
 *					(renameat2 RENAME_EXCHANGE)
 *	hostile serve SOCK MODE		listen on a unix socket; take one
 *					descriptor; then, by MODE:
 *	    swap A B			exchange A and B under it forever
 *	    keep			keep it; on each later connection
 *					list the directory under it and
 *					write the file "planted" there,
 *					answering what it saw
 *	    scribble			keep it (a file open for writing);
 *					on each later connection write
 *					"SCRIBBLED" at its start
 *	hostile send SOCK PATH		open PATH (O_PATH) and send it
 *	hostile sendrw SOCK PATH	open PATH for writing and send it
 *	hostile ask SOCK		connect, print the answer
 *	hostile iouring			try io_uring_setup; print its errno
 */

#define _GNU_SOURCE

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE	(1 << 1)
#endif

static void
swap_forever(int dirfd, const char *a, const char *b)
{
	for (;;)
		syscall(SYS_renameat2, dirfd, a, dirfd, b, RENAME_EXCHANGE);
}

static int
listen_on(const char *path)
{
	struct sockaddr_un	sun;
	int			s;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	unlink(path);
	if ((s = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(s, (struct sockaddr *)&sun, sizeof sun) != 0 ||
	    listen(s, 8) != 0) {
		perror("listen");
		exit(1);
	}
	return (s);
}

static int
connect_to(const char *path)
{
	struct sockaddr_un	sun;
	int			s;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	if ((s = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    connect(s, (struct sockaddr *)&sun, sizeof sun) != 0) {
		perror("connect");
		exit(1);
	}
	return (s);
}

static int
recv_fd(int s)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	char		 c, cbuf[CMSG_SPACE(sizeof(int))];
	int		 fd;

	memset(&msg, 0, sizeof msg);
	iov.iov_base = &c;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	if (recvmsg(s, &msg, 0) != 1 || (cm = CMSG_FIRSTHDR(&msg)) == NULL)
		return (-1);
	memcpy(&fd, CMSG_DATA(cm), sizeof fd);
	return (fd);
}

static void
send_fd(int s, int fd)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	char		 c = 'f', cbuf[CMSG_SPACE(sizeof(int))];

	memset(&msg, 0, sizeof msg);
	memset(cbuf, 0, sizeof cbuf);
	iov.iov_base = &c;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	if (sendmsg(s, &msg, 0) != 1) {
		perror("sendmsg");
		exit(1);
	}
}

/* List what the kept descriptor reaches and plant a file there. */
static void
answer(int c, int dirfd)
{
	struct dirent	*de;
	DIR		*d;
	char		 buf[8192];
	size_t		 len = 0;
	int		 fd;

	fd = openat(dirfd, "planted", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd != -1) {
		if (write(fd, "planted\n", 8) != 8)
			len += snprintf(buf, sizeof buf, "plant-failed\n");
		close(fd);
		len += snprintf(buf + len, sizeof buf - len, "planted\n");
	} else
		len += snprintf(buf + len, sizeof buf - len, "plant: %s\n",
		    strerror(errno));
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY);
	if (fd != -1 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL && len < sizeof buf - 300)
			len += snprintf(buf + len, sizeof buf - len,
			    "entry %s\n", de->d_name);
		closedir(d);
	} else
		len += snprintf(buf + len, sizeof buf - len, "list: %s\n",
		    strerror(errno));
	if (write(c, buf, len) == -1)
		perror("write");
}

int
main(int argc, char **argv)
{
	char	buf[8192];
	ssize_t	n;
	int	s, c, fd;

	if (argc == 4 && strcmp(argv[1], "swap") == 0) {
		swap_forever(AT_FDCWD, argv[2], argv[3]);
	} else if (argc >= 4 && strcmp(argv[1], "serve") == 0) {
		s = listen_on(argv[2]);
		if ((c = accept(s, NULL, NULL)) == -1 ||
		    (fd = recv_fd(c)) == -1) {
			perror("serve");
			return (1);
		}
		close(c);
		if (argc == 6 && strcmp(argv[3], "swap") == 0)
			swap_forever(fd, argv[4], argv[5]);
		for (;;) {
			if ((c = accept(s, NULL, NULL)) == -1)
				continue;
			if (strcmp(argv[3], "scribble") == 0) {
				n = pwrite(fd, "SCRIBBLED\n", 10, 0);
				dprintf(c, "scribbled %zd\n", n);
			} else
				answer(c, fd);
			close(c);
		}
	} else if (argc == 4 && (strcmp(argv[1], "send") == 0 ||
	    strcmp(argv[1], "sendrw") == 0)) {
		fd = argv[1][4] == 'r' ? open(argv[3], O_RDWR) :
		    open(argv[3], O_PATH | O_DIRECTORY);
		if (fd == -1) {
			perror("open");
			return (1);
		}
		s = connect_to(argv[2]);
		send_fd(s, fd);
		close(s);
		return (0);
	} else if (argc == 3 && strcmp(argv[1], "ask") == 0) {
		s = connect_to(argv[2]);
		while ((n = read(s, buf, sizeof buf)) > 0)
			fwrite(buf, 1, n, stdout);
		return (0);
	} else if (argc == 2 && strcmp(argv[1], "iouring") == 0) {
		long	params[30];

		memset(params, 0, sizeof params);
		if (syscall(425 /* io_uring_setup */, 4, params) == -1)
			printf("io_uring_setup: %s\n", strerror(errno));
		else
			printf("io_uring_setup: allowed\n");
		return (0);
	}
	fprintf(stderr, "usage: hostile swap|serve|send|sendrw|ask|iouring"
	    " ...\n");
	return (2);
}
