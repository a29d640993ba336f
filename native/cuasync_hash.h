/* cuasync_hash.h — SHA-256, for compile-cache keys and the integrity check of cache entries. */
#ifndef CUASYNC_HASH_H
#define CUASYNC_HASH_H

#include <stddef.h>

/* Writes 64 lowercase hex digits and a NUL into hex. */
void cuasync_sha256_hex(const void *data, size_t len, char *hex);

#endif
