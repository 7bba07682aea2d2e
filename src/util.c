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
 * Small helpers shared by every module: random identifiers, hex and
 * base64url, UTF-8 checks, SHA-256, descriptor flags, JSON output and
 * atomic file writes.
 */

#include "config.h"

#include <sys/socket.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "sandbox-mcp.h"

/* Fill buf with len random lowercase hex digits and a NUL (len + 1 bytes). */
int
util_random_hex(char *buf, size_t len)
{
	unsigned char	raw[64];
	size_t		n = (len + 1) / 2;

	if (n > sizeof raw)
		fatalx("%s: %zu digits is too many", __func__, len);
	if (RAND_bytes(raw, (int)n) != 1)
		fatalx("%s: the OpenSSL random generator failed", __func__);
	util_hex(raw, n, buf);
	buf[len] = '\0';
	explicit_bzero(raw, sizeof raw);
	return (0);
}

/* Lowercase hex of len bytes into out (2 * len + 1 bytes). */
void
util_hex(const unsigned char *in, size_t len, char *out)
{
	static const char	digits[] = "0123456789abcdef";
	size_t			i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * len] = '\0';
}

/* Whether len bytes are well-formed UTF-8 (no overlongs, no surrogates). */
int
util_utf8_valid(const char *s, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s;
	const unsigned char	*end = p + len;
	unsigned int		 c, need, min;

	while (p < end) {
		c = *p++;
		if (c < 0x80)
			continue;
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			min = 0x80;
			c &= 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			min = 0x800;
			c &= 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			min = 0x10000;
			c &= 0x07;
		} else
			return (0);
		if ((size_t)(end - p) < need)
			return (0);
		while (need-- > 0) {
			if ((*p & 0xc0) != 0x80)
				return (0);
			c = (c << 6) | (*p++ & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return (0);
	}
	return (1);
}

/*
 * Make s valid UTF-8 in place: each byte of a sequence that is not
 * (a file name's, say) becomes '?'. Returns s.
 */
char *
util_utf8_scrub(char *s)
{
	unsigned char	*p = (unsigned char *)s, *q;
	size_t		 len, n;

	if (s == NULL)
		return (s);
	len = strlen(s);
	while (*p != '\0') {
		if (*p < 0x80) {
			p++;
			continue;
		}
		/* The longest valid sequence that starts here, if any. */
		for (n = 2; n <= 4 && p + n <= (unsigned char *)s + len; n++) {
			if (util_utf8_valid((char *)p, n))
				break;
		}
		if (n <= 4 && p + n <= (unsigned char *)s + len) {
			p += n;
			continue;
		}
		for (q = p + 1; *q != '\0' && (*q & 0xc0) == 0x80 &&
		    q - p < 4; q++)
			;
		memset(p, '?', q - p);
		p = q;
	}
	return (s);
}

/*
 * Whether a caller's identifier is safe: 1 to 64 bytes of [a-z0-9_-],
 * never "." or "..", so it can be a path component.
 */
int
util_id_valid(const char *id)
{
	size_t	len = strlen(id);

	if (len == 0 || len > 64)
		return (0);
	return (id[strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789_-")] ==
	    '\0');
}

/* FNV-1a of a string, from a seed (0, or a secret of the caller's). */
uint32_t
util_hash(const char *s, uint32_t seed)
{
	uint32_t	h = 2166136261U ^ seed;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619U;
	}
	return (h);
}

/* Whether a layer id is well formed: [A-Za-z0-9_-], 1 to 64 bytes. */
int
util_id_valid_layer(const char *id)
{
	size_t	len = strlen(id);

	if (len == 0 || len > 64)
		return (0);
	return (id[strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_-")] == '\0');
}

void
util_sha256(const void *data, size_t len, unsigned char out[32])
{
	unsigned int	n = 32;

	if (EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) != 1)
		fatalx("%s: EVP_Digest failed", __func__);
}

/* Unpadded base64url of len bytes; returns the length written. */
int
util_base64url(const unsigned char *in, size_t len, char *out, size_t size)
{
	static const char	 a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t			 i, o = 0;
	unsigned int		 v;

	if (size < (len * 4 + 2) / 3 + 1)
		return (-1);
	for (i = 0; i + 2 < len; i += 3) {
		v = in[i] << 16 | in[i + 1] << 8 | in[i + 2];
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = a[(v >> 6) & 63];
		out[o++] = a[v & 63];
	}
	if (len - i == 1) {
		v = in[i] << 16;
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
	} else if (len - i == 2) {
		v = in[i] << 16 | in[i + 1] << 8;
		out[o++] = a[v >> 18];
		out[o++] = a[(v >> 12) & 63];
		out[o++] = a[(v >> 6) & 63];
	}
	out[o] = '\0';
	return ((int)o);
}

int
util_set_nonblock(int fd)
{
	int	flags;

	if ((flags = fcntl(fd, F_GETFL)) == -1)
		return (-1);
	return (fcntl(fd, F_SETFL, flags | O_NONBLOCK));
}

/*
 * A TCP connection that sends each write at once: an answer's last
 * segment is never held back (Nagle) until the peer acknowledges the
 * ones before, which a peer delaying its ACKs does 40 ms later. Not an
 * error on a socket that is not TCP.
 */
int
util_tcp_nodelay(int fd)
{
	int	on = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) != 0 &&
	    errno != EOPNOTSUPP && errno != ENOPROTOOPT)
		return (-1);
	return (0);
}

