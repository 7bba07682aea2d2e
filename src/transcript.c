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
 * A command's transcript: the bytes it wrote, kept on disk, numbered in
 * lines and served as windows. It owns one directory (the path given to
 * transcript_open) and the segment files in it; memory holds only
 * counters, the list of segments and a sparse index.
 *
 * Lines. The stream is split on \n. A line that reaches TRANSCRIPT_LINE_MAX
 * (1 MiB) bytes without one is broken there as if a newline were there;
 * the break moves back to the start of a UTF-8 character when the last
 * three bytes begin one that is not complete, so a valid character is
 * never split. A window shows such a piece followed by \n (a \r\n that
 * the break separates shows as a \r ending the piece, then an empty line).
 * Every line fits in 1 MiB, which bounds segments, scans and windows. Lines
 * are numbered from 0, counting from the first byte the command ever wrote;
 * the total counts a last line without \n.
 *
 * Segments. Bytes are written (one write(2) per append) to the newest
 * segment file, named by a sequence number. A new segment begins
 * once the newest has reached a quarter of the cap and the next byte
 * begins a line, so a line never spans two segments. When the bytes on
 * disk exceed the cap, the oldest segments are deleted whole (never the
 * newest) and their lines counted as dropped; they keep their numbers.
 * On disk there are then at most cap bytes, or one segment (a quarter of
 * the cap plus at most two lines) when the cap is smaller than that.
 *
 * Index. Each segment keeps marks (line number, byte offset) at a line
 * start every TRANSCRIPT_MARK_LINES lines or TRANSCRIPT_MARK_BYTES bytes,
 * whichever comes first. A segment's first line is an implicit mark.
 * Finding line n: the segment holding it, a binary search for the nearest
 * mark at or before it, then a forward scan of less than
 * TRANSCRIPT_MARK_BYTES with pread. Marks take 8 bytes, so at most 2.2 KiB
 * per MiB kept (for empty lines), 140 KiB for 64 MiB; about 8 KiB for
 * 64 MiB of typical output. An append counts the lines between two marks
 * at once, without looking at each line, so a flood of short lines costs
 * little more than the write(2).
 *
 * Windows. From a start line, whole lines, bounded by a number of lines
 * and of bytes of the text returned, stopping before the first line that
 * would pass either bound; a \r before \n is left out, invalid UTF-8
 * (each maximal ill-formed subsequence) becomes U+FFFD, so the text is
 * valid UTF-8. A first line longer than the byte bound is cut at a
 * character boundary (its \n kept, within the bound) and counted as read:
 * the rest of that line cannot be reached through windows, and the window
 * says it was truncated. While the command runs, a window that ends with
 * the last line, unterminated, shows it but its end points at that line,
 * so a reader that moves its cursor to end sees it again, longer; a
 * character still unfinished at its end is left out until it is complete.
 *
 * Descriptors: the newest segment is open while the command may still
 * write (until transcript_finish); a window opens older segments for the
 * length of the call.
 */

#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "transcript.h"
#include "xmalloc.h"

#define TRANSCRIPT_MARK_LINES	4096
#define TRANSCRIPT_MARK_BYTES	(64 * 1024)
#define TRANSCRIPT_SEG_MAX	(1024ULL * 1024 * 1024)	/* marks fit 32 bits */
#define TRANSCRIPT_SCAN_SIZE	(64 * 1024)
#define TRANSCRIPT_NONE		UINT64_MAX

/* A line start, relative to the first line and byte of its segment. */
struct transcript_mark {
	uint32_t		 line;
	uint32_t		 offset;
};

/* One segment file: whole lines, from a line start. */
struct transcript_seg {
	uint64_t		 seq;		/* the file's name */
	uint64_t		 first_line;
	uint64_t		 offset;	/* of its first byte */
	uint64_t		 size;
	uint64_t		 lines;		/* lines that begin in it */
	struct transcript_mark	*marks;
	size_t			 nmarks;
	size_t			 marksalloc;
	TAILQ_ENTRY(transcript_seg) entry;
};
TAILQ_HEAD(transcript_segs, transcript_seg);

/*
 * Where lines end, fed a piece at a time: the state is the start of the
 * current line, the stream offset of the next byte and the three bytes
 * before it (for a break at TRANSCRIPT_LINE_MAX).
 */
struct transcript_split {
	uint64_t		 start;
	uint64_t		 pos;
	unsigned char		 tail[3];
};

struct transcript {
	char			*path;
	uint64_t		 cap;
	uint64_t		 segsize;
	int			 fd;		/* newest segment, or -1 */
	int			 finished;
	int			 made;		/* the directory exists */
	char			*error;		/* a write failed: why */

