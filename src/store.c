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
 * The store (boxes.md, "The store"): one SQLite database in the state
 * directory, store.db, for what the boxes and logs products keep: API
 * keys made over REST (their hashes), secrets, usage events, credits
 * and the records of boxes so far. WAL mode, so that readers in other processes never wait for a
 * writer; a schema version table and migrations applied in order, each
 * in its own transaction, so that an older database is brought up at
 * open and a newer one is refused (a downgrade would misread it).
 *
 * Only short statements run here, on the loop: single rows by key, or an
 * index range (bench/store-bench measures them at 100,000 usage rows). A
 * writer that finds the database locked by another process waits at most
 * STORE_BUSY_MS, then the statement fails with a cause. The loop's
 * connection never checkpoints the WAL (a checkpoint syncs the database
 * file, tens of milliseconds): store_checkpoint does, in a child process
 * of its own, with a connection of its own.
 *
 * Secrets are encrypted at rest with AES-256-GCM (OpenSSL): a random
 * 96-bit nonce per value, the tenant and the name as associated data (a
 * value moved to another row does not decrypt), under a 256-bit key kept
 * in store.key (mode 0600, made once with O_EXCL). A value is never
 * returned by a listing, logged or traced; store_secret_get is for
 * injecting it into a box.
 */

#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sqlite3.h>

#include "sandbox-mcp.h"

#define STORE_BUSY_MS		50
#define STORE_KEY_LEN		32
#define STORE_NONCE_LEN		12
#define STORE_TAG_LEN		16
#define STORE_SECRET_MAX	(64 * 1024)

struct store {
	sqlite3		*db;
	unsigned char	 key[STORE_KEY_LEN];
	char		*path;
};

/* The migrations, in order: the schema version is how many have run. */
static const char *store_migrations[] = {
	/* 1: keys, secrets, usage, credits. */
	"CREATE TABLE api_keys ("
	"  name TEXT PRIMARY KEY,"
	"  tenant TEXT NOT NULL,"
	"  hash BLOB NOT NULL UNIQUE,"
	"  sets INTEGER NOT NULL,"
	"  created_ms INTEGER NOT NULL);"
	"CREATE TABLE secrets ("
	"  tenant TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  nonce BLOB NOT NULL,"
	"  value BLOB NOT NULL,"
	"  updated_ms INTEGER NOT NULL,"
	"  PRIMARY KEY (tenant, name));"
	"CREATE TABLE usage ("
	"  id INTEGER PRIMARY KEY,"
	"  tenant TEXT NOT NULL,"
	"  box TEXT NOT NULL,"
	"  kind TEXT NOT NULL,"
	"  quantity REAL NOT NULL,"
	"  unit TEXT NOT NULL,"
	"  credits REAL NOT NULL,"
	"  at_ms INTEGER NOT NULL);"
	"CREATE INDEX usage_tenant_at ON usage (tenant, at_ms);"
	"CREATE TABLE credits ("
	"  tenant TEXT PRIMARY KEY,"
	"  balance REAL NOT NULL);",
	/* 2: boxes (box.c keeps the record as JSON). */
	"CREATE TABLE boxes ("
	"  id TEXT PRIMARY KEY,"
	"  tenant TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  record TEXT NOT NULL,"
	"  updated_ms INTEGER NOT NULL);"
	"CREATE INDEX boxes_tenant ON boxes (tenant, id);",
	/* 3: what a usage event cost in dollars. */
	"ALTER TABLE usage ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;",
};
#define STORE_VERSION	\
	((int)(sizeof store_migrations / sizeof store_migrations[0]))

static void
store_cause(struct store *st, char **cause, const char *what)
{
	xasprintf(cause, "the store %s: %s: %s", st->path, what,
	    sqlite3_errmsg(st->db));
}

