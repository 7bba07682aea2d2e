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
 * presented key is hashed and compared with every stored hash in constant
 * time, so neither the match nor its position shows in the timing. Keys
 * themselves are never logged.
 */

#include "config.h"

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "sandbox-mcp.h"

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
 * Make a new key: "smcp_" and 43 base64url characters (256 random bits).
 * Print the key, then the configuration line that grants it the sets.
 */
int
auth_keygen(const char *name, int sets)
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
	printf("api-key %s sha256:%s sets %s\n", name, hex, list);
	fflush(stdout);
	free(list);
	explicit_bzero(raw, sizeof raw);
	explicit_bzero(key, sizeof key);
	return (0);
}