int
util_set_cloexec(int fd)
{
	int	flags;

	if ((flags = fcntl(fd, F_GETFD)) == -1)
		return (-1);
	return (fcntl(fd, F_SETFD, flags | FD_CLOEXEC));
}

/*
 * Compact JSON text, as cJSON_PrintUnformatted writes it but faster on
 * what answers are made of: an integral number is written as an integer
 * with no round trip through printf and scanf, and a string's bytes
 * that need no escape are copied in runs.
 */
struct util_jbuf {
	char	*p;
	size_t	 len;
	size_t	 cap;
};

static void
util_jbuf_room(struct util_jbuf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	while (b->len + n + 1 > b->cap)
		b->cap = b->cap == 0 ? 256 : b->cap * 2;
	b->p = xrealloc(b->p, b->cap);
}

static void
util_jbuf_add(struct util_jbuf *b, const char *s, size_t n)
{
	util_jbuf_room(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* An integer's digits at the end of buf[32]; where they start. */
static char *
util_json_digits(char *buf, unsigned long long u)
{
	char	*p = buf + 32;

	do {
		*--p = '0' + (char)(u % 10);
		u /= 10;
	} while (u != 0);
	return (p);
}

/*
 * Integers and numbers of up to three decimals (the milliseconds of
 * durations) are spelled here; others by printf, as few digits as read
 * back the same double. A decimal m/1000 printed here reads back as
 * the double nearest m/1000, which is the one tested, so nothing is
 * lost either way.
 */
static void
util_json_number(struct util_jbuf *b, double d)
{
	char		 buf[40], *p, *e;
	long long	 v, m;
	int		 n, neg;

	if (isnan(d) || isinf(d)) {
		util_jbuf_add(b, "null", 4);
		return;
	}
	if (d > -9007199254740992.0 && d < 9007199254740992.0 &&
	    d == (double)(v = (long long)d)) {
		neg = v < 0;
		p = util_json_digits(buf, neg ? -(unsigned long long)v :
		    (unsigned long long)v);
		if (neg)
			*--p = '-';
		util_jbuf_add(b, p, (size_t)(buf + 32 - p));
		return;
	}
	if (d > -1e12 && d < 1e12 && (double)(m = llround(d * 1000)) /
	    1000.0 == d) {
		neg = m < 0;
		if (neg)
			m = -m;
		e = buf + 32;
		p = util_json_digits(buf, (unsigned long long)(m / 1000));
		if (neg)
			*--p = '-';
		*e++ = '.';
		*e++ = '0' + (char)(m / 100 % 10);
		*e++ = '0' + (char)(m / 10 % 10);
		*e++ = '0' + (char)(m % 10);
		while (e[-1] == '0')
			e--;
		util_jbuf_add(b, p, (size_t)(e - p));
		return;
	}
	n = snprintf(buf, sizeof buf, "%1.15g", d);
	if (strtod(buf, NULL) != d)
		n = snprintf(buf, sizeof buf, "%1.17g", d);
	util_jbuf_add(b, buf, (size_t)n);
}

static void
util_json_string(struct util_jbuf *b, const char *s)
{
	const unsigned char	*p = (const unsigned char *)s, *run;
	char			 esc[8];

	util_jbuf_add(b, "\"", 1);
	for (;;) {
		run = p;
		while (*p >= 0x20 && *p != '"' && *p != '\\')
			p++;
		if (p > run)
			util_jbuf_add(b, (const char *)run, (size_t)(p - run));
		if (*p == '\0')
			break;
		switch (*p) {
		case '"':
			util_jbuf_add(b, "\\\"", 2);
			break;
		case '\\':
			util_jbuf_add(b, "\\\\", 2);
			break;
		case '\b':
			util_jbuf_add(b, "\\b", 2);
			break;
		case '\f':
			util_jbuf_add(b, "\\f", 2);
			break;
		case '\n':
			util_jbuf_add(b, "\\n", 2);
			break;
		case '\r':
			util_jbuf_add(b, "\\r", 2);
			break;
		case '\t':
			util_jbuf_add(b, "\\t", 2);
			break;
		default:
			snprintf(esc, sizeof esc, "\\u%04x", *p);
			util_jbuf_add(b, esc, 6);
			break;
		}
		p++;
	}
	util_jbuf_add(b, "\"", 1);
}

static void
util_json_value(struct util_jbuf *b, const cJSON *j)
{
	const cJSON	*c;

	switch (j->type & 0xff) {
	case cJSON_NULL:
		util_jbuf_add(b, "null", 4);
		break;
	case cJSON_False:
		util_jbuf_add(b, "false", 5);
		break;
	case cJSON_True:
		util_jbuf_add(b, "true", 4);
		break;
	case cJSON_Number:
		util_json_number(b, j->valuedouble);
		break;
	case cJSON_String:
		util_json_string(b, j->valuestring != NULL ? j->valuestring :
		    "");
		break;
	case cJSON_Raw:
		if (j->valuestring == NULL)
			fatalx("%s: a raw item with no text", __func__);
		util_jbuf_add(b, j->valuestring, strlen(j->valuestring));
		break;
	case cJSON_Array:
		util_jbuf_add(b, "[", 1);
		for (c = j->child; c != NULL; c = c->next) {
			if (c != j->child)
				util_jbuf_add(b, ",", 1);
			util_json_value(b, c);
		}
		util_jbuf_add(b, "]", 1);
		break;
	case cJSON_Object:
		util_jbuf_add(b, "{", 1);
		for (c = j->child; c != NULL; c = c->next) {
			if (c != j->child)
				util_jbuf_add(b, ",", 1);
			util_json_string(b, c->string != NULL ? c->string : "");
			util_jbuf_add(b, ":", 1);
			util_json_value(b, c);
		}
		util_jbuf_add(b, "}", 1);
		break;
	default:
		fatalx("%s: an item of type %d", __func__, j->type);
	}
}

/* Compact JSON text; the caller frees it with free(). */
char *
util_json_print(cJSON *json)
{
	struct util_jbuf	b = { NULL, 0, 0 };

	if (json == NULL)
		fatalx("%s: nothing to print", __func__);
	util_json_value(&b, json);
	util_jbuf_room(&b, 0);
	b.p[b.len] = '\0';
	return (b.p);
}

static void *
util_json_malloc(size_t size)
{
	return (xmalloc(size == 0 ? 1 : size));
}

/* Route cJSON's allocations through xmalloc (fatal when memory is out). */
void
util_json_init(void)
{
	cJSON_Hooks	hooks = { util_json_malloc, free };

	cJSON_InitHooks(&hooks);
}

/*
 * An exclusive lock on the file path (made 0600 if need be, never through
 * a link), taken without waiting: its descriptor, held until closed, or
 * -1 when another holds it (or the file cannot be opened).
 */
int
util_lock_try(const char *path)
{
	int	fd;

	if ((fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600)) == -1)
		return (-1);
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/* mkdir -p with a mode for the directories it creates. */
int
util_mkdir_p(const char *path, mode_t mode, char **cause)
{
	char	*copy, *p, c;

	copy = xstrdup(path);
	for (p = copy + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		c = *p;
		*p = '\0';
		if (mkdir(copy, mode) != 0 && errno != EEXIST) {
			xasprintf(cause, "cannot create %s: %s", copy,
			    strerror(errno));
			free(copy);
			return (-1);
		}
		*p = c;
		if (c == '\0')
			break;
	}
	free(copy);
	return (0);
}

/*
 * Replace a file atomically: write a temporary file beside it, fsync it,
 * rename it over the target and fsync the directory, so a crash leaves
 * either the old or the new content.
 */
/*
 * Read a whole file of at most max bytes, not following a symlink at its
 * end; NUL-terminated. NULL when it is missing, larger, or unreadable.
 */
char *
util_read_file(const char *path, size_t max, size_t *len)
{
	struct stat	 st;
	char		*buf;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return (NULL);
	if (fstat(fd, &st) != 0 || (size_t)st.st_size > max) {
		close(fd);
		return (NULL);
	}
	buf = xmalloc(st.st_size + 1);
	n = read(fd, buf, st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(buf);
		return (NULL);
	}
	buf[n] = '\0';
	*len = n;
	return (buf);
}

/*
 * Take an exclusive flock on path (created if missing), waiting for it;
 * returns the descriptor that holds it, or -1.
 */
int
util_lock_file(const char *path)
{
	int	fd;

	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1)
		return (-1);
	while (flock(fd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			close(fd);
			return (-1);
		}
	}
	return (fd);
}

int
util_write_atomic(const char *path, const void *data, size_t len,
    char **cause)
{
	return (util_write_file(path, data, len, 1, cause));
}

/* Commit a directory's entries (renames into it): best effort. */
void
util_fsync_dir(const char *dir)
{
	int	dfd;

	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		(void)fsync(dfd);
		close(dfd);
	}
}