/* One statement with no result, or -1 and a cause. */
static int
store_exec(struct store *st, const char *sql, char **cause)
{
	char	*err = NULL;

	if (sqlite3_exec(st->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		xasprintf(cause, "the store %s: %s", st->path, err != NULL ?
		    err : sqlite3_errmsg(st->db));
		sqlite3_free(err);
		return (-1);
	}
	return (0);
}

/* The encryption key in dir/store.key: read, or made once. */
static int
store_key_load(struct store *st, const char *dir, char **cause)
{
	struct stat	 sb;
	unsigned char	 k[STORE_KEY_LEN];
	char		*path;
	ssize_t		 n;
	int		 fd;

	xasprintf(&path, "%s/store.key", dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && errno == ENOENT) {
		if (RAND_bytes(k, sizeof k) != 1) {
			xasprintf(cause, "%s: the random generator failed",
			    path);
			goto fail;
		}
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd != -1) {
			n = write(fd, k, sizeof k);
			if (n != (ssize_t)sizeof k || fsync(fd) != 0) {
				xasprintf(cause, "%s: %s", path,
				    strerror(errno));
				close(fd);
				unlink(path);
				goto fail;
			}
			close(fd);
			explicit_bzero(k, sizeof k);
		} else if (errno != EEXIST) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			goto fail;
		}
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    (sb.st_mode & 077) != 0 || sb.st_size != STORE_KEY_LEN) {
		xasprintf(cause, "%s must be a file of %d bytes that only its"
		    " owner reads (mode 0600)", path, STORE_KEY_LEN);
		close(fd);
		goto fail;
	}
	n = read(fd, st->key, sizeof st->key);
	close(fd);
	if (n != (ssize_t)sizeof st->key) {
		xasprintf(cause, "%s: cannot read it", path);
		goto fail;
	}
	free(path);
	return (0);
fail:
	free(path);
	return (-1);
}

