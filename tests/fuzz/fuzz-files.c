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
 * libFuzzer harness: the file tools' engine. The first byte picks:
 *
 *   0  a path: files_path's answer must be a clean relative path (no
 *      empty, "." or ".." component, no leading or doubled slash), then
 *      it is read through a session-style walk of a scratch tree whose
 *      symlinks point outside it: no read may ever return the outside
 *      file's content
 *   1  a read window over the bytes, offset and limit from the input
 *   2  an edit list (JSON after the first NUL) applied to a text
 */

#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine.h"
#include "sandbox-mcp.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	fuzz_root = -1;

/* The scratch tree: in/ holds files and symlinks to ../out. */
static void
fuzz_tree(void)
{
	char	top[] = "/tmp/fuzz-files.XXXXXX", path[256];
	FILE	*f;

	if (mkdtemp(top) == NULL)
		abort();
	snprintf(path, sizeof path, "%s/out", top);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/out/secret", top);
	if ((f = fopen(path, "w")) == NULL)
		abort();
	fputs("outside\n", f);
	fclose(f);
	snprintf(path, sizeof path, "%s/in", top);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/in/a", top);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/in/a/f", top);
	if ((f = fopen(path, "w")) == NULL)
		abort();
	fputs("inside\n", f);
	fclose(f);
	snprintf(path, sizeof path, "%s/in/up", top);
	symlink("..", path);
	snprintf(path, sizeof path, "%s/in/out", top);
	symlink("../out", path);
	snprintf(path, sizeof path, "%s/in/a/abs", top);
	symlink(top, path);
	snprintf(path, sizeof path, "%s/in/a/secret", top);
	symlink("../../out/secret", path);
	snprintf(path, sizeof path, "%s/in", top);
	if ((fuzz_root = open(path, O_PATH | O_DIRECTORY)) == -1)
		abort();
}

static void
fuzz_read_cb(cJSON *r, struct cause *err, void *arg)
{
	cJSON	*c;

	(void)err;
	(void)arg;
	if (r == NULL)
		return;
	c = cJSON_GetObjectItem(r, "content");
	if (!cJSON_IsString(c) || strstr(c->valuestring, "outside") != NULL)
		abort();
	cJSON_Delete(r);
}

static void
fuzz_path(const char *in)
{
	struct files_op	 op;
	char		*rel, *msg = NULL, *p;

	if ((rel = files_path(in, &msg)) == NULL) {
		if (msg == NULL || strncmp(msg, "invalid path: ", 14) != 0)
			abort();
		free(msg);
		return;
	}
	if (rel[0] == '/' || strstr(rel, "//") != NULL ||
	    (rel[0] != '\0' && rel[strlen(rel) - 1] == '/'))
		abort();
	for (p = rel; p != NULL; p = strchr(p, '/')) {
		if (*p == '/')
			p++;
		if (strcmp(p, ".") == 0 || strncmp(p, "./", 2) == 0 ||
		    strcmp(p, "..") == 0 || strncmp(p, "../", 3) == 0)
			abort();
	}
	memset(&op, 0, sizeof op);
	op.kind = FILES_READ;
	op.path = rel;
	op.rootfd = fuzz_root;
	op.fd = -1;
	op.offset = 1;
	op.limit = 2000;
	files_op(&op, fuzz_read_cb, NULL);
	free(rel);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cause	 err;
	struct files_edit_result res;
	char			*buf, *nul;
	cJSON			*r, *edits;

	if (size < 3)
		return (0);
	if (fuzz_root == -1)
		fuzz_tree();
	buf = malloc(size);
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	memset(&err, 0, sizeof err);
	switch (data[0] % 3) {
	case 0:
		fuzz_path(buf);
		break;
	case 1:
		r = files_window(buf + 2, size - 3, (unsigned char)buf[0] % 8,
		    1 + (unsigned char)buf[1] % 8, "f", &err);
		cJSON_Delete(r);
		cause_clear(&err);
		break;
	case 2:
		if ((nul = memchr(buf, '\0', size - 1)) == NULL ||
		    nul == buf + size - 1)
			break;
		edits = cJSON_Parse(nul + 1);
		if (files_edit_apply(buf, nul - buf, edits, "f", &res,
		    &err) == 0)
			free(res.out);
		cause_clear(&err);
		cJSON_Delete(edits);
		break;
	}
	free(buf);
	return (0);
}