	struct transcript_split	 split;		/* at the end of the stream */
	uint64_t		 ended;		/* lines complete */
	uint64_t		 dropped;	/* lines deleted */
	uint64_t		 kept;		/* bytes in the segments */
	uint64_t		 nextseq;

	struct transcript_segs	 segs;
	struct transcript_seg	*cur;
};

/* What an append changes in the newest segment, to undo a failed write. */
struct transcript_undo {
	struct transcript_split	 split;
	uint64_t		 ended;
	uint64_t		 kept;
	uint64_t		 size;
	uint64_t		 lines;
	size_t			 nmarks;
};

static const char	transcript_fffd[] = "\xef\xbf\xbd";

static int	transcript_clear(const char *, char **);
static void	transcript_cause(char **, const char *, ...)
		    __attribute__((__format__ (printf, 2, 3)));

/* The length of the sequence a UTF-8 lead byte starts, or 0. */
static size_t
transcript_utf8_lead(unsigned char c)
{
	if (c >= 0xc2 && c <= 0xdf)
		return (2);
	if (c >= 0xe0 && c <= 0xef)
		return (3);
	if (c >= 0xf0 && c <= 0xf4)
		return (4);
	return (0);
}

/*
 * How many of the last bytes of p begin a character that is not finished:
 * those of a line broken at TRANSCRIPT_LINE_MAX go to the next line, and
 * those of a line still being written are not shown yet.
 */
static size_t
transcript_utf8_unfinished(const unsigned char *p, size_t len)
{
	size_t	k;

	for (k = 1; k <= 3 && k <= len; k++) {
		if ((p[len - k] & 0xc0) == 0x80)
			continue;
		return (transcript_utf8_lead(p[len - k]) > k ? k : 0);
	}
	return (0);
}

/*
 * Look at up to len bytes at s->pos and return how many were taken. When a
 * line ends, *end is set to the stream offset one past it (which is behind
 * s->pos when a long line was broken back to a character start) and the
 * next line starts there; otherwise *end is TRANSCRIPT_NONE.
 */
static size_t
transcript_split(struct transcript_split *s, const unsigned char *buf,
    size_t len, uint64_t *end)
{
	const unsigned char	*nl;
	uint64_t		 room;
	size_t			 n = len, k;

	room = TRANSCRIPT_LINE_MAX - (s->pos - s->start);
	*end = TRANSCRIPT_NONE;
	if (n > room)
		n = room;
	if ((nl = memchr(buf, '\n', n)) != NULL) {
		n = nl - buf + 1;
		s->pos += n;
		*end = s->start = s->pos;
		return (n);
	}
	if (n >= 3)
		memcpy(s->tail, buf + n - 3, 3);
	else {
		memmove(s->tail, s->tail + n, 3 - n);
		memcpy(s->tail + 3 - n, buf, n);
	}
	s->pos += n;
	if (n == room) {
		k = transcript_utf8_unfinished(s->tail, 3);
		*end = s->start = s->pos - k;
	}
	return (n);
}

/*
 * Copy src to dst as valid UTF-8, each maximal ill-formed subsequence
 * becoming U+FFFD, stopping before a character that does not fit in
 * dstlen. When more is set, src is cut short and an unfinished character
 * at its end is left unread rather than replaced. Returns the bytes
 * written; *used is set to the bytes of src read.
 */
static size_t
transcript_utf8_copy(char *dst, size_t dstlen, const unsigned char *src,
    size_t srclen, int more, size_t *used)
{
	size_t		i = 0, o = 0, n, j;
	unsigned char	c, lo, hi;

	while (i < srclen) {
		c = src[i];
		if (c < 0x80) {
			if (o == dstlen)
				break;
			dst[o++] = c;
			i++;
			continue;
		}
		n = transcript_utf8_lead(c);
		lo = 0x80;
		hi = 0xbf;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		else if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		for (j = 1; j < n && i + j < srclen; j++) {
			if (src[i + j] < lo || src[i + j] > hi)
				break;
			lo = 0x80;
			hi = 0xbf;
		}
		if (n != 0 && j == n) {
			if (o + n > dstlen)
				break;
			memcpy(dst + o, src + i, n);
			o += n;
			i += n;
			continue;
		}
		if (more && i + j == srclen)
			break;
		if (o + 3 > dstlen)
			break;
		memcpy(dst + o, transcript_fffd, 3);
		o += 3;
		i += j;
	}
	*used = i;
	return (o);
}