/*
 * Replace a file atomically (temporary file and rename); with sync, also
 * durably (fsync the file and the directory). Without, a crash may leave
 * the old content, or none for a new file: for state that does not
 * outlive this process anyway.
 */
int
util_write_file(const char *path, const void *data, size_t len, int sync,
    char **cause)
{
	char		*tmp, *dir, *dcopy;
	char		 rnd[13];
	const char	*p = data;
	ssize_t		 n;
	int		 fd;

	util_random_hex(rnd, 12);
	xasprintf(&tmp, "%s.tmp-%s", path, rnd);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd == -1) {
		xasprintf(cause, "cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return (-1);
	}
	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		p += n;
		len -= n;
	}
	if (sync && fsync(fd) != 0)
		goto fail;
	if (close(fd) != 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		goto fail;
	if (!sync) {
		free(tmp);
		return (0);
	}
	dcopy = xstrdup(path);
	dir = dirname(dcopy);
	util_fsync_dir(dir);
	free(dcopy);
	free(tmp);
	return (0);

fail:
	xasprintf(cause, "cannot write %s: %s", path, strerror(errno));
	if (fd != -1)
		close(fd);
	unlink(tmp);
	free(tmp);
	return (-1);
}

/* Wall-clock time in Unix milliseconds. */
uint64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* Monotonic time in microseconds, for durations. */
uint64_t
mono_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

