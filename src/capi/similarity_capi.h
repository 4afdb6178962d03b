/*
 * The C ABI of near-duplicate verification (src/core/similarity.hpp): the overlap of two
 * shingle sets. Same rules as simhash_capi.h: noexcept, a status plus a message in the
 * caller's buffer, no heap memory crossing.
 */
#ifndef SIMHASH_SIMILARITY_CAPI_H
#define SIMHASH_SIMILARITY_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Characters per shingle of the similarity functions (simhash::kSimilarityShingle). */
#define SIMHASH_SIMILARITY_SHINGLE 5

/*
 * |A ∩ B| of two shingle sets given as ascending, distinct hashes (as simhash_text_distinct
 * leaves them) into *common; SIMHASH_INVALID_ARGUMENT when either set is not ascending.
 */
simhash_status simhash_shingle_overlap(const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                                       uint64_t *common, char *errbuf,
                                       size_t errcap) SIMHASH_NOEXCEPT;

/* A 64-bit digest of a shingle set (simhash::set_digest): equal sets, equal digests. */
uint64_t simhash_shingle_digest(const uint64_t *set, size_t n) SIMHASH_NOEXCEPT;

/* MinHash LSH keys (src/core/minhash.hpp): bands of rows signature values, one key a band. */
#define SIMHASH_LSH_BANDS 20
#define SIMHASH_LSH_ROWS 5
/* The smallest similarity threshold the keys serve (candidate recall >= 0.97, measured). */
#define SIMHASH_LSH_MIN_SIMILARITY 0.7

/*
 * The SIMHASH_LSH_BANDS band keys of a shingle set (ascending, distinct hashes) into
 * keys[0..keys_cap), their number into *nkeys (0 for an empty set, SIMHASH_LSH_BANDS
 * otherwise); SIMHASH_INVALID_ARGUMENT when keys_cap is too small.
 */
simhash_status simhash_lsh_keys(const uint64_t *set, size_t n, int64_t *keys, size_t keys_cap,
                                size_t *nkeys, char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_SIMILARITY_CAPI_H */