/* Say why a call failed, when the caller asked (cause may be NULL). */
static void
transcript_cause(char **cause, const char *fmt, ...)
{
	va_list	ap;

	if (cause == NULL)
		return;
	va_start(ap, fmt);
	xvasprintf(cause, fmt, ap);
	va_end(ap);
}

/*
 * The file of segment seq in directory dir: the segment ("") or where it
 * begins (".first"); the caller frees it.
 */
static char *
transcript_file(const char *dir, uint64_t seq, const char *suffix)
{
	char	*path;

	xasprintf(&path, "%s/%010llu%s", dir, (unsigned long long)seq,
	    suffix);
	return (path);
}

/* The file name of a segment; the caller frees it. */
static char *
transcript_seg_path(struct transcript *t, struct transcript_seg *seg)
{
	return (transcript_file(t->path, seg->seq, ""));
}

/* Remember why the transcript cannot be written any more. */
static void
transcript_fail(struct transcript *t, const char *what, const char *path)
{
	if (t->error == NULL)
		xasprintf(&t->error, "%s %s: %s", what, path, strerror(errno));
}

/*
 * The directory and the first segment's file, made when the first bytes
 * come: a command that prints nothing costs no file.
 */
static int
transcript_make(struct transcript *t)
{
	char	*path;
	int	 fd;

	if (mkdir(t->path, 0700) != 0) {
		if (errno != EEXIST) {
			transcript_fail(t, "mkdir", t->path);
			return (-1);
		}
		if (transcript_clear(t->path, &t->error) != 0)
			return (-1);
	}
	path = transcript_seg_path(t, t->cur);
	fd = open(path, O_RDWR|O_CREAT|O_TRUNC|O_CLOEXEC, 0600);
	if (fd == -1) {
		transcript_fail(t, "open", path);
		free(path);
		return (-1);
	}
	free(path);
	t->fd = fd;
	t->made = 1;
	return (0);
}

/*
 * Beside a segment that is not the first, where it begins in the stream
 * (its first line, its offset), so that a transcript read back after its
 * writer is gone numbers its lines as they were when older segments were
 * dropped (transcript_load). A failure costs only that.
 */
static void
transcript_first_write(struct transcript *t, struct transcript_seg *seg)
{
	char	*path, text[48];
	int	 fd, n;

	path = transcript_file(t->path, seg->seq, ".first");
	n = snprintf(text, sizeof text, "%llu %llu\n",
	    (unsigned long long)seg->first_line,
	    (unsigned long long)seg->offset);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) != -1) {
		if (write(fd, text, (size_t)n) != n)
			log_debug("%s: %s", path, strerror(errno));
		close(fd);
	}
	free(path);
}

/* Start a new segment at the end of the stream and make it the newest. */
static int
transcript_roll(struct transcript *t)
{
	struct transcript_seg	*seg;
	char			*path;
	int			 fd = -1;

	seg = xcalloc(1, sizeof *seg);
	seg->seq = t->nextseq;
	seg->first_line = t->ended;
	seg->offset = t->split.pos;
	if (!t->made) {
		/* The first segment: its file comes with the first bytes. */
		t->nextseq++;
		TAILQ_INSERT_TAIL(&t->segs, seg, entry);
		t->cur = seg;
		return (0);
	}
	path = transcript_seg_path(t, seg);
	fd = open(path, O_RDWR|O_CREAT|O_TRUNC|O_CLOEXEC, 0600);
	if (fd == -1) {
		transcript_fail(t, "open", path);
		free(path);
		free(seg);
		return (-1);
	}
	free(path);
	transcript_first_write(t, seg);
	if (t->fd != -1)
		close(t->fd);
	t->fd = fd;
	t->nextseq++;
	TAILQ_INSERT_TAIL(&t->segs, seg, entry);
	t->cur = seg;
	return (0);
}

/* Write bytes already counted to the newest segment. */
static int
transcript_write(struct transcript *t, const unsigned char *buf, size_t len)
{
	ssize_t	 n;
	char	*path;
	int	 saved;

	while (len > 0) {
		n = write(t->fd, buf, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			saved = errno;
			path = transcript_seg_path(t, t->cur);
			errno = saved;
			transcript_fail(t, "write", path);
			free(path);
			return (-1);
		}
		buf += n;
		len -= n;
	}
	return (0);
}

/* The line and offset of a segment's last mark, or of its start. */
static void
transcript_last_mark(struct transcript_seg *seg, uint64_t *line,
    uint64_t *off)
{
	struct transcript_mark	*m;

	*line = seg->first_line;
	*off = seg->offset;
	if (seg->nmarks != 0) {
		m = &seg->marks[seg->nmarks - 1];
		*line += m->line;
		*off += m->offset;
	}
}