/* Bring the schema up to STORE_VERSION; refuse a newer one. */
static int
store_migrate(struct store *st, char **cause)
{
	sqlite3_stmt	*s;
	char		 sql[64];
	int		 version = 0, i;

	if (store_exec(st, "CREATE TABLE IF NOT EXISTS schema_version"
	    " (version INTEGER NOT NULL)", cause) != 0)
		return (-1);
	if (sqlite3_prepare_v2(st->db, "SELECT max(version) FROM"
	    " schema_version", -1, &s, NULL) != SQLITE_OK) {
		store_cause(st, cause, "reading its version");
		return (-1);
	}
	if (sqlite3_step(s) == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	if (version > STORE_VERSION) {
		xasprintf(cause, "the store %s has schema version %d, newer"
		    " than this server's %d", st->path, version,
		    STORE_VERSION);
		return (-1);
	}
	for (i = version; i < STORE_VERSION; i++) {
		snprintf(sql, sizeof sql, "INSERT INTO schema_version VALUES"
		    " (%d)", i + 1);
		if (store_exec(st, "BEGIN IMMEDIATE", cause) != 0)
			return (-1);
		if (store_exec(st, store_migrations[i], cause) != 0 ||
		    store_exec(st, sql, cause) != 0) {
			sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
			return (-1);
		}
		if (store_exec(st, "COMMIT", cause) != 0)
			return (-1);
		log_info("the store %s: schema version %d", st->path, i + 1);
	}
	return (0);
}

/* Open (making it if need be) the store of state directory dir. */
struct store *
store_open(const char *dir, char **cause)
{
	struct store	*st;

	st = xcalloc(1, sizeof *st);
	xasprintf(&st->path, "%s/store.db", dir);
	if (store_key_load(st, dir, cause) != 0)
		goto fail;
	if (sqlite3_open_v2(st->path, &st->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
	    NULL) != SQLITE_OK) {
		if (st->db == NULL)
			xasprintf(cause, "the store %s: out of memory",
			    st->path);
		else
			store_cause(st, cause, "opening it");
		goto fail;
	}
	chmod(st->path, 0600);
	sqlite3_busy_timeout(st->db, STORE_BUSY_MS);
	if (store_exec(st, "PRAGMA journal_mode=WAL", cause) != 0 ||
	    store_exec(st, "PRAGMA synchronous=NORMAL", cause) != 0 ||
	    store_exec(st, "PRAGMA wal_autocheckpoint=0", cause) != 0 ||
	    store_exec(st, "PRAGMA foreign_keys=ON", cause) != 0 ||
	    store_migrate(st, cause) != 0)
		goto fail;
	return (st);
fail:
	store_close(st);
	return (NULL);
}

/*
 * In a child process: copy the WAL's pages into the database of state
 * directory dir (a passive checkpoint: no writer waits for it), so that
 * the WAL does not grow without end. 0, or -1 and a cause.
 */
int
store_checkpoint(const char *dir, char **cause)
{
	sqlite3	*db = NULL;
	char	*path;
	int	 rc;

	xasprintf(&path, "%s/store.db", dir);
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_wal_checkpoint_v2(db, NULL,
		    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	if (rc != SQLITE_OK)
		xasprintf(cause, "the store %s: checkpoint: %s", path,
		    db != NULL ? sqlite3_errmsg(db) : "out of memory");
	sqlite3_close_v2(db);
	free(path);
	return (rc == SQLITE_OK ? 0 : -1);
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	if (st->db != NULL)
		sqlite3_close_v2(st->db);
	explicit_bzero(st->key, sizeof st->key);
	free(st->path);
	free(st);
}

int
store_version(struct store *st)
{
	(void)st;
	return (STORE_VERSION);
}

/* Prepare sql, or -1 and a cause. */
static int
store_prepare(struct store *st, const char *sql, sqlite3_stmt **s,
    char **cause)
{
	if (sqlite3_prepare_v2(st->db, sql, -1, s, NULL) != SQLITE_OK) {
		store_cause(st, cause, "preparing a statement");
		return (-1);
	}
	return (0);
}

/* Step a statement that returns no row; finalize it. */
static int
store_done(struct store *st, sqlite3_stmt *s, char **cause)
{
	int	rc = sqlite3_step(s);

	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		store_cause(st, cause, "writing");
		return (-1);
	}
	return (0);
}

/* ---- secrets ---- */

/* The associated data of a secret: its tenant, a NUL, its name. */
static int
store_aad(EVP_CIPHER_CTX *ctx, const char *tenant, const char *name)
{
	int	n;

	return (EVP_CipherUpdate(ctx, NULL, &n, (const unsigned char *)tenant,
	    (int)strlen(tenant) + 1) == 1 && EVP_CipherUpdate(ctx, NULL, &n,
	    (const unsigned char *)name, (int)strlen(name)) == 1 ? 0 : -1);
}

/* Set a secret of tenant (value of len bytes, encrypted). */
int
store_secret_put(struct store *st, const char *tenant, const char *name,
    const void *value, size_t len, char **cause)
{
	EVP_CIPHER_CTX	*ctx;
	sqlite3_stmt	*s;
	unsigned char	 nonce[STORE_NONCE_LEN], *out;
	int		 n, m, ok;

	if (len > STORE_SECRET_MAX) {
		xasprintf(cause, "the value of secret %s is longer than %d"
		    " bytes", name, STORE_SECRET_MAX);
		return (-1);
	}
	if (RAND_bytes(nonce, sizeof nonce) != 1) {
		xasprintf(cause, "the random generator failed");
		return (-1);
	}
	out = xmalloc(len + STORE_TAG_LEN + 1);
	if ((ctx = EVP_CIPHER_CTX_new()) == NULL)
		fatalx("%s: EVP_CIPHER_CTX_new", __func__);
	ok = EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, st->key,
	    nonce) == 1 && store_aad(ctx, tenant, name) == 0 &&
	    EVP_EncryptUpdate(ctx, out, &n, value, (int)len) == 1 &&
	    EVP_EncryptFinal_ex(ctx, out + n, &m) == 1 &&
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, STORE_TAG_LEN,
	    out + n + m) == 1;
	EVP_CIPHER_CTX_free(ctx);
	if (!ok) {
		free(out);
		xasprintf(cause, "cannot encrypt secret %s", name);
		return (-1);
	}
	if (store_prepare(st, "INSERT OR REPLACE INTO secrets (tenant, name,"
	    " nonce, value, updated_ms) VALUES (?, ?, ?, ?, ?)", &s,
	    cause) != 0) {
		free(out);
		return (-1);
	}
	sqlite3_bind_text(s, 1, tenant, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_blob(s, 3, nonce, sizeof nonce, SQLITE_STATIC);
	sqlite3_bind_blob(s, 4, out, n + m + STORE_TAG_LEN, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)now_ms());
	ok = store_done(st, s, cause);
	explicit_bzero(out, len + STORE_TAG_LEN);
	free(out);
	return (ok);
}