/* Whether an address is on the loopback interface. */
int
util_sockaddr_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	if (sa->sa_family == AF_INET) {
		sin = (const struct sockaddr_in *)sa;
		return ((ntohl(sin->sin_addr.s_addr) >> 24) == 127);
	}
	if (sa->sa_family == AF_INET6) {
		sin6 = (const struct sockaddr_in6 *)sa;
		return (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr));
	}
	return (0);
}

/*
 * A peer's bytes made fit for a log line: printable ASCII is kept, and
 * quotes, backslashes and every other byte become \xHH, so a value can
 * neither end its quotes nor pose as another field. At most len - 1
 * bytes are written, whole escapes only; returns out.
 */
char *
util_log_safe(const char *in, char *out, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*p;
	size_t			 o = 0;

	for (p = (const unsigned char *)in; *p != '\0'; p++) {
		if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') {
			if (o + 1 >= len)
				break;
			out[o++] = (char)*p;
			continue;
		}
		if (o + 4 >= len)
			break;
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[*p >> 4];
		out[o++] = hex[*p & 0xf];
	}
	if (len != 0)
		out[o] = '\0';
	return (out);
}

/*
 * Percent-encode a string for a URL path or query: everything but
 * letters, digits and -._~ (and, in a path, / : @) becomes %XX.
 */