/* A line begins at off in the newest segment: count it, maybe mark it. */
static void
transcript_begin(struct transcript *t, uint64_t off)
{
	struct transcript_seg	*seg = t->cur;
	struct transcript_mark	*m;
	uint64_t		 line = t->ended, mline, moff;

	seg->lines++;
	if (line == seg->first_line)
		return;
	transcript_last_mark(seg, &mline, &moff);
	if (line - mline < TRANSCRIPT_MARK_LINES &&
	    off - moff < TRANSCRIPT_MARK_BYTES)
		return;
	if (seg->nmarks == seg->marksalloc) {
		seg->marksalloc = seg->marksalloc == 0 ? 16 :
		    seg->marksalloc * 2;
		seg->marks = xreallocarray(seg->marks, seg->marksalloc,
		    sizeof *seg->marks);
	}
	m = &seg->marks[seg->nmarks++];
	m->line = line - seg->first_line;
	m->offset = off - seg->offset;
}

/*
 * Count up to max newlines in len bytes, setting *end one past the last one
 * counted. Blocks of 64 bytes are counted without branches, which the
 * compiler can vectorize; this is what makes a flood of short lines cheap.
 */
static uint64_t
transcript_newlines(const unsigned char *p, size_t len, uint64_t max,
    size_t *end)
{
	size_t		 i = 0, j, last = SIZE_MAX;
	uint64_t	 c = 0;
	unsigned int	 k;

	*end = 0;
	while (len - i >= 64) {
		for (k = 0, j = 0; j < 64; j++)
			k += (p[i + j] == '\n');
		if (c + k >= max)
			break;
		if (k != 0) {
			c += k;
			last = i;
		}
		i += 64;
	}
	if (last != SIZE_MAX) {
		for (j = last + 64; p[j - 1] != '\n'; j--)
			/* nothing */;
		*end = j;
	}
	for (; i < len && c < max; i++) {
		if (p[i] == '\n') {
			c++;
			*end = i + 1;
		}
	}
	return (c);
}

/*
 * At the start of a line already begun, take at once the whole lines that
 * come before the next event (a mark, a new segment, a line too long), as
 * transcript_split and transcript_begin would one by one. Returns the
 * bytes taken, 0 when there is no such line.
 */
static size_t
transcript_bulk(struct transcript *t, const unsigned char *p, size_t len)
{
	struct transcript_seg	*seg = t->cur;
	uint64_t		 line = t->ended, off = t->split.pos;
	uint64_t		 mline, moff, limit, need, c;
	size_t			 end;

	if (seg->size >= t->segsize)
		return (0);
	transcript_last_mark(seg, &mline, &moff);

	/*
	 * The lines begun inside the bytes taken must start before limit
	 * (so no mark, no new segment, no line too long) and be fewer than
	 * those left before a mark is due by count. The line begun after
	 * the last newline taken is left to the caller.
	 */
	limit = len;
	if (limit > TRANSCRIPT_LINE_MAX)
		limit = TRANSCRIPT_LINE_MAX;
	if (limit > moff + TRANSCRIPT_MARK_BYTES - off)
		limit = moff + TRANSCRIPT_MARK_BYTES - off;
	if (limit > t->segsize - seg->size)
		limit = t->segsize - seg->size;
	if (limit < 2)
		return (0);
	need = TRANSCRIPT_MARK_LINES - (line - mline);
	c = transcript_newlines(p, limit - 1, need, &end);
	if (c == 0)
		return (0);
	t->ended += c;
	seg->lines += c - 1;
	seg->size += end;
	t->kept += end;
	t->split.pos = t->split.start = off + end;
	return (end);
}

/* Delete the oldest segments while the bytes kept pass the cap. */
static void
transcript_drop(struct transcript *t)
{
	struct transcript_seg	*seg;
	char			*path;

	while (t->kept > t->cap && (seg = TAILQ_FIRST(&t->segs)) != t->cur) {
		path = transcript_seg_path(t, seg);
		if (unlink(path) != 0 && errno != ENOENT)
			log_warn("%s: unlink %s", __func__, path);
		free(path);
		path = transcript_file(t->path, seg->seq, ".first");
		unlink(path);
		free(path);
		t->dropped += seg->lines;
		t->kept -= seg->size;
		TAILQ_REMOVE(&t->segs, seg, entry);
		free(seg->marks);
		free(seg);
	}
}