/*
 * A secret's value (NUL-terminated, *len bytes; the caller clears and
 * frees it), for injecting it into a box: never for an answer or a log.
 * NULL with *cause NULL when there is none.
 */
char *
store_secret_get(struct store *st, const char *tenant, const char *name,
    size_t *len, char **cause)
{
	EVP_CIPHER_CTX	*ctx;
	sqlite3_stmt	*s;
	const void	*nonce, *ct;
	unsigned char	 tag[STORE_TAG_LEN];
	char		*out = NULL;
	int		 nlen, clen, n, m, ok = 0;

	*cause = NULL;
	if (store_prepare(st, "SELECT nonce, value FROM secrets WHERE"
	    " tenant = ? AND name = ?", &s, cause) != 0)
		return (NULL);
	sqlite3_bind_text(s, 1, tenant, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	if (sqlite3_step(s) != SQLITE_ROW) {
		sqlite3_finalize(s);
		return (NULL);
	}
	nonce = sqlite3_column_blob(s, 0);
	nlen = sqlite3_column_bytes(s, 0);
	ct = sqlite3_column_blob(s, 1);
	clen = sqlite3_column_bytes(s, 1);
	if (nlen == STORE_NONCE_LEN && clen >= STORE_TAG_LEN) {
		clen -= STORE_TAG_LEN;
		memcpy(tag, (const unsigned char *)ct + clen, sizeof tag);
		out = xmalloc((size_t)clen + 1);
		if ((ctx = EVP_CIPHER_CTX_new()) == NULL)
			fatalx("%s: EVP_CIPHER_CTX_new", __func__);
		ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, st->key,
		    nonce) == 1 && store_aad(ctx, tenant, name) == 0 &&
		    EVP_DecryptUpdate(ctx, (unsigned char *)out, &n, ct,
		    clen) == 1 && EVP_CIPHER_CTX_ctrl(ctx,
		    EVP_CTRL_GCM_SET_TAG, STORE_TAG_LEN, tag) == 1 &&
		    EVP_DecryptFinal_ex(ctx, (unsigned char *)out + n,
		    &m) == 1;
		EVP_CIPHER_CTX_free(ctx);
	}
	sqlite3_finalize(s);
	if (!ok) {
		if (out != NULL) {
			explicit_bzero(out, (size_t)clen);
			free(out);
		}
		xasprintf(cause, "secret %s of %s does not decrypt (damaged,"
		    " or under another key)", name, tenant);
		return (NULL);
	}
	out[n + m] = '\0';
	*len = (size_t)(n + m);
	return (out);
}

