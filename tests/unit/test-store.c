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
 * The store (store.c) on a real SQLite file in a temporary directory:
 * its schema made and versioned, a newer one refused, the key file's
 * rules, secrets encrypted (never in the file in clear, bound to their
 * tenant and name, unreadable under another key), usage and credits.
 */

#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sqlite3.h>

#include "sandbox-mcp.h"
#include "unit.h"

static char	sdir[64];

static void
store_tmp(void)
{
	snprintf(sdir, sizeof sdir, "/tmp/store.XXXXXX");
	if (mkdtemp(sdir) == NULL) {
		perror("mkdtemp");
		exit(1);
	}
}

static void
store_tmp_done(void)
{
	char	cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", sdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", sdir);
}

/* Run sql on the database file directly, as another program would. */
static int
raw_sql(const char *sql)
{
	sqlite3	*db;
	char	 path[96];
	int	 rc;

	snprintf(path, sizeof path, "%s/store.db", sdir);
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return (-1);
	rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return (rc == SQLITE_OK ? 0 : -1);
}

static int
test_open(void)
{
	struct store	*st;
	struct stat	 sb;
	char		 path[96], *cause = NULL;

	store_tmp();
	st = store_open(sdir, &cause);
	CHECK(st != NULL);
	CHECK_INT(store_version(st), 3);
	store_close(st);
	snprintf(path, sizeof path, "%s/store.key", sdir);
	CHECK_INT(stat(path, &sb), 0);
	CHECK_INT(sb.st_mode & 0777, 0600);
	CHECK_INT(sb.st_size, 32);
	snprintf(path, sizeof path, "%s/store.db", sdir);
	CHECK_INT(stat(path, &sb), 0);
	CHECK_INT(sb.st_mode & 077, 0);
	/* Again: the same schema, nothing migrated twice. */
	st = store_open(sdir, &cause);
	CHECK(st != NULL);
	store_close(st);
	/* A newer schema than ours is refused, by name. */
	CHECK_INT(raw_sql("INSERT INTO schema_version VALUES (99)"), 0);
	st = store_open(sdir, &cause);
	CHECK(st == NULL);
	CHECK(cause != NULL && strstr(cause, "schema version 99") != NULL);
	free(cause);
	store_tmp_done();
	return (0);
}

static int
test_key_file(void)
{
	struct store	*st;
	char		 path[96], *cause = NULL;
	int		 fd;

	store_tmp();
	snprintf(path, sizeof path, "%s/store.key", sdir);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	CHECK(fd != -1);
	CHECK_INT(write(fd, "0123456789abcdef0123456789abcdef", 32), 32);
	close(fd);
	chmod(path, 0644);
	st = store_open(sdir, &cause);
	CHECK(st == NULL);
	CHECK(cause != NULL && strstr(cause, "mode 0600") != NULL);
	free(cause);
	cause = NULL;
	chmod(path, 0600);
	CHECK_INT(truncate(path, 16), 0);
	st = store_open(sdir, &cause);
	CHECK(st == NULL);
	free(cause);
	store_tmp_done();
	return (0);
}

static int
test_secrets(void)
{
	struct store	*st;
	cJSON		*names;
	char		*v, *cause = NULL, path[96], *db;
	size_t		 len, i, dblen;
	static const char value[] = "hunter2-the-password";
	FILE		*f;
	unsigned char	 other[32];
	int		 fd;

	store_tmp();
	st = store_open(sdir, &cause);
	CHECK(st != NULL);
	CHECK_INT(store_secret_put(st, "ta", "DB_PASSWORD", value,
	    sizeof value - 1, &cause), 0);
	CHECK_INT(store_secret_put(st, "ta", "API_TOKEN", "t", 1, &cause), 0);
	CHECK_INT(store_secret_put(st, "tb", "DB_PASSWORD", "other", 5,
	    &cause), 0);
	v = store_secret_get(st, "ta", "DB_PASSWORD", &len, &cause);
	CHECK(v != NULL);
	CHECK_INT(len, sizeof value - 1);
	CHECK_STR(v, value);
	free(v);
	/* Names, in order, and no value. */
	names = store_secret_names(st, "ta", &cause);
	CHECK(names != NULL);
	CHECK_INT(cJSON_GetArraySize(names), 2);
	CHECK_STR(cJSON_GetArrayItem(names, 0)->valuestring, "API_TOKEN");
	CHECK_STR(cJSON_GetArrayItem(names, 1)->valuestring, "DB_PASSWORD");
	cJSON_Delete(names);
	/* None of that tenant: NULL, and no cause. */
	v = store_secret_get(st, "tc", "DB_PASSWORD", &len, &cause);
	CHECK(v == NULL && cause == NULL);
	/* Too long: refused by name. */
	v = xcalloc(1, 70000);
	CHECK_INT(store_secret_put(st, "ta", "BIG", v, 70000, &cause), -1);
	CHECK(strstr(cause, "BIG") != NULL);
	free(v);
	free(cause);
	cause = NULL;
	store_close(st);

	/* Never in clear in the database file (WAL included). */
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof path, "%s/store.db%s", sdir,
		    i == 0 ? "" : "-wal");
		if ((f = fopen(path, "rb")) == NULL)
			continue;
		db = xmalloc(4 << 20);
		dblen = fread(db, 1, 4 << 20, f);
		fclose(f);
		CHECK(memmem(db, dblen, "hunter2", 7) == NULL);
		free(db);
	}

	/* A value moved to another tenant's row does not decrypt. */
	CHECK_INT(raw_sql("UPDATE secrets SET tenant = 'tc' WHERE tenant ="
	    " 'ta' AND name = 'DB_PASSWORD'"), 0);
	st = store_open(sdir, &cause);
	CHECK(st != NULL);
	v = store_secret_get(st, "tc", "DB_PASSWORD", &len, &cause);
	CHECK(v == NULL && cause != NULL);
	CHECK(strstr(cause, "does not decrypt") != NULL);
	free(cause);
	cause = NULL;
	CHECK_INT(store_secret_remove(st, "tb", "DB_PASSWORD", &cause), 1);
	CHECK_INT(store_secret_remove(st, "tb", "DB_PASSWORD", &cause), 0);
	store_close(st);

	/* Under another key, nothing decrypts. */
	snprintf(path, sizeof path, "%s/store.key", sdir);
	memset(other, 7, sizeof other);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd != -1);
	CHECK_INT(write(fd, other, sizeof other), (int)sizeof other);
	close(fd);
	st = store_open(sdir, &cause);
	CHECK(st != NULL);
	v = store_secret_get(st, "ta", "API_TOKEN", &len, &cause);
	CHECK(v == NULL && cause != NULL);
	free(cause);
	store_close(st);
	store_tmp_done();
	return (0);
}