/* Delete the segment files an earlier transcript left in the directory. */
static int
transcript_clear(const char *path, char **cause)
{
	DIR		*d;
	struct dirent	*de;
	size_t		 n;

	if ((d = opendir(path)) == NULL) {
		transcript_cause(cause, "open %s: %s", path, strerror(errno));
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		n = strspn(de->d_name, "0123456789");
		if (n == 0 || (de->d_name[n] != '\0' &&
		    strcmp(de->d_name + n, ".first") != 0))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) != 0 && errno != ENOENT) {
			transcript_cause(cause, "unlink %s/%s: %s", path,
			    de->d_name, strerror(errno));
			closedir(d);
			return (-1);
		}
	}
	closedir(d);
	return (0);
}

/*
 * Make an empty transcript in directory path (created, or emptied if it
 * exists, when the first bytes come; its parent must exist then),
 * keeping about cap bytes (0 for the default).
 */
struct transcript *
transcript_open(const char *path, uint64_t cap, char **cause)
{
	struct transcript	*t;

	t = xcalloc(1, sizeof *t);
	t->path = xstrdup(path);
	t->fd = -1;
	t->cap = cap == 0 ? TRANSCRIPT_CAP_DEFAULT : cap;
	t->segsize = t->cap / 4;
	if (t->segsize > TRANSCRIPT_SEG_MAX)
		t->segsize = TRANSCRIPT_SEG_MAX;
	TAILQ_INIT(&t->segs);
	if (transcript_roll(t) != 0) {
		transcript_cause(cause, "%s", t->error);
		transcript_free(t);
		return (NULL);
	}
	return (t);
}

/* Remember the state before bytes are counted for the newest segment. */
static void
transcript_save(struct transcript *t, struct transcript_undo *u)
{
	u->split = t->split;
	u->ended = t->ended;
	u->kept = t->kept;
	u->size = t->cur->size;
	u->lines = t->cur->lines;
	u->nmarks = t->cur->nmarks;
}

/* Forget the bytes counted since the save and cut off what was written. */
static void
transcript_restore(struct transcript *t, struct transcript_undo *u)
{
	char	*path;

	t->split = u->split;
	t->ended = u->ended;
	t->kept = u->kept;
	t->cur->size = u->size;
	t->cur->lines = u->lines;
	t->cur->nmarks = u->nmarks;
	if (ftruncate(t->fd, u->size) != 0) {
		path = transcript_seg_path(t, t->cur);
		log_warn("%s: ftruncate %s", __func__, path);
		free(path);
	}
}

/*
 * Count bytes into the newest segment (their lines, its marks), as many
 * as one step takes from p; how many.
 */
static size_t
transcript_count(struct transcript *t, const unsigned char *p, size_t len)
{
	uint64_t	end;
	size_t		used;

	if (t->split.pos == t->split.start) {
		transcript_begin(t, t->split.pos);
		if ((used = transcript_bulk(t, p, len)) != 0)
			return (used);
	}
	used = transcript_split(&t->split, p, len, &end);
	t->cur->size += used;
	t->kept += used;
	if (end != TRANSCRIPT_NONE) {
		t->ended++;
		if (end != t->split.pos)
			transcript_begin(t, end);
	}
	return (used);
}

/*
 * Add bytes the command wrote: one write(2) per segment they go to (one,
 * but for the append that begins a segment), the counters and the index,
 * no rereading. When a write fails, the bytes
 * of that write are forgotten, so the transcript still holds a prefix of
 * the output that windows can read; it then refuses more bytes and every
 * append returns the same cause.
 */
int
transcript_append(struct transcript *t, const void *buf, size_t len,
    char **cause)
{
	const unsigned char	*p = buf, *w = buf;
	struct transcript_undo	 u;
	size_t			 used;

	if (t->error != NULL) {
		transcript_cause(cause, "%s", t->error);
		return (-1);
	}
	if (t->finished) {
		transcript_cause(cause, "transcript %s is finished", t->path);
		return (-1);
	}
	if (len == 0)
		return (0);
	if (!t->made && transcript_make(t) != 0) {
		transcript_cause(cause, "%s", t->error);
		return (-1);
	}
	transcript_save(t, &u);
	while (len > 0) {
		if (t->split.pos == t->split.start && t->cur->size != 0 &&
		    t->cur->size >= t->segsize) {
			if (transcript_write(t, w, p - w) != 0)
				goto undo;
			if (transcript_roll(t) != 0)
				goto fail;
			w = p;
			transcript_save(t, &u);
		}
		used = transcript_count(t, p, len);
		p += used;
		len -= used;
	}
	if (transcript_write(t, w, p - w) != 0)
		goto undo;
	transcript_drop(t);
	return (0);

undo:
	transcript_restore(t, &u);
fail:
	transcript_drop(t);
	transcript_cause(cause, "%s", t->error);
	return (-1);
}