char *
util_url_escape(const char *s, int path)
{
	static const char	 hex[] = "0123456789ABCDEF";
	const unsigned char	*p;
	char			*out, *o;

	out = o = xmalloc(strlen(s) * 3 + 1);
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p) != NULL ||
		    (path && strchr("/:@", *p) != NULL))
			*o++ = *p;
		else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return (out);
}

/* Whether a key or tenant name is 1 to 64 of [A-Za-z0-9._-]. */
int
util_tenant_name_valid(const char *name)
{
	size_t	n = strlen(name);

	return (n > 0 && n <= 64 && name[strspn(name,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-")] == '\0');
}

/*
 * Whether a caller of one tenant sees what another tenant owns: its own,
 * and the local operator everything.
 */
int
util_tenant_sees(const char *caller, const char *owner)
{
	return (strcmp(caller, TENANT_LOCAL) == 0 || strcmp(caller,
	    owner) == 0);
}

/*
 * cJSON ends a string at an escaped NUL (\u0000) and keeps the rest
 * behind it, so a string holding one cannot be seen whole. Each such
 * escape becomes U+10FFFE (a noncharacter) in a copy of the message,
 * which argument checks then refuse by name. Returns the copy, or NULL
 * when the message has none.
 */
char *
util_json_mark_nuls(const char *buf, size_t len)
{
	char	*out = NULL, *o = NULL;
	size_t	 i, bs = 0, start = 0;

	for (i = 0; i + 6 <= len; i++) {
		if (buf[i] == '\\') {
			bs++;
			continue;
		}
		if (buf[i] == 'u' && bs % 2 == 1 &&
		    memcmp(buf + i, "u0000", 5) == 0) {
			if (out == NULL)
				out = o = xmalloc(len * 2 + 1);
			/* Copy up to the backslash, then the marker. */
			memcpy(o, buf + start, i - 1 - start);
			o += i - 1 - start;
			memcpy(o, "\\udbff\\udffe", 12);
			o += 12;
			start = i + 5;
		}
		bs = 0;
	}
	if (out == NULL)
		return (NULL);
	memcpy(o, buf + start, len - start);
	o += len - start;
	*o = '\0';
	return (out);
}

/* Whether [p, end) is JSON's white space only (what may follow a value). */
int
util_json_blank(const char *p, const char *end)
{
	for (; p != NULL && p < end; p++) {
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			return (0);
	}
	return (1);
}

static int
util_json_name_cmp(const void *a, const void *b)
{
	return (strcmp(*(const char *const *)a, *(const char *const *)b));
}

/*
 * The name of a member given twice in one object, at any depth of a
 * parsed message, or NULL. cJSON keeps both and answers lookups with the
 * first; a gateway in front with a last-wins parser would read another
 * tool or sandbox than the one run, so such a message is refused whole.
 * cJSON bounds the depth; a large object is sorted, not compared pairwise.
 */
const char *
util_json_duplicate(const cJSON *j)
{
	const cJSON	 *c;
	const char	**names, *dup = NULL;
	size_t		  n = 0, i;

	if (!cJSON_IsObject(j) && !cJSON_IsArray(j))
		return (NULL);
	for (c = j->child; c != NULL; c = c->next) {
		if ((dup = util_json_duplicate(c)) != NULL)
			return (dup);
		n++;
	}
	if (!cJSON_IsObject(j) || n < 2)
		return (NULL);
	names = xreallocarray(NULL, n, sizeof *names);
	for (i = 0, c = j->child; c != NULL; c = c->next)
		names[i++] = c->string != NULL ? c->string : "";
	qsort(names, n, sizeof *names, util_json_name_cmp);
	for (i = 1; i < n && dup == NULL; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			dup = names[i];
	free(names);
	return (dup);
}

/* ---- a scan of one JSON object's text, without building it ---- */

static const char	*util_jscan_value(const char *, const char *, int,
			    int, int *, int *);
static const char	*util_jscan_number_text(const char *, const char *);

static const char *
util_jscan_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return (p);
}

/* The code unit of a \\uXXXX escape whose u is at p, or -1. */
static long
util_jscan_unit(const char *p, const char *end)
{
	long	v = 0;
	int	i, c;

	if (end - p < 5)
		return (-1);
	for (i = 1; i <= 4; i++) {
		c = (unsigned char)p[i];
		if (c >= '0' && c <= '9')
			v = v * 16 + (c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v = v * 16 + ((c | 0x20) - 'a' + 10);
		else
			return (-1);
	}
	return (v);
}

/*
 * A string at p ('"'); past its closing quote, or NULL. Escapes that
 * decoders read in different ways are refused too: \\u0000 (cJSON ends
 * the string there) and a surrogate that is not one of a pair.
 */
static const char *
util_jscan_string(const char *p, const char *end, int *escaped)
{
	long	u, lo;

	for (p++; p < end; p++) {
		if ((unsigned char)*p < 0x20)
			return (NULL);
		if (*p == '"')
			return (p + 1);
		if (*p != '\\')
			continue;
		*escaped = 1;
		if (++p == end)
			return (NULL);
		switch (*p) {
		case '"': case '\\': case '/': case 'b': case 'f': case 'n':
		case 'r': case 't':
			break;
		case 'u':
			if ((u = util_jscan_unit(p, end)) <= 0 ||
			    (u >= 0xdc00 && u <= 0xdfff))
				return (NULL);
			p += 4;
			if (u >= 0xd800 && u <= 0xdbff) {
				if (end - p < 3 || p[1] != '\\' || p[2] != 'u' ||
				    (lo = util_jscan_unit(p + 2, end)) < 0xdc00 ||
				    lo > 0xdfff)
					return (NULL);
				p += 6;
			}
			break;
		default:
			return (NULL);
		}
	}
	return (NULL);
}

static const char *
util_jscan_digits(const char *p, const char *end)
{
	const char	*s = p;

	while (p < end && *p >= '0' && *p <= '9')
		p++;
	return (p > s ? p : NULL);
}

/*
 * A number as JSON spells it, and one a double holds (1e400 is refused:
 * decoders make it infinity, or refuse it); past it, or NULL.
 */
static const char *
util_jscan_number(const char *p, const char *end)
{
	const char	*s = p;
	char		 num[400];

	p = util_jscan_number_text(p, end);
	if (p == NULL || (p - s <= 300 && memchr(s, 'e', p - s) == NULL &&
	    memchr(s, 'E', p - s) == NULL))
		return (p);
	if (p - s >= (ptrdiff_t)sizeof num)
		return (NULL);
	memcpy(num, s, p - s);
	num[p - s] = '\0';
	return (isinf(strtod(num, NULL)) ? NULL : p);
}

/* The text of a number as JSON spells it; past it, or NULL. */
static const char *
util_jscan_number_text(const char *p, const char *end)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else if ((p = util_jscan_digits(p, end)) == NULL)
		return (NULL);
	if (p < end && *p == '.' && (p = util_jscan_digits(p + 1, end)) ==
	    NULL)
		return (NULL);
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if ((p = util_jscan_digits(p, end)) == NULL)
			return (NULL);
	}
	return (p);
}

/*
 * The fields named by an object's own member (name, nlen long) get its
 * value [v, p) of type; -1 when a field is named twice.
 */
static int
util_jscan_field(struct util_jfield *fields, size_t nfields,
    const char *name, size_t nlen, const char *v, const char *p, int type,
    int escaped)
{
	size_t	i;

	for (i = 0; i < nfields; i++) {
		if (strlen(fields[i].name) != nlen ||
		    memcmp(fields[i].name, name, nlen) != 0)
			continue;
		if (fields[i].value != NULL)
			return (-1);
		fields[i].value = v;
		fields[i].len = (size_t)(p - v);
		fields[i].type = type;
		fields[i].escaped = escaped;
	}
	return (0);
}

/*
 * An object or array at p, its members' values scanned; past it. At
 * depth 0 (the object scanned) a member name may have no escape, and
 * fields get their values.
 */
static const char *
util_jscan_container(const char *p, const char *end, int depth, int max,
    struct util_jfield *fields, size_t nfields)
{
	char		 close = *p == '{' ? '}' : ']';
	const char	*name = NULL, *v;
	size_t		 nlen = 0;
	int		 type, escaped;

	if (depth >= max)
		return (NULL);
	p = util_jscan_blank(p + 1, end);
	if (p < end && *p == close)
		return (p + 1);
	for (;;) {
		if (close == '}') {
			name = p + 1;
			escaped = 0;
			if (p == end || *p != '"' ||
			    (p = util_jscan_string(p, end, &escaped)) == NULL ||
			    (depth == 0 && escaped))
				return (NULL);
			nlen = (size_t)(p - 1 - name);
			p = util_jscan_blank(p, end);
			if (p == end || *p != ':')
				return (NULL);
			p = util_jscan_blank(p + 1, end);
		}
		v = p;
		if ((p = util_jscan_value(p, end, depth + 1, max, &type,
		    &escaped)) == NULL)
			return (NULL);
		if (depth == 0 && util_jscan_field(fields, nfields, name, nlen,
		    v, p, type, escaped) != 0)
			return (NULL);
		p = util_jscan_blank(p, end);
		if (p < end && *p == close)
			return (p + 1);
		if (p == end || *p != ',')
			return (NULL);
		p = util_jscan_blank(p + 1, end);
	}
}

/* Any value at p; past it, or NULL. */
static const char *
util_jscan_value(const char *p, const char *end, int depth, int max,
    int *type, int *escaped)
{
	*escaped = 0;
	if (p == end)
		return (NULL);
	switch (*p) {
	case '"':
		*type = cJSON_String;
		return (util_jscan_string(p, end, escaped));
	case '{':
		*type = cJSON_Object;
		return (util_jscan_container(p, end, depth, max, NULL, 0));
	case '[':
		*type = cJSON_Array;
		return (util_jscan_container(p, end, depth, max, NULL, 0));
	case 't':
		*type = cJSON_True;
		return (end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 :
		    NULL);
	case 'f':
		*type = cJSON_False;
		return (end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 :
		    NULL);
	case 'n':
		*type = cJSON_NULL;
		return (end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 :
		    NULL);
	default:
		*type = cJSON_Number;
		return (util_jscan_number(p, end));
	}
}

/*
 * Whether text[0..len) is one JSON object of valid UTF-8 and nothing
 * else (blanks around it are spaces and tabs only, so it fits on one
 * line of any line-delimited stream as it is), that any decoder reads
 * alike; each field's name found among its own members (not deeper)
 * gets the text of its value. 0 when it is, -1 when not: nested deeper
 * than max, a control character, a CR or an LF anywhere, a member name
 * with an escape or a field's name given twice (decoders disagree on
 * which one counts), \\u0000, a lone surrogate, a number no double
 * holds, or any other fault. Nothing is built or copied.
 */
int
util_json_scan(const char *text, size_t len, struct util_jfield *fields,
    size_t nfields, int max)
{
	const char	*p, *end = text + len;
	size_t		 i;

	for (i = 0; i < nfields; i++)
		fields[i].value = NULL;
	if (!util_utf8_valid(text, len))
		return (-1);
	p = util_jscan_blank(text, end);
	if (p == end || *p != '{' || (p = util_jscan_container(p, end, 0,
	    max, fields, nfields)) == NULL)
		return (-1);
	return (util_jscan_blank(p, end) == end ? 0 : -1);
}

/*
 * A field's value as a string of no escapes (its text between the
 * quotes, copied), or NULL: not there, not a string, or one that
 * would need decoding.
 */
char *
util_jfield_string(const struct util_jfield *f)
{
	if (f->value == NULL || f->type != cJSON_String || f->escaped)
		return (NULL);
	return (xstrndup(f->value + 1, f->len - 2));
}

/* A field's value as a number, into *v: 0, or -1 when it is none. */
int
util_jfield_number(const struct util_jfield *f, double *v)
{
	char		 num[64];
	const char	*p;
	long long	 n = 0;

	if (f->value == NULL || f->type != cJSON_Number)
		return (-1);
	p = f->value;
	if (f->len <= 15 && *p != '-') {
		for (; p < f->value + f->len && *p >= '0' && *p <= '9'; p++)
			n = n * 10 + (*p - '0');
		if (p == f->value + f->len) {
			*v = (double)n;
			return (0);
		}
	}
	if (f->len >= sizeof num)
		return (-1);
	memcpy(num, f->value, f->len);
	num[f->len] = '\0';
	*v = strtod(num, NULL);
	return (0);
}