static int
test_usage(void)
{
	struct store		*st;
	struct store_usage	 u;
	cJSON			*list;
	char			*cause = NULL;
	double			 balance;
	int			 i;

	store_tmp();
	st = store_open(sdir, &cause);
	CHECK(st != NULL);
	CHECK_INT(store_credits(st, "ta", &balance, &cause), 0);
	CHECK(balance == 0);
	CHECK_INT(store_credits_add(st, "ta", 100, &balance, &cause), 0);
	CHECK(balance == 100);
	memset(&u, 0, sizeof u);
	u.tenant = "ta";
	u.kind = "box_minute";
	u.unit = "minute";
	u.quantity = 1;
	u.credits = 2.5;
	for (i = 0; i < 10; i++) {
		u.box = i % 2 ? "box-1" : "box-2";
		u.at_ms = 1000 + (uint64_t)i;
		CHECK_INT(store_usage_add(st, &u, &balance, &cause), 0);
	}
	CHECK(balance == 75);
	u.tenant = "tb";
	CHECK_INT(store_usage_add(st, &u, &balance, &cause), 0);
	CHECK(balance == -2.5);
	list = store_usage_list(st, "ta", NULL, NULL, 1005, 3, &cause);
	CHECK(list != NULL);
	CHECK_INT(cJSON_GetArraySize(list), 3);
	CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(list, 0), "at")), 1009);
	CHECK_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(list, 2), "at")), 1007);
	cJSON_Delete(list);
	list = store_usage_list(st, "ta", NULL, NULL, 1005, 100, &cause);
	CHECK_INT(cJSON_GetArraySize(list), 5);
	cJSON_Delete(list);
	store_close(st);
	store_tmp_done();
	return (0);
}

/* Box records: written again in place, listed but for the done ones. */
static int
test_boxes(void)
{
	static const char	*done[] = { "terminated", NULL };
	struct store		*st;
	cJSON			*list;
	char			*cause = NULL;

	store_tmp();
	st = store_open(sdir, &cause);
	CHECK(st != NULL);
	CHECK_INT(store_box_put(st, "box-a", "ta", "starting",
	    "{\"id\":\"box-a\",\"state\":\"starting\"}", &cause), 0);
	CHECK_INT(store_box_put(st, "box-b", "tb", "ready",
	    "{\"id\":\"box-b\",\"state\":\"ready\"}", &cause), 0);
	CHECK_INT(store_box_put(st, "box-a", "ta", "terminated",
	    "{\"id\":\"box-a\",\"state\":\"terminated\"}", &cause), 0);
	list = store_box_list(st, NULL, &cause);
	CHECK_INT(cJSON_GetArraySize(list), 2);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(list, 0), "state")), "terminated");
	cJSON_Delete(list);
	list = store_box_list(st, done, &cause);
	CHECK_INT(cJSON_GetArraySize(list), 1);
	CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetArrayItem(list, 0), "id")), "box-b");
	cJSON_Delete(list);
	store_close(st);
	store_tmp_done();
	return (0);
}

const struct unit_case unit_store_cases[] = {
	{ "store/open", test_open },
	{ "store/key-file", test_key_file },
	{ "store/secrets", test_secrets },
	{ "store/usage", test_usage },
	{ "store/boxes", test_boxes },
	{ NULL, NULL }
};