static int
transcript_seq_cmp(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x < y ? -1 : x > y);
}

/*
 * The transcript a process that is gone left in directory path, read
 * back finished: its segments in order, counted again as they were when
 * appended (at most cap bytes of them, the newest). Lines its process
 * had dropped before the first segment left are not known: the lines are
 * numbered from there. NULL and *cause when there is none.
 */
struct transcript *
transcript_load(const char *path, uint64_t cap, char **cause)
{
	struct transcript	*t;
	struct transcript_seg	*seg;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;
	unsigned char		*buf, *p;
	uint64_t		*seqs = NULL, total = 0;
	size_t			 nseqs = 0, i, first = 0, used, len;
	unsigned long long	 fl, fo;
	char			*file, line[64];
	ssize_t			 n;
	int			 fd;

	if ((d = opendir(path)) == NULL) {
		transcript_cause(cause, "open %s: %s", path, strerror(errno));
		return (NULL);
	}
	while ((de = readdir(d)) != NULL) {
		n = (ssize_t)strspn(de->d_name, "0123456789");
		if (n == 0 || n > 19 || de->d_name[n] != '\0')
			continue;
		seqs = xreallocarray(seqs, nseqs + 1, sizeof *seqs);
		seqs[nseqs++] = strtoull(de->d_name, NULL, 10);
	}
	closedir(d);
	qsort(seqs, nseqs, sizeof *seqs, transcript_seq_cmp);
	t = xcalloc(1, sizeof *t);
	t->path = xstrdup(path);
	t->fd = -1;
	t->cap = cap == 0 ? TRANSCRIPT_CAP_DEFAULT : cap;
	t->segsize = t->cap;
	t->made = 1;
	TAILQ_INIT(&t->segs);
	/* The newest segments that fit the cap. */
	for (i = nseqs; i > 0; i--) {
		file = transcript_file(path, seqs[i - 1], "");
		if (stat(file, &st) != 0 || total + (uint64_t)st.st_size >
		    t->cap) {
			free(file);
			break;
		}
		total += (uint64_t)st.st_size;
		free(file);
	}
	first = i;
	/* Where the first kept segment begins, when one was dropped. */
	if (first < nseqs) {
		file = transcript_file(path, seqs[first], ".first");
		if ((fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			n = read(fd, line, sizeof line - 1);
			close(fd);
			line[n > 0 ? n : 0] = '\0';
			if (sscanf(line, "%llu %llu", &fl, &fo) == 2) {
				t->ended = t->dropped = fl;
				t->split.start = t->split.pos = fo;
			}
		}
		free(file);
	}
	buf = xmalloc(TRANSCRIPT_SCAN_SIZE);
	for (i = first; i < nseqs; i++) {
		seg = xcalloc(1, sizeof *seg);
		seg->seq = seqs[i];
		seg->first_line = t->ended;
		seg->offset = t->split.pos;
		TAILQ_INSERT_TAIL(&t->segs, seg, entry);
		t->cur = seg;
		t->nextseq = seqs[i] + 1;
		file = transcript_file(path, seqs[i], "");
		fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		free(file);
		if (fd == -1)
			continue;
		while ((n = read(fd, buf, TRANSCRIPT_SCAN_SIZE)) > 0) {
			for (p = buf, len = (size_t)n; len > 0; len -= used) {
				used = transcript_count(t, p, len);
				p += used;
			}
		}
		close(fd);
	}
	free(buf);
	free(seqs);
	if (TAILQ_EMPTY(&t->segs)) {
		/* Nothing was ever written: an empty transcript. */
		seg = xcalloc(1, sizeof *seg);
		TAILQ_INSERT_TAIL(&t->segs, seg, entry);
		t->cur = seg;
	}
	t->finished = 1;
	return (t);
}

/* The command has ended: no more bytes, and its last line is final. */
void
transcript_finish(struct transcript *t)
{
	if (t->fd != -1) {
		close(t->fd);
		t->fd = -1;
	}
	t->finished = 1;
}

uint64_t
transcript_total_lines(struct transcript *t)
{
	return (t->ended + (t->split.pos != t->split.start));
}

uint64_t
transcript_dropped_lines(struct transcript *t)
{
	return (t->dropped);
}

uint64_t
transcript_total_bytes(struct transcript *t)
{
	return (t->split.pos);
}

/* Read len bytes at stream offset off, across segments as needed. */
static int
transcript_read(struct transcript *t, uint64_t off, unsigned char *buf,
    size_t len, char **cause)
{
	struct transcript_seg	*seg;
	char			*path = NULL;
	uint64_t		 segend;
	size_t			 n, done;
	ssize_t			 r;
	int			 fd;

	TAILQ_FOREACH(seg, &t->segs, entry) {
		if (len == 0)
			break;
		segend = seg->offset + seg->size;
		if (off >= segend)
			continue;
		if (off < seg->offset)
			break;
		n = len;
		if (n > segend - off)
			n = segend - off;
		path = transcript_seg_path(t, seg);
		if (seg == t->cur && t->fd != -1)
			fd = t->fd;
		else if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1) {
			transcript_cause(cause, "open %s: %s", path,
			    strerror(errno));
			goto fail;
		}
		for (done = 0; done < n; done += r) {
			r = pread(fd, buf + done, n - done,
			    off - seg->offset + done);
			if (r == -1 && errno == EINTR) {
				r = 0;
				continue;
			}
			if (r == -1 || r == 0) {
				if (r == -1)
					transcript_cause(cause, "read %s: %s",
					    path, strerror(errno));
				else
					transcript_cause(cause, "%s is short",
					    path);
				if (fd != t->fd)
					close(fd);
				goto fail;
			}
		}
		if (fd != t->fd)
			close(fd);
		free(path);
		path = NULL;
		buf += n;
		off += n;
		len -= n;
	}
	if (len != 0) {
		transcript_cause(cause, "transcript %s has no byte %llu",
		    t->path, (unsigned long long)off);
		return (-1);
	}
	return (0);

fail:
	free(path);
	return (-1);
}

