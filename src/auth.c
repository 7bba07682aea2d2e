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
 * API keys. The configuration stores only the SHA-256 of each key; a
 * presented key is hashed and compared with every stored hash in
 * constant time, so neither the match nor its position shows in the
 * timing. Keys themselves are never logged.
 *
 * Every key belongs to a tenant: its own name, or the name its api-key
 * line groups it under; the door (op.c) lets a caller see only its own
 * tenant's sandboxes. Peers on stdio (and HTTP peers when no key is
 * configured) are the local operator, "local", who sees every sandbox.
 */

#include "config.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "sandbox-mcp.h"
#include "surface.h"

/* The configured key whose hash matches the presented key, or NULL. */
const struct cfg_apikey *
auth_lookup(const char *key)
{
	const struct cfg_apikey	*k, *found = NULL;
	unsigned char		 hash[32];

	util_sha256(key, strlen(key), hash);
	TAILQ_FOREACH(k, &cfg->apikeys, entry) {
		if (CRYPTO_memcmp(hash, k->hash, sizeof hash) == 0 &&
		    found == NULL)
			found = k;
	}
	explicit_bzero(hash, sizeof hash);
	return (found);
}

/*
 * auth_lookup, remembering the verdict for one peer (an HTTP connection):
 * a keep-alive client presents the same key on every request, and
 * hashing it again each time is most of what checking it costs. A key is
 * taken from the memo only when its bytes equal the remembered ones and
 * the key table is the generation it was found in (cfg.c): a key removed or
 * changed since fails on its next request. Only keys that were found are
 * remembered.
 */
const struct cfg_apikey *
auth_lookup_memo(struct auth_memo *m, const char *key)
{
	const struct cfg_apikey	*k;
	size_t			 len = strlen(key);

	if (m->key != NULL && m->generation == cfg_keys_generation() &&
	    m->len == len && CRYPTO_memcmp(m->bytes, key, len) == 0)
		return (m->key);
	auth_memo_clear(m);
	if ((k = auth_lookup(key)) != NULL && len <= sizeof m->bytes) {
		memcpy(m->bytes, key, len);
		m->len = len;
		m->generation = cfg_keys_generation();
		m->key = k;
	}
	return (k);
}

/*
 * A key of the configuration before a reload, in the one now in force:
 * the same name, hash, sets and tenant, or NULL (removed, rotated,
 * regranted or moved: what was opened with it ends).
 */
const struct cfg_apikey *
auth_key_again(const struct cfg_apikey *old)
{
	const struct cfg_apikey	*k;

	TAILQ_FOREACH(k, &cfg->apikeys, entry) {
		if (strcmp(k->name, old->name) == 0 &&
		    CRYPTO_memcmp(k->hash, old->hash, sizeof k->hash) == 0 &&
		    k->sets == old->sets && strcmp(k->tenant, old->tenant) == 0)
			return (k);
	}
	return (NULL);
}

/* Forget a remembered key (its bytes too). */
void
auth_memo_clear(struct auth_memo *m)
{
	explicit_bzero(m, sizeof *m);
}

/*
 * Make a new key: "smcp_" and 43 base64url characters (256 random bits).
 * Print the key, then the configuration line that grants it the sets (and
 * puts it in a tenant when one is given).
 */
int
auth_keygen(const char *name, int sets, const char *tenant)
{
	unsigned char	 raw[32], hash[32];
	char		 b64[64], hex[65], key[80], *list;

	if (RAND_bytes(raw, sizeof raw) != 1)
		return (-1);
	util_base64url(raw, sizeof raw, b64, sizeof b64);
	snprintf(key, sizeof key, "smcp_%s", b64);
	util_sha256(key, strlen(key), hash);
	util_hex(hash, sizeof hash, hex);
	list = cfg_sets_string(sets);
	printf("%s\n", key);
	if (tenant != NULL)
		printf("api-key %s sha256:%s sets %s tenant %s\n", name, hex,
		    list, tenant);
	else
		printf("api-key %s sha256:%s sets %s\n", name, hex, list);
	fflush(stdout);
	free(list);
	explicit_bzero(raw, sizeof raw);
	explicit_bzero(key, sizeof key);
	return (0);
}

/* The tenant a caller acts for: its key's, or the local operator. */
const char *
auth_tenant(const struct cfg_apikey *k)
{
	return (k != NULL ? k->tenant : TENANT_LOCAL);
}