/* The names of a tenant's secrets, in order: never their values. */
cJSON *
store_secret_names(struct store *st, const char *tenant, char **cause)
{
	sqlite3_stmt	*s;
	cJSON		*names;

	if (store_prepare(st, "SELECT name FROM secrets WHERE tenant = ?"
	    " ORDER BY name", &s, cause) != 0)
		return (NULL);
	sqlite3_bind_text(s, 1, tenant, -1, SQLITE_STATIC);
	names = cJSON_CreateArray();
	while (sqlite3_step(s) == SQLITE_ROW)
		cJSON_AddItemToArray(names, cJSON_CreateString(
		    (const char *)sqlite3_column_text(s, 0)));
	sqlite3_finalize(s);
	return (names);
}

/* Remove a secret: 1 when there was one, 0 when not, -1 and a cause. */
int
store_secret_remove(struct store *st, const char *tenant, const char *name,
    char **cause)
{
	sqlite3_stmt	*s;

	if (store_prepare(st, "DELETE FROM secrets WHERE tenant = ? AND"
	    " name = ?", &s, cause) != 0)
		return (-1);
	sqlite3_bind_text(s, 1, tenant, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
	if (store_done(st, s, cause) != 0)
		return (-1);
	return (sqlite3_changes(st->db) > 0);
}

/* ---- usage and credits ---- */

/*
 * A usage event, and its credits taken from the tenant's balance, in
 * one transaction. The balance after, in *balance.
 */
int
store_usage_add(struct store *st, const struct store_usage *u,
    double *balance, char **cause)
{
	sqlite3_stmt	*s;

	if (store_exec(st, "BEGIN IMMEDIATE", cause) != 0)
		return (-1);
	if (store_prepare(st, "INSERT INTO usage (tenant, box, kind,"
	    " quantity, unit, credits, at_ms, cost_usd) VALUES (?, ?, ?, ?,"
	    " ?, ?, ?, ?)", &s, cause) != 0)
		goto fail;
	sqlite3_bind_text(s, 1, u->tenant, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, u->box, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, u->kind, -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 4, u->quantity);
	sqlite3_bind_text(s, 5, u->unit, -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 6, u->credits);
	sqlite3_bind_int64(s, 7, (sqlite3_int64)u->at_ms);
	sqlite3_bind_double(s, 8, u->cost_usd);
	if (store_done(st, s, cause) != 0)
		goto fail;
	if (store_credits_add_locked(st, u->tenant, -u->credits, balance,
	    cause) != 0)
		goto fail;
	return (store_exec(st, "COMMIT", cause));
fail:
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return (-1);
}

/* Grant (or take) credits: delta added to a tenant's balance. */
int
store_credits_add(struct store *st, const char *tenant, double delta,
    double *balance, char **cause)
{
	if (store_exec(st, "BEGIN IMMEDIATE", cause) != 0)
		return (-1);
	if (store_credits_add_locked(st, tenant, delta, balance, cause) != 0) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		return (-1);
	}
	return (store_exec(st, "COMMIT", cause));
}

/* Add delta to a tenant's balance (inside a transaction). */
int
store_credits_add_locked(struct store *st, const char *tenant, double delta,
    double *balance, char **cause)
{
	sqlite3_stmt	*s;

	if (store_prepare(st, "INSERT INTO credits (tenant, balance) VALUES"
	    " (?, ?) ON CONFLICT (tenant) DO UPDATE SET balance = balance +"
	    " excluded.balance", &s, cause) != 0)
		return (-1);
	sqlite3_bind_text(s, 1, tenant, -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 2, delta);
	if (store_done(st, s, cause) != 0)
		return (-1);
	return (balance == NULL ? 0 : store_credits(st, tenant, balance,
	    cause));
}

/* A tenant's balance (0 when it has none yet). */
int
store_credits(struct store *st, const char *tenant, double *balance,
    char **cause)
{
	sqlite3_stmt	*s;

	if (store_prepare(st, "SELECT balance FROM credits WHERE tenant = ?",
	    &s, cause) != 0)
		return (-1);
	sqlite3_bind_text(s, 1, tenant, -1, SQLITE_STATIC);
	*balance = sqlite3_step(s) == SQLITE_ROW ?
	    sqlite3_column_double(s, 0) : 0;
	sqlite3_finalize(s);
	return (0);
}