/* Find the stream offset where a kept line begins. */
static int
transcript_seek(struct transcript *t, uint64_t line, uint64_t *off,
    char **cause)
{
	struct transcript_seg	*seg;
	struct transcript_split	 s;
	unsigned char		*buf;
	uint64_t		 at, end;
	size_t			 lo, hi, mid, n, p;

	TAILQ_FOREACH(seg, &t->segs, entry) {
		if (line < seg->first_line + seg->lines)
			break;
	}
	if (seg == NULL || line < seg->first_line)
		fatalx("%s: line %llu is not kept", __func__,
		    (unsigned long long)line);

	/* The last mark at or before the line, else the segment's start. */
	lo = 0;
	hi = seg->nmarks;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (seg->first_line + seg->marks[mid].line <= line)
			lo = mid + 1;
		else
			hi = mid;
	}
	at = seg->first_line;
	memset(&s, 0, sizeof s);
	s.start = s.pos = seg->offset;
	if (lo != 0) {
		at += seg->marks[lo - 1].line;
		s.start = s.pos = seg->offset + seg->marks[lo - 1].offset;
	}
	if (at == line) {
		*off = s.start;
		return (0);
	}

	buf = xmalloc(TRANSCRIPT_SCAN_SIZE);
	for (;;) {
		n = TRANSCRIPT_SCAN_SIZE;
		if (n > t->split.pos - s.pos)
			n = t->split.pos - s.pos;
		if (n == 0)
			fatalx("%s: line %llu not found", __func__,
			    (unsigned long long)line);
		if (transcript_read(t, s.pos, buf, n, cause) != 0) {
			free(buf);
			return (-1);
		}
		for (p = 0; p < n; ) {
			p += transcript_split(&s, buf + p, n - p, &end);
			if (end != TRANSCRIPT_NONE && ++at == line) {
				free(buf);
				*off = end;
				return (0);
			}
		}
	}
}

/*
 * Fill w with the lines from start (moved up to the first kept line if it
 * was dropped), at most max_lines lines and max_bytes bytes of text (0 for
 * the defaults), but at least part of one line if there is one. With
 * running set, a last line without \n is shown but not counted in w->end
 * (unless transcript_finish was called). The call allocates about
 * max_bytes + max_lines bytes while it runs.
 */
