/*
 * The C ABI of the stored form of a shingle set (src/core/stored_set.hpp): the dedupe
 * trigger's sets column, format 1. Same rules as simhash_capi.h: noexcept, no heap memory
 * crossing.
 */
#ifndef SIMHASH_STORED_SET_CAPI_H
#define SIMHASH_STORED_SET_CAPI_H

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most hashes of a stored set: a larger set is not stored (NULL). */
#define SIMHASH_STORED_SET_MAX_SHINGLES 8192

/* Bytes of the stored form of a set of n hashes; 0 when it is too large to store. */
size_t simhash_stored_set_size(size_t n) SIMHASH_NOEXCEPT;

/* 1 when len bytes are the size of a stored set (to check before reading a value whole). */
int simhash_stored_set_length_ok(size_t len) SIMHASH_NOEXCEPT;

/* The stored form of set[0..n) (ascending, distinct): simhash_stored_set_size(n) bytes. */
void simhash_stored_set_write(const uint64_t *set, size_t n, unsigned char *out) SIMHASH_NOEXCEPT;

/*
 * The set stored in bytes[0..len) into out (room for len / 8 hashes) and *n; 0 when the
 * bytes are not a stored set: another length or first byte, hashes not ascending and
 * distinct.
 */
int simhash_stored_set_read(const unsigned char *bytes, size_t len, uint64_t *out,
                            size_t *n) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
