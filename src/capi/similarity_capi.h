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
 * Asks the interrupt poll as it goes (NULL: none): sets of a hundred million shingles take
 * seconds; SIMHASH_INTERRUPTED when it said stop.
 */
simhash_status simhash_shingle_overlap(const uint64_t *a, size_t na, const uint64_t *b, size_t nb,
                                       uint64_t *common, const simhash_interrupt *interrupt,
                                       char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* A 64-bit digest of a shingle set (simhash::set_digest): equal sets, equal digests. */
uint64_t simhash_shingle_digest(const uint64_t *set, size_t n) SIMHASH_NOEXCEPT;

/*
 * The distinct shingles of a text read piece by piece, counted up to a cap
 * (simhash::ShingleCounter): state in *counter, a table of
 * simhash_shingle_counter_table_size(cap) entries, both owned by the caller. Every shingle
 * counted after feeding a prefix of a text is one of the whole text's, so once the count
 * passes cap the whole text has more than cap distinct shingles. After
 * simhash_shingle_counter_end(), the count within the cap is the exact size of the text's
 * shingle set (simhash_text_shingles), which simhash_shingle_counter_set() copies out
 * ascending.
 */
#define SIMHASH_SHINGLE_COUNTER_WORDS 512
typedef struct simhash_shingle_counter {
  uint64_t words[SIMHASH_SHINGLE_COUNTER_WORDS];
} simhash_shingle_counter;

/*
 * The table starts with SIMHASH_SHINGLE_COUNTER_MIN_TABLE entries (or more, a power of two)
 * and grows: before feeding len bytes (or ending, len 0), the table must have
 * simhash_shingle_counter_table_before(counter, len) entries, at most those that cap + 1
 * shingles need; simhash_shingle_counter_grow() moves the shingles into a larger table
 * (the old one may then be freed).
 *
 * Growing a table and copying the set out take time with the shingles (a second for tens
 * of millions): both ask the interrupt poll as they go (NULL: none); after
 * SIMHASH_INTERRUPTED the counter is only to be dropped (the new table may then be freed too).
 */
#define SIMHASH_SHINGLE_COUNTER_MIN_TABLE 16
/* The table entries that hold `distinct` shingles (0 when too many to be served). */
size_t simhash_shingle_counter_table_for(uint64_t distinct) SIMHASH_NOEXCEPT;
simhash_status simhash_shingle_counter_begin(simhash_shingle_counter *counter, uint64_t cap,
                                             uint64_t *table, size_t table_size, char *errbuf,
                                             size_t errcap) SIMHASH_NOEXCEPT;
size_t simhash_shingle_counter_table_size(const simhash_shingle_counter *counter) SIMHASH_NOEXCEPT;
size_t simhash_shingle_counter_table_before(const simhash_shingle_counter *counter,
                                            size_t len) SIMHASH_NOEXCEPT;
simhash_status simhash_shingle_counter_grow(simhash_shingle_counter *counter, uint64_t *table,
                                            size_t table_size, const simhash_interrupt *interrupt,
                                            char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;
/* Feeds the next piece (cut anywhere); *count: distinct shingles so far, at most cap + 1. */
simhash_status simhash_shingle_counter_feed(simhash_shingle_counter *counter, const char *data,
                                            size_t len, uint64_t *count, char *errbuf,
                                            size_t errcap) SIMHASH_NOEXCEPT;
/* The text ends here; *count as above. */
simhash_status simhash_shingle_counter_end(simhash_shingle_counter *counter, uint64_t *count,
                                           char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;
/* The set counted (ascending) into out[0..*n), within the cap; SIMHASH_INVALID_ARGUMENT past it. */
simhash_status simhash_shingle_counter_set(const simhash_shingle_counter *counter, uint64_t *out,
                                           size_t out_cap, size_t *n,
                                           const simhash_interrupt *interrupt, char *errbuf,
                                           size_t errcap) SIMHASH_NOEXCEPT;

/* |set ∩ the set counted| for set[0..n) (distinct, any order), within the cap. */
simhash_status simhash_shingle_counter_common(const simhash_shingle_counter *counter,
                                              const uint64_t *set, size_t n, uint64_t *common,
                                              char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/*
 * The same digest in pieces, so that the caller can check for interrupts between them:
 * state = _begin(n) for a set of n shingles, state = _add(state, piece, m) for each
 * consecutive piece, then _end(state).
 */
uint64_t simhash_shingle_digest_begin(size_t n) SIMHASH_NOEXCEPT;
uint64_t simhash_shingle_digest_add(uint64_t state, const uint64_t *piece,
                                    size_t m) SIMHASH_NOEXCEPT;
uint64_t simhash_shingle_digest_end(uint64_t state) SIMHASH_NOEXCEPT;

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

/*
 * The same keys from a set given in pieces (simhash::LshSketch), so that the caller can
 * check for interrupts between them: _begin, _add for each piece, then _end as
 * simhash_lsh_keys. The state is plain data in caller memory (nothing to free).
 */
#define SIMHASH_LSH_STATE_WORDS 128
typedef struct simhash_lsh_state {
  uint64_t words[SIMHASH_LSH_STATE_WORDS];
} simhash_lsh_state;
void simhash_lsh_begin(simhash_lsh_state *state) SIMHASH_NOEXCEPT;
void simhash_lsh_add(simhash_lsh_state *state, const uint64_t *piece, size_t m) SIMHASH_NOEXCEPT;
simhash_status simhash_lsh_end(const simhash_lsh_state *state, int64_t *keys, size_t keys_cap,
                               size_t *nkeys, char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_SIMILARITY_CAPI_H */