int
transcript_window(struct transcript *t, uint64_t start, size_t max_lines,
    size_t max_bytes, int running, struct transcript_window *w, char **cause)
{
	struct transcript_split	 s;
	unsigned char		*raw;
	char			*text;
	uint64_t		 total, off, end, line;
	size_t			 rawlen, textsz, tlen = 0, p, q, lend, clen;
	size_t			 room, n, used;
	int			 partial, last, nl, cut;

	memset(w, 0, sizeof *w);
	if (max_lines == 0)
		max_lines = TRANSCRIPT_WINDOW_LINES;
	if (max_bytes == 0)
		max_bytes = TRANSCRIPT_WINDOW_BYTES;
	total = transcript_total_lines(t);
	partial = (t->split.pos != t->split.start);
	if (start < t->dropped)
		start = t->dropped;
	w->start = w->end = w->shown = start;
	if (start >= total) {
		w->text = xstrdup("");
		return (0);
	}
	if (transcript_seek(t, start, &off, cause) != 0)
		return (-1);
	w->original_token_count = (t->split.pos - off + 3) / 4;

	/*
	 * A line's text is at least its bytes less a \r (and less an
	 * unfinished character held back), so lines that fit max_bytes lie
	 * within max_bytes + max_lines + 3 bytes of the start.
	 */
	rawlen = max_bytes + max_lines + 3;
	if (rawlen < max_bytes || rawlen > t->split.pos - off)
		rawlen = t->split.pos - off;
	raw = xmalloc(rawlen);
	if (transcript_read(t, off, raw, rawlen, cause) != 0) {
		free(raw);
		return (-1);
	}
	textsz = max_bytes;
	if (textsz / 4 > rawlen)
		textsz = rawlen * 4;
	text = xmalloc(textsz + 1);

	for (line = start, p = 0; line < total && line - start < max_lines;
	    line++) {
		/* Where this line ends: within raw, at the end, or beyond. */
		memset(&s, 0, sizeof s);
		s.start = s.pos = off + p;
		end = TRANSCRIPT_NONE;
		for (q = p; q < rawlen && end == TRANSCRIPT_NONE; )
			q += transcript_split(&s, raw + q, rawlen - q, &end);
		last = (partial && line == total - 1);
		cut = 0;
		nl = 0;
		if (end != TRANSCRIPT_NONE) {
			lend = end - off;
			clen = lend - p;
			if (raw[lend - 1] == '\n') {
				clen--;
				if (clen > 0 && raw[p + clen - 1] == '\r')
					clen--;
			}
		} else if (off + rawlen == t->split.pos && last)
			lend = clen = rawlen - p;
		else {
			/* Longer than what the bounds allow. */
			if (line != start)
				break;
			lend = rawlen;
			clen = rawlen - p;
			cut = 1;
		}
		if (!last)
			nl = 1;
		else if (running && !t->finished && !cut)
			clen -= transcript_utf8_unfinished(raw + p, clen);

		room = max_bytes - tlen;
		if (room > textsz - tlen)
			room = textsz - tlen;
		if (room < (size_t)nl)
			break;
		n = transcript_utf8_copy(text + tlen, room - nl, raw + p, clen,
		    cut, &used);
		if (used < clen || cut) {
			if (line != start)
				break;
			w->truncated = 1;
		}
		tlen += n;
		if (nl)
			text[tlen++] = '\n';
		p = lend;
		if (w->truncated) {
			line++;
			break;
		}
	}
	text[tlen] = '\0';
	free(raw);

	w->end = w->shown = line;
	if (running && !t->finished && partial && line == total)
		w->end--;
	w->text = text;
	w->len = tlen;
	return (0);
}

/* Close the transcript and free it; its files stay on disk. */
void
transcript_free(struct transcript *t)
{
	struct transcript_seg	*seg;

	if (t == NULL)
		return;
	if (t->fd != -1) {
		close(t->fd);
		t->fd = -1;
	}
	while ((seg = TAILQ_FIRST(&t->segs)) != NULL) {
		TAILQ_REMOVE(&t->segs, seg, entry);
		free(seg->marks);
		free(seg);
	}
	free(t->error);
	free(t->path);
	free(t);
}

/* Delete the transcript's files and directory, then free it. */
int
transcript_remove(struct transcript *t)
{
	struct transcript_seg	*seg;
	char			*path;
	int			 rv = 0;

	if (t == NULL)
		return (0);
	if (t->fd != -1) {
		close(t->fd);
		t->fd = -1;
	}
	TAILQ_FOREACH(seg, &t->segs, entry) {
		path = transcript_seg_path(t, seg);
		if (unlink(path) != 0 && errno != ENOENT) {
			log_warn("%s: unlink %s", __func__, path);
			rv = -1;
		}
		free(path);
		path = transcript_file(t->path, seg->seq, ".first");
		unlink(path);
		free(path);
	}
	if (rmdir(t->path) != 0 && errno != ENOENT) {
		log_warn("%s: rmdir %s", __func__, t->path);
		rv = -1;
	}
	transcript_free(t);
	return (rv);
}