/*
 * A tenant's usage events at since_ms or later (of box and of kind, when
 * not NULL), newest first, at most limit of them (an index range: short
 * however many rows there are).
 */
cJSON *
store_usage_list(struct store *st, const char *tenant, const char *box,
    const char *kind, uint64_t since_ms, int limit, char **cause)
{
	sqlite3_stmt	*s;
	cJSON		*list, *e;

	if (store_prepare(st, "SELECT box, kind, quantity, unit, credits,"
	    " at_ms, cost_usd FROM usage WHERE tenant = ?1 AND at_ms >= ?2"
	    " AND (?4 IS NULL OR box = ?4) AND (?5 IS NULL OR kind = ?5)"
	    " ORDER BY at_ms DESC LIMIT ?3", &s, cause) != 0)
		return (NULL);
	sqlite3_bind_text(s, 1, tenant, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (sqlite3_int64)since_ms);
	sqlite3_bind_int(s, 3, limit);
	if (box != NULL)
		sqlite3_bind_text(s, 4, box, -1, SQLITE_STATIC);
	if (kind != NULL)
		sqlite3_bind_text(s, 5, kind, -1, SQLITE_STATIC);
	list = cJSON_CreateArray();
	while (sqlite3_step(s) == SQLITE_ROW) {
		e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "tenant", tenant);
		cJSON_AddStringToObject(e, "box",
		    (const char *)sqlite3_column_text(s, 0));
		cJSON_AddStringToObject(e, "kind",
		    (const char *)sqlite3_column_text(s, 1));
		cJSON_AddNumberToObject(e, "quantity",
		    sqlite3_column_double(s, 2));
		cJSON_AddStringToObject(e, "unit",
		    (const char *)sqlite3_column_text(s, 3));
		cJSON_AddNumberToObject(e, "credits",
		    sqlite3_column_double(s, 4));
		cJSON_AddNumberToObject(e, "at",
		    (double)sqlite3_column_int64(s, 5));
		cJSON_AddNumberToObject(e, "cost_usd",
		    sqlite3_column_double(s, 6));
		cJSON_AddItemToArray(list, e);
	}
	sqlite3_finalize(s);
	return (list);
}

/* ---- boxes ---- */

/* Write a box's record (a JSON object), as it is now. */
int
store_box_put(struct store *st, const char *id, const char *tenant,
    const char *state, const char *record, char **cause)
{
	sqlite3_stmt	*s;

	if (store_prepare(st, "INSERT INTO boxes (id, tenant, state, record,"
	    " updated_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE"
	    " SET state = excluded.state, record = excluded.record,"
	    " updated_ms = excluded.updated_ms", &s, cause) != 0)
		return (-1);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, tenant, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, state, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, record, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)now_ms());
	return (store_done(st, s, cause));
}

/*
 * The records of the boxes not in one of the states of done (a
 * NULL-terminated list), as an array of objects; NULL and a cause.
 */
cJSON *
store_box_list(struct store *st, const char **done, char **cause)
{
	sqlite3_stmt	*s;
	cJSON		*list, *rec;
	const char	*state;
	size_t		 i;
	int		 skip;

	if (store_prepare(st, "SELECT state, record FROM boxes ORDER BY id",
	    &s, cause) != 0)
		return (NULL);
	list = cJSON_CreateArray();
	while (sqlite3_step(s) == SQLITE_ROW) {
		state = (const char *)sqlite3_column_text(s, 0);
		for (i = 0, skip = 0; done != NULL && done[i] != NULL; i++)
			skip |= state != NULL && strcmp(state, done[i]) == 0;
		if (skip || (rec = cJSON_Parse((const char *)
		    sqlite3_column_text(s, 1))) == NULL)
			continue;
		cJSON_AddItemToArray(list, rec);
	}
	sqlite3_finalize(s);
	return (list);
}
